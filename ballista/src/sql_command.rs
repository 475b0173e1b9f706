//! `protojit-ballista sql --cluster df://HOST:PORT …`: `protojit sql`'s schema, tables, statements and outputs, run through a Ballista client session on a cluster.

use std::fs::File;
use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::SessionConfigExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::{csv, json, util::pretty};
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use protojit::Schema;
use protojit_arrow::ArrowOptions;
use protojit_ballista::{connect_with_config, register_protobuf_cluster_format, ProtobufClusterTable};
use protojit_sql::{listing_table, ProtobufFormat, ProtobufFormatFactory};

pub const USAGE: &str =
    "  protojit-ballista sql --cluster df://HOST:PORT (--descriptor-set FILE.pb | --proto FILE.proto [-I DIR]…)
                       [--table NAME=TYPE:PATH]… [-o table|csv|json] [--output-file FILE]
                       [--partitions N] [--batch-size ROWS] [-v] [--] SQL
      as `protojit sql` (which hands `protojit sql --cluster URL …` to this command); every
      executor and the scheduler must read the tables' files under the same paths.";

/// How `protojit-ballista sql` fails; the exit code follows `protojit`'s.
#[derive(Debug, thiserror::Error)]
pub enum SqlFailure {
    /// A bad option, schema or table argument (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The cluster, a query or the output failed (exit code 1).
    #[error("{0}")]
    Query(String),
    /// stdout was closed by its reader (`| head`): stop quietly, successfully.
    #[error("")]
    Closed,
}

impl SqlFailure {
    pub fn exit_code(&self) -> u8 {
        match self {
            SqlFailure::Usage(_) => 2,
            SqlFailure::Query(_) => 1,
            SqlFailure::Closed => 0,
        }
    }
}

/// How results are written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Output {
    Table,
    Csv,
    Json,
}

/// The arguments of `protojit-ballista sql`.
#[derive(Debug)]
pub struct SqlOptions {
    cluster: String,
    descriptor_sets: Vec<PathBuf>,
    protos: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    tables: Vec<String>,
    output: Output,
    output_file: Option<PathBuf>,
    partitions: usize,
    batch_size: usize,
    verbose: bool,
    query: String,
}

/// Parses the arguments after `sql`: `--option value` or `--option=value`, `-v`, and one
/// query (after `--` if it starts with a dash).
pub fn parse(args: &[String]) -> Result<SqlOptions, SqlFailure> {
    let usage = |m: String| SqlFailure::Usage(m);
    let mut cluster = None;
    let mut o = SqlOptions {
        cluster: String::new(),
        descriptor_sets: Vec::new(),
        protos: Vec::new(),
        includes: Vec::new(),
        tables: Vec::new(),
        output: Output::Table,
        output_file: None,
        partitions: 0,
        batch_size: 8192,
        verbose: false,
        query: String::new(),
    };
    let mut query = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            match (rest.next(), rest.next()) {
                (Some(q), None) if query.is_none() => query = Some(q.clone()),
                _ => {
                    return Err(usage(
                        "give one query (several statements go in one argument, separated by `;`)".into(),
                    ))
                }
            }
            break;
        }
        if arg == "-v" || arg == "--verbose" {
            o.verbose = true;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            if query.replace(arg.clone()).is_some() {
                return Err(usage("give one query (several statements go in one argument, separated by `;`)".into()));
            }
            continue;
        }
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let value = match inline {
            Some(v) => v,
            None => rest.next().cloned().ok_or_else(|| usage(format!("'{key}' needs a value")))?,
        };
        let number = |value: &str| -> Result<usize, SqlFailure> {
            value.parse().map_err(|_| usage(format!("{key} '{value}': expected a number")))
        };
        match key {
            "--cluster" => cluster = Some(value),
            "--descriptor-set" => o.descriptor_sets.push(value.into()),
            "--proto" => o.protos.push(value.into()),
            "-I" | "--include" => o.includes.push(value.into()),
            "--table" => o.tables.push(value),
            "-o" | "--output" => {
                o.output = match value.as_str() {
                    "table" => Output::Table,
                    "csv" => Output::Csv,
                    "json" | "jsonl" => Output::Json,
                    "parquet" => {
                        return Err(usage("-o parquet is not available with --cluster: use table, csv or json".into()))
                    }
                    other => return Err(usage(format!("-o '{other}': expected table, csv or json"))),
                }
            }
            "--output-file" => o.output_file = Some(value.into()),
            "--partitions" => o.partitions = number(&value)?,
            "--batch-size" => o.batch_size = number(&value)?.max(1),
            "--engine" => {
                return Err(usage(
                    "--engine is not available with --cluster: the executors decode with their default engine".into(),
                ))
            }
            other => return Err(usage(format!("unknown sql option '{other}'"))),
        }
    }
    o.cluster = cluster.ok_or_else(|| usage("name the scheduler: --cluster df://HOST:PORT".into()))?;
    o.query = query.ok_or_else(|| usage("give the query: one argument, statements separated by `;`".into()))?;
    Ok(o)
}

