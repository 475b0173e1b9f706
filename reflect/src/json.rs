//! Proto3 JSON: serde `Serialize` for decoded trees, as prost-reflect writes it except where it departs from the mapping.

use std::fmt;

use protojit_arena::{Arena, BlockMut, DecodeError, FieldKind, SlotDescriptor, SlotIndex};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};

mod base64;
mod deep;
use base64::base64;
use deep::parse_deep;

use crate::{ListRef, MapKey, MapRef, MessageRef, Value};

/// How [`MessageRef::to_json_string`] and the serde [`Serialize`] impls write JSON. The
/// fields mirror `prost_reflect::SerializeOptions` (`emit_defaults` is its
/// `!skip_default_fields`); the default is the canonical proto3 JSON mapping.
///
/// # The mapping
///
/// It is protobuf's canonical one (<https://protobuf.dev/programming-guides/json/>)
/// as `prost_reflect::DynamicMessage`'s serde support writes it, including its conventions
/// where the spec leaves room: message fields in field-number order, then set extensions
/// (as `"[full.name]"`) in number order; a field without presence counts as set when it is
/// not the zero value bitwise, as protobuf's own reflection and protoc decide (so `-0.0`,
/// which was on the wire, is written as `-0.0`); floats as serde writes them (shortest
/// round-trip form); NaN and infinities as `"NaN"`, `"Infinity"`, `"-Infinity"`, inside
/// `FloatValue`/`DoubleValue` too; the default `Any` (empty type URL and value) as `{}`.
/// Map entries are written once per key (the last on the wire), sorted by key (numerically
/// for integer keys, bytewise for strings), so the output is deterministic. Unknown fields
/// are not written.
///
/// prost-reflect differs in four places, where protojit follows the mapping and protoc: it
/// skips `-0.0` in fields without presence (it compares with `==`), writes `null` for
/// non-finite wrapped floats, rejects the default `Any` ("unsupported type url ''"), and
/// writes map entries in hash order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JsonOptions {
    /// Use the field names from the `.proto` file instead of their lowerCamelCase JSON
    /// names (default `false`).
    pub use_proto_field_name: bool,
    /// Write enum values as numbers instead of names (default `false`; values without a
    /// declared name are always numbers).
    pub use_enum_numbers: bool,
    /// Also write fields that are unset or hold their default value, when the field has no
    /// presence (proto3 scalars, repeated fields, maps) (default `false`).
    pub emit_defaults: bool,
    /// Write `int64`, `uint64` and their variants as JSON strings, as the spec requires to
    /// keep their precision (default `true`).
    pub stringify_64_bit_integers: bool,
}

impl JsonOptions {
    /// The canonical proto3 JSON mapping (same as `Default`).
    pub const fn new() -> JsonOptions {
        JsonOptions {
            use_proto_field_name: false,
            use_enum_numbers: false,
            emit_defaults: false,
            stringify_64_bit_integers: true,
        }
    }

    /// Sets [`use_proto_field_name`](Self::use_proto_field_name).
    pub const fn use_proto_field_name(mut self, yes: bool) -> JsonOptions {
        self.use_proto_field_name = yes;
        self
    }

    /// Sets [`use_enum_numbers`](Self::use_enum_numbers).
    pub const fn use_enum_numbers(mut self, yes: bool) -> JsonOptions {
        self.use_enum_numbers = yes;
        self
    }

    /// Sets [`emit_defaults`](Self::emit_defaults).
    pub const fn emit_defaults(mut self, yes: bool) -> JsonOptions {
        self.emit_defaults = yes;
        self
    }

    /// Sets [`stringify_64_bit_integers`](Self::stringify_64_bit_integers).
    pub const fn stringify_64_bit_integers(mut self, yes: bool) -> JsonOptions {
        self.stringify_64_bit_integers = yes;
        self
    }

    /// The equivalent prost-reflect options (for interop and differential tests).
    pub fn to_prost_reflect(&self) -> prost_reflect::SerializeOptions {
        prost_reflect::SerializeOptions::new()
            .use_proto_field_name(self.use_proto_field_name)
            .use_enum_numbers(self.use_enum_numbers)
            .skip_default_fields(!self.emit_defaults)
            .stringify_64_bit_integers(self.stringify_64_bit_integers)
    }
}

impl Default for JsonOptions {
    fn default() -> Self {
        JsonOptions::new()
    }
}

