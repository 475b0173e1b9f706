//! Delimited streams for `Converter.read_delimited` (a file, a binary file object or bytes, decompressed as its name or first bytes say, its records read a chunk at a time into one buffer, in bounded memory) and the sinks `write_delimited` writes to.

use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;

use arrow_buffer::Buffer;
use protojit::compression::{decompressed, Compression};
use protojit::delimited::{ReadError, RecordInfo, RecordReader};
use protojit_arrow::STREAM_BATCH_INPUT;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::fs_path;

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

/// Records of a stream in one buffer: each record's place in the stream and in the buffer.
pub struct Chunk {
    pub buffer: Buffer,
    pub records: Vec<(RecordInfo, Range<usize>)>,
}

/// The records of a delimited stream, a chunk at a time.
pub struct Chunks {
    reader: RecordReader<Box<dyn Read + Send>>,
    /// A framing error met after some records: returned after the chunk of those.
    pending: Option<ReadError>,
    done: bool,
}

impl Chunks {
    pub fn new(reader: RecordReader<Box<dyn Read + Send>>) -> Chunks {
        Chunks { reader, pending: None, done: false }
    }

    /// The next chunk of at most `max_records` records (fewer past the library's bound on a
    /// stream's batch, [`STREAM_BATCH_INPUT`]: the bound on a reader's memory);
    /// `None` at the end. After an error, `None`.
    pub fn next_chunk(&mut self, max_records: usize) -> Result<Option<Chunk>, ReadError> {
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Err(e);
        }
        if self.done {
            return Ok(None);
        }
        let (mut data, mut run) = (Vec::new(), Vec::new());
        match self.reader.read_run(&mut data, &mut run, max_records, STREAM_BATCH_INPUT) {
            Ok(more) => self.done = !more,
            Err(e) if run.is_empty() => {
                self.done = true;
                return Err(e);
            }
            Err(e) => self.pending = Some(e),
        }
        // The run may hold the start of the next record after its last one.
        data.truncate(run.last().map_or(0, |&(info, start)| start + info.len));
        let records: Vec<_> = run.into_iter().map(|(info, start)| (info, start..start + info.len)).collect();
        if records.is_empty() {
            return Ok(None);
        }
        Ok(Some(Chunk { buffer: Buffer::from_vec(data), records }))
    }
}

/// The format a `compression` keyword names (`None`: `auto`).
pub fn compression_arg(name: &str) -> PyResult<Option<Compression>> {
    match name {
        "auto" => Ok(None),
        name => Compression::from_name(name).map(Some).map_err(|e| PyValueError::new_err(e.to_string())),
    }
}

/// Opens `source` (a path, a binary file object, or bytes) decompressed.
pub fn open(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    compression: Option<Compression>,
) -> PyResult<Box<dyn Read + Send>> {
    let io = |e: std::io::Error, what: &str| pyo3::exceptions::PyOSError::new_err(format!("cannot read {what}: {e}"));
    if let Some(path) = fs_path(source)? {
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

/// Where `write_delimited` writes: a path (the file created, or truncated) or a binary
/// file object (its `write`).
pub enum Sink {
    File(std::io::BufWriter<std::fs::File>),
    Object(Py<PyAny>),
}

impl Sink {
    pub fn open(sink: &Bound<'_, PyAny>) -> PyResult<Sink> {
        if let Some(path) = fs_path(sink)? {
            let file = std::fs::File::create(&path)
                .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot write {}: {e}", path.display())))?;
            return Ok(Sink::File(std::io::BufWriter::new(file)));
        }
        if sink.hasattr("write")? {
            return Ok(Sink::Object(sink.clone().unbind()));
        }
        Err(PyTypeError::new_err(format!(
            "write_delimited takes a path or a binary file object, not {}",
            sink.get_type().name()?
        )))
    }

    pub fn write(&mut self, py: Python<'_>, bytes: &[u8]) -> PyResult<()> {
        use std::io::Write;
        match self {
            Sink::File(f) => f.write_all(bytes).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string())),
            Sink::Object(o) => o.bind(py).call_method1("write", (PyBytes::new(py, bytes),)).map(drop),
        }
    }

    pub fn finish(self) -> PyResult<()> {
        use std::io::Write;
        match self {
            Sink::File(mut f) => f.flush().map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string())),
            Sink::Object(_) => Ok(()),
        }
    }
}
