//! `protojit.Converter`: records in Arrow arrays (read in place through the C data interface) or in Python lists into `pyarrow` record batches and tables; null entries, bad records and threads as the keywords say.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::ffi::FFI_ArrowArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, LargeBinaryArray, OffsetSizeTrait, RecordBatch, RecordBatchOptions,
    StructArray, UInt32Array,
};
use arrow_data::ArrayData;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use protojit_arrow::{
    AnyColumns, AppendError, ArrowOptions, BatchBuilder, ConvertPath, EnumColumns, Explode, Framing, MapColumns,
    RecordError, RecursionColumns, StringColumns, StructColumns,
};
use pyo3::exceptions::{PyStopIteration, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::args::{buffer_bytes, count, engine_kind};
use crate::errors::{append_fault, convert_error, decode_error, read_error, Error};
use crate::reader::{self, Chunks};

/// What a null entry of the input becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nulls {
    /// A row whose every column is null (the schema's top-level fields are nullable).
    Null,
    /// A `DecodeError` of kind `null_record`.
    Error,
}

/// What a record that does not decode does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errors {
    /// Fails the conversion with a `DecodeError`.
    Raise,
    /// Is left out, and counted (`protojit.skipped` in the schema's metadata).
    Skip,
}

/// The mapping keywords beside `enums` and `strings` (`ArrowOptions`' fields of the same
/// names): `oneof_case=`, `maps=`, `large=`, `flatten=`; `explode=` and `explode_outer=`
/// (a field path: `ArrowOptions::explode`); `any=` (`"struct"` or `"json"`); `extensions=`; `recursion=` (`"cut"` or `"json"`); `structs=` (`"struct"` or `"json"`).
pub struct Mapping<'a> {
    pub oneof_case: bool,
    pub maps: &'a str,
    pub large: bool,
    pub flatten: bool,
    pub explode: Option<String>,
    pub explode_outer: Option<String>,
    pub any: &'a str,
    pub extensions: bool,
    pub recursion: &'a str,
    pub structs: &'a str,
}

/// A converter's keywords, checked.
pub struct ConverterOptions {
    pub arrow: ArrowOptions,
    pub nulls: Nulls,
    pub errors: Errors,
    pub threads: usize,
}

fn bad(keyword: &str, given: &str, choices: &str) -> PyErr {
    PyValueError::new_err(format!("{keyword}={given:?}: use {choices}"))
}

pub fn parse_errors(errors: &str) -> PyResult<Errors> {
    match errors {
        "raise" => Ok(Errors::Raise),
        "skip" => Ok(Errors::Skip),
        other => Err(bad("errors", other, "'raise' (the default) or 'skip'")),
    }
}

