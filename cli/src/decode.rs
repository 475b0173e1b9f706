//! `protojit decode`: one message or a delimited stream (on N threads, output in input
//! order), printed as text, JSON, binary or selected values.

use std::fmt::Write as _;
use std::io::Read;

use protojit::{Arena, DecodeError, Decoder, FieldPath, JsonOptions, MessageRef, Value};
use protojit_arena::wire::write_varint;
use protojit_reflect::write_text_string;

use crate::args::{DecodeArgs, Output};
use crate::common::{self, input_name, Failure, Out};
use crate::pool;
use crate::progress::Progress;
use crate::stream::{RecordInfo, RecordReader};

/// Input bytes in one batch of a stream (a work item for one thread): small enough that
/// the threads share the last batches evenly and memory stays bounded (a few batches per
/// thread are in flight), large enough that handing one over costs nothing in comparison.
const BATCH_BYTES: usize = 1 << 18;
/// Records in one batch.
const BATCH_RECORDS: usize = 1 << 12;

pub fn run(args: &DecodeArgs) -> Result<(), Failure> {
    if matches!(args.output, Output::Arrow | Output::Parquet) {
        if !args.delimited && args.keep_going {
            return Err(Failure::usage("--keep-going applies to --delimited streams"));
        }
        #[cfg(feature = "columns")]
        return crate::columns::run(args, &common::load_schema(&args.schema)?);
        #[cfg(not(feature = "columns"))]
        return Err(crate::features::left_out(
            if args.output == Output::Arrow { "--output arrow" } else { "--output parquet" },
            "columns",
        ));
    }
    if args.output_file.is_some() {
        return Err(Failure::usage(
            "--output-file applies to --output arrow and parquet; redirect stdout for the others",
        ));
    }
    #[cfg(feature = "columns")]
    if args.mapping.any() || args.explode.any() {
        return Err(Failure::usage(
            "--oneof-case, --maps, --large, --enums, --flatten, --any, --recursion, --structs, --explode, --explode-outer and --extensions shape columns: they apply to --output arrow and parquet",
        ));
    }
    let json = matches!(args.output, Output::Json | Output::JsonPretty | Output::Jsonl);
    if !json && (args.emit_defaults || args.proto_names || args.enum_numbers) {
        return Err(Failure::usage("--emit-defaults, --proto-names and --enum-numbers apply to JSON output (--output json, json-pretty or jsonl)"));
    }
    if args.output == Output::Binary && !args.select.is_empty() {
        return Err(Failure::usage("--select prints values as text or JSON, not --output binary"));
    }
    if !args.delimited && (args.keep_going || args.jobs != 1) {
        return Err(Failure::usage("--jobs and --keep-going apply to --delimited streams"));
    }
    if args.output == Output::Binary && common::stdout_is_terminal() {
        return Err(Failure::usage("refusing to write binary output to a terminal; redirect or pipe it"));
    }
    let schema = common::load_schema(&args.schema)?;
    // Usage errors first (a wrong type name, a bad --select), without waiting for
    // standard input; then the input is opened (a single message: read) before the
    // decoder is made, since its size decides whether compiling can pay.
    let type_name = common::resolve(&schema, &args.type_name)?;
    let layouts = schema.layouts();
    let root = layouts
        .index_of(&type_name)
        .ok_or_else(|| Failure::usage(format!("{type_name} has no layout in this schema")))?;
    let select = args
        .select
        .iter()
        .map(|p| FieldPath::parse_in(layouts, root, p).map_err(|e| Failure::usage(format!("--select {p}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let input = if args.delimited {
        let (reader, size) = common::open_input(&args.input, args.compression.format())?;
        Input::Stream(reader, size)
    } else {
        Input::Message(common::read_input(&args.input, args.compression.format())?)
    };
    let decoder = match &input {
        Input::Stream(_, size) => common::decoder(&schema, &type_name, &args.engine, *size)?,
        Input::Message(bytes) => {
            common::single_input_decoder(&schema, &type_name, &args.engine, Some(bytes.len() as u64))?
        }
    };
    let format = Format {
        output: args.output,
        json: JsonOptions::new()
            .emit_defaults(args.emit_defaults)
            .use_proto_field_name(args.proto_names)
            .use_enum_numbers(args.enum_numbers),
        select,
        delimited: args.delimited,
    };
    let name = input_name(&args.input).to_owned();
    let mut out = Out::new();
    match input {
        Input::Stream(input, size) => {
            let jobs =
                if args.jobs == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { args.jobs };
            let mut progress = Progress::new(args.progress, size);
            let ctx = Stream {
                decoder: &decoder,
                format: &format,
                name: &name,
                type_name: &type_name,
                keep_going: args.keep_going,
            };
            let result = ctx.run(input, jobs, &mut out, &mut progress);
            match result {
                Ok(()) => progress.finish(),
                // The error line goes on a line of its own.
                Err(_) => progress.interrupt(),
            }
            result
        }
        Input::Message(bytes) => {
            let mut progress = Progress::new(args.progress, Some(bytes.len() as u64));
            let arena = Arena::new();
            let msg = decoder
                .decode(&bytes, &arena)
                .map_err(|e| Failure::input(format!("{name}: cannot decode as {type_name}: {e}")))?;
            let mut buf = Vec::new();
            format.record(&msg, 1, &mut buf, &mut String::new()).map_err(|e| Failure::input(format!("{name}: {e}")))?;
            out.write(format.open())?;
            out.write(&buf)?;
            out.write(format.close(true))?;
            out.flush()?;
            progress.update(1, bytes.len() as u64);
            progress.finish();
            Ok(())
        }
    }
}

/// What `decode` reads: a stream of delimited records (its size, when known), or one
/// message, read whole.
enum Input {
    Stream(Box<dyn Read + Send>, Option<u64>),
    Message(Vec<u8>),
}

/// How each decoded message is printed.
struct Format {
    output: Output,
    json: JsonOptions,
    select: Vec<FieldPath>,
    delimited: bool,
}

impl Format {
    /// Whether records are elements of one JSON array (`--delimited --output json[-pretty]`).
    fn array(&self) -> bool {
        self.delimited && self.select.is_empty() && matches!(self.output, Output::Json | Output::JsonPretty)
    }

    /// Written before the first record.
    fn open(&self) -> &'static [u8] {
        if self.array() {
            b"["
        } else {
            b""
        }
    }

    /// Written between two records.
    fn separator(&self) -> &'static [u8] {
        if self.array() {
            b","
        } else {
            b""
        }
    }

    /// Written after the last record (`any`: whether there was one).
    fn close(&self, any: bool) -> &'static [u8] {
        match (self.array(), any) {
            (true, true) => b"\n]\n",
            (true, false) => b"]\n",
            _ => b"",
        }
    }

    /// Appends record `number` (from 1) to `out`; an error is a message that has no JSON
    /// form. `scratch` is a string to print into, reused from record to record.
    fn record(&self, msg: &MessageRef<'_>, number: u64, out: &mut Vec<u8>, scratch: &mut String) -> Result<(), String> {
        let json_err =
            |e: protojit::JsonError| format!("{} has no proto3 JSON form: {e}", msg.descriptor().full_name());
        if !self.select.is_empty() {
            let line = scratch;
            for path in &self.select {
                let mut err = None;
                path.for_each(msg, |v| {
                    if err.is_some() {
                        return;
                    }
                    line.clear();
                    match self.output {
                        Output::Text => text_value(&v, line),
                        _ => match v.to_json_string(&self.json) {
                            Ok(s) => *line = s,
                            Err(e) => err = Some(e),
                        },
                    }
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                });
                if let Some(e) = err {
                    return Err(json_err(e));
                }
            }
            return Ok(());
        }
        match self.output {
            Output::Text => {
                scratch.clear();
                if self.delimited {
                    writeln!(scratch, "# record {number}").unwrap();
                }
                msg.write_text_format(scratch);
                out.extend_from_slice(scratch.as_bytes());
            }
            Output::Json | Output::Jsonl => {
                if self.array() {
                    out.push(b'\n');
                }
                msg.write_json(out, &self.json).map_err(json_err)?;
                if !self.array() {
                    out.push(b'\n');
                }
            }
            Output::JsonPretty => {
                if self.array() {
                    out.push(b'\n');
                }
                msg.write_json_pretty(out, &self.json).map_err(json_err)?;
                if !self.array() {
                    out.push(b'\n');
                }
            }
            Output::Binary => {
                if self.delimited {
                    write_varint(out, msg.encoded_len() as u64);
                }
                msg.encode(out);
            }
            Output::Arrow | Output::Parquet => unreachable!("columnar output is written by columns.rs"),
        }
        Ok(())
    }
}