/// A message that has no proto3 JSON form: a `Timestamp` or `Duration` out of range, a
/// non-finite number in a `google.protobuf.Value`, a `FieldMask` path that does not
/// survive lowerCamelCase, an `Any` whose type is not in the schema or whose payload does
/// not decode (the same cases prost-reflect rejects).
#[derive(Debug)]
pub struct JsonError(serde_json::Error);

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for JsonError {}

impl From<serde_json::Error> for JsonError {
    fn from(e: serde_json::Error) -> Self {
        JsonError(e)
    }
}

/// Why [`MessageRef::unpack_any`] could not unpack a `google.protobuf.Any`.
#[derive(Debug, thiserror::Error)]
pub enum AnyError {
    /// The message is not a `google.protobuf.Any`.
    #[error("`{0}` is not google.protobuf.Any")]
    NotAny(String),
    /// The type URL has no `/`.
    #[error("unsupported type url '{0}': missing at least one '/'")]
    TypeUrl(String),
    /// The type URL names a message type the schema does not have.
    #[error("message '{0}' not found")]
    UnknownType(String),
    /// The payload is not a valid encoding of its type.
    #[error("error decoding: {0}")]
    Decode(#[from] DecodeError),
}

/// How deep messages may nest in JSON output, counting the payloads of `Any`, which the
/// writer decodes itself. It is the largest depth limit a decoder accepts, so that every
/// tree that decodes also prints; the limit only ever stops `Any` payloads nested past it.
const MAX_DEPTH: u32 = protojit_arena::MAX_DEPTH_LIMIT;

impl<'a> MessageRef<'a> {
    /// The message as proto3 JSON (compact), as prost-reflect's serde support writes it
    /// for the same options but where it departs from the mapping; see [`JsonOptions`] for
    /// the conventions.
    pub fn to_json_string(&self, options: &JsonOptions) -> Result<String, JsonError> {
        let mut out = Vec::new();
        self.write_json(&mut out, options)?;
        Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
    }

    /// The message as indented proto3 JSON (two spaces, as `serde_json::to_string_pretty`).
    pub fn to_json_string_pretty(&self, options: &JsonOptions) -> Result<String, JsonError> {
        let mut out = Vec::new();
        self.write_json_pretty(&mut out, options)?;
        Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
    }

    /// Appends the message as compact proto3 JSON (what [`to_json_string`](Self::to_json_string)
    /// returns) to `out`: a buffer reused across messages costs no allocation per message.
    /// On an error `out` is left as it was.
    ///
    /// (Decoding needs the `protojit` facade, which this crate cannot depend on, so this
    /// example is not compiled here.)
    /// ```ignore
    /// # use protojit::{Arena, JsonOptions, Schema};
    /// let schema = Schema::from_proto_source("t.proto", "syntax = \"proto3\"; message Stop { string name = 1; }")?;
    /// let decoder = schema.decoder("Stop")?;
    /// let (arena, mut out) = (Arena::new(), Vec::new());
    /// for record in [&b"\x0a\x01x"[..], b"\x0a\x01y"] {
    ///     decoder.decode(record, &arena)?.write_json(&mut out, &JsonOptions::new())?;
    ///     out.push(b'\n');
    /// }
    /// assert_eq!(out, b"{\"name\":\"x\"}\n{\"name\":\"y\"}\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>, options: &JsonOptions) -> Result<(), JsonError> {
        self.write_json_with(out, options, serde_json::ser::CompactFormatter)
    }

    /// Appends the message as indented proto3 JSON (what
    /// [`to_json_string_pretty`](Self::to_json_string_pretty) returns) to `out`; on an error
    /// `out` is left as it was.
    pub fn write_json_pretty(&self, out: &mut Vec<u8>, options: &JsonOptions) -> Result<(), JsonError> {
        self.write_json_with(out, options, serde_json::ser::PrettyFormatter::new())
    }

    /// Appends the message to `out` through `formatter`; on an error `out` is left as it was.
    fn write_json_with(
        &self,
        out: &mut Vec<u8>,
        options: &JsonOptions,
        formatter: impl serde_json::ser::Formatter,
    ) -> Result<(), JsonError> {
        let start = out.len();
        self.json(options).serialize(&mut serde_json::Serializer::with_formatter(&mut *out, formatter)).map_err(|e| {
            out.truncate(start);
            JsonError::from(e)
        })
    }

