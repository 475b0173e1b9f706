//! `protojit-ballista`: a Ballista scheduler or executor that reads protojit's protobuf tables, or SQL run on such a cluster (`protojit-ballista scheduler|executor|sql [--option value]…`).

mod sql_command;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use protojit_ballista::{run_executor, run_scheduler, ExecutorOptions, SchedulerOptions};
use sql_command::SqlCommand;

const NOTES: &str = "\
Ballista's endpoints carry no authentication: bind to 127.0.0.1, or to a private network.
Log records go to stderr; PROTOJIT_BALLISTA_LOG=off|error|warn|info|debug|trace picks the level
(default warn; off for sql, whose errors are one line).";

/// Ballista's log records on stderr, one line each, at the level PROTOJIT_BALLISTA_LOG names.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{} {}: {}", record.level(), record.target(), record.args());
        }
    }

    fn flush(&self) {}
}

fn start_logging(default: log::LevelFilter) -> Result<(), String> {
    let level = match std::env::var("PROTOJIT_BALLISTA_LOG") {
        Ok(name) => name
            .parse::<log::LevelFilter>()
            .map_err(|_| format!("PROTOJIT_BALLISTA_LOG='{name}': expected off, error, warn, info, debug or trace"))?,
        Err(_) => default,
    };
    log::set_logger(&StderrLog).map_err(|e| e.to_string())?;
    log::set_max_level(level);
    Ok(())
}

