//! Field values as read from a decoded tree.

use std::fmt;

use prost_reflect::EnumDescriptor;
use protojit_arena::EnumType;

use crate::{ListRef, MapRef, MessageRef};

/// One value of a field: a scalar, a borrowed string/bytes, an enum, a message, a list or
/// a map. Strings and bytes borrow from the input; messages, lists and maps from the tree.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    /// `bool`.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32`.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64`.
    I64(i64),
    /// `uint32`, `fixed32`.
    U32(u32),
    /// `uint64`, `fixed64`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// `string` (UTF-8 validated, at decode or at read).
    String(&'a str),
    /// `bytes`, and a `string` whose bytes are not UTF-8 (possible only when the decoder
    /// ran with UTF-8 validation off, or for proto2 strings, which protobuf does not check).
    Bytes(&'a [u8]),
    /// An enum value: its number (possibly undeclared, for open enums) and its type.
    Enum(EnumValue<'a>),
    /// A message or group.
    Message(MessageRef<'a>),
    /// A repeated field.
    List(ListRef<'a>),
    /// A map field.
    Map(MapRef<'a>),
}

/// An enum value: its number and a reference to its type (the schema's table of the
/// enum, not a descriptor: making one clones nothing).
#[derive(Clone, Copy)]
pub struct EnumValue<'a> {
    /// The number on the wire.
    pub number: i32,
    ty: &'a EnumType,
}

impl<'a> EnumValue<'a> {
    /// The value `number` of enum type `ty`.
    pub fn new(number: i32, ty: &'a EnumType) -> EnumValue<'a> {
        EnumValue { number, ty }
    }

    /// The declared name of this number, if any (no allocation).
    pub fn name(&self) -> Option<&'a str> {
        self.ty.name_of(self.number)
    }

    /// The enum type's descriptor.
    pub fn descriptor(&self) -> &'a EnumDescriptor {
        self.ty.descriptor()
    }

    /// The enum type.
    pub fn enum_type(&self) -> &'a EnumType {
        self.ty
    }
}

impl PartialEq for EnumValue<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number && (std::ptr::eq(self.ty, other.ty) || self.ty.full_name() == other.ty.full_name())
    }
}
impl Eq for EnumValue<'_> {}

impl fmt::Debug for EnumValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnumValue")
            .field("number", &self.number)
            .field("type", &self.ty.full_name())
            .field("name", &self.name())
            .finish()
    }
}

impl<'a> Value<'a> {
    /// The value as `bool`, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }
    /// The value as `i32`, if it is one (enum numbers included).
    pub fn as_i32(&self) -> Option<i32> {
        match self {
            Value::I32(v) => Some(*v),
            Value::Enum(e) => Some(e.number),
            _ => None,
        }
    }
    /// The value as `i64`, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I64(v) => Some(v),
            _ => None,
        }
    }
    /// The value as `u32`, if it is one.
    pub fn as_u32(&self) -> Option<u32> {
        match *self {
            Value::U32(v) => Some(v),
            _ => None,
        }
    }
    /// The value as `u64`, if it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(v) => Some(v),
            _ => None,
        }
    }
    /// The value as `f32`, if it is one.
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Value::F32(v) => Some(v),
            _ => None,
        }
    }
    /// The value as `f64`, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F64(v) => Some(v),
            _ => None,
        }
    }
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::String(v) => Some(v),
            _ => None,
        }
    }
    /// The value as bytes, if it is `bytes` (or a non-UTF-8 string).
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Value::Bytes(v) => Some(v),
            _ => None,
        }
    }
    /// The value as a message, if it is one.
    pub fn as_message(&self) -> Option<MessageRef<'a>> {
        match self {
            Value::Message(m) => Some(*m),
            _ => None,
        }
    }
    /// The value as a list, if it is one.
    pub fn as_list(&self) -> Option<ListRef<'a>> {
        match self {
            Value::List(l) => Some(*l),
            _ => None,
        }
    }
    /// The value as a map, if it is one.
    pub fn as_map(&self) -> Option<MapRef<'a>> {
        match self {
            Value::Map(m) => Some(*m),
            _ => None,
        }
    }
}

/// A map key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MapKey<'a> {
    /// `bool` keys.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32` keys.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64` keys.
    I64(i64),
    /// `uint32`, `fixed32` keys.
    U32(u32),
    /// `uint64`, `fixed64` keys.
    U64(u64),
    /// `string` keys.
    String(&'a str),
    /// A `string` key whose bytes are not UTF-8 (only without UTF-8 validation).
    Bytes(&'a [u8]),
}

impl<'a> MapKey<'a> {
    /// The key as a [`Value`].
    pub fn to_value(self) -> Value<'a> {
        match self {
            MapKey::Bool(v) => Value::Bool(v),
            MapKey::I32(v) => Value::I32(v),
            MapKey::I64(v) => Value::I64(v),
            MapKey::U32(v) => Value::U32(v),
            MapKey::U64(v) => Value::U64(v),
            MapKey::String(v) => Value::String(v),
            MapKey::Bytes(v) => Value::Bytes(v),
        }
    }

    /// The key of a key-kind value.
    pub fn from_value(v: &Value<'a>) -> Option<MapKey<'a>> {
        Some(match *v {
            Value::Bool(v) => MapKey::Bool(v),
            Value::I32(v) => MapKey::I32(v),
            Value::I64(v) => MapKey::I64(v),
            Value::U32(v) => MapKey::U32(v),
            Value::U64(v) => MapKey::U64(v),
            Value::String(v) => MapKey::String(v),
            Value::Bytes(v) => MapKey::Bytes(v),
            _ => return None,
        })
    }
}

impl fmt::Display for MapKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapKey::Bool(v) => write!(f, "{v}"),
            MapKey::I32(v) => write!(f, "{v}"),
            MapKey::I64(v) => write!(f, "{v}"),
            MapKey::U32(v) => write!(f, "{v}"),
            MapKey::U64(v) => write!(f, "{v}"),
            MapKey::String(v) => write!(f, "{v:?}"),
            MapKey::Bytes(v) => write!(f, "{v:?}"),
        }
    }
}
