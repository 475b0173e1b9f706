//! What the proto3 JSON seeds share: parse state, results, the scalar seed, the `Bodies` hook.
//!
//! Parse state ([`Ctx`]), what a seed did ([`Got`]), one scalar ([`Scalar`]) with the
//! number and base64 readers it needs, map keys ([`map_key`]), packed integer arrays read
//! in one loop ([`packed_integers_fast`]), and [`Bodies`], the hook through which
//! well-known types read the messages they hold.
//!
//! This is a leaf: `json.rs` (ordinary messages), `json_direct.rs` (the direct reader) and
//! `wkt.rs` (well-known types) build on it and none is named here. `wkt.rs` reads embedded messages (`Any`'s, `Struct`'s
//! values) through [`Bodies`], which `json.rs` implements with its message seed; wkt's entry
//! points are generic over it, so the call is resolved at compile time (no `dyn`, no cost).

use std::fmt;
use std::marker::PhantomData;

use prost_reflect::Kind;
use protojit_arena::wire::{zigzag_encode32, zigzag_encode64, LEN};
use protojit_arena::{LayoutIndex, Layouts};
use serde::de::{DeserializeSeed, Deserializer, Unexpected, Visitor};
use serde::Deserialize as _;
use serde_json::value::RawValue;

use super::tables::Tables;
use super::writer::Writer;
use super::{enum_by_name, enum_declares, int_wire, is_integer, FieldInfo, Message, ParseOptions, Wire};

/// The parse state threaded through every seed.
pub(super) struct Ctx<'o> {
    pub(super) w: Writer<'o>,
    /// The message types, with every field's resolved features.
    pub(super) layouts: &'o Layouts,
    /// Their precomputed tables.
    pub(super) tables: &'o Tables,
    pub(super) options: ParseOptions,
    /// Messages open around the current value (checked against `options.max_depth`).
    pub(super) depth: u32,
    /// The next message read is an `Any`'s value: its `@type` key is skipped.
    pub(super) any_fields: bool,
    /// The input's address range: values read raw are slices of it, so their offsets
    /// place errors serde_json leaves without a position.
    input: std::ops::Range<usize>,
    /// The offset just past the last value a seed rejected, when it lies in the input.
    pub(super) error_end: Option<usize>,
    /// The byte offset in the input of an error a value's own reader (a second
    /// deserializer over the value's text) found, which its position no longer says.
    pub(super) error_at: Option<usize>,
}

impl<'o> Ctx<'o> {
    pub(super) fn new(
        w: Writer<'o>,
        layouts: &'o Layouts,
        tables: &'o Tables,
        options: ParseOptions,
        input: &[u8],
    ) -> Ctx<'o> {
        let start = input.as_ptr() as usize;
        Ctx {
            w,
            layouts,
            tables,
            options,
            depth: 0,
            any_fields: false,
            input: start..start + input.len(),
            error_end: None,
            error_at: None,
        }
    }

    /// Message type `index` with its tables.
    #[inline]
    pub(super) fn message(&self, index: LayoutIndex) -> Message<'o> {
        Message::new(self.layouts, self.tables, index)
    }

    /// Where `text` (a slice of the input) starts in it.
    pub(super) fn offset_of(&self, text: &str) -> Option<usize> {
        let at = text.as_ptr() as usize;
        (self.input.contains(&at) && at + text.len() <= self.input.end).then(|| at - self.input.start)
    }

    /// Records that the value `text` was rejected (see [`Ctx::error_end`]).
    fn rejected(&mut self, text: &str) {
        let end = text.as_ptr() as usize + text.len();
        if self.input.contains(&(text.as_ptr() as usize)) && end <= self.input.end {
            self.error_end = Some(end - self.input.start);
        }
    }
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

/// Reads the fields of one message (no tag, no length) from its JSON form, well-known or
/// not. Declared here and implemented in `json.rs` so that `wkt.rs` can recurse into the
/// messages a well-known type holds without importing the file that dispatches to it.
pub(super) trait Bodies {
    fn body<'de, D: Deserializer<'de>>(ctx: &mut Ctx, layout: LayoutIndex, de: D) -> Result<Got, D::Error>;
}

