//! [`ProtobufTable`]: a table of delimited records held in memory (a file read whole, Kafka batches, a buffer), split into byte-balanced partitions.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use protojit::Schema;
use protojit_arrow::{ArrowOptions, ConvertError, ConvertPath, Converter, DelimitedRecords, StreamError};

use crate::scan::RecordScanner;

/// Why a table could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a delimited stream.
    #[error("{path}: {source}")]
    Stream {
        /// The file.
        path: PathBuf,
        /// Where the framing breaks.
        source: StreamError,
    },
    /// The message type or the options do not map to Arrow.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// [`TableOptions::arrow`]`.select` was set: a table's columns are chosen per scan,
    /// from the query's projection.
    #[error("TableOptions::arrow.select must be None: each scan converts the columns its query reads")]
    Select,
}

/// How a [`ProtobufTable`] maps and scans.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Partitions a scan is split into (0: one per core).
    pub partitions: usize,
    /// Rows per batch.
    pub batch_size: usize,
    /// The Arrow mapping and the decoder's options. `select` must be `None` (else
    /// [`SqlError::Select`]): each scan selects the columns its query reads.
    pub arrow: ArrowOptions,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions { partitions: 0, batch_size: 8192, arrow: ArrowOptions::default() }
    }
}

/// A table of protobuf records of one message type, held in memory.
pub struct ProtobufTable {
    schema: Schema,
    message: String,
    arrow: SchemaRef,
    data: Buffer,
    /// Each record's byte range in `data`.
    records: Arc<[Range<usize>]>,
    options: TableOptions,
    name: String,
}

impl fmt::Debug for ProtobufTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufTable")
            .field("source", &self.name)
            .field("message", &self.message)
            .field("records", &self.records.len())
            .finish()
    }
}

impl ProtobufTable {
    /// The records of the delimited file at `path`, as rows of `message`.
    pub fn open(
        schema: &Schema,
        message: &str,
        path: impl AsRef<Path>,
        options: &TableOptions,
    ) -> Result<Self, SqlError> {
        let path = path.as_ref();
        let data = std::fs::read(path).map_err(|source| SqlError::Io { path: path.to_owned(), source })?;
        Self::new(schema, message, data, options, path.display().to_string())
    }

    /// The records of a delimited stream in memory.
    pub fn from_bytes(schema: &Schema, message: &str, data: Vec<u8>, options: &TableOptions) -> Result<Self, SqlError> {
        Self::new(schema, message, data, options, "<memory>".to_owned())
    }

    fn new(
        schema: &Schema,
        message: &str,
        data: Vec<u8>,
        options: &TableOptions,
        name: String,
    ) -> Result<Self, SqlError> {
        if options.arrow.select.is_some() {
            return Err(SqlError::Select);
        }
        let records = DelimitedRecords::new(&data)
            .map(|r| r.map(|r| r.offset..r.offset + r.bytes.len()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| SqlError::Stream { path: PathBuf::from(&name), source })?;
        let options = options.clone();
        // For the type's name and columns only (scans make their own converters): no
        // compiled appenders.
        let converter =
            Converter::new(schema, message, &ArrowOptions { path: ConvertPath::Chunked, ..options.arrow.clone() })?;
        let message = converter.decoder().descriptor().full_name().to_owned();
        Ok(ProtobufTable {
            schema: schema.clone(),
            message,
            arrow: converter.arrow_schema().clone(),
            data: Buffer::from_vec(data),
            records: records.into(),
            options,
            name,
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the table has no records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Contiguous ranges of record indexes with about equal bytes, at most `n` of them.
    fn split(&self, n: usize) -> Vec<Range<usize>> {
        let total: usize = self.records.iter().map(|r| r.len() + 1).sum();
        let per = total.div_ceil(n.max(1)).max(1);
        let mut parts = Vec::new();
        let (mut start, mut acc) = (0, 0);
        for (i, r) in self.records.iter().enumerate() {
            acc += r.len() + 1;
            if acc >= per {
                parts.push(start..i + 1);
                start = i + 1;
                acc = 0;
            }
        }
        if start < self.records.len() || parts.is_empty() {
            parts.push(start..self.records.len());
        }
        parts
    }
}

#[async_trait]
impl TableProvider for ProtobufTable {
    fn schema(&self) -> SchemaRef {
        self.arrow.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The row count is exact: the records were framed when the table was opened. (Column
    /// statistics are unknown; DataFusion 55 leaves this hook to downstream optimizer rules.)
    fn statistics(&self) -> Option<Statistics> {
        let mut stats = Statistics::new_unknown(&self.arrow);
        stats.num_rows = Precision::Exact(self.records.len());
        Some(stats)
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let (schema, select) = match projection {
            Some(p) => {
                let names = p.iter().map(|&i| self.arrow.field(i).name().clone()).collect();
                (Arc::new(self.arrow.project(p)?), Some(names))
            }
            None => (self.arrow.clone(), None),
        };
        let options = ArrowOptions { select, ..self.options.arrow.clone() };
        let converter = Converter::new(&self.schema, &self.message, &options)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let converter = Arc::new(converter);
        crate::paths::track(&converter);
        let scan = Arc::new(Scan {
            schema: schema.clone(),
            converter,
            data: self.data.clone(),
            records: self.records.clone(),
            batch_size: self.options.batch_size.max(1),
            source: self.name.clone(),
        });
        let n = match self.options.partitions {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let partitions = self
            .split(n)
            .into_iter()
            .map(|range| Arc::new(Partition { scan: scan.clone(), range }) as Arc<dyn PartitionStream>)
            .collect();
        Ok(Arc::new(StreamingTableExec::try_new(schema, partitions, None, Vec::new(), false, limit)?))
    }
}

/// What every partition of one scan shares.
struct Scan {
    schema: SchemaRef,
    converter: Arc<Converter>,
    data: Buffer,
    records: Arc<[Range<usize>]>,
    batch_size: usize,
    source: String,
}

/// One partition of a scan: a contiguous range of records.
struct Partition {
    scan: Arc<Scan>,
    range: Range<usize>,
}

impl fmt::Debug for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partition").field("source", &self.scan.source).field("records", &self.range).finish()
    }
}

impl PartitionStream for Partition {
    fn schema(&self) -> &SchemaRef {
        &self.scan.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let scan = &self.scan;
        let scanner = RecordScanner::from_records(
            scan.converter.clone(),
            scan.schema.clone(),
            scan.batch_size,
            scan.source.clone(),
            scan.data.clone(),
            &scan.records[self.range.clone()],
            self.range.start as u64 + 1,
        );
        let batches = Batches { scanner, done: false };
        Box::pin(RecordBatchStreamAdapter::new(self.scan.schema.clone(), futures::stream::iter(batches)))
    }
}

/// The batches of one partition, converted as the stream is polled (by the same scanner
/// as files' scans, so errors read the same).
struct Batches {
    scanner: RecordScanner,
    done: bool,
}

impl Iterator for Batches {
    type Item = DfResult<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.scanner.next_batch(true) {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(DataFusionError::External(Box::new(e))))
            }
        }
    }
}
