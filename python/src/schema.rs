//! `protojit.Schema`: a schema loaded from a descriptor set, `.proto` files, or the descriptors of `google.protobuf` generated code.

use std::collections::HashSet;
use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::args::{buffer_bytes, count, fs_path};
use crate::convert::{Converter, ConverterOptions, Mapping};
use crate::errors::schema_error;
use crate::message::{Decoder, Encoder};

/// A protobuf schema loaded at run time.
#[pyclass(frozen, module = "protojit")]
pub struct Schema {
    pub inner: protojit::Schema,
}

/// `paths` as a list: one path, or a list or tuple of them.
fn path_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<PathBuf>> {
    if let Some(p) = fs_path(obj)? {
        return Ok(vec![p]);
    }
    if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        let mut out = Vec::new();
        for item in obj.try_iter()? {
            let item = item?;
            match fs_path(&item)? {
                Some(p) => out.push(p),
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "{what} must be paths (str or os.PathLike), not {}",
                        item.get_type().name()?
                    )))
                }
            }
        }
        return Ok(out);
    }
    Err(PyTypeError::new_err(format!("{what} must be a path or a list of paths, not {}", obj.get_type().name()?)))
}

/// The serialized `FileDescriptorProto`s of a `google.protobuf` descriptor (a
/// `FileDescriptor`, a message, enum or service descriptor, a generated class or a `_pb2`
/// module), dependencies first, each file once.
fn python_files(obj: &Bound<'_, PyAny>, seen: &mut HashSet<String>, out: &mut Vec<Vec<u8>>) -> PyResult<()> {
    if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        for item in obj.try_iter()? {
            python_files(&item?, seen, out)?;
        }
        return Ok(());
    }
    if obj.hasattr("serialized_pb")? && obj.hasattr("dependencies")? {
        let name: String = obj.getattr("name")?.extract()?;
        if !seen.insert(name) {
            return Ok(());
        }
        for dep in obj.getattr("dependencies")?.try_iter()? {
            python_files(&dep?, seen, out)?;
        }
        let pb = obj.getattr("serialized_pb")?;
        out.push(pb.cast::<PyBytes>()?.as_bytes().to_vec());
        return Ok(());
    }
    // A message, enum or service descriptor knows its file.
    if obj.hasattr("full_name")? && obj.hasattr("file")? {
        return python_files(&obj.getattr("file")?, seen, out);
    }
    // A generated class or a `_pb2` module carries its descriptor.
    if obj.hasattr("DESCRIPTOR")? {
        return python_files(&obj.getattr("DESCRIPTOR")?, seen, out);
    }
    Err(PyTypeError::new_err(format!(
        "Schema.from_python takes google.protobuf descriptors: a FileDescriptor (Msg.DESCRIPTOR.file), a Descriptor (Msg.DESCRIPTOR), a generated message class or a _pb2 module, not {}",
        obj.get_type().name()?
    )))
}

