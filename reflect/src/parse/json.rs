//! proto3 JSON into protobuf binary: serde_json's streaming deserializer, driven by the
//! schema through `DeserializeSeed`s that write each value as it is read.
//!
//! Each seed writes the value it reads and returns a [`Got`]: written (and whether it is the
//! default, which a field without presence then drops), JSON `null`, or skipped (an enum
//! name the schema does not know, under `ignore_unknown_fields`). Errors raised here go
//! through serde's `Error::custom`, so serde_json attaches the line and column.

use std::fmt;

use prost_reflect::{Kind, MessageDescriptor};
use protojit_arena::wire::{EGROUP, LEN};
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json_value::{parse_int_str, Bodies, Ctx, Got, Scalar};
use super::writer::Writer;
use super::{int_wire, tag_wire_type, wire_type, wkt, FieldInfo, ParseError, ParseOptions, Seen, Wire};

/// Parses `json` (one proto3 JSON object of type `desc`) and appends its canonical binary
/// encoding to `out`. On error, `out` is left as it was.
///
/// Decode the bytes (`Decoder::decode`) for a tree.
pub fn json_to_binary(
    desc: &MessageDescriptor,
    json: &[u8],
    options: &ParseOptions,
    out: &mut Vec<u8>,
) -> Result<(), ParseError> {
    let start = out.len();
    let result = {
        // At most the decoders' limit, as the text parser.
        let options = ParseOptions { max_depth: options.max_depth.min(protojit_arena::MAX_DEPTH_LIMIT), ..*options };
        let mut ctx = Ctx { w: Writer::new(out), options, depth: 0, any_fields: false };
        let mut de = serde_json::Deserializer::from_slice(json);
        let body = Body { ctx: &mut ctx, desc };
        match body.deserialize(&mut de).and_then(|got| de.end().map(|()| got)) {
            Ok(Got::Null) => Err(ParseError::Json {
                line: 1,
                column: 1,
                message: format!("expected a JSON object for {}, found null", desc.full_name()),
            }),
            Ok(_) => Ok(()),
            Err(e) => Err(json_error(&e)),
        }
    };
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn json_error(e: &serde_json::Error) -> ParseError {
    let mut message = e.to_string();
    if e.line() != 0 {
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
    }
    // serde_json says column 0 for an error before a line's first character (an empty
    // document); positions here are 1-based.
    let column = if e.line() == 0 { 0 } else { e.column().max(1) };
    ParseError::Json { line: e.line(), column, message }
}

/// The fields of one message (no tag, no length), whatever its JSON form: well-known types
/// have their own (see `wkt`).
struct Body<'c, 'o, 'd> {
    ctx: &'c mut Ctx<'o>,
    desc: &'d MessageDescriptor,
}

/// The [`Bodies`] well-known types recurse through: [`Body`] itself, so the messages inside
/// them (`Any`'s, `Struct`'s values) get the same depth limit and well-known-type dispatch.
struct Json;

impl Bodies for Json {
    #[inline]
    fn body<'de, D: Deserializer<'de>>(ctx: &mut Ctx, desc: &MessageDescriptor, de: D) -> Result<Got, D::Error> {
        Body { ctx, desc }.deserialize(de)
    }
}

impl<'de> DeserializeSeed<'de> for Body<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        // The root is depth 0 and `max_depth` levels below it are accepted, as the decoders
        // and the text parser accept them.
        if self.ctx.depth > self.ctx.options.max_depth {
            return Err(D::Error::custom(format!(
                "messages nest deeper than the limit of {}",
                self.ctx.options.max_depth
            )));
        }
        self.ctx.depth += 1;
        let got = match wkt::Wkt::of(self.desc) {
            Some(kind) => wkt::deserialize::<Json, D>(self.ctx, self.desc, kind, de),
            None => {
                let any = std::mem::take(&mut self.ctx.any_fields);
                de.deserialize_any(MessageVisitor { ctx: self.ctx, desc: self.desc, any })
            }
        };
        self.ctx.depth -= 1;
        got
    }
}

struct MessageVisitor<'c, 'o, 'd> {
    ctx: &'c mut Ctx<'o>,
    desc: &'d MessageDescriptor,
    /// The fields of an `Any`'s value, beside the `@type` key (skipped).
    any: bool,
}

