//! The common shapes of proto3 JSON read straight from the bytes, without serde's visitors.
//!
//! [`message`] reads ordinary messages (objects keyed by JSON or proto field names), lists,
//! maps, and every scalar form; the value of a well-known type with a JSON form of its own
//! (`Timestamp`, `Struct`, `Any`, ...) it finds and hands to serde_json alone. It gives up
//! ([`Unsupported`]) on unknown keys (unless ignored), lone surrogates, nesting near
//! serde_json's limit, and anything that is not valid JSON or does not fit the schema;
//! `json_to_binary` then reads the whole input again through serde_json, which takes every
//! shape and reports errors with their line and column. The two readers give the same
//! bytes for every input this one accepts (tested differentially in `parse/tests/json.rs`
//! and `tests/parse_roundtrip.rs`), and errors always come from serde_json.
//!
//! What it does not repeat: each value's meaning. Values are handed to the same
//! [`Scalar`] methods and [`map_key`] the serde seeds call (integer text, strings, bytes,
//! enums, floats, map keys), and fields are written, dropped as defaults and checked for
//! duplicates and oneof conflicts exactly as `json.rs` does; only the tokenizing and the
//! walk are its own. It names `json.rs` only in docs: the message seed it hands
//! well-known types to comes in as `B: Bodies`, as for `wkt.rs`. On
//! small messages (the OSM header block, 351 bytes) serde's visitor layers were most of
//! the parse.

use std::marker::PhantomData;

use prost_reflect::Kind;
use protojit_arena::wire::{EGROUP, LEN};
use protojit_arena::LayoutIndex;
use serde::de::Visitor as _;

use super::json_value::{decimal_digits, map_key, packed_integers_fast, Bodies, Ctx, Got, Scalar};
use super::{int_wire, is_integer, tag_wire_type, wire_type, FieldInfo, Seen};

/// The input is not in the shapes [`message`] reads, or is not valid: read it again
/// through serde_json. Also the error type handed to [`Scalar`]'s methods, so that their
/// errors cost nothing but the message they format.
#[derive(Debug)]
pub(super) struct Unsupported;

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not read by the direct JSON reader")
    }
}

impl std::error::Error for Unsupported {}

impl serde::de::Error for Unsupported {
    #[inline]
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Unsupported
    }
}

type Read<T> = Result<T, Unsupported>;

/// The most arrays and objects this reader has open at once (those of a well-known type's
/// value included); deeper input is serde_json's, whose own limit (128 nested arrays and
/// objects) must decide it as it decides it for every other input.
const NESTING: u32 = 120;

/// Reads `json` (the whole input: one JSON object of message type `root`, with nothing but
/// whitespace around it) into `ctx`'s writer; the values of well-known types through `B`
/// (`json.rs`'s message seed, over a serde_json deserializer of the value alone). UTF-8 is
/// checked where it can be wrong: in strings that hold bytes past ASCII, and in values
/// handed to serde_json; anywhere else such a byte is not JSON.
pub(super) fn message<B: Bodies>(ctx: &mut Ctx, root: LayoutIndex, json: &[u8]) -> Read<()> {
    let mut r = Reader::<B> { b: json, i: 0, nesting: 0, scratch: String::new(), bodies: PhantomData };
    r.ws();
    match r.body(ctx, root)? {
        Got::Value { .. } => {}
        // A root `null` is an error, which serde_json's pass reports.
        _ => return Err(Unsupported),
    }
    r.ws();
    match r.i == r.b.len() {
        true => Ok(()),
        false => Err(Unsupported),
    }
}

/// A string token: where its text is.
enum Str {
    /// In the input, without escapes: these bytes (valid UTF-8).
    Input(usize, usize),
    /// Unescaped into the reader's scratch buffer.
    Scratch,
}

struct Reader<'j, B> {
    b: &'j [u8],
    /// The next byte to read.
    i: usize,
    /// Arrays and objects open around `i`.
    nesting: u32,
    /// Strings with escapes, unescaped.
    scratch: String,
    bodies: PhantomData<B>,
}