    /// A serde-serializable view of the message with `options` (the `Serialize` impl of
    /// `MessageRef` itself uses the defaults): hand it to any serde serializer, for example
    /// `serde_json::to_writer(out, &msg.json(&options))`.
    pub fn json<'o>(&self, options: &'o JsonOptions) -> Json<'o, 'a> {
        Json { value: Value::Message(*self), string: false, options }
    }

    /// The message packed in this `google.protobuf.Any`, decoded (with the interpreter, at
    /// the default depth limit) into `arena` as the type its type URL names in this schema.
    pub fn unpack_any<'b>(&self, arena: &'b Arena) -> Result<MessageRef<'b>, AnyError>
    where
        'a: 'b,
    {
        self.unpack_any_within(arena, protojit_arena::DecodeOptions::default().max_depth())
    }

    fn unpack_any_within<'b>(&self, arena: &'b Arena, max_depth: u32) -> Result<MessageRef<'b>, AnyError>
    where
        'a: 'b,
    {
        if self.descriptor().full_name() != "google.protobuf.Any" {
            return Err(AnyError::NotAny(self.descriptor().full_name().to_owned()));
        }
        let url = self.get_by_number(1).map(|v| string_of(&v)).unwrap_or_default();
        let (_, name) = url.rsplit_once('/').ok_or_else(|| AnyError::TypeUrl(url.clone()))?;
        let layouts = self.layouts();
        let index = layouts
            .pool()
            .get_message_by_name(name)
            .and_then(|m| layouts.index_of(m.full_name()))
            .ok_or_else(|| AnyError::UnknownType(name.to_owned()))?;
        let bytes: &'a [u8] = match self.get_by_number(2) {
            Some(Value::Bytes(b)) => b,
            _ => &[],
        };
        let mut root = BlockMut::alloc(arena, layouts, index);
        let options = protojit_arena::DecodeOptions::default().with_max_depth(max_depth);
        let interp = protojit_arena::interp::Interp::new(bytes, &options);
        interp.message(&mut root, 0, bytes.len(), 0, None)?;
        Ok(MessageRef::new(root.into_ref()))
    }
}

impl Serialize for MessageRef<'_> {
    /// Proto3 JSON with the default [`JsonOptions`].
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        message(self, serializer, &Cx { options: &JsonOptions::new(), depth: 0 })
    }
}

impl<'a> Value<'a> {
    /// A serde-serializable view of this value in proto3 JSON (a message as an object, a
    /// list as an array, a map as an object, scalars as the mapping writes them). A bare
    /// `Value::Bytes` is written as base64 (it cannot tell a non-UTF-8 `string` apart).
    pub fn json<'o>(&self, options: &'o JsonOptions) -> Json<'o, 'a> {
        Json { value: *self, string: false, options }
    }

    /// This value as compact proto3 JSON text (see [`json`](Self::json)).
    pub fn to_json_string(&self, options: &JsonOptions) -> Result<String, JsonError> {
        Ok(serde_json::to_string(&self.json(options))?)
    }

    /// This value as a `serde_json::Value`. Objects follow `serde_json::Map`'s key order
    /// (sorted, unless serde_json's `preserve_order` feature is on), so use
    /// [`to_json_string`](Self::to_json_string) to keep field order.
    pub fn to_json(&self, options: &JsonOptions) -> Result<serde_json::Value, JsonError> {
        // Through text, so that a float is the number its shortest form names (a direct
        // conversion would widen an f32 to its exact binary value).
        Ok(parse_deep(&self.to_json_string(options)?)?)
    }
}

/// A value (or message) with the options to write it as proto3 JSON; see
/// [`MessageRef::json`] and [`Value::json`].
#[derive(Clone, Debug)]
pub struct Json<'o, 'a> {
    value: Value<'a>,
    /// The value belongs to a `string` field (non-UTF-8 bytes are written as text).
    string: bool,
    options: &'o JsonOptions,
}

impl Serialize for Json<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let cx = Cx { options: self.options, depth: 0 };
        match &self.value {
            // The root message is depth 0, as in `MessageRef`'s own `Serialize`.
            Value::Message(m) => message(m, serializer, &cx),
            v => value(v, self.string, serializer, &cx),
        }
    }
}

