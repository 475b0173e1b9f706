//! [`ProtobufTable`]: a table of delimited records held in memory (a file read whole, Kafka batches, a buffer), scanned through [`ProtobufFormat`]'s `FileSource` as one file split into byte-balanced ranges.
//!
//! The records are framed once, when the table is opened. A scan is the same
//! `DataSourceExec` as a file's ([`ProtobufFormat::create_physical_plan`]): its file groups
//! are byte ranges of the one buffer, each starting at a record's length prefix, so each
//! partition owns whole records, as a range of a file does. The buffer and its record
//! index go with every range as a `PartitionedFile` extension ([`MemoryRecords`]): the
//! opener converts the range's records where they lie (no copy, no second framing), and
//! finds them by binary search when DataFusion splits the ranges further. The scan's
//! object store URL is [`MEMORY_URL`], whose store (registered empty) is never read: a
//! store holding each table's bytes would stay in the session's runtime, with the bytes,
//! after the table is dropped, since DataFusion keeps registered stores until the runtime
//! goes.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result as DfResult;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::object_store::memory::InMemory;
use datafusion::physical_plan::ExecutionPlan;
use protojit::Schema;
use protojit_arrow::{ArrowOptions, DelimitedRecords};

use crate::error::SqlError;
use crate::memory::MemoryRecords;
use crate::ProtobufFormat;

/// The object store URL of every [`ProtobufTable`]'s scans. Its store is empty: the records
/// reach the scan with its file ranges, not through the store.
pub(crate) const MEMORY_URL: &str = "protojit-memory://tables/";

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
    format: ProtobufFormat,
    memory: MemoryRecords,
    options: TableOptions,
}

impl fmt::Debug for ProtobufTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufTable")
            .field("source", &self.memory.name)
            .field("message", &self.format.message())
            .field("records", &self.memory.records.len())
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
        let format = ProtobufFormat::new(schema, message, &options.arrow)?;
        Ok(ProtobufTable {
            format,
            memory: MemoryRecords { name: name.into(), data: Buffer::from_vec(data), records: records.into() },
            options: options.clone(),
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.memory.records.len()
    }

    /// Whether the table has no records.
    pub fn is_empty(&self) -> bool {
        self.memory.records.is_empty()
    }

    /// Contiguous ranges of record indexes with about equal bytes, at most `n` of them.
    fn split(&self, n: usize) -> Vec<Range<usize>> {
        let records = &self.memory.records;
        let total: usize = records.iter().map(|r| r.len() + 1).sum();
        let per = total.div_ceil(n.max(1)).max(1);
        let mut parts = Vec::new();
        let (mut start, mut acc) = (0, 0);
        for (i, r) in records.iter().enumerate() {
            acc += r.len() + 1;
            if acc >= per {
                parts.push(start..i + 1);
                start = i + 1;
                acc = 0;
            }
        }
        if start < records.len() || parts.is_empty() {
            parts.push(start..records.len());
        }
        parts
    }

    /// Statistics of `rows` records: the row count is exact, as the records were framed
    /// when the table was opened (unknown under `explode`: a record gives a row per element).
    fn rows(&self, rows: usize) -> Statistics {
        let mut stats = Statistics::new_unknown(self.format.arrow_schema());
        if self.format.arrow_options().explode.is_none() {
            stats.num_rows = Precision::Exact(rows);
        }
        stats
    }
}

#[async_trait]
impl TableProvider for ProtobufTable {
    fn schema(&self) -> SchemaRef {
        self.format.arrow_schema().clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The row count is exact: the records were framed when the table was opened. (Column
    /// statistics are unknown; DataFusion 55 leaves this hook to downstream optimizer rules.)
    fn statistics(&self) -> Option<Statistics> {
        Some(self.rows(self.len()))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // DataFusion looks the scan's store up before opening its files: an empty one.
        let url = ObjectStoreUrl::parse(MEMORY_URL)?;
        let env = state.runtime_env();
        if env.object_store(&url).is_err() {
            env.register_object_store(url.as_ref(), Arc::new(InMemory::new()));
        }
        let n = match self.options.partitions {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let memory = &self.memory;
        let parts = self.split(n);
        let whole = parts.len() == 1;
        let groups = parts
            .into_iter()
            .map(|part| {
                let location = if memory.name.starts_with('<') { "memory" } else { &memory.name };
                let mut file = PartitionedFile::new(location, memory.data.len() as u64);
                if !whole {
                    // A range from the first record's length prefix to the next part's:
                    // exactly `part`'s records, by the same rule as a file's ranges.
                    let bytes = |i: usize| memory.prefix_start(i) as i64;
                    file = file.with_range(bytes(part.start), bytes(part.end));
                }
                let rows = Arc::new(self.rows(part.len()));
                FileGroup::new(vec![file.with_extension(memory.clone())]).with_statistics(rows)
            })
            .collect();
        let source = self.format.file_source(TableSchema::from(self.schema()));
        let conf = FileScanConfigBuilder::new(url, source)
            .with_file_groups(groups)
            .with_statistics(self.rows(self.len()))
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .with_batch_size(Some(self.options.batch_size.max(1)))
            .build();
        self.format.create_physical_plan(state, conf).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of 1, 3, 0 and 2 body bytes (prefixes at 0, 2, 6, 7; the end at 10).
    fn memory() -> MemoryRecords {
        MemoryRecords {
            name: "<memory>".into(),
            data: Buffer::from_vec(vec![0u8; 10]),
            records: vec![1..2, 3..6, 7..7, 8..10].into(),
        }
    }

    #[test]
    fn a_byte_range_owns_the_records_whose_prefix_starts_in_it() {
        let m = memory();
        assert_eq!(m.owned(None), 0..4);
        assert_eq!((0..=4).map(|i| m.prefix_start(i)).collect::<Vec<_>>(), [0, 2, 6, 7, 10]);
        for (bytes, owned) in [
            (0..10, 0..4),
            (0..1, 0..1),
            (1..2, 1..1),
            (1..3, 1..2),
            (2..7, 1..3),
            (6..7, 2..3),
            (7..10, 3..4),
            (8..10, 4..4),
            (10..10, 4..4),
        ] {
            assert_eq!(m.owned(Some(bytes.clone())), owned, "{bytes:?}");
        }
        // Any cut of the bytes into ranges owns each record once.
        for cut in 0..=10u64 {
            let (a, b) = (m.owned(Some(0..cut)), m.owned(Some(cut..10)));
            assert_eq!((a.start, a.end, b.end), (0, b.start, 4), "cut at {cut}");
        }
    }
}