/// [`Bodies::body`] as a seed, for `next_value_seed` and `next_element_seed`.
pub(super) struct BodySeed<'c, 'o, B> {
    ctx: &'c mut Ctx<'o>,
    layout: LayoutIndex,
    bodies: PhantomData<B>,
}

impl<'c, 'o, B: Bodies> BodySeed<'c, 'o, B> {
    pub(super) fn new(ctx: &'c mut Ctx<'o>, layout: LayoutIndex) -> Self {
        BodySeed { ctx, layout, bodies: PhantomData }
    }
}

impl<'de, B: Bodies> DeserializeSeed<'de> for BodySeed<'_, '_, B> {
    type Value = Got;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        B::body(self.ctx, self.layout, de)
    }
}

/// One scalar value (no tag): numbers, bools, strings, bytes, enums.
pub(super) struct Scalar<'c, 'o, 'k> {
    pub(super) ctx: &'c mut Ctx<'o>,
    pub(super) kind: &'k Kind,
    /// The field's enum is closed: numbers it does not declare are not its values.
    pub(super) closed: bool,
    /// The enum type's index in the layouts, or `NO_INDEX`.
    pub(super) enum_index: u32,
}

impl<'de> DeserializeSeed<'de> for Scalar<'_, '_, '_> {
    type Value = Got;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Got, D::Error> {
        if is_integer(self.kind) {
            // Integers are read from their text: serde_json reads a number past the 64-bit
            // range, or one with a fraction or exponent, as an f64, which rounds
            // (-9223372036854775809 would be int64's minimum).
            let raw = <&'de RawValue>::deserialize(de)?;
            return self.integer_text(raw.get());
        }
        de.deserialize_any(self)
    }
}

