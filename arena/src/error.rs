//! The decode error: what went wrong and at which byte of the input.

use std::fmt;

/// Why an input is not a valid encoding of the message type.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeErrorKind {
    /// A tag or value runs past the end of its message.
    Truncated = 1,
    /// A length prefix points past the end of its message.
    LengthOutOfBounds = 2,
    /// A varint is longer than 10 bytes.
    VarintTooLong = 3,
    /// A tag carries field number 0.
    FieldNumberZero = 4,
    /// A tag carries wire type 6 or 7.
    InvalidWireType = 5,
    /// An end-group tag without a matching start-group tag.
    UnmatchedEndGroup = 6,
    /// A group is not closed before its enclosing message ends.
    UnterminatedGroup = 7,
    /// Messages and groups nest deeper than the decoder's depth limit.
    DepthLimitExceeded = 8,
    /// A `string` field whose features say VERIFY (proto3, editions by default) holds
    /// bytes that are not UTF-8.
    InvalidUtf8 = 9,
    /// A tag's field number does not fit protobuf's 29 bits.
    FieldNumberTooLarge = 10,
    /// The input is larger than a decoder addresses (4 GiB).
    InputTooLarge = 11,
    /// The decoder met a broken internal invariant: a protojit bug, reported instead of a
    /// crash (please report it with the input).
    Internal = 12,
    /// A tag is longer than 5 bytes (protobuf reads a tag as a 32-bit varint and rejects a
    /// longer one, even when its value is small).
    TagTooLong = 13,
}

impl DecodeErrorKind {
    /// A short description, as it appears in error messages.
    pub const fn describe(self) -> &'static str {
        match self {
            DecodeErrorKind::Truncated => "truncated value",
            DecodeErrorKind::LengthOutOfBounds => "length prefix past the end of the message",
            DecodeErrorKind::VarintTooLong => "varint longer than 10 bytes",
            DecodeErrorKind::FieldNumberZero => "field number 0",
            DecodeErrorKind::InvalidWireType => "invalid wire type",
            DecodeErrorKind::UnmatchedEndGroup => "end-group tag without a matching start-group",
            DecodeErrorKind::UnterminatedGroup => "group not closed before the end of its message",
            DecodeErrorKind::DepthLimitExceeded => "nesting deeper than the depth limit",
            DecodeErrorKind::InvalidUtf8 => "string field is not valid UTF-8",
            DecodeErrorKind::FieldNumberTooLarge => "field number larger than 536870911",
            DecodeErrorKind::InputTooLarge => "input larger than 4 GiB",
            DecodeErrorKind::Internal => "internal decoder error (a protojit bug; please report the input)",
            DecodeErrorKind::TagTooLong => "tag longer than 5 bytes",
        }
    }

    /// The kind for a raw code stored by compiled code, if valid.
    pub const fn from_code(code: u32) -> Option<DecodeErrorKind> {
        Some(match code {
            1 => DecodeErrorKind::Truncated,
            2 => DecodeErrorKind::LengthOutOfBounds,
            3 => DecodeErrorKind::VarintTooLong,
            4 => DecodeErrorKind::FieldNumberZero,
            5 => DecodeErrorKind::InvalidWireType,
            6 => DecodeErrorKind::UnmatchedEndGroup,
            7 => DecodeErrorKind::UnterminatedGroup,
            8 => DecodeErrorKind::DepthLimitExceeded,
            9 => DecodeErrorKind::InvalidUtf8,
            10 => DecodeErrorKind::FieldNumberTooLarge,
            11 => DecodeErrorKind::InputTooLarge,
            12 => DecodeErrorKind::Internal,
            13 => DecodeErrorKind::TagTooLong,
            _ => return None,
        })
    }
}

/// Malformed input: the kind of fault and the byte offset (from the start of the input)
/// where the offending tag or value begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub struct DecodeError {
    /// What is wrong.
    pub kind: DecodeErrorKind,
    /// Byte offset into the input.
    pub offset: usize,
}

impl DecodeError {
    /// An error of `kind` at `offset`.
    pub const fn new(kind: DecodeErrorKind, offset: usize) -> DecodeError {
        DecodeError { kind, offset }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte offset {}", self.kind.describe(), self.offset)
    }
}