/// A library error (which may span lines) on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn load_schema(o: &SqlOptions) -> Result<Schema, SqlFailure> {
    let schema = match (o.descriptor_sets.is_empty(), o.protos.is_empty()) {
        (true, true) => {
            return Err(SqlFailure::Usage("no schema: pass --descriptor-set FILE.pb or --proto FILE.proto".into()))
        }
        (false, false) => return Err(SqlFailure::Usage("pass either --descriptor-set or --proto, not both".into())),
        (false, true) => Schema::from_descriptor_set_files(&o.descriptor_sets),
        (true, false) => Schema::from_proto_files(&o.protos, &o.includes),
    }
    .map_err(|e| SqlFailure::Usage(e.to_string()))?;
    if o.verbose {
        for note in schema.notes() {
            eprintln!("protojit-ballista: note: {note}");
        }
    }
    Ok(schema)
}

/// A `--table NAME=TYPE:PATH` argument with PATH made absolute: the scheduler and the
/// executors run elsewhere and read the same path.
fn parse_table(arg: &str) -> Result<(String, String, PathBuf), SqlFailure> {
    let bad = || {
        SqlFailure::Usage(format!(
            "--table {arg}: expected NAME=TYPE:PATH, as in events=pkg.Event:events.bin or events=pkg.Event:dumps/"
        ))
    };
    let (name, rest) = arg.split_once('=').ok_or_else(bad)?;
    let (type_name, path) = rest.split_once(':').ok_or_else(bad)?;
    if name.is_empty() || type_name.is_empty() || path.is_empty() {
        return Err(bad());
    }
    let absolute = std::path::absolute(path).map_err(|e| SqlFailure::Usage(format!("--table {name}: {path}: {e}")))?;
    Ok((name.to_owned(), type_name.to_owned(), absolute))
}

/// How long reaching the scheduler may take before the command gives up.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// Opens (and closes) a connection to the scheduler at `url`, `df://HOST:PORT`, so that a
/// wrong address or a scheduler that is down fails in one clear line before any query
/// (Ballista's client would report a transport error from the first statement).
async fn reach_scheduler(url: &str) -> Result<(), SqlFailure> {
    let address = url.strip_prefix("df://").filter(|a| a.rsplit_once(':').is_some()).ok_or_else(|| {
        SqlFailure::Usage(format!("--cluster {url}: expected df://HOST:PORT, as in df://127.0.0.1:50050"))
    })?;
    let address = address.trim_end_matches('/').to_owned();
    let attempt = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "the host has no address");
        for socket in address.to_socket_addrs()? {
            match TcpStream::connect_timeout(&socket, CONNECT_LIMIT) {
                Ok(_) => return Ok(()),
                Err(e) => last = e,
            }
        }
        Err(last)
    });
    match attempt.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(SqlFailure::Query(format!(
            "cannot reach the scheduler at {url}: {e} (is `protojit-ballista scheduler` running there?)"
        ))),
        Err(e) => Err(SqlFailure::Query(format!("cannot reach the scheduler at {url}: {e}"))),
    }
}