/// Serialization context: the options and how deep the current message is.
#[derive(Clone, Copy)]
struct Cx<'o> {
    options: &'o JsonOptions,
    depth: u32,
}

impl Cx<'_> {
    fn deeper<E: serde::ser::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!(
                "messages (with the payloads of Any) nest deeper than the JSON depth limit ({MAX_DEPTH})"
            )));
        }
        Ok(Cx { depth: self.depth + 1, ..self })
    }
}

/// A field's value with its context, as a serde value.
struct FieldValue<'c, 'a> {
    value: Value<'a>,
    string: bool,
    cx: Cx<'c>,
}

impl Serialize for FieldValue<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        value(&self.value, self.string, serializer, &self.cx)
    }
}

fn is_string_kind(kind: FieldKind) -> bool {
    kind == FieldKind::String
}

fn value<S: Serializer>(v: &Value<'_>, string: bool, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    match v {
        Value::Bool(b) => s.serialize_bool(*b),
        Value::I32(n) => s.serialize_i32(*n),
        Value::U32(n) => s.serialize_u32(*n),
        Value::I64(n) if cx.options.stringify_64_bit_integers => Quoted64::I(*n).serialize(s),
        Value::I64(n) => s.serialize_i64(*n),
        Value::U64(n) if cx.options.stringify_64_bit_integers => Quoted64::U(*n).serialize(s),
        Value::U64(n) => s.serialize_u64(*n),
        Value::F32(x) if x.is_finite() => s.serialize_f32(*x),
        Value::F32(x) => s.serialize_str(non_finite(f64::from(*x))),
        Value::F64(x) if x.is_finite() => s.serialize_f64(*x),
        Value::F64(x) => s.serialize_str(non_finite(*x)),
        Value::String(t) => s.serialize_str(t),
        Value::Bytes(b) if string => s.serialize_str(&String::from_utf8_lossy(b)),
        Value::Bytes(b) => s.serialize_str(&base64(b)),
        Value::Enum(e) => {
            if e.enum_type().full_name() == "google.protobuf.NullValue" {
                s.serialize_none()
            } else if cx.options.use_enum_numbers {
                s.serialize_i32(e.number)
            } else {
                match e.name() {
                    Some(v) => s.serialize_str(v),
                    None => s.serialize_i32(e.number),
                }
            }
        }
        Value::Message(m) => message(m, s, &cx.deeper()?),
        Value::List(l) => list(l, s, cx),
        Value::Map(m) => map(m, s, cx),
    }
}

fn non_finite(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

fn list<S: Serializer>(l: &ListRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    // Elements are read as typed slices and iterators (the kind matched once per list),
    // not as one `Value` each.
    let b = l.msg.block;
    let si = l.slot;
    let slot = l.msg.layout().slot(si);
    let mut seq = s.serialize_seq(Some(l.len()))?;
    let stringify = cx.options.stringify_64_bit_integers;
    match slot.kind {
        FieldKind::Bool => b.vec_slice::<bool>(si).iter().try_for_each(|v| seq.serialize_element(v))?,
        FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 => {
            b.vec_slice::<i32>(si).iter().try_for_each(|v| seq.serialize_element(v))?
        }
        FieldKind::Uint32 | FieldKind::Fixed32 => {
            b.vec_slice::<u32>(si).iter().try_for_each(|v| seq.serialize_element(v))?
        }
        FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 if stringify => {
            b.vec_slice::<i64>(si).iter().try_for_each(|&v| seq.serialize_element(&Quoted64::I(v)))?
        }
        FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => {
            b.vec_slice::<i64>(si).iter().try_for_each(|v| seq.serialize_element(v))?
        }
        FieldKind::Uint64 | FieldKind::Fixed64 if stringify => {
            b.vec_slice::<u64>(si).iter().try_for_each(|&v| seq.serialize_element(&Quoted64::U(v)))?
        }
        FieldKind::Uint64 | FieldKind::Fixed64 => {
            b.vec_slice::<u64>(si).iter().try_for_each(|v| seq.serialize_element(v))?
        }
        FieldKind::String | FieldKind::Bytes | FieldKind::Float | FieldKind::Double | FieldKind::Enum => {
            let string = is_string_kind(slot.kind);
            for v in l.iter() {
                seq.serialize_element(&FieldValue { value: v, string, cx: *cx })?;
            }
        }
        FieldKind::Message | FieldKind::Group => {
            let cx = cx.deeper()?;
            for m in b.vec_children(si) {
                seq.serialize_element(&MessageValue { msg: l.msg.with_block(m), cx })?;
            }
        }
    }
    seq.end()
}

/// A 64-bit integer as the JSON mapping writes it by default: a decimal string, formatted
/// on the stack (serde's `collect_str` goes through `fmt::Display` and a writer adapter).
enum Quoted64 {
    I(i64),
    U(u64),
}

impl Serialize for Quoted64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (neg, v) = match *self {
            Quoted64::I(v) => (v < 0, v.unsigned_abs()),
            Quoted64::U(v) => (false, v),
        };
        s.serialize_str(crate::text::decimal(&mut [0; 21], v, neg))
    }
}