impl ConverterOptions {
    #[allow(clippy::too_many_arguments)]
    pub fn parse(
        select: Option<Vec<String>>,
        enums: &str,
        strings: &str,
        max_recursion: i64,
        well_known_types: bool,
        mapping: Mapping<'_>,
        framing: &str,
        schema_id_column: Option<String>,
        path: Option<&str>,
        engine: &str,
        max_depth: i64,
        nulls: &str,
        errors: &str,
        threads: i64,
    ) -> PyResult<ConverterOptions> {
        let mut arrow = ArrowOptions { select, ..ArrowOptions::default() };
        arrow.enums = match enums {
            "dictionary" => EnumColumns::Dictionary,
            "number" => EnumColumns::Number,
            "string" => EnumColumns::String,
            other => {
                return Err(bad(
                    "enums",
                    other,
                    "'dictionary' (names, the default), 'number' or 'string' (plain names)",
                ))
            }
        };
        arrow.maps = match mapping.maps {
            "map" => MapColumns::Map,
            "entries" => MapColumns::Entries,
            other => return Err(bad("maps", other, "'map' (the default) or 'entries' (a list of key/value structs)")),
        };
        arrow.oneof_case = mapping.oneof_case;
        arrow.large = mapping.large;
        arrow.flatten = mapping.flatten;
        arrow.extensions = mapping.extensions;
        arrow.structs = match mapping.structs {
            "struct" => StructColumns::Struct,
            "json" => StructColumns::Json,
            other => return Err(bad("structs", other, "'struct' (the default) or 'json' (their JSON text)")),
        };
        arrow.recursion = match mapping.recursion {
            "cut" => RecursionColumns::Cut,
            "json" => RecursionColumns::Json,
            other => {
                return Err(bad(
                    "recursion",
                    other,
                    "'cut' (left out, the default) or 'json' (the subtree as JSON text)",
                ))
            }
        };
        arrow.any = match mapping.any {
            "struct" => AnyColumns::Struct,
            "json" => AnyColumns::Json,
            other => {
                return Err(bad(
                    "any",
                    other,
                    "'struct' (type_url and value, the default) or 'json' (the packed message)",
                ))
            }
        };
        arrow.explode = match (mapping.explode, mapping.explode_outer) {
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err("give explode= or explode_outer=, not both"));
            }
            (Some(path), None) => Some(Explode { path, outer: false }),
            (None, Some(path)) => Some(Explode { path, outer: true }),
            (None, None) => None,
        };
        arrow.strings = match strings {
            "offsets" => StringColumns::Offsets,
            "views" => StringColumns::Views,
            other => {
                return Err(bad(
                    "strings",
                    other,
                    "'offsets' (Utf8/Binary, the default) or 'views' (Utf8View/BinaryView)",
                ))
            }
        };
        arrow.max_recursion = count("max_recursion", max_recursion, 1)?;
        arrow.well_known_types = well_known_types;
        arrow.framing = match framing {
            "bare" => {
                if schema_id_column.is_some() {
                    return Err(PyValueError::new_err("schema_id_column needs framing='schema_registry'"));
                }
                Framing::Bare
            }
            "schema_registry" => Framing::SchemaRegistry { schema_id_column },
            other => {
                return Err(bad(
                    "framing",
                    other,
                    "'bare' (the default) or 'schema_registry' (Kafka's schema-registry header)",
                ))
            }
        };
        if let Some(path) = path {
            arrow.path = match path {
                "auto" => ConvertPath::Auto,
                "chunked" => ConvertPath::Chunked,
                "compiled" => ConvertPath::DirectCompiled,
                "direct" => ConvertPath::DirectInterpreted,
                "tree" => ConvertPath::Tree,
                other => {
                    return Err(bad("path", other, "'auto' (the default), 'chunked', 'compiled', 'direct' or 'tree'"))
                }
            };
        }
        arrow.decode = arrow.decode.with_kind(engine_kind(engine)?).with_max_depth(count("max_depth", max_depth, 0)?);
        let nulls = match nulls {
            "null" => Nulls::Null,
            "error" => Nulls::Error,
            other => return Err(bad("nulls", other, "'null' (a row of nulls, the default) or 'error'")),
        };
        let threads = count("threads", threads, 1)?;
        Ok(ConverterOptions { arrow, nulls, errors: parse_errors(errors)?, threads })
    }
}

/// Converts serialized records of one message type into Arrow record batches.
#[pyclass(frozen, module = "protojit")]
pub struct Converter {
    pub inner: Arc<protojit_arrow::Converter>,
    pub nulls: Nulls,
    pub errors: Errors,
    threads: usize,
    /// Rows are elements (`explode=` / `explode_outer=`), not records.
    exploded: bool,
    /// The schema of what it returns: the Rust converter's, with nullable top-level
    /// fields when null entries become null rows.
    pub schema: SchemaRef,
    /// Records skipped (`errors='skip'`) over every call.
    pub skipped: AtomicU64,
    /// `schema` as a `pyarrow.Schema`, made once: batches cross to pyarrow as arrays
    /// described by it ([`Converter::batch_to_pyarrow`]).
    py_schema: PyOnceLock<Py<PyAny>>,
    /// The way back, for the same type and options (or why these options have none).
    encoder: Result<protojit_arrow::Encoder, String>,
}

impl Converter {
    pub fn new(
        py: Python<'_>,
        schema: &protojit::Schema,
        message: &str,
        options: ConverterOptions,
    ) -> PyResult<Converter> {
        let inner =
            py.detach(|| protojit_arrow::Converter::new(schema, message, &options.arrow)).map_err(convert_error)?;
        let encoder = protojit_arrow::Encoder::new(schema, message, &options.arrow).map_err(|e| e.to_string());
        let arrow = inner.arrow_schema();
        let schema = match options.nulls {
            Nulls::Error => arrow.clone(),
            Nulls::Null => {
                let fields: Vec<Field> =
                    arrow.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect();
                Arc::new(ArrowSchema::new_with_metadata(fields, arrow.metadata().clone()))
            }
        };
        Ok(Converter {
            inner: Arc::new(inner),
            nulls: options.nulls,
            errors: options.errors,
            threads: options.threads,
            exploded: options.arrow.explode.is_some(),
            schema,
            skipped: AtomicU64::new(0),
            py_schema: PyOnceLock::new(),
            encoder,
        })
    }
}

