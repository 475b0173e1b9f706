//! `protojit encode`: text format, proto3 JSON or a table's rows into protobuf binary, as `protoc --encode` and `buf convert` do.
//!
//! `-o json|text` normalises instead, and `--delimited` reads streams. `--from parquet|arrow`
//! is the way back from `decode -o parquet|arrow`: each row of the table becomes a record
//! ([`protojit_arrow::Encoder`]), written varint-delimited.

use std::io::Write;

use protojit::{json_to_binary, text_to_binary, Decoder, JsonOptions, ParseError, ParseOptions};

use crate::args::{EncodeArgs, EncodeOutput, InputFormat};
use crate::common::{input_name, load_schema, read_input, resolve, Failure};

/// One record of the input: its text, its number (1-based) and the input line it starts on.
struct Record<'a> {
    text: &'a [u8],
    number: usize,
    first_line: usize,
}

/// JSON lines: every non-blank line is a record.
fn json_records(input: &[u8]) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    for (i, line) in input.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.push(Record { text: line, number: out.len() + 1, first_line: i + 1 });
    }
    out
}

/// Text records: split at `# record N` lines; text before the first such line is a record
/// of its own unless it is only blank lines and comments.
fn text_records(input: &[u8]) -> Vec<Record<'_>> {
    // (start, end, first line) of each chunk between markers.
    let mut chunks = Vec::new();
    let (mut start, mut first_line, mut offset) = (0, 1, 0);
    for (i, line) in input.split(|&b| b == b'\n').enumerate() {
        if line.starts_with(b"# record ") {
            chunks.push((start, offset, first_line));
            start = offset + line.len() + 1;
            first_line = i + 2;
        }
        offset += line.len() + 1;
    }
    chunks.push((start, input.len(), first_line));
    let mut out = Vec::new();
    for (i, (s, e, line)) in chunks.into_iter().enumerate() {
        let text = &input[s.min(input.len())..e.min(input.len())];
        let blank = text.split(|&b| b == b'\n').all(|l| {
            let l = l.trim_ascii();
            l.is_empty() || l.starts_with(b"#")
        });
        if i == 0 && blank {
            continue;
        }
        out.push(Record { text, number: out.len() + 1, first_line: line });
    }
    out
}

/// Runs `protojit encode`.
pub fn run(args: &EncodeArgs) -> Result<(), Failure> {
    let schema = load_schema(&args.schema)?;
    let name = resolve(&schema, &args.type_name)?;
    if matches!(args.from, InputFormat::Parquet | InputFormat::Arrow) {
        #[cfg(feature = "columns")]
        return table::run(args, &schema, &name);
        #[cfg(not(feature = "columns"))]
        return Err(crate::features::left_out("encode --from parquet|arrow", "columns"));
    }
    let layouts = schema.layouts();
    let root = layouts.index_of(&name).ok_or_else(|| Failure::usage(format!("no type {name}")))?;
    let decoder = match args.output {
        EncodeOutput::Binary => None,
        _ => Some(schema.decoder(&name).map_err(|e| Failure::usage(e.to_string()))?),
    };
    let input = read_input(&args.input, None)?;
    let options = ParseOptions { ignore_unknown_fields: args.ignore_unknown_fields, max_depth: args.max_depth };
    let records = match (args.delimited, args.from) {
        (false, _) => vec![Record { text: &input, number: 1, first_line: 1 }],
        (true, InputFormat::Json) => json_records(&input),
        (true, InputFormat::Text) => text_records(&input),
        (true, InputFormat::Parquet | InputFormat::Arrow) => unreachable!("tables are encoded by table::run"),
    };
    let mut out: Box<dyn Write> = match &args.output_file {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| Failure::input(format!("cannot write {}: {e}", path.display())))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut failed = 0usize;
    let mut bytes = Vec::new();
    let mut rendered = Vec::new();
    for record in &records {
        bytes.clear();
        rendered.clear();
        let result = match args.from {
            InputFormat::Json => json_to_binary(layouts, root, record.text, &options, &mut bytes),
            InputFormat::Text => text_to_binary(layouts, root, record.text, &options, &mut bytes),
            InputFormat::Parquet | InputFormat::Arrow => unreachable!("tables are encoded by table::run"),
        };
        let result = result
            .map_err(|e| where_(args, record, &e))
            .and_then(|()| render(args, decoder.as_ref(), record, &bytes, &mut rendered));
        match result {
            Ok(()) => write_all(&mut out, &rendered)?,
            Err(message) if args.keep_going && args.delimited => {
                failed += 1;
                eprintln!("protojit: {message}");
            }
            Err(message) => {
                write_all(&mut out, &[])?;
                let _ = out.flush();
                return Err(Failure::input(message));
            }
        }
    }
    out.flush().map_err(|e| write_failure(&e))?;
    if failed > 0 {
        return Err(Failure::input(format!("{failed} of {} records could not be encoded", records.len())));
    }
    Ok(())
}

/// The record's output, in the requested form.
fn render(
    args: &EncodeArgs,
    decoder: Option<&Decoder>,
    record: &Record,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let Some(decoder) = decoder else {
        if args.delimited {
            protojit_arena::wire::write_varint(out, bytes.len() as u64);
        }
        out.extend_from_slice(bytes);
        return Ok(());
    };
    let msg = decoder.decode_owned(bytes.to_vec()).map_err(|e| format!("record {}: {e}", record.number))?;
    let msg = msg.message();
    match args.output {
        EncodeOutput::Json => {
            let json =
                msg.to_json_string(&JsonOptions::default()).map_err(|e| format!("record {}: {e}", record.number))?;
            out.extend_from_slice(json.as_bytes());
            out.push(b'\n');
        }
        EncodeOutput::Text => {
            if args.delimited {
                out.extend_from_slice(format!("# record {}\n", record.number).as_bytes());
            }
            out.extend_from_slice(msg.to_text_format().as_bytes());
        }
        EncodeOutput::Binary => unreachable!("binary output needs no decoder"),
    }
    Ok(())
}

