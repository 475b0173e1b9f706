//! `protojit encode`: text format or proto3 JSON into protobuf binary, as `protoc --encode`
//! and `buf convert` do; `-o json|text` normalises instead, and `--delimited` reads streams.

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
