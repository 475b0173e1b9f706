//! `protojit sql`: SQL over files, directories and globs of delimited records, through DataFusion and protojit-sql's file format, on a local session (or handed to `protojit-ballista` for a cluster).
//!
//! The arguments, the schema, the tables, the statements and the table, CSV and JSON writers
//! are protojit-sql's `command` front end, which `protojit-ballista sql` shares; this file
//! adds the local session, `-v`'s notes (from the scans' metrics) and the Parquet output.

use std::path::Path;
use std::sync::Arc;

use protojit_sql::command::{run_statements_with_paths, CommandError};
use protojit_sql::datafusion::arrow::array::RecordBatch;
use protojit_sql::datafusion::arrow::datatypes::SchemaRef;
use protojit_sql::datafusion::prelude::{SessionConfig, SessionContext};
use protojit_sql::{listing_table, register_protobuf_format, ProtobufFormatFactory};

use crate::args::{SqlArgs, SqlOutput};
use crate::columns::ParquetFile;
use crate::common::{self, one_line, Failure};

impl From<CommandError> for Failure {
    fn from(e: CommandError) -> Failure {
        match e {
            CommandError::Usage(m) => Failure::usage(m),
            CommandError::Query(m) => Failure::input(m),
            CommandError::Closed => Failure::closed(),
        }
    }
}

pub fn run(args: &SqlArgs) -> Result<(), Failure> {
    if let Some(url) = &args.cluster {
        return crate::sql_cluster::hand_over(args, url);
    }
    if args.output == SqlOutput::Parquet && args.output_file.is_none() {
        return Err(Failure::usage("--output parquet needs --output-file FILE"));
    }
    let tables = args.table_args()?;
    let schema = args.load_schema()?;
    for n in schema.notes() {
        common::note(n);
    }
    let partitions = args.partitions();
    // Scans convert as the library does by default: the compiled appenders where they read
    // the columns (compiled in the background under the default engine; the chunked path
    // converts meanwhile), raced against the chunked path.
    let arrow = args.arrow_options();
    let config = SessionConfig::new().with_target_partitions(partitions).with_batch_size(args.batch_size.max(1));
    let ctx = SessionContext::new_with_config(config);
    // `CREATE EXTERNAL TABLE … STORED AS PROTOBUF` in the query finds its types in this
    // schema (given with --proto or --descriptor-set).
    register_protobuf_format(
        &ctx,
        ProtobufFormatFactory::with_schema(schema.clone()).with_arrow_options(arrow.clone()),
    )
    .map_err(|e| Failure::usage(one_line(&e.to_string())))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(partitions)
        .enable_all()
        .build()
        .map_err(|e| Failure::input(format!("cannot start the query runtime: {e}")))?;
    for t in &tables {
        let (format, location) = t.format(&schema, &arrow)?;
        let table = runtime
            .block_on(listing_table(&ctx.state(), &location, format, &[]))
            .map_err(|e| Failure::input(format!("--table {}: {}", t.name, one_line(&e.to_string()))))?;
        ctx.register_table(t.name.as_str(), Arc::new(table))
            .map_err(|e| Failure::usage(format!("--table {}: {e}", t.name)))?;
    }
    let (results, paths) = runtime.block_on(run_statements_with_paths(&ctx, &args.query))?;
    // `-v`: which path filled the scans' columns (the executed plans' metrics), said at the end.
    if common::verbose() {
        for why in &paths.notes {
            common::note(why);
        }
        common::note(&format!(
            "scans: {}; records filled by the compiled column appenders: {}; by the chunked path beside them: {}; by the tree (declined by the code): {}; by another path: {}",
            paths.scans, paths.compiled, paths.chunked, paths.tree, paths.other
        ));
    }
    if args.output == SqlOutput::Parquet {
        let target = args.output_file.as_deref().expect("checked above");
        return match results.as_slice() {
            [(schema, batches)] => write_parquet(target, schema.clone(), batches),
            _ => Err(Failure::usage("--output parquet writes one result; the query has none or several")),
        };
    }
    Ok(args.write_results(&results)?)
}

/// Writes `batches` to `target` (complete, or not at all).
fn write_parquet(target: &Path, schema: SchemaRef, batches: &[RecordBatch]) -> Result<(), Failure> {
    let mut file = ParquetFile::create(target, schema)?;
    for b in batches {
        if let Err(e) = file.write(b) {
            file.abandon();
            return Err(e);
        }
    }
    file.finish()
}