/// Records as the converter reads them.
pub enum Records {
    Binary(BinaryArray),
    Large(LargeBinaryArray),
    View(BinaryViewArray),
}

impl Records {
    /// The records of an imported array, or a `TypeError` naming its type.
    pub fn from_data(data: ArrayData) -> PyResult<Records> {
        data.validate_full().map_err(|e| PyValueError::new_err(format!("the array is not valid Arrow data: {e}")))?;
        Ok(match data.data_type() {
            DataType::Binary => Records::Binary(BinaryArray::from(data)),
            DataType::LargeBinary => Records::Large(LargeBinaryArray::from(data)),
            DataType::BinaryView => Records::View(BinaryViewArray::from(data)),
            other => {
                return Err(PyTypeError::new_err(format!(
                    "expected an array of serialized messages (binary, large_binary or binary_view), got {other}"
                )))
            }
        })
    }

    fn len(&self) -> usize {
        match self {
            Records::Binary(a) => a.len(),
            Records::Large(a) => a.len(),
            Records::View(a) => a.len(),
        }
    }

    fn is_null(&self, i: usize) -> bool {
        match self {
            Records::Binary(a) => a.is_null(i),
            Records::Large(a) => a.is_null(i),
            Records::View(a) => a.is_null(i),
        }
    }

    /// Appends the records `indices` names (the first of which is taken first), as
    /// [`BatchBuilder::append_many`] does; how many were taken.
    fn append(&self, b: &mut BatchBuilder<'_>, indices: &[usize]) -> (usize, Result<bool, AppendError>) {
        let mut taken = 0;
        let mut it = indices.iter().inspect(|_| taken += 1).copied();
        let appended = match self {
            Records::Binary(a) => append_offsets(b, a, &mut it),
            Records::Large(a) => append_offsets(b, a, &mut it),
            Records::View(a) => b.append_many(&mut it.map(|i| a.value(i))),
        };
        (taken, appended)
    }
}

fn append_offsets<O: OffsetSizeTrait>(
    b: &mut BatchBuilder<'_>,
    a: &arrow_array::GenericBinaryArray<O>,
    indices: &mut impl Iterator<Item = usize>,
) -> Result<bool, AppendError> {
    let offsets = a.value_offsets();
    let mut ranges = indices.map(|i| offsets[i].as_usize()..offsets[i + 1].as_usize());
    b.append_many_in(a.values(), &mut ranges)
}

/// A record that failed: its index in the input, and why.
pub struct Failed {
    pub index: usize,
    pub error: AppendError,
    /// Where it starts in its delimited stream, if it came from one.
    pub stream_offset: Option<u64>,
}

impl Failed {
    pub fn into_py(self) -> PyErr {
        let (kind, offset) = append_fault(&self.error);
        let message = RecordError {
            number: self.index as u64 + 1,
            stream_offset: self.stream_offset.map(|o| o as usize),
            source: self.error,
        }
        .to_string();
        decode_error(&message, Some(self.index as u64), offset as u64, &kind)
    }
}

/// What converting some records gave.
pub struct Part {
    pub batches: Vec<RecordBatch>,
    /// Indices of the records left out (`errors='skip'`), in order.
    pub skipped: Vec<usize>,
    /// The record that failed (`errors='raise'`).
    pub failed: Option<Failed>,
}

/// Appends the records named by indices (the first taken first), as
/// [`BatchBuilder::append_many`] does, and says how many it took.
pub type Append<'r> = dyn Fn(&mut BatchBuilder<'_>, &[usize]) -> (usize, Result<bool, AppendError>) + Sync + 'r;

/// Converts the records `indices` names, in order, into batches (more than one only when
/// a batch fills up: see `protojit_arrow::MAX_BATCH_INPUT`).
pub fn convert_part(
    conv: &protojit_arrow::Converter,
    errors: Errors,
    indices: &[usize],
    append: &Append<'_>,
) -> Result<Part, arrow_schema::ArrowError> {
    let mut b = conv.builder();
    b.reserve(indices.len());
    let mut part = Part { batches: Vec::new(), skipped: Vec::new(), failed: None };
    let mut pos = 0;
    loop {
        let (taken, appended) = append(&mut b, &indices[pos..]);
        pos += taken;
        match appended {
            Ok(true) => break,
            Ok(false) => part.batches.push(b.finish()?),
            Err(error) => {
                let index = indices[pos - 1];
                match errors {
                    Errors::Skip => part.skipped.push(index),
                    Errors::Raise => {
                        part.failed = Some(Failed { index, error, stream_offset: None });
                        return Ok(part);
                    }
                }
            }
        }
    }
    part.batches.push(b.finish()?);
    Ok(part)
}

