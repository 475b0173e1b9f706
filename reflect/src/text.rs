//! Protobuf text format, byte-identical to `protoc --decode` (protobuf 3.21's printer).

use std::fmt::Write as _;

use prost_reflect::Kind;
use protojit_arena::wire::{self, read_tag, read_varint};
use protojit_arena::SlotDescriptor;

use crate::{MapKey, MessageRef, Value};

impl MessageRef<'_> {
    /// The message in protobuf text format, exactly as `protoc --decode` prints it: known
    /// fields in number order, then unknown fields by number in wire order; strings
    /// C-escaped; floats in shortest round-trip `%g` form; maps sorted by key.
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
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn print_message(msg: &MessageRef<'_>, depth: usize, out: &mut String) {
    for (desc, value) in msg.fields() {
        let name = field_name(desc);
        match value {
            Value::List(list) => {
                for v in list.iter() {
                    print_field(&name, &v, depth, out);
                }
            }
            Value::Map(map) => {
                let mut entries: Vec<(MapKey<'_>, Value<'_>)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                for (k, v) in entries {
                    indent(depth, out);
                    out.push_str(&name);
                    out.push_str(" {\n");
                    print_field("key", &k.to_value(), depth + 1, out);
                    print_field("value", &v, depth + 1, out);
                    indent(depth, out);
                    out.push_str("}\n");
                }
            }
            v => print_field(&name, &v, depth, out),
        }
    }
    for span in msg.unknown_fields() {
        print_unknown_span(span, depth, out);
    }
}

fn field_name(desc: &SlotDescriptor) -> String {
    match desc {
        SlotDescriptor::Extension(e) => format!("[{}]", e.full_name()),
        SlotDescriptor::Field(f) if f.is_group() => match f.kind() {
            Kind::Message(m) => m.name().to_owned(),
            _ => f.name().to_owned(),
        },
        SlotDescriptor::Field(f) => f.name().to_owned(),
    }
}

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
        Value::I32(v) => write!(out, "{v}").unwrap(),
        Value::I64(v) => write!(out, "{v}").unwrap(),
        Value::U32(v) => write!(out, "{v}").unwrap(),
        Value::U64(v) => write!(out, "{v}").unwrap(),
        Value::F32(v) => out.push_str(&format_float(*v)),
        Value::F64(v) => out.push_str(&format_double(*v)),
        Value::String(s) => quote(s.as_bytes(), out),
        Value::Bytes(b) => quote(b, out),
        Value::Enum(e) => match e.name() {
            Some(name) => out.push_str(&name),
            None => write!(out, "{}", e.number).unwrap(),
        },
        Value::Message(_) | Value::List(_) | Value::Map(_) => unreachable!("not a scalar"),
    }
}

/// `"..."` with C escapes (`CEscape`): `\n \r \t \" \' \\`, other bytes outside
/// printable ASCII as three-digit octal.
fn quote(bytes: &[u8], out: &mut String) {
    out.push('"');
    for &b in bytes {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => write!(out, "\\{b:03o}").unwrap(),
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

/// protobuf's `SimpleFtoa`: `%.6g`, or `%.9g` when that does not round-trip.
pub(crate) fn format_float(v: f32) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
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

/// One unknown field as protoc prints it, from its complete wire bytes.
fn print_unknown_span(span: &[u8], depth: usize, out: &mut String) {
    match parse_field(span, 0, 0) {
        Some((field, _)) => print_unknown(&field, depth, out),
        None => unreachable!("unknown-field spans are well-formed"),
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

/// Parses one field at `pos`; `None` if malformed (then a length-delimited value prints
/// as a string). `group_depth` bounds the nesting (protoc parses unknown groups to 64).
fn parse_field(buf: &[u8], pos: usize, group_depth: u32) -> Option<(Unknown<'_>, usize)> {
    let (number, wt, pos) = read_tag(buf, pos).ok()?;
    match wt {
        wire::VARINT => {
            let (v, next) = read_varint(buf, pos).ok()?;
            Some((Unknown::Varint(number, v), next))
        }
        wire::FIXED64 => {
            let b = buf.get(pos..pos + 8)?;
            Some((Unknown::Fixed64(number, u64::from_le_bytes(b.try_into().ok()?)), pos + 8))
        }
        wire::FIXED32 => {
            let b = buf.get(pos..pos + 4)?;
            Some((Unknown::Fixed32(number, u32::from_le_bytes(b.try_into().ok()?)), pos + 4))
        }
        wire::LEN => {
            let (len, start) = read_varint(buf, pos).ok()?;
            let end = start.checked_add(usize::try_from(len).ok()?)?;
            Some((Unknown::Len(number, buf.get(start..end)?), end))
        }
        wire::SGROUP => {
            if group_depth >= 64 {
                return None;
            }
            let mut fields = Vec::new();
            let mut p = pos;
            loop {
                let (n, wt, next) = read_tag(buf, p).ok()?;
                if wt == wire::EGROUP {
                    return (n == number).then_some((Unknown::Group(number, fields), next));
                }
                let (f, next) = parse_field(buf, p, group_depth + 1)?;
                fields.push(f);
                p = next;
            }
        }
        _ => None,
    }
}

/// Parses a whole buffer as a message of unknown fields, as protoc tries for every
/// length-delimited unknown value.
fn parse_set(buf: &[u8], depth: u32) -> Option<Vec<Unknown<'_>>> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let (f, next) = parse_field(buf, pos, depth)?;
        fields.push(f);
        pos = next;
    }
    Some(fields)
}

fn print_unknown(field: &Unknown<'_>, depth: usize, out: &mut String) {
    indent(depth, out);
    match field {
        Unknown::Varint(n, v) => writeln!(out, "{n}: {v}").unwrap(),
        Unknown::Fixed32(n, v) => writeln!(out, "{n}: 0x{v:08x}").unwrap(),
        Unknown::Fixed64(n, v) => writeln!(out, "{n}: 0x{v:016x}").unwrap(),
        Unknown::Len(n, bytes) => {
            let nested = if bytes.is_empty() || depth >= 64 { None } else { parse_set(bytes, 0) };
            match nested {
                Some(fields) => {
                    writeln!(out, "{n} {{").unwrap();
                    for f in &fields {
                        print_unknown(f, depth + 1, out);
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
                print_unknown(f, depth + 1, out);
            }
            indent(depth, out);
            out.push_str("}\n");
        }
    }
}