impl<'de> Visitor<'de> for MessageVisitor<'_, '_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object for {}", self.desc.full_name())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got, A::Error> {
        let frame = self.ctx.w.begin_message();
        let mut seen = Seen::new();
        let ignore = self.ctx.options.ignore_unknown_fields;
        loop {
            let key = match ignore {
                true => map.next_key_seed(IgnoringKeySeed(KeySeed { desc: self.desc, any: self.any }))?,
                false => map.next_key_seed(KeySeed { desc: self.desc, any: self.any })?,
            };
            // Keys are `Some(None)` only when they are ignored: unknown keys under
            // `ignore_unknown_fields` (else an error above) and an `Any`'s `@type`.
            let f = match key {
                None => break,
                Some(Some(f)) => f,
                Some(None) => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let got = map.next_value_seed(FieldSeed { ctx: &mut *self.ctx, f: &f })?;
            // A null value sets nothing, so it does not conflict with a member of its oneof;
            // a key given twice is an error whatever it holds.
            let mut check = f.clone();
            if got == Got::Null {
                check.oneof = None;
            }
            seen.set(&check).map_err(A::Error::custom)?;
        }
        self.ctx.w.end_message(frame);
        Ok(Got::Value { default: false })
    }
}

/// An object key: the field it names (JSON name, proto name or `[extension]`), `None` for
/// an unknown key under `ignore_unknown_fields`.
#[derive(Clone, Copy)]
struct KeySeed<'d> {
    desc: &'d MessageDescriptor,
    /// `@type` is skipped (`None`): the fields are an `Any`'s value.
    any: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<FieldInfo>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<FieldInfo>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        let desc = self.desc;
        if self.any && key == "@type" {
            return Ok(None);
        }
        if let Some(f) = desc.get_field_by_json_name(key).or_else(|| desc.get_field_by_name(key)) {
            return Ok(Some(FieldInfo::field(&f)));
        }
        if let Some(name) = key.strip_prefix('[').and_then(|k| k.strip_suffix(']')) {
            if let Some(e) = desc.get_extension_by_full_name(name) {
                return Ok(Some(FieldInfo::extension(&e)));
            }
        }
        Err(E::custom(format!("no field {key:?} in {}", desc.full_name())))
    }
}

impl KeySeed<'_> {
    /// Unknown keys are `None` rather than errors (for [`IgnoringKeySeed`]).
    fn lookup(&self, key: &str) -> Option<FieldInfo> {
        self.visit_str::<serde::de::value::Error>(key).ok().flatten()
    }
}

/// [`MessageVisitor`] reads keys through this when unknown fields are ignored.
struct IgnoringKeySeed<'d>(KeySeed<'d>);

impl<'de> DeserializeSeed<'de> for IgnoringKeySeed<'_> {
    type Value = Option<FieldInfo>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for IgnoringKeySeed<'_> {
    type Value = Option<FieldInfo>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.lookup(key))
    }
}

/// One field's value: singular, list or map.
struct FieldSeed<'c, 'o, 'f> {
    ctx: &'c mut Ctx<'o>,
    f: &'f FieldInfo,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        let FieldSeed { ctx, f } = self;
        if f.map {
            return de.deserialize_any(MapVisitor { ctx, f });
        }
        if f.list {
            return de.deserialize_any(ListVisitor { ctx, f });
        }
        let start = ctx.w.pos();
        let got = value(ctx, f, de)?;
        match got {
            Got::Value { default } if !default || f.presence || matches!(f.kind, Kind::Message(_)) => {
                ctx.w.field_done(f.number, start, false)
            }
            _ => ctx.w.truncate(start),
        }
        Ok(got)
    }
}

/// Writes one value of field `f` with its tag (a message with its length or group end).
fn value<'de, D: Deserializer<'de>>(ctx: &mut Ctx, f: &FieldInfo, de: D) -> Result<Got, D::Error> {
    ctx.w.tag(f.number, tag_wire_type(f));
    match &f.kind {
        Kind::Message(m) if f.group => {
            let got = Body { ctx: &mut *ctx, desc: m }.deserialize(de)?;
            ctx.w.tag(f.number, EGROUP);
            Ok(got)
        }
        Kind::Message(m) => {
            let mark = ctx.w.begin_len();
            let got = Body { ctx: &mut *ctx, desc: m }.deserialize(de)?;
            ctx.w.end_len(mark);
            Ok(got)
        }
        kind => Scalar { ctx, kind }.deserialize(de),
    }
}

