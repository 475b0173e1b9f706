//! protojit's write side: proto3 JSON and protobuf text format parsed into canonical protobuf binary, driven by the run-time schema.
//!
//! Parsing is driven by the message layouts (`Layouts`), whose slots carry every field's resolved
//! features (presence, packing, group encoding, closed enums, UTF-8), so proto2, proto3 and
//! editions files are parsed by one rule and no file's syntax is read.
//!
//! The parsers write binary directly, as `protoc --encode` would emit it: fields in number
//! order (extensions among them), repeated scalars packed where the field is packed, one
//! packed record per field. A tree is then one decode away (`Decoder::decode` on the bytes);
//! writing binary first keeps one encoder for both formats and makes the transcoding case
//! (JSON in, protobuf out) a single pass.
//!
//! Errors are [`ParseError`]s with the line and column (1-based) where the input went wrong.
//! Nesting deeper than [`ParseOptions::max_depth`] is an error, so hostile input cannot
//! exhaust the stack.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod json;
mod json_direct;
mod json_value;
mod tables;
mod text;
mod wkt;
mod writer;

use prost_reflect::{EnumDescriptor, Kind};
use protojit_arena::wire::{FIXED32, FIXED64, LEN, SGROUP, VARINT};
use protojit_arena::{LayoutIndex, Layouts, MessageLayout, SlotDescriptor, SlotIndex, NO_INDEX};
use tables::{FieldData, MessageTable, Tables};

use protojit_arena::wire::{zigzag_encode32, zigzag_encode64};

pub use json::json_to_binary;
#[doc(hidden)]
pub use json::{json_to_binary_with, JsonReaders};
pub use text::text_to_binary;

/// What the parsers accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// Skip JSON object keys that name no field (and enum names the schema does not know,
    /// which then leave their field unset), instead of failing. Text format always fails on
    /// them, as protoc does.
    pub ignore_unknown_fields: bool,
    /// The deepest nesting of messages accepted (the root is depth 0); default 100, as the
    /// decoders' limit. Values above [`protojit_arena::MAX_DEPTH_LIMIT`] count as it.
    pub max_depth: u32,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions { ignore_unknown_fields: false, max_depth: 100 }
    }
}

/// A JSON or text format document that does not fit the schema or is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Malformed JSON, or JSON that does not fit the message type.
    #[error("JSON line {line} column {column}: {message}")]
    Json {
        /// 1-based line of the error (0 when unknown).
        line: usize,
        /// 1-based column of the error (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Malformed text format, or text that does not fit the message type.
    #[error("text format line {line} column {column}: {message}")]
    Text {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

impl ParseError {
    /// The 1-based (line, column) of the error.
    pub fn position(&self) -> (usize, usize) {
        match self {
            ParseError::Json { line, column, .. } | ParseError::Text { line, column, .. } => (*line, *column),
        }
    }

    /// What is wrong, without the position.
    pub fn message(&self) -> &str {
        match self {
            ParseError::Json { message, .. } | ParseError::Text { message, .. } => message,
        }
    }
}

/// One message type as the parsers see it: its layout and its precomputed tables.
#[derive(Clone, Copy)]
pub(crate) struct Message<'l> {
    pub layout: &'l MessageLayout,
    pub table: &'l MessageTable,
}

impl<'l> Message<'l> {
    #[inline]
    pub(crate) fn new(layouts: &'l Layouts, tables: &'l Tables, index: LayoutIndex) -> Message<'l> {
        Message { layout: layouts.get(index), table: tables.message(layouts, index) }
    }

    /// The field in slot `slot`.
    #[inline]
    pub(crate) fn field(self, slot: SlotIndex) -> FieldInfo<'l> {
        FieldInfo::new(self.layout, self.table.field(slot), slot)
    }

    /// The field numbered `number`, if the message declares (or is extended with) it.
    #[inline]
    pub(crate) fn by_number(self, number: u32) -> Option<FieldInfo<'l>> {
        self.layout.slot_by_number(number).map(|si| self.field(si))
    }
}

/// What the parsers need to know of a field or extension, whichever it is: its facts, read
/// from its slot in the message's layout once per message type ([`FieldData`], reached
/// through `Deref`): the resolved features decide presence, packing, group encoding, closed
/// enums and UTF-8 checks, never the file's syntax (an editions file reads as proto2 to the
/// descriptor library).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldInfo<'l> {
    d: &'l FieldData,
    /// Explicit presence: a default value is still written (a map entry's fields in text
    /// format have it whatever their features).
    pub presence: bool,
    slot: SlotIndex,
    layout: &'l MessageLayout,
}