/// Runs the statements on the cluster and writes each result that has columns.
pub async fn run(o: &SqlOptions) -> Result<(), SqlFailure> {
    let tables = o.tables.iter().map(|t| parse_table(t)).collect::<Result<Vec<_>, _>>()?;
    let schema = load_schema(o)?;
    let mut config = SessionConfig::new_with_ballista().with_batch_size(o.batch_size);
    if o.partitions > 0 {
        config = config.with_target_partitions(o.partitions);
    }
    reach_scheduler(&o.cluster).await?;
    let ctx = connect_with_config(&o.cluster, config).await.map_err(|e| {
        SqlFailure::Query(format!("cannot reach the scheduler at {}: {}", o.cluster, one_line(&e.to_string())))
    })?;
    // `CREATE EXTERNAL TABLE … STORED AS PROTOBUF` finds its types in this command's
    // schema, which travels to the cluster inside the plans.
    register_protobuf_cluster_format(&ctx, ProtobufFormatFactory::with_schema(schema.clone()))
        .map_err(|e| SqlFailure::Usage(one_line(&e.to_string())))?;
    let arrow = ArrowOptions::default();
    for (name, type_name, path) in &tables {
        let format = ProtobufFormat::new(&schema, type_name, &arrow).map_err(|e| match e {
            protojit_sql::SqlError::Convert(e) => SqlFailure::Usage(format!("--table {name}: {e}")),
            e => SqlFailure::Query(e.to_string()),
        })?;
        let location = path.to_string_lossy();
        if !location.contains(['*', '?', '[']) && !path.exists() {
            return Err(SqlFailure::Query(format!("cannot read {location}: no such file or directory")));
        }
        let table = listing_table(&ctx.state(), &location, format, &[])
            .await
            .and_then(|t| ProtobufClusterTable::try_new(Arc::new(t)))
            .map_err(|e| SqlFailure::Query(format!("--table {name}: {}", one_line(&e.to_string()))))?;
        ctx.register_table(name.as_str(), Arc::new(table))
            .map_err(|e| SqlFailure::Usage(format!("--table {name}: {e}")))?;
    }
    let statements = DFParser::parse_sql(&o.query).map_err(|e| SqlFailure::Query(one_line(&e.to_string())))?;
    let mut results = Vec::new();
    for statement in statements {
        let (columns, batches) =
            execute(&ctx, statement).await.map_err(|e| SqlFailure::Query(one_line(&e.to_string())))?;
        // Statements without columns (CREATE, DROP, SET) print nothing.
        if columns > 0 {
            results.push(batches);
        }
    }
    write(o, &results)
}

/// One statement's column count and batches.
async fn execute(
    ctx: &SessionContext,
    statement: datafusion::sql::parser::Statement,
) -> Result<(usize, Vec<RecordBatch>), DataFusionError> {
    let plan = ctx.state().statement_to_plan(statement).await?;
    let frame = ctx.execute_logical_plan(plan).await?;
    let columns = frame.schema().fields().len();
    Ok((columns, frame.collect().await?))
}

/// Writes each statement's result, one after the other, as `protojit sql` does.
fn write(o: &SqlOptions, results: &[Vec<RecordBatch>]) -> Result<(), SqlFailure> {
    let mut out: Box<dyn Write> = match &o.output_file {
        Some(p) => {
            Box::new(File::create(p).map_err(|e| SqlFailure::Query(format!("cannot create {}: {e}", p.display())))?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let fail = |e: &dyn std::fmt::Display| {
        let s = e.to_string();
        if s.contains("Broken pipe") {
            SqlFailure::Closed
        } else {
            SqlFailure::Query(format!("cannot write the result: {}", one_line(&s)))
        }
    };
    for batches in results {
        match o.output {
            Output::Table => {
                let text = pretty::pretty_format_batches(batches).map_err(|e| fail(&e))?;
                writeln!(out, "{text}").map_err(|e| fail(&e))?;
            }
            Output::Csv => {
                let mut w = csv::WriterBuilder::new().with_header(true).build(&mut out);
                for b in batches {
                    w.write(b).map_err(|e| fail(&e))?;
                }
            }
            Output::Json => {
                let mut w = json::LineDelimitedWriter::new(&mut out);
                for b in batches {
                    w.write(b).map_err(|e| fail(&e))?;
                }
                w.finish().map_err(|e| fail(&e))?;
            }
        }
    }
    out.flush().map_err(|e| fail(&e))
}
