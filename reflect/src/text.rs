//! Protobuf text format, byte-identical to `protoc --decode` (protobuf 3.21's printer).

use std::cmp::Ordering;
use std::fmt::Write as _;

use protojit_arena::wire::{self, read_varint};
use protojit_arena::EnumType;

use crate::{Descend, EnumValue, FieldInfo, MapKey, MapRef, MapWalk, MessageRef, Value, Visitor};

impl MessageRef<'_> {
    /// The message in protobuf text format, exactly as `protoc --decode` prints it: known
    /// fields and extensions in number order, then unknown fields in wire order (a
    /// length-delimited one as a message when it parses as one, up to protoc's depth of
    /// 10); strings C-escaped; floats as `%.6g`/`%.15g`, or `%.9g`/`%.17g` when that does
    /// not round-trip; map entries stably sorted by key, duplicates kept, each with its
    /// key, value and unknown fields.
    pub fn to_text_format(&self) -> String {
        let mut out = String::new();
        self.write_text_format(&mut out);
        out
    }

    /// Appends the text format of this message to `out` (see [`to_text_format`](Self::to_text_format)).
    pub fn write_text_format(&self, out: &mut String) {
        print_message(self, 0, out);
    }
}

fn indent(depth: usize, out: &mut String) {
    const SPACES: &str = "                                                                ";
    let mut n = 2 * depth;
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

fn print_message(msg: &MessageRef<'_>, depth: usize, out: &mut String) {
    msg.visit(&mut Text { out, depth });
}

/// The text printer, as a visitor: each callback prints one field line (or opens and
/// closes a message), straight into `out`, with names from the layout's table.
struct Text<'o> {
    out: &'o mut String,
    depth: usize,
}

impl Text<'_> {
    #[inline]
    fn start(&mut self, name: &str) {
        indent(self.depth, self.out);
        self.out.push_str(name);
        self.out.push_str(": ");
    }
}

macro_rules! text_numbers {
    ($($one:ident, $many:ident, $t:ty, |$out:ident, $v:ident| $print:expr;)*) => {$(
        #[inline]
        fn $one(&mut self, f: FieldInfo<'a>, $v: $t) {
            self.start(f.text_name());
            let $out = &mut *self.out;
            $print;
            $out.push('\n');
        }
        fn $many(&mut self, f: FieldInfo<'a>, v: &'a [$t]) {
            let name = f.text_name();
            for &$v in v {
                self.start(name);
                let $out = &mut *self.out;
                $print;
                $out.push('\n');
            }
        }
    )*};
}

