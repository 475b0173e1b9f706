//! The converter: one message type's Arrow schema, and records decoded and appended into record batches.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::{Array, GenericBinaryArray, OffsetSizeTrait, RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_schema::{Schema as ArrowSchema, SchemaRef};
use prost_reflect::MessageDescriptor;
use protojit::{Arena, DecodeError, Decoder, EngineKind, Schema, UnknownFields, Utf8Check};
use protojit_arena::stream::walk;
use protojit_arena::LayoutIndex;
use protojit_jit::{Appender, ChunkColumns, Compiling, Workload};

use crate::column::Cell;
use crate::compiled::{Compiled, Planned};
use crate::direct::DirectCx;
use crate::error::{AppendError, ConvertError, RecordError};
use crate::framing::{Framing, FramingCheck};
use crate::gather::{CHUNK_INPUT, CHUNK_RECORDS};
use crate::options::{ArrowOptions, ConvertPath, StringColumns};
use crate::reshape::Reshape;
use crate::schema::Mapper;
use crate::select::{pruned_pool, Selection};
use crate::values::{BatchStats, RowCx, Source};
use protojit::delimited::DelimitedRecords;

/// Converts records of one message type to Arrow record batches. `Send + Sync`: share one
/// converter across threads, each with its own [`BatchBuilder`].
pub struct Converter {
    /// The schema the decoder works on (pruned to the selection, if any).
    schema: Schema,
    root: MessageDescriptor,
    selection: Selection,
    options: ArrowOptions,
    decoder: Decoder,
    /// The root type's layout in `schema`, where the direct path's walk starts.
    layout: LayoutIndex,
    path: ConvertPath,
    arrow: SchemaRef,
    /// The mapping options' reshaping stage, when they change the canonical columns the
    /// paths fill ([`BatchBuilder::finish`] applies it).
    reshape: Option<Reshape>,
    notes: Vec<String>,
    /// Schema-registry framing, if records carry it.
    framing: Option<FramingCheck>,
    /// The compiled appender ([`ConvertPath::DirectCompiled`]), compiled or being compiled.
    compiled: Option<AppenderCell>,
    /// Why the path is not the one asked for, if it is not.
    path_note: Option<String>,
    /// Records of every batch its builders finished.
    rows: AtomicU64,
    /// Records with nothing to explode ([`ArrowOptions::explode`]), over every batch.
    unexploded: AtomicU64,
    /// `Any` values whose type was not resolved ([`ArrowOptions::any`]), over every batch.
    unresolved_any: AtomicU64,
    /// The arenas and appender buffers of dropped builders, for the next builders.
    spare: Mutex<Spare>,
}

/// Working memory a dropped [`BatchBuilder`] leaves to the next: its arena and the
/// compiled path's chunk buffers, at most [`SPARE`] of each. Without it, each conversion of
/// large records (a `convert_binary` call, a Python batch) asks the system for its memory
/// afresh and pays a page fault per page of it: on whole OSM blocks, half the conversion's
/// time.
#[derive(Default)]
struct Spare {
    arenas: Vec<Arena>,
    chunks: Vec<ChunkColumns>,
}

/// Spare arenas and chunk buffers a converter keeps (one per thread converting at once, as
/// far as that goes).
const SPARE: usize = 4;

/// A converter's compiled appenders (on [`ConvertPath::DirectCompiled`] and
/// [`ConvertPath::Auto`]): asked of the schema's [`Engines`](protojit::Engines), which
/// compiles them when the converter is made ([`EngineKind::Jit`]) or on the background
/// compiler while the chunked path converts ([`EngineKind::Auto`]: a one-shot conversion
/// never waits for the compiler); on the auto path, the race against the chunked path;
/// the rows each path filled.
struct AppenderCell {
    planned: Planned,
    code: Arc<Compiling<Appender>>,
    race: Option<Race>,
    compiled_rows: AtomicU64,
    chunked_rows: AtomicU64,
    tree_rows: AtomicU64,
}

/// Chunks each arm of the race converts before it decides (after one untimed chunk each,
/// which pays for first touches of buffers and code).
const RACE_CHUNKS: u32 = 4;
/// Input bytes each arm converts before the race decides (fewer make a noisy verdict).
const RACE_BYTES: u64 = 1 << 20;
/// A clear verdict comes sooner: after this many timed chunks and [`RACE_EARLY_BYTES`]
/// per arm, an arm whose median rate is below [`RACE_CLEAR`] times the other's has won
/// (the loser's chunks are the race's cost: converted whole at half speed, a MiB of input
/// costs a millisecond, a tenth of a small batch of whole map tiles).
const RACE_EARLY_CHUNKS: u32 = 2;
const RACE_EARLY_BYTES: u64 = 1 << 18;
const RACE_CLEAR: f64 = 0.75;
/// The race's arms, as indexes of its counters.
const ARM_COMPILED: usize = 0;
const ARM_CHUNKED: usize = 1;
/// The race's state: still racing, or the arm that won.
const RACING: u8 = 0;
const COMPILED_WON: u8 = 1;
const CHUNKED_WON: u8 = 2;

/// [`ConvertPath::Auto`]'s race: once the appenders and the decoder are compiled, chunks
/// alternate between the compiled appenders and the chunked path, each timed with the
/// input bytes it read, until both arms have converted [`RACE_CHUNKS`] chunks and
/// [`RACE_BYTES`] bytes (or fewer, [`RACE_EARLY_CHUNKS`] and [`RACE_EARLY_BYTES`], when one
/// is faster by far); the one with the lower median nanoseconds per byte over its chunks
/// converts every later chunk. The median, not the total: a chunk whose thread was
/// preempted (as with `--jobs` at the machine's core count, beside the background
/// compiler) only adds time, and one such chunk in a total once gave the verdict to the
/// slower arm. Shared by every builder of the converter (threads add to the same counters).
#[derive(Default)]
struct Race {
    state: AtomicU8,
    chunks: [AtomicU32; 2],
    bytes: [AtomicU64; 2],
    /// Nanoseconds per input byte of each timed chunk, per arm.
    rates: [Mutex<Vec<f64>>; 2],
    verdict: OnceLock<String>,
}