impl Scalar<'_, '_, '_> {
    pub(super) fn put(self, wire: Wire) -> Got {
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

    /// An integer field's value as JSON wrote it: a number (in any JSON form whose value
    /// is an integer, `1e2` and `1.0` too) or a string holding one; or null.
    #[inline]
    pub(super) fn integer_text<E: serde::de::Error>(self, raw: &str) -> Result<Got, E> {
        // The common case: a short decimal integer, bare or in a string, in the field's range.
        if let Some(v) = short_integer(raw) {
            if let Ok(wire) = int_wire(self.kind, v) {
                return Ok(self.put(wire));
            }
        }
        self.integer_text_general(raw)
    }

    fn integer_text_general<E: serde::de::Error>(self, raw: &str) -> Result<Got, E> {
        let Scalar { ctx, kind, closed, enum_index } = self;
        let result = Scalar { ctx: &mut *ctx, kind, closed, enum_index }.integer_value(raw);
        if result.is_err() {
            // serde_json places errors inside objects and arrays; a bare value at the root
            // (a wrapper type's) has only this to say where it was.
            ctx.rejected(raw);
        }
        result
    }

    fn integer_value<E: serde::de::Error>(self, raw: &str) -> Result<Got, E> {
        match raw.as_bytes().first() {
            Some(b'n') => self.visit_unit(),
            Some(b't' | b'f') => self.visit_bool(raw == "true"),
            Some(b'{') => Err(E::invalid_type(Unexpected::Map, &self)),
            Some(b'[') => Err(E::invalid_type(Unexpected::Seq, &self)),
            Some(b'"') => match raw.contains('\\') {
                false => self.visit_str(&raw[1..raw.len() - 1]),
                true => {
                    let unescaped = serde_json::from_str::<String>(raw).map_err(E::custom)?;
                    self.visit_str(&unescaped)
                }
            },
            _ => match exact_integer(raw) {
                Ok(v) => self.number(v),
                Err(e) => Err(e.to_error(raw, &self.name())),
            },
        }
    }

    fn number<E: serde::de::Error>(self, v: i128) -> Result<Got, E> {
        if let Kind::Enum(e) = self.kind {
            if self.closed && !enum_declares(self.ctx.layouts, e, self.enum_index, v) {
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
            Kind::Enum(e) => match enum_by_name(self.ctx.layouts, self.ctx.tables, e, self.enum_index, s.as_bytes()) {
                Some(v) => Ok(self.put(Wire::Varint(v as i64 as u64))),
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
            k if is_integer(k) => match exact_integer(s) {
                Ok(v) => self.number(v),
                Err(IntError::Syntax) => Err(E::custom(format!("{:?} is not an integer", truncated(s)))),
                Err(e) => Err(e.to_error(s, &self.name())),
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

/// An optional `-` and 1 to 19 decimal digits, bare or in double quotes (with nothing else
/// in them): the value.
#[inline]
fn short_integer(raw: &str) -> Option<i128> {
    let b = raw.as_bytes();
    let b = match b {
        [b'"', inner @ .., b'"'] => inner,
        _ => b,
    };
    short_decimal(b)
}

/// An optional `-` and 1 to 19 decimal digits (below 10^19, so read in a u64): the value.
#[inline]
fn short_decimal(b: &[u8]) -> Option<i128> {
    let (negative, digits) = match b {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    let v = i128::from(v);
    Some(if negative { -v } else { v })
}

/// Why a number is not a value of an integer field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IntError {
    /// Not a number at all.
    Syntax,
    /// A number with a fraction (`1.5`, `1e-3`).
    Fraction,
    /// An integer beyond every integer kind's range (a field's own range is `int_wire`'s).
    Range,
}

impl IntError {
    fn to_error<E: serde::de::Error>(self, text: &str, name: &str) -> E {
        let short = truncated(text);
        let text = match short.len() < text.len() {
            true => format!("{short}... ({} characters)", text.chars().count()),
            false => text.to_owned(),
        };
        match self {
            IntError::Syntax => E::custom(format!("{text} is not a number")),
            IntError::Fraction => E::custom(format!("{text} is not an integer, as {name} needs")),
            IntError::Range => E::custom(format!("{text} is out of range for {name}")),
        }
    }
}

/// The exact value of a decimal number in JSON's form (`-`, digits, an optional fraction
/// and exponent; leading zeros allowed, as in strings), when it is an integer: no rounding
/// through f64, so `-9223372036854775809` is below int64's range and `1.0000000000000001`
/// is not an integer.
#[inline]
fn exact_integer(text: &str) -> Result<i128, IntError> {
    // The common case, an optional `-` and at most 19 digits, read in a u64 at once.
    match short_decimal(text.as_bytes()) {
        Some(v) => Ok(v),
        None => exact_integer_general(text),
    }
}

/// [`exact_integer`] for any text: fractions, exponents, long digit strings.
fn exact_integer_general(text: &str) -> Result<i128, IntError> {
    let b = text.as_bytes();
    let (negative, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        _ => (false, 0),
    };
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = &b[int_start..i];
    let mut frac_digits: &[u8] = &[];
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = &b[start..i];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(IntError::Syntax);
    }
    // The exponent, saturated far past any integer kind's range.
    let mut exponent: i64 = 0;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let minus = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exponent = (exponent * 10 + i64::from(b[i] - b'0')).min(1 << 40);
            i += 1;
        }
        if i == start {
            return Err(IntError::Syntax);
        }
        if minus {
            exponent = -exponent;
        }
    }
    if i != b.len() {
        return Err(IntError::Syntax);
    }
    // The significant digits (integer and fraction together, leading and trailing zeros
    // dropped) times ten to the power `scale`.
    let digits = || int_digits.iter().chain(frac_digits);
    let Some(first) = digits().position(|&d| d != b'0') else { return Ok(0) };
    let total = int_digits.len() + frac_digits.len();
    let digit = |k: usize| if k < int_digits.len() { int_digits[k] } else { frac_digits[k - int_digits.len()] };
    let last = (first..total).rev().find(|&k| digit(k) != b'0').unwrap_or(first);
    let trailing = total - 1 - last;
    let scale = exponent - frac_digits.len() as i64 + trailing as i64;
    if scale < 0 {
        return Err(IntError::Fraction);
    }
    let significant = last + 1 - first;
    if significant as i64 + scale > 39 {
        return Err(IntError::Range);
    }
    let mut v: i128 = 0;
    for &d in digits().skip(first).take(significant) {
        v = v.checked_mul(10).and_then(|v| v.checked_add(i128::from(d - b'0'))).ok_or(IntError::Range)?;
    }
    for _ in 0..scale {
        v = v.checked_mul(10).ok_or(IntError::Range)?;
    }
    Ok(if negative { -v } else { v })
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
///
/// The body (padding stripped and checked here) goes through `base64-simd` in the standard
/// alphabet, then the URL-safe one; what both refuse (the two alphabets mixed, nonzero bits
/// after the last byte, or an error to report) is decoded a character at a time, which
/// accepts what the vectorised decoders accept with the same bytes out.
fn base64_decode(s: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let bytes = s.as_bytes();
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1] == b'=' {
        end -= 1;
    }
    let padding = bytes.len() - end;
    if padding > 2 || (padding > 0 && !bytes.len().is_multiple_of(4)) {
        return Err(format!("invalid base64 padding in {:?}", truncated(s)));
    }
    let body = &bytes[..end];
    if body.len() % 4 == 1 {
        return Err(format!("invalid base64 length in {:?}", truncated(s)));
    }
    let start = out.len();
    // Short bodies are left to the loop below: the call and the zeroing cost more there.
    if body.len() >= 32 {
        let len = base64_simd::STANDARD_NO_PAD.estimated_decoded_length(body.len());
        out.resize(start + len, 0);
        for engine in [&base64_simd::STANDARD_NO_PAD, &base64_simd::URL_SAFE_NO_PAD] {
            if let Ok(decoded) = engine.decode(body, base64_simd::Out::from_slice(&mut out[start..])) {
                let n = decoded.len();
                out.truncate(start + n);
                return Ok(());
            }
        }
        out.truncate(start);
    }
    base64_slow(body, out)
}

/// Each character's six bits in either alphabet (`+` and `-` are 62, `/` and `_` 63); 0xff
/// for what is not base64.
const BASE64_VALUES: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'-' as usize] = 62;
    t[b'/' as usize] = 63;
    t[b'_' as usize] = 63;
    t
};

/// The scalar decoder of a base64 body (no padding) of a valid length, four characters at a
/// time through a table, either alphabet in any mix; bits past the last whole byte ignored.
fn base64_slow(body: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bad = |from: usize| {
        let i = from + body[from..].iter().position(|&c| BASE64_VALUES[c as usize] == 0xff).unwrap_or(0);
        format!("invalid base64 character {:?} at offset {i}", body[i] as char)
    };
    out.reserve(body.len() / 4 * 3 + 2);
    let mut chunks = body.chunks_exact(4);
    let mut at = 0;
    for c in &mut chunks {
        let v = [c[0], c[1], c[2], c[3]].map(|c| BASE64_VALUES[c as usize]);
        if (v[0] | v[1] | v[2] | v[3]) & 0x80 != 0 {
            return Err(bad(at));
        }
        let n = u32::from(v[0]) << 18 | u32::from(v[1]) << 12 | u32::from(v[2]) << 6 | u32::from(v[3]);
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
        at += 4;
    }
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in chunks.remainder() {
        let v = BASE64_VALUES[c as usize];
        if v == 0xff {
            return Err(bad(at));
        }
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

/// How a packed integer kind writes an `i64` read from text, and its range.
#[derive(Clone, Copy)]
pub(super) enum Packed {
    Varint { lo: i64, hi: i64 },
    Zigzag32,
    Zigzag64,
    Fixed32 { lo: i64, hi: i64 },
    Fixed64 { lo: i64 },
}

impl Packed {
    pub(super) fn of(kind: &Kind) -> Option<Packed> {
        let (i32_lo, i32_hi) = (i64::from(i32::MIN), i64::from(i32::MAX));
        Some(match kind {
            Kind::Int32 => Packed::Varint { lo: i32_lo, hi: i32_hi },
            Kind::Uint32 => Packed::Varint { lo: 0, hi: i64::from(u32::MAX) },
            Kind::Int64 => Packed::Varint { lo: i64::MIN, hi: i64::MAX },
            Kind::Uint64 => Packed::Varint { lo: 0, hi: i64::MAX },
            Kind::Sint32 => Packed::Zigzag32,
            Kind::Sint64 => Packed::Zigzag64,
            Kind::Sfixed32 => Packed::Fixed32 { lo: i32_lo, hi: i32_hi },
            Kind::Fixed32 => Packed::Fixed32 { lo: 0, hi: i64::from(u32::MAX) },
            Kind::Sfixed64 => Packed::Fixed64 { lo: i64::MIN },
            Kind::Fixed64 => Packed::Fixed64 { lo: 0 },
            _ => return None,
        })
    }

    /// Writes `v` as `int_wire` would; `None` when it is out of range (an error, which the
    /// general reader then reports).
    #[inline]
    pub(super) fn write(self, w: &mut Writer, v: i64) -> Option<()> {
        match self {
            Packed::Varint { lo, hi } if v >= lo && v <= hi => w.varint(v as u64),
            Packed::Zigzag32 if i32::try_from(v).is_ok() => w.varint(u64::from(zigzag_encode32(v as i32))),
            Packed::Zigzag64 => w.varint(zigzag_encode64(v)),
            Packed::Fixed32 { lo, hi } if v >= lo && v <= hi => w.fixed32(v as u32),
            // Short integers (18 digits) are below both 64-bit maximums.
            Packed::Fixed64 { lo } if v >= lo => w.fixed64(v as u64),
            _ => return None,
        }
        Some(())
    }
}

/// The decimal digits of `b` from `i`: their value (wrapping past `u64`'s range, which
/// callers that take at most 19 digits never reach) and where they end.
#[inline]
pub(super) fn decimal_digits(b: &[u8], mut i: usize) -> (u64, usize) {
    let mut v: u64 = 0;
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (v, i)
}

/// `json.rs`'s `packed_integers` loop over `b` (and the direct reader's), which starts with the array: `None` when it is not an
/// array of short integers in the field's range (bare or quoted; bare ones as JSON writes
/// them, without leading zeros), to be read again by the general path; else what it wrote
/// and the array's length in `b`.
pub(super) fn packed_integers_fast(ctx: &mut Ctx, f: &FieldInfo<'_>, b: &[u8]) -> Option<(Got, usize)> {
    #[inline]
    fn ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
            i += 1;
        }
        i
    }
    let packed = Packed::of(f.kind())?;
    if b.first() != Some(&b'[') {
        return None;
    }
    let start = ctx.w.pos();
    ctx.w.tag(f.number, LEN);
    // A varint per two characters or so (a digit or two and a comma): the prefix's size.
    let mark = ctx.w.begin_len_sized(b.len() / 2);
    let mut i = ws(b, 1);
    if b.get(i) != Some(&b']') {
        loop {
            let quoted = b.get(i) == Some(&b'"');
            i += usize::from(quoted);
            let negative = b.get(i) == Some(&b'-');
            i += usize::from(negative);
            let digits = i;
            let v;
            (v, i) = decimal_digits(b, i);
            // At most 18 digits (checked next): below i64's maximum.
            let v = v as i64;
            if i == digits || i - digits > 18 || (!quoted && b[digits] == b'0' && i - digits > 1) {
                return None;
            }
            if quoted {
                if b.get(i) != Some(&b'"') {
                    return None;
                }
                i += 1;
            }
            packed.write(&mut ctx.w, if negative { -v } else { v })?;
            if b.get(i) == Some(&b',') {
                i += 1;
                if b.get(i) == Some(&b' ') {
                    i += 1;
                }
                i = ws(b, i);
                continue;
            }
            i = ws(b, i);
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b']') => break,
                _ => return None,
            }
        }
    }
    if ctx.w.len_since_sized(mark) == 0 {
        ctx.w.truncate(start);
    } else {
        ctx.w.end_len_sized(mark);
        ctx.w.field_done(f.number, start, true);
    }
    Some((Got::Value { default: false }, i + 1))
}