impl<'a> Visitor<'a> for Text<'_> {
    text_numbers! {
        bool, bools, bool, |out, v| out.push_str(if v { "true" } else { "false" });
        i32, i32s, i32, |out, v| push_i64(out, i64::from(v));
        i64, i64s, i64, |out, v| push_i64(out, v);
        u32, u32s, u32, |out, v| push_u64(out, u64::from(v));
        u64, u64s, u64, |out, v| push_u64(out, v);
        f32, f32s, f32, |out, v| out.push_str(&format_float(v));
        f64, f64s, f64, |out, v| out.push_str(&format_double(v));
    }

    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) {
        self.start(f.text_name());
        quote(v.as_bytes(), self.out);
        self.out.push('\n');
    }

    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) {
        self.start(f.text_name());
        quote(v, self.out);
        self.out.push('\n');
    }

    fn enum_value(&mut self, f: FieldInfo<'a>, v: EnumValue<'a>) {
        self.start(f.text_name());
        push_enum(v, self.out);
        self.out.push('\n');
    }

    fn enums(&mut self, f: FieldInfo<'a>, numbers: &'a [i32], ty: &'a EnumType) {
        let name = f.text_name();
        for &n in numbers {
            self.start(name);
            push_enum(EnumValue::new(n, ty), self.out);
            self.out.push('\n');
        }
    }

    fn message(&mut self, f: FieldInfo<'a>, _: MessageRef<'a>) -> Descend {
        indent(self.depth, self.out);
        self.out.push_str(f.text_name());
        self.out.push_str(" {\n");
        self.depth += 1;
        Descend::Yes
    }

    fn end_message(&mut self, _: FieldInfo<'a>, _: MessageRef<'a>) {
        self.depth -= 1;
        indent(self.depth, self.out);
        self.out.push_str("}\n");
    }

    fn map(&mut self, f: FieldInfo<'a>, map: MapRef<'a>) -> MapWalk {
        // protoc prints the map's entries as the repeated message field they are on the
        // wire: every entry, duplicates included, stably sorted by key; each with its key
        // and value (defaults when absent) and its own unknown fields.
        let name = f.text_name();
        let mut entries: Vec<(Value<'_>, MessageRef<'_>)> =
            map.entries_on_wire().map(|e| (e.get_by_number(1).expect("map entries have a key field"), e)).collect();
        entries.sort_by(|a, b| key_order(&a.0, &b.0));
        let depth = self.depth;
        for (key, entry) in entries {
            indent(depth, self.out);
            self.out.push_str(name);
            self.out.push_str(" {\n");
            print_field("key", &key, depth + 1, self.out);
            print_field("value", &entry.get_by_number(2).expect("map entries have a value field"), depth + 1, self.out);
            print_unknown_fields(&entry, depth + 1, self.out);
            indent(depth, self.out);
            self.out.push_str("}\n");
        }
        MapWalk::Skip
    }

    fn unknown(&mut self, span: &'a [u8]) {
        print_unknown_span(span, self.depth, self.out);
    }
}

fn push_enum(v: EnumValue<'_>, out: &mut String) {
    match v.name() {
        Some(name) => out.push_str(name),
        None => push_i64(out, i64::from(v.number)),
    }
}

/// The decimal digits of `v`, `-` first when `negative`, written at the end of `buf`
/// (what `write!(out, "{v}")` writes, without the formatting machinery).
pub(crate) fn decimal(buf: &mut [u8; 21], mut v: u64, negative: bool) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if negative {
        i -= 1;
        buf[i] = b'-';
    }
    std::str::from_utf8(&buf[i..]).expect("ASCII digits")
}

/// Appends the decimal digits of `v`.
fn push_u64(out: &mut String, v: u64) {
    out.push_str(decimal(&mut [0; 21], v, false));
}

fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_u64(out, v.unsigned_abs());
}