/// A `FileDescriptorSet` of serialized files (field 1, repeated).
fn descriptor_set(files: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(files.iter().map(|f| f.len() + 6).sum());
    for f in files {
        out.push(0x0a);
        let mut len = f.len() as u64;
        while len >= 0x80 {
            out.push((len as u8) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(f);
    }
    out
}

#[pymethods]
impl Schema {
    /// A schema from a serialized `FileDescriptorSet` (`protoc --include_imports -o`,
    /// `buf build -o`): bytes, or the path of such a file.
    #[staticmethod]
    fn from_descriptor_set(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Schema> {
        if let Some(bytes) = buffer_bytes(data)? {
            let inner = py.detach(|| protojit::Schema::from_descriptor_set(&bytes)).map_err(schema_error)?;
            return Ok(Schema { inner });
        }
        if let Some(path) = fs_path(data)? {
            let inner = py.detach(|| protojit::Schema::from_descriptor_set_files(&[path])).map_err(schema_error)?;
            return Ok(Schema { inner });
        }
        Err(PyTypeError::new_err(format!("from_descriptor_set takes bytes or a path, not {}", data.get_type().name()?)))
    }

    /// A schema from `.proto` files (one path or a list), resolving imports through
    /// `include` (default: each file's own directory) and the well-known types.
    #[staticmethod]
    #[pyo3(signature = (files, include = None))]
    fn from_proto(py: Python<'_>, files: &Bound<'_, PyAny>, include: Option<&Bound<'_, PyAny>>) -> PyResult<Schema> {
        let files = path_list(files, "files")?;
        let include = match include {
            Some(i) => path_list(i, "include")?,
            None => Vec::new(),
        };
        let inner = py.detach(|| protojit::Schema::from_proto_files(&files, &include)).map_err(schema_error)?;
        Ok(Schema { inner })
    }

    /// A schema from `.proto` source text (imports resolve to the well-known types only).
    #[staticmethod]
    #[pyo3(signature = (source, name = "schema.proto"))]
    fn from_proto_source(py: Python<'_>, source: &str, name: &str) -> PyResult<Schema> {
        let inner = py.detach(|| protojit::Schema::from_proto_source(name, source)).map_err(schema_error)?;
        Ok(Schema { inner })
    }

    /// A schema from `google.protobuf` descriptors: `Msg.DESCRIPTOR.file`,
    /// `Msg.DESCRIPTOR`, a generated class, a `_pb2` module, or a list of them; each file
    /// is taken with every file it imports.
    #[staticmethod]
    fn from_python(py: Python<'_>, descriptor: &Bound<'_, PyAny>) -> PyResult<Schema> {
        let mut files = Vec::new();
        python_files(descriptor, &mut HashSet::new(), &mut files)?;
        let set = descriptor_set(&files);
        let inner = py.detach(|| protojit::Schema::from_descriptor_set(&set)).map_err(schema_error)?;
        Ok(Schema { inner })
    }

    /// The schema as a serialized `FileDescriptorSet` (every file, imports first), as
    /// `from_descriptor_set` reads it and `google.protobuf`'s `descriptor_pb2` parses it.
    fn to_descriptor_set<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.pool().encode_to_vec())
    }

    /// Full names of every message type, sorted.
    #[getter]
    fn message_names(&self) -> Vec<String> {
        let mut names = self.inner.message_names();
        names.sort_unstable();
        names
    }

    /// What loading the schema noted (e.g. that protoc compiled it instead of protox).
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.inner.notes().to_vec()
    }

    /// The full name of a message type given by its full name or a unique short name.
    fn resolve_type(&self, name: &str) -> PyResult<String> {
        self.inner.resolve_type(name).map_err(schema_error)
    }

    /// A converter of records of `message` into Arrow record batches.
    #[pyo3(signature = (
        message, *, select = None, enums = "dictionary", strings = "offsets", max_recursion = 3,
        well_known_types = true, oneof_case = false, maps = "map", large = false, flatten = false,
        explode = None, explode_outer = None, any = "struct", extensions = false, recursion = "cut", structs = "struct", framing = "bare", schema_id_column = None, path = None,
        engine = "auto", max_depth = 100, nulls = "null", errors = "raise", threads = 1
    ))]
    #[allow(clippy::too_many_arguments)]
    fn converter(
        &self,
        py: Python<'_>,
        message: &str,
        select: Option<Vec<String>>,
        enums: &str,
        strings: &str,
        max_recursion: i64,
        well_known_types: bool,
        oneof_case: bool,
        maps: &str,
        large: bool,
        flatten: bool,
        explode: Option<String>,
        explode_outer: Option<String>,
        any: &str,
        extensions: bool,
        recursion: &str,
        structs: &str,
        framing: &str,
        schema_id_column: Option<String>,
        path: Option<&str>,
        engine: &str,
        max_depth: i64,
        nulls: &str,
        errors: &str,
        threads: i64,
    ) -> PyResult<Converter> {
        let options = ConverterOptions::parse(
            select,
            enums,
            strings,
            max_recursion,
            well_known_types,
            Mapping { oneof_case, maps, large, flatten, explode, explode_outer, any, extensions, recursion, structs },
            framing,
            schema_id_column,
            path,
            engine,
            max_depth,
            nulls,
            errors,
            threads,
        )?;
        Converter::new(py, &self.inner, message, options)
    }

    /// A decoder of single messages of `message` (dicts, JSON, text format).
    #[pyo3(signature = (message, *, engine = "auto", max_depth = 100))]
    fn decoder(&self, message: &str, engine: &str, max_depth: i64) -> PyResult<Decoder> {
        Decoder::new(&self.inner, message, engine, count("max_depth", max_depth, 0)?)
    }

    /// An encoder of `message` from dicts, JSON or text format into binary.
    #[pyo3(signature = (message, *, ignore_unknown_fields = false, max_depth = 100))]
    fn encoder(&self, message: &str, ignore_unknown_fields: bool, max_depth: i64) -> PyResult<Encoder> {
        Encoder::new(&self.inner, message, ignore_unknown_fields, count("max_depth", max_depth, 0)?)
    }

    fn __repr__(&self) -> String {
        let names = self.inner.message_names();
        format!("<protojit.Schema of {} message types>", names.len())
    }
}