/// A value on one line: scalars as in text format (strings and bytes quoted with C
/// escapes, enums by name), floats in their shortest round-trip form, messages in one-line
/// text format (`{ a: 1 b { c: 2 } }`), lists as `[x, y]`, maps as `{k: v, ...}`.
fn text_value(v: &Value<'_>, out: &mut String) {
    match v {
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::I32(n) => write!(out, "{n}").unwrap(),
        Value::I64(n) => write!(out, "{n}").unwrap(),
        Value::U32(n) => write!(out, "{n}").unwrap(),
        Value::U64(n) => write!(out, "{n}").unwrap(),
        Value::F32(x) => float(f64::from(*x), &x.to_string(), &format!("{x:e}"), out),
        Value::F64(x) => float(*x, &x.to_string(), &format!("{x:e}"), out),
        Value::String(s) => write_text_string(s.as_bytes(), out),
        Value::Bytes(b) => write_text_string(b, out),
        Value::Enum(e) => match e.name() {
            Some(name) => out.push_str(name),
            None => write!(out, "{}", e.number).unwrap(),
        },
        Value::Message(m) => {
            let text = m.to_text_format();
            let parts: Vec<&str> = text.lines().map(str::trim).collect();
            if parts.is_empty() {
                out.push_str("{}");
            } else {
                write!(out, "{{ {} }}", parts.join(" ")).unwrap();
            }
        }
        Value::List(l) => {
            out.push('[');
            for (i, e) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                text_value(&e, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, e)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                text_value(&k.to_value(), out);
                out.push_str(": ");
                text_value(&e, out);
            }
            out.push('}');
        }
    }
}

