//! protojit for Python: the extension module `protojit._protojit`, which the `protojit` package re-exports.
//!
//! - [`schema`]: `Schema`, loaded from descriptor sets, `.proto` files or `google.protobuf`
//!   descriptors;
//! - [`convert`]: `Converter`, records in Arrow arrays or lists into `pyarrow` batches,
//!   through the Arrow C data interface (no copy in, no copy out);
//! - [`reader`]: the delimited files `Converter.read_delimited` reads, a chunk at a time;
//! - [`args`]: Python arguments (bytes, paths, counts, engine names) as Rust values;
//! - [`message`]: `Decoder` and `Encoder`, single messages to dicts, JSON and text, and back;
//! - [`pyobj`]: Python objects from a message's JSON form, and JSON from Python objects;
//! - [`errors`]: `protojit.Error` and its subclasses.
//!
//! Everything here is a thin face over the crates the CLI links (`protojit`,
//! `protojit-arrow`): no decoding, mapping or parsing of its own. Conversions run
//! without the GIL.

#![forbid(unsafe_code)]

use pyo3::prelude::*;

mod args;
mod convert;
mod errors;
mod message;
mod pyobj;
mod reader;
mod schema;

#[pymodule]
fn _protojit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<schema::Schema>()?;
    m.add_class::<convert::Converter>()?;
    m.add_class::<convert::DelimitedBatches>()?;
    m.add_class::<message::Decoder>()?;
    m.add_class::<message::Encoder>()?;
    m.add_function(wrap_pyfunction!(message::decode_raw, m)?)?;
    Ok(())
}
