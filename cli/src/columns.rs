//! `protojit decode -o arrow|parquet`: records as Arrow record batches, written as an Arrow IPC stream or a Parquet file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use protojit::{Schema, Workload};
use protojit_arrow::arrow_ipc::writer::StreamWriter;
use protojit_arrow::arrow_schema::SchemaRef;
use protojit_arrow::parquet::arrow::ArrowWriter;
use protojit_arrow::parquet::basic::Compression;
use protojit_arrow::parquet::file::properties::WriterProperties;
use protojit_arrow::parquet::file::writer::SerializedFileWriter;
use protojit_arrow::{
    ArrowOptions, BatchBuilder, ConvertPath, Converter, EnumColumns, MappingArgs, OtherMappingArgs, RecordBatch,
    STREAM_BATCH_INPUT,
};

use crate::args::{DecodeArgs, Output};
use crate::common::{self, input_name, one_line, Failure, Out};
use crate::pool;
use crate::progress::Progress;
use crate::row_groups::RowGroups;
use crate::stream::{RecordInfo, RecordReader};

/// Where batches go.
enum Sink {
    Ipc(StreamWriter<Box<dyn Write>>),
    Parquet(ParquetRows),
}

/// A Parquet file being written row group by row group: the threads that convert the
/// batches encode them ([`RowGroups`]), this side appends the row groups in order.
struct ParquetRows {
    file: SerializedFileWriter<File>,
    /// The first row group not yet in the file.
    next: usize,
    partial: PathBuf,
    target: PathBuf,
}

/// A Parquet file written under a temporary name and renamed to its own once its footer
/// is written, so that an interrupted or failed run never leaves a file that looks
/// complete.
pub struct ParquetFile {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
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
        match ArrowWriter::try_new(file, schema.clone(), Some(props)) {
            Ok(writer) => Ok(ParquetFile { writer, schema, partial, target: target.to_owned() }),
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

    // `protojit sql` writes through these three; `decode` writes row groups of its own.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), Failure> {
        let target = &self.target;
        self.writer
            .write(batch)
            .map_err(|e| Failure::input(format!("cannot write {}: {}", target.display(), one_line(&e.to_string()))))
    }

    /// Writes the footer and gives the file its name.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    pub fn finish(self) -> Result<(), Failure> {
        let ParquetFile { writer, partial, target, .. } = self;
        ParquetFile::finish_file(writer.close().map(drop), partial, target)
    }

    /// Gives the file its name once its footer is written (`closed`), or removes it.
    fn finish_file(
        closed: Result<(), protojit_arrow::parquet::errors::ParquetError>,
        partial: PathBuf,
        target: PathBuf,
    ) -> Result<(), Failure> {
        if let Err(e) = closed {
            let _ = std::fs::remove_file(&partial);
            return Err(Failure::input(format!("cannot write {}: {}", target.display(), one_line(&e.to_string()))));
        }
        std::fs::rename(&partial, &target)
            .map_err(|e| Failure::input(format!("cannot rename {} to {}: {e}", partial.display(), target.display())))
    }

    /// Removes the unfinished file.
    #[cfg_attr(not(feature = "sql"), allow(dead_code))]
    pub fn abandon(self) {
        let _ = std::fs::remove_file(&self.partial);
    }

    /// The file without its `ArrowWriter`, and the encoder of its row groups: the same
    /// file as the writer makes (schema, properties, row groups of as many rows).
    fn into_row_groups(self) -> Result<(ParquetRows, RowGroups), Failure> {
        let ParquetFile { writer, schema, partial, target } = self;
        let (file, factory) = match writer.into_serialized_writer() {
            Ok(parts) => parts,
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                return Err(Failure::input(format!("cannot write {}: {}", target.display(), one_line(&e.to_string()))));
            }
        };
        // The properties are `create`'s: a row-count limit only (no byte limit, no
        // content-defined chunking), which is all RowGroups splits by.
        let max_rows = file.properties().max_row_group_row_count().unwrap_or(usize::MAX);
        let groups = RowGroups::new(factory, &file, schema.fields().iter().cloned().collect(), max_rows);
        Ok((ParquetRows { file, next: 0, partial, target }, groups))
    }
}

