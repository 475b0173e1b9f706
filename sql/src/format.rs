//! DataFusion's file format for files of varint-delimited protobuf records: `ListingTable`s over files, directories and globs, and `CREATE EXTERNAL TABLE … STORED AS PROTOBUF`.
//!
//! [`ProtobufFormat`] is a `FileFormat`: its schema comes from a message type, not from the
//! files; each file is scanned as a stream from DataFusion's `ObjectStore` (any registered
//! store: local files, S3, GCS), one bounded chunk at a time ([`RecordScanner`]), so memory
//! does not grow with the file. Many files are spread over the session's partitions, and
//! DataFusion may split an uncompressed file into byte ranges (it balances partitions by
//! size): a range owns the records whose length prefix starts in it. protobuf has no sync
//! marker to find the next record from an arbitrary byte, so the range's scan reads the
//! file from its start and walks the length prefixes up to the range (framing only, about
//! 5 GB/s from the page cache) — exact, never a resynchronisation guess — then converts its
//! records and stops reading after them. Compressed files are never split.
//!
//! Each partition of a scan converts with a converter of its own, and counts which path
//! filled its columns as metrics of the scan (`crate::paths`). A
//! [`ProtobufTable`](crate::ProtobufTable)'s records in memory are scanned here too: their
//! ranges carry the records (`crate::table::MemoryRecords`), which the opener converts in
//! place.
//!
//! Registered in a session with [`register_protobuf_format`]; the SQL options are listed
//! on [`ProtobufFormatFactory`].

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSinkConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::CreateExternalTable;
use datafusion::object_store::{GetOptions, GetResultPayload, ObjectMeta, ObjectStore};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::projection::ProjectionExprs;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan, PhysicalExpr};
use futures::{Stream, StreamExt, TryStreamExt};
use protojit::compression::{decompressed, Compression};
use protojit::Schema;
use protojit_arrow::{ArrowOptions, Converter, Framing};

use crate::memory::MemoryRecords;
use crate::paths::PathMetrics;
use crate::scan::{RecordScanner, ScanError};
use crate::sink::ProtobufSink;
use crate::table_format::ProtobufFormat;

/// The name of the format in `STORED AS PROTOBUF` (and the extension of a single file's
/// name that selects it when `STORED AS` is left out).
pub const FORMAT_NAME: &str = "protobuf";

/// Bytes read from a local file at a time.
const READ_CHUNK: usize = 1 << 20;

/// Whether `name` is a mapping option a protobuf table takes: the mapping options, and the
/// others (`'explode' 'path'`, `'explode_outer' 'path'`: a row per element of a repeated field;
/// `'extensions' 'true'`).
fn mapping_option(name: &str) -> bool {
    ArrowOptions::MAPPING_OPTIONS.contains(&name) || ArrowOptions::OTHER_OPTIONS.contains(&name)
}

/// Options of a protobuf table, as `CREATE EXTERNAL TABLE … OPTIONS (…)` gives them (keys
/// with or without DataFusion's `format.` prefix).
const OPTIONS: &[(&str, &str)] = &[
    ("message_type", "the message type of every record (full name, or a unique short name)"),
    ("descriptor_set", "a FileDescriptorSet file (protoc --descriptor_set_out), or several, comma-separated"),
    ("proto", "one or more .proto files, comma-separated"),
    ("proto_path", "directories imports are found in for `proto`, comma-separated (default: each file's own)"),
    ("compression", "GZIP, ZSTD, BZIP2 or XZ for every file; without it (or UNCOMPRESSED), each file as its name (.gz .zst .bz2 .xz) or first bytes say"),
    ("framing", "'none' (the default) or 'schema_registry': each record carries Kafka's schema-registry header"),
    ("schema_id_column", "with schema_registry framing: a column of this name holds each record's schema id"),
    ("ignore_extra_columns", "writing: 'true' skips columns that are not fields of the message type (default: an error)"),
    ("allow_missing_columns", "writing: 'true' leaves fields without a column unset (default: an error for fields the columns always carry)"),
];

