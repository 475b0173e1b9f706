//! Command-line arguments of `protojit`: every command, flag and `--help` example.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use protojit::EngineKind;

const ABOUT: &str = "Decode protobuf messages with a schema loaded at run time (Cranelift JIT).";

const TOP_EXAMPLES: &str = "\
Examples:
  protojit decode --proto corpus/samples/telemetry.proto --type Batch corpus/samples/batch.bin
  protojit decode --descriptor-set schema.pb --type pkg.Event --delimited --output jsonl events.bin
  protojit decode-raw < mystery.bin
  protojit schema show --proto corpus/samples/telemetry.proto Batch
  protojit bench --proto corpus/samples/telemetry.proto --type Batch corpus/samples/batch.bin

Exit codes: 0 success, 1 bad input (malformed message, unreadable input file),
2 bad usage or schema (unknown flag, schema that does not load, unknown type).";

/// The `protojit` command.
#[derive(Parser)]
#[command(name = "protojit", version, about = ABOUT, after_help = TOP_EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Also print notes on stderr (`protojit: note: ...`), such as that protox could not
    /// compile the .proto files and protoc was used instead.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
}

const DECODE_EXAMPLES: &str = "\
Examples:
  # One message, as protoc --decode prints it
  protojit decode --proto corpus/samples/telemetry.proto --type Batch corpus/samples/batch.bin
  # From stdin, with a descriptor set (protoc --include_imports -o schema.pb ..., buf build -o schema.pb)
  protojit decode --descriptor-set schema.pb --type pkg.Msg - < msg.bin
  # proto3 JSON, field names as in the .proto, enums as numbers
  protojit decode --proto a.proto --type Msg --output json --proto-names --enum-numbers msg.bin
  # A varint-length-delimited stream (writeDelimitedTo), one JSON line per record, on 4 threads
  protojit decode --proto a.proto --type Event --delimited --jobs 4 --output jsonl events.bin
  # Only some values, one per line
  protojit decode --proto corpus/samples/telemetry.proto --type Batch --select device \\
      --select 'samples[*].temperature_c' corpus/samples/batch.bin
  # Canonical re-encoding
  protojit decode --proto a.proto --type Msg --output binary msg.bin > canonical.bin

With --delimited, text output starts each record with a `# record N` comment (records are
numbered from 1), --output json writes one JSON array, jsonl one line per record, and binary
a delimited stream again (binary output is refused on a terminal: redirect or pipe it).
Errors are one line naming the input, the type, the record and the byte offset.";

const DECODE_RAW_EXAMPLES: &str = "\
Examples:
  protojit decode-raw msg.bin
  protojit decode-raw < msg.bin
  protojit decode-raw --delimited events.bin

Prints exactly what `protoc --decode_raw` prints: field numbers, varints as unsigned integers,
fixed32/fixed64 as hex, length-delimited values as nested messages when they parse as one.";

const SCHEMA_EXAMPLES: &str = "\
Examples:
  protojit schema list --proto corpus/samples/telemetry.proto
  protojit schema show --proto corpus/samples/telemetry.proto Batch
  protojit schema layout --proto corpus/samples/telemetry.proto Batch --reachable
  protojit schema jit --proto corpus/samples/telemetry.proto Batch
  protojit schema jit --proto corpus/samples/telemetry.proto Batch --clif";

const BENCH_EXAMPLES: &str = "\
Examples:
  protojit bench --proto corpus/samples/telemetry.proto --type Batch corpus/samples/batch.bin
  protojit bench --descriptor-set schema.pb --type pkg.Event --delimited --time 2 events.bin

Decodes the input repeatedly with the compiled decoder, the interpreter and prost-reflect
(DynamicMessage), for about --time seconds in all, and prints MB/s of input (min, median,
max over the samples) and each arm's ratio to prost-reflect.";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  protojit completions bash > ~/.local/share/bash-completion/completions/protojit
  protojit completions zsh > ~/.zfunc/_protojit
  protojit completions fish > ~/.config/fish/completions/protojit.fish";

