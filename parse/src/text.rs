//! Protobuf text format into protobuf binary, accepting what protobuf's parser (36) accepts:
//! field names (a group-like field also by its type name), `[ext.name]` extensions,
//! `[prefix/T] {…}` inside `Any` (the prefix in URL characters and `%XX` escapes), `:`
//! optional before messages, `{}` or `<>`, `[a, b]` lists, adjacent string concatenation with
//! C escapes (octal, hex, `\u`, `\U`), integers in decimal, hex and octal, floats with
//! `inf`/`nan` and an `f` suffix, enums by name or number, `#` comments, `,` or `;` after a
//! field, and a field named in its message's `reserved` names, skipped with its value.

mod skip;

use prost_reflect::Kind;
use protojit_arena::wire::{EGROUP, LEN};
use protojit_arena::{LayoutIndex, Layouts};

use super::tables::Tables;
use super::writer::Writer;
use super::{
    any_type, enum_by_name, enum_declares, int_wire, is_integer, tag_wire_type, FieldInfo, Message, ParseError,
    ParseOptions, Seen, Wire,
};

/// Parses `text` (text format of a message of the type at `root` in `layouts`) and appends
/// its canonical binary encoding, as `protoc --encode` writes it, to `out`. On error, `out`
/// is left as it was.
///
/// Presence, packing, group (`DELIMITED`) encoding and naming, closed enums and UTF-8
/// checks follow each field's resolved features in `layouts`. Decode the bytes
/// (`Decoder::decode`) for a tree.
///
/// # Panics
///
/// When `root` is not a layout of `layouts` (an index from other layouts).
pub fn text_to_binary(
    layouts: &Layouts,
    root: LayoutIndex,
    text: &[u8],
    options: &ParseOptions,
    out: &mut Vec<u8>,
) -> std::result::Result<(), ParseError> {
    let start = out.len();
    // At most the decoders' limit: each level is a few stack frames, so a limit past theirs
    // would let hostile nesting exhaust the stack.
    let max_depth = options.max_depth.min(protojit_arena::MAX_DEPTH_LIMIT);
    let tables = Tables::of(layouts);
    let mut p = Parser {
        s: text,
        pos: 0,
        w: Writer::new(out),
        layouts,
        tables: &tables,
        scratch: Vec::new(),
        max_depth,
        depth: 0,
    };
    let mut result = p.body(root, None).map(drop);
    if result.is_ok() && p.w.too_large() {
        result = err(text.len(), "the encoded message exceeds 4 GiB");
    }
    p.w.recycle();
    let pos = p.pos;
    result.map_err(|(at, message)| {
        out.truncate(start);
        let at = at.unwrap_or(pos).min(text.len());
        let before = &text[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        ParseError::Text { line, column, message }
    })
}

/// An error: where (`None`: the current position) and what.
type Error = (Option<usize>, String);
type Result<T> = std::result::Result<T, Error>;

fn err<T>(at: usize, message: impl Into<String>) -> Result<T> {
    Err((Some(at), message.into()))
}

struct Parser<'s, 'o, 'l> {
    s: &'s [u8],
    pos: usize,
    w: Writer<'o>,
    layouts: &'l Layouts,
    tables: &'l Tables,
    /// The bytes of the string being read (kept for the next).
    scratch: Vec<u8>,
    max_depth: u32,
    depth: u32,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'s, 'l> Parser<'s, '_, 'l> {
    /// Skips whitespace and `#` comments; the next byte.
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.s.get(self.pos) {
            if b.is_ascii_whitespace() {
                self.pos += 1;
            } else if b == b'#' {
                while self.pos < self.s.len() && self.s[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                return Some(b);
            }
        }
        None
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn found(&mut self) -> String {
        match self.peek() {
            None => "the end of the input".into(),
            Some(_) => {
                let end = (self.pos + 1..=self.s.len())
                    .find(|&e| e == self.s.len() || !is_ident(self.s[e]) || !is_ident(self.s[self.pos]))
                    .unwrap_or(self.s.len());
                format!("{:?}", String::from_utf8_lossy(&self.s[self.pos..end]))
            }
        }
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            return Ok(());
        }
        let found = self.found();
        err(self.pos, format!("expected '{}', found {found}", c as char))
    }

    fn ident(&mut self) -> Result<&'s str> {
        // Identifiers are ASCII, so always UTF-8.
        self.ident_bytes().map(|b| std::str::from_utf8(b).unwrap_or(""))
    }

    /// [`Parser::ident`]'s bytes, for lookups (not checked as UTF-8: they are ASCII).
    fn ident_bytes(&mut self) -> Result<&'s [u8]> {
        if !self.peek().is_some_and(is_ident_start) {
            let found = self.found();
            return err(self.pos, format!("expected an identifier, found {found}"));
        }
        let start = self.pos;
        while self.pos < self.s.len() && is_ident(self.s[self.pos]) {
            self.pos += 1;
        }
        let s: &'s [u8] = self.s;
        Ok(&s[start..self.pos])
    }

    /// Fields until `end` (`}` or `>`), or the end of input for the root.
    fn body(&mut self, layout: LayoutIndex, end: Option<u8>) -> Result<Seen<'l>> {
        if self.depth > self.max_depth {
            return err(self.pos, format!("messages nest deeper than the limit of {}", self.max_depth));
        }
        self.depth += 1;
        let frame = self.w.begin_message();
        let mut seen = Seen::new();
        loop {
            match (self.peek(), end) {
                (None, None) => break,
                (None, Some(c)) => {
                    return err(self.pos, format!("expected '{}' before the end of the input", c as char))
                }
                (Some(c), Some(e)) if c == e => {
                    self.pos += 1;
                    break;
                }
                _ => {}
            }
            self.field(layout, &mut seen)?;
            if !self.eat(b';') {
                self.eat(b',');
            }
        }
        if self.layouts.get(layout).is_map_entry() {
            self.complete_map_entry(layout, &seen);
        }
        self.w.end_message(frame);
        self.depth -= 1;
        Ok(seen)
    }

    /// protoc writes every map entry with its key and its value, defaults included, whatever
    /// the text gave (`m {}` is the entry with both defaults).
    fn complete_map_entry(&mut self, entry: LayoutIndex, seen: &Seen) {
        let entry = Message::new(self.layouts, self.tables, entry);
        for number in [1, 2] {
            let Some(f) = entry.by_number(number).filter(|f| !seen.has(f)) else { continue };
            let at = self.w.pos();
            self.w.tag(number, tag_wire_type(&f));
            match f.kind() {
                Kind::Message(_) => self.w.varint(0),
                Kind::String | Kind::Bytes => self.w.varint(0),
                Kind::Enum(e) => self.w.varint(e.default_value().number() as i64 as u64),
                Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => self.w.fixed32(0),
                Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => self.w.fixed64(0),
                _ => self.w.varint(0),
            }
            // The key goes first: written at the end, it is moved there when the entry's
            // fields are put in order.
            self.w.field_done(number, at, false);
        }
    }

    fn field(&mut self, layout: LayoutIndex, seen: &mut Seen<'l>) -> Result<()> {
        let at = self.pos;
        let message = Message::new(self.layouts, self.tables, layout);
        let desc = message.layout.descriptor();
        let mut name: &[u8] = &[];
        let mut f = if self.eat(b'[') {
            let (prefix, name) = self.bracketed(at)?;
            if !prefix.is_empty() {
                return self.any_expansion(layout, &format!("{prefix}{name}"), at, seen);
            }
            if desc.full_name() == "google.protobuf.Any" {
                return err(
                    at,
                    format!("[{name}] in an Any needs a type URL prefix, as in [type.googleapis.com/{name}]"),
                );
            }
            match desc.get_extension_by_full_name(&name).and_then(|e| message.by_number(e.number())) {
                Some(f) => f,
                None => return err(at, format!("[{name}] is not an extension of {}", desc.full_name())),
            }
        } else {
            name = self.ident_bytes()?;
            // protobuf's rule (text_format.cc): a field by its own name; a group-like
            // delimited field (a proto2 group, or an editions field named as its type) also
            // by its type's name, which is how protoc prints it (the table holds both).
            match message.table.text_slot(name) {
                Some(slot) => message.field(slot),
                None => {
                    let name = std::str::from_utf8(name).unwrap_or("");
                    // A reserved name is skipped with its value, unread (so a field removed from
                    // the schema does not break text written before).
                    if desc.reserved_names().any(|r| r == name) {
                        return self.skip_reserved_value();
                    }
                    return err(at, format!("no field named {name} in {}", desc.full_name()));
                }
            }
        };
        // A map entry written in text keeps the key and value it is given, defaults included.
        f.presence |= message.layout.is_map_entry();
        let repeated = f.list || f.map;
        if !repeated {
            seen.set(&f, true).map_err(|m| (Some(at), m))?;
        }
        if let Kind::Message(_) = &f.kind {
            self.eat(b':');
            if repeated && self.eat(b'[') {
                if self.eat(b']') {
                    return Ok(());
                }
                loop {
                    self.message_value(&f)?;
                    if self.eat(b']') {
                        return Ok(());
                    }
                    self.expect(b',')?;
                }
            }
            return self.message_value(&f);
        }
        self.expect(b':')?;
        if self.peek() == Some(b'[') {
            if !f.list {
                return err(self.pos, format!("field {} is not repeated, so it takes no list", f.display()));
            }
            self.pos += 1;
            if self.eat(b']') {
                return Ok(());
            }
            if f.packed {
                // One packed record for the list.
                let start = self.w.pos();
                self.w.tag(f.number, LEN);
                let mark = self.w.begin_len();
                loop {
                    self.scalar(&f)?;
                    if self.eat(b']') {
                        break;
                    }
                    self.expect(b',')?;
                }
                self.w.end_len(mark);
                self.w.field_done(f.number, start, true);
                return Ok(());
            }
            loop {
                self.scalar_field(&f)?;
                if self.eat(b']') {
                    return Ok(());
                }
                self.expect(b',')?;
            }
        }
        if f.packed && !name.is_empty() {
            return self.packed_run(&f, name);
        }
        self.scalar_field(&f)
    }

    /// A packed field's value, and the values of the same field named again right after it
    /// (`id: 1 id: 2 ...`, as text format prints a repeated scalar), into one packed record:
    /// the separator and the name are read here, and left to [`Parser::body`] when another
    /// field (or the same one with a list) follows.
    fn packed_run(&mut self, f: &FieldInfo<'_>, name: &[u8]) -> Result<()> {
        let start = self.w.pos();
        self.w.tag(f.number, LEN);
        let mark = self.w.begin_len();
        loop {
            self.scalar(f)?;
            let save = self.pos;
            if !self.eat(b';') {
                self.eat(b',');
            }
            if self.peek().is_some_and(is_ident_start) {
                let end = self.pos + name.len();
                if self.s.get(self.pos..end) == Some(name) && !self.s.get(end).is_some_and(|&b| is_ident(b)) {
                    self.pos = end;
                    if self.eat(b':') && self.peek() != Some(b'[') {
                        continue;
                    }
                }
            }
            self.pos = save;
            break;
        }
        self.w.end_len(mark);
        self.w.field_done(f.number, start, true);
        Ok(())
    }

    /// The name inside `[...]`, after the `[` at `at`: an Any type URL split after its last
    /// `/` (prefix, type name), or an extension's name (an empty prefix). As protobuf's
    /// tokenizer reads it: URL characters (RFC 3986's unreserved and sub-delims, `%` and
    /// `/`) with whitespace and comments dropped; the prefix neither `/` alone nor starting
    /// with it, each `%` followed by two hex digits; the name dot-separated identifiers.
    fn bracketed(&mut self, at: usize) -> Result<(String, String)> {
        let mut text = String::new();
        loop {
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                Some(c) if is_ident(c) || b"-.~!$&()*+,;=%/".contains(&c) => {
                    text.push(c as char);
                    self.pos += 1;
                }
                _ => {
                    let found = self.found();
                    return err(self.pos, format!("expected ']' after [{text}, found {found}"));
                }
            }
        }
        let (prefix, name) = text.split_at(text.rfind('/').map_or(0, |i| i + 1));
        if prefix == "/" {
            return err(at, format!("[{text}]: the type URL prefix is empty"));
        }
        if prefix.starts_with('/') {
            return err(at, format!("[{text}]: a type URL does not start with '/'"));
        }
        let p = prefix.as_bytes();
        if let Some(i) = (0..p.len())
            .find(|&i| p[i] == b'%' && !(i + 2 < p.len() && p[i + 1..i + 3].iter().all(u8::is_ascii_hexdigit)))
        {
            return err(at, format!("[{text}]: invalid percent escape {:?}", &prefix[i..(i + 3).min(p.len())]));
        }
        let identifier = |part: &str| part.bytes().next().is_some_and(is_ident_start) && part.bytes().all(is_ident);
        if let Some(bad) = name.split('.').find(|part| !identifier(part)) {
            return err(at, format!("[{text}]: {bad:?} in the type name is not an identifier"));
        }
        Ok((prefix.to_owned(), name.to_owned()))
    }

    fn any_expansion(&mut self, layout: LayoutIndex, url: &str, at: usize, seen: &mut Seen<'l>) -> Result<()> {
        let any = self.layouts.get(layout);
        let desc = any.descriptor();
        if desc.full_name() != "google.protobuf.Any" {
            return err(at, format!("[{url}] expands an Any, but {} is not google.protobuf.Any", desc.full_name()));
        }
        let inner = any_type(self.layouts, url).map_err(|m| (Some(at), m))?;
        for number in [1, 2] {
            if let Some(f) = Message::new(self.layouts, self.tables, layout).by_number(number) {
                seen.set(&f, true).map_err(|_| (Some(at), format!("Any has a type_url or value beside [{url}]")))?;
            }
        }
        self.eat(b':');
        let close = self.open()?;
        let start = self.w.pos();
        self.w.tag(1, LEN);
        self.w.bytes(url.as_bytes());
        let value = self.w.pos();
        self.w.tag(2, LEN);
        let mark = self.w.begin_len();
        self.body(inner, Some(close))?;
        if self.w.len_since(mark) == 0 {
            // An empty value is proto3's default: not written.
            self.w.truncate(value);
        } else {
            self.w.end_len(mark);
        }
        self.w.field_done(1, start, false);
        Ok(())
    }

    /// `{` or `<`; the matching closer.
    fn open(&mut self) -> Result<u8> {
        if self.eat(b'{') {
            Ok(b'}')
        } else if self.eat(b'<') {
            Ok(b'>')
        } else {
            let found = self.found();
            err(self.pos, format!("expected '{{' or '<', found {found}"))
        }
    }

    fn message_value(&mut self, f: &FieldInfo<'_>) -> Result<()> {
        let Some(m) = f.child else {
            return err(self.pos, format!("field {} has no message layout", f.display()));
        };
        let close = self.open()?;
        let start = self.w.pos();
        self.w.tag(f.number, tag_wire_type(f));
        if f.group {
            self.body(m, Some(close))?;
            self.w.tag(f.number, EGROUP);
        } else {
            let mark = self.w.begin_len();
            self.body(m, Some(close))?;
            self.w.end_len(mark);
        }
        self.w.field_done(f.number, start, false);
        Ok(())
    }

    /// One scalar of field `f`, with its tag (a packed record of one when packed).
    fn scalar_field(&mut self, f: &FieldInfo<'_>) -> Result<()> {
        let start = self.w.pos();
        if f.packed {
            self.w.tag(f.number, LEN);
            let mark = self.w.begin_len();
            self.scalar(f)?;
            self.w.end_len(mark);
            self.w.field_done(f.number, start, true);
            return Ok(());
        }
        self.w.tag(f.number, tag_wire_type(f));
        let zero = self.scalar(f)?;
        if zero && !f.presence && !f.list {
            self.w.truncate(start);
        } else {
            self.w.field_done(f.number, start, false);
        }
        Ok(())
    }

    /// Writes one scalar of field `f` (no tag); whether it is the default.
    fn scalar(&mut self, f: &FieldInfo<'_>) -> Result<bool> {
        self.peek();
        let at = self.pos;
        let kind = &f.kind;
        let wire = match kind {
            Kind::String | Kind::Bytes => {
                // Into a buffer kept between strings (the length goes first).
                let mut bytes = std::mem::take(&mut self.scratch);
                bytes.clear();
                let read = self.strings_into(&mut bytes);
                let empty = bytes.is_empty();
                let result = match read {
                    Ok(()) if f.validate_utf8 && std::str::from_utf8(&bytes).is_err() => {
                        err(at, "string field holds invalid UTF-8 (use a bytes field for raw bytes)")
                    }
                    Ok(()) => {
                        self.w.bytes(&bytes);
                        Ok(empty)
                    }
                    Err(e) => Err(e),
                };
                self.scratch = bytes;
                return result;
            }
            Kind::Enum(e) if self.peek().is_some_and(is_ident_start) => {
                let name = self.ident_bytes()?;
                match enum_by_name(self.layouts, self.tables, e, f.enum_index, name) {
                    Some(v) => Wire::Varint(v as i64 as u64),
                    None => {
                        let name = String::from_utf8_lossy(name);
                        return err(at, format!("{name} is not a value of enum {}", e.full_name()));
                    }
                }
            }
            Kind::Enum(e) => {
                let v = self.integer()?;
                if f.closed_enum && !enum_declares(self.layouts, e, f.enum_index, v) {
                    return err(at, format!("{v} is not a value of closed enum {}", e.full_name()));
                }
                int_wire(kind, v).map_err(|m| (Some(at), m))?
            }
            Kind::Bool if self.peek().is_some_and(is_ident_start) => match self.ident()? {
                "true" | "True" | "t" => Wire::Varint(1),
                "false" | "False" | "f" => Wire::Varint(0),
                other => return err(at, format!("expected true or false, found {other}")),
            },
            Kind::Float | Kind::Double => {
                let v = self.float()?;
                match kind {
                    Kind::Float => Wire::Fixed32((v as f32).to_bits()),
                    _ => Wire::Fixed64(v.to_bits()),
                }
            }
            k if is_integer(k) || matches!(k, Kind::Bool) => {
                let v = self.integer()?;
                int_wire(kind, v).map_err(|m| (Some(at), m))?
            }
            _ => return err(at, "a message is not a scalar"),
        };
        wire.write(&mut self.w);
        Ok(wire.is_zero())
    }

    /// The number token at the cursor (after an optional `-`): its text, and whether it is a
    /// float (has `.`, an exponent or an `f` suffix).
    fn number_token(&mut self) -> Result<(bool, &[u8], bool)> {
        let negative = self.eat(b'-');
        self.peek();
        let start = self.pos;
        let s = self.s;
        let mut i = start;
        let hex = s.get(i) == Some(&b'0') && matches!(s.get(i + 1), Some(b'x' | b'X'));
        let mut float = false;
        if hex {
            i += 2;
            while i < s.len() && s[i].is_ascii_hexdigit() {
                i += 1;
            }
        } else {
            while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'.') {
                float |= s[i] == b'.';
                i += 1;
            }
            if i > start && matches!(s.get(i), Some(b'e' | b'E')) {
                float = true;
                i += 1;
                if matches!(s.get(i), Some(b'+' | b'-')) {
                    i += 1;
                }
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
            }
        }
        let digits_end = i;
        if !hex && i > start && matches!(s.get(i), Some(b'f' | b'F')) {
            float = true;
            i += 1;
        }
        if i == start || (hex && i == start + 2) || s.get(i).is_some_and(|&b| is_ident(b) || b == b'.') {
            let found = self.found();
            return err(start, format!("expected a number, found {found}"));
        }
        self.pos = i;
        Ok((negative, &s[start..digits_end], float))
    }

    fn integer(&mut self) -> Result<i128> {
        let at = self.pos;
        let (negative, text, float) = self.number_token()?;
        if float {
            return err(at, format!("expected an integer, found {:?}", String::from_utf8_lossy(text)));
        }
        let v = parse_unsigned(text).ok_or_else(|| (Some(at), "integer out of range".to_owned()))?;
        Ok(if negative { -v } else { v })
    }

    fn float(&mut self) -> Result<f64> {
        let negative = self.eat(b'-');
        let at = self.pos;
        let v = if self.peek().is_some_and(is_ident_start) {
            let name = self.ident()?.to_ascii_lowercase();
            match name.as_str() {
                "inf" | "infinity" => f64::INFINITY,
                "nan" => f64::NAN,
                _ => return err(at, format!("expected a number, found {name}")),
            }
        } else {
            let (twice, text, float) = self.number_token()?;
            if twice && negative {
                return err(at, "two '-' signs before a number");
            }
            let text = std::str::from_utf8(text).unwrap_or("");
            let radix_prefixed =
                text.starts_with("0x") || text.starts_with("0X") || (text.starts_with('0') && text.len() > 1);
            if !float && radix_prefixed {
                // protoc reads floats in decimal only.
                return err(at, format!("expected a decimal number, found {text}"));
            }
            text.parse::<f64>().map_err(|_| (Some(at), format!("{text:?} is not a number")))?
        };
        Ok(if negative { -v } else { v })
    }

    /// Adjacent string literals, concatenated, escapes resolved.
    fn strings(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.strings_into(&mut out)?;
        Ok(out)
    }

    /// [`Parser::strings`] appended to `out`.
    fn strings_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if !matches!(self.peek(), Some(b'"' | b'\'')) {
            let found = self.found();
            return err(self.pos, format!("expected a string, found {found}"));
        }
        while let Some(q @ (b'"' | b'\'')) = self.peek() {
            self.pos += 1;
            loop {
                // The plain run up to the next quote, escape or line end, in one copy.
                let rest = &self.s[self.pos..];
                let plain = rest.iter().position(|&c| c == q || c == b'\\' || c == b'\n').unwrap_or(rest.len());
                out.extend_from_slice(&rest[..plain]);
                self.pos += plain;
                let at = self.pos;
                let Some(&c) = self.s.get(self.pos) else {
                    return err(at, "string not closed before the end of the input");
                };
                self.pos += 1;
                match c {
                    b'\n' => return err(at, "string not closed before the end of the line"),
                    _ if c == q => break,
                    b'\\' => self.escape(out)?,
                    _ => out.push(c),
                }
            }
        }
        Ok(())
    }

    /// One escape after its `\`.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let at = self.pos - 1;
        let Some(&c) = self.s.get(self.pos) else {
            return err(at, "string not closed before the end of the input");
        };
        self.pos += 1;
        let simple = match c {
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' | b'\'' | b'"' | b'?' => Some(c),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(());
        }
        let take = |p: &mut Self, max: usize, radix: u32| {
            let mut v = 0u32;
            let mut n = 0;
            while n < max {
                match p.s.get(p.pos).and_then(|&b| (b as char).to_digit(radix)) {
                    Some(d) => v = v * radix + d,
                    None => break,
                }
                p.pos += 1;
                n += 1;
            }
            (v, n)
        };
        match c {
            b'0'..=b'7' => {
                self.pos -= 1;
                let (v, _) = take(self, 3, 8);
                if v > 0xff {
                    return err(at, "octal escape above \\377");
                }
                out.push(v as u8);
            }
            b'x' | b'X' => {
                let (v, n) = take(self, 2, 16);
                if n == 0 {
                    return err(at, "\\x needs a hex digit");
                }
                out.push(v as u8);
            }
            b'u' | b'U' => {
                let want = if c == b'u' { 4 } else { 8 };
                let (v, n) = take(self, want, 16);
                if n != want {
                    return err(at, format!("\\{} needs {want} hex digits", c as char));
                }
                match char::from_u32(v) {
                    Some(ch) => out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
                    None if (0xd800..0xe000).contains(&v) => {
                        return err(at, format!("\\{}{v:x} is a surrogate, not a code point", c as char))
                    }
                    None => return err(at, format!("\\{}{v:x} is beyond the last code point", c as char)),
                }
            }
            _ => return err(at, format!("unknown escape \\{}", c as char)),
        }
        Ok(())
    }
}

/// An unsigned integer literal: decimal, `0x` hex or `0` octal.
fn parse_unsigned(text: &[u8]) -> Option<i128> {
    // The common case: decimal, at most 18 digits, in a u64 at once.
    if let [b'1'..=b'9', ..] = text {
        if text.len() <= 18 {
            let mut v = 0u64;
            for &b in text {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                v = v * 10 + u64::from(d);
            }
            return Some(i128::from(v));
        }
    }
    let (digits, radix) = match text {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16),
        [b'0', rest @ ..] if !rest.is_empty() => (rest, 8),
        _ => (text, 10),
    };
    if digits.is_empty() || digits.len() > 40 {
        return None;
    }
    let mut v: i128 = 0;
    for &b in digits {
        let d = (b as char).to_digit(radix)?;
        v = v.checked_mul(radix.into())?.checked_add(d.into())?;
    }
    Some(v)
}