impl Race {
    /// The arm the next chunk takes while racing: the one with fewer chunks.
    fn next_arm(&self) -> usize {
        let load = |arm: usize| self.chunks[arm].load(Ordering::Relaxed);
        if load(ARM_COMPILED) <= load(ARM_CHUNKED) {
            ARM_COMPILED
        } else {
            ARM_CHUNKED
        }
    }

    /// Adds a chunk of `arm` that read `bytes` in `nanos`; decides when both arms have run
    /// enough.
    fn record(&self, arm: usize, nanos: u64, bytes: u64) {
        if self.chunks[arm].fetch_add(1, Ordering::Relaxed) == 0 || bytes == 0 {
            return;
        }
        self.bytes[arm].fetch_add(bytes, Ordering::Relaxed);
        let lock = |arm: usize| self.rates[arm].lock().unwrap_or_else(|p| p.into_inner());
        lock(arm).push(nanos as f64 / bytes as f64);
        // Chunks counted include each arm's untimed first.
        let ran = |arm: usize, chunks: u32, bytes: u64| {
            self.chunks[arm].load(Ordering::Relaxed) > chunks && self.bytes[arm].load(Ordering::Relaxed) >= bytes
        };
        let both = |chunks: u32, bytes: u64| ran(ARM_COMPILED, chunks, bytes) && ran(ARM_CHUNKED, chunks, bytes);
        if !both(RACE_EARLY_CHUNKS, RACE_EARLY_BYTES) {
            return;
        }
        let median = |arm: usize| {
            let mut rates = lock(arm).clone();
            rates.sort_unstable_by(f64::total_cmp);
            rates.get(rates.len() / 2).copied().unwrap_or(f64::INFINITY)
        };
        let (compiled, chunked) = (median(ARM_COMPILED), median(ARM_CHUNKED));
        let clear = compiled.min(chunked) < RACE_CLEAR * compiled.max(chunked);
        if !clear && !both(RACE_CHUNKS, RACE_BYTES) {
            return;
        }
        let won = if compiled <= chunked { COMPILED_WON } else { CHUNKED_WON };
        if self.state.compare_exchange(RACING, won, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            let winner =
                if won == COMPILED_WON { "the compiled column appenders convert" } else { "the chunked path converts" };
            let _ = self.verdict.set(format!(
                "raced on the first chunks: compiled column appenders {compiled:.2} ns per input byte, \
                 chunked path {chunked:.2} (medians over chunks): {winner} the rest"
            ));
        }
    }

    fn won(&self) -> Option<usize> {
        match self.state.load(Ordering::Acquire) {
            COMPILED_WON => Some(ARM_COMPILED),
            CHUNKED_WON => Some(ARM_CHUNKED),
            _ => None,
        }
    }
}

/// Which way the next chunk of a converter on the compiled or auto path goes.
#[derive(Clone, Copy)]
enum Arm {
    /// The compiled appenders.
    Compiled,
    /// The chunked path, while the appenders compile or after it won the race.
    Chunked,
    /// A timed chunk of the race, by the arm's index.
    Timed(usize),
}

impl std::fmt::Debug for Converter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converter").field("message", &self.root.full_name()).field("arrow", &self.arrow).finish()
    }
}

