//! The one field-path grammar (`parse_path`), how a segment names a field (`find_field`), and the errors paths report.

use std::fmt;

use prost_reflect::{Kind, MessageDescriptor};
use protojit_arena::SlotDescriptor;

/// A path that could not be parsed, or does not fit the message type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    /// The whole path text.
    pub path: String,
    /// The segment at fault (a field name, `#7`, `(ext)`, `[...]`), or the character where
    /// the syntax broke.
    pub segment: String,
    /// Byte offset of the segment in the path.
    pub offset: usize,
    /// What is wrong.
    pub kind: PathErrorKind,
}

/// What is wrong with a path (see [`PathError`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathErrorKind {
    /// The path is empty.
    Empty,
    /// The text does not follow the grammar; says what was expected.
    Syntax(&'static str),
    /// The message type has no field with this name.
    UnknownField {
        /// Full name of the message type.
        message: String,
    },
    /// The message type has no field or extension with this number.
    UnknownNumber {
        /// Full name of the message type.
        message: String,
    },
    /// No extension with this full name extends the message type.
    UnknownExtension {
        /// Full name of the message type.
        message: String,
    },
    /// A field was selected from something that is not a message.
    NotAMessage {
        /// What the previous segment yields (`int32`, `repeated int32`, `map<string, Foo>`).
        found: String,
    },
    /// `[...]` was applied to something that is neither a repeated field nor a map.
    NotIndexable {
        /// What the previous segment yields.
        found: String,
    },
    /// `[...]` on a repeated field holds neither an integer nor `*`.
    BadIndex,
    /// `[...]` on a map holds no key of the map's key type (or is out of its range).
    BadKey {
        /// The map's key type.
        key_type: String,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seg = &self.segment;
        match &self.kind {
            PathErrorKind::Empty => return write!(f, "empty field path"),
            PathErrorKind::Syntax(expected) => {
                return write!(f, "invalid field path `{}`: expected {expected} at byte {}", self.path, self.offset)
            }
            PathErrorKind::UnknownField { message } => write!(f, "message type `{message}` has no field `{seg}`")?,
            PathErrorKind::UnknownNumber { message } => {
                write!(f, "message type `{message}` has no field number {}", &seg[1..])?
            }
            PathErrorKind::UnknownExtension { message } => {
                write!(f, "no extension `{}` extends message type `{message}`", &seg[1..seg.len() - 1])?
            }
            PathErrorKind::NotAMessage { found } => {
                write!(f, "`{seg}` selects a field, but this is {found}, not a message")?
            }
            PathErrorKind::NotIndexable { found } => {
                write!(f, "`{seg}` selects elements, but this is {found}, not a repeated field or map")?
            }
            PathErrorKind::BadIndex => {
                write!(f, "`{seg}` is not a list index (an integer, negative from the end, or `*`)")?
            }
            PathErrorKind::BadKey { key_type } => write!(
                f,
                "`{seg}` is not a key of this map (keys are {key_type}{})",
                if key_type == "string" { ", quoted" } else { "" }
            )?,
        }
        write!(f, " (segment `{seg}` of `{}`)", self.path)
    }
}

impl std::error::Error for PathError {}

/// A field type as `.proto` spells it (message and enum types by full name).
pub fn kind_name(kind: &Kind) -> String {
    match kind {
        Kind::Double => "double".into(),
        Kind::Float => "float".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Uint32 => "uint32".into(),
        Kind::Uint64 => "uint64".into(),
        Kind::Sint32 => "sint32".into(),
        Kind::Sint64 => "sint64".into(),
        Kind::Fixed32 => "fixed32".into(),
        Kind::Fixed64 => "fixed64".into(),
        Kind::Sfixed32 => "sfixed32".into(),
        Kind::Sfixed64 => "sfixed64".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "bytes".into(),
        Kind::Message(m) => m.full_name().into(),
        Kind::Enum(e) => e.full_name().into(),
    }
}