/// Eight copies of `b`.
const fn splat(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

/// In each byte of the result, the top bit set where `w`'s byte is zero; exact for the
/// lowest such byte (bytes above a zero may be flagged too), which is all a search needs.
#[inline]
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(splat(1)) & !w & splat(0x80)
}

impl<'j, B: Bodies> Reader<'j, B> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// Consumes the `[` or `{` at `self.i`, counting it against [`NESTING`].
    #[inline]
    fn open(&mut self) -> Read<()> {
        self.nesting += 1;
        self.i += 1;
        match self.nesting <= NESTING {
            true => Ok(()),
            false => Err(Unsupported),
        }
    }

    /// Past an object's `{`: consumes whitespace, and the `}` of an empty object (`true`).
    #[inline]
    fn empty_object(&mut self) -> bool {
        self.ws();
        let empty = self.peek() == Some(b'}');
        self.i += usize::from(empty);
        empty
    }

    /// An object's key: a string, which must come next.
    #[inline(always)]
    fn key(&mut self) -> Read<Str> {
        match self.peek() {
            Some(b'"') => self.string(),
            _ => Err(Unsupported),
        }
    }

    /// At an object: consumes its `{` (`true`), or a `null` in its place (`false`).
    #[inline]
    fn object_or_null(&mut self) -> Read<bool> {
        match self.peek() {
            Some(b'{') => self.open().map(|()| true),
            Some(b'n') => self.literal(b"null").map(|()| false),
            _ => Err(Unsupported),
        }
    }

    /// Past one JSON value at `self.i`, which serde_json reads next (so it is not checked
    /// here): the most arrays and objects open at once inside it.
    fn skip_value(&mut self) -> Read<u32> {
        let (mut depth, mut deepest) = (0u32, 0u32);
        loop {
            match self.peek().ok_or(Unsupported)? {
                b'"' => self.string_extent()?,
                b'{' | b'[' => {
                    depth = depth.saturating_add(1);
                    deepest = deepest.max(depth);
                    self.i += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1).ok_or(Unsupported)?;
                    self.i += 1;
                }
                // A bare number or literal: up to what ends it.
                _ if depth == 0 => {
                    while let Some(c) = self.peek() {
                        if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                            break;
                        }
                        self.i += 1;
                    }
                }
                _ => self.i += 1,
            }
            if depth == 0 {
                return Ok(deepest);
            }
        }
    }

    /// Past the string at `self.i` (its opening quote), escapes passed over, not decoded.
    fn string_extent(&mut self) -> Read<()> {
        self.i += 1;
        loop {
            let stop = self.string_stop::<false>()?;
            match self.b[stop] {
                b'"' => {
                    self.i = stop + 1;
                    return Ok(());
                }
                b'\\' => self.i = stop + 2,
                _ => return Err(Unsupported),
            }
        }
    }

    /// The value of a key that names no field, under `ignore_unknown_fields`: found here,
    /// checked by serde_json as its pass checks it (`IgnoredAny`, at any depth).
    fn ignored(&mut self) -> Read<()> {
        let start = self.i;
        self.skip_value()?;
        match serde_json::from_str::<serde::de::IgnoredAny>(self.str(start, self.i)?) {
            Ok(_) => Ok(()),
            Err(_) => Err(Unsupported),
        }
    }

    /// A well-known type with a JSON form of its own (`Timestamp`, `Struct`, `Any`, the
    /// wrappers, ...): its value is found here and read by serde_json, through the same
    /// seed as in serde_json's pass over the whole input.
    fn well_known(&mut self, ctx: &mut Ctx, layout: LayoutIndex) -> Read<Got> {
        let start = self.i;
        if self.nesting.saturating_add(self.skip_value()?) > NESTING {
            return Err(Unsupported);
        }
        let mut de = serde_json::Deserializer::from_str(self.str(start, self.i)?);
        let got = B::body(ctx, layout, &mut de).map_err(|_| Unsupported)?;
        de.end().map_err(|_| Unsupported)?;
        Ok(got)
    }

    /// Consumes `c` (after whitespace).
    #[inline]
    fn expect(&mut self, c: u8) -> Read<()> {
        self.ws();
        match self.peek() == Some(c) {
            true => {
                self.i += 1;
                Ok(())
            }
            false => Err(Unsupported),
        }
    }

    /// Consumes the literal `word` (`null`, `true`, `false`).
    #[inline]
    fn literal(&mut self, word: &[u8]) -> Read<()> {
        match self.b[self.i..].starts_with(word) {
            true => {
                self.i += word.len();
                Ok(())
            }
            false => Err(Unsupported),
        }
    }

    /// After an element of an object or array: `true` at a `,` (consumed, and whitespace
    /// after it), `false` at `close` (consumed).
    #[inline]
    fn more(&mut self, close: u8) -> Read<bool> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                self.ws();
                Ok(true)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => Err(Unsupported),
        }
    }

    /// The end of the string text from `self.i`: the offset of the first `"`, `\` or
    /// control character from there (and, when `ASCII`, of the first byte past ASCII),
    /// eight bytes at a time.
    #[inline]
    fn string_stop<const ASCII: bool>(&self) -> Read<usize> {
        let b = self.b;
        let mut i = self.i;
        while let Some(chunk) = b.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            let control = w.wrapping_sub(splat(0x20)) & !w & splat(0x80);
            let high = if ASCII { w & splat(0x80) } else { 0 };
            let hits = zero_bytes(w ^ splat(b'"')) | zero_bytes(w ^ splat(b'\\')) | control | high;
            if hits != 0 {
                return Ok(i + hits.trailing_zeros() as usize / 8);
            }
            i += 8;
        }
        while i < b.len() {
            if matches!(b[i], b'"' | b'\\' | 0..0x20) || (ASCII && b[i] >= 0x80) {
                return Ok(i);
            }
            i += 1;
        }
        Err(Unsupported)
    }

    /// A string token at `self.i` (its opening quote), escapes decoded.
    #[inline]
    fn string(&mut self) -> Read<Str> {
        let start = self.i + 1;
        self.i = start;
        let stop = self.string_stop::<true>()?;
        if self.b[stop] == b'"' {
            self.i = stop + 1;
            return Ok(Str::Input(start, stop));
        }
        self.string_slow(start)
    }

    /// A string whose text from `start` holds an escape or a byte past ASCII (or is not a
    /// string): the text between escapes checked as UTF-8, escapes decoded into the
    /// scratch buffer.
    #[cold]
    fn string_slow(&mut self, start: usize) -> Read<Str> {
        self.i = start;
        let mut escaped = false;
        loop {
            let from = self.i;
            let stop = self.string_stop::<false>()?;
            let text = self.str(from, stop)?;
            match self.b[stop] {
                b'"' if !escaped => {
                    self.i = stop + 1;
                    return Ok(Str::Input(start, stop));
                }
                b'"' => {
                    self.scratch.push_str(text);
                    self.i = stop + 1;
                    return Ok(Str::Scratch);
                }
                b'\\' => {
                    if !escaped {
                        self.scratch.clear();
                        escaped = true;
                    }
                    self.scratch.push_str(text);
                    self.i = stop;
                    self.escape()?;
                }
                _ => return Err(Unsupported),
            }
        }
    }

    /// The input's bytes `start..end` as text, when they are UTF-8.
    #[inline]
    fn str(&self, start: usize, end: usize) -> Read<&'j str> {
        std::str::from_utf8(&self.b[start..end]).map_err(|_| Unsupported)
    }

    /// One escape at `self.i` (its backslash), appended to the scratch buffer.
    fn escape(&mut self) -> Read<()> {
        let c = *self.b.get(self.i + 1).ok_or(Unsupported)?;
        self.i += 2;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                let code = match high {
                    0xd800..=0xdbff => {
                        // A surrogate pair; a lone surrogate is left to serde_json.
                        if !self.b[self.i..].starts_with(b"\\u") {
                            return Err(Unsupported);
                        }
                        self.i += 2;
                        let low = self.hex4()?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return Err(Unsupported);
                        }
                        0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)
                    }
                    0xdc00..=0xdfff => return Err(Unsupported),
                    c => c,
                };
                char::from_u32(code).ok_or(Unsupported)?
            }
            _ => return Err(Unsupported),
        };
        self.scratch.push(ch);
        Ok(())
    }

    fn hex4(&mut self) -> Read<u32> {
        let digits = self.b.get(self.i..self.i + 4).ok_or(Unsupported)?;
        let mut v = 0;
        for &d in digits {
            v = v << 4 | (d as char).to_digit(16).ok_or(Unsupported)?;
        }
        self.i += 4;
        Ok(v)
    }

    /// The text of string token `s`.
    #[inline]
    fn text(&self, s: Str) -> Read<&str> {
        match s {
            Str::Input(start, end) => self.str(start, end),
            Str::Scratch => Ok(&self.scratch),
        }
    }

    /// The bytes of string token `s` (UTF-8, as [`Reader::string`] checked them).
    #[inline]
    fn bytes(&self, s: Str) -> &[u8] {
        match s {
            Str::Input(start, end) => &self.b[start..end],
            Str::Scratch => self.scratch.as_bytes(),
        }
    }

    /// A JSON number token at `self.i`, as JSON's grammar has it: its end, and whether it
    /// is an integer (no fraction, no exponent).
    fn number(&mut self) -> Read<(usize, bool)> {
        let b = self.b;
        let start = self.i;
        let mut i = start + usize::from(b.get(start) == Some(&b'-'));
        let digits = |mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(i + 1),
            _ => return Err(Unsupported),
        }
        let mut integer = true;
        if b.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return Err(Unsupported);
            }
            (i, integer) = (end, false);
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return Err(Unsupported);
            }
            (i, integer) = (end, false);
        }
        self.i = i;
        Ok((start, integer))
    }

    /// A decimal integer at `self.i` of 1 to 19 digits after an optional `-`, bare (as
    /// JSON writes numbers: no leading zero, no fraction or exponent after it) or alone in
    /// a string (leading zeros allowed, as `Scalar` allows them there): its value, read in
    /// the same pass that finds its end. `None` (nothing consumed that matters: the caller
    /// starts again) for anything else.
    #[inline]
    fn short_integer(&mut self) -> Option<i128> {
        let b = self.b;
        let mut i = self.i;
        let quoted = b.get(i) == Some(&b'"');
        i += usize::from(quoted);
        let negative = b.get(i) == Some(&b'-');
        i += usize::from(negative);
        let first = i;
        let v;
        (v, i) = decimal_digits(b, i);
        let digits = i - first;
        if digits == 0 || digits > 19 {
            return None;
        }
        match quoted {
            true if b.get(i) == Some(&b'"') => i += 1,
            false if b[first] != b'0' || digits == 1 => {
                if let Some(b'.' | b'e' | b'E') = b.get(i) {
                    return None;
                }
            }
            _ => return None,
        }
        self.i = i;
        let v = i128::from(v);
        Some(if negative { -v } else { v })
    }

    /// The fields of one message (no tag, no length): an object, or `null`.
    fn body(&mut self, ctx: &mut Ctx, layout: LayoutIndex) -> Read<Got> {
        let message = ctx.message(layout);
        if message.table.wkt.is_some() {
            return self.well_known(ctx, layout);
        }
        if ctx.depth > ctx.options.max_depth {
            return Err(Unsupported);
        }
        if !self.object_or_null()? {
            return Ok(Got::Null);
        }
        ctx.depth += 1;
        let frame = ctx.w.begin_message();
        let mut seen = Seen::new();
        if !self.empty_object() {
            loop {
                let key = self.key()?;
                let slot = message.table.json_slot(self.bytes(key));
                self.expect(b':')?;
                self.ws();
                match slot {
                    Some(slot) => {
                        let f = message.field(slot);
                        let got = self.field(ctx, &f)?;
                        seen.set(&f, got != Got::Null).map_err(|_| Unsupported)?;
                    }
                    None if ctx.options.ignore_unknown_fields => self.ignored()?,
                    None => return Err(Unsupported),
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        ctx.w.end_message(frame);
        ctx.depth -= 1;
        self.nesting -= 1;
        Ok(Got::Value { default: false })
    }

    /// One field's value: singular, list or map (as `json.rs`'s `FieldSeed`).
    fn field(&mut self, ctx: &mut Ctx, f: &FieldInfo<'_>) -> Read<Got> {
        if f.map {
            return self.map(ctx, f);
        }
        if f.list {
            return self.list(ctx, f);
        }
        let start = ctx.w.pos();
        let got = self.value(ctx, f)?;
        match got {
            Got::Value { default } if !default || f.presence || matches!(f.kind, Kind::Message(_)) => {
                ctx.w.field_done(f.number, start, false)
            }
            _ => ctx.w.truncate(start),
        }
        Ok(got)
    }

    /// One value of field `f` with its tag (a message with its length or group end).
    fn value(&mut self, ctx: &mut Ctx, f: &FieldInfo<'_>) -> Read<Got> {
        ctx.w.tag(f.number, tag_wire_type(f));
        match (&f.kind, f.child) {
            (Kind::Message(_), Some(layout)) if f.group => {
                let got = self.body(ctx, layout)?;
                ctx.w.tag(f.number, EGROUP);
                Ok(got)
            }
            (Kind::Message(_), Some(layout)) => {
                let mark = ctx.w.begin_len();
                let got = self.body(ctx, layout)?;
                ctx.w.end_len(mark);
                Ok(got)
            }
            (Kind::Message(_), None) => Err(Unsupported),
            (kind, _) => self.scalar(ctx, kind, f.closed_enum, f.enum_index),
        }
    }

    /// One scalar value (no tag), handed to [`Scalar`] as serde_json would hand it.
    fn scalar(&mut self, ctx: &mut Ctx, kind: &Kind, closed: bool, enum_index: u32) -> Read<Got> {
        let scalar = Scalar { ctx, kind, closed, enum_index };
        let start = self.i;
        if is_integer(kind) {
            // The common case in one pass: a short decimal, bare or quoted, in range.
            if let Some(v) = self.short_integer() {
                if let Ok(wire) = int_wire(kind, v) {
                    return Ok(scalar.put(wire));
                }
                self.i = start;
            }
            // The value's text, as `Scalar` reads integers (a raw value in the serde pass).
            match self.peek() {
                Some(b'"') => match self.string()? {
                    Str::Input(..) => {}
                    Str::Scratch => return Err(Unsupported),
                },
                Some(b'-' | b'0'..=b'9') => _ = self.number()?,
                Some(b'n') => self.literal(b"null")?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                _ => return Err(Unsupported),
            }
            return scalar.integer_text::<Unsupported>(self.str(start, self.i)?);
        }
        match self.peek() {
            // A string field's text as it is (what `visit_str` does with it).
            Some(b'"') if matches!(kind, Kind::String) => {
                let s = self.string()?;
                let text = self.bytes(s);
                scalar.ctx.w.bytes(text);
                Ok(Got::Value { default: text.is_empty() })
            }
            Some(b'"') => {
                let s = self.string()?;
                scalar.visit_str(self.text(s)?)
            }
            Some(b'-' | b'0'..=b'9') => {
                let (start, integer) = self.number()?;
                let text = self.str(start, self.i)?;
                match kind {
                    // A number past f64's range is an error to serde_json, not infinity.
                    Kind::Float | Kind::Double => match text.parse::<f64>() {
                        Ok(v) if v.is_finite() => scalar.visit_f64(v),
                        _ => Err(Unsupported),
                    },
                    // An enum's number; `-0` and long numbers are f64s to serde_json.
                    _ if integer && text.len() <= 18 && text != "-0" => {
                        scalar.visit_i64(text.parse().map_err(|_| Unsupported)?)
                    }
                    _ => Err(Unsupported),
                }
            }
            Some(b'n') => {
                self.literal(b"null")?;
                scalar.visit_unit()
            }
            Some(b't') => {
                self.literal(b"true")?;
                scalar.visit_bool(true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                scalar.visit_bool(false)
            }
            _ => Err(Unsupported),
        }
    }

    /// A repeated field's array, or `null` (as `json.rs`'s `ListVisitor`).
    fn list(&mut self, ctx: &mut Ctx, f: &FieldInfo<'_>) -> Read<Got> {
        match self.peek() {
            Some(b'[') => {}
            Some(b'n') => {
                self.literal(b"null")?;
                return Ok(Got::Null);
            }
            _ => return Err(Unsupported),
        }
        if f.packed && is_integer(f.kind()) {
            // Short integers in a tight loop; anything else (long numbers, exponents, ...)
            // value by value below, as serde_json's pass does.
            let at = ctx.w.pos();
            if let Some((got, read)) = packed_integers_fast(ctx, f, &self.b[self.i..]) {
                self.i += read;
                return Ok(got);
            }
            ctx.w.truncate(at);
        }
        self.open()?;
        self.ws();
        let empty = self.peek() == Some(b']');
        if empty {
            self.i += 1;
        }
        let start = ctx.w.pos();
        if f.packed {
            ctx.w.tag(f.number, LEN);
            let mark = ctx.w.begin_len();
            if !empty {
                loop {
                    if self.scalar(ctx, f.kind(), f.closed_enum, f.enum_index)? == Got::Null {
                        return Err(Unsupported);
                    }
                    if !self.more(b']')? {
                        break;
                    }
                }
            }
            ctx.w.end_packed(f.number, start, mark);
        } else {
            if !empty {
                loop {
                    let at = ctx.w.pos();
                    match self.value(ctx, f)? {
                        Got::Null => return Err(Unsupported),
                        Got::Skip => ctx.w.truncate(at),
                        Got::Value { .. } => {}
                    }
                    if !self.more(b']')? {
                        break;
                    }
                }
            }
            ctx.w.field_done(f.number, start, false);
        }
        self.nesting -= 1;
        Ok(Got::Value { default: false })
    }

    /// A map field's object, or `null` (as `json.rs`'s `MapVisitor`).
    fn map(&mut self, ctx: &mut Ctx, f: &FieldInfo<'_>) -> Read<Got> {
        if !self.object_or_null()? {
            return Ok(Got::Null);
        }
        let entry = f.child.map(|li| ctx.message(li)).ok_or(Unsupported)?;
        let (Some(key_field), Some(value_field)) = (entry.by_number(1), entry.by_number(2)) else {
            return Err(Unsupported);
        };
        let start = ctx.w.pos();
        if !self.empty_object() {
            loop {
                let at = ctx.w.pos();
                ctx.w.tag(f.number, LEN);
                let mark = ctx.w.begin_len();
                ctx.w.tag(1, wire_type(&key_field.kind));
                let key = self.key()?;
                map_key(&mut ctx.w, key_field.kind(), self.text(key)?).map_err(|_| Unsupported)?;
                self.expect(b':')?;
                self.ws();
                match self.value(ctx, &value_field)? {
                    Got::Null => return Err(Unsupported),
                    Got::Skip => ctx.w.truncate(at),
                    Got::Value { .. } => ctx.w.end_len(mark),
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        ctx.w.field_done(f.number, start, false);
        self.nesting -= 1;
        Ok(Got::Value { default: false })
    }
}