/// `plain` (shortest round-trip), or `exp` for very large or small magnitudes;
/// non-finite values as text format writes them.
fn float(x: f64, plain: &str, exp: &str, out: &mut String) {
    if x.is_nan() {
        out.push_str("nan");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
    } else if x != 0.0 && (x.abs() >= 1e16 || x.abs() < 1e-5) {
        out.push_str(exp);
    } else {
        out.push_str(plain);
    }
}

/// Decoding a delimited stream.
struct Stream<'x> {
    decoder: &'x Decoder,
    format: &'x Format,
    name: &'x str,
    type_name: &'x str,
    keep_going: bool,
}

/// What a worker made of a batch of records.
#[derive(Default)]
struct ChunkOut {
    /// The printed records, back to back.
    bytes: Vec<u8>,
    /// End of each printed record in `bytes`.
    ends: Vec<usize>,
    /// Records that failed (in order): their error lines.
    errors: Vec<String>,
    /// Without --keep-going: the batch stopped at this record's error.
    fatal: Option<String>,
}

/// Records printed, failed and read so far.
#[derive(Default)]
struct Tally {
    printed: u64,
    failed: u64,
    total: u64,
}

/// One work item: a run of records read from the stream and what a worker printed of
/// them. Items are recycled, buffers and all.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Each record, with its start in `bytes`.
    records: Vec<(RecordInfo, usize)>,
    /// Bytes of the stream read once this batch was read.
    offset: u64,
    /// A framing or read error right after these records: the stream stops there.
    end: Option<Failure>,
    out: ChunkOut,
}

/// A worker's own: the arena records decode into (reset after each) and the string
/// they print into.
struct Worker {
    arena: Arena,
    scratch: String,
}

