//! The well-known types' own JSON forms: `Any` with `@type`, `Timestamp` and `Duration`
//! strings, `FieldMask` paths, `Struct`/`Value`/`ListValue` as plain JSON, wrappers as bare
//! scalars. `Empty` is an ordinary (empty) object.

use std::fmt;
use std::marker::PhantomData;

use prost_reflect::MessageDescriptor;
use protojit_arena::wire::{FIXED64, LEN, VARINT};
use protojit_arena::LayoutIndex;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize as _;
use serde_json::value::RawValue;

use super::json_value::{Bodies, BodySeed, Ctx, Got, Scalar};
use super::tables::Wkt;
use super::{any_type, Wire};

/// Whether a message's JSON form inside an `Any` is `{"@type": ..., "value": <form>}`.
fn wrapped_in_any(desc: &MessageDescriptor) -> bool {
    Wkt::of(desc).is_some() || desc.full_name() == "google.protobuf.Empty"
}

/// The fields of the well-known type at `layout` (no tag, no length) from its JSON form; the
/// messages it holds are read by `B` (the JSON message reader, which brought us here).
pub(super) fn deserialize<'de, B: Bodies, D: Deserializer<'de>>(
    ctx: &mut Ctx,
    layout: LayoutIndex,
    wkt: Wkt,
    de: D,
) -> Result<Got, D::Error> {
    match wkt {
        Wkt::Any => any::<B, D>(ctx, de),
        Wkt::Wrapper => {
            let desc = ctx.layouts.get(layout).descriptor();
            let field = desc.get_field(1).ok_or_else(|| D::Error::custom("wrapper type without field 1"))?;
            let kind = field.kind();
            let start = ctx.w.pos();
            ctx.w.tag(1, super::wire_type(&kind));
            let got = Scalar { ctx: &mut *ctx, kind: &kind, closed: false, enum_index: protojit_arena::NO_INDEX }
                .deserialize(de)?;
            match got {
                Got::Value { default: false } => Ok(got),
                Got::Value { default: true } => {
                    ctx.w.truncate(start);
                    Ok(got)
                }
                Got::Null | Got::Skip => {
                    ctx.w.truncate(start);
                    Ok(got)
                }
            }
        }
        _ => de.deserialize_any(WktVisitor::<B> { ctx, wkt, bodies: PhantomData }),
    }
}

struct WktVisitor<'c, 'o, B> {
    ctx: &'c mut Ctx<'o>,
    wkt: Wkt,
    bodies: PhantomData<B>,
}

impl<B> WktVisitor<'_, '_, B> {
    fn value_type(&self) -> Result<LayoutIndex, String> {
        self.ctx
            .layouts
            .index_of("google.protobuf.Value")
            .ok_or_else(|| "google.protobuf.Value is not in the schema".to_owned())
    }

    fn wrong<E: serde::de::Error>(&self, found: &str) -> E {
        E::custom(format!("expected {}, found {found}", expect(self.wkt)))
    }
}

fn expect(wkt: Wkt) -> &'static str {
    match wkt {
        Wkt::Timestamp => "an RFC 3339 timestamp string",
        Wkt::Duration => "a duration string such as \"1.5s\"",
        Wkt::FieldMask => "a string of comma-separated field paths",
        Wkt::Struct => "a JSON object",
        Wkt::ListValue => "a JSON array",
        _ => "a JSON value",
    }
}