impl ProtobufFormat {
    /// The format a scan's `FileSource` reads, when it is this format's source (`None` for
    /// other sources), so that plan serializers can carry it to other processes.
    pub fn of_source(source: &dyn FileSource) -> Option<&ProtobufFormat> {
        source.downcast_ref::<ProtobufSource>()?.format.as_deref()
    }
}

#[async_trait]
impl FileFormat for ProtobufFormat {
    fn get_ext(&self) -> String {
        FORMAT_NAME.to_owned()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> DfResult<String> {
        Ok(format!("{FORMAT_NAME}{}", compression.get_ext()))
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        Some(self.compression)
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> DfResult<SchemaRef> {
        // The schema is the message type's; files carry none of their own.
        Ok(self.arrow.clone())
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> DfResult<Statistics> {
        // A file's row count is known only after reading all of it.
        Ok(Statistics::new_unknown(&table_schema))
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        conf: FileScanConfig,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let conf = FileScanConfigBuilder::from(conf).with_file_compression_type(self.compression).build();
        Ok(DataSourceExec::from_data_source(conf))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if conf.insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{:?} into a protobuf table: only appending (INSERT INTO, COPY TO) is supported",
                conf.insert_op
            )));
        }
        let sink = ProtobufSink::new(conf, self.clone()).map_err(|e| DataFusionError::Plan(e.to_string()))?;
        let sink = Arc::new(sink);
        Ok(Arc::new(DataSinkExec::new(input, sink, order_requirements)))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(ProtobufSource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            format: Some(Arc::new(self.clone())),
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

/// Makes [`ProtobufFormat`]s from `CREATE EXTERNAL TABLE` options (and `COPY`'s).
///
/// | option | meaning |
/// |---|---|
/// | `message_type` | the message type of every record (full name, or a unique short name); required |
/// | `descriptor_set` | FileDescriptorSet file(s), comma-separated |
/// | `proto` | `.proto` file(s), comma-separated |
/// | `proto_path` | import directories for `proto`, comma-separated |
/// | `compression` | `GZIP`, `ZSTD`, `BZIP2`, `XZ` for every file; none (or `UNCOMPRESSED`, the default): each file as its name (`.gz` `.zst` `.bz2` `.xz`) or first bytes say |
/// | `framing` | `none` (default) or `schema_registry` (Kafka's header before each message, checked and stripped) |
/// | `schema_id_column` | with `schema_registry`: a column of this name holds each record's schema id |
///
/// Keys may carry DataFusion's `format.` prefix. One of `descriptor_set` and `proto` is
/// required unless the factory was made [`with_schema`](Self::with_schema), in which case
/// they are refused (one schema per session keeps type names unambiguous).
#[derive(Clone)]
pub struct ProtobufFormatFactory {
    schema: Option<Schema>,
    options: ArrowOptions,
    /// Table options bound to the factory, under those a statement gives
    /// ([`with_table_options`](Self::with_table_options)).
    bound: HashMap<String, String>,
}

impl fmt::Debug for ProtobufFormatFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufFormatFactory").field("schema", &self.schema.is_some()).finish()
    }
}

impl Default for ProtobufFormatFactory {
    fn default() -> Self {
        ProtobufFormatFactory::new()
    }
}

impl ProtobufFormatFactory {
    /// A factory whose tables name their schema in their options.
    pub fn new() -> ProtobufFormatFactory {
        ProtobufFormatFactory { schema: None, options: ArrowOptions::default(), bound: HashMap::new() }
    }

    /// A factory whose tables' types come from `schema`.
    pub fn with_schema(schema: Schema) -> ProtobufFormatFactory {
        ProtobufFormatFactory { schema: Some(schema), options: ArrowOptions::default(), bound: HashMap::new() }
    }

    /// The same factory with `options` (as `OPTIONS (…)` gives them) bound: the formats it
    /// makes take them, under the options of the statement that asks. A `COPY … TO …
    /// STORED AS PROTOBUF OPTIONS (…)` carries its options so to where it is planned
    /// (the `sql` command's `run_statements` binds them), since DataFusion's plan serializer
    /// keeps a format's factory but not the statement's options.
    pub fn with_table_options(mut self, options: HashMap<String, String>) -> ProtobufFormatFactory {
        self.bound = options;
        self
    }