/// Records per thread below which `threads` is not used.
const PER_THREAD: usize = 2048;

impl Converter {
    /// One batch of every record of `records`, in order: null entries as the `nulls`
    /// keyword says, bad records as `errors` says, on up to `threads` threads. Runs
    /// without the GIL.
    pub fn convert_records(&self, records: &Records) -> PyResult<(RecordBatch, u64)> {
        let n = records.len();
        let mut indices = Vec::with_capacity(n);
        let mut nulls = 0usize;
        for i in 0..n {
            if records.is_null(i) {
                if self.nulls == Nulls::Error {
                    return Err(decode_error(
                        &format!("record {}: the entry is null (nulls='error')", i + 1),
                        Some(i as u64),
                        0,
                        "null_record",
                    ));
                }
                nulls += 1;
            } else {
                indices.push(i);
            }
        }
        let threads = self.threads.min(indices.len() / PER_THREAD).max(1);
        let append = |b: &mut BatchBuilder<'_>, idx: &[usize]| records.append(b, idx);
        let parts: Vec<Result<Part, arrow_schema::ArrowError>> = if threads == 1 {
            vec![convert_part(&self.inner, self.errors, &indices, &append)]
        } else {
            let per = indices.len().div_ceil(threads);
            std::thread::scope(|s| {
                let handles: Vec<_> = indices
                    .chunks(per)
                    .map(|chunk| s.spawn(|| convert_part(&self.inner, self.errors, chunk, &append)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(arrow_schema::ArrowError::ComputeError("a conversion thread panicked".into()))
                        })
                    })
                    .collect()
            })
        };
        let mut batches = Vec::new();
        let mut skipped = Vec::new();
        for part in parts {
            let part = part.map_err(|e| Error::new_err(format!("arrow: {e}")))?;
            if let Some(failed) = part.failed {
                return Err(failed.into_py());
            }
            batches.extend(part.batches);
            skipped.extend(part.skipped);
        }
        let batch = join(self.inner.arrow_schema(), batches, threads)?;
        let columns = if nulls > 0 && !self.exploded {
            // Each input entry's row: a null entry takes row "null", a skipped one none.
            let mut take = Vec::with_capacity(n - skipped.len());
            let (mut row, mut skip) = (0u32, skipped.iter().peekable());
            for i in 0..n {
                if records.is_null(i) {
                    take.push(None);
                } else if skip.peek() == Some(&&i) {
                    skip.next();
                } else {
                    take.push(Some(row));
                    row += 1;
                }
            }
            let take = UInt32Array::from(take);
            batch
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c, &take, None))
                .collect::<Result<Vec<ArrayRef>, _>>()
                .map_err(|e| Error::new_err(format!("arrow: {e}")))?
        } else {
            batch.columns().to_vec()
        };
        // A row per record; exploded, a row per element (null entries have none).
        let rows = if self.exploded { batch.num_rows() } else { n - skipped.len() };
        let batch = RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| Error::new_err(format!("arrow: {e}")))?;
        self.skipped.fetch_add(skipped.len() as u64, Ordering::Relaxed);
        Ok((batch, skipped.len() as u64))
    }

    /// [`schema`](Self::schema) as a `pyarrow.Schema`.
    pub fn py_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = self.py_schema.get_or_try_init(py, || self.schema.as_ref().to_pyarrow(py).map(Bound::unbind))?;
        Ok(schema.bind(py).clone())
    }

    /// `batch` (of [`schema`](Self::schema)'s fields) as a `pyarrow.RecordBatch`, through
    /// the Arrow C data interface: only the array crosses, described by the `pyarrow.Schema`
    /// made once, so a small batch does not pay for exporting and importing its schema
    /// again; `skipped` goes into the batch's metadata (`errors='skip'`).
    pub fn batch_to_pyarrow<'py>(
        &self,
        py: Python<'py>,
        batch: RecordBatch,
        skipped: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // pyarrow reads the array as the schema describes it: they must agree.
        if batch.schema().fields() != self.schema.fields() {
            return Err(Error::new_err("a batch does not have the converter's columns (a bug: please report it)"));
        }
        let data = StructArray::from(batch).into_data();
        let array = FFI_ArrowArray::new(&data);
        // pyarrow takes the array over (it moves the release callback out of `array`,
        // which then releases nothing when dropped), as `arrow_pyarrow` hands arrays over.
        let batch = py
            .import("pyarrow")?
            .getattr("RecordBatch")?
            .call_method1("_import_from_c", (&raw const array as usize, self.py_schema(py)?))?;
        match (self.errors, skipped) {
            (Errors::Skip, Some(n)) => {
                let metadata = pyo3::types::PyDict::new(py);
                for (k, v) in self.schema.metadata() {
                    metadata.set_item(k, v)?;
                }
                metadata.set_item("protojit.skipped", n.to_string())?;
                batch.call_method1("replace_schema_metadata", (metadata,))
            }
            _ => Ok(batch),
        }
    }

    /// The output schema with the skipped count in its metadata (`errors='skip'`).
    pub fn schema_with_skipped(&self, skipped: u64) -> SchemaRef {
        if self.errors != Errors::Skip {
            return self.schema.clone();
        }
        let mut metadata = self.schema.metadata().clone();
        metadata.insert("protojit.skipped".to_owned(), skipped.to_string());
        Arc::new(ArrowSchema::new_with_metadata(self.schema.fields().clone(), metadata))
    }
}

