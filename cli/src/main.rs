//! The `protojit` command: decode protobuf files given a schema.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use protojit::{Arena, DecodeOptions, EngineKind, Schema};

/// Decode protobuf messages with a schema loaded at run time.
#[derive(Parser)]
#[command(name = "protojit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode one message and print it in protobuf text format (as `protoc --decode`).
    ///
    /// Examples:
    ///   protojit decode --proto corpus/samples/sensor.proto --type Reading corpus/samples/reading.bin
    ///   protojit decode --descriptor-set schema.pb --type pkg.Msg - < msg.bin
    #[command(verbatim_doc_comment)]
    Decode(DecodeArgs),
}

#[derive(Args)]
struct SchemaArgs {
    /// A FileDescriptorSet (`protoc -o` / `--descriptor_set_out`); repeatable.
    #[arg(long = "descriptor-set", value_name = "FILE.pb")]
    descriptor_sets: Vec<PathBuf>,
    /// A .proto file; repeatable.
    #[arg(long = "proto", value_name = "FILE.proto")]
    protos: Vec<PathBuf>,
    /// Import search directory for --proto; repeatable (default: each file's directory).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    includes: Vec<PathBuf>,
}

#[derive(Args)]
struct DecodeArgs {
    #[command(flatten)]
    schema: SchemaArgs,
    /// Message type: full name, or a unique short name.
    #[arg(long = "type", value_name = "NAME")]
    type_name: String,
    /// Input file, or `-` for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    input: String,
    /// Decode engine.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    engine: Engine,
    /// Deepest message nesting accepted.
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_depth: u32,
    /// Do not validate UTF-8 of proto3 strings (faster; invalid text is then shown as bytes).
    #[arg(long)]
    no_utf8_check: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Engine {
    Auto,
    Jit,
    Interp,
}

/// A failure: the one line to print and the exit code.
struct Failure {
    message: String,
    code: u8,
}

const EXIT_BAD_INPUT: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn usage(message: impl Into<String>) -> Failure {
    Failure { message: message.into(), code: EXIT_USAGE }
}

fn load_schema(args: &SchemaArgs) -> Result<Schema, Failure> {
    match (args.descriptor_sets.is_empty(), args.protos.is_empty()) {
        (true, true) => Err(usage("no schema: pass --descriptor-set FILE.pb or --proto FILE.proto")),
        (false, false) => Err(usage("pass either --descriptor-set or --proto, not both")),
        (false, true) => Schema::from_descriptor_set_files(&args.descriptor_sets).map_err(|e| usage(e.to_string())),
        (true, false) => Schema::from_proto_files(&args.protos, &args.includes).map_err(|e| usage(e.to_string())),
    }
}

fn read_input(input: &str) -> Result<Vec<u8>, Failure> {
    if input == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map_err(|e| Failure { message: format!("cannot read stdin: {e}"), code: EXIT_BAD_INPUT })?;
        Ok(buf)
    } else {
        std::fs::read(input).map_err(|e| Failure { message: format!("cannot read {input}: {e}"), code: EXIT_BAD_INPUT })
    }
}

fn decode(args: &DecodeArgs) -> Result<(), Failure> {
    let schema = load_schema(&args.schema)?;
    let options = DecodeOptions { max_depth: args.max_depth, validate_utf8: !args.no_utf8_check };
    let engine = match args.engine {
        Engine::Auto => EngineKind::Auto,
        Engine::Jit => EngineKind::Jit,
        Engine::Interp => EngineKind::Interpreter,
    };
    let decoder = schema.decoder_with(&args.type_name, options, engine).map_err(|e| usage(e.to_string()))?;
    let bytes = read_input(&args.input)?;
    let arena = Arena::new();
    let name = if args.input == "-" { "stdin" } else { args.input.as_str() };
    let msg = decoder.decode(&bytes, &arena).map_err(|e| Failure {
        message: format!("{name}: cannot decode as {}: {e}", decoder.descriptor().full_name()),
        code: EXIT_BAD_INPUT,
    })?;
    write_stdout(msg.to_text_format().as_bytes())
}

/// Writes to stdout; a closed pipe (`| head`) ends quietly.
fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure { message: format!("cannot write output: {e}"), code: EXIT_BAD_INPUT }),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Decode(args) => decode(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("protojit: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