    /// The table options bound by [`with_table_options`](Self::with_table_options).
    pub fn table_options(&self) -> &HashMap<String, String> {
        &self.bound
    }

    /// The schema its tables' types come from, if it was made [`with_schema`](Self::with_schema).
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// The same factory mapping columns by `options` (`select` must be `None`).
    pub fn with_arrow_options(mut self, options: ArrowOptions) -> ProtobufFormatFactory {
        self.options = options;
        self
    }

    fn format(&self, options: &HashMap<String, String>) -> Result<ProtobufFormat, String> {
        let mut given: HashMap<&str, &str> = HashMap::new();
        for (key, value) in self.bound.iter().chain(options) {
            let name = key.strip_prefix("format.").unwrap_or(key);
            if name.starts_with("execution.") || name == "single_file_output" {
                // `COPY`'s own options (`execution.keep_partition_by_columns`), which
                // DataFusion hands every format along with the format's.
                continue;
            }
            if !OPTIONS.iter().any(|(k, _)| *k == name) && !mapping_option(name) {
                let known = OPTIONS.iter().map(|(k, v)| format!("'{k}' ({v})")).collect::<Vec<_>>().join(", ");
                let mapping = ArrowOptions::MAPPING_OPTIONS
                    .iter()
                    .chain(&ArrowOptions::OTHER_OPTIONS)
                    .map(|k| format!("'{k}'"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(format!(
                    "unknown option '{key}'; a protobuf table takes {known}, and the mapping options {mapping}"
                ));
            }
            given.insert(name, value.as_str());
        }
        let Some(message) = given.get("message_type") else {
            return Err("a protobuf table needs OPTIONS ('message_type' 'pkg.Message')".into());
        };
        let list = |v: &str| {
            v.split(',').map(|s| PathBuf::from(s.trim())).filter(|p| !p.as_os_str().is_empty()).collect::<Vec<_>>()
        };
        let schema = match (&self.schema, given.get("descriptor_set"), given.get("proto")) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(
                    "this session has one schema for protobuf tables; 'descriptor_set' and 'proto' are not taken"
                        .into(),
                )
            }
            (Some(schema), None, None) => schema.clone(),
            (None, Some(_), Some(_)) => return Err("give 'descriptor_set' or 'proto', not both".into()),
            (None, Some(sets), None) => Schema::from_descriptor_set_files(&list(sets)).map_err(|e| e.to_string())?,
            (None, None, Some(files)) => {
                let includes = given.get("proto_path").map(|p| list(p)).unwrap_or_default();
                Schema::from_proto_files(&list(files), &includes).map_err(|e| e.to_string())?
            }
            (None, None, None) => {
                return Err(
                    "a protobuf table needs its schema: OPTIONS ('descriptor_set' 'schema.pb') or ('proto' 'a.proto')"
                        .into(),
                )
            }
        };
        let compression = match given.get("compression") {
            None => FileCompressionType::UNCOMPRESSED,
            Some(c) => c.parse::<FileCompressionType>().map_err(|e| e.to_string())?,
        };
        if compression.is_compressed() && !cfg!(feature = "compression") {
            return Err(format!(
                "'compression' '{}': this build reads uncompressed files only (build protojit-sql with its `compression` feature)",
                given["compression"]
            ));
        }
        let framing =
            match (given.get("framing").map(|f| f.to_ascii_lowercase()).as_deref(), given.get("schema_id_column")) {
                (None | Some("none"), None) => Framing::Bare,
                (Some("schema_registry"), column) => {
                    Framing::SchemaRegistry { schema_id_column: column.map(|c| c.to_string()) }
                }
                (None | Some("none"), Some(_)) => {
                    return Err("'schema_id_column' needs 'framing' 'schema_registry'".into())
                }
                (Some(other), _) => return Err(format!("'framing' '{other}': expected 'none' or 'schema_registry'")),
            };
        let flag = |name: &str| match given.get(name).map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(other) => Err(format!("'{name}' '{other}': expected 'true' or 'false'")),
        };
        let (ignore_extra_columns, allow_missing_columns) =
            (flag("ignore_extra_columns")?, flag("allow_missing_columns")?);
        let mut options = ArrowOptions { framing, ..self.options.clone() };
        for key in ArrowOptions::MAPPING_OPTIONS.iter().chain(&ArrowOptions::OTHER_OPTIONS) {
            if let Some(value) = given.get(key) {
                options.set(key, value)?;
            }
        }
        Ok(ProtobufFormat::new(&schema, message, &options)
            .map_err(|e| e.to_string())?
            .with_compression(compression)
            .with_ignore_extra_columns(ignore_extra_columns)
            .with_allow_missing_columns(allow_missing_columns))
    }
}