/// One batch of `batches` (of `schema`): the one there is, or their concatenation, its
/// columns spread over `threads` threads.
pub fn join(schema: &SchemaRef, mut batches: Vec<RecordBatch>, threads: usize) -> PyResult<RecordBatch> {
    let arrow = |e: arrow_schema::ArrowError| Error::new_err(format!("arrow: {e}"));
    if batches.len() == 1 {
        return Ok(batches.pop().expect("one batch"));
    }
    let width = schema.fields().len();
    let threads = threads.clamp(1, width.max(1));
    let concat = |c: usize| {
        let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
        arrow_select::concat::concat(&parts)
    };
    let mut columns: Vec<Option<ArrayRef>> = vec![None; width];
    if threads == 1 {
        for (c, column) in columns.iter_mut().enumerate() {
            *column = Some(concat(c).map_err(arrow)?);
        }
    } else {
        let done: Vec<Vec<(usize, Result<ArrayRef, arrow_schema::ArrowError>)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let concat = &concat;
                    s.spawn(move || (t..width).step_by(threads).map(|c| (c, concat(c))).collect::<Vec<_>>())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        for (c, column) in done.into_iter().flatten() {
            columns[c] = Some(column.map_err(arrow)?);
        }
    }
    let columns = columns
        .into_iter()
        .map(|c| c.ok_or_else(|| Error::new_err("a concatenation thread panicked")))
        .collect::<PyResult<Vec<_>>>()?;
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    RecordBatch::try_new_with_options(schema.clone(), columns, &RecordBatchOptions::new().with_row_count(Some(rows)))
        .map_err(arrow)
}

/// `batch` under `schema` (the same fields; other metadata).
pub fn with_schema(batch: RecordBatch, schema: &SchemaRef) -> PyResult<RecordBatch> {
    let rows = batch.num_rows();
    RecordBatch::try_new_with_options(
        schema.clone(),
        batch.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| Error::new_err(format!("arrow: {e}")))
}

/// The records of a Python list or tuple of `bytes` (or `None`), copied into one array.
fn list_records(seq: &Bound<'_, PyAny>) -> PyResult<Records> {
    let mut values: Vec<Option<Vec<u8>>> = Vec::new();
    for (i, item) in seq.try_iter()?.enumerate() {
        let item = item?;
        if item.is_none() {
            values.push(None);
        } else if let Ok(b) = item.cast::<PyBytes>() {
            values.push(Some(b.as_bytes().to_vec()));
        } else if let Some(b) = buffer_bytes(&item)? {
            values.push(Some(b));
        } else {
            return Err(PyTypeError::new_err(format!(
                "item {i} of the list is {}, not bytes: records are serialized messages",
                item.get_type().name()?
            )));
        }
    }
    let refs: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
    Ok(Records::Large(LargeBinaryArray::from_opt_vec(refs)))
}

