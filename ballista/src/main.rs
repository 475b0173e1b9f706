//! `protojit-ballista`: a Ballista scheduler or executor that reads protojit's protobuf tables, or SQL run on such a cluster (`protojit-ballista scheduler|executor|sql [--option value]…`).

mod sql_command;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use protojit_ballista::{run_executor, run_scheduler, ExecutorOptions, SchedulerOptions};
use sql_command::SqlCommand;

const USAGE: &str = "  protojit-ballista scheduler [--bind HOST] [--external-host HOST] [--port PORT]
                              [--executor-timeout SECONDS] [--expire-interval SECONDS]
      defaults: --bind 127.0.0.1 --port 50050 --executor-timeout 180 --expire-interval 15
      an executor silent for --executor-timeout seconds is lost: its tasks run again elsewhere
  protojit-ballista executor [--bind HOST] [--external-host HOST] [--port PORT] [--grpc-port PORT]
                             [--scheduler HOST:PORT] [--vcores N] [--work-dir DIR]
                             [--heartbeat-interval SECONDS]
      defaults: --bind 127.0.0.1 --port 50051 --grpc-port 50052 --scheduler 127.0.0.1:50050
                --heartbeat-interval 60";

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

/// What the command line asks for.
enum Command {
    Scheduler(SchedulerOptions),
    Executor(ExecutorOptions),
    Sql(SqlCommand),
    /// `sql --help`, printed already.
    Help,
}

fn parse(args: &[String]) -> Result<Command, String> {
    let (role, rest) = args.split_first().ok_or("name a role: scheduler, executor or sql")?;
    if role == "sql" {
        // `protojit sql`'s arguments (clap), and protojit's exit codes.
        return match sql_command::parse(rest) {
            Ok(Some(c)) => Ok(Command::Sql(c)),
            Ok(None) => Ok(Command::Help),
            Err(e) => Err(e.to_string()),
        };
    }
    if rest.len() % 2 != 0 {
        return Err(format!("'{}' needs a value", rest[rest.len() - 1]));
    }
    let pairs = rest.chunks(2).map(|p| (p[0].as_str(), p[1].as_str()));
    fn number<T: FromStr>(key: &str, value: &str) -> Result<T, String> {
        value.parse().map_err(|_| format!("{key} '{value}': expected a number"))
    }
    match role.as_str() {
        "scheduler" => {
            let mut o = SchedulerOptions::default();
            for (key, value) in pairs {
                match key {
                    "--bind" => o.bind_host = value.to_owned(),
                    "--external-host" => o.external_host = Some(value.to_owned()),
                    "--port" => o.port = number(key, value)?,
                    "--executor-timeout" => o.executor_timeout_seconds = number(key, value)?,
                    "--expire-interval" => o.expire_interval_seconds = number(key, value)?,
                    _ => return Err(format!("unknown scheduler option '{key}'")),
                }
            }
            Ok(Command::Scheduler(o))
        }
        "executor" => {
            let mut o = ExecutorOptions::default();
            for (key, value) in pairs {
                match key {
                    "--bind" => o.bind_host = value.to_owned(),
                    "--external-host" => o.external_host = Some(value.to_owned()),
                    "--port" => o.port = number(key, value)?,
                    "--grpc-port" => o.grpc_port = number(key, value)?,
                    "--scheduler" => {
                        let (host, port) =
                            value.rsplit_once(':').ok_or(format!("--scheduler '{value}': expected HOST:PORT"))?;
                        o.scheduler_host = host.to_owned();
                        o.scheduler_port = number(key, port)?;
                    }
                    "--vcores" => o.vcores = Some(number(key, value)?),
                    "--work-dir" => o.work_dir = Some(PathBuf::from(value)),
                    "--heartbeat-interval" => o.heartbeat_interval_seconds = number(key, value)?,
                    _ => return Err(format!("unknown executor option '{key}'")),
                }
            }
            Ok(Command::Executor(o))
        }
        other => Err(format!("unknown role '{other}': expected scheduler, executor or sql")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = format!("usage:\n{USAGE}\n{}\n{NOTES}", sql_command::USAGE);
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        // A reader that stops early (`| head`) is no failure.
        let _ = writeln!(std::io::stdout(), "{usage}");
        return ExitCode::SUCCESS;
    }
    let sql = args.first().is_some_and(|a| a == "sql");
    if let Err(e) = start_logging(if sql { log::LevelFilter::Off } else { log::LevelFilter::Warn }) {
        eprintln!("protojit-ballista: {e}");
        return ExitCode::from(2);
    }
    let command = match parse(&args) {
        Ok(c) => c,
        // `protojit sql` prints one line for a usage error; so does `sql` here.
        Err(e) if sql => {
            eprintln!("protojit-ballista: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("protojit-ballista: {e}\n{usage}");
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
