//! `protojit.Decoder` and `protojit.Encoder`: single messages to dicts, proto3 JSON and text format, and back to binary.

use std::sync::Mutex;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};
use serde::Serialize;

use protojit::{Arena, EngineOptions, JsonOptions, ParseOptions, Utf8Check};

use crate::args::engine_kind;
use crate::errors::{message_decode_error, schema_error, EncodeError, Error};
use crate::pyobj::{write_json, PythonFloats, ToPython};

/// A message's bytes from `bytes`, `bytearray` or `memoryview`; a `TypeError` that says
/// what to pass for anything else.
fn with_message_bytes<R>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    if let Ok(b) = data.cast::<PyByteArray>() {
        return f(&b.to_vec());
    }
    if data.cast::<PyMemoryView>().is_ok() {
        let b = data.py().import("builtins")?.getattr("bytes")?.call1((data,))?;
        return f(b.cast::<PyBytes>()?.as_bytes());
    }
    if data.cast::<PyString>().is_ok() {
        return Err(PyTypeError::new_err(
            "a message is bytes, not str: pass the serialized message (for JSON or text format, use an encoder: schema.encoder(...).from_json / from_text)",
        ));
    }
    Err(PyTypeError::new_err(format!("a message is bytes (or bytearray, memoryview), not {}", data.get_type().name()?)))
}

/// Decodes single messages of one type.
#[pyclass(frozen, module = "protojit")]
pub struct Decoder {
    decoder: protojit::Decoder,
    /// Reused between calls (reset each time); a call that finds it busy on another
    /// thread uses an arena of its own.
    arena: Mutex<Arena>,
}

impl Decoder {
    pub fn new(schema: &protojit::Schema, message: &str, engine: &str, max_depth: u32) -> PyResult<Decoder> {
        let options = EngineOptions::default()
            .with_kind(engine_kind(engine)?)
            .with_max_depth(max_depth)
            .with_utf8(Utf8Check::Features);
        let decoder = schema.decoder_with_options(message, &options).map_err(schema_error)?;
        Ok(Decoder { decoder, arena: Mutex::new(Arena::new()) })
    }

    /// Runs `f` on the decoded message.
    fn with_message<R>(
        &self,
        data: &Bound<'_, PyAny>,
        f: impl FnOnce(protojit::MessageRef<'_>) -> PyResult<R>,
    ) -> PyResult<R> {
        with_message_bytes(data, |bytes| match self.arena.try_lock() {
            Ok(mut arena) => {
                arena.reset();
                let message = self.decoder.decode(bytes, &arena).map_err(message_decode_error)?;
                f(message)
            }
            Err(_) => {
                let arena = Arena::new();
                let message = self.decoder.decode(bytes, &arena).map_err(message_decode_error)?;
                f(message)
            }
        })
    }
}

/// `json_format`'s keywords as [`JsonOptions`].
fn json_options(
    preserving_proto_field_name: bool,
    use_integers_for_enums: bool,
    always_print_fields_with_no_presence: bool,
) -> JsonOptions {
    JsonOptions::new()
        .use_proto_field_name(preserving_proto_field_name)
        .use_enum_numbers(use_integers_for_enums)
        .emit_defaults(always_print_fields_with_no_presence)
}

#[pymethods]
impl Decoder {
    /// The full name of the message type.
    #[getter]
    fn message_type(&self) -> String {
        self.decoder.descriptor().full_name().to_owned()
    }

    /// The message as `json_format.MessageToDict` returns it.
    #[pyo3(signature = (data, *, preserving_proto_field_name = false, use_integers_for_enums = false, always_print_fields_with_no_presence = false))]
    fn to_dict<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        preserving_proto_field_name: bool,
        use_integers_for_enums: bool,
        always_print_fields_with_no_presence: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options =
            json_options(preserving_proto_field_name, use_integers_for_enums, always_print_fields_with_no_presence);
        self.with_message(data, |m| m.json(&options).serialize(ToPython(py)).map_err(|e| e.0))
    }