impl Sink {
    /// Writes a work item's batches: an Arrow stream writes them here; a Parquet file
    /// takes the row groups they completed (`groups` encoded them).
    fn write(&mut self, batches: &[RecordBatch], groups: Option<&RowGroups>) -> Result<(), Failure> {
        match (self, groups) {
            (Sink::Ipc(w), _) => {
                for batch in batches {
                    w.write(batch).map_err(|e| write_error(&e.to_string()))?;
                }
                Ok(())
            }
            (Sink::Parquet(p), Some(groups)) => {
                groups.write_ready(&mut p.file, &mut p.next, &p.target.display().to_string())
            }
            (Sink::Parquet(_), None) => unreachable!("a Parquet sink comes with its row groups"),
        }
    }

    /// Completes the output: the IPC end marker, or the last row group, the Parquet
    /// footer and the rename that makes the file appear under its name.
    fn finish(self, groups: Option<&RowGroups>, jobs: usize) -> Result<(), Failure> {
        match (self, groups) {
            (Sink::Ipc(mut w), _) => {
                w.finish().map_err(|e| write_error(&e.to_string()))?;
                w.into_inner().and_then(|mut o| o.flush().map_err(Into::into)).map_err(|e| write_error(&e.to_string()))
            }
            (Sink::Parquet(mut p), Some(groups)) => {
                let target = p.target.display().to_string();
                if let Err(e) = groups.finish(&mut p.file, &mut p.next, &target, jobs) {
                    let _ = std::fs::remove_file(&p.partial);
                    return Err(e);
                }
                let ParquetRows { file, partial, target, .. } = p;
                ParquetFile::finish_file(file.close().map(drop), partial, target)
            }
            (Sink::Parquet(_), None) => unreachable!("a Parquet sink comes with its row groups"),
        }
    }