/// The order protoc sorts map entries in: by key, strings bytewise.
fn key_order(a: &Value<'_>, b: &Value<'_>) -> Ordering {
    fn bytes<'v>(v: &'v Value<'_>) -> Option<&'v [u8]> {
        match v {
            Value::String(s) => Some(s.as_bytes()),
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
    if let (Some(x), Some(y)) = (bytes(a), bytes(b)) {
        return x.cmp(y);
    }
    match (MapKey::from_value(a), MapKey::from_value(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => Ordering::Equal,
    }
}

/// A map entry's key or value.
fn print_field(name: &str, value: &Value<'_>, depth: usize, out: &mut String) {
    indent(depth, out);
    out.push_str(name);
    if let Value::Message(m) = value {
        out.push_str(" {\n");
        print_message(m, depth + 1, out);
        indent(depth, out);
        out.push_str("}\n");
        return;
    }
    out.push_str(": ");
    print_scalar(value, out);
    out.push('\n');
}

fn print_scalar(value: &Value<'_>, out: &mut String) {
    match value {
        Value::Bool(v) => out.push_str(if *v { "true" } else { "false" }),
        Value::I32(v) => push_i64(out, i64::from(*v)),
        Value::I64(v) => push_i64(out, *v),
        Value::U32(v) => push_u64(out, u64::from(*v)),
        Value::U64(v) => push_u64(out, *v),
        Value::F32(v) => out.push_str(&format_float(*v)),
        Value::F64(v) => out.push_str(&format_double(*v)),
        Value::String(s) => quote(s.as_bytes(), out),
        Value::Bytes(b) => quote(b, out),
        Value::Enum(e) => push_enum(*e, out),
        Value::Message(_) | Value::List(_) | Value::Map(_) => unreachable!("not a scalar"),
    }
}

/// Appends `bytes` as a text-format string literal: `"..."` with C escapes (`CEscape`):
/// `\n \r \t \" \' \\`, other bytes outside printable ASCII as three-digit octal.
pub fn write_text_string(bytes: &[u8], out: &mut String) {
    quote(bytes, out)
}

fn quote(bytes: &[u8], out: &mut String) {
    out.push('"');
    let mut rest = bytes;
    while !rest.is_empty() {
        // A run of bytes printed as they are goes in with one copy.
        let run = rest.iter().position(|&b| !matches!(b, 0x20..=0x7e) || matches!(b, b'"' | b'\'' | b'\\'));
        let (plain, tail) = rest.split_at(run.unwrap_or(rest.len()));
        out.push_str(std::str::from_utf8(plain).expect("printable ASCII"));
        let Some((&b, tail)) = tail.split_first() else { break };
        rest = tail;
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                out.push('\\');
                out.push((b'0' + (b >> 6)) as char);
                out.push((b'0' + ((b >> 3) & 7)) as char);
                out.push((b'0' + (b & 7)) as char);
            }
        }
    }
    out.push('"');
}

/// C's `%.{precision}g`.
fn format_g(v: f64, precision: usize) -> String {
    let p = precision.max(1);
    let e_form = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = e_form.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= p as i32 {
        let mantissa = trim_fraction(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let fixed = format!("{:.*}", (p as i32 - 1 - exp) as usize, v);
        trim_fraction(&fixed).to_owned()
    }
}

fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// protobuf's `SimpleFtoa`: `%.6g`, or `%.9g` when that does not round-trip. Its
/// round-trip check (`safe_strtof`) also fails when `strtof` reports `ERANGE`, which glibc
/// does for every subnormal result, so subnormals always take `%.9g`.
pub(crate) fn format_float(v: f32) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v.is_subnormal() {
        return format_g(v as f64, 9);
    }
    let short = format_g(v as f64, 6);
    if short.parse::<f32>().ok() == Some(v) {
        short
    } else {
        format_g(v as f64, 9)
    }
}

/// protobuf's `SimpleDtoa`: `%.15g`, or `%.17g` when that does not round-trip.
pub(crate) fn format_double(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let short = format_g(v, 15);
    if short.parse::<f64>().ok() == Some(v) {
        short
    } else {
        format_g(v, 17)
    }
}

/// How deep protoc (`kUnknownFieldRecursionLimit`) tries to print length-delimited unknown
/// values as messages, counted from each known message; unknown groups use it up too.
const UNKNOWN_RECURSION_BUDGET: u32 = 10;

/// The unknown fields of `msg`, in wire order, as protoc prints them.
fn print_unknown_fields(msg: &MessageRef<'_>, depth: usize, out: &mut String) {
    for span in msg.unknown_fields() {
        print_unknown_span(span, depth, out);
    }
}

fn print_unknown_span(span: &[u8], depth: usize, out: &mut String) {
    // The decoder checked every span (with 64-bit lengths, as protoc's parser reads
    // them), so it parses; were one not to, printing the rest beats a panic.
    match parse_field(span, 0, u32::MAX, Reader::Input) {
        Some((field, _)) => print_unknown(&field, depth, UNKNOWN_RECURSION_BUDGET, out),
        None => debug_assert!(false, "malformed unknown-field span {span:?}"),
    }
}

/// An unknown field, parsed for printing.
enum Unknown<'a> {
    Varint(u32, u64),
    Fixed64(u32, u64),
    Fixed32(u32, u32),
    Len(u32, &'a [u8]),
    Group(u32, Vec<Unknown<'a>>),
}

/// Which of protoc's two wire readers [`parse_field`] follows; they disagree on tags and
/// lengths past 32 bits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// The parser that reads protoc's input (`ParseContext`), for `decode_raw_to_text`'s
    /// input and for the unknown-field spans of decoded messages: a length is a 64-bit
    /// varint that must fit the input (a length of 2^32 or more is past the end, never its
    /// value modulo 2^32); a tag of up to 5 bytes is read as 32 bits (as protoc does), a
    /// longer one as the 64-bit varint it is, whose field number must fit 29 bits. On spans
    /// protojit's decoders accepted, this reads exactly what they read.
    Input,
    /// `CodedInputStream`, with which protoc's printer re-reads a length-delimited value to
    /// print it as a message: tags and lengths are `ReadVarint32`, up to 10 bytes with bits
    /// past 32 dropped, and a length with bit 31 set is negative, an error. Printing like
    /// protoc means keeping this truncation for nested values, where it only decides
    /// between "message" and "string".
    Printer,
}

/// A varint as protobuf's `CodedInputStream::ReadVarint32` reads it: up to 10 bytes, bits
/// past 32 dropped.
fn read_varint32(buf: &[u8], pos: usize) -> Option<(u32, usize)> {
    read_varint(buf, pos).ok().map(|(v, next)| (v as u32, next))
}

/// A tag at `pos` as `reader` reads it: `(field number, wire type, next)`.
fn read_tag(buf: &[u8], pos: usize, reader: Reader) -> Option<(u32, u8, usize)> {
    let (tag, next) = read_varint(buf, pos).ok()?;
    let wt = (tag & 7) as u8;
    let number = if reader == Reader::Printer || next - pos <= 5 {
        (tag as u32) >> 3
    } else {
        u32::try_from(tag >> 3).ok().filter(|&n| n <= wire::MAX_FIELD_NUMBER)?
    };
    Some((number, wt, next))
}

/// A length prefix at `pos` as `reader` reads it: the value's `(start, end)` in `buf`.
fn read_len(buf: &[u8], pos: usize, reader: Reader) -> Option<(usize, usize)> {
    let (len, start) = match reader {
        Reader::Input => {
            let (len, start) = read_varint(buf, pos).ok()?;
            (usize::try_from(len).ok()?, start)
        }
        Reader::Printer => {
            let (len, start) = read_varint32(buf, pos)?;
            // A length with bit 31 set is negative to protobuf: an error.
            (usize::try_from(i32::try_from(len).ok()?).ok()?, start)
        }
    };
    let end = start.checked_add(len).filter(|&end| end <= buf.len())?;
    Some((start, end))
}

/// Parses one field at `pos` the way `reader` does (field 0 and wire types 6 and 7 are
/// errors); `None` if malformed. `groups_left` is how many more groups may nest (protoc's
/// recursion limit for the parse).
fn parse_field(buf: &[u8], pos: usize, groups_left: u32, reader: Reader) -> Option<(Unknown<'_>, usize)> {
    let (number, wt, pos) = read_tag(buf, pos, reader)?;
    if number == 0 {
        return None;
    }
    match wt {
        wire::VARINT => {
            let (v, next) = read_varint(buf, pos).ok()?;
            Some((Unknown::Varint(number, v), next))
        }
        wire::FIXED64 => {
            let b = buf.get(pos..pos.checked_add(8)?)?;
            Some((Unknown::Fixed64(number, u64::from_le_bytes(b.try_into().ok()?)), pos + 8))
        }
        wire::FIXED32 => {
            let b = buf.get(pos..pos.checked_add(4)?)?;
            Some((Unknown::Fixed32(number, u32::from_le_bytes(b.try_into().ok()?)), pos + 4))
        }
        wire::LEN => {
            let (start, end) = read_len(buf, pos, reader)?;
            Some((Unknown::Len(number, &buf[start..end]), end))
        }
        wire::SGROUP => {
            let groups_left = groups_left.checked_sub(1)?;
            let mut fields = Vec::new();
            let mut p = pos;
            loop {
                let (n, wt, next) = read_tag(buf, p, reader)?;
                if wt == wire::EGROUP {
                    return (n == number).then_some((Unknown::Group(number, fields), next));
                }
                let (f, next) = parse_field(buf, p, groups_left, reader)?;
                fields.push(f);
                p = next;
            }
        }
        _ => None,
    }
}

/// Parses a whole buffer as a message of unknown fields, as protoc tries for every
/// length-delimited unknown value.
fn parse_set(buf: &[u8], groups_left: u32) -> Option<Vec<Unknown<'_>>> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let (f, next) = parse_field(buf, pos, groups_left, Reader::Printer)?;
        fields.push(f);
        pos = next;
    }
    Some(fields)
}