/// A map key (a JSON object key) written as the key type's value, without its tag; what is
/// wrong with it when it is not one.
pub(super) fn map_key(w: &mut Writer, kind: &Kind, key: &str) -> Result<(), String> {
    let wire = match kind {
        Kind::String => {
            w.bytes(key.as_bytes());
            return Ok(());
        }
        Kind::Bool => match key {
            "true" => Wire::Varint(1),
            "false" => Wire::Varint(0),
            _ => return Err(format!("map key {key:?} is not true or false")),
        },
        kind => {
            let v = parse_int_str(key).ok_or_else(|| format!("map key {key:?} is not an integer"))?;
            int_wire(kind, v)?
        }
    };
    wire.write(w);
    Ok(())
}

#[cfg(test)]
mod tests {
    use prost_reflect::Kind;

    use super::{base64_decode, base64_slow, int_wire, Packed, Writer};

    /// The packed loop's writer accepts and writes what `int_wire` does, kind by kind.
    #[test]
    fn packed_kinds_write_as_int_wire() {
        let kinds = [
            Kind::Int32,
            Kind::Uint32,
            Kind::Int64,
            Kind::Uint64,
            Kind::Sint32,
            Kind::Sint64,
            Kind::Sfixed32,
            Kind::Fixed32,
            Kind::Sfixed64,
            Kind::Fixed64,
        ];
        let e18 = 999_999_999_999_999_999i64;
        let values = [
            -e18,
            -(1 << 40),
            -2_147_483_649,
            -2_147_483_648,
            -1,
            0,
            1,
            127,
            128,
            2_147_483_647,
            2_147_483_648,
            4_294_967_295,
            4_294_967_296,
            1 << 40,
            e18,
        ];
        for kind in &kinds {
            let packed = Packed::of(kind).unwrap();
            for v in values {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let fast = packed.write(&mut Writer::new(&mut a), v);
                let slow = int_wire(kind, v.into()).ok().map(|w| w.write(&mut Writer::new(&mut b)));
                assert_eq!((fast, a), (slow, b), "{kind:?} {v}");
            }
        }
    }

