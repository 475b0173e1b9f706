//! Conversion to `prost_reflect::DynamicMessage`, for interop and as the test oracle.

use std::collections::HashMap;

use prost::Message as _;
use prost_reflect::ReflectMessage as _;
use prost_reflect::{DynamicMessage, MapKey as PMapKey, Value as PValue};
use protojit_arena::SlotDescriptor;

use crate::{MapKey, MessageRef, Value};

impl<'a> MessageRef<'a> {
    /// Converts the tree to an owned `DynamicMessage`.
    ///
    /// Unknown fields are carried over by merging their wire bytes, so a closed enum's
    /// unknown value becomes the field's value, as prost-reflect (whose enums are all open)
    /// decodes it. The one loss: a known field number seen with the wrong wire type is kept
    /// by protojit as an unknown field, which `DynamicMessage` cannot represent; such
    /// fields are dropped, and counted by [`to_dynamic_lossy_count`](Self::to_dynamic_lossy_count).
    pub fn to_dynamic(&self) -> DynamicMessage {
        self.convert(&mut 0)
    }

    /// How many unknown fields [`to_dynamic`](Self::to_dynamic) drops from this tree.
    pub fn to_dynamic_lossy_count(&self) -> usize {
        let mut dropped = 0;
        self.convert(&mut dropped);
        dropped
    }

    fn convert(&self, dropped: &mut usize) -> DynamicMessage {
        let mut dm = DynamicMessage::new(self.descriptor().clone());
        for (desc, value) in self.fields() {
            let v = convert_value(&value, is_string(&desc.kind()), dropped);
            match desc {
                SlotDescriptor::Field(f) => dm.set_field(f, v),
                SlotDescriptor::Extension(e) => dm.set_extension(e, v),
            }
        }
        for span in self.unknown_fields() {
            // A known field with a wire type its kind does not take is dropped before the
            // merge: prost-reflect rejects it, but only after making the field present
            // (an empty message, say), which would invent a value the tree does not hold.
            if !fits_its_field(&dm, span) || dm.merge(span).is_err() {
                *dropped += 1;
            }
        }
        dm
    }
}

/// Whether an unknown field's wire type is one its field number's declared kind takes
/// (always, for numbers the message does not declare).
fn fits_its_field(dm: &DynamicMessage, span: &[u8]) -> bool {
    use protojit_arena::wire;
    let Ok((number, wire_type, _)) = wire::read_tag(span, 0) else { return false };
    let desc = dm.descriptor();
    let kind = match desc.get_field(number) {
        Some(f) => (f.kind(), f.is_list() || f.is_map(), f.is_group()),
        None => match desc.get_extension(number) {
            Some(e) => (e.kind(), e.is_list(), e.is_group()),
            None => return true,
        },
    };
    let (kind, repeated, group) = kind;
    use prost_reflect::Kind;
    let scalar = match kind {
        Kind::Message(_) if group => wire::SGROUP,
        Kind::Message(_) | Kind::String | Kind::Bytes => wire::LEN,
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => wire::FIXED64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => wire::FIXED32,
        _ => wire::VARINT,
    };
    wire_type == scalar
        || (repeated && wire_type == wire::LEN && matches!(scalar, wire::VARINT | wire::FIXED32 | wire::FIXED64))
}

fn is_string(kind: &prost_reflect::Kind) -> bool {
    match kind {
        prost_reflect::Kind::String => true,
        prost_reflect::Kind::Message(m) if m.is_map_entry() => {
            m.map_entry_value_field().kind() == prost_reflect::Kind::String
        }
        _ => false,
    }
}

/// `string` says the field (or a map's value) is a `string`, so stray bytes become text.
fn convert_value(value: &Value<'_>, string: bool, dropped: &mut usize) -> PValue {
    match value {
        Value::Bool(v) => PValue::Bool(*v),
        Value::I32(v) => PValue::I32(*v),
        Value::I64(v) => PValue::I64(*v),
        Value::U32(v) => PValue::U32(*v),
        Value::U64(v) => PValue::U64(*v),
        Value::F32(v) => PValue::F32(*v),
        Value::F64(v) => PValue::F64(*v),
        Value::String(s) => PValue::String((*s).to_owned()),
        // A string field holding non-UTF-8 bytes (decoded without validation) has no
        // DynamicMessage form: its text is kept lossily rather than the field's type changed.
        Value::Bytes(b) if string => PValue::String(String::from_utf8_lossy(b).into_owned()),
        Value::Bytes(b) => PValue::Bytes(prost::bytes::Bytes::copy_from_slice(b)),
        Value::Enum(e) => PValue::EnumNumber(e.number),
        Value::Message(m) => PValue::Message(m.convert(dropped)),
        Value::List(l) => PValue::List(l.iter().map(|v| convert_value(&v, string, dropped)).collect()),
        Value::Map(m) => {
            let mut out = HashMap::with_capacity(m.len());
            for (k, v) in m.iter() {
                out.insert(convert_key(k), convert_value(&v, string, dropped));
            }
            PValue::Map(out)
        }
    }
}

fn convert_key(key: MapKey<'_>) -> PMapKey {
    match key {
        MapKey::Bool(v) => PMapKey::Bool(v),
        MapKey::I32(v) => PMapKey::I32(v),
        MapKey::I64(v) => PMapKey::I64(v),
        MapKey::U32(v) => PMapKey::U32(v),
        MapKey::U64(v) => PMapKey::U64(v),
        MapKey::String(v) => PMapKey::String(v.to_owned()),
        MapKey::Bytes(v) => PMapKey::String(String::from_utf8_lossy(v).into_owned()),
    }
}
