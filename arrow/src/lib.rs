//! Protobuf records as Apache Arrow columns, and back: a [`Converter`] maps a message type
//! (or a projection of its fields) to an Arrow schema and turns serialized records into
//! [`RecordBatch`]es; an [`Encoder`] turns record batches back into messages.
//!
//! Two paths fill the columns, and by default ([`ConvertPath::Auto`], what the CLI and SQL
//! take) the faster for the records at hand does: the compiled column appenders
//! ([`ConvertPath::DirectCompiled`]: machine code made for the converter's columns reads each
//! record straight into column buffers; columns it cannot read fall back to the chunked path,
//! [`Converter::path_note`] says why) and the chunked path ([`ConvertPath::Chunked`]: records
//! decoded a chunk at a time by protojit's decoder, then each column filled for the whole
//! chunk in one typed loop), raced on a few chunks once both are ready. [`ArrowOptions::path`]
//! can pin either, the streaming decoder's direct appends ([`ConvertPath::DirectInterpreted`]:
//! no tree, values appended as the wire walk meets them; a record it cannot append exactly,
//! such as a oneof member replacing a message member or a map key twice, goes through the
//! tree, counted in [`BatchStats::tree_records`]), or the row-by-row tree path
//! ([`ConvertPath::Tree`]), the oracle the others are tested against; [`Converter::path`]
//! says which runs.
//!
//! Records come as a slice of buffers ([`Converter::convert`]), an Arrow `BinaryArray`
//! ([`Converter::convert_binary`], the shape Kafka connectors hand over), a varint-delimited
//! stream ([`Converter::convert_delimited`], [`DelimitedRecords`]), or through a
//! [`BatchBuilder`] one at a time ([`BatchBuilder::append`]) or in runs
//! ([`BatchBuilder::append_many`], which the chunked path needs to decode a chunk at
//! once). Records written by Kafka's schema-registry serializers carry a header before the
//! message: [`Framing::SchemaRegistry`] checks it against the converter's type, strips it
//! and can keep the schema id as a column.
//!
//! # The mapping
//!
//! | protobuf | Arrow |
//! |---|---|
//! | message, group | `Struct` of its fields (nullable: null when the field is absent) |
//! | message without columns (`google.protobuf.Empty`, or every field cut) | `Boolean`: `true` when present (Parquet cannot store a struct without fields) |
//! | `repeated T` | `List<T>` (never null: empty when absent; items not null) |
//! | `map<K, V>` | `Map<K, V>`, one entry per distinct key (the last on the wire), in wire order; or `List<Struct<key, value>>` ([`MapColumns::Entries`]) |
//! | `oneof` | its members' columns; and a `<oneof>_case` column with [`ArrowOptions::oneof_case`] |
//! | `bool`, `int32`/`sint32`/`sfixed32`, `int64`/..., `uint32`/`fixed32`, `uint64`/`fixed64`, `float`, `double` | `Boolean`, `Int32`, `Int64`, `UInt32`, `UInt64`, `Float32`, `Float64` |
//! | `string`, `bytes` | `Utf8`, `Binary`; or `Utf8View`, `BinaryView` ([`StringColumns::Views`]: long values point into the input's Arrow buffer where it is one, no copy) |
//! | enum | `Dictionary<Int32, Utf8>` of value names (undeclared numbers of open enums as decimal text), or `Int32` numbers ([`EnumColumns::Number`]), or `Utf8` names ([`EnumColumns::String`]) |
//! | field with presence (proto2, proto3 `optional`, oneof member) | nullable: null when absent (so a oneof is its members, at most one not null) |
//! | proto3 field without presence | not nullable: the value, the default when absent |
//! | `google.protobuf.Timestamp` | `Timestamp(Nanosecond, "UTC")`, nullable |
//! | `google.protobuf.Duration` | `Duration(Nanosecond)`, nullable |
//! | `google.protobuf.*Value` wrappers | the wrapped type, null when absent |
//! | a type already [`ArrowOptions::max_recursion`] times on the path | left out, with a note ([`Converter::notes`], and the schema's metadata) |
//!
//! ## Mapping options
//!
//! The table above is the default mapping. Options of [`ArrowOptions`] reshape it (set by
//! name from text with [`ArrowOptions::set`], as the CLI flags and Python keywords do):
//!
//! | option | columns |
//! |---|---|
//! | [`oneof_case`](ArrowOptions::oneof_case) | a `<oneof>_case` column per oneof: `Dictionary<Int8, Utf8>` of the set member's name, null when none is, after the message's other columns (only members that have a column can be seen) |
//! | [`maps`](ArrowOptions::maps) = [`MapColumns::Entries`] | `List<Struct<key, value>>` instead of `Map<K, V>` (the same offsets and entries) |
//! | [`large`](ArrowOptions::large) | `LargeUtf8`, `LargeBinary`, `LargeList` (view strings stay views, enum dictionaries keep `Utf8` names, a `Map` stays a `Map`) |
//! | [`enums`](ArrowOptions::enums) = [`EnumColumns::String`] | `Utf8` value names instead of a dictionary |
//! | [`flatten`](ArrowOptions::flatten) | singular message fields as top-level columns named by path (`a.b.c`), null where a parent is absent; lists and maps stay whole |
//! | [`any`](ArrowOptions::any) = [`AnyColumns::Json`] | a `google.protobuf.Any` as `Utf8` proto3 JSON of the packed message (`{"@type": url, ...}`, resolved through the schema; `{"@type": url, "value": "<base64>"}` when it is not, counted in [`Converter::unresolved_any`]), the field marked with the canonical `arrow.json` extension type |
//! | [`structs`](ArrowOptions::structs) = [`StructColumns::Json`] | `google.protobuf.Struct`, `Value` and `ListValue` as `Utf8` (`arrow.json`) proto3 JSON, whole however deep (the compiled appenders leave such columns to the chunked path, with a note) |
//! | [`recursion`](ArrowOptions::recursion) = [`RecursionColumns::Json`] | where a recursive type is cut, a `Utf8` column (`arrow.json`) of the subtree's proto3 JSON instead of nothing (the compiled appenders leave such columns to the chunked path, with a note) |
//! | [`extensions`](ArrowOptions::extensions) | extensions declared in the schema for a converted type as columns named `[pkg.ext]` after its fields (not encoded back) |
//! | [`explode`](ArrowOptions::explode) | one row per element of a repeated field ([`Explode::path`]), the element in the list's place and the record's other columns repeated; a record without an element gives no row, or one row with the element null ([`Explode::outer`]), counted in [`Converter::unexploded_records`] |
//!
//! Every path fills the default mapping's columns; [`BatchBuilder::finish`] reshapes them
//! (sharing child arrays, value and null buffers; widening offsets; copying enum names),
//! so every path gives the same batch, and [`Converter::arrow_schema`] is known before any
//! data. The [`Encoder`] reads every shape back: flattened columns are regrouped by path,
//! case columns are accepted and not read; JSON text is parsed back (an unresolved `Any`
//! from its base64 value); exploded rows are elements, not records, and it
//! refuses them.
//!
//! Timestamps and durations beyond 64-bit nanoseconds (before 1677 or after 2262) become
//! nulls, counted in [`BatchStats::time_out_of_range`]. Unknown fields are not converted;
//! extensions only with [`ArrowOptions::extensions`].
//!
//! # The way back
//!
//! [`Encoder::encode`] writes one canonical message per row (fields by number, defaults of
//! fields without presence left out, packed where the field is); columns are matched to
//! fields by name, and besides the converter's own shapes it reads the ones other tools
//! write for the same data (any integer width, checked against the field's range; large and
//! view strings; large lists; any time unit; enums as names or numbers; maps as lists of
//! entries; flattened `a.b.c` columns, regrouped by path; oneof case columns, not read). Bad columns are
//! [`EncodeError`]s naming the column, and the row for a bad value.
//!
//! # Projection
//!
//! [`ArrowOptions::select`] lists field paths (`id`, `payload.user.name`; paths go through
//! singular and repeated messages). Only those columns are built, and the decoder works on
//! a pruned copy of the schema in which unselected fields are unknown: they are skipped on
//! the wire, not decoded into values and dropped.
//!
//! ```
//! use protojit::Schema;
//! use protojit_arrow::{ArrowOptions, Converter};
//!
//! let schema = Schema::from_proto_source("ev.proto", r#"
//!     syntax = "proto3";
//!     message Event { string id = 1; int64 at = 2; repeated string tags = 3; }
//! "#)?;
//! let converter = Converter::new(&schema, "Event", &ArrowOptions::default())?;
//! let batch = converter.convert([&b"\x0a\x02e1\x10\x07\x1a\x01a"[..], b"\x0a\x02e2"])?;
//! assert_eq!(batch.num_rows(), 2);
//! assert_eq!(batch.schema().field(2).name(), "tags");
//!
//! let only_at = Converter::new(&schema, "Event", &ArrowOptions { select: Some(vec!["at".into()]), ..Default::default() })?;
//! let batch = only_at.convert([&b"\x0a\x02e1\x10\x07"[..]])?;
//! assert_eq!(batch.num_columns(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "clap")]
mod args;
mod column;
mod compiled;
mod convert;
mod direct;
mod encode;
mod error;
mod framing;
mod gather;
mod options;
mod reshape;
mod schema;
mod select;
mod values;
mod wkt;

#[cfg(feature = "clap")]
pub use args::{MappingArgs, OtherMappingArgs};
pub use convert::{BatchBuilder, Converter, DelimitedBatches, MAX_BATCH_INPUT, STREAM_BATCH_INPUT};
pub use encode::Encoder;
pub use error::{AppendError, ConvertError, EncodeError, RecordError};
pub use framing::{Framing, FramingError};
pub use options::{
    AnyColumns, ArrowOptions, ConvertPath, EnumColumns, Explode, MapColumns, RecursionColumns, StringColumns,
    StructColumns,
};
pub use protojit::delimited::{DelimitedRecords, Record, StreamError};
pub use values::BatchStats;

/// The Arrow and Parquet crates this one is built on, for callers that need the same
/// versions.
pub use {arrow_array, arrow_buffer, arrow_ipc, arrow_schema, parquet};

pub use arrow_array::RecordBatch;
