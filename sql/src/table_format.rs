//! What a protobuf table is: [`ProtobufFormat`], the records' schema and message type, how they map to columns, how its files are compressed and how rows are written back.

use std::fmt;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use protojit::Schema;
use protojit_arrow::{ArrowOptions, ConvertPath, Converter};

/// A file format of varint-delimited records of one message type (scanned by the `FileFormat` in format.rs, written by the sink in sink.rs).
#[derive(Clone)]
pub struct ProtobufFormat {
    pub(crate) schema: Schema,
    pub(crate) message: String,
    pub(crate) options: ArrowOptions,
    pub(crate) arrow: SchemaRef,
    pub(crate) compression: FileCompressionType,
    pub(crate) writing: Writing,
}

/// How rows become messages when the format writes files (`COPY TO`, `INSERT INTO`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Writing {
    pub(crate) ignore_extra_columns: bool,
    pub(crate) allow_missing_columns: bool,
}

impl fmt::Debug for ProtobufFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufFormat")
            .field("message", &self.message)
            .field("compression", &self.compression)
            .finish()
    }
}

impl ProtobufFormat {
    /// Records of `message` in `schema`, mapped to columns by `options` (whose `select` must
    /// be `None`: scans select the columns their queries read).
    pub fn new(schema: &Schema, message: &str, options: &ArrowOptions) -> Result<ProtobufFormat, crate::SqlError> {
        if options.select.is_some() {
            return Err(crate::SqlError::Select);
        }
        // For the type's name and columns only (scans make their own converters): no
        // compiled appenders.
        let converter =
            Converter::new(schema, message, &ArrowOptions { path: ConvertPath::Chunked, ..options.clone() })?;
        Ok(ProtobufFormat {
            schema: schema.clone(),
            message: converter.decoder().descriptor().full_name().to_owned(),
            options: options.clone(),
            arrow: converter.arrow_schema().clone(),
            compression: FileCompressionType::UNCOMPRESSED,
            writing: Writing::default(),
        })
    }

    /// The same format writing rows whose columns are not fields (`ignore`), or skipping
    /// them with an error (the default); see [`Encoder::ignore_extra_columns`].
    pub fn with_ignore_extra_columns(mut self, ignore: bool) -> ProtobufFormat {
        self.writing.ignore_extra_columns = ignore;
        self
    }

    /// The same format writing rows that lack columns of fields the columns always carry,
    /// leaving those fields unset (`allow`); see [`Encoder::allow_missing_columns`].
    pub fn with_allow_missing_columns(mut self, allow: bool) -> ProtobufFormat {
        self.writing.allow_missing_columns = allow;
        self
    }

    /// Whether writing skips columns that are not fields ([`with_ignore_extra_columns`](Self::with_ignore_extra_columns)).
    pub fn ignores_extra_columns(&self) -> bool {
        self.writing.ignore_extra_columns
    }

    /// Whether writing leaves fields without a column unset ([`with_allow_missing_columns`](Self::with_allow_missing_columns)).
    pub fn allows_missing_columns(&self) -> bool {
        self.writing.allow_missing_columns
    }

    /// The same format for files compressed with `compression`.
    pub fn with_compression(mut self, compression: FileCompressionType) -> ProtobufFormat {
        self.compression = compression;
        self
    }

    /// The full name of the records' message type.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The table's Arrow schema (every field of the message type).
    pub fn arrow_schema(&self) -> &SchemaRef {
        &self.arrow
    }

    /// The schema the message type comes from.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// How records map to columns (`select` is always `None`).
    pub fn arrow_options(&self) -> &ArrowOptions {
        &self.options
    }
}
