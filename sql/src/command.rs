//! The `sql` command's front end, one for `protojit sql` and `protojit-ballista sql`: its arguments (clap), the schema they name, the `--table` arguments, the statements run on a session, and the table, CSV and JSON writers of their results.
//!
//! Each command builds its own session (a local one, or a Ballista client's) and registers
//! the tables its way; everything else goes through here, so the two commands take the same
//! arguments, fail with the same one-line errors and print the same results.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::{csv, json, util::pretty};
use datafusion::datasource::file_format::{file_type_to_format, format_as_file_type};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::collect;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::DFParser;
use protojit::{EngineKind, Schema};
use protojit_arrow::{ArrowOptions, MappingArgs, OtherMappingArgs};

use crate::{ProtobufFormat, ProtobufFormatFactory, ScanPaths, SqlError};

/// The arguments of the `sql` command, after its name.
#[derive(Args, Clone, Debug)]
pub struct SqlArgs {
    /// A FileDescriptorSet (`protoc --include_imports -o`, `buf build -o`); repeatable.
    #[arg(long = "descriptor-set", value_name = "FILE.pb")]
    pub descriptor_sets: Vec<PathBuf>,
    /// A .proto file (compiled with protox; protoc from PATH as a fallback); repeatable.
    #[arg(long = "proto", value_name = "FILE.proto")]
    pub protos: Vec<PathBuf>,
    /// Import search directory for --proto; repeatable (default: each file's directory).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub includes: Vec<PathBuf>,
    /// A table: NAME=TYPE:PATH, varint-delimited records of message type TYPE in a file, a
    /// directory (every file under it; `key=value/` directories become partition columns)
    /// or a glob; repeatable. Columns are the type's fields (nested messages as structs).
    /// Files are read as streams, each file by one partition.
    #[arg(long = "table", value_name = "NAME=TYPE:PATH")]
    pub tables: Vec<String>,
    /// The query: one or more `;`-separated statements, which may create tables with
    /// `CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION 'dir/' OPTIONS ('message_type' 'T')`
    /// (types from this command's schema); each statement's result is printed.
    #[arg(value_name = "SQL")]
    pub query: String,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = SqlOutput::Table)]
    pub output: SqlOutput,
    /// Write the result here instead of stdout (needed for parquet; a Parquet file appears
    /// under this name only once it is complete).
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Partitions a query runs in (0 = one per CPU); a table's files are spread over them.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub partitions: usize,
    /// Rows per record batch.
    #[arg(long, value_name = "ROWS", default_value_t = 8192)]
    pub batch_size: usize,
    /// How fields become columns (the default of every table, which `STORED AS PROTOBUF`
    /// options may change).
    #[command(flatten)]
    pub mapping: MappingArgs,
    /// Rows per element of a list (every table's type must have it) and extension columns.
    #[command(flatten)]
    pub other_mapping: OtherMappingArgs,
    /// Decode engine (see `protojit decode --help`; on a cluster the executors choose).
    #[arg(long, value_enum, default_value_t = EngineKind::Auto)]
    pub engine: EngineKind,
    /// Run the statements on a Ballista cluster, its scheduler at df://HOST:PORT: `protojit
    /// sql` hands the command to the `protojit-ballista` executable ($PROTOJIT_BALLISTA,
    /// else the one beside this executable, else on PATH; `cargo install --path ballista`
    /// installs it). Every executor must read the tables' files under the same paths;
    /// output table, csv or json.
    #[arg(long, value_name = "df://HOST:PORT")]
    pub cluster: Option<String>,
}

/// How results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SqlOutput {
    /// An aligned text table.
    Table,
    /// CSV with a header (flat columns only).
    Csv,
    /// JSON, one object per line.
    Json,
    /// A Parquet file (needs --output-file; not on a cluster).
    Parquet,
}

/// How the command fails: the message is one line, the exit code follows `protojit`'s.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A bad option, schema or table argument (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The data, a query, the cluster or the output failed (exit code 1).
    #[error("{0}")]
    Query(String),
    /// stdout was closed by its reader (`| head`): stop quietly, successfully.
    #[error("")]
    Closed,
}

