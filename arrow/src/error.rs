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
    /// A column the mapping options add would have the name of another column of the same
    /// struct (a `<oneof>_case` column named like a field; under
    /// [`ArrowOptions::flatten`](crate::ArrowOptions::flatten), the schema-id column named
    /// like a flattened column).
    #[error("column `{column}` of {message}: {why}")]
    ColumnName {
        /// The column's name (its path under flattening).
        column: String,
        /// The message type whose columns it is among.
        message: String,
        /// What it clashes with.
        why: String,
    },
    /// [`ArrowOptions::explode`](crate::ArrowOptions::explode)'s path does not lead to a
    /// repeated field among the converter's columns.
    #[error("cannot explode `{path}`: {why}")]
    Explode {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// A batch could not be assembled (a bug: the builders keep Arrow's invariants).
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// Why a record batch could not be encoded into protobuf messages
/// ([`Encoder`](crate::Encoder)). Rows are indexes into the batch, from 0.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The message type is not in the schema (or is ambiguous).
    #[error(transparent)]
    Type(#[from] SchemaError),
    /// The mapping asked for cannot be turned back into messages.
    #[error("{what} cannot be encoded back into messages: {why}")]
    NotInvertible {
        /// The option.
        what: String,
        /// Why not, and what to do.
        why: String,
    },
    /// A message's JSON text (a column of [`AnyColumns::Json`](crate::AnyColumns::Json))
    /// does not parse as that message.
    #[error("column `{column}`, row {row}: {why}")]
    Json {
        /// The column (its path).
        column: String,
        /// The row.
        row: usize,
        /// The parser's message.
        why: String,
    },
    /// A column names no field.
    #[error("column `{column}` names no field of {message}: drop it, or ignore extra columns")]
    ExtraColumn {
        /// The column's path.
        column: String,
        /// The message type whose fields were looked in.
        message: String,
    },
    /// A field's column is missing where it must be there.
    #[error("column `{column}` (a field of {message}) is missing: {why}")]
    MissingColumn {
        /// The column's path.
        column: String,
        /// The message type.
        message: String,
        /// Why it must be there.
        why: String,
    },
    /// A column's type cannot hold the field's values.
    #[error("column `{column}` is {found}, which cannot hold {expected}")]
    ColumnType {
        /// The column's path.
        column: String,
        /// What the field needs.
        expected: String,
        /// The column's type.
        found: arrow_schema::DataType,
    },
    /// A value does not fit the field's type.
    #[error("column `{column}`, row {row}: {value} is out of range for {kind}")]
    OutOfRange {
        /// The column's path.
        column: String,
        /// The row.
        row: usize,
        /// The value.
        value: String,
        /// The field's type.
        kind: String,
    },
    /// A required field (or the schema id of a framed record) is null.
    #[error("column `{column}`, row {row}: null in a required field")]
    NullInRequired {
        /// The column's path.
        column: String,
        /// The row.
        row: usize,
    },
    /// An item of a list is null: protobuf lists hold no nulls.
    #[error("column `{column}`, row {row}: a list item is null (protobuf lists hold no nulls)")]
    NullItem {
        /// The column's path.
        column: String,
        /// The row.
        row: usize,
    },
    /// An enum column's value names no value of the enum (or a closed enum's number is
    /// not declared).
    #[error("column `{column}`, row {row}: {value} is not a value of enum {enum_name}")]
    UnknownEnumValue {
        /// The column's path.
        column: String,
        /// The row.
        row: usize,
        /// The value as the column holds it.
        value: String,
        /// The enum.
        enum_name: String,
    },
    /// Two members of one oneof are set in one row.
    #[error("row {row}: `{first}` and `{second}` are both set, but oneof {oneof} holds one member")]
    OneofConflict {
        /// The oneof's name.
        oneof: String,
        /// The row.
        row: usize,
        /// The first member set (its column's path).
        first: String,
        /// The second.
        second: String,
    },
    /// The messages outgrow a `BinaryArray` (2 GiB).
    #[error("row {row}: the messages pass 2 GiB, more than a BinaryArray holds; encode smaller batches")]
    TooLarge {
        /// The row that passed the limit.
        row: usize,
    },
}

impl EncodeError {
    pub(crate) fn column_type(column: &str, expected: &str, found: &arrow_schema::DataType) -> EncodeError {
        EncodeError::ColumnType { column: column.to_owned(), expected: expected.to_owned(), found: found.clone() }
    }
}