/// Prints one unknown field; a length-delimited value prints as a message when `budget`
/// allows and it parses as one (with at most `budget` nested groups), else as a string.
fn print_unknown(field: &Unknown<'_>, depth: usize, budget: u32, out: &mut String) {
    indent(depth, out);
    match field {
        Unknown::Varint(n, v) => writeln!(out, "{n}: {v}").unwrap(),
        Unknown::Fixed32(n, v) => writeln!(out, "{n}: 0x{v:08x}").unwrap(),
        Unknown::Fixed64(n, v) => writeln!(out, "{n}: 0x{v:016x}").unwrap(),
        Unknown::Len(n, bytes) => {
            let nested = if bytes.is_empty() || budget == 0 { None } else { parse_set(bytes, budget) };
            match nested {
                Some(fields) => {
                    writeln!(out, "{n} {{").unwrap();
                    for f in &fields {
                        print_unknown(f, depth + 1, budget - 1, out);
                    }
                    indent(depth, out);
                    out.push_str("}\n");
                }
                None => {
                    write!(out, "{n}: ").unwrap();
                    quote(bytes, out);
                    out.push('\n');
                }
            }
        }
        Unknown::Group(n, fields) => {
            writeln!(out, "{n} {{").unwrap();
            for f in fields {
                print_unknown(f, depth + 1, budget.saturating_sub(1), out);
            }
            indent(depth, out);
            out.push_str("}\n");
        }
    }
}

