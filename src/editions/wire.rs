//! The protobuf wire as the editions loader walks it: a reader that yields each field with its raw bytes, the few writers the lowering needs, and descriptor.proto's field numbers.

use super::error::EditionsError;

#[derive(Clone, Copy)]
pub(super) enum Value<'a> {
    Varint(u64),
    Len(&'a [u8]),
    Other,
}

#[derive(Clone, Copy)]
pub(super) struct Field<'a> {
    pub(super) number: u64,
    pub(super) value: Value<'a>,
    /// The whole field, tag included, to copy it unchanged.
    pub(super) raw: &'a [u8],
}

pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    #[inline]
    pub(super) fn varint(&mut self) -> Option<u64> {
        // Tags, lengths and enum values in descriptors are nearly always one byte.
        let &b = self.buf.get(self.pos)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// The next field; `file` names the file in the error when the bytes break.
    #[inline]
    pub(super) fn next<'f>(&mut self, file: Option<&'f str>) -> Result<Option<Field<'a>>, Broken<'f>> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let start = self.pos;
        let Some(key) = self.varint() else { return Err(broken("a truncated tag", file, start)) };
        let number = key >> 3;
        if number == 0 {
            return Err(broken("field number 0", file, start));
        }
        let value = match key & 7 {
            0 => match self.varint() {
                Some(v) => Value::Varint(v),
                None => return Err(broken("a truncated varint", file, start)),
            },
            2 => {
                let len = self.varint().unwrap_or(u64::MAX);
                if len > (self.buf.len() - self.pos) as u64 {
                    return Err(broken("a length past the end", file, start));
                }
                let v = &self.buf[self.pos..self.pos + len as usize];
                self.pos += len as usize;
                Value::Len(v)
            }
            w @ (1 | 5) => {
                let n = if w == 1 { 8 } else { 4 };
                if self.buf.len() - self.pos < n {
                    return Err(broken("a truncated fixed-width value", file, start));
                }
                self.pos += n;
                Value::Other
            }
            3 => {
                if self.skip_group(number).is_none() {
                    return Err(broken("an unterminated group", file, start));
                }
                Value::Other
            }
            _ => return Err(broken("a bad wire type", file, start)),
        };
        Ok(Some(Field { number, value, raw: &self.buf[start..self.pos] }))
    }

    fn skip_group(&mut self, number: u64) -> Option<()> {
        loop {
            let key = self.varint()?;
            match key & 7 {
                0 => drop(self.varint()?),
                1 => self.pos = self.pos.checked_add(8).filter(|&p| p <= self.buf.len())?,
                5 => self.pos = self.pos.checked_add(4).filter(|&p| p <= self.buf.len())?,
                2 => {
                    let len = usize::try_from(self.varint()?).ok()?;
                    self.pos = self.pos.checked_add(len).filter(|&p| p <= self.buf.len())?;
                }
                3 => self.skip_group(key >> 3)?,
                4 if key >> 3 == number => return Some(()),
                _ => return None,
            }
        }
    }
}

/// Where the bytes broke: small, so the reader's hot path returns little.
#[derive(Clone, Copy)]
pub(super) struct Broken<'f> {
    what: &'static str,
    file: Option<&'f str>,
    at: usize,
}

#[cold]
pub(super) fn broken<'f>(what: &'static str, file: Option<&'f str>, at: usize) -> Broken<'f> {
    Broken { what, file, at }
}

impl From<Broken<'_>> for EditionsError {
    #[cold]
    fn from(b: Broken<'_>) -> Self {
        let Broken { what, file, at } = b;
        EditionsError::Malformed {
            what: match file {
                Some(f) => format!("{what} in file `{f}` at byte {at} of its element"),
                None => format!("{what} at byte {at}"),
            },
        }
    }
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_len(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, number << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub(super) fn put_uint(out: &mut Vec<u8>, number: u64, v: u64) {
    put_varint(out, number << 3);
    put_varint(out, v);
}

/// Every field of `bytes`, or the error naming `file`.
pub(super) fn fields<'a>(bytes: &'a [u8], file: &str) -> Result<Vec<Field<'a>>, EditionsError> {
    let mut r = Reader::new(bytes);
    let mut v = Vec::with_capacity(8 + bytes.len() / 32);
    while let Some(f) = r.next(Some(file))? {
        v.push(f);
    }
    Ok(v)
}

pub(super) fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, EditionsError> {
    std::str::from_utf8(bytes)
        .map_err(|_| EditionsError::Malformed { what: format!("a name that is not UTF-8 in file `{file}`") })
}

