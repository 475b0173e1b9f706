//! The exceptions: `protojit.Error` (a `ValueError`) and its subclasses, and the Rust errors they are made from.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    protojit,
    Error,
    PyValueError,
    "Base class of protojit's errors (a ValueError): a schema that does not load, a record that does not decode, a value that does not encode."
);
create_exception!(protojit, SchemaError, Error, "A schema that does not load, or a message type it does not have.");
create_exception!(
    protojit,
    DecodeError,
    Error,
    "A record that does not decode. Attributes: `record` (its index in the input, from 0; None for a single message), `offset` (byte offset of the fault inside the record, or in the stream for a framing fault), `kind` (what is wrong, e.g. 'truncated', 'invalid_utf8', 'null_record'), `message` (the one line the CLI prints)."
);
create_exception!(
    protojit,
    EncodeError,
    Error,
    "A value (dict, JSON, text) that does not encode as the message type, a message that has no JSON form, or a table whose columns do not encode as the message type."
);

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("EncodeError", py.get_type::<EncodeError>())?;
    Ok(())
}

/// A schema error as `protojit.SchemaError`.
pub fn schema_error(e: impl std::fmt::Display) -> PyErr {
    SchemaError::new_err(e.to_string())
}

/// A conversion error that is not about one record: the schema, the selection, the options.
pub fn convert_error(e: protojit_arrow::ConvertError) -> PyErr {
    use protojit_arrow::ConvertError as E;
    match e {
        E::Record(r) => {
            let (kind, offset) = append_fault(&r.source);
            decode_error(&r.to_string(), Some(r.number.saturating_sub(1)), offset as u64, &kind)
        }
        E::NullRecord { number } => {
            decode_error(&format!("record {} is null", number - 1), Some(number - 1), 0, "null_record")
        }
        E::Stream(s) => decode_error(&s.to_string(), None, 0, "bad_stream"),
        E::Arrow(a) => Error::new_err(format!("arrow: {a}")),
        other => SchemaError::new_err(other.to_string()),
    }
}

/// What is wrong with a record that did not append, and at which offset inside it.
pub fn append_fault(e: &protojit_arrow::AppendError) -> (String, usize) {
    match e {
        protojit_arrow::AppendError::Decode(d) => (kind_name(d.kind), d.offset),
        protojit_arrow::AppendError::Framing(_) => ("framing".to_owned(), 0),
        _ => ("unknown".to_owned(), 0),
    }
}

/// A decode error's kind as Python code spells it: `LengthOutOfBounds` → `length_out_of_bounds`.
pub fn kind_name(kind: protojit::DecodeErrorKind) -> String {
    let debug = format!("{kind:?}");
    let mut out = String::with_capacity(debug.len() + 4);
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A `protojit.DecodeError` with its attributes.
pub fn decode_error(message: &str, record: Option<u64>, offset: u64, kind: &str) -> PyErr {
    Python::attach(|py| {
        let err = DecodeError::new_err(message.to_owned());
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("record", record)?;
            value.setattr("offset", offset)?;
            value.setattr("kind", kind)?;
            value.setattr("message", message)?;
            Ok(())
        };
        match set() {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// A single message's decode error (no record index).
pub fn message_decode_error(e: protojit::DecodeError) -> PyErr {
    decode_error(&e.to_string(), None, e.offset as u64, &kind_name(e.kind))
}

/// A delimited stream's framing error.
pub fn read_error(e: &protojit::delimited::ReadError) -> PyErr {
    use protojit::delimited::ReadError as R;
    let (record, offset, kind) = match e {
        R::Io(_) => return pyo3::exceptions::PyOSError::new_err(e.to_string()),
        R::PrefixCutOff { number, offset } => (*number, *offset, "truncated_stream"),
        R::Truncated { number, offset, .. } => (*number, *offset, "truncated_stream"),
        R::PrefixTooLong { number, offset } => (*number, *offset, "bad_length_prefix"),
        R::TooLarge { number, offset, .. } => (*number, *offset, "record_too_large"),
        _ => (0, 0, "bad_stream"),
    };
    decode_error(&e.to_string(), Some(record.saturating_sub(1)), offset, kind)
}
