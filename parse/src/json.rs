//! proto3 JSON into protobuf binary: serde_json's streaming deserializer, driven by the
//! schema through `DeserializeSeed`s that write each value as it is read.
//!
//! Each seed writes the value it reads and returns a [`Got`]: written (and whether it is the
//! default, which a field without presence then drops), JSON `null`, or skipped (an enum
//! name the schema does not know, under `ignore_unknown_fields`). Errors raised here go
//! through serde's `Error::custom`, so serde_json attaches the line and column.

use std::fmt;

use prost_reflect::Kind;
use protojit_arena::wire::{EGROUP, LEN};
use protojit_arena::{LayoutIndex, Layouts};
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json_direct;
use super::json_value::{map_key, packed_integers_fast, Bodies, Ctx, Got, Scalar};
use super::tables::Tables;
use super::writer::Writer;
use serde::Deserialize as _;
use serde_json::value::RawValue;

use super::{is_integer, tag_wire_type, wire_type, wkt, FieldInfo, Message, ParseError, ParseOptions, Seen};

/// Parses `json` (one proto3 JSON object of the message type at `root` in `layouts`) and
/// appends its canonical binary encoding to `out`. On error, `out` is left as it was.
///
/// Presence, packing, group (`DELIMITED`) encoding, closed enums and UTF-8 checks follow
/// each field's resolved features in `layouts` (as `Schema::layouts` resolves them for
/// proto2, proto3 and editions files alike). Decode the bytes (`Decoder::decode`) for a
/// tree.
///
/// # Panics
///
/// When `root` is not a layout of `layouts` (an index from other layouts).
pub fn json_to_binary(
    layouts: &Layouts,
    root: LayoutIndex,
    json: &[u8],
    options: &ParseOptions,
    out: &mut Vec<u8>,
) -> Result<(), ParseError> {
    parse(layouts, root, json, options, out, JsonReaders::Both)
}

/// Which readers [`parse`] runs.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonReaders {
    /// The direct reader, then serde_json on what it does not take ([`json_to_binary`]).
    Both,
    /// serde_json alone.
    Serde,
    /// The direct reader alone: what it does not take is an error at line 0.
    Direct,
}

/// [`json_to_binary`] through the readers named: the same bytes and errors whichever run
/// (the direct reader's refusals aside); for the tests that hold the readers to that.
#[doc(hidden)]
pub fn json_to_binary_with(
    readers: JsonReaders,
    layouts: &Layouts,
    root: LayoutIndex,
    json: &[u8],
    options: &ParseOptions,
    out: &mut Vec<u8>,
) -> Result<(), ParseError> {
    parse(layouts, root, json, options, out, readers)
}