impl Converter {
    /// A converter for records of `message` (a full name, or a unique short one).
    pub fn new(schema: &Schema, message: &str, options: &ArrowOptions) -> Result<Converter, ConvertError> {
        if options.decode.decode.utf8() != Utf8Check::All {
            return Err(ConvertError::Utf8(options.decode.decode.utf8()));
        }
        let mut options = options.clone();
        options.max_recursion = options.max_recursion.max(1);
        let full = schema.resolve_type(message)?;
        let root = schema.pool().get_message_by_name(&full).expect("resolved names exist");
        // The schema-id column is not a field: it is taken out of the selection, and kept
        // when selected (or when everything is).
        let framing = match &options.framing {
            Framing::Bare => None,
            Framing::SchemaRegistry { schema_id_column } => {
                let column = match (schema_id_column, &mut options.select) {
                    (None, _) => false,
                    (Some(_), None) => true,
                    (Some(name), Some(select)) => {
                        let before = select.len();
                        select.retain(|s| s != name);
                        select.len() != before
                    }
                };
                Some(FramingCheck::new(&root, column))
            }
        };
        let selection = Selection::parse(&root, options.select.as_deref(), &options)?;
        // (`Any` values printed as JSON are resolved through the whole schema.)
        let full_schema = schema.clone();
        let schema = match &selection {
            Selection::All => schema.clone(),
            sel => Schema::from_pool(&pruned_pool(&root, sel)?)?,
        };
        let root = schema.pool().get_message_by_name(&full).expect("the pruned pool keeps the root");
        // Columns never hold unknown fields, and a projection's unselected fields are
        // unknown to its pruned schema: the decoder skips them without storing them.
        let mut decode = options.decode.with_unknown_fields(UnknownFields::Discard);
        let layout = schema.layouts().index_of(&full).expect("the root type has a layout");
        let mut mapper = Mapper::new(schema.layouts(), &options);
        let columns = mapper.message(&root, &selection, "", false);
        let appenders = matches!(options.path, ConvertPath::DirectCompiled | ConvertPath::Auto);
        let planned = match (appenders, options.decode.kind) {
            (true, EngineKind::Auto | EngineKind::Jit) => {
                Some(Planned::new(schema.layouts(), layout, &columns, decode.decode.max_depth()))
            }
            _ => None,
        };
        if matches!(planned, Some(Ok(_)))
            && decode.kind == EngineKind::Auto
            && options.path == ConvertPath::DirectCompiled
        {
            // The appenders are the compiled code: the schema's engines say how the decodes
            // beside them tier. (On the auto path the decoder tiers as asked: the chunked
            // path it runs may win the race.)
            decode = decode.with_tiering(schema.engines().tiering(layout, Workload::BesideAppenders).0);
        }
        let decoder = schema.decoder_with_options(&full, &decode)?;
        let unreadable = |why: String| {
            let note = format!("compiled column appenders cannot read these columns ({why}): chunked path instead");
            (ConvertPath::Chunked, None, Some(note))
        };
        let (path, compiled, path_note) = match (appenders, options.decode.kind) {
            (true, EngineKind::Interpreter) => {
                let note = "the interpreter engine compiles nothing: chunked path instead".to_owned();
                (ConvertPath::Chunked, None, Some(note))
            }
            (true, kind) => match planned.expect("planned above") {
                Ok(planned) => {
                    let cell = AppenderCell {
                        code: schema.engines().appender(planned.plan(), kind),
                        planned,
                        race: (options.path == ConvertPath::Auto).then(Race::default),
                        compiled_rows: AtomicU64::new(0),
                        chunked_rows: AtomicU64::new(0),
                        tree_rows: AtomicU64::new(0),
                    };
                    (options.path, Some(cell), None)
                }
                Err(why) => unreadable(why),
            },
            (false, _) => (options.path, None, None),
        };
        let notes = mapper.notes.cuts;
        // The paths fill the canonical columns; the mapping options' shape is made from them
        // when a batch is finished, and is the schema of every batch.
        let reshape =
            options.reshapes().then(|| Reshape::new(&full_schema, &root, &columns.fields(), &options)).transpose()?;
        let mut fields: Vec<arrow_schema::FieldRef> = match &reshape {
            Some(r) => r.fields().iter().cloned().collect(),
            None => columns.fields().iter().cloned().collect(),
        };
        if let (Some(check), Framing::SchemaRegistry { schema_id_column: Some(name) }) = (&framing, &options.framing) {
            if check.column {
                if reshape.is_some() && fields.iter().any(|f| f.name() == name) {
                    return Err(ConvertError::ColumnName {
                        column: name.clone(),
                        message: full.clone(),
                        why: "the schema-id column has the name of a column the mapping options make".into(),
                    });
                }
                fields.push(Arc::new(arrow_schema::Field::new(name, arrow_schema::DataType::Int32, false)));
            }
        }
        let mut metadata = HashMap::from([("protojit.message".to_owned(), full.clone())]);
        if !notes.is_empty() {
            metadata.insert("protojit.cut".to_owned(), notes.join("\n"));
        }
        let arrow = Arc::new(ArrowSchema::new_with_metadata(fields, metadata));
        Ok(Converter {
            schema,
            root,
            selection,
            options,
            decoder,
            layout,
            path,
            arrow,
            reshape,
            notes,
            framing,
            compiled,
            path_note,
            rows: AtomicU64::new(0),
            unexploded: AtomicU64::new(0),
            unresolved_any: AtomicU64::new(0),
            spare: Mutex::new(Spare::default()),
        })
    }

    /// The Arrow schema of the batches, under the mapping options (known before any data:
    /// every batch has it).
    pub fn arrow_schema(&self) -> &SchemaRef {
        &self.arrow
    }

    /// Fields left out of the schema where recursive types were cut, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The decoder (for its stats: which types run compiled). The chunked and tree paths
    /// decode every record with it; the direct path only the records it hands to the tree.
    /// It discards unknown fields ([`ArrowOptions::decode`]).
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// How records become rows: the path asked for, or the one taken instead (see
    /// [`path_note`](Self::path_note)); on the auto path, once its race is decided, the
    /// winner ([`ConvertPath::DirectCompiled`] or [`ConvertPath::Chunked`]).
    pub fn path(&self) -> ConvertPath {
        match self.compiled.as_ref().and_then(|c| c.race.as_ref()).and_then(Race::won) {
            Some(ARM_COMPILED) => ConvertPath::DirectCompiled,
            Some(_) => ConvertPath::Chunked,
            None => self.path,
        }
    }

    /// Why [`path`](Self::path) is not the path asked for ([`ArrowOptions::path`]), if it
    /// is not (the compiled appenders cannot read some column: which, and why; or the
    /// engine compiles nothing), or why compiling the appenders failed.
    pub fn path_note(&self) -> Option<&str> {
        let Some(c) = &self.compiled else { return self.path_note.as_deref() };
        match c.code.get() {
            Some(Err(why)) => Some(why),
            _ => c.race.as_ref().and_then(|r| r.verdict.get()).map(String::as_str),
        }
    }

    /// Machine-code bytes and compile time of the compiled appender, once compiled.
    pub fn appender_stats(&self) -> Option<(u32, std::time::Duration)> {
        self.appender().map(|c| (c.appender.code_bytes(), c.appender.compile_time()))
    }

    /// Waits for the compiled appender while it compiles in the background (on the
    /// compiled path with [`EngineKind::Auto`]); whether it is there (`false`: another
    /// path, or its compile failed, [`path_note`](Self::path_note)).
    pub fn wait_for_appender(&self) -> bool {
        self.compiled.as_ref().is_some_and(|c| c.code.wait().is_ok())
    }

    /// On the compiled and auto paths, over every builder of this converter so far: the
    /// records the compiled appenders filled, those the chunked path filled (while the
    /// appenders compiled, in the race, or after it won), and those the code declined and
    /// the tree read ([`BatchStats::tree_records`]).
    pub fn compiled_records(&self) -> (u64, u64, u64) {
        self.compiled.as_ref().map_or((0, 0, 0), |c| {
            let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
            (load(&c.compiled_rows), load(&c.chunked_rows), load(&c.tree_rows))
        })
    }