/// The error's one line: input, record (in streams), line:column in the input.
fn where_(args: &EncodeArgs, record: &Record, e: &ParseError) -> String {
    let (line, column) = e.position();
    let line = line + record.first_line - 1;
    let format = match e {
        ParseError::Json { .. } => "JSON",
        ParseError::Text { .. } => "text format",
    };
    let name = input_name(&args.input);
    if args.delimited {
        format!("{name}:{line}:{column}: record {}: {format}: {}", record.number, e.message())
    } else {
        format!("{name}:{line}:{column}: {format}: {}", e.message())
    }
}

fn write_failure(e: &std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::closed()
    } else {
        Failure::input(format!("cannot write the output: {e}"))
    }
}

fn write_all(out: &mut dyn Write, bytes: &[u8]) -> Result<(), Failure> {
    out.write_all(bytes).map_err(|e| write_failure(&e))
}

/// `--from parquet|arrow`: the rows of a table as records.
#[cfg(feature = "columns")]
mod table {
    use std::io::{BufRead, BufReader, Read, Write};

    use protojit::Schema;
    use protojit_arrow::arrow_ipc::reader::{FileReader, StreamReader};
    use protojit_arrow::arrow_schema::ArrowError;
    use protojit_arrow::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use protojit_arrow::{ArrowOptions, Encoder, RecordBatch};

    use super::{render, write_all, write_failure, Record};
    use crate::args::{EncodeArgs, EncodeOutput, InputFormat};
    use crate::common::{input_name, Failure};

    /// Rows per batch read from a Parquet file.
    const BATCH_ROWS: usize = 8192;

    /// An Arrow IPC file starts (and ends) with these bytes; a stream does not.
    const IPC_FILE_MAGIC: &[u8] = b"ARROW1";

    type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>>>;

    pub(super) fn run(args: &EncodeArgs, schema: &Schema, name: &str) -> Result<(), Failure> {
        let encoder = Encoder::new(schema, name, &ArrowOptions::default())
            .map_err(|e| Failure::usage(e.to_string()))?
            .ignore_extra_columns(args.ignore_extra_columns)
            .allow_missing_columns(args.allow_missing_columns);
        let decoder = match args.output {
            EncodeOutput::Binary => None,
            _ => Some(schema.decoder(name).map_err(|e| Failure::usage(e.to_string()))?),
        };
        let input = input_name(&args.input);
        let bad = |e: ArrowError| Failure::input(format!("{input}: not a readable {} table: {e}", format(args)));
        let batches = open(args).map_err(bad)?;
        let mut out: Box<dyn Write> = match &args.output_file {
            Some(path) => Box::new(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .map_err(|e| Failure::input(format!("cannot write {}: {e}", path.display())))?,
            )),
            None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        };
        let mut bytes = Vec::new();
        let mut rendered = Vec::new();
        let mut rows = 0usize;
        for batch in batches {
            let batch = batch.map_err(bad)?;
            let at = |e: protojit_arrow::EncodeError| {
                Failure::input(format!("{input}: in the batch of rows {}-{}: {e}", rows, rows + batch.num_rows()))
            };
            match &decoder {
                None => {
                    bytes.clear();
                    encoder.encode_delimited(&batch, &mut bytes).map_err(at)?;
                    write_all(&mut out, &bytes)?;
                }
                Some(decoder) => {
                    let messages = encoder.encode(&batch).map_err(at)?;
                    for (i, m) in messages.iter().enumerate() {
                        rendered.clear();
                        let record = Record { text: &[], number: rows + i + 1, first_line: 0 };
                        render(args, Some(decoder), &record, m.unwrap_or_default(), &mut rendered)
                            .map_err(Failure::input)?;
                        write_all(&mut out, &rendered)?;
                    }
                }
            }
            rows += batch.num_rows();
        }
        out.flush().map_err(|e| write_failure(&e))
    }

    fn format(args: &EncodeArgs) -> &'static str {
        match args.from {
            InputFormat::Parquet => "Parquet",
            _ => "Arrow IPC",
        }
    }

    /// The input's record batches: a Parquet file (stdin read whole: Parquet's footer is
    /// at its end), or an Arrow IPC file or stream (told apart by the file's magic bytes).
    fn open(args: &EncodeArgs) -> Result<Batches, ArrowError> {
        let mut reader: Box<dyn Read> = match args.input.as_str() {
            "-" => Box::new(std::io::stdin()),
            path => Box::new(std::fs::File::open(path)?),
        };
        if args.from == InputFormat::Parquet {
            let batches = match args.input.as_str() {
                "-" => {
                    let mut all = Vec::new();
                    reader.read_to_end(&mut all)?;
                    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(all))?;
                    Box::new(builder.with_batch_size(BATCH_ROWS).build()?) as Batches
                }
                path => {
                    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path)?)?;
                    Box::new(builder.with_batch_size(BATCH_ROWS).build()?)
                }
            };
            return Ok(batches);
        }
        let mut reader = BufReader::new(reader);
        if reader.fill_buf()?.starts_with(IPC_FILE_MAGIC) {
            let mut all = Vec::new();
            reader.read_to_end(&mut all)?;
            return Ok(Box::new(FileReader::try_new(std::io::Cursor::new(all), None)?));
        }
        Ok(Box::new(StreamReader::try_new(reader, None)?))
    }
}