/// [`json_to_binary`] through `readers`.
fn parse(
    layouts: &Layouts,
    root: LayoutIndex,
    json: &[u8],
    options: &ParseOptions,
    out: &mut Vec<u8>,
    readers: JsonReaders,
) -> Result<(), ParseError> {
    let start = out.len();
    let desc = layouts.get(root).descriptor();
    let result = {
        // At most the decoders' limit, as the text parser.
        let options = ParseOptions { max_depth: options.max_depth.min(protojit_arena::MAX_DEPTH_LIMIT), ..*options };
        let tables = Tables::of(layouts);
        if readers != JsonReaders::Serde {
            // The direct reader first; what it does not take, serde_json reads again.
            let mut ctx = Ctx::new(Writer::new(out), layouts, &tables, options, json);
            let read = json_direct::message::<Json>(&mut ctx, root, json);
            let too_large = ctx.w.too_large();
            ctx.w.recycle();
            if read.is_ok() && !too_large {
                return Ok(());
            }
            out.truncate(start);
        }
        if readers == JsonReaders::Direct {
            let message = "not read by the direct reader".to_owned();
            return Err(ParseError::Json { line: 0, column: 0, message });
        }
        // Valid UTF-8 checked once for the whole input, so that serde_json does not check
        // each string again (a call per string: 13% of gm1's parse); other input goes the
        // way that finds and reports the bad bytes.
        let text = std::str::from_utf8(json).ok();
        let mut ctx = Ctx::new(Writer::new(out), layouts, &tables, options, json);
        let body = Body { ctx: &mut ctx, layout: root };
        let parsed = match text {
            Some(text) => parse_body(body, &mut serde_json::Deserializer::from_str(text)),
            None => parse_body(body, &mut serde_json::Deserializer::from_slice(json)),
        };
        let result = match parsed {
            Ok(Got::Null) => Err(ParseError::Json {
                line: 1,
                column: 1,
                message: format!("expected a JSON object for {}, found null", desc.full_name()),
            }),
            Ok(_) if ctx.w.too_large() => Err(too_large(json)),
            Ok(_) => Ok(()),
            Err(e) => match ctx.error_at {
                Some(at) => {
                    let (line, column) = serde_position(json, at);
                    Err(ParseError::Json { line, column, message: message_of(&e) })
                }
                None => Err(json_error(&e, ctx.error_end, json)),
            },
        };
        ctx.w.recycle();
        result
    };
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// The root message's body from `de`, which must end after it.
fn parse_body<'de, R: serde_json::de::Read<'de>>(
    body: Body<'_, '_>,
    de: &mut serde_json::Deserializer<R>,
) -> Result<Got, serde_json::Error> {
    body.deserialize(&mut *de).and_then(|got| de.end().map(|()| got))
}

/// The output outgrew what the writer indexes (4 GiB; protobuf's own limit is 2 GiB).
fn too_large(json: &[u8]) -> ParseError {
    let (line, column) = position(json, json.len());
    ParseError::Json { line, column, message: "the encoded message exceeds 4 GiB".into() }
}

/// `error_end`: where the value a seed read raw and rejected ends. serde_json places the
/// error where it stands when the error reaches it, which for a raw value is past the
/// object or array around it (or nowhere, for a bare value at the root).
fn json_error(e: &serde_json::Error, error_end: Option<usize>, json: &[u8]) -> ParseError {
    let message = message_of(e);
    if let Some(end) = error_end {
        // At the value's last character, as serde_json places errors in values.
        let (line, column) = position(json, end.saturating_sub(1));
        return ParseError::Json { line, column, message };
    }
    // serde_json says column 0 for an error before a line's first character (an empty
    // document); positions here are 1-based.
    let column = if e.line() == 0 { 0 } else { e.column().max(1) };
    ParseError::Json { line: e.line(), column, message }
}

/// serde_json's message without the position it appends.
fn message_of(e: &serde_json::Error) -> String {
    let mut message = e.to_string();
    if e.line() != 0 {
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
    }
    message
}

/// The line and column serde_json gives an error when it stands at byte `at` of `json`
/// (columns in bytes, as it counts them; at least 1).
fn serde_position(json: &[u8], at: usize) -> (usize, usize) {
    let before = &json[..at.min(json.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, (before.len() - line_start).max(1))
}

/// The 1-based line and column (in characters) of byte `at` of `json`.
fn position(json: &[u8], at: usize) -> (usize, usize) {
    let before = &json[..at.min(json.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, String::from_utf8_lossy(&before[line_start..]).chars().count() + 1)
}

/// The fields of one message (no tag, no length), whatever its JSON form: well-known types
/// have their own (see `wkt`).
struct Body<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    layout: LayoutIndex,
}

/// The [`Bodies`] well-known types recurse through: [`Body`] itself, so the messages inside
/// them (`Any`'s, `Struct`'s values) get the same depth limit and well-known-type dispatch.
struct Json;

impl Bodies for Json {
    #[inline]
    fn body<'de, D: Deserializer<'de>>(ctx: &mut Ctx, layout: LayoutIndex, de: D) -> Result<Got, D::Error> {
        Body { ctx, layout }.deserialize(de)
    }
}

impl<'de> DeserializeSeed<'de> for Body<'_, '_> {
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
        let got = match self.ctx.message(self.layout).table.wkt {
            Some(kind) => wkt::deserialize::<Json, D>(self.ctx, self.layout, kind, de),
            None => {
                let any = std::mem::take(&mut self.ctx.any_fields);
                de.deserialize_any(MessageVisitor { ctx: self.ctx, layout: self.layout, any })
            }
        };
        self.ctx.depth -= 1;
        got
    }
}

struct MessageVisitor<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    layout: LayoutIndex,
    /// The fields of an `Any`'s value, beside the `@type` key (skipped).
    any: bool,
}