impl GetExt for ProtobufFormatFactory {
    fn get_ext(&self) -> String {
        FORMAT_NAME.to_owned()
    }
}

impl FileFormatFactory for ProtobufFormatFactory {
    fn create(&self, _state: &dyn Session, options: &HashMap<String, String>) -> DfResult<Arc<dyn FileFormat>> {
        self.format(options).map(|f| Arc::new(f) as Arc<dyn FileFormat>).map_err(DataFusionError::Configuration)
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        // DataFusion asks for a format without options only to guess one from a file's
        // extension or to write files; a protobuf table cannot exist without its message
        // type, so this one fails, saying so, when it is planned.
        Arc::new(UnconfiguredFormat)
    }
}

/// What [`ProtobufFormatFactory`] hands out when asked for a format without options.
#[derive(Debug)]
struct UnconfiguredFormat;

#[async_trait]
impl FileFormat for UnconfiguredFormat {
    fn get_ext(&self) -> String {
        FORMAT_NAME.to_owned()
    }
    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> DfResult<String> {
        Ok(format!("{FORMAT_NAME}{}", compression.get_ext()))
    }
    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }
    async fn infer_schema(&self, _: &dyn Session, _: &Arc<dyn ObjectStore>, _: &[ObjectMeta]) -> DfResult<SchemaRef> {
        Err(unconfigured())
    }
    async fn infer_stats(
        &self,
        _: &dyn Session,
        _: &Arc<dyn ObjectStore>,
        _: SchemaRef,
        _: &ObjectMeta,
    ) -> DfResult<Statistics> {
        Err(unconfigured())
    }
    async fn create_physical_plan(&self, _: &dyn Session, _: FileScanConfig) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(unconfigured())
    }
    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(ProtobufSource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            format: None,
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

fn unconfigured() -> DataFusionError {
    DataFusionError::Configuration("a protobuf table needs OPTIONS ('message_type' …) and its schema".into())
}

/// Registers `STORED AS PROTOBUF` in `ctx`: the file format (made by `factory`) and the
/// table factory that `CREATE EXTERNAL TABLE` looks up by format name.
pub fn register_protobuf_format(ctx: &SessionContext, factory: ProtobufFormatFactory) -> DfResult<()> {
    let factory = Arc::new(factory);
    let state = ctx.state_ref();
    let mut state = state.write();
    state.register_file_format(factory.clone(), true)?;
    state.table_factories_mut().insert(FORMAT_NAME.to_uppercase(), Arc::new(ProtobufTableFactory { formats: factory }));
    Ok(())
}

/// `CREATE EXTERNAL TABLE … STORED AS PROTOBUF`. DataFusion's own listing-table factory
/// would read a directory as `dir/*.protobuf` and infer the schema from files; protobuf
/// files have no conventional extension and carry no schema, so this one lists every file
/// (or the glob given) and takes the columns from the message type.
#[derive(Debug)]
struct ProtobufTableFactory {
    formats: Arc<ProtobufFormatFactory>,
}

#[async_trait]
impl TableProviderFactory for ProtobufTableFactory {
    async fn create(&self, state: &dyn Session, cmd: &CreateExternalTable) -> DfResult<Arc<dyn TableProvider>> {
        let format = self.formats.format(&cmd.options).map_err(DataFusionError::Configuration)?;
        let declared = cmd.schema.fields().iter().filter(|f| !cmd.table_partition_cols.contains(f.name())).count();
        if declared > 0 {
            return Err(DataFusionError::Plan(format!(
                "a protobuf table's columns are its message type's ({}): leave out the column list",
                format.message
            )));
        }
        let [location] = cmd.locations.as_slice() else {
            return Err(DataFusionError::Plan(
                "a protobuf table takes one LOCATION (a file, a directory or a glob)".into(),
            ));
        };
        let table = listing_table(state, location, format, &cmd.table_partition_cols).await?;
        Ok(Arc::new(table.with_definition(cmd.definition.clone())))
    }
}

/// A `ListingTable` of `format`'s records at `location`: a file, a directory (every file
/// under it: no extension is assumed) or a glob. Partition columns are `partition_columns`
/// or, when none are given, the `key=value/` directories found under a directory.
pub async fn listing_table(
    state: &dyn Session,
    location: &str,
    format: ProtobufFormat,
    partition_columns: &[String],
) -> DfResult<ListingTable> {
    let url = ListingTableUrl::parse(location)?;
    let arrow = format.arrow.clone();
    let options = ListingOptions::new(Arc::new(format)).with_file_extension("");
    let names = match partition_columns {
        [] if url.is_collection() => options.infer_partitions(state, &url).await?,
        given => given.to_vec(),
    };
    let dictionary = || DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8));
    let options = options.with_table_partition_cols(names.into_iter().map(|n| (n, dictionary())).collect());
    ListingTable::try_new(ListingTableConfig::new(url).with_listing_options(options).with_schema(arrow))
}