/// The grammar's scanner, shared by [`parse_path`] and `FieldPath`'s parse (which resolves
/// each segment as it scans it).
pub(super) struct Parser<'s> {
    pub(super) text: &'s str,
    pub(super) pos: usize,
}

impl<'s> Parser<'s> {
    pub(super) fn err(&self, offset: usize, segment: &str, kind: PathErrorKind) -> PathError {
        PathError { path: self.text.to_owned(), segment: segment.to_owned(), offset, kind }
    }

    pub(super) fn syntax(&self, expected: &'static str) -> PathError {
        let seg = self.text[self.pos..].chars().next().map(String::from).unwrap_or_default();
        self.err(self.pos, &seg, PathErrorKind::Syntax(expected))
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// A field segment: `name`, `#number` or `(extension)`. Returns its text.
    pub(super) fn field_segment(&mut self) -> Result<&'s str, PathError> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        match self.peek() {
            Some(b'#') => {
                self.pos += 1;
                while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    self.pos += 1;
                }
                if self.pos == start + 1 {
                    return Err(self.syntax("a field number after `#`"));
                }
            }
            Some(b'(') => match self.text[start..].find(')') {
                Some(end) if end > 1 => self.pos = start + end + 1,
                _ => {
                    self.pos += 1;
                    return Err(self.syntax("an extension name and `)`"));
                }
            },
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                while self.pos < bytes.len() && (bytes[self.pos].is_ascii_alphanumeric() || bytes[self.pos] == b'_') {
                    self.pos += 1;
                }
            }
            _ => return Err(self.syntax("a field name, `#number` or `(extension)`")),
        }
        Ok(&self.text[start..self.pos])
    }

    /// A `[...]` segment (at `[`): returns the segment text and its content (a string key
    /// unescaped, `Ok(None)` content for `*`).
    pub(super) fn bracket(&mut self) -> Result<(&'s str, usize, Selector), PathError> {
        let start = self.pos;
        self.pos += 1;
        let content = if self.peek() == Some(b'"') {
            self.pos += 1;
            let mut s = String::new();
            loop {
                let Some(c) = self.text[self.pos..].chars().next() else {
                    return Err(self.err(start, &self.text[start..], PathErrorKind::Syntax("a closing `\"`")));
                };
                self.pos += c.len_utf8();
                match c {
                    '"' => break,
                    '\\' => {
                        let Some(e) = self.text[self.pos..].chars().next() else {
                            return Err(self.err(start, &self.text[start..], PathErrorKind::Syntax("a closing `\"`")));
                        };
                        self.pos += e.len_utf8();
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '0' => '\0',
                            other => other,
                        });
                    }
                    c => s.push(c),
                }
            }
            Selector::Quoted(s)
        } else {
            let end = self.text[self.pos..].find(']').map(|i| self.pos + i);
            let Some(end) = end else {
                return Err(self.err(start, &self.text[start..], PathErrorKind::Syntax("a closing `]`")));
            };
            let raw = &self.text[self.pos..end];
            self.pos = end;
            if raw == "*" {
                Selector::All
            } else {
                Selector::Bare(raw.trim().to_owned())
            }
        };
        if self.peek() != Some(b']') {
            return Err(self.syntax("`]`"));
        }
        self.pos += 1;
        Ok((&self.text[start..self.pos], start, content))
    }
}

/// One segment of a field path, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSegment<'s> {
    /// A field: `name`, `#number` or `(extension)`.
    Field(FieldName<'s>),
    /// A `[...]` selector.
    Select(Selector),
}

/// How a path names a field (see [`find_field`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldName<'s> {
    /// A declared name, else a JSON name.
    Name(&'s str),
    /// `#number`: a field, else an extension, by number.
    Number(u32),
    /// `(full.name)`: an extension by full name (without the parentheses and a leading dot).
    Extension(&'s str),
}

/// What a `[...]` selector holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// `[*]`: every element or entry.
    All,
    /// `["..."]`: a string key, unescaped.
    Quoted(String),
    /// `[...]` unquoted: an index, or an integer or bool key (trimmed).
    Bare(String),
}

