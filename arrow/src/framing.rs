//! Schema-registry framing of records (what Kafka's schema-registry serializers write): the header before each message, checked against the converter's message type and stripped.
//!
//! The header is a 0 byte, the schema id (4 bytes, big-endian), then the *message indexes*:
//! the path from the schema file's top-level message types to the record's type (an index
//! among the file's messages, then among that message's nested types, …), written as zigzag
//! varints, count first; the common case, the file's first message, is the single byte 0.
//! A record whose indexes name another type than the converter's is an error naming both: a
//! topic with several types needs one table per type.

use prost_reflect::{FileDescriptor, MessageDescriptor};
use protojit_arena::wire;

/// How each record is framed around its message's bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    /// The record is the message's bytes (the default).
    #[default]
    Bare,
    /// Schema-registry framing: the header (see the module docs) is checked and stripped.
    SchemaRegistry {
        /// A column of this name (`Int32`, never null), after the message's columns, holds
        /// each record's schema id; `None`: no such column.
        schema_id_column: Option<String>,
    },
}

/// Why a record's schema-registry header is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    /// Fewer bytes than the magic byte and the schema id.
    #[error("the record is {len} bytes, shorter than a schema-registry header (a 0 byte and a 4-byte schema id)")]
    Short {
        /// The record's length.
        len: usize,
    },
    /// The first byte is not 0.
    #[error("the record starts with byte {byte:#04x}, not the schema-registry magic byte 0x00")]
    Magic {
        /// The byte found.
        byte: u8,
    },
    /// The message-index list is cut or malformed.
    #[error("the schema-registry message indexes at byte {offset} are cut or malformed")]
    Indexes {
        /// Where in the record.
        offset: usize,
    },
    /// The indexes name another message type than the converter's.
    #[error("the record is framed as {found} (message indexes {indexes:?}), but its type here is {expected}")]
    OtherType {
        /// The type the indexes name in the expected type's file, or where they lead nowhere.
        found: String,
        /// The record's message indexes.
        indexes: Vec<i64>,
        /// The converter's message type.
        expected: String,
    },
}

/// The check one converter makes: its type's message indexes, and its file to name others.
#[derive(Clone, Debug)]
pub(crate) struct FramingCheck {
    expected: Vec<i64>,
    file: FileDescriptor,
    name: String,
    /// Whether batches carry a schema-id column.
    pub(crate) column: bool,
}

/// More indexes than any schema nests types: a list longer than this is malformed.
const MAX_INDEXES: u64 = 128;

impl FramingCheck {
    /// The check for records of `message` (from the schema before any pruning: pruning
    /// drops message types and would change the indexes).
    pub(crate) fn new(message: &MessageDescriptor, column: bool) -> FramingCheck {
        let mut expected = Vec::new();
        let mut m = message.clone();
        while let Some(parent) = m.parent_message() {
            let i = parent.child_messages().position(|c| c.full_name() == m.full_name());
            expected.push(i.expect("a message is among its parent's children") as i64);
            m = parent;
        }
        let i = m.parent_file().messages().position(|c| c.full_name() == m.full_name());
        expected.push(i.expect("a top-level message is among its file's") as i64);
        expected.reverse();
        FramingCheck { expected, file: message.parent_file(), name: message.full_name().to_owned(), column }
    }

    /// The schema id and the message's bytes of a framed `record`.
    pub(crate) fn strip<'r>(&self, record: &'r [u8]) -> Result<(i32, &'r [u8]), FramingError> {
        if record.len() < 5 {
            return Err(FramingError::Short { len: record.len() });
        }
        if record[0] != 0 {
            return Err(FramingError::Magic { byte: record[0] });
        }
        let id = i32::from_be_bytes([record[1], record[2], record[3], record[4]]);
        let mut at = 5;
        let count = wire::zigzag_decode64(read_varint(record, &mut at)?);
        let indexes = match count {
            // The file's first message type: one 0 byte instead of [1, 0].
            0 => vec![0],
            n if !(1..=MAX_INDEXES as i64).contains(&n) => return Err(FramingError::Indexes { offset: 5 }),
            n => (0..n)
                .map(|_| read_varint(record, &mut at).map(wire::zigzag_decode64))
                .collect::<Result<Vec<_>, _>>()?,
        };
        if indexes != self.expected {
            return Err(FramingError::OtherType {
                found: self.name_of(&indexes),
                indexes,
                expected: self.name.clone(),
            });
        }
        Ok((id, &record[at..]))
    }

    /// Appends the header of a record of this type with schema id `id`: what
    /// [`strip`](Self::strip) takes off.
    pub(crate) fn write_header(&self, id: i32, out: &mut Vec<u8>) {
        out.push(0);
        out.extend_from_slice(&id.to_be_bytes());
        if self.expected == [0] {
            out.push(0);
            return;
        }
        wire::write_varint(out, wire::zigzag_encode64(self.expected.len() as i64));
        for &i in &self.expected {
            wire::write_varint(out, wire::zigzag_encode64(i));
        }
    }

    /// The type `indexes` lead to in the expected type's file.
    fn name_of(&self, indexes: &[i64]) -> String {
        let nowhere = || format!("no message type of {}", self.file.name());
        let Some((&first, rest)) = indexes.split_first() else { return nowhere() };
        let Some(mut m) = usize::try_from(first).ok().and_then(|i| self.file.messages().nth(i)) else {
            return nowhere();
        };
        for &i in rest {
            match usize::try_from(i).ok().and_then(|i| m.child_messages().nth(i)) {
                Some(c) => m = c,
                None => return nowhere(),
            }
        }
        m.full_name().to_owned()
    }
}

/// The varint at `*at`, moving `*at` past it.
fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64, FramingError> {
    let (value, next) = wire::read_varint(bytes, *at).map_err(|_| FramingError::Indexes { offset: *at })?;
    *at = next;
    Ok(value)
}
