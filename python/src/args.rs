//! Python arguments as Rust values: bytes, paths, counts and engine names, each refused with a `TypeError` or `ValueError` that names what to pass.

use std::path::PathBuf;

use protojit::EngineKind;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// Bytes from `bytes`, `bytearray` or `memoryview`; `None` for other objects.
pub fn buffer_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if obj.cast::<pyo3::types::PyByteArray>().is_ok() || obj.cast::<pyo3::types::PyMemoryView>().is_ok() {
        let b = obj.py().import("builtins")?.getattr("bytes")?.call1((obj,))?;
        return Ok(Some(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Ok(None)
}

/// A file-system path from `str` or `os.PathLike`; `None` for other objects.
pub fn fs_path(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if obj.cast::<PyString>().is_ok() || obj.hasattr("__fspath__")? {
        return Ok(Some(obj.extract::<PathBuf>()?));
    }
    Ok(None)
}

/// A count keyword's value, at least `min` (a `ValueError` naming the keyword otherwise).
pub fn count<T: TryFrom<i64>>(keyword: &str, value: i64, min: i64) -> PyResult<T> {
    if value < min {
        return Err(PyValueError::new_err(format!("{keyword}={value}: use {min} or more")));
    }
    T::try_from(value).map_err(|_| PyValueError::new_err(format!("{keyword}={value}: too large")))
}

/// The engine kind a keyword names.
pub fn engine_kind(engine: &str) -> PyResult<EngineKind> {
    Ok(match engine {
        "auto" => EngineKind::Auto,
        "jit" => EngineKind::Jit,
        "interp" | "interpreter" => EngineKind::Interpreter,
        other => {
            return Err(PyValueError::new_err(format!(
                "engine={other:?}: use 'auto' (tiered, the default), 'jit' (compile first) or 'interp' (never compile)"
            )))
        }
    })
}