/// A segment of a parsed path with where it stands in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment<'s> {
    /// The segment.
    pub segment: PathSegment<'s>,
    /// Its text (`name`, `#7`, `(pkg.ext)`, `[2]`).
    pub text: &'s str,
    /// Byte offset of the text in the path.
    pub offset: usize,
}

/// Splits `path` into its segments, checking the syntax only (names are not looked up).
///
/// This is the one grammar every field path of protojit follows ([`FieldPath`], typed
/// handles, Arrow's `select`):
///
/// ```text
/// path     = field { "." field | "[" selector "]" }
/// field    = name | "#" number | "(" extension-full-name ")"
/// selector = index | key | "*"
/// ```
///
/// - `name`: a field name as declared (`snake_case`) or, if no field is declared so, its
///   JSON name (`lowerCamelCase`); `#7`: field number 7 (a field, else an extension);
///   `(pkg.ext)`: an extension of the message by full name (a leading dot is allowed).
/// - `[i]` on a repeated field: element `i`, counted from the end when negative (`[-1]` is
///   the last element).
/// - `[key]` on a map: the value for that key (the last entry with it): string keys quoted
///   (`["a b"]`, with `\"` and `\\` escapes), integer and bool keys bare (`[42]`, `[-1]`,
///   `[true]`).
/// - `[*]`: every element of a repeated field, every entry of a map (one per key, in wire
///   order). An entry is a message with fields `key` and `value`, so `m[*].key` and
///   `m[*].value` select them.
///
/// [`FieldPath`] takes the whole grammar; a typed handle (`Field`) a chain of fields
/// through singular messages (`a.b.c`, no selectors); Arrow's `select` a chain of fields
/// through singular or repeated messages. [`find_field`] finds the field a segment names.
pub fn parse_path(path: &str) -> Result<Vec<Segment<'_>>, PathError> {
    let mut p = Parser { text: path, pos: 0 };
    if path.is_empty() {
        return Err(p.err(0, "", PathErrorKind::Empty));
    }
    let mut out = Vec::new();
    loop {
        let offset = p.pos;
        let text = p.field_segment()?;
        out.push(Segment { segment: PathSegment::Field(field_name(text)), text, offset });
        while p.peek() == Some(b'[') {
            let (text, offset, content) = p.bracket()?;
            out.push(Segment { segment: PathSegment::Select(content), text, offset });
        }
        match p.peek() {
            None => return Ok(out),
            Some(b'.') => p.pos += 1,
            Some(_) => return Err(p.syntax("`.`, `[` or the end of the path")),
        }
    }
}

/// The [`FieldName`] of a field segment's text, as `Parser::field_segment` returned it.
pub(super) fn field_name(text: &str) -> FieldName<'_> {
    if let Some(n) = text.strip_prefix('#') {
        // Digits only (the syntax checked); too large for a field number: no field has it.
        FieldName::Number(n.parse().unwrap_or(u32::MAX))
    } else if let Some(name) = text.strip_prefix('(') {
        FieldName::Extension(name.trim_end_matches(')').trim_start_matches('.'))
    } else {
        FieldName::Name(text)
    }
}

/// The field or extension of `msg` that `name` names: by name, a declared name first,
/// then a JSON name; by number, a field first, then an extension; by full name, an
/// extension of `msg`.
pub fn find_field(msg: &MessageDescriptor, name: &FieldName<'_>) -> Option<SlotDescriptor> {
    match *name {
        FieldName::Number(n) => {
            msg.get_field(n).map(SlotDescriptor::Field).or_else(|| msg.get_extension(n).map(SlotDescriptor::Extension))
        }
        FieldName::Extension(full) => msg.extensions().find(|e| e.full_name() == full).map(SlotDescriptor::Extension),
        FieldName::Name(n) => {
            msg.get_field_by_name(n).or_else(|| msg.get_field_by_json_name(n)).map(SlotDescriptor::Field)
        }
    }
}