    /// Where the next chunk goes, on the compiled and auto paths.
    fn arm(&self) -> Arm {
        let Some(c) = &self.compiled else { return Arm::Chunked };
        if !matches!(c.code.get(), Some(Ok(_))) {
            return Arm::Chunked;
        }
        let Some(race) = &c.race else { return Arm::Compiled };
        match race.won() {
            Some(ARM_COMPILED) => Arm::Compiled,
            Some(_) => Arm::Chunked,
            // The chunked path races once its decoder's code is final.
            None if !self.decoder.engine().settled() => Arm::Compiled,
            None => Arm::Timed(race.next_arm()),
        }
    }

    /// Records of every batch this converter's builders have finished (on every path):
    /// its rows, unless [`ArrowOptions::explode`] makes a row of each element.
    pub fn rows_converted(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    /// Under [`ArrowOptions::explode`], the records of every batch finished so far that
    /// had nothing to explode (an empty list, or a message on the path absent): left out
    /// of the batches, or with [`Explode::outer`](crate::Explode::outer) each one row whose
    /// element is null. 0 without the option.
    pub fn unexploded_records(&self) -> u64 {
        self.unexploded.load(Ordering::Relaxed)
    }

    /// Under [`AnyColumns::Json`](crate::AnyColumns::Json), the `Any` values of every
    /// batch finished so far whose type URL the schema does not resolve (or whose payload
    /// does not decode): written as `{"@type": url, "value": "<base64>"}`. 0 without the
    /// option.
    pub fn unresolved_any(&self) -> u64 {
        self.unresolved_any.load(Ordering::Relaxed)
    }

    /// The compiled appender, once it is there.
    fn appender(&self) -> Option<Compiled<'_>> {
        let c = self.compiled.as_ref()?;
        let appender = c.code.get()?.ok()?;
        Some(Compiled { appender, planned: &c.planned })
    }

    /// A builder that appends records one by one.
    pub fn builder(&self) -> BatchBuilder<'_> {
        let mut mapper = Mapper::new(self.schema.layouts(), &self.options);
        let root = mapper.message(&self.root, &self.selection, "", false);
        let (arena, chunk) = {
            let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
            (spare.arenas.pop().unwrap_or_default(), spare.chunks.pop())
        };
        BatchBuilder {
            converter: self,
            root: Cell::Struct(root),
            arena,
            cx: RowCx::default(),
            shared: Vec::new(),
            intake: Intake { bytes: 0, schema_ids: self.framing.as_ref().is_some_and(|c| c.column).then(Vec::new) },
            chunk,
        }
    }

    /// One batch of `records`; the first record that does not decode fails it.
    pub fn convert<'r>(&self, records: impl IntoIterator<Item = &'r [u8]>) -> Result<RecordBatch, ConvertError> {
        let mut b = self.builder();
        let mut records = records.into_iter();
        b.reserve(records.size_hint().0);
        b.cx.source = None;
        // One batch however many records: only `MAX_BATCH_INPUT` stops them (as an error).
        b.append_all(&mut records, usize::MAX).map_err(|source| RecordError {
            number: b.len() as u64 + 1,
            stream_offset: None,
            source,
        })?;
        Ok(b.finish()?)
    }

    /// One batch of the serialized messages of `array` (a `BinaryArray` or
    /// `LargeBinaryArray`, as Kafka connectors hand them over). A null entry fails it.
    /// With [`StringColumns::Views`], long strings point into `array`'s values.
    pub fn convert_binary<O: OffsetSizeTrait>(
        &self,
        array: &GenericBinaryArray<O>,
    ) -> Result<RecordBatch, ConvertError> {
        let mut b = self.builder();
        b.reserve(array.len());
        if let Some(i) = (0..array.len()).find(|&i| array.is_null(i)) {
            return Err(ConvertError::NullRecord { number: i as u64 + 1 });
        }
        let offsets = array.value_offsets();
        let mut records = (0..array.len()).map(|i| offsets[i].as_usize()..offsets[i + 1].as_usize());
        b.append_all_in(array.values(), &mut records, usize::MAX).map_err(|source| RecordError {
            number: b.len() as u64 + 1,
            stream_offset: None,
            source,
        })?;
        Ok(b.finish()?)
    }

    /// Batches of at most `batch_size` records from a delimited stream held in memory (a row
    /// each, unless [`ArrowOptions::explode`] makes a row of each element); a batch also
    /// closes after the record that takes its input to [`STREAM_BATCH_INPUT`] bytes.
    pub fn convert_delimited<'c, 'd>(&'c self, data: &'d [u8], batch_size: usize) -> DelimitedBatches<'c, 'd> {
        DelimitedBatches {
            builder: self.builder(),
            records: DelimitedRecords::new(data),
            batch_size: batch_size.max(1),
            keep_going: false,
            skipped: Vec::new(),
            pending: None,
            done: false,
        }
    }
}

/// Appends decoded records to column builders, then finishes them into a batch. Each
/// record (or chunk of records) is decoded into the builder's own arena, reused each time.
pub struct BatchBuilder<'c> {
    converter: &'c Converter,
    /// The root struct (a [`Cell`], the type the direct path's walk starts from).
    root: Cell,
    arena: Arena,
    cx: RowCx,
    /// Input blocks view columns point into (see [`StringColumns::Views`]).
    shared: Vec<Buffer>,
    intake: Intake,
    /// The compiled path's chunk buffers.
    chunk: Option<ChunkColumns>,
}

