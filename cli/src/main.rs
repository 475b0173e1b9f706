//! The `protojit` command: parses arguments, runs one command, prints one-line errors.

#![forbid(unsafe_code)]

mod args;
mod bench;
#[cfg(feature = "columns")]
mod columns;
mod common;
mod decode;
mod decode_raw;
mod encode;
#[cfg(not(all(feature = "columns", feature = "sql")))]
mod features;
mod pool;
mod progress;
#[cfg(feature = "columns")]
mod row_groups;
mod schema_cmd;
#[cfg(feature = "sql")]
mod sql;
#[cfg(feature = "sql")]
mod sql_cluster;
mod stream;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use args::{Cli, Command};
use common::{Failure, Out};

fn completions(shell: clap_complete::Shell) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "protojit", &mut script);
    let mut out = Out::new();
    out.write(&script)?;
    out.flush()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::set_verbose(cli.verbose);
    let result = match &cli.command {
        Command::Decode(args) => decode::run(args),
        Command::DecodeRaw(args) => decode_raw::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Schema(args) => schema_cmd::run(&args.command),
        #[cfg(feature = "sql")]
        Command::Sql(args) => sql::run(args),
        #[cfg(not(feature = "sql"))]
        Command::Sql(_) => Err(features::left_out("the sql command", "sql")),
        Command::Bench(args) => bench::run(args),
        Command::Completions { shell } => completions(*shell),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if f.message.is_empty() => ExitCode::from(f.code),
        Err(f) => {
            let hint = if f.code == common::EXIT_BAD_INPUT { common::raw_compressed_hint() } else { None };
            eprintln!("protojit: {}{}", f.message, hint.unwrap_or_default());
            ExitCode::from(f.code)
        }
    }
}