/// The scan side of [`ProtobufFormat`]: projection and batch size for one scan, and its
/// metrics (shared by the source's clones: the path counts of `crate::paths`).
#[derive(Clone)]
struct ProtobufSource {
    table_schema: TableSchema,
    /// `None` only from [`UnconfiguredFormat`]: opening fails.
    format: Option<Arc<ProtobufFormat>>,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    projection: SplitProjection,
}

impl FileSource for ProtobufSource {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        config: &FileScanConfig,
        partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        let Some(format) = &self.format else { return Err(unconfigured()) };
        let file_schema = self.table_schema.file_schema();
        let indices = &self.projection.file_indices;
        let schema = Arc::new(file_schema.project(indices)?);
        let mut select: Vec<String> = indices.iter().map(|&i| file_schema.field(i).name().clone()).collect();
        // Under `explode` the list makes the rows, read or not by the query.
        if let Some(explode) = &format.options.explode {
            select.push(explode.path.clone());
        }
        // A selection cannot name extension columns (`[pkg.ext]`): with them, every column is
        // converted and the scan takes its own by name.
        let select = (!format.options.extensions).then_some(select);
        let options = ArrowOptions { select, ..format.options.clone() };
        let converter = Converter::new(&format.schema, &format.message, &options)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        // One converter per partition, shared by the partition's files; its path counts
        // become the partition's metrics as its batches are produced.
        let paths = Arc::new(PathMetrics::new(&self.metrics, partition, Arc::new(converter)));
        let opener = Arc::new(ProtobufOpener {
            paths,
            schema,
            batch_size: self.batch_size.unwrap_or(8192),
            compression: config.file_compression_type,
            store,
        });
        ProjectionOpener::try_new(self.projection.clone(), opener, file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(ProtobufSource { batch_size: Some(batch_size), ..self.clone() })
    }

    fn try_pushdown_projection(&self, projection: &ProjectionExprs) -> DfResult<Option<Arc<dyn FileSource>>> {
        let merged = self.projection.source.try_merge(projection)?;
        let projection = SplitProjection::new(self.table_schema.file_schema(), &merged);
        Ok(Some(Arc::new(ProtobufSource { projection, ..self.clone() })))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        FORMAT_NAME
    }