    /// Standard and URL-safe base64 of `data`, unpadded.
    fn encode(data: &[u8]) -> (String, String) {
        const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for chunk in data.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for k in 0..=chunk.len() {
                s.push(STD[(n >> (18 - 6 * k) & 63) as usize] as char);
            }
        }
        let url = s.replace('+', "-").replace('/', "_");
        (s, url)
    }

    #[test]
    fn the_vectorised_path_gives_what_the_slow_one_gives() {
        for len in 0..200usize {
            let data: Vec<u8> = (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8).collect();
            let (std, url) = encode(&data);
            let padded = format!("{std}{}", "=".repeat((4 - std.len() % 4) % 4));
            // Both alphabets in one string, as a character-at-a-time decoder reads them.
            let mixed: String =
                std.chars().enumerate().map(|(i, c)| if i % 2 == 0 { c } else { url.as_bytes()[i] as char }).collect();
            for text in [&std, &url, &padded, &mixed] {
                let mut out = vec![0xee];
                base64_decode(text, &mut out).unwrap();
                assert_eq!(out[1..], data[..], "{text}");
            }
            // Nonzero bits after the last byte are ignored, as before.
            if std.len() % 4 >= 2 && len >= 24 {
                let mut odd = std.clone().into_bytes();
                let last = odd.last_mut().unwrap();
                *last = if *last == b'B' { b'C' } else { b'B' };
                let odd = String::from_utf8(odd).unwrap();
                let (mut fast, mut slow) = (Vec::new(), Vec::new());
                base64_decode(&odd, &mut fast).unwrap();
                base64_slow(odd.as_bytes(), &mut slow).unwrap();
                assert_eq!(fast, slow);
            }
        }
        let mut out = Vec::new();
        let long_bad = format!("{}$", "A".repeat(63));
        let e = base64_decode(&long_bad, &mut out).unwrap_err();
        assert!(e.contains("invalid base64 character '$' at offset 63"), "{e}");
    }
}
