//! protojit decodes protobuf messages whose schema is only known at run time.
//!
//! A [`Schema`] is loaded at run time (a serialized `FileDescriptorSet`, or `.proto`
//! files); [`Schema::decoder`] prepares a [`Decoder`] for one message type (tiered: its
//! types start on the interpreter and those that turn out hot are compiled to machine code
//! with Cranelift on a background thread); the decoder writes each message into an [`Arena`]
//! as a tree that borrows strings and bytes from the input, and you read it through
//! [`MessageRef`]. A tour, in the order a program does things:
//!
//! # 1. Load a schema
//!
//! From `.proto` text (as here), `.proto` files with include paths
//! ([`Schema::from_proto_files`]), or descriptor sets written by `protoc -o`
//! ([`Schema::from_descriptor_set`], [`Schema::from_descriptor_set_files`]).
//!
//! ```
//! use protojit::Schema;
//!
//! let schema = Schema::from_proto_source("shop.proto", r#"
//!     syntax = "proto3";
//!     package shop;
//!     message Order {
//!       string id = 1;
//!       repeated Item items = 2;
//!       map<string, string> labels = 3;
//!       Status status = 4;
//!       int64 total_cents = 5;
//!     }
//!     message Item { string sku = 1; int32 quantity = 2; }
//!     enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }
//! "#)?;
//! assert!(schema.message_names().contains(&"shop.Order".to_owned()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 2. Decode
//!
//! A [`Decoder`] is made once per root type and shared (`Send + Sync`); an [`Arena`] holds
//! the trees decoded into it until it is reset or dropped. Malformed input is a
//! [`DecodeError`] with its kind and byte offset. [`EngineOptions`] chooses the engine
//! ([`EngineKind::Auto`], tiered, by default; `Jit` compiles every type first; `Interpreter`
//! never compiles), the [`Tiering`] thresholds and the wire limits ([`DecodeOptions`]: depth
//! limit, UTF-8 checking); [`Decoder::stats`] says per type which tier it is in. How code
//! is compiled ([`CompileOptions`]) is the schema's ([`Schema::with_compile_options`]).
//!
//! ```
//! # use protojit::Schema;
//! # let schema = Schema::from_proto_source("shop.proto", "syntax = \"proto3\"; package shop; message Order { string id = 1; repeated Item items = 2; map<string, string> labels = 3; Status status = 4; int64 total_cents = 5; } message Item { string sku = 1; int32 quantity = 2; } enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }")?;
//! use protojit::{Arena, DecodeErrorKind};
//!
//! let decoder = schema.decoder("shop.Order")?; // or a unique short name: "Order"
//! // Order { id: "A7", items: [{pen, 2}, {ink, 1}], labels: {gift: yes}, status: PAID, total_cents: 1250 }
//! let bytes = b"\x0a\x02A7\x12\x07\x0a\x03pen\x10\x02\x12\x07\x0a\x03ink\x10\x01\
//!               \x1a\x0b\x0a\x04gift\x12\x03yes\x20\x01\x28\xe2\x09";
//! let arena = Arena::new();
//! let order = decoder.decode(bytes, &arena)?;
//!
//! let err = decoder.decode(&bytes[..10], &arena).unwrap_err();
//! assert_eq!(err.kind, DecodeErrorKind::LengthOutOfBounds);
//! assert_eq!(err.to_string(), "length prefix past the end of the message at byte offset 5");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 3. Read fields
//!
//! [`MessageRef::get`] returns a [`Value`] (absent fields read as their defaults);
//! [`has`](MessageRef::has) tells presence; repeated fields are [`ListRef`]s, maps
//! [`MapRef`]s (last key wins), enums [`EnumValue`]s. Strings borrow from the input.
//!
//! ```
//! # use protojit::{Arena, Schema};
//! # let schema = Schema::from_proto_source("shop.proto", "syntax = \"proto3\"; package shop; message Order { string id = 1; repeated Item items = 2; map<string, string> labels = 3; Status status = 4; int64 total_cents = 5; } message Item { string sku = 1; int32 quantity = 2; } enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }")?;
//! # let decoder = schema.decoder("shop.Order")?;
//! # let bytes = b"\x0a\x02A7\x12\x07\x0a\x03pen\x10\x02\x12\x07\x0a\x03ink\x10\x01\x1a\x0b\x0a\x04gift\x12\x03yes\x20\x01\x28\xe2\x09";
//! # let arena = Arena::new();
//! # let order = decoder.decode(bytes, &arena)?;
//! use protojit::{MapKey, Value};
//!
//! assert_eq!(order.get("id").unwrap().as_str(), Some("A7"));
//! assert_eq!(order.get("total_cents").unwrap().as_i64(), Some(1250));
//! let items = order.get("items").unwrap().as_list().unwrap();
//! let first = items.get(0).unwrap().as_message().unwrap();
//! assert_eq!(first.get("quantity").unwrap().as_i32(), Some(2));
//! let labels = order.get("labels").unwrap().as_map().unwrap();
//! assert_eq!(labels.get(&MapKey::String("gift")).unwrap().as_str(), Some("yes"));
//! match order.get("status").unwrap() {
//!     Value::Enum(e) => assert_eq!(e.name().as_deref(), Some("STATUS_PAID")),
//!     other => panic!("{other:?}"),
//! }
//! assert!(order.get("no_such_field").is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 4. Paths
//!
//! [`MessageRef::path`] selects with `a.b[2].c`-style paths; a [`FieldPath`] is the same
//! path compiled once (names resolved to layout slots, types checked) and evaluated on
//! many messages without string work. Errors name the segment and the message type.
//!
//! ```
//! # use protojit::{Arena, Schema};
//! # let schema = Schema::from_proto_source("shop.proto", "syntax = \"proto3\"; package shop; message Order { string id = 1; repeated Item items = 2; map<string, string> labels = 3; Status status = 4; int64 total_cents = 5; } message Item { string sku = 1; int32 quantity = 2; } enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }")?;
//! # let decoder = schema.decoder("shop.Order")?;
//! # let bytes = b"\x0a\x02A7\x12\x07\x0a\x03pen\x10\x02\x12\x07\x0a\x03ink\x10\x01\x1a\x0b\x0a\x04gift\x12\x03yes\x20\x01\x28\xe2\x09";
//! # let arena = Arena::new();
//! # let order = decoder.decode(bytes, &arena)?;
//! use protojit::FieldPath;
//!
//! assert_eq!(order.path("items[-1].sku")?[0].as_str(), Some("ink"));
//! assert_eq!(order.path(r#"labels["gift"]"#)?[0].as_str(), Some("yes"));
//! assert_eq!(order.path("labels[*].key")?[0].as_str(), Some("gift"));
//!
//! let quantities = FieldPath::parse(decoder.descriptor(), "items[*].quantity")?;
//! let total: i32 = quantities.eval(&order).iter().map(|v| v.as_i32().unwrap()).sum();
//! assert_eq!(total, 3);
//!
//! let err = order.path("items[0].price").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "message type `shop.Item` has no field `price` (segment `price` of `items[0].price`)"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 5. Typed handles, slices, maps, the visitor
//!
//! For reads in a loop, resolve a [`Field`] handle once per schema (from a name or an
//! `a.b.c` path; the field's kind is checked then, with a [`HandleError`] naming what is
//! wrong), and read it on every message of the type: one layout check, one presence check,
//! one load. `Field<i64>`, `Field<field::Str>`, `Field<field::Message>`; repeated numbers
//! as slices (`Field<field::List<i32>>`), repeated messages and strings as iterators, maps
//! as [`MapRef`]s, whose [`MapRef::index`] gives O(1) lookups. A handle read on a message
//! of another type is `None`, never a wrong read. [`MessageRef::visit`] walks every
//! present field with typed callbacks ([`Visitor`]): the fastest way to read everything.
//!
//! ```
//! # use protojit::{Arena, Schema};
//! # let schema = Schema::from_proto_source("shop.proto", "syntax = \"proto3\"; package shop; message Order { string id = 1; repeated Item items = 2; map<string, string> labels = 3; Status status = 4; int64 total_cents = 5; } message Item { string sku = 1; int32 quantity = 2; } enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }")?;
//! # let decoder = schema.decoder("shop.Order")?;
//! # let bytes = b"\x0a\x02A7\x12\x07\x0a\x03pen\x10\x02\x12\x07\x0a\x03ink\x10\x01\x1a\x0b\x0a\x04gift\x12\x03yes\x20\x01\x28\xe2\x09";
//! # let arena = Arena::new();
//! # let order = decoder.decode(bytes, &arena)?;
//! use protojit::{field, Field, FieldInfo, MapKey, Visitor};
//!
//! let layouts = schema.layouts();
//! let total = Field::<i64>::resolve(layouts, "shop.Order", "total_cents")?;
//! let items = Field::<field::List<field::Message>>::resolve(layouts, "shop.Order", "items")?;
//! let quantity = Field::<i32>::resolve(layouts, "shop.Item", "quantity")?;
//! let status = Field::<field::Enum>::resolve(layouts, "shop.Order", "status")?;
//! assert_eq!(total.get(&order), Some(1250));
//! let n: i32 = items.get(&order).unwrap().map(|item| quantity.get(&item).unwrap()).sum();
//! assert_eq!(n, 3);
//! assert_eq!(status.get_value(&order).unwrap().name(), Some("STATUS_PAID"));
//! assert_eq!(quantity.get(&order), None); // an Order is not an Item
//!
//! let err = Field::<field::Str>::resolve(layouts, "shop.Order", "total_cents").unwrap_err();
//! assert_eq!(err.to_string(), "field `total_cents` of `shop.Order` is int64, but this handle reads a string (in `total_cents`)");
//!
//! let labels = Field::<field::Map>::resolve(layouts, "shop.Order", "labels")?.get(&order).unwrap();
//! let index = labels.index(); // once per map; then O(1) per lookup
//! assert_eq!(index.get(&MapKey::String("gift")).unwrap().as_str(), Some("yes"));
//!
//! struct Skus(Vec<String>);
//! impl<'a> Visitor<'a> for Skus {
//!     fn string(&mut self, f: FieldInfo<'a>, v: &'a str) {
//!         if f.name() == "sku" { self.0.push(v.to_owned()) }
//!     }
//! }
//! let mut skus = Skus(Vec::new());
//! order.visit(&mut skus);
//! assert_eq!(skus.0, ["pen", "ink"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 6. JSON, text, binary
//!
//! Proto3 JSON ([`MessageRef::to_json_string`], or serde: `MessageRef` is `Serialize`)
//! equals `prost_reflect`'s for the same [`JsonOptions`]; text format equals
//! `protoc --decode`'s; [`MessageRef::encode`] writes canonical binary.
//!
//! ```
//! # use protojit::{Arena, Schema};
//! # let schema = Schema::from_proto_source("shop.proto", "syntax = \"proto3\"; package shop; message Order { string id = 1; repeated Item items = 2; map<string, string> labels = 3; Status status = 4; int64 total_cents = 5; } message Item { string sku = 1; int32 quantity = 2; } enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }")?;
//! # let decoder = schema.decoder("shop.Order")?;
//! # let bytes = b"\x0a\x02A7\x12\x07\x0a\x03pen\x10\x02\x12\x07\x0a\x03ink\x10\x01\x1a\x0b\x0a\x04gift\x12\x03yes\x20\x01\x28\xe2\x09";
//! # let arena = Arena::new();
//! # let order = decoder.decode(bytes, &arena)?;
//! use protojit::JsonOptions;
//!
//! assert_eq!(
//!     order.to_json_string(&JsonOptions::default())?,
//!     r#"{"id":"A7","items":[{"sku":"pen","quantity":2},{"sku":"ink","quantity":1}],"labels":{"gift":"yes"},"status":"STATUS_PAID","totalCents":"1250"}"#
//! );
//! let options = JsonOptions::new().use_proto_field_name(true).stringify_64_bit_integers(false);
//! assert!(order.to_json_string(&options)?.ends_with(r#""total_cents":1250}"#));
//! // A single value, as `--select`-style output would print it.
//! assert_eq!(order.path("items[0]")?[0].to_json_string(&options)?, r#"{"sku":"pen","quantity":2}"#);
//!
//! assert!(order.to_text_format().starts_with("id: \"A7\"\nitems {\n  sku: \"pen\"\n"));
//! assert_eq!(order.encode_to_vec(), bytes); // already canonical
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # 7. Owned trees and arena reuse
//!
//! [`Decoder::decode_owned`] bundles the input (as [`Bytes`], not copied), the arena and
//! the layouts into an [`OwnedMessage`]: no lifetime, `Send + Sync`. In a loop, reuse one
//! arena: [`Arena::reset`] keeps its memory, so later decodes of similar messages
//! allocate nothing.
//!
//! ```
//! # use protojit::Schema;
//! # let schema = Schema::from_proto_source("shop.proto", "syntax = \"proto3\"; package shop; message Order { string id = 1; repeated Item items = 2; map<string, string> labels = 3; Status status = 4; int64 total_cents = 5; } message Item { string sku = 1; int32 quantity = 2; } enum Status { STATUS_UNKNOWN = 0; STATUS_PAID = 1; }")?;
//! # let decoder = schema.decoder("shop.Order")?;
//! use protojit::Arena;
//!
//! let owned = decoder.decode_owned(b"\x0a\x02A7".to_vec())?;
//! let id = std::thread::spawn(move || owned.message().get("id").unwrap().as_str().unwrap().to_owned());
//! assert_eq!(id.join().unwrap(), "A7");
//!
//! let mut arena = Arena::new();
//! for n in 0..3u8 {
//!     arena.reset();
//!     let input = [0x28, n]; // total_cents = n
//!     let order = decoder.decode(&input, &arena)?;
//!     assert_eq!(order.get("total_cents").unwrap().as_i64(), Some(n.into()));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers
//!
//! From schema to views: `protojit_arena` (layouts, arena, tree memory, the interpreter),
//! `protojit_jit` (the compiled decoder and tiering), `protojit_reflect` (views, paths, JSON,
//! text format, re-encoding, prost-reflect interop), each a crate of its own to depend on. This
//! crate ties them together.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "compression")]
pub mod compression;
mod decoder;
pub mod delimited;
mod editions;
mod owned;
mod schema;

pub use decoder::Decoder;
pub use editions::{lower_descriptor_set, EditionsError, LoweredSet};
pub use owned::OwnedMessage;
pub use schema::{Schema, SchemaError};

pub use bytes::Bytes;
pub use protojit_arena::{Arena, DecodeError, DecodeErrorKind, UnknownFields, Utf8Check};
pub use protojit_arena::{DecodeOptions, MAX_DEPTH_LIMIT};
pub use protojit_jit::{
    CompileOptions, CompilePhases, EngineKind, EngineOptions, EngineStats, Engines, OptLevel, Regalloc, Tiering,
    TypeEngine, TypeStats, Workload,
};
pub use protojit_parse::{json_to_binary, text_to_binary, ParseError, ParseOptions};
pub use protojit_reflect::{
    field, find_field, parse_path, AnyError, Descend, EnumType, EnumValue, Field, FieldInfo, FieldName, FieldPath,
    FieldType, HandleError, Json, JsonError, JsonOptions, ListRef, MapIndex, MapKey, MapRef, MapWalk, MessageList,
    MessageRef, Number, PathError, PathErrorKind, PathSegment, Segment, Selector, StrIter, StrList, StreamVisitor,
    Value, Visitor,
};

/// The README's Rust example runs as a doctest, so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