    /// Once the scan has run (`EXPLAIN ANALYZE`), why partitions did not take the compiled
    /// appenders: the reasons are labels of the `path_note` metric, which `EXPLAIN
    /// ANALYZE` sums into a bare count, so they are printed here, from the same metrics.
    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let notes = crate::paths::notes(&self.metrics.clone_inner());
        if notes.is_empty() {
            return Ok(());
        }
        match t {
            DisplayFormatType::TreeRender => writeln!(f, "path_notes={}", notes.join("; ")),
            _ => write!(f, ", path_notes=[{}]", notes.join("; ")),
        }
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }

    fn supports_repartitioning(&self) -> bool {
        // A byte range of an uncompressed file owns the records whose length prefix starts
        // in it, found by walking the prefixes before it (`RecordScanner::with_window`):
        // exact, no resynchronisation. DataFusion never splits compressed files.
        true
    }
}

/// Opens one file of a scan as a stream of batches.
struct ProtobufOpener {
    /// The partition's converter and path counters.
    paths: Arc<PathMetrics>,
    schema: SchemaRef,
    batch_size: usize,
    compression: FileCompressionType,
    store: Arc<dyn ObjectStore>,
}

impl FileOpener for ProtobufOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let paths = self.paths.clone();
        let converter = paths.converter().clone();
        let window =
            file.range.as_ref().map(|r| u64::try_from(r.start).unwrap_or(0)..u64::try_from(r.end).unwrap_or(0));
        // A `ProtobufTable`'s records in memory, framed when it was opened: the range's
        // records are found in the index (the same ones a file's range owns), and read
        // where they lie; nothing is fetched from the object store.
        if let Some(memory) = file.extension::<MemoryRecords>() {
            let owned = memory.owned(window);
            let scanner = RecordScanner::from_records(
                converter,
                self.schema.clone(),
                self.batch_size,
                memory.name().to_owned(),
                memory.data().clone(),
                &memory.records()[owned.clone()],
                owned.start as u64 + 1,
            );
            let chunks = futures::stream::empty::<DfResult<Vec<u8>>>();
            return Ok(Box::pin(async move { Ok(batches(chunks, scanner, paths).boxed()) }));
        }
        let store = self.store.clone();
        let compression = self.compression;
        let location = file.object_meta.location.clone();
        let scanner = RecordScanner::new(converter, self.schema.clone(), self.batch_size, location.to_string());
        // A range is read from the file's first byte, the prefixes before it walked, and on
        // until the first record that starts past it (its last record may run on past its
        // end); the rest of the file is never read.
        if let Some(window) = &window {
            if compression.is_compressed() {
                return Err(DataFusionError::NotImplemented(format!(
                    "{location}: a compressed protobuf file is scanned whole, not from byte {} to {}",
                    window.start, window.end
                )));
            }
        }
        // Without a compression option, each file is read as its name says (`.gz`, `.zst`,
        // `.bz2`, `.xz`) or, under another name, as its first bytes show; such a file is
        // scanned whole by the scan of its range that starts at byte 0 (DataFusion, which
        // takes it for uncompressed, may split it), and the other ranges are empty.
        let by_name = Compression::from_extension(std::path::Path::new(location.as_ref()));
        Ok(Box::pin(async move {
            let got = store.get_opts(&location, GetOptions::default()).await?;
            let empty = || futures::stream::empty().boxed();
            let batches = match got.payload {
                GetResultPayload::File(f, path) if !compression.is_compressed() => {
                    let (reader, found) = decompressed(f, Some(&path), None)?;
                    match (found, window) {
                        (Compression::None, Some(window)) => {
                            batches(read_chunks(reader), scanner.with_window(window), paths).boxed()
                        }
                        (Compression::None, None) => batches(read_chunks(reader), scanner, paths).boxed(),
                        (_, Some(window)) if window.start > 0 => empty(),
                        _ => batches(read_chunks(reader), scanner, paths).boxed(),
                    }
                }
                GetResultPayload::File(f, _) => {
                    batches(read_chunks(compression.convert_read(f)?), scanner, paths).boxed()
                }
                GetResultPayload::Stream(s) => {
                    let named = match (compression.is_compressed(), by_name) {
                        (false, Some(c)) => Some(file_compression_type(c, &location)?),
                        _ => None,
                    };
                    match (named, window) {
                        (Some(_), Some(window)) if window.start > 0 => empty(),
                        (Some(named), _) => {
                            batches(named.convert_stream(s.map_err(DataFusionError::from).boxed())?, scanner, paths)
                                .boxed()
                        }
                        (None, window) => {
                            let scanner = match window {
                                Some(window) if !compression.is_compressed() => scanner.with_window(window),
                                _ => scanner,
                            };
                            let chunks = compression.convert_stream(s.map_err(DataFusionError::from).boxed())?;
                            batches(chunks, scanner, paths).boxed()
                        }
                    }
                }
            };
            Ok(batches)
        }))
    }
}

