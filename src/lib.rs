//! protojit decodes protobuf messages whose schema is only known at run time.
//!
//! A [`Schema`] is loaded at run time (a serialized `FileDescriptorSet`, or `.proto`
//! files); [`Schema::decoder`] prepares a [`Decoder`] for one message type; the decoder
//! writes each message into an [`Arena`] as a tree that borrows strings and bytes from the
//! input, and you read it through [`MessageRef`].
//!
//! ```
//! use protojit::{Arena, Schema};
//!
//! let schema = Schema::from_proto_source("point.proto", r#"
//!     syntax = "proto3";
//!     message Point { int32 x = 1; int32 y = 2; string label = 3; }
//! "#)?;
//! let decoder = schema.decoder("Point")?;
//! let bytes = [0x08, 0x03, 0x10, 0x04, 0x1a, 0x02, b'h', b'i'];
//! let arena = Arena::new();
//! let point = decoder.decode(&bytes, &arena)?;
//! assert_eq!(point.get("x").unwrap().as_i32(), Some(3));
//! assert_eq!(point.get("label").unwrap().as_str(), Some("hi"));
//! assert_eq!(point.to_text_format(), "x: 3\ny: 4\nlabel: \"hi\"\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Layers, from schema to views: `protojit_arena` (layouts, arena, tree memory),
//! `protojit_jit` (the interpreter and the compiled decoder), `protojit_reflect` (views,
//! text format, prost-reflect interop). This crate ties them together.

mod decoder;
mod owned;
mod schema;

pub use decoder::Decoder;
pub use owned::OwnedMessage;
pub use schema::{Schema, SchemaError};

pub use bytes::Bytes;
pub use protojit_arena::{Arena, DecodeError, DecodeErrorKind};
pub use protojit_jit::{DecodeOptions, EngineKind, EngineStats, TypeEngine, TypeStats};
pub use protojit_reflect::{
    AnyError, EnumValue, FieldPath, Json, JsonError, JsonOptions, ListRef, MapKey, MapRef, MessageRef, PathError,
    PathErrorKind, Value,
};

/// The layers underneath, for engines, tools and tests that need them.
pub mod raw {
    pub use protojit_arena as arena;
    pub use protojit_jit as jit;
    pub use protojit_reflect as reflect;
}
