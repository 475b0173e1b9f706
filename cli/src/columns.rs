//! `protojit decode -o arrow|parquet`: records as Arrow record batches, written as an Arrow IPC stream or a Parquet file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use protojit::Schema;
use protojit_arrow::arrow_ipc::writer::StreamWriter;
use protojit_arrow::arrow_schema::SchemaRef;
use protojit_arrow::parquet::arrow::ArrowWriter;
use protojit_arrow::parquet::basic::Compression;
use protojit_arrow::parquet::file::properties::WriterProperties;
use protojit_arrow::{ArrowOptions, Converter, EnumColumns, RecordBatch};

use crate::args::{DecodeArgs, Output};
use crate::common::{self, input_name, Failure};
use crate::progress::Progress;
use crate::stream::RecordReader;

/// Where batches go.
enum Sink {
    Ipc(StreamWriter<Box<dyn Write>>),
    Parquet(ParquetFile),
}

/// A Parquet file written under a temporary name and renamed to its own once its footer
/// is written, so that an interrupted or failed run never leaves a file that looks
/// complete.
pub struct ParquetFile {
    writer: ArrowWriter<File>,
    partial: PathBuf,
    target: PathBuf,
}

impl ParquetFile {
    pub fn create(target: &Path, schema: SchemaRef) -> Result<ParquetFile, Failure> {
        let mut name = target.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(format!(".partial-{}", std::process::id()));
        let partial = target.with_file_name(name);
        let file =
            File::create(&partial).map_err(|e| Failure::input(format!("cannot create {}: {e}", partial.display())))?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        match ArrowWriter::try_new(file, schema, Some(props)) {
            Ok(writer) => Ok(ParquetFile { writer, partial, target: target.to_owned() }),
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(Failure::usage(format!(
                    "cannot write {} as Parquet: {}",
                    target.display(),
                    one_line(&e.to_string())
                )))
            }
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), Failure> {
        let target = &self.target;
        self.writer
            .write(batch)
            .map_err(|e| Failure::input(format!("cannot write {}: {}", target.display(), one_line(&e.to_string()))))
    }

    /// Writes the footer and gives the file its name.
    pub fn finish(self) -> Result<(), Failure> {
        let ParquetFile { writer, partial, target } = self;
        if let Err(e) = writer.close() {
            let _ = std::fs::remove_file(&partial);
            return Err(Failure::input(format!("cannot write {}: {}", target.display(), one_line(&e.to_string()))));
        }
        std::fs::rename(&partial, &target)
            .map_err(|e| Failure::input(format!("cannot rename {} to {}: {e}", partial.display(), target.display())))
    }

    /// Removes the unfinished file.
    pub fn abandon(self) {
        let _ = std::fs::remove_file(&self.partial);
    }
}

/// A library error (which may span lines) on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Sink {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), Failure> {
        match self {
            Sink::Ipc(w) => w.write(batch).map_err(|e| write_error(&e.to_string())),
            Sink::Parquet(p) => p.write(batch),
        }
    }

    /// Completes the output: the IPC end marker, or the Parquet footer and the rename
    /// that makes the file appear under its name.
    fn finish(self) -> Result<(), Failure> {
        match self {
            Sink::Ipc(mut w) => {
                w.finish().map_err(|e| write_error(&e.to_string()))?;
                w.into_inner().and_then(|mut o| o.flush().map_err(Into::into)).map_err(|e| write_error(&e.to_string()))
            }
            Sink::Parquet(p) => p.finish(),
        }
    }

    /// Drops an unfinished output: a Parquet file without its footer is never left
    /// behind as if it were complete.
    fn abandon(self) {
        if let Sink::Parquet(p) = self {
            p.abandon();
        }
    }
}

fn write_error(e: &str) -> Failure {
    if e.contains("Broken pipe") {
        Failure::closed()
    } else {
        Failure::input(format!("cannot write the output: {e}"))
    }
}