#[cfg(feature = "sql")]
const SQL_EXAMPLES: &str = "\
Examples:
  # top users by bytes, from a file of delimited Event records
  protojit sql --descriptor-set events.pb --table events=pkg.Event:events.bin \\
    \"SELECT user, SUM(bytes) AS total FROM events GROUP BY user ORDER BY total DESC LIMIT 10\"
  # nested fields are struct columns; CSV or Parquet out
  protojit sql --proto ev.proto --table e=Event:e.bin -o csv \"SELECT e.payload['kind'] AS kind, COUNT(*) FROM e GROUP BY 1\"
  protojit sql --proto ev.proto --table e=Event:e.bin -o parquet --output-file out.parquet \"SELECT * FROM e\"
  # the same query on a Ballista cluster (protojit-ballista scheduler|executor; see --cluster)
  protojit sql --cluster df://127.0.0.1:50050 --proto ev.proto --table e=Event:/data/e/ \"SELECT COUNT(*) FROM e\"";

#[derive(Subcommand)]
pub enum Command {
    /// Decode messages with a schema: text format (as protoc --decode), JSON, binary, or
    /// selected values.
    #[command(after_help = DECODE_EXAMPLES)]
    Decode(DecodeArgs),
    /// Encode text format or proto3 JSON into protobuf binary, as `protoc --encode`; or
    /// normalise between the formats.
    Encode(EncodeArgs),
    /// Decode a message without a schema, exactly as `protoc --decode_raw`.
    #[command(name = "decode-raw", after_help = DECODE_RAW_EXAMPLES)]
    DecodeRaw(DecodeRawArgs),
    /// Inspect a schema: message types, fields, arena layouts, compiled code.
    #[command(after_help = SCHEMA_EXAMPLES)]
    Schema(SchemaCommand),
    /// Run SQL over files of delimited records (DataFusion): each --table is a file of
    /// records of one message type.
    #[cfg(feature = "sql")]
    #[command(after_help = SQL_EXAMPLES)]
    Sql(SqlArgs),
    /// Run SQL over files of delimited records (not in this build: install protojit-cli
    /// with --features sql).
    #[cfg(not(feature = "sql"))]
    #[command(disable_help_flag = true)]
    Sql(LeftOutArgs),
    /// Measure decode speed on an input: compiled, interpreter and prost-reflect.
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(BenchArgs),
    /// Print a shell completion script.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Where the schema comes from.
#[derive(Args, Clone)]
pub struct SchemaArgs {
    /// A FileDescriptorSet (`protoc --include_imports -o`, `buf build -o`); repeatable.
    #[arg(long = "descriptor-set", value_name = "FILE.pb")]
    pub descriptor_sets: Vec<PathBuf>,
    /// A .proto file (compiled with protox; protoc from PATH as a fallback); repeatable.
    #[arg(long = "proto", value_name = "FILE.proto")]
    pub protos: Vec<PathBuf>,
    /// Import search directory for --proto; repeatable (default: each file's directory).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub includes: Vec<PathBuf>,
}

/// How to decode.
#[derive(Args, Clone)]
pub struct EngineArgs {
    /// Decode engine. auto (default): every message type starts on the interpreter and
    /// types that turn out hot are compiled on a background thread; a single input never
    /// waits for a compiler, and compiles only types with megabytes of work in it (what
    /// repays compiling them), while long --delimited streams reach compiled speed. jit:
    /// compile every reachable type before the first byte (pays off on large inputs
    /// only). interpreter (or interp): never compile.
    #[arg(long, value_enum, default_value_t = EngineKind::Auto)]
    pub engine: EngineKind,
    /// Deepest message nesting accepted.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_depth: u32,
    /// Which string fields must be valid UTF-8: features (those whose utf8_validation
    /// feature is VERIFY: proto3 and editions strings, as the specification asks; `proto3`
    /// is an alias), all (proto2 too, as generated Rust checks), or off (faster; invalid
    /// text is then shown as bytes).
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = Utf8::Features)]
    pub utf8: Utf8,
    /// Same as --utf8 off.
    #[arg(long, conflicts_with = "utf8")]
    pub no_utf8_check: bool,
}

impl EngineArgs {
    /// The UTF-8 policy the flags ask for.
    pub fn utf8_check(&self) -> protojit::Utf8Check {
        utf8_check(self.utf8, self.no_utf8_check)
    }
}

