//! Python objects and JSON, both ways: a serde `Serializer` that builds dicts, lists and scalars from a message's proto3 JSON form (what `json_format.MessageToDict` returns), and a writer of Python values as JSON text (what `json_format.ParseDict` reads).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::ser::{self, Serialize};

/// A Python exception raised while building objects, or a serializer's own complaint.
#[derive(Debug)]
pub struct SerError(pub PyErr);

impl std::fmt::Display for SerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        SerError(crate::errors::EncodeError::new_err(format!("the message has no JSON form: {msg}")))
    }
}

/// A `float` field's value as Python protobuf gives it (`type_checkers.ToShortestFloat`):
/// the value printed with 6 significant digits, or as many more as it takes to read back
/// as the same 32-bit float, read as a Python float.
pub fn python_float(v: f32) -> f64 {
    if !v.is_finite() {
        return v.into();
    }
    for digits in 6..=9 {
        let rounded: f64 = format!("{:.*e}", digits - 1, f64::from(v)).parse().unwrap_or(v.into());
        if rounded as f32 == v {
            return rounded;
        }
    }
    v.into()
}

/// A serde_json formatter that writes `float` fields as Python protobuf does
/// ([`python_float`], then the shortest text of that double), and everything else as `F`.
pub struct PythonFloats<F>(pub F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for PythonFloats<F> {
    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        self.0.write_f64(w, python_float(v))
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

impl From<PyErr> for SerError {
    fn from(e: PyErr) -> Self {
        SerError(e)
    }
}

type Out<'py> = Result<Bound<'py, PyAny>, SerError>;

/// Serializes into Python objects. `float` fields come out as Python protobuf writes
/// them: the shortest decimal that reads back as the same 32-bit float.
#[derive(Clone, Copy)]
pub struct ToPython<'py>(pub Python<'py>);

/// A list or dict under construction.
pub struct Seq<'py> {
    py: Python<'py>,
    list: Bound<'py, PyList>,
}

pub struct Map<'py> {
    py: Python<'py>,
    dict: Bound<'py, PyDict>,
    key: Option<Bound<'py, PyAny>>,
}

fn any<'py, T>(b: Bound<'py, T>) -> Bound<'py, PyAny> {
    b.into_any()
}

impl<'py> ser::Serializer for ToPython<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    type SerializeSeq = Seq<'py>;
    type SerializeTuple = Seq<'py>;
    type SerializeTupleStruct = Seq<'py>;
    type SerializeTupleVariant = Seq<'py>;
    type SerializeMap = Map<'py>;
    type SerializeStruct = Map<'py>;
    type SerializeStructVariant = Map<'py>;

    fn serialize_bool(self, v: bool) -> Out<'py> {
        Ok(PyBool::new(self.0, v).to_owned().into_any())
    }
    fn serialize_i8(self, v: i8) -> Out<'py> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Out<'py> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Out<'py> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Out<'py> {
        Ok(any(PyInt::new(self.0, v)))
    }
    fn serialize_u8(self, v: u8) -> Out<'py> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Out<'py> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Out<'py> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Out<'py> {
        Ok(any(PyInt::new(self.0, v)))
    }
    fn serialize_f32(self, v: f32) -> Out<'py> {
        Ok(any(PyFloat::new(self.0, python_float(v))))
    }
    fn serialize_f64(self, v: f64) -> Out<'py> {
        Ok(any(PyFloat::new(self.0, v)))
    }
    fn serialize_char(self, v: char) -> Out<'py> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Out<'py> {
        Ok(any(PyString::new(self.0, v)))
    }
    fn serialize_bytes(self, v: &[u8]) -> Out<'py> {
        Ok(any(PyBytes::new(self.0, v)))
    }
    fn serialize_none(self) -> Out<'py> {
        Ok(self.0.None().into_bound(self.0))
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Out<'py> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Out<'py> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Out<'py> {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Out<'py> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, value: &T) -> Out<'py> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Out<'py> {
        let dict = PyDict::new(self.0);
        dict.set_item(variant, value.serialize(self)?)?;
        Ok(any(dict))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'py>, SerError> {
        Ok(Seq { py: self.0, list: PyList::empty(self.0) })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'py>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'py>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Seq<'py>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Map<'py>, SerError> {
        Ok(Map { py: self.0, dict: PyDict::new(self.0), key: None })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Map<'py>, SerError> {
        self.serialize_map(None)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Map<'py>, SerError> {
        self.serialize_map(None)
    }
}

impl<'py> ser::SerializeSeq for Seq<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), SerError> {
        self.list.append(value.serialize(ToPython(self.py))?)?;
        Ok(())
    }
    fn end(self) -> Out<'py> {
        Ok(any(self.list))
    }
}