#[pymethods]
impl Converter {
    /// The Arrow schema of the batches (a `pyarrow.Schema`), known before any data.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.py_schema(py)
    }

    /// The full name of the message type.
    #[getter]
    fn message_type(&self) -> String {
        self.inner.decoder().descriptor().full_name().to_owned()
    }

    /// How records become rows: 'auto' (while its race is undecided), 'chunked',
    /// 'compiled', 'direct' or 'tree'.
    #[getter]
    fn path(&self) -> &'static str {
        match self.inner.path() {
            ConvertPath::Auto => "auto",
            ConvertPath::Chunked => "chunked",
            ConvertPath::DirectCompiled => "compiled",
            ConvertPath::DirectInterpreted => "direct",
            ConvertPath::Tree => "tree",
        }
    }

    /// Why the path is not the one asked for, if it is not.
    #[getter]
    fn path_note(&self) -> Option<String> {
        self.inner.path_note().map(str::to_owned)
    }

    /// Fields left out where recursive types were cut, one line each.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.inner.notes().to_vec()
    }

    /// Records skipped (`errors='skip'`) by every call so far, streams included.
    #[getter]
    fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Under `explode=` / `explode_outer=`, the records so far that had nothing to explode
    /// (left out, or kept as one row whose element is null); 0 without them.
    #[getter]
    fn unexploded(&self) -> u64 {
        self.inner.unexploded_records()
    }

    /// Under `any="json"`, the `Any` values so far whose type the schema does not resolve
    /// (written as `{"@type": url, "value": base64}`); 0 without it.
    #[getter]
    fn unresolved_any(&self) -> u64 {
        self.inner.unresolved_any()
    }

    /// Records into a `pyarrow.RecordBatch` (a `pyarrow.Table` for a `ChunkedArray` or
    /// another Arrow stream). `data`: a `pyarrow` binary, large_binary or binary_view
    /// array, a `ChunkedArray` of them, a Polars `Binary` Series, a list of `bytes`, or
    /// anything with `__arrow_c_array__` / `__arrow_c_stream__`.
    fn to_record_batch<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if data.cast::<PyList>().is_ok() || data.cast::<PyTuple>().is_ok() {
            let records = list_records(data)?;
            return self.one_batch(py, &records);
        }
        if data.cast::<PyBytes>().is_ok() {
            return Err(PyTypeError::new_err(
                "to_record_batch takes many records (a binary array or a list of bytes), not one bytes object: wrap it in a list, or use schema.decoder(...) for one message",
            ));
        }
        let pa = py.import("pyarrow")?;
        let module: String = data.get_type().getattr("__module__")?.extract().unwrap_or_default();
        if module.starts_with("polars") && data.hasattr("to_arrow")? {
            let array = data.call_method0("to_arrow")?;
            return self.to_record_batch(py, &array);
        }
        if data.is_instance(&pa.getattr("ChunkedArray")?)? {
            return self.table(py, data);
        }
        if data.hasattr("__arrow_c_array__")? {
            let records = Records::from_data(ArrayData::from_pyarrow_bound(data)?)?;
            return self.one_batch(py, &records);
        }
        if data.hasattr("__arrow_c_stream__")? {
            let chunked = pa.call_method1("chunked_array", (data,))?;
            return self.table(py, &chunked);
        }
        Err(PyTypeError::new_err(format!(
            "to_record_batch takes a pyarrow binary array (or ChunkedArray), a Polars Binary Series, a list of bytes, or an object with __arrow_c_array__ / __arrow_c_stream__; got {}",
            data.get_type().name()?
        )))
    }

    /// Batches of at most `batch_size` rows from a varint-delimited file (a path, a binary
    /// file object, or bytes), as a `pyarrow.RecordBatchReader` that reads as it goes; a
    /// batch also closes once it holds 8 MiB of input (`STREAM_BATCH_INPUT`).
    /// `compression`: 'auto' (by the file's extension, else its first bytes), 'none',
    /// 'gzip', 'zstd', 'bzip2' or 'xz'. `errors` overrides the converter's.
    #[pyo3(signature = (source, *, batch_size = 65536, compression = "auto", errors = None, max_record = None))]
    fn read_delimited<'py>(
        slf: &Bound<'py, Self>,
        source: &Bound<'py, PyAny>,
        batch_size: i64,
        compression: &str,
        errors: Option<&str>,
        max_record: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let batch_size = count("batch_size", batch_size, 1)?;
        let max_record = max_record.map(|m| count("max_record", m, 0)).transpose()?;
        let conv = slf.get();
        let py = slf.py();
        let errors = match errors {
            Some(e) => parse_errors(e)?,
            None => conv.errors,
        };
        let mut reader =
            protojit::delimited::RecordReader::new(reader::open(py, source, reader::compression_arg(compression)?)?);
        if let Some(max) = max_record {
            reader = reader.with_max_record(max);
        }
        let stream = Stream { chunks: Chunks::new(reader), batch_size, errors };
        let batches = Bound::new(py, DelimitedBatches { converter: slf.clone().unbind(), stream: Mutex::new(stream) })?;
        let pa = py.import("pyarrow")?;
        pa.getattr("RecordBatchReader")?.call_method1("from_batches", (conv.py_schema(py)?, batches))
    }

    /// The way back: one message per row of `data` (a `pyarrow.RecordBatch`, a
    /// `pyarrow.Table` or another Arrow stream, a Polars DataFrame), columns matched to
    /// fields by name, as a `pyarrow.BinaryArray` (a `ChunkedArray` of one array per batch
    /// for a table or stream).
    #[pyo3(signature = (data, *, ignore_extra_columns = false, allow_missing_columns = false))]
    // The Python name pairs with `to_record_batch` (pyarrow's `from_*` / `to_*` style).
    #[allow(clippy::wrong_self_convention)]
    fn from_record_batch<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        ignore_extra_columns: bool,
        allow_missing_columns: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let encoder = self.encoder(ignore_extra_columns, allow_missing_columns)?;
        let (batches, one) = record_batches(py, data, "from_record_batch")?;
        let arrays = py
            .detach(|| batches.iter().map(|b| encoder.encode(b)).collect::<Result<Vec<_>, _>>())
            .map_err(encode_error)?;
        let arrays =
            arrays.into_iter().map(|a| a.into_data().to_pyarrow(py)).collect::<PyResult<Vec<Bound<'py, PyAny>>>>()?;
        let pa = py.import("pyarrow")?;
        match (one, arrays.len()) {
            (true, 1) => Ok(arrays.into_iter().next().expect("one array")),
            _ => pa.call_method1("chunked_array", (arrays, pa.call_method0("binary")?)),
        }
    }

    /// Writes one varint-delimited message per row of `data` (what `from_record_batch`
    /// takes) to `sink` (a path, or a binary file object); returns the number of records.
    /// `read_delimited` reads them back.
    #[pyo3(signature = (sink, data, *, ignore_extra_columns = false, allow_missing_columns = false))]
    fn write_delimited<'py>(
        &self,
        py: Python<'py>,
        sink: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        ignore_extra_columns: bool,
        allow_missing_columns: bool,
    ) -> PyResult<u64> {
        let encoder = self.encoder(ignore_extra_columns, allow_missing_columns)?;
        let (batches, _) = record_batches(py, data, "write_delimited")?;
        let mut sink = reader::Sink::open(sink)?;
        let mut records = 0u64;
        let mut buf = Vec::new();
        for batch in &batches {
            buf.clear();
            py.detach(|| encoder.encode_delimited(batch, &mut buf)).map_err(encode_error)?;
            sink.write(py, &buf)?;
            records += batch.num_rows() as u64;
        }
        sink.finish()?;
        Ok(records)
    }

    fn __repr__(&self) -> String {
        format!("<protojit.Converter of {} ({} path)>", self.message_type(), self.path())
    }
}