impl CommandError {
    /// The process's exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Usage(_) => 2,
            CommandError::Query(_) => 1,
            CommandError::Closed => 0,
        }
    }
}

/// A message that may span lines (a plan, a context chain), on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A `--table NAME=TYPE:PATH` argument (PATH: a file, a directory or a glob).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableArg {
    /// The table's name in the queries.
    pub name: String,
    /// The records' message type (a full name, or a unique short one).
    pub type_name: String,
    /// Where the records are.
    pub path: PathBuf,
}

impl TableArg {
    /// Parses `NAME=TYPE:PATH`.
    pub fn parse(arg: &str) -> Result<TableArg, CommandError> {
        let bad = || {
            CommandError::Usage(format!(
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

    /// The same table with its path made absolute: the scheduler and the executors of a
    /// cluster run elsewhere and read the same path.
    pub fn absolute(self) -> Result<TableArg, CommandError> {
        let path = std::path::absolute(&self.path)
            .map_err(|e| CommandError::Usage(format!("--table {}: {}: {e}", self.name, self.path.display())))?;
        Ok(TableArg { path, ..self })
    }

    /// The table's file format: its records' type and columns, checked against `schema`,
    /// and its location, checked to exist unless it is a glob.
    pub fn format(&self, schema: &Schema, arrow: &ArrowOptions) -> Result<(ProtobufFormat, String), CommandError> {
        let format = ProtobufFormat::new(schema, &self.type_name, arrow).map_err(|e| match e {
            SqlError::Convert(e) => CommandError::Usage(format!("--table {}: {e}", self.name)),
            e => CommandError::Query(e.to_string()),
        })?;
        let location = self.path.to_string_lossy().into_owned();
        if !location.contains(['*', '?', '[']) && !self.path.exists() {
            return Err(CommandError::Query(format!("cannot read {location}: no such file or directory")));
        }
        Ok((format, location))
    }
}

impl SqlArgs {
    /// The `--table` arguments, parsed.
    pub fn table_args(&self) -> Result<Vec<TableArg>, CommandError> {
        self.tables.iter().map(|t| TableArg::parse(t)).collect()
    }

    /// The schema the arguments name (`--descriptor-set`, or `--proto` with `-I`).
    pub fn load_schema(&self) -> Result<Schema, CommandError> {
        let usage = |e: protojit::SchemaError| CommandError::Usage(e.to_string());
        match (self.descriptor_sets.is_empty(), self.protos.is_empty()) {
            (true, true) => {
                Err(CommandError::Usage("no schema: pass --descriptor-set FILE.pb or --proto FILE.proto".into()))
            }
            (false, false) => Err(CommandError::Usage("pass either --descriptor-set or --proto, not both".into())),
            (false, true) => Schema::from_descriptor_set_files(&self.descriptor_sets).map_err(usage),
            (true, false) => Schema::from_proto_files(&self.protos, &self.includes).map_err(usage),
        }
    }

    /// Partitions to run in: `--partitions`, or one per CPU.
    pub fn partitions(&self) -> usize {
        match self.partitions {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// How scans convert: the library's defaults with `--engine` and the mapping flags (the
    /// default of every `STORED AS PROTOBUF` table, whose options may change them).
    pub fn arrow_options(&self) -> ArrowOptions {
        let mut options =
            ArrowOptions { decode: ArrowOptions::default().decode.with_kind(self.engine), ..ArrowOptions::default() };
        self.mapping.apply(&mut options);
        self.other_mapping.apply(&mut options);
        options
    }

    /// Writes each result, one after the other, as a text table, CSV or JSON lines, to
    /// `--output-file` or stdout (Parquet is the caller's to write).
    pub fn write_results(&self, results: &[(SchemaRef, Vec<RecordBatch>)]) -> Result<(), CommandError> {
        let mut out: Box<dyn Write> = match &self.output_file {
            Some(p) => Box::new(
                File::create(p).map_err(|e| CommandError::Query(format!("cannot create {}: {e}", p.display())))?,
            ),
            None => Box::new(std::io::stdout().lock()),
        };
        let fail = |e: &dyn std::fmt::Display| {
            let s = e.to_string();
            if s.contains("Broken pipe") {
                CommandError::Closed
            } else {
                CommandError::Query(format!("cannot write the result: {}", one_line(&s)))
            }
        };
        for (_, batches) in results {
            match self.output {
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
                SqlOutput::Parquet => {
                    return Err(CommandError::Usage("-o parquet is written by the command, not here".into()))
                }
            }
        }
        out.flush().map_err(|e| fail(&e))
    }
}

/// Runs `query`'s statements on `ctx`, one after the other; the results of those that have
/// columns (CREATE, DROP and SET have none, and print nothing), with their Arrow schemas.
pub async fn run_statements(
    ctx: &SessionContext,
    query: &str,
) -> Result<Vec<(SchemaRef, Vec<RecordBatch>)>, CommandError> {
    Ok(run_statements_with_paths(ctx, query).await?.0)
}

/// [`run_statements`], and which paths filled the protobuf scans' columns, summed over the
/// statements' executed plans from their metrics ([`ScanPaths::of_plan`]; nothing for the
/// scans a Ballista cluster's executors ran).
pub async fn run_statements_with_paths(
    ctx: &SessionContext,
    query: &str,
) -> Result<(Vec<(SchemaRef, Vec<RecordBatch>)>, ScanPaths), CommandError> {
    let statements = DFParser::parse_sql(query).map_err(|e| CommandError::Query(one_line(&e.to_string())))?;
    let mut results = Vec::new();
    let mut paths = ScanPaths::default();
    for statement in statements {
        let result = async {
            let plan = bind_copy_options(ctx.state().statement_to_plan(statement).await?);
            let frame = ctx.execute_logical_plan(plan).await?;
            let schema = Arc::new(frame.schema().as_arrow().clone());
            // What `DataFrame::collect` does, keeping the physical plan: its scans' metrics
            // say which paths filled their columns.
            let task = Arc::new(frame.task_ctx());
            let plan = frame.create_physical_plan().await?;
            let batches = collect(plan.clone(), task).await?;
            Ok::<_, DataFusionError>((schema, batches, ScanPaths::of_plan(plan.as_ref())))
        }
        .await;
        // DataFusion's errors can span lines (a plan, a context chain): one line.
        let (schema, batches, scanned) = result.map_err(|e| CommandError::Query(one_line(&e.to_string())))?;
        paths.add(&scanned);
        if !schema.fields().is_empty() {
            results.push((schema, batches));
        }
    }
    Ok((results, paths))
}

/// `plan` with a `COPY … STORED AS PROTOBUF`'s options bound to its format's factory, so
/// that they reach the planner wherever the plan is sent (DataFusion's plan serializer keeps
/// the factory, not the options: a Ballista scheduler would plan the write without them).
fn bind_copy_options(plan: LogicalPlan) -> LogicalPlan {
    let LogicalPlan::Copy(mut copy) = plan else { return plan };
    if let Ok(factory) = file_type_to_format(&copy.file_type) {
        if let Some(protobuf) = factory.downcast_ref::<ProtobufFormatFactory>() {
            let bound = protobuf.clone().with_table_options(copy.options.clone());
            copy.file_type = format_as_file_type(Arc::new(bound));
        }
    }
    LogicalPlan::Copy(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_arguments() {
        let t = TableArg::parse("e=pkg.Event:dumps/a=1/").unwrap();
        assert_eq!((t.name.as_str(), t.type_name.as_str()), ("e", "pkg.Event"));
        assert_eq!(t.path, PathBuf::from("dumps/a=1/"));
        for bad in ["e", "e=pkg.Event", "=T:p", "e=:p", "e=T:"] {
            let e = TableArg::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().starts_with(&format!("--table {bad}: expected NAME=TYPE:PATH")), "{e}");
        }
        assert!(TableArg::parse("e=T:rel/x").unwrap().absolute().unwrap().path.is_absolute());
    }
}
