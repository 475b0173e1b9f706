//! SQL over files of varint-delimited protobuf records: [`ProtobufTable`] is a DataFusion `TableProvider` whose schema comes from a message type loaded at run time.
//!
//! - **Projection pushdown**: a scan converts only the columns the query uses, and its
//!   decoder works on a schema pruned to them, so unused fields are skipped on the wire
//!   (see `protojit_arrow`'s projection).
//! - **Partitions**: the file's records are split into byte-balanced contiguous ranges, one
//!   per partition ([`TableOptions::partitions`], default one per core); DataFusion runs
//!   them on its threads.
//! - **Records in memory**: the file is read once when the table is opened and its record
//!   boundaries indexed (a bad length prefix fails there, with its offset); a record that
//!   does not decode fails the query with its number and offset.
//! - **One scan**: a table's scan is [`ProtobufFormat`]'s, as for files (a `DataSourceExec`
//!   whose files are byte ranges of the records in memory), so both show in a plan the
//!   same way and count the same metrics.
//!
//! ```
//! use std::sync::Arc;
//! use datafusion::prelude::SessionContext;
//! use protojit::Schema;
//! use protojit_sql::{ProtobufTable, TableOptions};
//!
//! let schema = Schema::from_proto_source("ev.proto", "syntax = \"proto3\"; message Event { string user = 1; int64 bytes = 2; }")?;
//! // Three delimited records: (a, 5), (b, 7), (a, 1).
//! let data = b"\x05\x0a\x01a\x10\x05\x05\x0a\x01b\x10\x07\x05\x0a\x01a\x10\x01".to_vec();
//! let table = ProtobufTable::from_bytes(&schema, "Event", data, &TableOptions::default())?;
//!
//! let rt = tokio::runtime::Runtime::new()?;
//! let batches = rt.block_on(async {
//!     let ctx = SessionContext::new();
//!     ctx.register_table("events", Arc::new(table))?;
//!     ctx.sql("SELECT user, SUM(bytes) AS total FROM events GROUP BY user ORDER BY user").await?.collect().await
//! })?;
//! let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
//! assert!(text.contains("| a    | 6     |"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Files, directories and globs of such records, read as streams (memory independent of
//! file size), are [`ProtobufFormat`]'s: a DataFusion `FileFormat` behind `ListingTable` and
//! `CREATE EXTERNAL TABLE … STORED AS PROTOBUF` ([`register_protobuf_format`]).
//!
//! ```
//! use datafusion::prelude::SessionContext;
//! use protojit_sql::{register_protobuf_format, ProtobufFormatFactory};
//!
//! let dir = std::env::temp_dir().join(format!("protojit-sql-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("day=1"))?;
//! std::fs::write(dir.join("ev.proto"), "syntax = \"proto3\"; message Event { string user = 1; int64 bytes = 2; }")?;
//! std::fs::write(dir.join("day=1/a.bin"), b"\x05\x0a\x01a\x10\x05\x05\x0a\x01b\x10\x07")?;
//!
//! let rt = tokio::runtime::Runtime::new()?;
//! let batches = rt.block_on(async {
//!     let ctx = SessionContext::new();
//!     register_protobuf_format(&ctx, ProtobufFormatFactory::new())?;
//!     let sql = format!(
//!         "CREATE EXTERNAL TABLE events STORED AS PROTOBUF LOCATION '{}/' \
//!          OPTIONS ('message_type' 'Event', 'proto' '{}')",
//!         dir.join("day=1").display(),
//!         dir.join("ev.proto").display()
//!     );
//!     ctx.sql(&sql).await?;
//!     ctx.sql("SELECT SUM(bytes) AS total FROM events").await?.collect().await
//! })?;
//! let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
//! assert!(text.contains("| 12    |"), "{text}");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each partition of a scan counts which path filled its columns (the compiled column
//! appenders, the chunked path beside them, the tree, or another path, and why) as metrics
//! of the scan, which `EXPLAIN ANALYZE` shows and [`ScanPaths::of_plan`] sums.
//!
//! Both run in one process; the `protojit-ballista` crate (`ballista/`)
//! adds the plan codecs that run these tables on a Ballista cluster. [`command`] (feature
//! `command`) is the `sql` command's front end, which `protojit sql` and `protojit-ballista
//! sql` share.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "command")]
pub mod command;
mod error;
mod format;
mod memory;
mod paths;
mod scan;
mod sink;
mod table;
mod table_format;

/// The DataFusion this crate is built on, for callers that need the same version.
pub use datafusion;

pub use error::SqlError;
pub use format::{listing_table, register_protobuf_format, ProtobufFormatFactory, FORMAT_NAME};
pub use paths::{ScanPaths, NOTE_LABEL, PATH_NOTE, ROWS_CHUNKED, ROWS_COMPILED, ROWS_OTHER, ROWS_TREE};
pub use scan::{ScanError, MAX_RECORD};
pub use sink::ProtobufSink;
pub use table::{ProtobufTable, TableOptions};
pub use table_format::ProtobufFormat;