impl<'de> Visitor<'de> for MessageVisitor<'_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object for {}", self.ctx.layouts.get(self.layout).descriptor().full_name())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got, A::Error> {
        let message = self.ctx.message(self.layout);
        let frame = self.ctx.w.begin_message();
        let mut seen = Seen::new();
        let ignore = self.ctx.options.ignore_unknown_fields;
        loop {
            let key = match ignore {
                true => map.next_key_seed(IgnoringKeySeed(KeySeed { message, any: self.any }))?,
                false => map.next_key_seed(KeySeed { message, any: self.any })?,
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
            seen.set(&f, got != Got::Null).map_err(A::Error::custom)?;
        }
        self.ctx.w.end_message(frame);
        Ok(Got::Value { default: false })
    }
}

/// An object key: the field it names (JSON name, proto name or `[extension]`), `None` for
/// an unknown key under `ignore_unknown_fields`.
#[derive(Clone, Copy)]
struct KeySeed<'l> {
    message: Message<'l>,
    /// `@type` is skipped (`None`): the fields are an `Any`'s value.
    any: bool,
}

impl<'de, 'l> DeserializeSeed<'de> for KeySeed<'l> {
    type Value = Option<FieldInfo<'l>>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de, 'l> Visitor<'de> for KeySeed<'l> {
    type Value = Option<FieldInfo<'l>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        if self.any && key == "@type" {
            return Ok(None);
        }
        // JSON name, field name or `[extension]`, in that order of preference (the table's).
        if let Some(slot) = self.message.table.json_slot(key.as_bytes()) {
            return Ok(Some(self.message.field(slot)));
        }
        Err(E::custom(format!("no field {key:?} in {}", self.message.layout.descriptor().full_name())))
    }
}

impl<'l> KeySeed<'l> {
    /// Unknown keys are `None` rather than errors (for [`IgnoringKeySeed`]).
    fn lookup(&self, key: &str) -> Option<FieldInfo<'l>> {
        self.visit_str::<serde::de::value::Error>(key).ok().flatten()
    }
}

/// [`MessageVisitor`] reads keys through this when unknown fields are ignored.
struct IgnoringKeySeed<'l>(KeySeed<'l>);