/// A nested message with its context (its depth already counted).
struct MessageValue<'c, 'a> {
    msg: MessageRef<'a>,
    cx: Cx<'c>,
}

impl Serialize for MessageValue<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        message(&self.msg, serializer, &self.cx)
    }
}

/// A map key as JSON writes it: always a string.
fn key_string(k: &MapKey<'_>) -> String {
    match k {
        MapKey::Bool(v) => v.to_string(),
        MapKey::I32(v) => v.to_string(),
        MapKey::I64(v) => v.to_string(),
        MapKey::U32(v) => v.to_string(),
        MapKey::U64(v) => v.to_string(),
        MapKey::String(v) => (*v).to_owned(),
        MapKey::Bytes(v) => String::from_utf8_lossy(v).into_owned(),
    }
}

/// A map's entries, one per key (the last on the wire), sorted by key.
fn sorted_entries<'a>(m: &MapRef<'a>) -> Vec<(MapKey<'a>, Value<'a>)> {
    let mut entries: Vec<(MapKey<'a>, Value<'a>)> = m.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

fn map<S: Serializer>(m: &MapRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    let entry_layout = m.msg.layouts().get(protojit_arena::LayoutIndex::new(m.msg.layout().slot(m.slot).child));
    let string = entry_layout.slot_by_number(2).is_some_and(|si| is_string_kind(entry_layout.slot(si).kind));
    let entries = sorted_entries(m);
    let mut out = s.serialize_map(Some(entries.len()))?;
    for (k, v) in entries {
        out.serialize_entry(&key_string(&k), &FieldValue { value: v, string, cx: *cx })?;
    }
    out.end()
}

fn message<S: Serializer>(msg: &MessageRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    let name = msg.descriptor().full_name();
    match name.strip_prefix("google.protobuf.") {
        Some(wkt) if WELL_KNOWN.contains(&wkt) => well_known(wkt, msg, s, cx),
        _ => {
            let mut out = s.serialize_map(None)?;
            fields(msg, &mut out, cx)?;
            out.end()
        }
    }
}

/// The fields of a (non-well-known) message, as map entries: declared fields in number
/// order, then set extensions in number order.
fn fields<M: SerializeMap>(msg: &MessageRef<'_>, out: &mut M, cx: &Cx<'_>) -> Result<(), M::Error> {
    let layout = msg.layout();
    for extensions in [false, true] {
        for (i, slot) in layout.slots().iter().enumerate() {
            if slot.is_extension != extensions {
                continue;
            }
            let si = SlotIndex::new(i as u32);
            let desc = layout.slot_descriptor(si);
            // Default output follows the field's resolved presence (implicit: proto3 scalars,
            // editions fields with IMPLICIT, lists and maps), never the file's syntax.
            let write = msg.is_present(si)
                || (cx.options.emit_defaults && !extensions && !layout.slot_features(si).has_presence());
            if !write {
                continue;
            }
            let name = match desc {
                SlotDescriptor::Field(f) if cx.options.use_proto_field_name => f.name(),
                SlotDescriptor::Field(f) => f.json_name(),
                SlotDescriptor::Extension(e) => e.json_name(),
            };
            out.serialize_entry(
                name,
                &FieldValue { value: msg.value(si), string: is_string_kind(slot.kind), cx: *cx },
            )?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Well-known types

/// Serializes a well-known type (one of [`WELL_KNOWN`]) by its name under `google.protobuf.`.
fn well_known<S: Serializer>(name: &str, msg: &MessageRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    let field = |n: u32| msg.get_by_number(n);
    match name {
        "Any" => any(msg, s, cx),
        "Timestamp" => timestamp(msg, s),
        "Duration" => duration(msg, s),
        "Struct" => structure(msg, s, cx),
        "Value" => json_value(msg, s, cx),
        "ListValue" => list_value(msg, s, cx),
        "FieldMask" => field_mask(msg, s),
        // The number's own JSON form, so NaN and the infinities are strings as in plain fields.
        "FloatValue" => value(&Value::F32(field(1).and_then(|v| v.as_f32()).unwrap_or_default()), false, s, cx),
        "DoubleValue" => value(&Value::F64(field(1).and_then(|v| v.as_f64()).unwrap_or_default()), false, s, cx),
        "Int32Value" => s.serialize_i32(field(1).and_then(|v| v.as_i32()).unwrap_or_default()),
        "UInt32Value" => s.serialize_u32(field(1).and_then(|v| v.as_u32()).unwrap_or_default()),
        "BoolValue" => s.serialize_bool(field(1).and_then(|v| v.as_bool()).unwrap_or_default()),
        "Int64Value" | "UInt64Value" | "StringValue" | "BytesValue" => match field(1) {
            Some(v) => value(&v, name == "StringValue", s, cx),
            None => s.serialize_str(""),
        },
        _ => Err(S::Error::custom(format_args!("google.protobuf.{name} has no special JSON form"))),
    }
}

fn string_of(v: &Value<'_>) -> String {
    match v {
        Value::String(s) => (*s).to_owned(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

fn seconds_nanos(msg: &MessageRef<'_>) -> (i64, i32) {
    let seconds = msg.get_by_number(1).and_then(|v| v.as_i64()).unwrap_or_default();
    let nanos = msg.get_by_number(2).and_then(|v| v.as_i32()).unwrap_or_default();
    (seconds, nanos)
}

fn timestamp<S: Serializer>(msg: &MessageRef<'_>, s: S) -> Result<S::Ok, S::Error> {
    let (seconds, nanos) = seconds_nanos(msg);
    if !(-62_135_596_800..=253_402_300_799).contains(&seconds) {
        return Err(S::Error::custom("timestamp out of range"));
    }
    // Nanos count forward from the second; protobuf's writers refuse others, not normalise.
    if !(0..=999_999_999).contains(&nanos) {
        return Err(S::Error::custom("timestamp nanos out of range (0 to 999999999)"));
    }
    s.collect_str(&prost_types::Timestamp { seconds, nanos })
}

fn duration<S: Serializer>(msg: &MessageRef<'_>, s: S) -> Result<S::Ok, S::Error> {
    let (seconds, nanos) = seconds_nanos(msg);
    if seconds.unsigned_abs() > 315_576_000_000 || nanos.unsigned_abs() > 999_999_999 {
        return Err(S::Error::custom("duration out of range"));
    }
    // Nanos carry the seconds' sign (or either is 0); protobuf's writers refuse a mixed sign.
    if seconds.signum() * i64::from(nanos.signum()) < 0 {
        return Err(S::Error::custom("duration nanos and seconds have opposite signs"));
    }
    s.collect_str(&prost_types::Duration { seconds, nanos })
}

fn field_mask<S: Serializer>(msg: &MessageRef<'_>, s: S) -> Result<S::Ok, S::Error> {
    let mut out = String::new();
    if let Some(Value::List(paths)) = msg.get_by_number(1) {
        for (i, path) in paths.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            for (j, part) in string_of(&path).split('.').enumerate() {
                if j > 0 {
                    out.push('.');
                }
                camel_case(&mut out, part)
                    .map_err(|()| S::Error::custom("cannot roundtrip field name through camelcase"))?;
            }
        }
    }
    s.serialize_str(&out)
}

/// snake_case to lowerCamelCase, failing where the result would not map back.
fn camel_case(out: &mut String, part: &str) -> Result<(), ()> {
    let mut upper_next = false;
    for ch in part.chars() {
        if ch.is_ascii_uppercase() {
            return Err(());
        }
        if upper_next {
            let upper = ch.to_ascii_uppercase();
            if upper == ch {
                return Err(());
            }
            out.push(upper);
            upper_next = false;
        } else if ch == '_' {
            upper_next = true;
        } else {
            out.push(ch);
        }
    }
    Ok(())
}

/// `google.protobuf.Struct`: its `fields` map as an object, sorted by key.
fn structure<S: Serializer>(msg: &MessageRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    let entries = match msg.get_by_number(1) {
        Some(Value::Map(m)) => sorted_entries(&m),
        _ => Vec::new(),
    };
    let cx = cx.deeper()?;
    let mut out = s.serialize_map(Some(entries.len()))?;
    for (k, v) in entries {
        out.serialize_entry(&key_string(&k), &FieldValue { value: v, string: false, cx })?;
    }
    out.end()
}

/// `google.protobuf.ListValue`: its `values` as an array.
fn list_value<S: Serializer>(msg: &MessageRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    match msg.get_by_number(1) {
        Some(Value::List(l)) => list(&l, s, &cx.deeper()?),
        _ => s.serialize_seq(Some(0)).and_then(SerializeSeq::end),
    }
}

/// `google.protobuf.Value`: whichever member of its `kind` oneof is set; none is `null`.
fn json_value<S: Serializer>(msg: &MessageRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    let layout = msg.layout();
    let active = (0..layout.slots().len() as u32).map(SlotIndex::new).find(|&si| msg.block.is_set(si));
    let Some(si) = active else { return s.serialize_none() };
    match (layout.slot(si).number, msg.value(si)) {
        (2, Value::F64(x)) if !x.is_finite() => {
            Err(S::Error::custom("cannot serialize non-finite double in google.protobuf.Value"))
        }
        (2, Value::F64(x)) => s.serialize_f64(x),
        (3, v) => value(&v, true, s, cx),
        (4, Value::Bool(b)) => s.serialize_bool(b),
        (5, Value::Message(m)) => structure(&m, s, cx),
        (6, Value::Message(m)) => list_value(&m, s, cx),
        _ => s.serialize_none(),
    }
}

fn any<S: Serializer>(msg: &MessageRef<'_>, s: S, cx: &Cx<'_>) -> Result<S::Ok, S::Error> {
    // The default `Any` (no type URL, no value) is legal on the wire and names no type:
    // protoc writes it as an empty object.
    let empty = |n: u32| msg.get_by_number(n).is_none_or(|v| string_of(&v).is_empty());
    if empty(1) && empty(2) {
        return s.serialize_map(Some(0)).and_then(SerializeMap::end);
    }
    let cx = cx.deeper()?;
    let arena = Arena::new();
    let payload = msg.unpack_any_within(&arena, MAX_DEPTH - cx.depth).map_err(|e| S::Error::custom(e.to_string()))?;
    let url = msg.get_by_number(1).map(|v| string_of(&v)).unwrap_or_default();
    let payload_name = payload.descriptor().full_name();
    let is_wkt = payload_name.strip_prefix("google.protobuf.").is_some_and(|n| WELL_KNOWN.contains(&n));
    if is_wkt {
        let mut out = s.serialize_map(Some(2))?;
        out.serialize_entry("@type", &url)?;
        out.serialize_entry("value", &FieldValue { value: Value::Message(payload), string: false, cx })?;
        out.end()
    } else {
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("@type", &url)?;
        fields(&payload, &mut out, &cx)?;
        out.end()
    }
}

/// The well-known types with a special JSON form (names under `google.protobuf.`).
/// Not `Empty`: protobuf writes it as an ordinary `{}`, so an `Any` of it has no `"value"`.
const WELL_KNOWN: &[&str] = &[
    "Any",
    "Timestamp",
    "Duration",
    "Struct",
    "FloatValue",
    "DoubleValue",
    "Int32Value",
    "Int64Value",
    "UInt32Value",
    "UInt64Value",
    "BoolValue",
    "StringValue",
    "BytesValue",
    "FieldMask",
    "ListValue",
    "Value",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_rejects_what_does_not_round_trip() {
        let mut s = String::new();
        assert!(camel_case(&mut s, "foo_bar").is_ok());
        assert_eq!(s, "fooBar");
        assert!(camel_case(&mut String::new(), "fooBar").is_err());
        assert!(camel_case(&mut String::new(), "foo__bar").is_err());
        assert!(camel_case(&mut String::new(), "foo_3").is_err());
    }

    #[test]
    fn options_map_to_prost_reflect() {
        let o = JsonOptions::new().emit_defaults(true).use_enum_numbers(true);
        let p = format!("{:?}", o.to_prost_reflect());
        assert!(p.contains("skip_default_fields: false") && p.contains("use_enum_numbers: true"), "{p}");
    }
}