/// The UTF-8 policy of `--utf8` and `--no-utf8-check`.
pub fn utf8_check(utf8: Utf8, off: bool) -> protojit::Utf8Check {
    match (utf8, off) {
        (_, true) | (Utf8::Off, _) => protojit::Utf8Check::Off,
        (Utf8::Features, false) => protojit::Utf8Check::Features,
        (Utf8::All, false) => protojit::Utf8Check::All,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Utf8 {
    /// The string fields whose features say VERIFY (proto3 and editions strings, as the
    /// specification asks).
    #[value(alias = "proto3")]
    Features,
    /// Every string field.
    All,
    /// None.
    Off,
}

#[derive(Args)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub schema: SchemaArgs,
    /// Message type: full name, or a unique short name.
    #[arg(long = "type", value_name = "NAME")]
    pub type_name: String,
    /// Input file, or `-` for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    pub input: String,
    /// The input is a stream of varint-length-prefixed messages (writeDelimitedTo).
    #[arg(long)]
    pub delimited: bool,
    /// How the input is compressed: auto (the default: by its extension, .gz .zst .bz2
    /// .xz, else by its first bytes), none, gzip, zstd, bzip2 or xz.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = CompressionArg::Auto)]
    pub compression: CompressionArg,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// JSON: also write fields that hold their default value (proto3 scalars, empty lists).
    #[arg(long)]
    pub emit_defaults: bool,
    /// JSON: use field names as written in the .proto file instead of lowerCamelCase.
    #[arg(long)]
    pub proto_names: bool,
    /// JSON: write enum values as numbers instead of names. With --output arrow or
    /// parquet: enum columns as Int32 numbers (a synonym for --enums number).
    #[arg(long)]
    pub enum_numbers: bool,
    #[cfg(feature = "columns")]
    #[command(flatten)]
    pub mapping: protojit_arrow::MappingArgs,
    #[cfg(feature = "columns")]
    #[command(flatten)]
    pub explode: protojit_arrow::OtherMappingArgs,
    /// Print only the values at this field path, one per line (`a.b`, `list[0]`,
    /// `list[*].x`, `map["key"]`, `#7`); repeatable. With --output json the values are
    /// JSON values.
    #[arg(long, value_name = "PATH")]
    pub select: Vec<String>,
    /// With --output arrow or parquet: write here instead of stdout (a Parquet file appears
    /// under this name only once it is complete).
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// With --output arrow: rows per record batch, at most (a batch also closes once its
    /// records hold 8 MiB; Parquet output: row groups of up to 1,048,576 rows, the Parquet
    /// writer's default, whatever this says).
    #[arg(long, value_name = "ROWS", default_value_t = 8192)]
    pub batch_size: usize,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// With --delimited: decode records on N threads (output stays in input order;
    /// 0 = one per CPU).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// With --delimited: report a record that does not decode on stderr and go on (exit
    /// code 1 at the end if any failed).
    #[arg(long)]
    pub keep_going: bool,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Progress reporting.
#[derive(Args, Clone, Copy)]
pub struct ProgressArgs {
    /// Never show the progress bar.
    #[arg(long, short = 'q', conflicts_with = "progress")]
    pub quiet: bool,
    /// Always show progress on stderr (records, bytes, MB/s), even when stderr is not a
    /// terminal (by default it shows for large inputs on a terminal only).
    #[arg(long)]
    pub progress: bool,
}

/// The arguments of a command this build left out: any, so that the command itself says
/// how to get it instead of a complaint about its flags.
#[cfg(not(feature = "sql"))]
#[derive(Args)]
pub struct LeftOutArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}

/// `protojit sql`'s arguments: the SQL front end's, shared with `protojit-ballista sql`.
#[cfg(feature = "sql")]
pub use protojit_sql::command::{SqlArgs, SqlOutput};

#[derive(Args)]
pub struct DecodeRawArgs {
    /// Input file, or `-` for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    pub input: String,
    /// The input is a stream of varint-length-prefixed messages; each record is printed
    /// after a `# record N` comment.
    #[arg(long)]
    pub delimited: bool,
    /// How the input is compressed: auto (the default: by its extension, .gz .zst .bz2
    /// .xz, else by its first bytes), none, gzip, zstd, bzip2 or xz.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = CompressionArg::Auto)]
    pub compression: CompressionArg,
}

#[derive(Args)]
pub struct SchemaCommand {
    #[command(subcommand)]
    pub command: SchemaSub,
}

#[derive(Subcommand)]
pub enum SchemaSub {
    /// List the message types (full names, map entries left out).
    #[command(
        after_help = "Examples:\n  protojit schema list --proto corpus/samples/telemetry.proto\n  protojit schema list --descriptor-set schema.pb | grep -i event"
    )]
    List {
        #[command(flatten)]
        schema: SchemaArgs,
    },
    /// Show a message type's fields: number, name, kind, cardinality, oneof, default.
    #[command(
        after_help = "Examples:\n  protojit schema show --proto corpus/samples/telemetry.proto Batch\n  protojit schema show --descriptor-set schema.pb pkg.Event"
    )]
    Show {
        #[command(flatten)]
        schema: SchemaArgs,
        /// Message type: full name, or a unique short name.
        #[arg(value_name = "TYPE")]
        type_name: String,
    },
    /// Show a message type's arena layout: block size, presence words, oneof case words,
    /// and each field's offset, size and presence bit.
    #[command(
        after_help = "Examples:\n  protojit schema layout --proto corpus/samples/telemetry.proto Batch\n  protojit schema layout --proto corpus/samples/telemetry.proto Batch --reachable"
    )]
    Layout {
        #[command(flatten)]
        schema: SchemaArgs,
        /// Message type: full name, or a unique short name.
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// Also every message type reachable from TYPE.
        #[arg(long)]
        reachable: bool,
    },
    /// Compile a message type and report, per reachable type, the engine, machine-code
    /// bytes and compile time.
    #[command(
        after_help = "Examples:\n  protojit schema jit --proto corpus/samples/telemetry.proto Batch\n  protojit schema jit --proto corpus/samples/telemetry.proto Batch --clif > batch.clif"
    )]
    Jit {
        #[command(flatten)]
        schema: SchemaArgs,
        /// Message type: full name, or a unique short name.
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// Print each function's Cranelift IR.
        #[arg(long)]
        clif: bool,
    },
    /// The Arrow schema of a message type's records, as `decode -o arrow|parquet` and `sql`
    /// make their columns, before any data: to create tables ahead of time (needs the
    /// `columns` feature).
    #[command(
        after_help = "Examples:\n  protojit schema arrow --proto corpus/samples/telemetry.proto Batch\n  protojit schema arrow --proto a.proto pkg.Event --select id --select payload.user --format json\n  protojit schema arrow --descriptor-set schema.pb pkg.Event --format ipc > event.arrows"
    )]
    Arrow {
        #[command(flatten)]
        schema: SchemaArgs,
        /// Message type: full name, or a unique short name.
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// Only these field paths, in this order (`a`, `a.b.c`); repeatable.
        #[arg(long, value_name = "PATH")]
        select: Vec<String>,
        /// Enum columns as Int32 numbers instead of dictionaries of names (a synonym for
        /// --enums number).
        #[arg(long)]
        enum_numbers: bool,
        #[cfg(feature = "columns")]
        #[command(flatten)]
        mapping: protojit_arrow::MappingArgs,
        #[cfg(feature = "columns")]
        #[command(flatten)]
        explode: protojit_arrow::OtherMappingArgs,
        /// text (a line per field), json, or ipc (an Arrow IPC stream holding only the schema).
        #[arg(long, value_enum, default_value_t = SchemaFormat::Text)]
        format: SchemaFormat,
    },
}

