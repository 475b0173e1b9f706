//! Shared plumbing of the commands: failures and exit codes, stdout, inputs, schemas.

use std::io::{BufWriter, IsTerminal, Read, StdoutLock, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use protojit::compression::{decompressed, Compression};
use protojit::{Decoder, EngineOptions, Schema, Workload};

use crate::args::{EngineArgs, SchemaArgs};

/// Exit code for input that cannot be read or decoded.
pub const EXIT_BAD_INPUT: u8 = 1;
/// Exit code for bad usage or a schema that does not load (clap uses it for usage too).
pub const EXIT_USAGE: u8 = 2;

/// A failure: the one line to print (without the `protojit: ` prefix) and the exit code.
/// An empty message means "stop quietly" (stdout was closed by the reader).
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    /// Bad usage or schema: exit code 2.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure { message: message.into(), code: EXIT_USAGE }
    }
    /// Bad input: exit code 1.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure { message: message.into(), code: EXIT_BAD_INPUT }
    }
    /// The reader went away (`| head`): stop, successfully and silently.
    pub fn closed() -> Failure {
        Failure { message: String::new(), code: 0 }
    }
}

/// Buffered stdout; a closed pipe turns into [`Failure::closed`].
pub struct Out {
    w: BufWriter<StdoutLock<'static>>,
}

impl Out {
    pub fn new() -> Out {
        Out { w: BufWriter::with_capacity(1 << 16, std::io::stdout().lock()) }
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.w.write_all(bytes).map_err(write_failure)
    }

    pub fn flush(&mut self) -> Result<(), Failure> {
        self.w.flush().map_err(write_failure)
    }
}

fn write_failure(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::closed()
    } else {
        Failure::input(format!("cannot write output: {e}"))
    }
}

/// Whether stdout is a terminal (binary output refuses to go there).
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// How an input is named in messages: its path, or `stdin`.
pub fn input_name(input: &str) -> &str {
    if input == "-" {
        "stdin"
    } else {
        input
    }
}

/// Reads a whole input (file or `-`), decompressed as `compression` says (`None`: by its
/// extension, else by its first bytes).
pub fn read_input(input: &str, compression: Option<Compression>) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    open_input(input, compression)?
        .0
        .read_to_end(&mut buf)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", input_name(input))))?;
    Ok(buf)
}

/// Opens an input for streaming, decompressed as `compression` says (`None`: by its
/// extension, `.gz` `.zst` `.bz2` `.xz`, else by its first bytes), with its size when
/// known (a regular file read as it is).
pub fn open_input(
    input: &str,
    compression: Option<Compression>,
) -> Result<(Box<dyn Read + Send>, Option<u64>), Failure> {
    let fail = |e: std::io::Error| Failure::input(format!("cannot read {}: {e}", input_name(input)));
    if input == "-" {
        let (r, _) = decompressed(std::io::stdin(), None, compression).map_err(fail)?;
        return Ok((r, None));
    }
    let file = std::fs::File::open(input).map_err(fail)?;
    let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    if compression == Some(Compression::None) {
        remember_raw_compressed(input);
    }
    let (r, format) = decompressed(file, Some(Path::new(input)), compression).map_err(fail)?;
    if format != Compression::None {
        note(&format!("{input}: read as {format}-compressed"));
        return Ok((r, None));
    }
    Ok((r, size))
}

/// A file read as it is (`--compression none`) whose first bytes are a compression's
/// magic: a failure to read it says so ([`raw_compressed_hint`]).
static RAW_COMPRESSED: std::sync::OnceLock<(String, Compression)> = std::sync::OnceLock::new();

/// Looks at the first bytes of `input`, read as it is, for a compression's magic.
fn remember_raw_compressed(input: &str) {
    let mut first = [0u8; 6];
    let n = std::fs::File::open(input).and_then(|mut f| f.read(&mut first)).unwrap_or(0);
    if let Some(found) = Compression::from_magic(&first[..n]) {
        let _ = RAW_COMPRESSED.set((input.to_owned(), found));
    }
}

/// What to add to a failure to read an input that was read as it is but starts like a
/// compressed file: which compression, and the option that reads it.
pub fn raw_compressed_hint() -> Option<String> {
    RAW_COMPRESSED.get().map(|(input, c)| {
        format!(" ({input} starts with {c}'s magic bytes and was read as it is, as --compression none says; --compression {c} reads it)")
    })
}

/// Whether `-v`/`--verbose` was given: notes go to stderr only then, so that a failing
/// command prints one line.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Records the `-v`/`--verbose` flag (once, from `main`).
pub fn set_verbose(yes: bool) {
    VERBOSE.store(yes, Ordering::Relaxed);
}

/// Whether `-v`/`--verbose` was given (`sql --cluster` passes it on).
#[cfg(feature = "sql")]
pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Prints `protojit: note: {message}` on stderr with `--verbose`; nothing otherwise.
pub fn note(message: &str) {
    if VERBOSE.load(Ordering::Relaxed) {
        eprintln!("protojit: note: {message}");
    }
}

