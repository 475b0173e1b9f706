//! `Converter.read_delimited`: a varint-delimited file (or file object, or bytes), decompressed as its name or first bytes say, read a batch at a time into a `pyarrow.RecordBatchReader`.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use protojit::compression::{decompressed, Compression};
use protojit::delimited::{ReadError, RecordReader};
use pyo3::exceptions::{PyStopIteration, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{convert_part, join, parse_errors, with_schema, Converter, Errors};
use crate::errors::{read_error, Error};

/// A Python binary file object as an `io::Read` (each read takes the GIL).
struct PyReader(Py<PyAny>);

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Python::attach(|py| {
            let chunk = self.0.bind(py).call_method1("read", (buf.len(),)).map_err(std::io::Error::other)?;
            let bytes = chunk.cast::<PyBytes>().map_err(|_| {
                std::io::Error::other(
                    "the file object's read() returned something other than bytes: open it in binary mode ('rb')",
                )
            })?;
            let data = bytes.as_bytes();
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            Ok(n)
        })
    }
}

/// Input bytes a batch may take before it is converted, whatever `batch_size` says: the
/// bound on a reader's memory (with the batch it makes).
const BATCH_BYTES: usize = 64 << 20;

struct State {
    reader: RecordReader<Box<dyn Read + Send>>,
    batch_size: usize,
    errors: Errors,
    /// A framing error met after some records: raised after the batch of those.
    pending: Option<ReadError>,
    done: bool,
}

/// The batches of a delimited stream, one per `__next__`.
#[pyclass(frozen, module = "protojit")]
pub struct DelimitedBatches {
    converter: Py<Converter>,
    state: Mutex<State>,
}

impl State {
    /// The next batch: reads up to `batch_size` records (or [`BATCH_BYTES`]) and converts them.
    fn next_batch(&mut self, conv: &Converter) -> PyResult<Option<RecordBatch>> {
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Err(read_error(&e));
        }
        if self.done {
            return Ok(None);
        }
        let mut data = Vec::new();
        let mut records = Vec::new();
        while records.len() < self.batch_size && data.len() < BATCH_BYTES {
            match self.reader.next_into(&mut data) {
                Ok(Some(info)) => records.push((info, data.len() - info.len..data.len())),
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(e) => {
                    if records.is_empty() {
                        self.done = true;
                        return Err(read_error(&e));
                    }
                    self.pending = Some(e);
                    break;
                }
            }
        }
        if records.is_empty() {
            return Ok(None);
        }
        let buffer = Buffer::from_vec(data);
        let indices: Vec<usize> = (0..records.len()).collect();
        let append = |b: &mut protojit_arrow::BatchBuilder<'_>, idx: &[usize]| {
            let mut taken = 0;
            let mut ranges = idx.iter().inspect(|_| taken += 1).map(|&i| records[i].1.clone());
            let appended = b.append_many_in(&buffer, &mut ranges);
            (taken, appended)
        };
        let part = convert_part(&conv.inner, self.errors, &indices, &append)
            .map_err(|e| Error::new_err(format!("arrow: {e}")))?;
        if let Some(mut failed) = part.failed {
            let (info, _) = &records[failed.index];
            failed.stream_offset = Some(info.data_offset);
            failed.index = info.number as usize - 1;
            self.done = true;
            return Err(failed.into_py());
        }
        conv.skipped.fetch_add(part.skipped.len() as u64, std::sync::atomic::Ordering::Relaxed);
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
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.next_batch(conv)
        })?;
        match next {
            Some(batch) => conv.batch_to_pyarrow(py, batch, None),
            None => Err(PyStopIteration::new_err(())),
        }
    }
}

/// Opens `source` (a path, a binary file object, or bytes) decompressed.
fn open(py: Python<'_>, source: &Bound<'_, PyAny>, compression: Option<Compression>) -> PyResult<Box<dyn Read + Send>> {
    let io = |e: std::io::Error, what: &str| pyo3::exceptions::PyOSError::new_err(format!("cannot read {what}: {e}"));
    if let Some(path) = crate::schema::fs_path(source)? {
        let what = path.display().to_string();
        let file = std::fs::File::open(&path).map_err(|e| io(e, &what))?;
        let (r, _) = py.detach(|| decompressed(file, Some(&path), compression)).map_err(|e| io(e, &what))?;
        return Ok(r);
    }
    if let Ok(b) = source.cast::<PyBytes>() {
        let data = b.as_bytes().to_vec();
        let (r, _) = decompressed(std::io::Cursor::new(data), None, compression).map_err(|e| io(e, "the bytes"))?;
        return Ok(r);
    }
    if source.hasattr("read")? {
        let name: Option<PathBuf> = source.getattr("name").ok().and_then(|n| n.extract().ok());
        let reader = PyReader(source.clone().unbind());
        let (r, _) = decompressed(reader, name.as_deref(), compression).map_err(|e| io(e, "the file object"))?;
        return Ok(r);
    }
    Err(PyTypeError::new_err(format!(
        "read_delimited takes a path, a binary file object or bytes, not {}",
        source.get_type().name()?
    )))
}

pub fn read_delimited<'py>(
    conv: &Bound<'py, Converter>,
    source: &Bound<'py, PyAny>,
    batch_size: usize,
    compression: &str,
    errors: Option<&str>,
    max_record: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = conv.py();
    let compression = match compression {
        "auto" => None,
        name => Some(Compression::from_name(name).map_err(|e| PyValueError::new_err(e.to_string()))?),
    };
    let errors = match errors {
        Some(e) => parse_errors(e)?,
        None => conv.get().errors,
    };
    let input = open(py, source, compression)?;
    let mut reader = RecordReader::new(input);
    if let Some(max) = max_record {
        reader = reader.with_max_record(max);
    }
    let state = State { reader, batch_size, errors, pending: None, done: false };
    let batches = Bound::new(py, DelimitedBatches { converter: conv.clone().unbind(), state: Mutex::new(state) })?;
    let schema = conv.get().py_schema(py)?;
    let pa = py.import("pyarrow")?;
    pa.getattr("RecordBatchReader")?.call_method1("from_batches", (schema, batches))
}