pub fn run(args: &DecodeArgs, schema: &Schema) -> Result<(), Failure> {
    if args.jobs != 1 {
        return Err(Failure::usage("--jobs applies to text, JSON and binary output, not arrow or parquet"));
    }
    if args.emit_defaults || args.proto_names {
        return Err(Failure::usage("--emit-defaults and --proto-names apply to JSON output"));
    }
    if args.engine.utf8_check() == protojit::Utf8Check::Off {
        return Err(Failure::usage(
            "--utf8 off does not apply to --output arrow or parquet: their string columns hold checked text",
        ));
    }
    if let Some(p) = args.select.iter().find(|p| p.contains(['[', '#', '*'])) {
        return Err(Failure::usage(format!(
            "--select {p}: with --output arrow or parquet, --select takes field paths such as `a.b.c` (columns), without indexes"
        )));
    }
    let options = ArrowOptions {
        select: (!args.select.is_empty()).then(|| args.select.clone()),
        enums: if args.enum_numbers { EnumColumns::Number } else { EnumColumns::Dictionary },
        decode: ArrowOptions::default().decode.with_kind(args.engine.engine).with_max_depth(args.engine.max_depth),
        ..ArrowOptions::default()
    };
    let converter = Converter::new(schema, &args.type_name, &options).map_err(|e| Failure::usage(e.to_string()))?;
    for n in converter.notes() {
        common::note(n);
    }
    let arrow_schema = converter.arrow_schema().clone();
    let mut sink = match (args.output, &args.output_file) {
        (Output::Parquet, None) => return Err(Failure::usage("--output parquet needs --output-file FILE")),
        (Output::Parquet, Some(target)) => Sink::Parquet(ParquetFile::create(target, arrow_schema)?),
        (_, target) => {
            let out: Box<dyn Write> = match target {
                Some(path) => Box::new(std::io::BufWriter::new(
                    File::create(path).map_err(|e| Failure::input(format!("cannot create {}: {e}", path.display())))?,
                )),
                None if common::stdout_is_terminal() => {
                    return Err(Failure::usage(
                        "refusing to write an Arrow stream to a terminal; redirect it or pass --output-file",
                    ))
                }
                None => Box::new(std::io::BufWriter::with_capacity(1 << 16, std::io::stdout())),
            };
            Sink::Ipc(StreamWriter::try_new(out, &arrow_schema).map_err(|e| write_error(&e.to_string()))?)
        }
    };
    match convert(args, &converter, &mut sink) {
        Ok(failed) => {
            sink.finish()?;
            if failed > 0 {
                return Err(Failure::input(format!("{failed} record(s) did not decode and were skipped")));
            }
            Ok(())
        }
        Err(e) => {
            sink.abandon();
            Err(e)
        }
    }
}

/// Decodes the input into batches and writes them; returns how many records were skipped
/// (with --keep-going).
fn convert(args: &DecodeArgs, converter: &Converter, sink: &mut Sink) -> Result<u64, Failure> {
    let name = input_name(&args.input).to_owned();
    let type_name = converter.decoder().descriptor().full_name().to_owned();
    let batch_size = args.batch_size.max(1);
    let mut builder = converter.builder();
    let mut failed = 0;
    if !args.delimited {
        let bytes = common::read_input(&args.input)?;
        builder.append(&bytes).map_err(|e| Failure::input(format!("{name}: cannot decode as {type_name}: {e}")))?;
        sink.write(&builder.finish().map_err(|e| Failure::input(e.to_string()))?)?;
        return Ok(0);
    }
    let (input, size) = common::open_input(&args.input)?;
    let mut progress = Progress::new(args.progress, size);
    let mut reader = RecordReader::new(input, &name, &type_name);
    let mut buf = Vec::new();
    let mut records = 0u64;
    let result = (|| {
        loop {
            buf.clear();
            let Some(info) = reader.next_into(&mut buf)? else { break };
            records += 1;
            if let Err(e) = builder.append(&buf) {
                let line = format!(
                    "{name}: record {}: cannot decode as {type_name}: {e} (record starts at byte offset {} of the stream)",
                    info.number, info.data_offset
                );
                if !args.keep_going {
                    return Err(Failure::input(line));
                }
                progress.interrupt();
                eprintln!("protojit: {line}");
                failed += 1;
            }
            if builder.len() >= batch_size || builder.is_full() {
                sink.write(&builder.finish().map_err(|e| Failure::input(e.to_string()))?)?;
                progress.update(records, reader.offset());
            }
        }
        if !builder.is_empty() {
            sink.write(&builder.finish().map_err(|e| Failure::input(e.to_string()))?)?;
        }
        progress.update(records, reader.offset());
        Ok(())
    })();
    match &result {
        Ok(()) => progress.finish(),
        Err(_) => progress.interrupt(),
    }
    result.map(|()| failed)
}
