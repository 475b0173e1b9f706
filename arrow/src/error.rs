//! Why a conversion fails: the converter's errors, and a record that does not decode.

use protojit::{DecodeError, SchemaError, Utf8Check};

use crate::framing::FramingError;
use protojit::delimited::StreamError;

/// Why one record could not be appended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The message does not decode (what is wrong, at which offset inside it).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Its schema-registry header is refused ([`Framing::SchemaRegistry`](crate::Framing)).
    #[error(transparent)]
    Framing(#[from] FramingError),
}

/// A record that did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("record {number}{}: {source}", .stream_offset.map(|o| format!(" (stream byte offset {o})")).unwrap_or_default())]
pub struct RecordError {
    /// Record number, from 1 (in its stream, slice or array).
    pub number: u64,
    /// Where the record starts in its delimited stream, if it came from one.
    pub stream_offset: Option<usize>,
    /// What is wrong, at which offset inside the record.
    pub source: AppendError,
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The message type is not in the schema (or is ambiguous).
    #[error(transparent)]
    Type(#[from] SchemaError),
    /// A projected schema could not be made.
    #[error("{0}")]
    Schema(String),
    /// A selected path does not name a field.
    #[error("cannot select `{path}`: {reason}")]
    Select {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A record does not decode.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// An entry of a binary array is null.
    #[error("record {number} is null")]
    NullRecord {
        /// Record number, from 1.
        number: u64,
    },
    /// A delimited stream does not split into records.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// The options ask the decoder not to check every string
    /// ([`ArrowOptions::decode`](crate::ArrowOptions::decode) with a UTF-8 policy other than
    /// [`Utf8Check::All`]): Arrow `Utf8` columns hold valid text only.
    #[error("Arrow string columns hold valid UTF-8 only: give ArrowOptions::decode the policy Utf8Check::All (EngineOptions::with_utf8), not {0:?}")]
    Utf8(Utf8Check),
    /// A batch could not be assembled (a bug: the builders keep Arrow's invariants).
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}