/// `protojit-ballista ROLE [OPTIONS]`.
#[derive(Parser, Debug)]
#[command(
    name = "protojit-ballista",
    about = "A Ballista scheduler or executor that reads protojit's protobuf tables, or SQL run on such a cluster",
    after_help = NOTES
)]
struct Cli {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand, Debug)]
enum Role {
    /// Run a scheduler (executors join it; `protojit sql --cluster` sends it queries).
    Scheduler(SchedulerArgs),
    /// Run an executor that joins a scheduler.
    Executor(ExecutorArgs),
    /// SQL on a cluster: `protojit sql`'s arguments with --cluster df://HOST:PORT (see
    /// `protojit-ballista sql --help`).
    #[command(disable_help_flag = true)]
    Sql {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// A scheduler's options (defaults: `SchedulerOptions::default()`).
#[derive(Args, Debug)]
struct SchedulerArgs {
    /// The address to bind.
    #[arg(long, value_name = "HOST", default_value_t = SchedulerOptions::default().bind_host)]
    bind: String,
    /// The host executors and clients are told to reach it at (default: --bind).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// The gRPC port.
    #[arg(long, default_value_t = SchedulerOptions::default().port)]
    port: u16,
    /// Seconds without a heartbeat after which an executor is lost: its tasks run again
    /// elsewhere.
    #[arg(long, value_name = "SECONDS", default_value_t = SchedulerOptions::default().executor_timeout_seconds)]
    executor_timeout: u64,
    /// Seconds between checks for lost executors.
    #[arg(long, value_name = "SECONDS", default_value_t = SchedulerOptions::default().expire_interval_seconds)]
    expire_interval: u64,
}

/// An executor's options (defaults: `ExecutorOptions::default()`).
#[derive(Args, Debug)]
struct ExecutorArgs {
    /// The address to bind.
    #[arg(long, value_name = "HOST", default_value_t = ExecutorOptions::default().bind_host)]
    bind: String,
    /// The host other executors and clients fetch results from (default: --bind).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// The Arrow Flight port results are fetched from.
    #[arg(long, default_value_t = ExecutorOptions::default().port)]
    port: u16,
    /// The gRPC port the scheduler talks to.
    #[arg(long, default_value_t = ExecutorOptions::default().grpc_port)]
    grpc_port: u16,
    /// The scheduler to join.
    #[arg(long, value_name = "HOST:PORT", value_parser = host_port, default_value = "127.0.0.1:50050")]
    scheduler: (String, u16),
    /// Tasks run at once (default: the machine's cores).
    #[arg(long, value_name = "N")]
    vcores: Option<usize>,
    /// Where shuffle files are written (default: a new temporary directory).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Seconds between heartbeats to the scheduler.
    #[arg(long, value_name = "SECONDS", default_value_t = ExecutorOptions::default().heartbeat_interval_seconds)]
    heartbeat_interval: u64,
}

fn host_port(value: &str) -> Result<(String, u16), String> {
    let (host, port) = value.rsplit_once(':').ok_or(format!("'{value}': expected HOST:PORT"))?;
    let port = port.parse().map_err(|_| format!("'{value}': the port is not a number"))?;
    Ok((host.to_owned(), port))
}

/// What the command line asks for.
enum Command {
    Scheduler(SchedulerOptions),
    Executor(ExecutorOptions),
    Sql(SqlCommand),
    /// `--help`, printed already.
    Help,
}

/// Parses the command line; a usage error comes back as its text (clap's, with the usage
/// of the role for the scheduler and executor; one line for `sql`, as `protojit sql`).
fn parse(args: &[String]) -> Result<Command, String> {
    let cli = match Cli::try_parse_from(std::iter::once("protojit-ballista").chain(args.iter().map(String::as_str))) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help: printed on stdout; a reader that stops early is no failure.
            let _ = e.print();
            return Ok(Command::Help);
        }
        Err(e) => return Err(e.render().to_string().trim_end().trim_start_matches("error: ").to_owned()),
    };
    Ok(match cli.role {
        Role::Scheduler(a) => Command::Scheduler(SchedulerOptions {
            bind_host: a.bind,
            external_host: a.external_host,
            port: a.port,
            executor_timeout_seconds: a.executor_timeout,
            expire_interval_seconds: a.expire_interval,
        }),
        Role::Executor(a) => Command::Executor(ExecutorOptions {
            bind_host: a.bind,
            external_host: a.external_host,
            port: a.port,
            grpc_port: a.grpc_port,
            scheduler_host: a.scheduler.0,
            scheduler_port: a.scheduler.1,
            vcores: a.vcores,
            work_dir: a.work_dir,
            heartbeat_interval_seconds: a.heartbeat_interval,
        }),
        // `protojit sql`'s arguments (clap), its one-line errors and exit codes.
        Role::Sql { args } => match sql_command::parse(&args) {
            Ok(Some(c)) => Command::Sql(c),
            Ok(None) => Command::Help,
            Err(e) => return Err(e.to_string()),
        },
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sql = args.first().is_some_and(|a| a == "sql");
    if let Err(e) = start_logging(if sql { log::LevelFilter::Off } else { log::LevelFilter::Warn }) {
        eprintln!("protojit-ballista: {e}");
        return ExitCode::from(2);
    }
    let command = match parse(&args) {
        Ok(c) => c,
        // `protojit sql` prints one line for a usage error; so does `sql` here.
        Err(e) => {
            eprintln!("protojit-ballista: {e}");
            return ExitCode::from(2);
        }
    };
    if let Command::Help = command {
        return ExitCode::SUCCESS;
    }
    // Ballista plans deep trees on its threads; its own binaries use 32 MiB stacks.
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().thread_stack_size(32 << 20).build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("protojit-ballista: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let result = match &command {
            Command::Scheduler(o) => run_scheduler(o).await,
            Command::Executor(o) => run_executor(o).await,
            Command::Help => Ok(()),
            Command::Sql(o) => {
                return match sql_command::run(o).await {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        if !matches!(e, protojit_sql::command::CommandError::Closed) {
                            eprintln!("protojit-ballista: {e}");
                        }
                        ExitCode::from(e.exit_code())
                    }
                }
            }
        };
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("protojit-ballista: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Command, String> {
        parse(&line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
    }

    fn error(line: &str) -> String {
        parse_line(line).err().unwrap_or_else(|| panic!("`{line}` parsed"))
    }

    #[test]
    fn roles_take_their_flags_with_the_options_defaults() {
        let Ok(Command::Scheduler(o)) = parse_line("scheduler --port 6000 --executor-timeout 5") else { panic!() };
        assert_eq!((o.port, o.executor_timeout_seconds), (6000, 5));
        assert_eq!((o.bind_host, o.expire_interval_seconds), ("127.0.0.1".to_owned(), 15));
        let Ok(Command::Executor(o)) = parse_line("executor --scheduler 10.0.0.1:7000 --vcores 3 --work-dir /w") else {
            panic!()
        };
        assert_eq!((o.scheduler_host.as_str(), o.scheduler_port, o.vcores), ("10.0.0.1", 7000, Some(3)));
        assert_eq!((o.port, o.grpc_port, o.work_dir), (50051, 50052, Some(PathBuf::from("/w"))));
        let Ok(Command::Executor(o)) = parse_line("executor") else { panic!() };
        assert_eq!((o.scheduler_host.as_str(), o.scheduler_port), ("127.0.0.1", 50050));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        assert!(error("executor --scheduler nohost").contains("HOST:PORT"));
        assert!(error("scheduler --port x").contains("--port"));
        assert!(error("scheduler --vcores 2").contains("--vcores"));
        assert!(error("worker").contains("worker"));
        let sql = error("sql --table x");
        assert!(sql.contains("<SQL>") && !sql.contains('\n'), "{sql}");
    }
}
