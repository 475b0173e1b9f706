//! `protojit-ballista`: a Ballista scheduler or executor that reads protojit's protobuf tables (`protojit-ballista scheduler|executor [--option value]…`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use protojit_ballista::{run_executor, run_scheduler, ExecutorOptions, SchedulerOptions};

const USAGE: &str = "usage:
  protojit-ballista scheduler [--bind HOST] [--external-host HOST] [--port PORT]
      defaults: --bind 127.0.0.1 --port 50050
  protojit-ballista executor [--bind HOST] [--external-host HOST] [--port PORT] [--grpc-port PORT]
                             [--scheduler HOST:PORT] [--vcores N] [--work-dir DIR]
      defaults: --bind 127.0.0.1 --port 50051 --grpc-port 50052 --scheduler 127.0.0.1:50050
Ballista's endpoints carry no authentication: bind to 127.0.0.1, or to a private network.
Log records go to stderr; PROTOJIT_BALLISTA_LOG=error|warn|info|debug|trace picks the level (default warn).";

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

fn start_logging() -> Result<(), String> {
    let level = match std::env::var("PROTOJIT_BALLISTA_LOG") {
        Ok(name) => name
            .parse::<log::LevelFilter>()
            .map_err(|_| format!("PROTOJIT_BALLISTA_LOG='{name}': expected off, error, warn, info, debug or trace"))?,
        Err(_) => log::LevelFilter::Warn,
    };
    log::set_logger(&StderrLog).map_err(|e| e.to_string())?;
    log::set_max_level(level);
    Ok(())
}

/// What the command line asks for.
enum Command {
    Scheduler(SchedulerOptions),
    Executor(ExecutorOptions),
}

fn parse(args: &[String]) -> Result<Command, String> {
    let (role, rest) = args.split_first().ok_or("name a role: scheduler or executor")?;
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
                    _ => return Err(format!("unknown executor option '{key}'")),
                }
            }
            Ok(Command::Executor(o))
        }
        other => Err(format!("unknown role '{other}': expected scheduler or executor")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if let Err(e) = start_logging() {
        eprintln!("protojit-ballista: {e}");
        return ExitCode::from(2);
    }
    let command = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("protojit-ballista: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Ballista plans deep trees on its threads; its own binaries use 32 MiB stacks.
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().thread_stack_size(32 << 20).build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("protojit-ballista: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match &command {
            Command::Scheduler(o) => run_scheduler(o).await,
            Command::Executor(o) => run_executor(o).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("protojit-ballista: {e}");
            ExitCode::FAILURE
        }
    }
}