impl Drop for BatchBuilder<'_> {
    /// Leaves the builder's arena and chunk buffers to the converter's next builder.
    fn drop(&mut self) {
        let mut spare = self.converter.spare.lock().unwrap_or_else(|e| e.into_inner());
        if spare.arenas.len() < SPARE {
            let mut arena = std::mem::take(&mut self.arena);
            arena.reset();
            spare.arenas.push(arena);
        }
        if let Some(mut chunk) = self.chunk.take().filter(|_| spare.chunks.len() < SPARE) {
            chunk.clear();
            spare.chunks.push(chunk);
        }
    }
}

/// What a batch has taken in: bytes of input (at most [`MAX_BATCH_INPUT`]), and each row's
/// schema id where the batch has that column.
struct Intake {
    bytes: usize,
    schema_ids: Option<Vec<i32>>,
}

impl Intake {
    /// Counts an appended message of `len` bytes with its schema id.
    fn admitted(&mut self, schema_id: i32, len: usize) {
        if let Some(ids) = &mut self.schema_ids {
            ids.push(schema_id);
        }
        self.bytes += len;
    }
}

impl std::fmt::Debug for BatchBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchBuilder").field("rows", &self.len()).field("stats", &self.cx.stats).finish()
    }
}

/// Bytes of input one batch may take: Arrow's `Utf8` and `Binary` columns have 32-bit
/// offsets, and a string column holds at most the input bytes it came from.
pub const MAX_BATCH_INPUT: usize = 1 << 30;

/// Bytes of input after which a batch read from a stream closes (after the record that
/// reaches them), whatever its row count: [`Converter::convert_delimited`]'s batches, the
/// CLI's `-o arrow`, an SQL scan's and Python's `read_delimited`. A stream of big records
/// (whole tiles, OSM blocks) then makes batches of a few MiB of input, as a batch of small
/// records does, not one of every column of `batch_size` tiles (8,192 tiles are ~600 MB of
/// input and several GB of columns).
pub const STREAM_BATCH_INPUT: usize = 8 << 20;

/// Bytes of input from which a batch is full ([`BatchBuilder::is_full`]).
const FULL: usize = MAX_BATCH_INPUT / 2;

