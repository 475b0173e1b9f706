//! protojit's read side: views over decoded trees.
//!
//! - [`MessageRef`]: one decoded message (`get`, `get_by_number`, `has`, `fields`,
//!   `unknown_fields`, `to_dynamic`, `to_text_format`).
//! - [`Value`], [`ListRef`], [`MapRef`], [`MapKey`], [`EnumValue`]: what fields hold.
//!
//! Views never write into a tree.

mod dynamic;
mod encode;
mod json;
mod list;
mod message;
mod path;
mod text;
mod value;

pub use json::{AnyError, Json, JsonError, JsonOptions};
pub use list::{ListRef, MapRef};
pub use message::MessageRef;
pub use text::decode_raw_to_text;
pub use path::{FieldPath, PathError, PathErrorKind};
pub use value::{EnumValue, MapKey, Value};