impl Stream<'_> {
    /// Reads, decodes and prints batches on `jobs` workers (each reads its batch straight
    /// from the input, in turn; on this thread alone with one job), and writes their
    /// output here in input order: reading, decoding and writing overlap, and the workers
    /// format into their own buffers.
    fn run(
        &self,
        input: Box<dyn Read + Send>,
        jobs: usize,
        out: &mut Out,
        progress: &mut Progress,
    ) -> Result<(), Failure> {
        let mut reader = RecordReader::new(input, self.name, self.type_name);
        let mut tally = Tally::default();
        out.write(self.format.open())?;
        pool::ordered(
            jobs,
            |batch: &mut Batch| Ok(self.fill(&mut reader, batch)),
            || Worker { arena: Arena::new(), scratch: String::new() },
            |worker, batch| self.decode_batch(worker, batch),
            |batch| self.write_batch(batch, out, progress, &mut tally),
        )?;
        out.write(self.format.close(tally.printed > 0))?;
        out.flush()?;
        if tally.failed > 0 {
            progress.interrupt();
            return Err(Failure::input(format!(
                "{}: {} of {} records could not be decoded as {}",
                self.name, tally.failed, tally.total, self.type_name
            )));
        }
        Ok(())
    }

    /// Reads the next batch of records into `batch` (emptied first); returns whether
    /// more may follow (not after the end of the stream or a framing error).
    fn fill(&self, reader: &mut RecordReader<Box<dyn Read + Send>>, batch: &mut Batch) -> bool {
        let (more, end) = reader.read_run(&mut batch.bytes, &mut batch.records, BATCH_RECORDS, BATCH_BYTES);
        batch.end = end;
        batch.offset = reader.offset();
        more
    }

    /// Writes a decoded batch's records and reports its failed records; a fatal error
    /// (without --keep-going) or a framing error ends the run after the records before it.
    fn write_batch(
        &self,
        batch: &mut Batch,
        out: &mut Out,
        progress: &mut Progress,
        tally: &mut Tally,
    ) -> Result<(), Failure> {
        tally.total += batch.records.len() as u64;
        let chunk = &mut batch.out;
        let separator = self.format.separator();
        if separator.is_empty() {
            out.write(&chunk.bytes)?;
            tally.printed += chunk.ends.len() as u64;
        } else {
            let mut start = 0;
            for &end in &chunk.ends {
                if tally.printed > 0 {
                    out.write(separator)?;
                }
                out.write(&chunk.bytes[start..end])?;
                start = end;
                tally.printed += 1;
            }
        }
        for line in &chunk.errors {
            progress.interrupt();
            eprintln!("protojit: {line}");
            tally.failed += 1;
        }
        if let Some(line) = chunk.fatal.take() {
            out.flush()?;
            return Err(Failure::input(line));
        }
        progress.update(tally.total, batch.offset);
        if let Some(e) = batch.end.take() {
            out.flush()?;
            progress.interrupt();
            return Err(e);
        }
        // Output appears batch by batch, also when the input trickles in.
        out.flush()
    }

    /// Decodes and prints a batch's records into its output (emptied first).
    fn decode_batch(&self, worker: &mut Worker, batch: &mut Batch) {
        let Batch { bytes, records, out, .. } = batch;
        out.bytes.clear();
        out.ends.clear();
        out.errors.clear();
        out.fatal = None;
        for &(info, start) in records.iter() {
            let record = &bytes[start..start + info.len];
            let result = match self.decoder.decode(record, &worker.arena) {
                Ok(msg) => self
                    .format
                    .record(&msg, info.number, &mut out.bytes, &mut worker.scratch)
                    .map_err(|e| format!("{}: record {}: {e}", self.name, info.number)),
                Err(e) => Err(self.decode_error(&info, e)),
            };
            worker.arena.reset();
            match result {
                Ok(()) => out.ends.push(out.bytes.len()),
                Err(line) => {
                    // Drop whatever the failed record printed.
                    out.bytes.truncate(out.ends.last().copied().unwrap_or(0));
                    if self.keep_going {
                        out.errors.push(line);
                    } else {
                        out.fatal = Some(line);
                        break;
                    }
                }
            }
        }
    }

    fn decode_error(&self, info: &RecordInfo, e: DecodeError) -> String {
        format!(
            "{}: record {}: cannot decode as {}: {} at byte offset {} ({} bytes into the record, which starts at byte offset {})",
            self.name,
            info.number,
            self.type_name,
            e.kind.describe(),
            info.data_offset + e.offset as u64,
            e.offset,
            info.data_offset,
        )
    }
}