/// How deep groups may nest in `protoc --decode_raw` input (protobuf's default parse
/// recursion limit): 100 nested groups parse, 101 do not.
const RAW_GROUP_LIMIT: u32 = 100;

/// Prints bytes of unknown type exactly as `protoc --decode_raw` (protobuf 3.21) does:
/// every field by number in wire order, varints as unsigned decimal, fixed32/fixed64 as
/// `0x` hex, groups as `N { ... }`, a length-delimited value as a nested message when it
/// parses as one (up to 10 levels deep, as protoc's printer tries), else as a C-escaped
/// string. Input protoc rejects ("Failed to parse input.") is an error naming the kind
/// of fault and the byte offset where it starts; lengths are 64-bit, so one of 2^32 or
/// more is past the end. One difference is left on purpose: a tag or length padded past 5
/// bytes whose value fits (e.g. `80 80 80 80 80 00` for 0) is read, as the wire format
/// allows and protojit's decoders do, where protoc's parser rejects it.
pub fn decode_raw_to_text(bytes: &[u8]) -> Result<String, protojit_arena::DecodeError> {
    let mut out = String::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let Some((field, next)) = parse_field(bytes, pos, RAW_GROUP_LIMIT, Reader::Input) else {
            return Err(raw_fault(bytes, pos));
        };
        print_unknown(&field, 0, UNKNOWN_RECURSION_BUDGET, &mut out);
        pos = next;
    }
    Ok(out)
}

/// What is wrong with the top-level field at `pos`, which [`parse_field`] rejected.
fn raw_fault(bytes: &[u8], pos: usize) -> protojit_arena::DecodeError {
    use protojit_arena::{DecodeError, DecodeErrorKind};
    let fault = wire::read_tag(bytes, pos).and_then(|(number, wire_type, next)| {
        wire::skip_value(bytes, pos, next, bytes.len(), number, wire_type, 0, RAW_GROUP_LIMIT)
    });
    match fault {
        Err(e) => e,
        // A fault only protoc's reading of short tags as 32 bits sees: report it at the field.
        Ok(_) => DecodeError::new(DecodeErrorKind::LengthOutOfBounds, pos),
    }
}