/// How one message type decodes, as `schema jit` and `-v` say it.
pub fn engine_name(t: &protojit::TypeStats) -> String {
    match &t.engine {
        protojit::TypeEngine::Jit => "jit".to_owned(),
        protojit::TypeEngine::Interpreter(why) if why.is_empty() => "interpreter".to_owned(),
        protojit::TypeEngine::Interpreter(why) => format!("interpreter ({why})"),
        protojit::TypeEngine::Cold => "interpreter (cold)".to_owned(),
        protojit::TypeEngine::Queued => "interpreter (queued for compilation)".to_owned(),
    }
}

/// Notes (`--verbose`) which engine decodes each message type of `decoder` now, at the end
/// of a run: compiled code, or the interpreter and why. Nothing is decoded by anything the
/// note does not name. (The columnar commands' note.)
#[cfg(feature = "columns")]
pub fn note_engines(decoder: &Decoder) {
    if !VERBOSE.load(Ordering::Relaxed) {
        return;
    }
    let types: Vec<String> =
        decoder.stats().types.iter().map(|t| format!("{} {}", t.message_type, engine_name(t))).collect();
    note(&format!("at the end, each message type decodes by: {}", types.join(", ")));
}

/// Loads the schema the flags name; its notes (see [`Schema::notes`]) show with `--verbose`.
pub fn load_schema(args: &SchemaArgs) -> Result<Schema, Failure> {
    let schema = load_schema_quietly(args)?;
    for n in schema.notes() {
        note(n);
    }
    Ok(schema)
}

fn load_schema_quietly(args: &SchemaArgs) -> Result<Schema, Failure> {
    match (args.descriptor_sets.is_empty(), args.protos.is_empty()) {
        (true, true) => Err(Failure::usage("no schema: pass --descriptor-set FILE.pb or --proto FILE.proto")),
        (false, false) => Err(Failure::usage("pass either --descriptor-set or --proto, not both")),
        (false, true) => {
            Schema::from_descriptor_set_files(&args.descriptor_sets).map_err(|e| Failure::usage(e.to_string()))
        }
        (true, false) => {
            Schema::from_proto_files(&args.protos, &args.includes).map_err(|e| Failure::usage(e.to_string()))
        }
    }
}

/// A decoder for `type_name` with the engine flags, for a stream of records
/// (`input_bytes`: the stream's size, when known), tiered as the schema's engines say for
/// it (noted with `-v` when they leave it on the interpreter).
pub fn decoder(
    schema: &Schema,
    type_name: &str,
    engine: &EngineArgs,
    input_bytes: Option<u64>,
) -> Result<Decoder, Failure> {
    let tiering = tiering(schema, type_name, engine, Workload::Stream { bytes: input_bytes, threads: None })?;
    decoder_with(schema, type_name, engine, tiering)
}

/// A decoder for one input read once (`input_bytes` long): the schema's engines tier it so
/// that only a long input compiles.
pub fn single_input_decoder(
    schema: &Schema,
    type_name: &str,
    engine: &EngineArgs,
    input_bytes: Option<u64>,
) -> Result<Decoder, Failure> {
    let workload = Workload::OneInput { bytes: input_bytes };
    let tiering = match engine.engine {
        protojit::EngineKind::Auto => tiering_quiet(schema, type_name, workload)?.0,
        _ => protojit::Tiering::default(),
    };
    decoder_with(schema, type_name, engine, tiering)
}

fn decoder_with(
    schema: &Schema,
    type_name: &str,
    engine: &EngineArgs,
    tiering: protojit::Tiering,
) -> Result<Decoder, Failure> {
    let options = EngineOptions::default()
        .with_kind(engine.engine)
        .with_tiering(tiering)
        .with_max_depth(engine.max_depth)
        .with_utf8(engine.utf8_check());
    schema.decoder_with_options(type_name, &options).map_err(|e| Failure::usage(e.to_string()))
}

/// The tiering the schema's engines decide for `workload` (`Engines::tiering`), noted
/// (`-v`) when it leaves the type on the interpreter; other engine kinds than `auto` do
/// not tier. Decoders and converters alike.
pub fn tiering(
    schema: &Schema,
    type_name: &str,
    engine: &EngineArgs,
    workload: Workload,
) -> Result<protojit::Tiering, Failure> {
    if engine.engine != protojit::EngineKind::Auto {
        return Ok(protojit::Tiering::default());
    }
    let (tiering, why) = tiering_quiet(schema, type_name, workload)?;
    if let Some(why) = why {
        note(&why);
    }
    Ok(tiering)
}

fn tiering_quiet(
    schema: &Schema,
    type_name: &str,
    workload: Workload,
) -> Result<(protojit::Tiering, Option<String>), Failure> {
    let full = resolve(schema, type_name)?;
    Ok(match schema.layouts().index_of(&full) {
        Some(root) => schema.engines().tiering(root, workload),
        None => (protojit::Tiering::default(), None),
    })
}

/// The size of input `input` when it is a regular file (not `-`, not a pipe).
#[cfg(feature = "columns")]
pub fn input_size(input: &str) -> Option<u64> {
    (input != "-").then(|| std::fs::metadata(input).ok().filter(|m| m.is_file()).map(|m| m.len())).flatten()
}

/// Resolves a type name (full, or a unique short name) in `schema`.
pub fn resolve(schema: &Schema, type_name: &str) -> Result<String, Failure> {
    schema.resolve_type(type_name).map_err(|e| Failure::usage(e.to_string()))
}

/// A library error (which may span lines) on one line.
#[cfg(feature = "columns")]
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
