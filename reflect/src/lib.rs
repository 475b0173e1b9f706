//! protojit's read side: views over decoded trees.
//!
//! - [`MessageRef`]: one decoded message (`get`, `get_by_number`, `get_extension`, `has`,
//!   `fields`, `unknown_fields`), and what it converts to: protobuf text format
//!   (`to_text_format`, as `protoc --decode` prints), proto3 JSON (`to_json_string`,
//!   serde `Serialize`, as prost-reflect writes it except where prost-reflect departs
//!   from the proto3 JSON mapping; see [`JsonOptions`]), canonical
//!   binary (`encode`, `encoded_len`) and `prost_reflect::DynamicMessage` (`to_dynamic`).
//! - [`Value`], [`ListRef`], [`MapRef`], [`MapKey`], [`EnumValue`]: what fields hold.
//! - [`parse_path`] / [`find_field`]: the one field-path grammar (written on `parse_path`)
//!   and the one field lookup that paths, handles and Arrow's `select` share.
//! - [`FieldPath`]: `a.b[2].c` paths, compiled once against the schema and evaluated
//!   without string work; [`MessageRef::path`] is the one-shot form.
//! - [`Field`]: typed field handles (`Field<i64>`, `Field<field::Str>`,
//!   `Field<field::List<u32>>`, ...), made by [`Field::resolve`] from a type name and a
//!   chain of fields `a.b.c`, the kind checked ([`HandleError`]), then read on any message
//!   of the type in O(1): one layout check, one presence check, one load. Repeated numbers
//!   read as slices.
//! - [`MessageRef::visit`] with a [`Visitor`]: every present field with typed callbacks
//!   (slices for repeated numbers), no [`Value`] per field: the fastest full read.
//! - [`MapIndex`] ([`MapRef::index`]): O(1) expected map lookups, last key wins.
//! - [`stream_message`] with a [`StreamVisitor`]: typed callbacks straight from the wire,
//!   in wire order, with no tree (and a callback may stop the walk).
//!
//! The other direction, proto3 JSON and text format parsed into binary, is the
//! `protojit-parse` crate's.
//!
//! Views never write into a tree. (Unpacking a `google.protobuf.Any`,
//! [`MessageRef::unpack_any`], decodes its payload into a new tree with the interpreter.)

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod dynamic;
mod encode;
mod handle;
mod json;
mod list;
mod message;
mod path;
mod stream;
mod text;
mod value;
mod views;
mod visit;

pub use handle::{field, Field, FieldType, HandleError, MessageList, Number};
pub use json::{AnyError, Json, JsonError, JsonOptions};
pub use list::MapIndex;
pub use path::{
    find_field, kind_name, parse_path, FieldName, FieldPath, PathError, PathErrorKind, PathSegment, Segment, Selector,
};
pub use protojit_arena::EnumType;
pub use protojit_arena::{StrIter, StrList, Texts};
pub use stream::{stream_message, StreamVisitor, VisitorSink};
pub use text::{decode_raw_to_text, write_text_string};
pub use value::{EnumValue, MapKey, Value};
pub use views::{ListRef, MapRef, MessageRef};
pub use visit::{Descend, FieldInfo, MapWalk, Visitor};