impl<'de, B: Bodies> Visitor<'de> for WktVisitor<'_, '_, B> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(expect(self.wkt))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Got, E> {
        if self.wkt == Wkt::Value {
            self.ctx.w.tag(1, VARINT);
            self.ctx.w.varint(0);
            return Ok(Got::Value { default: false });
        }
        Ok(Got::Null)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Got, E> {
        if self.wkt != Wkt::Value {
            return Err(self.wrong(&v.to_string()));
        }
        self.ctx.w.tag(4, VARINT);
        self.ctx.w.varint(u64::from(v));
        Ok(Got::Value { default: false })
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Got, E> {
        self.visit_f64(v as f64)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Got, E> {
        self.visit_f64(v as f64)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Got, E> {
        if self.wkt != Wkt::Value {
            return Err(self.wrong(&format!("the number {v}")));
        }
        self.ctx.w.tag(2, FIXED64);
        self.ctx.w.fixed64(v.to_bits());
        Ok(Got::Value { default: false })
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Got, E> {
        let w = &mut self.ctx.w;
        match self.wkt {
            Wkt::Value => {
                w.tag(3, LEN);
                w.bytes(s.as_bytes());
            }
            Wkt::Timestamp => {
                let (seconds, nanos) = parse_timestamp(s).map_err(E::custom)?;
                seconds_nanos(w, seconds, nanos);
            }
            Wkt::Duration => {
                let (seconds, nanos) = parse_duration(s).map_err(E::custom)?;
                seconds_nanos(w, seconds, nanos);
            }
            Wkt::FieldMask => {
                for path in s.split(',').filter(|p| !p.is_empty()) {
                    w.tag(1, LEN);
                    let snake = field_mask_path(path).map_err(E::custom)?;
                    w.bytes(snake.as_bytes());
                }
            }
            _ => return Err(self.wrong(&format!("the string {s:?}"))),
        }
        Ok(Got::Value { default: false })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Got, A::Error> {
        let value = self.value_type().map_err(A::Error::custom)?;
        match self.wkt {
            Wkt::Struct => struct_entries::<B, A>(self.ctx, value, map),
            Wkt::Value => {
                self.ctx.w.tag(5, LEN);
                let mark = self.ctx.w.begin_len();
                let got = struct_entries::<B, A>(&mut *self.ctx, value, map)?;
                self.ctx.w.end_len(mark);
                Ok(got)
            }
            _ => Err(self.wrong("an object")),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Got, A::Error> {
        let value = self.value_type().map_err(A::Error::custom)?;
        match self.wkt {
            Wkt::ListValue => list_values::<B, A>(self.ctx, value, seq),
            Wkt::Value => {
                self.ctx.w.tag(6, LEN);
                let mark = self.ctx.w.begin_len();
                let got = list_values::<B, A>(&mut *self.ctx, value, seq)?;
                self.ctx.w.end_len(mark);
                Ok(got)
            }
            _ => Err(self.wrong("an array")),
        }
    }
}

fn seconds_nanos(w: &mut super::writer::Writer, seconds: i64, nanos: i32) {
    if seconds != 0 {
        w.tag(1, VARINT);
        Wire::Varint(seconds as u64).write(w);
    }
    if nanos != 0 {
        w.tag(2, VARINT);
        Wire::Varint(nanos as i64 as u64).write(w);
    }
}

/// `Struct.fields` entries (field 1), each `{1: key, 2: Value}`.
fn struct_entries<'de, B: Bodies, A: MapAccess<'de>>(
    ctx: &mut Ctx,
    value: LayoutIndex,
    mut map: A,
) -> Result<Got, A::Error> {
    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
        ctx.w.tag(1, LEN);
        let entry = ctx.w.begin_len();
        ctx.w.tag(1, LEN);
        ctx.w.bytes(key.as_bytes());
        ctx.w.tag(2, LEN);
        let mark = ctx.w.begin_len();
        map.next_value_seed(BodySeed::<B>::new(&mut *ctx, value))?;
        ctx.w.end_len(mark);
        ctx.w.end_len(entry);
    }
    Ok(Got::Value { default: false })
}

/// `ListValue.values` (field 1).
fn list_values<'de, B: Bodies, A: SeqAccess<'de>>(
    ctx: &mut Ctx,
    value: LayoutIndex,
    mut seq: A,
) -> Result<Got, A::Error> {
    loop {
        let at = ctx.w.pos();
        ctx.w.tag(1, LEN);
        let mark = ctx.w.begin_len();
        if seq.next_element_seed(BodySeed::<B>::new(&mut *ctx, value))?.is_none() {
            ctx.w.truncate(at);
            return Ok(Got::Value { default: false });
        }
        ctx.w.end_len(mark);
    }
}

/// `Any`: its `@type` may come after the fields it types, so the object's text (borrowed from
/// the input, not copied) is read twice: once for `@type`, then as the type it names. Read
/// into a `serde_json::Value` instead, a long list in an `Any` took some 50 bytes of heap per
/// byte of input.
fn any<'de, B: Bodies, D: Deserializer<'de>>(ctx: &mut Ctx, de: D) -> Result<Got, D::Error> {
    let Some(raw) = Option::<&'de RawValue>::deserialize(de)? else { return Ok(Got::Null) };
    let text = raw.get();
    let (url, others) =
        serde_json::Deserializer::from_str(text).deserialize_any(TypeUrl).map_err(|e| D::Error::custom(message(&e)))?;
    let url = match url {
        Some(url) => url,
        None if !others => return Ok(Got::Value { default: true }),
        None => return Err(D::Error::custom("Any has fields but no @type")),
    };
    let inner = any_type(ctx.layouts, &url).map_err(D::Error::custom)?;
    let layouts = ctx.layouts;
    ctx.w.tag(1, LEN);
    ctx.w.bytes(url.as_bytes());
    let start = ctx.w.pos();
    ctx.w.tag(2, LEN);
    let mark = ctx.w.begin_len();
    let mut body = serde_json::Deserializer::from_str(text);
    let result = if wrapped_in_any(layouts.get(inner).descriptor()) {
        body.deserialize_map(AnyValue::<B> { ctx: &mut *ctx, inner, url: &url, bodies: PhantomData })
    } else {
        // The fields are the object's own, beside its `@type`.
        ctx.any_fields = true;
        let got = B::body(&mut *ctx, inner, &mut body);
        ctx.any_fields = false;
        got
    };
    result.map_err(|e| D::Error::custom(format!("in Any of {url}: {}", message(&e))))?;
    if ctx.w.len_since(mark) == 0 {
        ctx.w.truncate(start);
    } else {
        ctx.w.end_len(mark);
    }
    Ok(Got::Value { default: false })
}

/// A serde_json error's message without its position (which is inside the `Any`'s text; the
/// error is reported at the `Any`'s end).
fn message(e: &serde_json::Error) -> String {
    let mut m = e.to_string();
    if e.line() != 0 {
        if let Some(i) = m.rfind(" at line ") {
            m.truncate(i);
        }
    }
    m
}

/// The first pass over an `Any`: its `@type`, and whether it has other keys.
struct TypeUrl;

impl<'de> Visitor<'de> for TypeUrl {
    type Value = (Option<String>, bool);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object for google.protobuf.Any")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut url, mut others) = (None, false);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key != "@type" {
                others = true;
                map.next_value::<IgnoredAny>()?;
            } else if url.is_some() {
                return Err(A::Error::custom("Any's @type is specified more than once"));
            } else {
                url = Some(map.next_value_seed(TypeUrlString)?);
            }
        }
        Ok((url, others))
    }
}

/// An `Any`'s `@type` value, which must be a string.
struct TypeUrlString;

impl<'de> DeserializeSeed<'de> for TypeUrlString {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<String, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TypeUrlString {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string (Any's @type)")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }
}

/// The second pass over an `Any` of a well-known type: `{"@type": ..., "value": <its form>}`.
struct AnyValue<'c, 'o, 'u, B> {
    ctx: &'c mut Ctx<'o>,
    inner: LayoutIndex,
    url: &'u str,
    bodies: PhantomData<B>,
}

impl<'de, B: Bodies> Visitor<'de> for AnyValue<'_, '_, '_, B> {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object for google.protobuf.Any")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got, A::Error> {
        let mut got = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "@type" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "value" if got.is_none() => {
                    got = Some(map.next_value_seed(BodySeed::<B>::new(&mut *self.ctx, self.inner))?);
                }
                "value" => return Err(A::Error::custom("Any's \"value\" is specified more than once")),
                k => return Err(A::Error::custom(format!("Any of {} has key {k:?} beside \"value\"", self.url))),
            }
        }
        match got {
            Some(got) => Ok(got),
            // protobuf's own writers (C++ since the JSON rewrite, Python) give an Empty inside
            // an Any no "value": `{"@type": ".../google.protobuf.Empty"}`. Its body is empty
            // either way.
            None if self.ctx.layouts.get(self.inner).descriptor().full_name() == "google.protobuf.Empty" => {
                Ok(Got::Value { default: true })
            }
            None => Err(A::Error::custom(format!("Any of {} has no \"value\"", self.url))),
        }
    }
}