/// A seed for one value of field `f` with its tag, for lists and maps.
struct ValueSeed<'c, 'o, 'f> {
    ctx: &'c mut Ctx<'o>,
    f: &'f FieldInfo,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        value(self.ctx, self.f, de)
    }
}

struct ListVisitor<'c, 'o, 'f> {
    ctx: &'c mut Ctx<'o>,
    f: &'f FieldInfo,
}

impl<'de> Visitor<'de> for ListVisitor<'_, '_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON array for repeated field {}", self.f.display)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got, A::Error> {
        let ListVisitor { ctx, f } = self;
        let start = ctx.w.pos();
        let null = || A::Error::custom(format!("null is not an element of repeated field {}", f.display));
        if f.packed {
            ctx.w.tag(f.number, LEN);
            let mark = ctx.w.begin_len();
            while let Some(got) = seq.next_element_seed(Scalar { ctx: &mut *ctx, kind: &f.kind })? {
                if got == Got::Null {
                    return Err(null());
                }
            }
            if ctx.w.len_since(mark) == 0 {
                ctx.w.truncate(start);
            } else {
                ctx.w.end_len(mark);
                ctx.w.field_done(f.number, start, true);
            }
        } else {
            loop {
                let at = ctx.w.pos();
                match seq.next_element_seed(ValueSeed { ctx: &mut *ctx, f })? {
                    None => {
                        ctx.w.truncate(at);
                        break;
                    }
                    Some(Got::Null) => return Err(null()),
                    Some(Got::Skip) => ctx.w.truncate(at),
                    Some(Got::Value { .. }) => {}
                }
            }
            ctx.w.field_done(f.number, start, false);
        }
        Ok(Got::Value { default: false })
    }
}

struct MapVisitor<'c, 'o, 'f> {
    ctx: &'c mut Ctx<'o>,
    f: &'f FieldInfo,
}

impl<'de> Visitor<'de> for MapVisitor<'_, '_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object for map field {}", self.f.display)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got, A::Error> {
        let MapVisitor { ctx, f } = self;
        let Kind::Message(entry) = &f.kind else {
            return Err(A::Error::custom(format!("map field {} has no entry type", f.display)));
        };
        let key_field = FieldInfo::field(&entry.map_entry_key_field());
        let value_field = FieldInfo::field(&entry.map_entry_value_field());
        let start = ctx.w.pos();
        loop {
            let at = ctx.w.pos();
            ctx.w.tag(f.number, LEN);
            let mark = ctx.w.begin_len();
            ctx.w.tag(1, wire_type(&key_field.kind));
            if map.next_key_seed(MapKey { ctx: &mut *ctx, kind: &key_field.kind })?.is_none() {
                ctx.w.truncate(at);
                break;
            }
            match map.next_value_seed(ValueSeed { ctx: &mut *ctx, f: &value_field })? {
                Got::Null => return Err(A::Error::custom(format!("null is not a value of map field {}", f.display))),
                Got::Skip => ctx.w.truncate(at),
                Got::Value { .. } => ctx.w.end_len(mark),
            }
        }
        ctx.w.field_done(f.number, start, false);
        Ok(Got::Value { default: false })
    }
}

/// A map key: a JSON string converted to the key type, written without its tag.
struct MapKey<'c, 'o, 'k> {
    ctx: &'c mut Ctx<'o>,
    kind: &'k Kind,
}

impl<'de> DeserializeSeed<'de> for MapKey<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for MapKey<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<(), E> {
        let wire = match self.kind {
            Kind::String => {
                self.ctx.w.bytes(key.as_bytes());
                return Ok(());
            }
            Kind::Bool => match key {
                "true" => Wire::Varint(1),
                "false" => Wire::Varint(0),
                _ => return Err(E::custom(format!("map key {key:?} is not true or false"))),
            },
            kind => {
                let v = parse_int_str(key).ok_or_else(|| E::custom(format!("map key {key:?} is not an integer")))?;
                int_wire(kind, v).map_err(E::custom)?
            }
        };
        wire.write(&mut self.ctx.w);
        Ok(())
    }
}