impl Converter {
    /// The encoder with the call's column options, or the reason these options have none.
    fn encoder(&self, ignore_extra: bool, allow_missing: bool) -> PyResult<protojit_arrow::Encoder> {
        let mut encoder = self.encoder.clone().map_err(crate::errors::EncodeError::new_err)?;
        // (An encoder of a converter with `select` allows missing columns already.)
        if ignore_extra {
            encoder = encoder.ignore_extra_columns(true);
        }
        if allow_missing {
            encoder = encoder.allow_missing_columns(true);
        }
        Ok(encoder)
    }

    fn one_batch<'py>(&self, py: Python<'py>, records: &Records) -> PyResult<Bound<'py, PyAny>> {
        let (batch, skipped) = py.detach(|| self.convert_records(records))?;
        self.batch_to_pyarrow(py, batch, Some(skipped))
    }

    /// A `pyarrow.Table` of one batch per chunk of `chunked` (a `pyarrow.ChunkedArray`).
    fn table<'py>(&self, py: Python<'py>, chunked: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let mut all = Vec::new();
        for chunk in chunked.getattr("chunks")?.try_iter()? {
            all.push(Records::from_data(ArrayData::from_pyarrow_bound(&chunk?)?)?);
        }
        let converted = py.detach(|| all.iter().map(|r| self.convert_records(r)).collect::<PyResult<Vec<_>>>())?;
        let skipped: u64 = converted.iter().map(|(_, s)| s).sum();
        let batches =
            converted.into_iter().map(|(b, _)| self.batch_to_pyarrow(py, b, None)).collect::<PyResult<Vec<_>>>()?;
        let table = py.import("pyarrow")?.getattr("Table")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("schema", self.py_schema(py)?)?;
        let table = table.call_method("from_batches", (batches,), Some(&kwargs))?;
        match self.errors {
            Errors::Skip => {
                let metadata = pyo3::types::PyDict::new(py);
                for (k, v) in self.schema_with_skipped(skipped).metadata() {
                    metadata.set_item(k, v)?;
                }
                table.call_method1("replace_schema_metadata", (metadata,))
            }
            Errors::Raise => Ok(table),
        }
    }
}

