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

use super::writer::Writer;
use super::{
    int_wire, is_closed, is_integer, tag_wire_type, wire_type, wkt, FieldInfo, ParseError, ParseOptions, Seen, Wire,
};

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
        let mut ctx = Ctx { w: Writer::new(out), options: *options, depth: 0 };
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
    ParseError::Json { line: e.line(), column: e.column(), message }
}

pub(super) struct Ctx<'o> {
    pub(super) w: Writer<'o>,
    pub(super) options: ParseOptions,
    pub(super) depth: u32,
}

/// What a seed did with its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Got {
    /// Written; `default` when it is the type's default (zero, empty).
    Value { default: bool },
    /// JSON `null`: nothing written.
    Null,
    /// An unknown enum name under `ignore_unknown_fields`: nothing written.
    Skip,
}

/// The fields of one message (no tag, no length), whatever its JSON form: well-known types
/// have their own (see `wkt`).
pub(super) struct Body<'c, 'o, 'd> {
    pub(super) ctx: &'c mut Ctx<'o>,
    pub(super) desc: &'d MessageDescriptor,
}

impl<'de> DeserializeSeed<'de> for Body<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        if self.ctx.depth >= self.ctx.options.max_depth {
            return Err(D::Error::custom(format!(
                "messages nest deeper than the limit of {}",
                self.ctx.options.max_depth
            )));
        }
        self.ctx.depth += 1;
        let got = match wkt::Wkt::of(self.desc) {
            Some(kind) => wkt::deserialize(self.ctx, self.desc, kind, de),
            None => de.deserialize_any(MessageVisitor { ctx: self.ctx, desc: self.desc }),
        };
        self.ctx.depth -= 1;
        got
    }
}

struct MessageVisitor<'c, 'o, 'd> {
    ctx: &'c mut Ctx<'o>,
    desc: &'d MessageDescriptor,
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
                true => map.next_key_seed(IgnoringKeySeed(KeySeed { desc: self.desc }))?,
                false => map.next_key_seed(KeySeed { desc: self.desc })?,
            };
            // Unknown keys are `Some(None)` only when they are ignored (else an error above).
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

/// One scalar value (no tag): numbers, bools, strings, bytes, enums.
pub(super) struct Scalar<'c, 'o, 'k> {
    pub(super) ctx: &'c mut Ctx<'o>,
    pub(super) kind: &'k Kind,
}

impl<'de> DeserializeSeed<'de> for Scalar<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        de.deserialize_any(self)
    }
}

impl Scalar<'_, '_, '_> {
    fn put(self, wire: Wire) -> Got {
        wire.write(&mut self.ctx.w);
        Got::Value { default: wire.is_zero() }
    }

    fn name(&self) -> String {
        match self.kind {
            Kind::Enum(e) => format!("enum {}", e.full_name()),
            Kind::Message(m) => m.full_name().to_owned(),
            k => format!("{k:?}").to_lowercase(),
        }
    }

    fn number<E: serde::de::Error>(self, v: i128) -> Result<Got, E> {
        if let Kind::Enum(e) = self.kind {
            if is_closed(e) && i32::try_from(v).ok().and_then(|n| e.get_value(n)).is_none() {
                if self.ctx.options.ignore_unknown_fields {
                    return Ok(Got::Skip);
                }
                return Err(E::custom(format!("{v} is not a value of closed enum {}", e.full_name())));
            }
        }
        if matches!(self.kind, Kind::Bool | Kind::String | Kind::Bytes) {
            return Err(E::custom(format!("expected {}, found the number {v}", self.name())));
        }
        let wire = int_wire(self.kind, v).map_err(E::custom)?;
        Ok(self.put(wire))
    }

    fn float<E: serde::de::Error>(self, v: f64) -> Result<Got, E> {
        match self.kind {
            Kind::Double => Ok(self.put(Wire::Fixed64(v.to_bits()))),
            Kind::Float => {
                let f = v as f32;
                if v.is_finite() && f.is_infinite() {
                    return Err(E::custom(format!("{v} is out of range for float")));
                }
                Ok(self.put(Wire::Fixed32(f.to_bits())))
            }
            k if is_integer(k) || matches!(k, Kind::Enum(_)) => {
                if v.fract() != 0.0 || !v.is_finite() {
                    return Err(E::custom(format!("{v} is not an integer, as {} needs", self.name())));
                }
                if v.abs() >= 1.8e19 {
                    return Err(E::custom(format!("{v} is out of range for {}", self.name())));
                }
                self.number(v as i128)
            }
            _ => Err(E::custom(format!("expected {}, found the number {v}", self.name()))),
        }
    }
}