    /// The message as proto3 JSON text (`json_format.MessageToJson`'s keywords; `indent`:
    /// `None` for one line, or spaces per level).
    #[pyo3(signature = (data, *, preserving_proto_field_name = false, use_integers_for_enums = false, always_print_fields_with_no_presence = false, indent = None))]
    fn to_json(
        &self,
        data: &Bound<'_, PyAny>,
        preserving_proto_field_name: bool,
        use_integers_for_enums: bool,
        always_print_fields_with_no_presence: bool,
        indent: Option<usize>,
    ) -> PyResult<String> {
        let options =
            json_options(preserving_proto_field_name, use_integers_for_enums, always_print_fields_with_no_presence);
        self.with_message(data, |m| {
            let mut out = Vec::new();
            let written = match indent {
                None => {
                    let mut ser = serde_json::Serializer::with_formatter(
                        &mut out,
                        PythonFloats(serde_json::ser::CompactFormatter),
                    );
                    m.json(&options).serialize(&mut ser)
                }
                Some(n) => {
                    let spaces = vec![b' '; n];
                    let pretty = serde_json::ser::PrettyFormatter::with_indent(&spaces);
                    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFloats(pretty));
                    m.json(&options).serialize(&mut ser)
                }
            };
            written.map_err(|e| EncodeError::new_err(format!("the message has no JSON form: {e}")))?;
            String::from_utf8(out).map_err(|e| Error::new_err(e.to_string()))
        })
    }

    /// The message in protobuf's text format, as `protoc --decode` prints it.
    fn to_text(&self, data: &Bound<'_, PyAny>) -> PyResult<String> {
        self.with_message(data, |m| Ok(m.to_text_format()))
    }

    /// Checks that `data` decodes; raises `DecodeError` where it does not.
    fn validate(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.with_message(data, |_| Ok(()))
    }

    /// The message's canonical binary encoding: known fields in number order, then the
    /// unknown fields as they came.
    fn canonical<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        self.with_message(data, |m| Ok(PyBytes::new(py, &m.encode_to_vec())))
    }

    /// Bytes without a schema, as `protoc --decode_raw` prints them.
    #[staticmethod]
    fn decode_raw(data: &Bound<'_, PyAny>) -> PyResult<String> {
        decode_raw(data)
    }

    fn __repr__(&self) -> String {
        format!("<protojit.Decoder of {}>", self.decoder.descriptor().full_name())
    }
}

/// Bytes without a schema, as `protoc --decode_raw` prints them.
#[pyfunction]
pub fn decode_raw(data: &Bound<'_, PyAny>) -> PyResult<String> {
    with_message_bytes(data, |bytes| protojit_reflect::decode_raw_to_text(bytes).map_err(message_decode_error))
}

/// A parser of JSON or text format into binary (`json_to_binary`, `text_to_binary`).
type Parse = fn(
    &protojit_arena::Layouts,
    protojit_arena::LayoutIndex,
    &[u8],
    &ParseOptions,
    &mut Vec<u8>,
) -> Result<(), protojit::ParseError>;

/// Encodes messages of one type from dicts, proto3 JSON or text format.
#[pyclass(frozen, module = "protojit")]
pub struct Encoder {
    schema: protojit::Schema,
    full_name: String,
    options: ParseOptions,
}

impl Encoder {
    pub fn new(
        schema: &protojit::Schema,
        message: &str,
        ignore_unknown_fields: bool,
        max_depth: u32,
    ) -> PyResult<Encoder> {
        let full_name = schema.resolve_type(message).map_err(schema_error)?;
        Ok(Encoder { schema: schema.clone(), full_name, options: ParseOptions { ignore_unknown_fields, max_depth } })
    }

    fn encode(&self, py: Python<'_>, input: &[u8], parse: Parse) -> PyResult<Vec<u8>> {
        let layouts = self.schema.layouts();
        let root = layouts.index_of(&self.full_name).expect("resolved types have layouts");
        let mut out = Vec::new();
        py.detach(|| parse(layouts, root, input, &self.options, &mut out))
            .map_err(|e| EncodeError::new_err(format!("{}: {e}", self.full_name)))?;
        Ok(out)
    }
}

/// Text from `str` or UTF-8 `bytes`.
fn text_input(data: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!("expected str or bytes, not {}", data.get_type().name()?)))
}

// `from_dict`, `from_json`, `from_text`: the Python names (as `json_format.ParseDict` reads a
// dict into a message), on an encoder that knows its type.
#[allow(clippy::wrong_self_convention)]
#[pymethods]
impl Encoder {
    /// The full name of the message type.
    #[getter]
    fn message_type(&self) -> String {
        self.full_name.clone()
    }

    /// Binary from a dict in the form `json_format.MessageToDict` returns (and
    /// `json_format.ParseDict` reads).
    fn from_dict<'py>(&self, py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut json = Vec::new();
        write_json(value, &mut json).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(py) {
                e
            } else {
                EncodeError::new_err(e.value(py).to_string())
            }
        })?;
        Ok(PyBytes::new(py, &self.encode(py, &json, protojit::json_to_binary)?))
    }

    /// Binary from proto3 JSON text.
    fn from_json<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let input = text_input(text)?;
        Ok(PyBytes::new(py, &self.encode(py, &input, protojit::json_to_binary)?))
    }

    /// Binary from protobuf's text format (what `protoc --encode` reads).
    fn from_text<'py>(&self, py: Python<'py>, text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let input = text_input(text)?;
        Ok(PyBytes::new(py, &self.encode(py, &input, protojit::text_to_binary)?))
    }

    fn __repr__(&self) -> String {
        format!("<protojit.Encoder of {}>", self.full_name)
    }
}