/// Seconds of the proleptic Gregorian `year-month-day` since 1970-01-01.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

const MIN_TIMESTAMP: i64 = -62_135_596_800; // 0001-01-01T00:00:00Z
const MAX_TIMESTAMP: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z
const MAX_DURATION: i64 = 315_576_000_000;

fn digits(s: &[u8], at: usize, n: usize) -> Option<i64> {
    let d = s.get(at..at + n)?;
    d.iter().all(u8::is_ascii_digit).then(|| d.iter().fold(0i64, |a, &b| a * 10 + i64::from(b - b'0')))
}

/// Up to nine fraction digits after a `.` at `at` (none when there is no `.`): (nanos, end).
fn fraction(s: &[u8], at: usize) -> Result<(i32, usize), String> {
    if s.get(at) != Some(&b'.') {
        return Ok((0, at));
    }
    let mut end = at + 1;
    while end < s.len() && s[end].is_ascii_digit() {
        end += 1;
    }
    let n = end - at - 1;
    if n == 0 || n > 9 {
        return Err("fractional seconds need 1 to 9 digits".into());
    }
    let v = digits(s, at + 1, n).unwrap_or(0) * 10i64.pow((9 - n) as u32);
    Ok((v as i32, end))
}

/// An RFC 3339 timestamp (`1972-01-01T10:00:20.021Z`, or with a `+hh:mm` offset) as
/// (seconds, nanos) since the epoch, within 0001-01-01 and 9999-12-31.
pub(super) fn parse_timestamp(text: &str) -> Result<(i64, i32), String> {
    let bad = || format!("{text:?} is not an RFC 3339 timestamp (1972-01-01T10:00:20.021Z)");
    let s = text.as_bytes();
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return Err(bad());
    }
    let (y, mo, d) =
        (digits(s, 0, 4).ok_or_else(bad)?, digits(s, 5, 2).ok_or_else(bad)?, digits(s, 8, 2).ok_or_else(bad)?);
    let (h, mi, sec) =
        (digits(s, 11, 2).ok_or_else(bad)?, digits(s, 14, 2).ok_or_else(bad)?, digits(s, 17, 2).ok_or_else(bad)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if y < 1 || !(1..=12).contains(&mo) || d < 1 || d > month_days[(mo - 1) as usize] || h > 23 || mi > 59 || sec > 59 {
        return Err(bad());
    }
    let (nanos, at) = fraction(s, 19)?;
    let offset = match &s[at..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (digits(s, at + 1, 2).ok_or_else(bad)?, digits(s, at + 4, 2).ok_or_else(bad)?);
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return Err(bad()),
    };
    let seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    if !(MIN_TIMESTAMP..=MAX_TIMESTAMP).contains(&seconds) {
        return Err(format!("timestamp {text:?} is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999999Z"));
    }
    Ok((seconds, nanos))
}