pub(super) fn file_has(file: &[u8], number: u64) -> bool {
    let mut r = Reader::new(file);
    while let Ok(Some(f)) = r.next(None) {
        if f.number == number {
            return true;
        }
    }
    false
}

pub(super) fn is_map_entry_options(options: &[u8], file: &str) -> Result<bool, EditionsError> {
    let mut r = Reader::new(options);
    let mut entry = false;
    while let Some(f) = r.next(Some(file))? {
        if let (tag::MSG_MAP_ENTRY, Value::Varint(v)) = (f.number, f.value) {
            entry = v != 0;
        }
    }
    Ok(entry)
}

/// The name of a nested message if it is a map entry.
pub(super) fn map_entry_name<'a>(msg: &'a [u8], file: &str) -> Result<Option<&'a str>, EditionsError> {
    let (mut name, mut entry) = ("", false);
    let mut r = Reader::new(msg);
    while let Some(f) = r.next(Some(file))? {
        match (f.number, f.value) {
            (tag::MSG_NAME, Value::Len(v)) => name = utf8(v, file)?,
            (tag::MSG_OPTIONS, Value::Len(v)) => entry = is_map_entry_options(v, file)?,
            _ => {}
        }
    }
    Ok(entry.then_some(name))
}

pub(super) mod tag {
    pub(crate) const FILE_NAME: u64 = 1;
    pub(crate) const FILE_PACKAGE: u64 = 2;
    pub(crate) const FILE_MESSAGE: u64 = 4;
    pub(crate) const FILE_ENUM: u64 = 5;
    pub(crate) const FILE_SERVICE: u64 = 6;
    pub(crate) const FILE_EXTENSION: u64 = 7;
    pub(crate) const FILE_OPTIONS: u64 = 8;
    pub(crate) const FILE_SYNTAX: u64 = 12;
    pub(crate) const FILE_EDITION: u64 = 14;
    pub(crate) const MSG_NAME: u64 = 1;
    pub(crate) const MSG_FIELD: u64 = 2;
    pub(crate) const MSG_NESTED: u64 = 3;
    pub(crate) const MSG_ENUM: u64 = 4;
    pub(crate) const MSG_EXTENSION_RANGE: u64 = 5;
    pub(crate) const MSG_EXTENSION: u64 = 6;
    pub(crate) const MSG_OPTIONS: u64 = 7;
    pub(crate) const MSG_ONEOF: u64 = 8;
    pub(crate) const FIELD_NAME: u64 = 1;
    pub(crate) const FIELD_NUMBER: u64 = 3;
    pub(crate) const FIELD_LABEL: u64 = 4;
    pub(crate) const FIELD_TYPE: u64 = 5;
    pub(crate) const FIELD_TYPE_NAME: u64 = 6;
    pub(crate) const FIELD_OPTIONS: u64 = 8;
    pub(crate) const FIELD_ONEOF_INDEX: u64 = 9;
    pub(crate) const ONEOF_OPTIONS: u64 = 2;
    pub(crate) const RANGE_OPTIONS: u64 = 3;
    pub(crate) const ENUM_NAME: u64 = 1;
    pub(crate) const ENUM_VALUE: u64 = 2;
    pub(crate) const ENUM_OPTIONS: u64 = 3;
    pub(crate) const VALUE_NAME: u64 = 1;
    pub(crate) const VALUE_OPTIONS: u64 = 3;
    pub(crate) const SERVICE_METHOD: u64 = 2;
    pub(crate) const SERVICE_OPTIONS: u64 = 3;
    pub(crate) const METHOD_OPTIONS: u64 = 4;
    /// `features` in each options message: they differ per message.
    pub(crate) const FILE_FEATURES: u64 = 50;
    pub(crate) const RANGE_FEATURES: u64 = 50;
    pub(crate) const MSG_FEATURES: u64 = 12;
    pub(crate) const MSG_MAP_ENTRY: u64 = 7;
    pub(crate) const FIELD_FEATURES: u64 = 21;
    pub(crate) const FIELD_PACKED: u64 = 2;
    pub(crate) const ONEOF_FEATURES: u64 = 1;
    pub(crate) const ENUM_FEATURES: u64 = 7;
    pub(crate) const VALUE_FEATURES: u64 = 2;
    pub(crate) const SERVICE_FEATURES: u64 = 34;
    pub(crate) const METHOD_FEATURES: u64 = 35;
    pub(crate) const LABEL_OPTIONAL: u64 = 1;
    pub(crate) const LABEL_REQUIRED: u64 = 2;
    pub(crate) const LABEL_REPEATED: u64 = 3;
    pub(crate) const TYPE_GROUP: u64 = 10;
    pub(crate) const TYPE_MESSAGE: u64 = 11;
}