/// A local file's bytes, [`READ_CHUNK`] at a time.
fn read_chunks(reader: Box<dyn Read + Send>) -> futures::stream::Iter<ReadChunks> {
    futures::stream::iter(ReadChunks { reader, done: false })
}

/// DataFusion's name of a compression a file's name shows, for files it streams (object
/// stores); it decompresses them only in a build with its compression.
fn file_compression_type(
    c: Compression,
    location: &datafusion::object_store::path::Path,
) -> DfResult<FileCompressionType> {
    let name = match c {
        Compression::None => return Ok(FileCompressionType::UNCOMPRESSED),
        Compression::Gzip => "GZIP",
        Compression::Zstd => "ZSTD",
        Compression::Bzip2 => "BZIP2",
        Compression::Xz => "XZ",
    };
    if !cfg!(feature = "compression") {
        return Err(DataFusionError::NotImplemented(format!(
            "{location}: a {c}-compressed file from an object store needs protojit-sql built with its `compression` feature"
        )));
    }
    name.parse()
}

/// A reader's bytes, [`READ_CHUNK`] at a time.
struct ReadChunks {
    reader: Box<dyn Read + Send>,
    done: bool,
}

impl Iterator for ReadChunks {
    type Item = DfResult<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut chunk = vec![0; READ_CHUNK];
        let mut filled = 0;
        while filled < chunk.len() {
            match self.reader.read(&mut chunk[filled..]) {
                Ok(0) => {
                    self.done = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            }
        }
        chunk.truncate(filled);
        (filled > 0).then_some(Ok(chunk))
    }
}

/// The batches of one stream of chunks: a chunk is pulled only when fewer than a batch of
/// records wait, so at most one batch and one chunk are held. `paths` counts each batch's
/// records by path.
fn batches<S, C>(
    chunks: S,
    scanner: RecordScanner,
    paths: Arc<PathMetrics>,
) -> impl Stream<Item = DfResult<datafusion::arrow::array::RecordBatch>> + Send + 'static
where
    S: Stream<Item = DfResult<C>> + Send + Unpin + 'static,
    C: AsRef<[u8]>,
{
    let scan_error = |e: ScanError| DataFusionError::External(Box::new(e));
    futures::stream::try_unfold((chunks, scanner, false), move |(mut chunks, mut scanner, mut ended)| {
        let paths = paths.clone();
        async move {
            loop {
                // The counts change only when a batch is built (or fails: the counts so far).
                let batch = scanner.next_batch(ended).inspect_err(|_| paths.update()).map_err(scan_error)?;
                if let Some(batch) = batch {
                    paths.update();
                    return Ok(Some((batch, (chunks, scanner, ended))));
                }
                if ended {
                    return Ok(None);
                }
                // A scan of part of a file stops reading once past its part.
                if scanner.is_done() {
                    ended = true;
                    continue;
                }
                match chunks.next().await {
                    Some(chunk) => scanner.push(chunk?.as_ref()).map_err(scan_error)?,
                    None => ended = true,
                }
            }
        }
    })
}
