//! Why a protobuf table could not be opened ([`SqlError`]).

use std::path::PathBuf;

use protojit_arrow::{ConvertError, StreamError};

/// Why a table could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a delimited stream.
    #[error("{path}: {source}")]
    Stream {
        /// The file.
        path: PathBuf,
        /// Where the framing breaks.
        source: StreamError,
    },
    /// The message type or the options do not map to Arrow.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// [`TableOptions::arrow`]`.select` was set: a table's columns are chosen per scan,
    /// from the query's projection.
    #[error("TableOptions::arrow.select must be None: each scan converts the columns its query reads")]
    Select,
}