/// Tuples of every kind are lists, element by element.
macro_rules! tuple_as_list {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<'py> ser::$trait for Seq<'py> {
            type Ok = Bound<'py, PyAny>;
            type Error = SerError;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), SerError> {
                ser::SerializeSeq::serialize_element(self, value)
            }
            fn end(self) -> Out<'py> {
                ser::SerializeSeq::end(self)
            }
        }
    )*};
}

tuple_as_list!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<'py> ser::SerializeMap for Map<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), SerError> {
        self.key = Some(key.serialize(ToPython(self.py))?);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), SerError> {
        let key = self.key.take().ok_or_else(|| <SerError as ser::Error>::custom("a map value without its key"))?;
        self.dict.set_item(key, value.serialize(ToPython(self.py))?)?;
        Ok(())
    }
    fn end(self) -> Out<'py> {
        Ok(any(self.dict))
    }
}

impl<'py> ser::SerializeStruct for Map<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), SerError> {
        self.dict.set_item(key, value.serialize(ToPython(self.py))?)?;
        Ok(())
    }
    fn end(self) -> Out<'py> {
        Ok(any(self.dict))
    }
}

impl<'py> ser::SerializeStructVariant for Map<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), SerError> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Out<'py> {
        Ok(any(self.dict))
    }
}

/// How deep a Python value may nest before [`write_json`] refuses it (a dict that
/// contains itself would otherwise recurse for ever). Above the parsers' own limit.
const MAX_NESTING: usize = 400;

/// Writes `value` (dicts, lists, tuples, str, int, float, bool, None, bytes) as JSON text,
/// in the proto3 JSON form `json_format.ParseDict` accepts: bytes as base64, NaN and the
/// infinities as the strings proto3 JSON uses, non-string dict keys (map keys) as their
/// text.
pub fn write_json(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    write_value(value, out, 0, &mut String::new())
}

fn write_value(value: &Bound<'_, PyAny>, out: &mut Vec<u8>, depth: usize, path: &mut String) -> PyResult<()> {
    if depth > MAX_NESTING {
        return Err(PyValueError::new_err(format!("the value nests deeper than {MAX_NESTING} levels (at `{path}`)")));
    }
    if value.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = value.cast::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if let Ok(i) = value.cast::<PyInt>() {
        match i.extract::<i128>() {
            Ok(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Err(_) => out.extend_from_slice(i.str()?.to_cow()?.as_bytes()),
        }
    } else if let Ok(f) = value.cast::<PyFloat>() {
        let v = f.value();
        if v.is_nan() {
            out.extend_from_slice(b"\"NaN\"");
        } else if v.is_infinite() {
            out.extend_from_slice(if v > 0.0 { b"\"Infinity\"" } else { b"\"-Infinity\"" });
        } else {
            // Python's repr: the shortest text that reads back as the same double.
            out.extend_from_slice(f.repr()?.to_cow()?.as_bytes());
        }
    } else if let Ok(s) = value.cast::<PyString>() {
        write_str(&s.to_cow()?, out);
    } else if let Ok(b) = value.cast::<PyBytes>() {
        write_base64(b.as_bytes(), out);
    } else if let Ok(b) = value.cast::<PyByteArray>() {
        write_base64(&b.to_vec(), out);
    } else if let Ok(d) = value.cast::<PyDict>() {
        out.push(b'{');
        for (n, (k, v)) in d.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let key = if let Ok(s) = k.cast::<PyString>() {
                s.to_cow()?.into_owned()
            } else if let Ok(b) = k.cast::<PyBool>() {
                (if b.is_true() { "true" } else { "false" }).to_owned()
            } else if k.cast::<PyInt>().is_ok() {
                k.str()?.to_cow()?.into_owned()
            } else {
                return Err(PyTypeError::new_err(format!(
                    "dict keys must be str (or int and bool, for map keys), not {} (at `{path}`)",
                    k.get_type().name()?
                )));
            };
            write_str(&key, out);
            out.push(b':');
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
            write_value(&v, out, depth + 1, path)?;
            path.truncate(len);
        }
        out.push(b'}');
    } else if value.cast::<PyList>().is_ok() || value.cast::<PyTuple>().is_ok() {
        out.push(b'[');
        for (n, item) in value.try_iter()?.enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let len = path.len();
            path.push_str(&format!("[{n}]"));
            write_value(&item?, out, depth + 1, path)?;
            path.truncate(len);
        }
        out.push(b']');
    } else {
        return Err(PyTypeError::new_err(format!(
            "cannot encode a {} (at `{}`): values are dict, list, str, int, float, bool, bytes or None, as json_format.MessageToDict returns them",
            value.get_type().name()?,
            if path.is_empty() { "the top" } else { path.as_str() }
        )));
    }
    Ok(())
}

fn write_str(s: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, s).expect("writing a str to a Vec does not fail");
}

fn write_base64(bytes: &[u8], out: &mut Vec<u8>) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.push(b'"');
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]);
            } else {
                out.push(b'=');
            }
        }
    }
    out.push(b'"');
}