    /// Drops an unfinished output: a Parquet file without its footer is never left
    /// behind as if it were complete.
    fn abandon(self) {
        if let Sink::Parquet(p) = self {
            let _ = std::fs::remove_file(&p.partial);
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
    if !args.delimited && args.jobs != 1 {
        return Err(Failure::usage("--jobs and --keep-going apply to --delimited streams"));
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
    // The schema's engines decide how the decoder tiers for this stream (on a core left
    // idle compiling is free; when every core converts, only an input that repays it
    // compiles), and the converter which path fills the columns (the compiled appenders,
    // raced against the chunked path): the library's defaults.
    let workload = Workload::Stream {
        bytes: args.delimited.then(|| common::input_size(&args.input)).flatten(),
        threads: Some(jobs(args)),
    };
    let mut options = ArrowOptions {
        select: (!args.select.is_empty()).then(|| args.select.clone()),
        decode: ArrowOptions::default()
            .decode
            .with_kind(args.engine.engine)
            .with_max_depth(args.engine.max_depth)
            .with_tiering(common::tiering(schema, &args.type_name, &args.engine, workload)?),
        ..ArrowOptions::default()
    };
    mapping_options(&args.mapping, args.enum_numbers, &mut options)?;
    args.explode.apply(&mut options);
    let converter = Converter::new(schema, &args.type_name, &options).map_err(|e| Failure::usage(e.to_string()))?;
    for n in converter.notes() {
        common::note(n);
    }
    // Which path fills the columns: directly from the wire, or through a tree (and why).
    let path_note = converter.path_note().map(str::to_owned);
    if let Some(why) = &path_note {
        common::note(why);
    }
    common::note(&format!("records become columns by the {}", converter.path()));
    let arrow_schema = converter.arrow_schema().clone();
    let mut groups = None;
    let mut sink = match (args.output, &args.output_file) {
        (Output::Parquet, None) => return Err(Failure::usage("--output parquet needs --output-file FILE")),
        (Output::Parquet, Some(target)) => {
            let (rows, encoder) = ParquetFile::create(target, arrow_schema)?.into_row_groups()?;
            groups = Some(encoder);
            Sink::Parquet(rows)
        }
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
    match convert(args, &converter, &mut sink, groups.as_ref()) {
        Ok(failed) => {
            sink.finish(groups.as_ref(), jobs(args))?;
            common::note_engines(converter.decoder());
            // The race's verdict (or why the appenders failed to compile), and what each
            // path filled.
            if let Some(why) = converter.path_note().filter(|&why| path_note.as_deref() != Some(why)) {
                common::note(why);
            }
            if converter.unresolved_any() > 0 {
                common::note(&format!(
                    "{} Any value(s) of a type the schema does not resolve: written as {{\"@type\": url, \"value\": base64}}",
                    converter.unresolved_any()
                ));
            }
            if let Some(explode) = &options.explode {
                let unexploded = converter.unexploded_records();
                if unexploded > 0 {
                    let rows = if explode.outer { "each kept as one row, its element null" } else { "no rows" };
                    common::note(&format!(
                        "{unexploded} record(s) had nothing to explode at `{}`: {rows}",
                        explode.path
                    ));
                }
            }
            let (code, chunked, tree) = converter.compiled_records();
            if code + chunked + tree > 0 {
                common::note(&format!(
                    "records filled by the compiled column appenders: {code}; by the chunked path beside them: {chunked}; by the tree (declined by the code): {tree}"
                ));
            }
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

/// Threads to convert on (`--jobs`, 0 = one per CPU).
fn jobs(args: &DecodeArgs) -> usize {
    if args.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.jobs
    }
}

/// Records in one work item at most: its rows make one record batch (fewer if some fail
/// with --keep-going), so that the batches, and the files, do not depend on --jobs. A
/// Parquet file's batches are internal (its row groups and pages are the writer's), so
/// its items are at most [`PARQUET_ITEM_RECORDS`]: smaller items share the work between
/// threads more evenly and let them start sooner (with 8,192-record items, 100,000
/// records are 13 items, and the last thread to finish ran one more than the others).
fn job_records(args: &DecodeArgs) -> usize {
    let records = args.batch_size.max(1);
    if args.output == Output::Parquet {
        records.min(PARQUET_ITEM_RECORDS)
    } else {
        records
    }
}

/// Records in one work item of Parquet output at most (see [`job_records`]).
const PARQUET_ITEM_RECORDS: usize = 2048;

/// Input bytes in one work item at most (it closes after the record that reaches them), so
/// that a stream of big records (whole tiles, OSM blocks) is shared between threads and
/// each item's buffers are reused by the next (200 tiles were one item, converted by one
/// thread into one batch of every column at once): for Arrow output the library's bound on
/// a stream's batch ([`STREAM_BATCH_INPUT`]: an item is a batch), for Parquet output
/// [`PARQUET_ITEM_BYTES`] (the file is the same: its row groups are cut by rows).
fn job_bytes(args: &DecodeArgs) -> usize {
    if args.output == Output::Parquet {
        PARQUET_ITEM_BYTES
    } else {
        STREAM_BATCH_INPUT
    }
}

/// Input bytes in one work item of Parquet output at most (see [`job_bytes`]): 1 MiB took
/// 200 Chicago tiles 0.35 -> 0.28 s at `--jobs 1` (0.25 s at 2) and 60 OSM ways blocks
/// 0.65 -> 0.53 s (0.48 s), against 0.37 and 0.56 s at 4 MiB; 2,048 google_message1
/// records (the item's record limit) hold less, so small records are not affected.
const PARQUET_ITEM_BYTES: usize = 1 << 20;

/// One work item: a run of records read from the stream, and the batch(es) a worker
/// converted them to. Items are recycled, buffers and all.
#[derive(Default)]
struct Job {
    /// The item's number in the stream, from 0 (the order its row groups are encoded in).
    item: u64,
    bytes: Vec<u8>,
    /// Each record, with its start in `bytes`.
    records: Vec<(RecordInfo, usize)>,
    /// Bytes of the stream read once this item was read.
    offset: u64,
    /// A framing or read error right after these records: the stream stops there.
    end: Option<Failure>,
    /// The item's rows: one batch, or more where a batch filled up ([`BatchBuilder::is_full`]).
    batches: Vec<RecordBatch>,
    /// Records that failed, with --keep-going: their error lines.
    errors: Vec<String>,
    /// The error that fails the run (without --keep-going, the first bad record).
    fatal: Option<Failure>,
}

/// Decodes the input into batches (on `--jobs` threads, each batch from a run of
/// `--batch-size` records) and writes them in input order; returns how many records were
/// skipped (with --keep-going).
fn convert(
    args: &DecodeArgs,
    converter: &Converter,
    sink: &mut Sink,
    groups: Option<&RowGroups>,
) -> Result<u64, Failure> {
    let name = input_name(&args.input).to_owned();
    let type_name = converter.decoder().descriptor().full_name().to_owned();
    if !args.delimited {
        let bytes = common::read_input(&args.input, args.compression.format())?;
        let mut builder = converter.builder();
        builder.append(&bytes).map_err(|e| Failure::input(format!("{name}: cannot decode as {type_name}: {e}")))?;
        let batches = [builder.finish().map_err(|e| Failure::input(e.to_string()))?];
        if let Some(groups) = groups {
            groups.encode(0, &batches);
        }
        sink.write(&batches, groups)?;
        return Ok(0);
    }
    let jobs = jobs(args);
    let (input, size) = common::open_input(&args.input, args.compression.format())?;
    let mut progress = Progress::new(args.progress, size);
    let mut reader = RecordReader::new(input, &name, &type_name);
    let (mut items, mut records, mut failed) = (0u64, 0u64, 0u64);
    let (limit, bytes) = (job_records(args), job_bytes(args));
    let result = pool::ordered(
        jobs,
        |job: &mut Job| {
            job.item = items;
            items += 1;
            Ok(fill(&mut reader, job, limit, bytes))
        },
        || converter.builder(),
        |builder, job| {
            convert_job(builder, job, args.keep_going, &name, &type_name);
            if let Some(groups) = groups {
                groups.encode(job.item, &job.batches);
                // Encoded, the batches are done with: freed here, where they were made,
                // their memory serves this thread's next batch.
                job.batches.clear();
            }
        },
        |job| {
            for line in job.errors.drain(..) {
                progress.interrupt();
                eprintln!("protojit: {line}");
                failed += 1;
            }
            if let Some(e) = job.fatal.take() {
                return Err(e);
            }
            sink.write(&job.batches, groups)?;
            records += job.records.len() as u64;
            progress.update(records, job.offset);
            match job.end.take() {
                Some(e) => Err(e),
                None => Ok(()),
            }
        },
    );
    match &result {
        Ok(()) => progress.finish(),
        Err(_) => progress.interrupt(),
    }
    result.map(|()| failed)
}

/// Reads the next run of records into `job` (emptied first): `limit` records, or fewer
/// where they hold `bytes` bytes ([`job_bytes`]). Returns whether more may follow.
fn fill(reader: &mut RecordReader<Box<dyn std::io::Read + Send>>, job: &mut Job, limit: usize, bytes: usize) -> bool {
    let (more, end) = reader.read_run(&mut job.bytes, &mut job.records, limit, bytes);
    job.end = end;
    job.offset = reader.offset();
    more
}

/// Converts a work item's records into its batches (emptied first).
fn convert_job(builder: &mut BatchBuilder<'_>, job: &mut Job, keep_going: bool, name: &str, type_name: &str) {
    job.batches.clear();
    job.errors.clear();
    job.fatal = None;
    let finish = |builder: &mut BatchBuilder<'_>| builder.finish().map_err(|e| Failure::input(e.to_string()));
    // Records a chunk at a time (`append_many`); the last one taken is the one an error is
    // about.
    let mut records = job.records.iter();
    // The item's rows, so that its columns are sized once.
    builder.reserve(job.records.len());
    loop {
        let mut last = None;
        let bytes = &job.bytes;
        let mut taken = records.by_ref().map(|&(info, start)| {
            last = Some(info);
            &bytes[start..start + info.len]
        });
        let appended = builder.append_many(&mut taken);
        drop(taken);
        match appended {
            Ok(true) => break,
            Ok(false) => match finish(builder) {
                // The batch filled up: the next one goes on from the next record.
                Ok(batch) => job.batches.push(batch),
                Err(e) => {
                    job.fatal = Some(e);
                    return;
                }
            },
            Err(e) => {
                let info = last.expect("a record failed, so one was taken");
                let line = format!(
                    "{name}: record {}: cannot decode as {type_name}: {e} (record starts at byte offset {} of the stream)",
                    info.number, info.data_offset
                );
                if !keep_going {
                    // The rows before it in this batch are dropped, as the whole output is.
                    let _ = builder.finish();
                    job.fatal = Some(Failure::input(line));
                    return;
                }
                job.errors.push(line);
            }
        }
    }
    if !builder.is_empty() {
        match finish(builder) {
            Ok(batch) => job.batches.push(batch),
            Err(e) => job.fatal = Some(e),
        }
    }
}

/// The mapping flags set on `options`, with `--enum-numbers` (the older spelling of
/// `--enums number`, kept because `decode`'s JSON output takes it too).
pub fn mapping_options(mapping: &MappingArgs, enum_numbers: bool, options: &mut ArrowOptions) -> Result<(), Failure> {
    if enum_numbers {
        if mapping.enums.is_some_and(|e| e != EnumColumns::Number) {
            return Err(Failure::usage("--enum-numbers is --enums number: give one of them"));
        }
        options.enums = EnumColumns::Number;
    }
    mapping.apply(options);
    Ok(())
}

/// `protojit schema arrow`: the Arrow schema of `type_name`'s records as the columns commands
/// make it (the same converter options), written as text, JSON or an IPC stream.
pub fn print_arrow_schema(
    schema: &Schema,
    type_name: &str,
    select: &[String],
    enum_numbers: bool,
    (mapping, explode): (&MappingArgs, &OtherMappingArgs),
    format: crate::args::SchemaFormat,
) -> Result<(), Failure> {
    use crate::args::SchemaFormat;
    let mut options = ArrowOptions {
        select: (!select.is_empty()).then(|| select.to_vec()),
        path: ConvertPath::Chunked,
        ..ArrowOptions::default()
    };
    mapping_options(mapping, enum_numbers, &mut options)?;
    explode.apply(&mut options);
    let converter = Converter::new(schema, type_name, &options).map_err(|e| Failure::usage(e.to_string()))?;
    let arrow = converter.arrow_schema();
    let mut out = Out::new();
    match format {
        SchemaFormat::Text => {
            let mut text = String::new();
            for field in arrow.fields() {
                let null = if field.is_nullable() { "" } else { " not null" };
                text.push_str(&format!("{}: {}{null}\n", field.name(), field.data_type()));
            }
            let mut metadata: Vec<_> = arrow.metadata().iter().collect();
            metadata.sort();
            for (key, value) in metadata {
                text.push_str(&format!("-- {key}: {}\n", value.replace('\n', "\n-- ")));
            }
            out.write(text.as_bytes())?;
        }
        SchemaFormat::Json => {
            let fields: Vec<_> = arrow
                .fields()
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "name": f.name(),
                        "type": f.data_type().to_string(),
                        "nullable": f.is_nullable(),
                    })
                })
                .collect();
            let json = serde_json::json!({ "fields": fields, "metadata": arrow.metadata() });
            out.write(format!("{json}\n").as_bytes())?;
        }
        SchemaFormat::Ipc => {
            let mut bytes = Vec::new();
            let mut writer = StreamWriter::try_new(&mut bytes, arrow).map_err(|e| Failure::input(e.to_string()))?;
            writer.finish().map_err(|e| Failure::input(e.to_string()))?;
            drop(writer);
            out.write(&bytes)?;
        }
    }
    out.flush()
}
