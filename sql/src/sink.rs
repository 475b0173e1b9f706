//! Writing protobuf files: `COPY (…) TO 'dir/' STORED AS PROTOBUF` and `INSERT INTO` a protobuf table, each file a varint-delimited stream of the rows as messages.
//!
//! [`ProtobufSink`] is DataFusion's `FileSink` for the format: DataFusion's demuxer splits
//! the rows over files (one per partition of the query, or per `PARTITIONED BY` value),
//! and each file's batches are turned into messages by a [`protojit_arrow::Encoder`] made
//! from the format's schema, type and mapping options (columns matched to fields by name;
//! the canonical encoding), compressed as the format's `compression` option says.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::runtime::SpawnedTask;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::write::demux::DemuxedStreamReceiver;
use datafusion::datasource::file_format::write::orchestration::spawn_writer_tasks_and_join;
use datafusion::datasource::file_format::write::BatchSerializer;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::physical_plan::{FileSink, FileSinkConfig};
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::object_store::ObjectStore;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, SendableRecordBatchStream};
use protojit_arrow::{EncodeError, Encoder};

use crate::table_format::ProtobufFormat;

/// Writes the rows DataFusion hands it as files of delimited messages (see the module docs).
pub struct ProtobufSink {
    config: FileSinkConfig,
    format: ProtobufFormat,
    encoder: Encoder,
}

impl ProtobufSink {
    /// A sink writing where `config` says, each row a message of `format`'s type (mapped by
    /// its options, compressed as it says). Fails when the type cannot be written from
    /// columns mapped so.
    pub fn new(config: FileSinkConfig, format: ProtobufFormat) -> Result<ProtobufSink, EncodeError> {
        let encoder = Encoder::new(format.schema(), format.message(), format.arrow_options())?
            .ignore_extra_columns(format.ignores_extra_columns())
            .allow_missing_columns(format.allows_missing_columns());
        Ok(ProtobufSink { config, format, encoder })
    }

    /// The format the files are written in.
    pub fn format(&self) -> &ProtobufFormat {
        &self.format
    }
}

impl fmt::Debug for ProtobufSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufSink")
            .field("message", &self.encoder.message_type())
            .field("url", &self.config.original_url)
            .finish()
    }
}

impl DisplayAs for ProtobufSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, "ProtobufSink(message={}, url={})", self.encoder.message_type(), self.config.original_url)
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "format: protobuf")?;
                writeln!(f, "message: {}", self.encoder.message_type())?;
                write!(f, "file: {}", self.config.original_url)
            }
        }
    }
}

/// One batch's rows as delimited messages.
struct Serializer(Encoder);

impl BatchSerializer for Serializer {
    fn serialize(&self, batch: RecordBatch, _initial: bool) -> DfResult<bytes::Bytes> {
        let mut out = Vec::new();
        self.0.encode_delimited(&batch, &mut out).map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(out.into())
    }
}

#[async_trait]
impl FileSink for ProtobufSink {
    fn config(&self) -> &FileSinkConfig {
        &self.config
    }

    async fn spawn_writer_tasks_and_join(
        &self,
        context: &Arc<TaskContext>,
        demux_task: SpawnedTask<DfResult<()>>,
        file_stream_rx: DemuxedStreamReceiver,
        object_store: Arc<dyn ObjectStore>,
    ) -> DfResult<u64> {
        let serializer = Arc::new(Serializer(self.encoder.clone()));
        let compression = self.format.compression_type().unwrap_or(FileCompressionType::UNCOMPRESSED);
        spawn_writer_tasks_and_join(context, serializer, compression, None, object_store, demux_task, file_stream_rx)
            .await
    }
}

#[async_trait]
impl DataSink for ProtobufSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(&self, data: SendableRecordBatchStream, context: &Arc<TaskContext>) -> DfResult<u64> {
        FileSink::write_all(self, data, context).await
    }
}