impl std::ops::Deref for FieldInfo<'_> {
    type Target = FieldData;

    #[inline]
    fn deref(&self) -> &FieldData {
        self.d
    }
}

impl<'l> FieldInfo<'l> {
    #[inline]
    fn new(layout: &'l MessageLayout, d: &'l FieldData, slot: SlotIndex) -> FieldInfo<'l> {
        FieldInfo { d, presence: d.presence, slot, layout }
    }

    /// The field's kind, borrowed for as long as the tables.
    #[inline]
    pub(crate) fn kind(&self) -> &'l Kind {
        &self.d.kind
    }

    /// The name for messages: `name` or `[full.extension.name]`.
    pub(crate) fn display(&self) -> &'l str {
        match self.layout.slot_descriptor(self.slot) {
            SlotDescriptor::Field(f) => f.name(),
            SlotDescriptor::Extension(_) => self.layout.text_name(self.slot),
        }
    }

    fn oneof_name(&self) -> Option<&'l str> {
        self.layout.oneofs().get(self.oneof as usize).map(|o| o.name())
    }
}

/// The number of enum value `name` (of `e`, the enum type at `enum_index` in `layouts`, or
/// `NO_INDEX` when the caller does not know it).
#[inline]
pub(crate) fn enum_by_name(
    layouts: &Layouts,
    tables: &Tables,
    e: &EnumDescriptor,
    enum_index: u32,
    name: &[u8],
) -> Option<i32> {
    if enum_index == NO_INDEX {
        let name = std::str::from_utf8(name).ok()?;
        return e.get_value_by_name(name).map(|v| v.number());
    }
    tables.enum_names(layouts, enum_index).get(name).map(|n| n as i32)
}

/// Whether `e` (the enum type at `enum_index`, or `NO_INDEX`) declares number `n`.
#[inline]
pub(crate) fn enum_declares(layouts: &Layouts, e: &EnumDescriptor, enum_index: u32, n: i128) -> bool {
    let Ok(n) = i32::try_from(n) else { return false };
    match enum_index {
        NO_INDEX => e.get_value(n).is_some(),
        i => layouts.enum_type(i).name_of(n).is_some(),
    }
}

/// The fields of one message seen so far: duplicates and oneof conflicts are errors. Slots
/// below 64 are bits; a message with more fields keeps the rest in a list.
pub(crate) struct Seen<'l> {
    low: u64,
    high: Vec<SlotIndex>,
    /// (oneof index, the member set).
    oneofs: Vec<(u32, &'l str)>,
}

impl<'l> Seen<'l> {
    pub(crate) fn new() -> Seen<'l> {
        Seen { low: 0, high: Vec::new(), oneofs: Vec::new() }
    }

    /// Whether field `f` was set.
    pub(crate) fn has(&self, f: &FieldInfo<'_>) -> bool {
        match f.slot.index() {
            i @ 0..64 => self.low & (1 << i) != 0,
            _ => self.high.contains(&f.slot),
        }
    }

    /// Marks `f` as set; an error message when it was set before or, unless `value_set` is
    /// false (a JSON `null`, which sets nothing), another member of its oneof was.
    #[inline]
    pub(crate) fn set(&mut self, f: &FieldInfo<'l>, value_set: bool) -> Result<(), String> {
        if self.has(f) {
            return Err(format!("field {} is specified more than once", f.display()));
        }
        match f.slot.index() {
            i @ 0..64 => self.low |= 1 << i,
            _ => self.high.push(f.slot),
        }
        if f.oneof != NO_INDEX && value_set {
            return self.set_oneof(f);
        }
        Ok(())
    }

    fn set_oneof(&mut self, f: &FieldInfo<'l>) -> Result<(), String> {
        if let Some(oneof) = f.oneof_name() {
            if let Some((_, other)) = self.oneofs.iter().find(|(o, _)| *o == f.oneof) {
                return Err(format!(
                    "field {} is set along with {other}, another member of oneof {oneof}",
                    f.display()
                ));
            }
            self.oneofs.push((f.oneof, f.display()));
        }
        Ok(())
    }
}

/// A scalar as it goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Wire {
    Varint(u64),
    Fixed32(u32),
    Fixed64(u64),
}