/// A delimited stream being converted: its records, a chunk at a time, and how.
struct Stream {
    chunks: Chunks,
    batch_size: usize,
    errors: Errors,
}

/// The batches of a delimited stream, one per `__next__` (what `read_delimited` wraps in
/// a `pyarrow.RecordBatchReader`).
#[pyclass(frozen, module = "protojit")]
pub struct DelimitedBatches {
    converter: Py<Converter>,
    stream: Mutex<Stream>,
}

impl Stream {
    /// The next batch: up to `batch_size` records, converted.
    fn next_batch(&mut self, conv: &Converter) -> PyResult<Option<RecordBatch>> {
        let Some(chunk) = self.chunks.next_chunk(self.batch_size).map_err(|e| read_error(&e))? else {
            return Ok(None);
        };
        let indices: Vec<usize> = (0..chunk.records.len()).collect();
        let append = |b: &mut BatchBuilder<'_>, idx: &[usize]| {
            let mut taken = 0;
            let mut ranges = idx.iter().inspect(|_| taken += 1).map(|&i| chunk.records[i].1.clone());
            let appended = b.append_many_in(&chunk.buffer, &mut ranges);
            (taken, appended)
        };
        let part = convert_part(&conv.inner, self.errors, &indices, &append)
            .map_err(|e| Error::new_err(format!("arrow: {e}")))?;
        if let Some(mut failed) = part.failed {
            let (info, _) = &chunk.records[failed.index];
            failed.stream_offset = Some(info.data_offset);
            failed.index = info.number as usize - 1;
            return Err(failed.into_py());
        }
        conv.skipped.fetch_add(part.skipped.len() as u64, Ordering::Relaxed);
        let batch = join(conv.inner.arrow_schema(), part.batches, 1)?;
        Ok(Some(with_schema(batch, &conv.schema)?))
    }
}

#[pymethods]
impl DelimitedBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let conv = self.converter.get();
        let next = py.detach(|| {
            let mut stream = self.stream.lock().unwrap_or_else(|e| e.into_inner());
            stream.next_batch(conv)
        })?;
        match next {
            Some(batch) => conv.batch_to_pyarrow(py, batch, None),
            None => Err(PyStopIteration::new_err(())),
        }
    }
}

/// The record batches of `data` (a `pyarrow.RecordBatch`, a `pyarrow.Table` or another
/// Arrow stream, a Polars DataFrame), and whether it was one batch.
fn record_batches(py: Python<'_>, data: &Bound<'_, PyAny>, what: &str) -> PyResult<(Vec<RecordBatch>, bool)> {
    let pa = py.import("pyarrow")?;
    let module: String = data.get_type().getattr("__module__")?.extract().unwrap_or_default();
    if module.starts_with("polars") && data.hasattr("to_arrow")? {
        return record_batches(py, &data.call_method0("to_arrow")?, what);
    }
    if data.is_instance(&pa.getattr("RecordBatch")?)?
        || (data.hasattr("__arrow_c_array__")? && !data.hasattr("__arrow_c_stream__")?)
    {
        return Ok((vec![RecordBatch::from_pyarrow_bound(data)?], true));
    }
    if data.is_instance(&pa.getattr("Table")?)? || data.hasattr("__arrow_c_stream__")? {
        let table = pa.call_method1("table", (data,))?;
        let mut batches = Vec::new();
        for b in table.call_method0("to_batches")?.try_iter()? {
            batches.push(RecordBatch::from_pyarrow_bound(&b?)?);
        }
        return Ok((batches, false));
    }
    Err(PyTypeError::new_err(format!(
        "{what} takes a pyarrow RecordBatch or Table, a Polars DataFrame, or an object with __arrow_c_array__ / __arrow_c_stream__; got {}",
        data.get_type().name()?
    )))
}

/// An encoding error as `protojit.EncodeError` (`protojit.SchemaError` for an unknown type).
fn encode_error(e: protojit_arrow::EncodeError) -> PyErr {
    match e {
        protojit_arrow::EncodeError::Type(t) => crate::errors::schema_error(t),
        other => crate::errors::EncodeError::new_err(other.to_string()),
    }
}