/// A duration (`-1.5s`) as (seconds, nanos), both with the sign, within ±315,576,000,000 s.
pub(super) fn parse_duration(text: &str) -> Result<(i64, i32), String> {
    let bad = || format!("{text:?} is not a duration (such as \"1.5s\" or \"-0.000001s\")");
    let body = text.strip_suffix('s').ok_or_else(bad)?;
    let (negative, body) = match body.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, body),
    };
    let b = body.as_bytes();
    let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if int_len == 0 || int_len > 12 {
        return Err(bad());
    }
    let seconds = digits(b, 0, int_len).ok_or_else(bad)?;
    let (nanos, end) = fraction(b, int_len).map_err(|_| bad())?;
    if end != b.len() {
        return Err(bad());
    }
    if seconds > MAX_DURATION {
        return Err(format!("duration {text:?} is outside ±315576000000s"));
    }
    Ok(if negative { (-seconds, -nanos) } else { (seconds, nanos) })
}

/// A FieldMask path from JSON's lowerCamelCase to the field names' snake_case.
fn field_mask_path(path: &str) -> Result<String, String> {
    let mut out = String::with_capacity(path.len() + 4);
    for c in path.chars() {
        if c == '_' {
            return Err(format!("FieldMask path {path:?} holds '_' (JSON paths are lowerCamelCase)"));
        }
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_durations() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Ok((0, 0)));
        assert_eq!(parse_timestamp("1972-01-01T10:00:20.021Z"), Ok((63108020, 21_000_000)));
        assert_eq!(parse_timestamp("1970-01-01T08:00:00+08:00"), Ok((0, 0)));
        assert_eq!(parse_timestamp("0001-01-01T00:00:00Z"), Ok((MIN_TIMESTAMP, 0)));
        assert_eq!(parse_timestamp("9999-12-31T23:59:59.999999999Z"), Ok((MAX_TIMESTAMP, 999_999_999)));
        for bad in ["1970-01-01t00:00:00Z", "1970-01-01T00:00:00z", "1970-01-01T00:00:00", "0000-01-01T00:00:00Z"] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("-0.5s"), Ok((0, -500_000_000)));
        assert_eq!(parse_duration("315576000000.999999999s"), Ok((315576000000, 999_999_999)));
        for bad in ["1", "1.s", "315576000001s", "1.0000000001s", "+1s", " 1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
