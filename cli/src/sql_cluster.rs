//! `protojit sql --cluster df://HOST:PORT`: hands the command to the `protojit-ballista` executable, which runs it on a Ballista cluster (this binary does not link Ballista, whose build would double the CLI's).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::ValueEnum;
use protojit::EngineKind;

use crate::args::SqlArgs;
use crate::common::{self, Failure};

/// The executable's name, and the variable that names it.
const EXECUTABLE: &str = "protojit-ballista";
const VARIABLE: &str = "PROTOJIT_BALLISTA";

/// How to get the executable, for the errors that do not find it.
const HOW_TO_GET: &str = "install it with `cargo install --path ballista` from protojit's source tree, \
     or build it with `cargo build -p protojit-ballista` and set PROTOJIT_BALLISTA=target/debug/protojit-ballista";

/// Runs `protojit-ballista sql …` with this command's arguments; its exit status, stdout
/// and stderr are this command's.
pub fn hand_over(args: &SqlArgs, url: &str) -> Result<(), Failure> {
    let executable = find_executable()?;
    let mut command = Command::new(&executable);
    command.args(forwarded(args, url));
    exec(command, &executable)
}

/// `sql` and the options the user gave, in `protojit-ballista sql`'s spelling: options left
/// at their defaults stay out (the cluster command has its own), and the query comes last,
/// after `--`, so that one starting with `-` stays the query.
fn forwarded(args: &SqlArgs, url: &str) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["sql".into(), "--cluster".into(), url.into()];
    let mut push = |key: &str, value: OsString| {
        out.push(key.into());
        out.push(value);
    };
    for set in &args.descriptor_sets {
        push("--descriptor-set", set.into());
    }
    for proto in &args.protos {
        push("--proto", proto.into());
    }
    for include in &args.includes {
        push("-I", include.into());
    }
    for table in &args.tables {
        push("--table", table.into());
    }
    let name = |v: Option<clap::builder::PossibleValue>| v.map_or_else(String::new, |v| v.get_name().to_owned());
    push("-o", name(args.output.to_possible_value()).into());
    if let Some(file) = &args.output_file {
        push("--output-file", file.into());
    }
    if args.partitions != 0 {
        push("--partitions", args.partitions.to_string().into());
    }
    if args.batch_size != 8192 {
        push("--batch-size", args.batch_size.to_string().into());
    }
    // The cluster's executors choose their engine; protojit-ballista says so if one is asked.
    if args.engine != EngineKind::Auto {
        push("--engine", name(args.engine.to_possible_value()).into());
    }
    if common::verbose() {
        out.push("--verbose".into());
    }
    out.push("--".into());
    out.push(args.query.clone().into());
    out
}

/// `$PROTOJIT_BALLISTA` (which must exist when set), else `protojit-ballista` beside this
/// executable, else the first on PATH.
fn find_executable() -> Result<PathBuf, Failure> {
    if let Some(named) = std::env::var_os(VARIABLE).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(&named);
        return match path.is_file() {
            true => Ok(path),
            false => Err(Failure::usage(format!(
                "--cluster: {VARIABLE}={} is not a file; point it at the protojit-ballista executable, or {HOW_TO_GET}",
                path.display()
            ))),
        };
    }
    let file_name = format!("{EXECUTABLE}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|dir| dir.join(&file_name)));
    let on_path = std::env::var_os("PATH")
        .map(|dirs| std::env::split_paths(&dirs).map(|dir| dir.join(&file_name)).collect::<Vec<_>>())
        .unwrap_or_default();
    beside.into_iter().chain(on_path).find(|candidate| candidate.is_file()).ok_or_else(|| {
        Failure::usage(format!(
            "--cluster needs the {EXECUTABLE} executable, which is not set in {VARIABLE}, beside this protojit, \
             or on PATH: {HOW_TO_GET}"
        ))
    })
}

/// Replaces this process with `command`: exit status, signals and the standard streams
/// are the child's own.
#[cfg(unix)]
fn exec(mut command: Command, executable: &Path) -> Result<(), Failure> {
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    Err(Failure::usage(format!("--cluster: cannot run {}: {error}", executable.display())))
}

/// Runs `command` with this process's standard streams and exits with its status.
#[cfg(not(unix))]
fn exec(mut command: Command, executable: &Path) -> Result<(), Failure> {
    let status =
        command.status().map_err(|e| Failure::usage(format!("--cluster: cannot run {}: {e}", executable.display())))?;
    std::process::exit(status.code().unwrap_or(1))
}