/// How `schema arrow` writes the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaFormat {
    /// A line per field: name, Arrow type, nullability; then the schema's metadata.
    Text,
    /// JSON: the fields (name, type, nullable) and the metadata.
    Json,
    /// An Arrow IPC stream of the schema alone (what `pyarrow.ipc.open_stream(...).schema` reads).
    Ipc,
}

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub schema: SchemaArgs,
    /// Message type: full name, or a unique short name.
    #[arg(long = "type", value_name = "NAME")]
    pub type_name: String,
    /// Input file, or `-` for stdin.
    #[arg(value_name = "INPUT")]
    pub input: String,
    /// The input is a stream of varint-length-prefixed messages; each pass decodes them all.
    #[arg(long)]
    pub delimited: bool,
    /// Seconds to spend in all, shared between the arms.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub time: f64,
    /// Deepest message nesting accepted.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_depth: u32,
    /// Which string fields must be valid UTF-8 (features, all, off; proto3 = features).
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = Utf8::Features)]
    pub utf8: Utf8,
    /// Same as --utf8 off.
    #[arg(long, conflicts_with = "utf8")]
    pub no_utf8_check: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Protobuf text format, as `protoc --decode`.
    Text,
    /// Proto3 JSON, compact (a JSON array for --delimited streams).
    Json,
    /// Proto3 JSON, indented.
    JsonPretty,
    /// Proto3 JSON, one compact line per message.
    Jsonl,
    /// Canonical protobuf binary (re-encoded; delimited again for --delimited).
    Binary,
    /// An Arrow IPC stream of record batches (one row per record; --select picks columns).
    Arrow,
    /// A Parquet file (needs --output-file; --select picks columns).
    Parquet,
}