impl<'de, 'l> DeserializeSeed<'de> for IgnoringKeySeed<'l> {
    type Value = Option<FieldInfo<'l>>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de, 'l> Visitor<'de> for IgnoringKeySeed<'l> {
    type Value = Option<FieldInfo<'l>>;

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
    f: &'f FieldInfo<'o>,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        let FieldSeed { ctx, f } = self;
        if f.map {
            return de.deserialize_any(MapVisitor { ctx, f });
        }
        if f.list {
            if f.packed && is_integer(f.kind()) {
                return packed_integers(ctx, f, de);
            }
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
fn value<'de, D: Deserializer<'de>>(ctx: &mut Ctx, f: &FieldInfo<'_>, de: D) -> Result<Got, D::Error> {
    ctx.w.tag(f.number, tag_wire_type(f));
    match (&f.kind, f.child) {
        (Kind::Message(_), Some(layout)) if f.group => {
            let got = Body { ctx: &mut *ctx, layout }.deserialize(de)?;
            ctx.w.tag(f.number, EGROUP);
            Ok(got)
        }
        (Kind::Message(_), Some(layout)) => {
            let mark = ctx.w.begin_len();
            let got = Body { ctx: &mut *ctx, layout }.deserialize(de)?;
            ctx.w.end_len(mark);
            Ok(got)
        }
        (Kind::Message(m), None) => Err(D::Error::custom(format!("message type {} has no layout", m.full_name()))),
        (kind, _) => Scalar { ctx, kind, closed: f.closed_enum, enum_index: f.enum_index }.deserialize(de),
    }
}

/// A seed for one value of field `f` with its tag, for lists and maps.
struct ValueSeed<'c, 'o, 'f, 'l> {
    ctx: &'c mut Ctx<'o>,
    f: &'f FieldInfo<'l>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        value(self.ctx, self.f, de)
    }
}

/// A packed integer field's JSON array, read from its text: serde_json checks the array's
/// syntax once (as a raw value) and a tight loop reads the integers, bare or quoted. Anything
/// else (floats, exponents, escapes, long numbers, `null`s, not an array) is left to
/// [`ListVisitor`] over the same text, whose errors are placed in the whole input.
fn packed_integers<'de, 'o, D: Deserializer<'de>>(
    ctx: &mut Ctx<'o>,
    f: &FieldInfo<'o>,
    de: D,
) -> Result<Got, D::Error> {
    let text = <&'de RawValue>::deserialize(de)?.get();
    let start = ctx.w.pos();
    if let Some((got, _)) = packed_integers_fast(ctx, f, text.as_bytes()) {
        return Ok(got);
    }
    ctx.w.truncate(start);
    let mut sub = serde_json::Deserializer::from_str(text);
    match sub.deserialize_any(ListVisitor { ctx: &mut *ctx, f }) {
        Ok(got) => Ok(got),
        Err(e) => {
            if ctx.error_at.is_none() && ctx.error_end.is_none() {
                // Where the error stands in the value's text, then in the input.
                let line_start = match e.line() {
                    0 | 1 => Some(0),
                    l => text.match_indices('\n').nth(l - 2).map(|(i, _)| i + 1),
                };
                if let (Some(origin), Some(line_start)) = (ctx.offset_of(text), line_start) {
                    ctx.error_at = Some(origin + line_start + e.column());
                }
            }
            Err(D::Error::custom(message_of(&e)))
        }
    }
}

struct ListVisitor<'c, 'o, 'f> {
    ctx: &'c mut Ctx<'o>,
    f: &'f FieldInfo<'o>,
}

impl<'de> Visitor<'de> for ListVisitor<'_, '_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON array for repeated field {}", self.f.display())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got, A::Error> {
        let ListVisitor { ctx, f } = self;
        let start = ctx.w.pos();
        let null = || A::Error::custom(format!("null is not an element of repeated field {}", f.display()));
        if f.packed {
            ctx.w.tag(f.number, LEN);
            let mark = ctx.w.begin_len();
            while let Some(got) = seq.next_element_seed(Scalar {
                ctx: &mut *ctx,
                kind: f.kind(),
                closed: f.closed_enum,
                enum_index: f.enum_index,
            })? {
                if got == Got::Null {
                    return Err(null());
                }
            }
            ctx.w.end_packed(f.number, start, mark);
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
    f: &'f FieldInfo<'o>,
}

impl<'de> Visitor<'de> for MapVisitor<'_, '_, '_> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object for map field {}", self.f.display())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got, A::Error> {
        let MapVisitor { ctx, f } = self;
        let entry = f.child.map(|li| ctx.message(li));
        let (Some(key_field), Some(value_field)) =
            (entry.and_then(|e| e.by_number(1)), entry.and_then(|e| e.by_number(2)))
        else {
            return Err(A::Error::custom(format!("map field {} has no entry type", f.display())));
        };
        let start = ctx.w.pos();
        loop {
            let at = ctx.w.pos();
            ctx.w.tag(f.number, LEN);
            let mark = ctx.w.begin_len();
            ctx.w.tag(1, wire_type(&key_field.kind));
            if map.next_key_seed(MapKey { ctx: &mut *ctx, kind: key_field.kind() })?.is_none() {
                ctx.w.truncate(at);
                break;
            }
            match map.next_value_seed(ValueSeed { ctx: &mut *ctx, f: &value_field })? {
                Got::Null => return Err(A::Error::custom(format!("null is not a value of map field {}", f.display()))),
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
        map_key(&mut self.ctx.w, self.kind, key).map_err(E::custom)
    }
}