impl Wire {
    pub(crate) fn is_zero(self) -> bool {
        matches!(self, Wire::Varint(0) | Wire::Fixed32(0) | Wire::Fixed64(0))
    }

    #[inline]
    pub(crate) fn write(self, w: &mut writer::Writer) {
        match self {
            Wire::Varint(v) => w.varint(v),
            Wire::Fixed32(v) => w.fixed32(v),
            Wire::Fixed64(v) => w.fixed64(v),
        }
    }
}

/// The wire type of a field's values (unpacked).
pub(crate) fn wire_type(kind: &Kind) -> u8 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => FIXED64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => FIXED32,
        Kind::String | Kind::Bytes | Kind::Message(_) => LEN,
        _ => VARINT,
    }
}

/// The wire type of a field's tag: groups start with a start-group tag.
pub(crate) fn tag_wire_type(f: &FieldInfo<'_>) -> u8 {
    if f.group {
        SGROUP
    } else {
        wire_type(&f.kind)
    }
}

/// An integer, given as a signed 128-bit value, as a field of `kind` stores it; an error
/// message when it is out of the kind's range.
pub(crate) fn int_wire(kind: &Kind, v: i128) -> Result<Wire, String> {
    let range = |lo: i128, hi: i128, name: &str| {
        if v < lo || v > hi {
            Err(format!("{v} is out of range for {name}"))
        } else {
            Ok(())
        }
    };
    Ok(match kind {
        Kind::Int32 | Kind::Enum(_) => {
            range(i32::MIN.into(), i32::MAX.into(), "int32")?;
            Wire::Varint(v as i32 as i64 as u64)
        }
        Kind::Sint32 => {
            range(i32::MIN.into(), i32::MAX.into(), "sint32")?;
            Wire::Varint(u64::from(zigzag_encode32(v as i32)))
        }
        Kind::Sfixed32 => {
            range(i32::MIN.into(), i32::MAX.into(), "sfixed32")?;
            Wire::Fixed32(v as i32 as u32)
        }
        Kind::Uint32 => {
            range(0, u32::MAX.into(), "uint32")?;
            Wire::Varint(v as u64)
        }
        Kind::Fixed32 => {
            range(0, u32::MAX.into(), "fixed32")?;
            Wire::Fixed32(v as u32)
        }
        Kind::Int64 => {
            range(i64::MIN.into(), i64::MAX.into(), "int64")?;
            Wire::Varint(v as i64 as u64)
        }
        Kind::Sint64 => {
            range(i64::MIN.into(), i64::MAX.into(), "sint64")?;
            Wire::Varint(zigzag_encode64(v as i64))
        }
        Kind::Sfixed64 => {
            range(i64::MIN.into(), i64::MAX.into(), "sfixed64")?;
            Wire::Fixed64(v as i64 as u64)
        }
        Kind::Uint64 => {
            range(0, u64::MAX.into(), "uint64")?;
            Wire::Varint(v as u64)
        }
        Kind::Fixed64 => {
            range(0, u64::MAX.into(), "fixed64")?;
            Wire::Fixed64(v as u64)
        }
        Kind::Bool => {
            range(0, 1, "bool")?;
            Wire::Varint(v as u64)
        }
        Kind::Float => Wire::Fixed32((v as f32).to_bits()),
        Kind::Double => Wire::Fixed64((v as f64).to_bits()),
        Kind::String | Kind::Bytes | Kind::Message(_) => return Err("expected a number".into()),
    })
}

/// Whether a field of `kind` holds an integer (as opposed to a float, bool, string, ...).
pub(crate) fn is_integer(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Int32
            | Kind::Int64
            | Kind::Uint32
            | Kind::Uint64
            | Kind::Sint32
            | Kind::Sint64
            | Kind::Fixed32
            | Kind::Fixed64
            | Kind::Sfixed32
            | Kind::Sfixed64
    )
}

/// The layout of the message type an `Any`'s type URL names (the part after the last `/`).
pub(crate) fn any_type(layouts: &Layouts, url: &str) -> Result<LayoutIndex, String> {
    let name = match url.rfind('/') {
        Some(i) if i + 1 < url.len() => &url[i + 1..],
        _ => return Err(format!("Any type URL {url:?} has no type name after a '/'")),
    };
    layouts.index_of(name).ok_or_else(|| format!("Any type {name:?} is not in the schema"))
}
