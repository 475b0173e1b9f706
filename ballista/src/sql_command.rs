//! `protojit-ballista sql --cluster df://HOST:PORT …`: `protojit sql`'s arguments, schema, tables, statements and outputs (protojit-sql's `command` front end), run through a Ballista client session on a cluster.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::SessionConfigExt;
use clap::Parser;
use datafusion::prelude::SessionConfig;
use protojit::EngineKind;
use protojit_ballista::{connect_with_config, register_protobuf_cluster_format, ProtobufClusterTable};
use protojit_sql::command::{one_line, run_statements, CommandError, SqlArgs, SqlOutput};
use protojit_sql::{listing_table, ProtobufFormatFactory};

/// The arguments of `protojit-ballista sql`: `protojit sql`'s, and `-v`.
#[derive(Parser, Debug)]
#[command(name = "protojit-ballista sql", about = "SQL over protobuf tables, run on a Ballista cluster")]
pub struct SqlCommand {
    #[command(flatten)]
    args: SqlArgs,
    /// Print the schema's notes on stderr.
    #[arg(short, long)]
    verbose: bool,
}

/// Parses the arguments after `sql` (clap's spelling, as `protojit sql` takes them); a
/// usage error is one line, `--help` is `Ok(None)` once printed.
pub fn parse(args: &[String]) -> Result<Option<SqlCommand>, CommandError> {
    let command = match SqlCommand::try_parse_from(std::iter::once("sql").chain(args.iter().map(String::as_str))) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help (or --version): printed on stdout; a reader that stops early is fine.
            let _ = e.print();
            return Ok(None);
        }
        Err(e) => {
            // clap's message, up to its usage lines, as one line.
            let text = e.to_string();
            let message: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:"))
                .filter(|l| !l.is_empty())
                .collect();
            return Err(CommandError::Usage(message.join(" ").trim_start_matches("error: ").to_owned()));
        }
    };
    let usage = |m: &str| Err(CommandError::Usage(m.to_owned()));
    if command.args.cluster.is_none() {
        return usage("name the scheduler: --cluster df://HOST:PORT");
    }
    if command.args.output == SqlOutput::Parquet {
        return usage("-o parquet is not available with --cluster: use table, csv or json");
    }
    if command.args.engine != EngineKind::Auto {
        return usage("--engine is not available with --cluster: the executors decode with their default engine");
    }
    Ok(Some(command))
}

/// How long reaching the scheduler may take before the command gives up.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// Opens (and closes) a connection to the scheduler at `url`, `df://HOST:PORT`, so that a
/// wrong address or a scheduler that is down fails in one clear line before any query
/// (Ballista's client would report a transport error from the first statement).
async fn reach_scheduler(url: &str) -> Result<(), CommandError> {
    let address = url.strip_prefix("df://").filter(|a| a.rsplit_once(':').is_some()).ok_or_else(|| {
        CommandError::Usage(format!("--cluster {url}: expected df://HOST:PORT, as in df://127.0.0.1:50050"))
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
        Ok(Err(e)) => Err(CommandError::Query(format!(
            "cannot reach the scheduler at {url}: {e} (is `protojit-ballista scheduler` running there?)"
        ))),
        Err(e) => Err(CommandError::Query(format!("cannot reach the scheduler at {url}: {e}"))),
    }
}

/// Runs the statements on the cluster and writes each result that has columns.
pub async fn run(command: &SqlCommand) -> Result<(), CommandError> {
    let o = &command.args;
    let cluster = o.cluster.as_deref().expect("parse requires --cluster");
    // Absolute paths: the scheduler and the executors read them elsewhere.
    let tables = o.table_args()?.into_iter().map(|t| t.absolute()).collect::<Result<Vec<_>, _>>()?;
    let schema = o.load_schema()?;
    if command.verbose {
        for note in schema.notes() {
            eprintln!("protojit-ballista: note: {note}");
        }
    }
    let mut config = SessionConfig::new_with_ballista().with_batch_size(o.batch_size.max(1));
    if o.partitions > 0 {
        config = config.with_target_partitions(o.partitions);
    }
    reach_scheduler(cluster).await?;
    let ctx = connect_with_config(cluster, config).await.map_err(|e| {
        CommandError::Query(format!("cannot reach the scheduler at {cluster}: {}", one_line(&e.to_string())))
    })?;
    // `CREATE EXTERNAL TABLE … STORED AS PROTOBUF` finds its types in this command's
    // schema, which travels to the cluster inside the plans.
    register_protobuf_cluster_format(&ctx, ProtobufFormatFactory::with_schema(schema.clone()))
        .map_err(|e| CommandError::Usage(one_line(&e.to_string())))?;
    let arrow = o.arrow_options();
    for t in &tables {
        let (format, location) = t.format(&schema, &arrow)?;
        let table = listing_table(&ctx.state(), &location, format, &[])
            .await
            .and_then(|t| ProtobufClusterTable::try_new(Arc::new(t)))
            .map_err(|e| CommandError::Query(format!("--table {}: {}", t.name, one_line(&e.to_string()))))?;
        ctx.register_table(t.name.as_str(), Arc::new(table))
            .map_err(|e| CommandError::Usage(format!("--table {}: {e}", t.name)))?;
    }
    let results = run_statements(&ctx, &o.query).await?;
    o.write_results(&results)
}
