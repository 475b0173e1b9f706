//! `protojit sql`: SQL over files, directories and globs of delimited records, through DataFusion and protojit-sql's file format.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use protojit_arrow::ArrowOptions;
use protojit_sql::datafusion::arrow::array::RecordBatch;
use protojit_sql::datafusion::arrow::datatypes::SchemaRef;
use protojit_sql::datafusion::arrow::{csv, json, util::pretty};
use protojit_sql::datafusion::error::DataFusionError;
use protojit_sql::datafusion::prelude::{SessionConfig, SessionContext};
use protojit_sql::datafusion::sql::parser::DFParser;
use protojit_sql::{listing_table, register_protobuf_format, ProtobufFormat, ProtobufFormatFactory};

use crate::args::{SqlArgs, SqlOutput};
use crate::columns::ParquetFile;
use crate::common::{self, one_line, Failure};

/// A `--table NAME=TYPE:PATH` argument (PATH: a file, a directory or a glob).
struct TableArg {
    name: String,
    type_name: String,
    path: PathBuf,
}

fn parse_table(arg: &str) -> Result<TableArg, Failure> {
    let bad = || {
        Failure::usage(format!(
            "--table {arg}: expected NAME=TYPE:PATH, as in events=pkg.Event:events.bin or events=pkg.Event:dumps/"
        ))
    };
    let (name, rest) = arg.split_once('=').ok_or_else(bad)?;
    let (type_name, path) = rest.split_once(':').ok_or_else(bad)?;
    if name.is_empty() || type_name.is_empty() || path.is_empty() {
        return Err(bad());
    }
    Ok(TableArg { name: name.to_owned(), type_name: type_name.to_owned(), path: PathBuf::from(path) })
}

pub fn run(args: &SqlArgs) -> Result<(), Failure> {
    if let Some(url) = &args.cluster {
        return crate::sql_cluster::hand_over(args, url);
    }
    if args.output == SqlOutput::Parquet && args.output_file.is_none() {
        return Err(Failure::usage("--output parquet needs --output-file FILE"));
    }
    let tables = args.tables.iter().map(|t| parse_table(t)).collect::<Result<Vec<_>, _>>()?;
    let schema = common::load_schema(&args.schema)?;
    let partitions = match args.partitions {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // Scans convert as the library does by default: the compiled appenders where they read
    // the columns (compiled in the background under the default engine; the chunked path
    // converts meanwhile), raced against the chunked path.
    let arrow =
        ArrowOptions { decode: ArrowOptions::default().decode.with_kind(args.engine), ..ArrowOptions::default() };
    let batch_size = args.batch_size.max(1);
    let config = SessionConfig::new().with_target_partitions(partitions).with_batch_size(batch_size);
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
        let format = ProtobufFormat::new(&schema, &t.type_name, &arrow).map_err(|e| match e {
            protojit_sql::SqlError::Convert(e) => Failure::usage(format!("--table {}: {e}", t.name)),
            e => Failure::input(e.to_string()),
        })?;
        let location = t.path.to_string_lossy();
        if !location.contains(['*', '?', '[']) && !t.path.exists() {
            return Err(Failure::input(format!("cannot read {location}: no such file or directory")));
        }
        let table = runtime
            .block_on(listing_table(&ctx.state(), &location, format, &[]))
            .map_err(|e| Failure::input(format!("--table {}: {}", t.name, one_line(&e.to_string()))))?;
        ctx.register_table(t.name.as_str(), Arc::new(table))
            .map_err(|e| Failure::usage(format!("--table {}: {e}", t.name)))?;
    }
    let statements = DFParser::parse_sql(&args.query).map_err(|e| Failure::input(one_line(&e.to_string())))?;
    // `-v`: which path filled the scans' columns, said at the end.
    protojit_sql::track_scan_paths(common::verbose());
    let mut results = Vec::new();
    for statement in statements {
        let result = runtime.block_on(async {
            let plan = ctx.state().statement_to_plan(statement).await?;
            let frame = ctx.execute_logical_plan(plan).await?;
            let schema = Arc::new(frame.schema().as_arrow().clone());
            Ok::<_, DataFusionError>((schema, frame.collect().await?))
        });
        // DataFusion's errors can span lines (a plan, a context chain): one line.
        let (schema, batches) = result.map_err(|e| Failure::input(one_line(&e.to_string())))?;
        // Statements without columns (CREATE, DROP, SET) print nothing.
        if !schema.fields().is_empty() {
            results.push((schema, batches));
        }
    }
    if common::verbose() {
        let paths = protojit_sql::take_scan_paths();
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
    write(args, &results)
}

/// Writes each statement's result, one after the other, as text, CSV or JSON lines.
fn write(args: &SqlArgs, results: &[(SchemaRef, Vec<RecordBatch>)]) -> Result<(), Failure> {
    let mut out: Box<dyn Write> = match &args.output_file {
        Some(p) => {
            Box::new(File::create(p).map_err(|e| Failure::input(format!("cannot create {}: {e}", p.display())))?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let fail = |e: &dyn std::fmt::Display| {
        let s = e.to_string();
        if s.contains("Broken pipe") {
            Failure::closed()
        } else {
            Failure::input(format!("cannot write the result: {}", one_line(&s)))
        }
    };
    for (_, batches) in results {
        match args.output {
            SqlOutput::Table => {
                let text = pretty::pretty_format_batches(batches).map_err(|e| fail(&e))?;
                writeln!(out, "{text}").map_err(|e| fail(&e))?;
            }
            SqlOutput::Csv => {
                let mut w = csv::WriterBuilder::new().with_header(true).build(&mut out);
                for b in batches {
                    w.write(b).map_err(|e| fail(&e))?;
                }
            }
            SqlOutput::Json => {
                let mut w = json::LineDelimitedWriter::new(&mut out);
                for b in batches {
                    w.write(b).map_err(|e| fail(&e))?;
                }
                w.finish().map_err(|e| fail(&e))?;
            }
            SqlOutput::Parquet => unreachable!("written by run"),
        }
    }
    out.flush().map_err(|e| fail(&e))
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