impl BatchBuilder<'_> {
    /// Decodes `record` and appends it as one row; on error nothing is appended.
    /// A record that would take the batch past [`MAX_BATCH_INPUT`] bytes of input is
    /// refused as [`DecodeErrorKind::LengthOutOfBounds`](protojit::DecodeErrorKind): finish
    /// the batch first ([`is_full`](Self::is_full) says when).
    pub fn append(&mut self, record: &[u8]) -> Result<(), AppendError> {
        self.cx.source = None;
        self.push(record)
    }

    /// Like [`append`](Self::append), for the record `buffer[record]` held in an Arrow
    /// buffer: with [`StringColumns::Views`], strings and bytes longer than 12 bytes
    /// become views into `buffer` instead of copies, and the batch keeps `buffer` alive.
    ///
    /// # Panics
    /// If `record` is not a range of `buffer`, as slicing does.
    pub fn append_in(&mut self, buffer: &Buffer, record: Range<usize>) -> Result<(), AppendError> {
        let bytes = &buffer.as_slice()[record.clone()];
        if self.converter.options.strings != StringColumns::Views {
            return self.append(bytes);
        }
        self.share(buffer, record.start);
        let pushed = self.push(bytes);
        self.cx.source = None;
        pushed
    }

    fn push(&mut self, record: &[u8]) -> Result<(), AppendError> {
        self.append_all(&mut std::iter::once(record), usize::MAX).map(drop)
    }

    /// Strips `record`'s framing and checks the batch's input limit: its schema id (0
    /// without framing) and the message.
    #[inline]
    fn admit<'r>(&self, record: &'r [u8]) -> Result<(i32, &'r [u8]), AppendError> {
        let (schema_id, message) = match &self.converter.framing {
            None => (0, record),
            Some(check) => check.strip(record)?,
        };
        if self.intake.bytes + message.len() > MAX_BATCH_INPUT {
            return Err(DecodeError::new(protojit::DecodeErrorKind::LengthOutOfBounds, 0).into());
        }
        Ok((schema_id, message))
    }

    /// Appends one record by the direct or the tree path (the chunked path appends
    /// through [`push_chunk`](Self::push_chunk)).
    fn push_one(&mut self, record: &[u8]) -> Result<(), AppendError> {
        let (schema_id, message) = self.admit(record)?;
        if self.converter.path == ConvertPath::DirectInterpreted {
            self.push_direct(message)?;
        } else {
            self.push_tree(message)?;
        }
        self.intake.admitted(schema_id, message.len());
        Ok(())
    }

    /// Decodes and appends records taken from `records` in order, until it ends (`true`)
    /// or the batch is full (`false`, see [`is_full`](Self::is_full)); each chunk of
    /// records is decoded, then read column by column ([`ConvertPath::Chunked`]; the
    /// other paths append one record at a time). On an error, the records before the
    /// failing one are appended ([`len`](Self::len) counts them), the failing one has been
    /// taken from `records` and is not, and the rest are left in `records`.
    pub fn append_many<'r>(&mut self, records: &mut impl Iterator<Item = &'r [u8]>) -> Result<bool, AppendError> {
        self.cx.source = None;
        self.append_all(records, FULL)
    }

    /// Like [`append_many`](Self::append_many), for records held in an Arrow buffer, each
    /// `buffer[range]`, as [`append_in`](Self::append_in) appends one.
    ///
    /// # Panics
    /// If a range is not one of `buffer`, as slicing does.
    pub fn append_many_in(
        &mut self,
        buffer: &Buffer,
        records: &mut impl Iterator<Item = Range<usize>>,
    ) -> Result<bool, AppendError> {
        self.append_all_in(buffer, records, FULL)
    }

    /// [`append_many_in`](Self::append_many_in) until the batch holds `full_at` bytes of
    /// input.
    fn append_all_in(
        &mut self,
        buffer: &Buffer,
        records: &mut impl Iterator<Item = Range<usize>>,
        full_at: usize,
    ) -> Result<bool, AppendError> {
        let bytes = buffer.as_slice();
        if self.converter.options.strings != StringColumns::Views {
            self.cx.source = None;
            return self.append_all(&mut records.map(|r| &bytes[r]), full_at);
        }
        let mut records = records.peekable();
        let Some(first) = records.peek().map(|r| r.start) else { return Ok(true) };
        self.share(buffer, first);
        let appended = self.append_all(&mut records.map(|r| &bytes[r]), full_at);
        self.cx.source = None;
        appended
    }

    /// Makes `buffer` from byte `start` on the batch's shared block its records' long
    /// strings point into ([`StringColumns::Views`]).
    fn share(&mut self, buffer: &Buffer, start: usize) {
        let addr = buffer.as_ptr() as usize + start.min(buffer.len());
        let holds = |b: &Buffer| b.as_ptr() as usize <= addr && addr < b.as_ptr() as usize + b.len();
        let id = match self.shared.last() {
            Some(b) if holds(b) => self.shared.len() - 1,
            _ => {
                // From this record on, at most u32::MAX bytes: view offsets are 32-bit.
                // (Records past that are copied: the column checks each value's address.)
                let len = (buffer.len() - start).min(u32::MAX as usize);
                self.shared.push(buffer.slice_with_length(start, len));
                self.shared.len() - 1
            }
        };
        let block = &self.shared[id];
        self.cx.source = Some(Source { id: id as u32, start: block.as_ptr() as usize, len: block.len() });
    }

    /// Appends records until they end (`true`) or the batch holds `full_at` bytes of input
    /// (`false`), as [`append_many`](Self::append_many) describes.
    fn append_all<'r>(
        &mut self,
        records: &mut impl Iterator<Item = &'r [u8]>,
        full_at: usize,
    ) -> Result<bool, AppendError> {
        loop {
            if self.intake.bytes >= full_at {
                return Ok(false);
            }
            let more = match self.converter.path {
                ConvertPath::Chunked => self.push_chunk(records, full_at)?,
                ConvertPath::DirectCompiled | ConvertPath::Auto => match self.converter.arm() {
                    Arm::Compiled => self.push_compiled(records, full_at)?,
                    // While the appenders compile (in the background), or where the chunked
                    // path won the race.
                    Arm::Chunked => self.push_chunk_counted(records, full_at)?,
                    Arm::Timed(arm) => {
                        let (started, bytes) = (std::time::Instant::now(), self.intake.bytes);
                        let more = if arm == ARM_COMPILED {
                            self.push_compiled(records, full_at)
                        } else {
                            self.push_chunk_counted(records, full_at)
                        };
                        let nanos = started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                        let race = self.converter.compiled.as_ref().and_then(|c| c.race.as_ref());
                        if let (Ok(_), Some(race)) = (&more, race) {
                            race.record(arm, nanos, (self.intake.bytes - bytes) as u64);
                        }
                        more?
                    }
                },
                _ => match records.next() {
                    Some(r) => {
                        self.push_one(r)?;
                        true
                    }
                    None => false,
                },
            };
            if !more {
                return Ok(true);
            }
        }
    }

    /// Decodes up to [`CHUNK_RECORDS`] records of `records` into the arena (fewer once they
    /// hold [`CHUNK_INPUT`] bytes, or the batch `full_at`), then appends them column by
    /// column; whether `records` may hold more. A record that fails is taken and not
    /// appended; those before it are.
    fn push_chunk<'r>(
        &mut self,
        records: &mut impl Iterator<Item = &'r [u8]>,
        full_at: usize,
    ) -> Result<bool, AppendError> {
        let c = self.converter;
        self.arena.reset();
        let mut rows = Vec::with_capacity(records.size_hint().0.clamp(1, CHUNK_RECORDS));
        let mut outcome = Ok(true);
        let chunk_at = full_at.min(self.intake.bytes.saturating_add(CHUNK_INPUT));
        while rows.len() < CHUNK_RECORDS && self.intake.bytes < chunk_at {
            let Some(r) = records.next() else {
                outcome = Ok(false);
                break;
            };
            let decoded = self.admit(r).and_then(|(schema_id, message)| {
                Ok((schema_id, message.len(), c.decoder.decode(message, &self.arena)?))
            });
            match decoded {
                Ok((schema_id, len, m)) => {
                    rows.push(Some(m.block()));
                    self.intake.admitted(schema_id, len);
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        if !rows.is_empty() {
            let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
            root.pad_deep();
            root.gather(&rows, &mut self.cx);
        }
        outcome
    }

    /// [`push_chunk`](Self::push_chunk) on the compiled or auto path, its rows counted.
    fn push_chunk_counted<'r>(
        &mut self,
        records: &mut impl Iterator<Item = &'r [u8]>,
        full_at: usize,
    ) -> Result<bool, AppendError> {
        let before = self.len();
        let more = self.push_chunk(records, full_at);
        let c = self.converter.compiled.as_ref().expect("the compiled and auto paths have their cell");
        c.chunked_rows.fetch_add((self.len() - before) as u64, Ordering::Relaxed);
        more
    }

    /// Reads up to [`CHUNK_RECORDS`] records of `records` into the compiled appender's
    /// buffers (fewer once they hold [`CHUNK_INPUT`] bytes, or the batch `full_at`), then
    /// moves them into the columns; whether `records` may hold more. A record the code
    /// declines goes through the tree, after the rows before it (counted in
    /// [`BatchStats::tree_records`]); one that fails there is taken and not appended.
    fn push_compiled<'r>(
        &mut self,
        records: &mut impl Iterator<Item = &'r [u8]>,
        full_at: usize,
    ) -> Result<bool, AppendError> {
        let compiled = self.converter.appender().expect("the compiled path has its appender");
        let mut cols = self.chunk.take().unwrap_or_else(|| compiled.appender.columns(CHUNK_RECORDS));
        let mut taken: Vec<&[u8]> = Vec::with_capacity(cols.capacity());
        let mut outcome = Ok(true);
        // Whether the text columns' data is lent to `cols` (from the first record the code
        // reads after the builders were last written, to the next move).
        let mut lent = false;
        let chunk_at = full_at.min(self.intake.bytes.saturating_add(CHUNK_INPUT));
        while !cols.is_full() && self.intake.bytes < chunk_at {
            let Some(r) = records.next() else {
                outcome = Ok(false);
                break;
            };
            let (schema_id, message) = match self.admit(r) {
                Ok(admitted) => admitted,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            if !lent {
                let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
                compiled.lend_text(root, &mut cols);
                lent = true;
            }
            if compiled.appender.append(&mut cols, message) {
                if compiled.row_ok(
                    &cols,
                    message,
                    self.converter.schema.layouts(),
                    &self.converter.options.decode.decode,
                ) {
                    taken.push(message);
                    self.intake.admitted(schema_id, message.len());
                    continue;
                }
                cols.pop_row();
            }
            // Declined: the rows before it go in first, then the tree reads it (and says
            // what is wrong with it, if anything is).
            self.move_chunk(&mut cols, &mut taken);
            lent = false;
            match self.push_tree(message) {
                Ok(()) => {
                    self.cx.stats.tree_records += 1;
                    let cell = self.converter.compiled.as_ref().expect("the compiled path has its cell");
                    cell.tree_rows.fetch_add(1, Ordering::Relaxed);
                    self.intake.admitted(schema_id, message.len());
                }
                Err(e) => {
                    outcome = Err(e.into());
                    break;
                }
            }
        }
        self.move_chunk(&mut cols, &mut taken);
        self.chunk = Some(cols);
        outcome
    }

    /// Moves the compiled path's rows into the columns (the text columns' data back first,
    /// where it was lent), and empties the buffers.
    fn move_chunk(&mut self, cols: &mut ChunkColumns, taken: &mut Vec<&[u8]>) {
        let compiled = self.converter.appender().expect("the compiled path has its appender");
        let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
        compiled.take_text(root, cols);
        if cols.rows() == 0 {
            return;
        }
        root.pad_deep();
        compiled.flush(root, cols, taken, &mut self.cx);
        let cell = self.converter.compiled.as_ref().expect("the compiled path has its cell");
        cell.compiled_rows.fetch_add(cols.rows() as u64, Ordering::Relaxed);
        cols.clear();
        taken.clear();
    }

    /// Decodes `record` into a tree and appends it from there.
    fn push_tree(&mut self, record: &[u8]) -> Result<(), DecodeError> {
        self.arena.reset();
        let msg = self.converter.decoder.decode(record, &self.arena)?;
        let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
        // The tree appends to every column: the direct path's lazy columns catch up first.
        root.pad_deep();
        root.push_message(&msg, &mut self.cx);
        Ok(())
    }

    /// Reads `record` straight into the columns; a record that fails, or that the direct
    /// path hands over, leaves the builders as they were (then the tree takes it).
    fn push_direct(&mut self, record: &[u8]) -> Result<(), DecodeError> {
        let c = self.converter;
        let rows = self.len();
        let before = self.cx.stats;
        let mut cx = DirectCx { row: std::mem::take(&mut self.cx), record };
        let walked = walk(c.schema.layouts(), c.layout, record, &c.options.decode.decode, &mut self.root, &mut cx);
        let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
        if let Ok(std::ops::ControlFlow::Continue(())) = walked {
            root.close_row(&mut cx);
            self.cx = cx.row;
            return Ok(());
        }
        root.truncate(rows);
        self.cx = cx.row;
        self.cx.stats = before;
        let _ = walked?; // an error fails the record; `Break`: the tree takes it
        self.cx.stats.tree_records += 1;
        self.push_tree(record)
    }

    /// Makes room for `rows` more rows in every column (a hint: appending past it works).
    /// Text columns are sized for them once the first chunk shows their bytes per row; the
    /// hint lasts until [`finish`](Self::finish).
    pub fn reserve(&mut self, rows: usize) {
        let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
        root.reserve(rows);
    }

    /// Rows appended since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        let Cell::Struct(root) = &self.root else { unreachable!("the root is a struct") };
        root.len()
    }

    /// Whether no row was appended since the last [`finish`](Self::finish).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the batch holds half of [`MAX_BATCH_INPUT`] or more: time to finish it.
    pub fn is_full(&self) -> bool {
        self.intake.bytes >= FULL
    }

    /// Counters of the rows appended since the last [`finish`](Self::finish).
    pub fn stats(&self) -> BatchStats {
        self.cx.stats
    }

    /// The rows so far as a batch; the builder starts again empty. This is where every
    /// path's batch is made: the mapping options that reshape columns
    /// ([`ArrowOptions::oneof_case`], [`maps`](ArrowOptions::maps),
    /// [`large`](ArrowOptions::large), [`EnumColumns::String`](crate::EnumColumns::String),
    /// [`flatten`](ArrowOptions::flatten), [`explode`](ArrowOptions::explode)) are applied
    /// here, to the canonical columns the paths fill. Exploded, the batch has a row per
    /// element, not per record.
    pub fn finish(&mut self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let rows = self.len();
        self.converter.rows.fetch_add(rows as u64, Ordering::Relaxed);
        let Cell::Struct(root) = &mut self.root else { unreachable!("the root is a struct") };
        let columns = root.finish_columns(&self.shared);
        let ids = self.intake.schema_ids.as_mut().map(std::mem::take);
        self.shared.clear();
        self.cx.stats = BatchStats::default();
        self.intake.bytes = 0;
        // Every path's canonical columns, in the shape the mapping options ask for (the
        // builder is empty again whether or not this succeeds).
        let (mut columns, rows, records) = match &self.converter.reshape {
            Some(reshape) => {
                let reshaped = reshape.apply(columns, rows)?;
                self.converter.unexploded.fetch_add(reshaped.unexploded, Ordering::Relaxed);
                self.converter.unresolved_any.fetch_add(reshaped.unresolved_any, Ordering::Relaxed);
                (reshaped.columns, reshaped.rows, reshaped.records)
            }
            None => (columns, rows, None),
        };
        if let Some(ids) = ids {
            let ids: arrow_array::ArrayRef = Arc::new(arrow_array::Int32Array::from(ids));
            columns.push(match &records {
                // Exploded: each row's record's id.
                Some(records) => arrow_select::take::take(&ids, records, None)?,
                None => ids,
            });
        }
        RecordBatch::try_new_with_options(
            self.converter.arrow.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// Batches from a delimited stream in memory ([`Converter::convert_delimited`]).
pub struct DelimitedBatches<'c, 'd> {
    builder: BatchBuilder<'c>,
    records: DelimitedRecords<'d>,
    batch_size: usize,
    keep_going: bool,
    skipped: Vec<RecordError>,
    /// An error met after some rows: returned after the batch of those rows.
    pending: Option<ConvertError>,
    done: bool,
}

impl DelimitedBatches<'_, '_> {
    /// Skip records that do not decode (they are listed in [`skipped`](Self::skipped))
    /// instead of failing at the first.
    pub fn keep_going(mut self, yes: bool) -> Self {
        self.keep_going = yes;
        self
    }

    /// The records skipped so far, with their numbers and offsets.
    pub fn skipped(&self) -> &[RecordError] {
        &self.skipped
    }
}

impl Iterator for DelimitedBatches<'_, '_> {
    type Item = Result<RecordBatch, ConvertError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending.take() {
            return Some(Err(e));
        }
        if self.done {
            return None;
        }
        if self.builder.is_empty() {
            self.builder.reserve(self.batch_size.min(1 << 16));
        }
        // The batch's input so far (skipped records' too): it closes at `STREAM_BATCH_INPUT`.
        let mut input = 0;
        while self.builder.len() < self.batch_size && !self.builder.is_full() && input < STREAM_BATCH_INPUT {
            // The records up to the batch's size, a chunk at a time; the stream's own
            // errors end them, and the last record taken is the one an error is about.
            let want = self.batch_size - self.builder.len();
            let (mut last, mut stream_error, mut ended) = (None, None, false);
            let records = &mut self.records;
            let mut taken = std::iter::from_fn(|| {
                if input >= STREAM_BATCH_INPUT {
                    // The record that reached the limit was the batch's last.
                    return None;
                }
                match records.next() {
                    Some(Ok(r)) => {
                        last = Some((r.number, r.offset));
                        input += r.bytes.len();
                        Some(r.bytes)
                    }
                    Some(Err(e)) => {
                        stream_error = Some(e);
                        None
                    }
                    None => {
                        ended = true;
                        None
                    }
                }
            })
            .take(want);
            let appended = self.builder.append_many(&mut taken);
            drop(taken);
            let error = match appended {
                Err(source) => {
                    let (number, offset) = last.expect("a record failed, so one was taken");
                    let e = RecordError { number, stream_offset: Some(offset), source };
                    if self.keep_going {
                        self.skipped.push(e);
                        continue;
                    }
                    ConvertError::from(e)
                }
                Ok(_) => match stream_error {
                    Some(e) => ConvertError::from(e),
                    None if ended => break,
                    None => continue,
                },
            };
            // The rows before the error come first, as a batch of their own.
            self.done = true;
            if self.builder.is_empty() {
                return Some(Err(error));
            }
            self.pending = Some(error);
            break;
        }
        if self.builder.is_empty() {
            self.done = true;
            return None;
        }
        Some(self.builder.finish().map_err(ConvertError::from))
    }
}

#[cfg(test)]
mod tests {
    use super::{Race, ARM_CHUNKED, ARM_COMPILED, RACE_BYTES};

    /// Feeds `race` alternate chunks of `bytes` at each arm's ns per byte until it decides;
    /// the input each arm read by then, and the winner.
    fn run(race: &Race, compiled: f64, chunked: f64, bytes: u64) -> (u64, Option<usize>) {
        for chunk in 1..=100u64 {
            for (arm, rate) in [(ARM_COMPILED, compiled), (ARM_CHUNKED, chunked)] {
                race.record(arm, (rate * bytes as f64) as u64, bytes);
                if race.won().is_some() {
                    return (chunk * bytes, race.won());
                }
            }
        }
        (0, None)
    }

    #[test]
    fn a_clear_race_ends_early_and_a_close_one_runs_its_mib() {
        let chunk = 64 << 10;
        // Twice as fast: decided on a quarter of the input a close race needs.
        let (read, won) = run(&Race::default(), 1.0, 2.0, chunk);
        assert_eq!(won, Some(ARM_COMPILED));
        assert!(read < RACE_BYTES / 2, "{read}");
        let (read, won) = run(&Race::default(), 3.0, 1.0, chunk);
        assert_eq!(won, Some(ARM_CHUNKED));
        assert!(read < RACE_BYTES / 2, "{read}");
        // 10% apart: both arms read their MiB first.
        let (read, won) = run(&Race::default(), 1.1, 1.0, chunk);
        assert_eq!(won, Some(ARM_CHUNKED));
        assert!(read > RACE_BYTES, "{read}");
    }
}