impl<'de> Visitor<'de> for Scalar<'_, '_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON value for {}", self.name())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        if matches!(self.kind, Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue") {
            return Ok(self.put(Wire::Varint(0)));
        }
        Ok(Got::Null)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Got, E> {
        match self.kind {
            Kind::Bool => Ok(self.put(Wire::Varint(u64::from(v)))),
            _ => Err(E::custom(format!("expected {}, found {v}", self.name()))),
        }
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Got, E> {
        match self.kind {
            Kind::Float | Kind::Double => self.float(v as f64),
            _ => self.number(v.into()),
        }
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Got, E> {
        match self.kind {
            Kind::Float | Kind::Double => self.float(v as f64),
            _ => self.number(v.into()),
        }
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Got, E> {
        self.float(v)
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Got, E> {
        match self.kind {
            Kind::String => {
                self.ctx.w.bytes(s.as_bytes());
                Ok(Got::Value { default: s.is_empty() })
            }
            Kind::Bytes => {
                let mark = self.ctx.w.begin_len();
                base64_decode(s, self.ctx.w.buf).map_err(E::custom)?;
                let empty = self.ctx.w.len_since(mark) == 0;
                self.ctx.w.end_len(mark);
                Ok(Got::Value { default: empty })
            }
            Kind::Enum(e) => match e.get_value_by_name(s) {
                Some(v) => Ok(self.put(Wire::Varint(v.number() as i64 as u64))),
                None if self.ctx.options.ignore_unknown_fields => Ok(Got::Skip),
                None => Err(E::custom(format!("{s:?} is not a value of enum {}", e.full_name()))),
            },
            Kind::Float | Kind::Double => {
                let v = match s {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ => parse_float_str(s).ok_or_else(|| E::custom(format!("{s:?} is not a number")))?,
                };
                self.float(v)
            }
            k if is_integer(k) => match parse_int_str(s) {
                Some(v) => self.number(v),
                None => match parse_float_str(s) {
                    Some(v) => self.float(v),
                    None => Err(E::custom(format!("{s:?} is not an integer"))),
                },
            },
            _ => Err(E::custom(format!("expected {}, found the string {s:?}", self.name()))),
        }
    }
}

/// A decimal integer as JSON writes it (an optional `-`, digits, no spaces or `+`).
pub(super) fn parse_int_str(s: &str) -> Option<i128> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 30 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A JSON number written in a string (`"1.5"`, `"1e2"`); not `inf`, `nan`, `+1` or spaces.
fn parse_float_str(s: &str) -> Option<f64> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let first = body.bytes().next()?;
    if !first.is_ascii_digit() && first != b'.' {
        return None;
    }
    if !body.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Decodes base64 in either alphabet (standard or URL-safe), padding optional, into `out`.
fn base64_decode(s: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let bytes = s.as_bytes();
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1] == b'=' {
        end -= 1;
    }
    let padding = bytes.len() - end;
    if padding > 2 || (padding > 0 && bytes.len() % 4 != 0) {
        return Err(format!("invalid base64 padding in {:?}", truncated(s)));
    }
    let body = &bytes[..end];
    if body.len() % 4 == 1 {
        return Err(format!("invalid base64 length in {:?}", truncated(s)));
    }
    out.reserve(body.len() / 4 * 3 + 2);
    let mut acc = 0u32;
    let mut bits = 0;
    for (i, &c) in body.iter().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return Err(format!("invalid base64 character {:?} at offset {i}", c as char)),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(())
}

fn truncated(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