const ENCODE_EXAMPLES: &str = "\
Examples:
  # text format to binary, as protoc --encode
  protojit encode --proto ev.proto --type Event < ev.txtpb > ev.bin
  # proto3 JSON to binary, into a file
  protojit encode --proto ev.proto --type Event --from json ev.json --output-file ev.bin
  # a JSONL stream to length-delimited records, skipping (and reporting) bad lines
  protojit encode --proto ev.proto --type Event --from json --delimited --keep-going ev.jsonl > ev.bin
  # round trip: decode --delimited writes `# record N` text records, encode reads them back
  protojit decode --proto ev.proto --type Event --delimited ev.bin | protojit encode --proto ev.proto --type Event --delimited
  # normalise: JSON in, text format out
  protojit encode --proto ev.proto --type Event --from json -o text ev.json
  # the way back: a Parquet file's rows (written by decode -o parquet, or by any tool) as delimited records
  protojit encode --proto ev.proto --type Event --from parquet events.parquet --output-file events.bin
  # an Arrow IPC stream on stdin, as JSON lines
  protojit decode --proto ev.proto --type Event --delimited -o arrow ev.bin | protojit encode --proto ev.proto --type Event --from arrow -o json";

/// What `protojit encode` takes.
#[derive(Args)]
#[command(after_help = ENCODE_EXAMPLES)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub schema: SchemaArgs,
    /// The message type (full name, or a unique short name).
    #[arg(long = "type", value_name = "NAME")]
    pub type_name: String,
    /// Input file; `-` or absent: stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    pub input: String,
    /// Input format: text format (as protoc --encode reads), proto3 JSON, or a table
    /// whose rows are the records (a Parquet file, an Arrow IPC file or stream; columns
    /// matched to fields by name, as `decode -o parquet|arrow` writes them): a table is
    /// many records, so --delimited is implied.
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub from: InputFormat,
    /// Output format: binary, or JSON / text format to normalise.
    #[arg(long, short = 'o', value_enum, default_value_t = EncodeOutput::Binary)]
    pub output: EncodeOutput,
    /// A stream of records: JSON lines, or text records after `# record N` comment lines
    /// (as `decode --delimited` writes them); binary output is length-delimited.
    #[arg(long)]
    pub delimited: bool,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// In a stream, report a bad record on stderr and go on (exit 1 at the end).
    #[arg(long)]
    pub keep_going: bool,
    /// JSON: skip keys that name no field, and unknown enum names.
    #[arg(long)]
    pub ignore_unknown_fields: bool,
    /// Deepest message nesting accepted.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_depth: u32,
    /// --from parquet|arrow: skip columns that name no field (else an error).
    #[arg(long)]
    pub ignore_extra_columns: bool,
    /// --from parquet|arrow: leave out of every record the fields the table has no column
    /// for, even those `decode -o parquet` always writes (else an error; a missing
    /// required field is an error still).
    #[arg(long)]
    pub allow_missing_columns: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
/// `protojit encode --from`: the input format.
pub enum InputFormat {
    Text,
    Json,
    Parquet,
    Arrow,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
/// `protojit encode -o`: the output format.
pub enum EncodeOutput {
    Binary,
    Json,
    Text,
}

/// How an input is compressed (`--compression`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// By the file's extension, else by its first bytes.
    #[default]
    Auto,
    /// Not compressed: read as it is.
    None,
    /// gzip.
    Gzip,
    /// Zstandard.
    Zstd,
    /// bzip2.
    Bzip2,
    /// xz.
    Xz,
}

impl CompressionArg {
    /// The format to read as; `None` to tell it from the input.
    pub fn format(self) -> Option<protojit::compression::Compression> {
        use protojit::compression::Compression;
        match self {
            CompressionArg::Auto => None,
            CompressionArg::None => Some(Compression::None),
            CompressionArg::Gzip => Some(Compression::Gzip),
            CompressionArg::Zstd => Some(Compression::Zstd),
            CompressionArg::Bzip2 => Some(Compression::Bzip2),
            CompressionArg::Xz => Some(Compression::Xz),
        }
    }
}
