//! The way back, batches to messages: the encoder inverts the converter (every cell of a
//! converted batch comes back, under every option), its messages are canonical (the public
//! corpus re-encodes to prost-reflect's bytes), other shapes of the same data (wider
//! integers, large and view strings, large lists, other time units, enum names) encode to
//! the same messages, and bad columns are errors naming the column and row.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use prost::Message as _;
use prost_reflect::DynamicMessage;
use protojit::{EngineKind, Schema};
use protojit_arrow::arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
use protojit_arrow::arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array, LargeStringArray, NullArray, RecordBatch,
    StringArray, StringViewArray, StructArray, TimestampMillisecondArray, UInt64Array,
};
use protojit_arrow::arrow_schema::{DataType, Field, Schema as ArrowSchema};
use protojit_arrow::{ArrowOptions, Converter, EncodeError, Encoder, EnumColumns, Framing, StringColumns};

fn reflect_schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/schemas");
    let files = ["everything.proto", "everything3.proto", "reflect_wkt.proto"].map(|f| dir.join(f));
    Schema::from_proto_files(&files, &[&dir]).expect("the reflection test schemas compile")
}

/// `records` → batch → messages → batch: the second batch equals the first, and the
/// messages encode again to themselves (canonical bytes are a fixpoint). Returns the
/// messages.
fn round_trip(schema: &Schema, root: &str, options: &ArrowOptions, records: &[Vec<u8>]) -> BinaryArray {
    let converter = Converter::new(schema, root, options).unwrap();
    let encoder = Encoder::new(schema, root, options).unwrap();
    let batch = converter.convert(records.iter().map(Vec::as_slice)).unwrap();
    let messages = encoder.encode(&batch).unwrap_or_else(|e| panic!("{root}: {e}"));
    assert_eq!(messages.len(), records.len());
    let again = converter.convert_binary(&messages).unwrap();
    assert_same(&batch, &again, root);
    assert_eq!(encoder.encode(&again).unwrap(), messages, "{root}: canonical bytes are not a fixpoint");
    // The delimited form holds the same messages.
    let mut stream = Vec::new();
    encoder.encode_delimited(&batch, &mut stream).unwrap();
    let framed: Vec<&[u8]> = protojit_arrow::DelimitedRecords::new(&stream).map(|r| r.unwrap().bytes).collect();
    assert_eq!(framed, messages.iter().map(Option::unwrap).collect::<Vec<_>>());
    messages
}

/// Panics naming the first column (down to the leaf) and index where `a` and `b` differ.
fn assert_same(a: &RecordBatch, b: &RecordBatch, what: &str) {
    assert_eq!(a.schema(), b.schema(), "{what}: schemas differ");
    for (i, f) in a.schema().fields().iter().enumerate() {
        if a.column(i) != b.column(i) {
            panic!("{what}: {}", first_diff(a.column(i), b.column(i), f.name()));
        }
    }
}

fn first_diff(x: &ArrayRef, y: &ArrayRef, path: &str) -> String {
    use protojit_arrow::arrow_array::cast::AsArray;
    if x.nulls() != y.nulls() || x.len() != y.len() {
        return format!("{path}: nulls or lengths differ: {:?} vs {:?}", x.nulls(), y.nulls());
    }
    match x.data_type() {
        DataType::Struct(fields) => {
            for (k, f) in fields.iter().enumerate() {
                let (cx, cy) = (x.as_struct().column(k), y.as_struct().column(k));
                if cx != cy {
                    return first_diff(cx, cy, &format!("{path}.{}", f.name()));
                }
            }
        }
        DataType::List(_) => {
            let (lx, ly) = (x.as_list::<i32>(), y.as_list::<i32>());
            if lx.offsets() != ly.offsets() {
                return format!("{path}: list offsets {:?} vs {:?}", lx.offsets(), ly.offsets());
            }
            return first_diff(lx.values(), ly.values(), &format!("{path}[]"));
        }
        DataType::Map(..) => {
            let (mx, my) = (x.as_map(), y.as_map());
            if mx.offsets() != my.offsets() {
                return format!("{path}: map offsets {:?} vs {:?}", mx.offsets(), my.offsets());
            }
            let (ex, ey): (ArrayRef, ArrayRef) = (Arc::new(mx.entries().clone()), Arc::new(my.entries().clone()));
            return first_diff(&ex, &ey, &format!("{path}{{}}"));
        }
        _ => {}
    }
    let i = (0..x.len()).find(|&i| x.slice(i, 1) != y.slice(i, 1)).unwrap_or(0);
    format!("{path}: index {i}: {:?} vs {:?}", x.slice(i, 1), y.slice(i, 1))
}

/// Random messages of the reflection schemas (every kind, cardinality, map, oneof,
/// presence case, group, nesting, the well-known types), under each column option: the
/// batch comes back cell for cell.
#[test]
fn converted_batches_encode_back_to_their_cells() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xe4c0_0001);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let records: Vec<Vec<u8>> =
            (0..80).map(|_| common::random_message(&desc, 3, &mut rng).encode_to_vec()).collect();
        // A Timestamp or Duration past 64-bit nanoseconds converts to a null (counted):
        // its value is not in the table to encode back.
        let converter = Converter::new(&schema, root, &ArrowOptions::default()).unwrap();
        let records: Vec<Vec<u8>> = records
            .into_iter()
            .filter(|r| {
                let mut b = converter.builder();
                b.append(r).unwrap();
                b.stats().time_out_of_range == 0
            })
            .collect();
        assert!(records.len() > 40, "{root}: {} records in range", records.len());
        for (enums, strings, well_known_types) in [
            (EnumColumns::Dictionary, StringColumns::Offsets, true),
            (EnumColumns::Number, StringColumns::Views, true),
            (EnumColumns::Dictionary, StringColumns::Offsets, false),
        ] {
            let options = ArrowOptions { enums, strings, well_known_types, ..ArrowOptions::default() };
            round_trip(&schema, root, &options, &records);
        }
    }
}

/// A slice of a batch (at an offset, across the encoder's blocks of rows) encodes to the
/// whole batch's messages of those rows, delimited too.
#[test]
fn slices_encode_their_rows() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xe4c0_0002);
    let root = common::REFLECT_ROOTS[0];
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let records: Vec<Vec<u8>> = (0..700).map(|_| common::random_message(&desc, 2, &mut rng).encode_to_vec()).collect();
    let options = ArrowOptions::default();
    let batch = Converter::new(&schema, root, &options).unwrap().convert(records.iter().map(Vec::as_slice)).unwrap();
    let encoder = Encoder::new(&schema, root, &options).unwrap();
    let whole = encoder.encode(&batch).unwrap();
    for (offset, len) in [(0, 0), (1, 127), (127, 2), (5, 300), (300, 400), (699, 1)] {
        let part = encoder.encode(&batch.slice(offset, len)).unwrap();
        assert_eq!(part, whole.slice(offset, len), "rows {offset}..{}", offset + len);
        let mut stream = Vec::new();
        encoder.encode_delimited(&batch.slice(offset, len), &mut stream).unwrap();
        let framed: Vec<&[u8]> = protojit_arrow::DelimitedRecords::new(&stream).map(|r| r.unwrap().bytes).collect();
        assert_eq!(framed, part.iter().map(Option::unwrap).collect::<Vec<_>>());
    }
}

/// The public corpus: each payload converted and encoded back is prost-reflect's canonical
/// re-encoding of it, byte for byte.
#[test]
fn corpus_payloads_encode_back_to_their_canonical_bytes() {
    let Some(dir) = common::corpus_dir("corpus_payloads_encode_back_to_their_canonical_bytes") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        if !common::within_corpus_cap("corpus_payloads_encode_back_to_their_canonical_bytes", file, &bytes) {
            continue;
        }
        let desc = schema.pool().get_message_by_name(type_name).unwrap();
        let canonical = DynamicMessage::decode(desc, bytes.as_slice()).unwrap().encode_to_vec();
        // Deep enough that the descriptor sets' nesting is not cut.
        let options = ArrowOptions { max_recursion: 8, ..ArrowOptions::default() };
        let messages = round_trip(&schema, type_name, &options, std::slice::from_ref(&bytes));
        assert!(messages.value(0) == canonical.as_slice(), "{file}: not prost-reflect's canonical bytes");
    }
}

const PROTO: &str = r#"
syntax = "proto2";
package e;
message Req {
  required int32 id = 1;
  optional string name = 2;
  repeated int32 nums = 3 [packed = true];
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
  optional Color color = 4;
  oneof pick { int64 a = 5; string b = 6; }
}
"#;

const PROTO3: &str = r#"
syntax = "proto3";
package f;
import "google/protobuf/timestamp.proto";
message Ev {
  int32 n = 1;
  string s = 2;
  repeated string tags = 3;
  google.protobuf.Timestamp at = 4;
  uint64 big = 5;
}
"#;

fn req_schema() -> Schema {
    Schema::from_proto_source("e.proto", PROTO).unwrap()
}

fn ev_schema() -> Schema {
    Schema::from_proto_source("f.proto", PROTO3).unwrap()
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), true)).collect();
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns.into_iter().map(|(_, a)| a).collect()).unwrap()
}

/// Encodes `b` leaving out the fields it has no column for.
fn encode(schema: &Schema, root: &str, b: &RecordBatch) -> Result<BinaryArray, EncodeError> {
    Encoder::new(schema, root, &ArrowOptions::default())?.allow_missing_columns(true).encode(b)
}

/// Other shapes of the same data encode to the messages the converter's shapes give.
#[test]
fn other_column_shapes_encode_the_same_messages() {
    let schema = ev_schema();
    let records: Vec<Vec<u8>> = vec![
        // n = -3, s = "hé", tags = ["x", "yz"], at = 1.5 s, big = 2^40
        vec![
            0x08, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x12, 0x03, b'h', 0xc3, 0xa9, 0x1a, 0x01,
            b'x', 0x1a, 0x02, b'y', b'z', 0x22, 0x08, 0x08, 0x01, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01, 0x28, 0x80, 0x80,
            0x80, 0x80, 0x80, 0x20,
        ],
        vec![],
    ];
    let converted = round_trip(&schema, "f.Ev", &ArrowOptions::default(), &records);
    assert_eq!(converted.value(0), records[0].as_slice());
    let mut tags = ListBuilder::new(StringBuilder::new());
    tags.values().append_value("x");
    tags.values().append_value("yz");
    tags.append(true);
    tags.append(true);
    let tags = tags.finish();
    let large_tags = protojit_arrow::arrow_array::LargeListArray::new(
        Arc::new(Field::new("item", DataType::LargeUtf8, false)),
        protojit_arrow::arrow_buffer::OffsetBuffer::new(vec![0i64, 2, 2].into()),
        Arc::new(LargeStringArray::from(vec!["x", "yz"])),
        None,
    );
    let other = batch(vec![
        ("n", Arc::new(Int64Array::from(vec![-3, 0])) as ArrayRef),
        ("s", Arc::new(StringViewArray::from(vec!["hé", ""]))),
        ("tags", Arc::new(large_tags)),
        ("at", Arc::new(TimestampMillisecondArray::from(vec![Some(1500), None]).with_timezone("UTC"))),
        ("big", Arc::new(Int64Array::from(vec![1 << 40, 0]))),
    ]);
    assert_eq!(encode(&schema, "f.Ev", &other).unwrap(), converted);
    let plain = batch(vec![
        ("n", Arc::new(Int32Array::from(vec![-3, 0])) as ArrayRef),
        ("s", Arc::new(LargeStringArray::from(vec!["hé", ""]))),
        ("tags", Arc::new(tags)),
        ("at", Arc::new(TimestampMillisecondArray::from(vec![Some(1500), None]))),
        ("big", Arc::new(UInt64Array::from(vec![1 << 40, 0]))),
    ]);
    assert_eq!(encode(&schema, "f.Ev", &plain).unwrap(), converted);
    // A Timestamp before 1970 keeps its nanos positive: -0.5 s is seconds -1, nanos 5e8.
    let before = batch(vec![("at", Arc::new(TimestampMillisecondArray::from(vec![-500])) as ArrayRef)]);
    let m = Encoder::new(&schema, "f.Ev", &ArrowOptions::default())
        .unwrap()
        .allow_missing_columns(true)
        .encode(&before)
        .unwrap();
    assert_eq!(
        m.value(0),
        &[
            0x22, 0x11, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x80, 0xca, 0xb5, 0xee,
            0x01
        ]
    );
}

/// A column that writes nothing in any row of a batch (all null, or all its field's
/// default where the field has no presence, or every list empty) is left out of the
/// batch's plan: each row's message is the one it gets in a batch where the column does
/// write. What must still be written or checked is: an explicit field's zeros, a required
/// field's nulls, a oneof's conflict beside an all-null member.
#[test]
fn columns_writing_nothing_leave_the_messages_unchanged() {
    // Per row, the messages of rows 0..2 alone against the same rows in a batch of three
    // whose last row sets every field.
    let alone_and_within = |schema: &Schema, root: &str, columns: Vec<(&str, ArrayRef)>| {
        let b = batch(columns);
        let whole = encode(schema, root, &b).unwrap();
        let first_two = encode(schema, root, &b.slice(0, 2)).unwrap();
        for row in 0..2 {
            assert_eq!(first_two.value(row), whole.value(row), "{root}, row {row}");
        }
        first_two
    };
    // proto3: defaults are not written, so rows 0 and 1 are empty messages.
    let ev = ev_schema();
    let mut tags = ListBuilder::new(StringBuilder::new());
    tags.append(true);
    tags.append(true);
    tags.values().append_value("t");
    tags.append(true);
    let rows = alone_and_within(
        &ev,
        "f.Ev",
        vec![
            ("n", Arc::new(Int32Array::from(vec![0, 0, 7])) as ArrayRef),
            ("s", Arc::new(StringArray::from(vec!["", "", "x"]))),
            ("tags", Arc::new(tags.finish())),
            ("at", Arc::new(TimestampMillisecondArray::from(vec![None, None, Some(1)]))),
            ("big", Arc::new(UInt64Array::from(vec![0, 0, 9]))),
        ],
    );
    assert_eq!((rows.value(0), rows.value(1)), (&[][..], &[][..]));
    // proto2: an explicit field's zeros are written; the all-null `name` and `b` are not.
    let req = req_schema();
    let rows = alone_and_within(
        &req,
        "e.Req",
        vec![
            ("id", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
            ("name", Arc::new(StringArray::from(vec![None, None, Some("n")]))),
            ("color", Arc::new(Int32Array::from(vec![Some(0), Some(0), Some(1)]))),
            ("a", Arc::new(Int64Array::from(vec![Some(0), None, Some(5)]))),
            ("b", Arc::new(StringArray::from(vec![None, None, None::<&str>]))),
        ],
    );
    assert_eq!(rows.value(0), &[0x08, 0x01, 0x20, 0x00, 0x28, 0x00]);
    assert_eq!(rows.value(1), &[0x08, 0x02, 0x20, 0x00]);
    // A required field null in every row is still an error; so is a oneof set twice.
    let e = encode(&req, "e.Req", &batch(vec![("id", Arc::new(Int32Array::from(vec![None, None])) as ArrayRef)]));
    assert_eq!(e.unwrap_err().to_string(), "column `id`, row 0: null in a required field");
    let e = encode(
        &req,
        "e.Req",
        &batch(vec![
            ("id", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
            ("name", Arc::new(StringArray::from(vec![None::<&str>]))),
            ("a", Arc::new(Int64Array::from(vec![4]))),
            ("b", Arc::new(StringArray::from(vec!["z"]))),
        ]),
    );
    assert!(matches!(e, Err(EncodeError::OneofConflict { row: 0, .. })), "{e:?}");
}

/// Enums as names (a dictionary, or plain text) and as numbers give the same messages.
#[test]
fn enums_encode_from_names_and_numbers() {
    let schema = req_schema();
    let id = || Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef;
    let by_number = batch(vec![("id", id()), ("color", Arc::new(Int32Array::from(vec![Some(2), None, Some(0)])))]);
    let by_name =
        batch(vec![("id", id()), ("color", Arc::new(StringArray::from(vec![Some("BLUE"), None, Some("RED")])))]);
    let dictionary: protojit_arrow::arrow_array::DictionaryArray<protojit_arrow::arrow_array::types::Int32Type> =
        vec![Some("BLUE"), None, Some("RED")].into_iter().collect();
    let by_dictionary = batch(vec![("id", id()), ("color", Arc::new(dictionary))]);
    let expected = encode(&schema, "e.Req", &by_number).unwrap();
    assert_eq!(expected.value(0), &[0x08, 0x01, 0x20, 0x02]);
    assert_eq!(expected.value(1), &[0x08, 0x02]);
    // Presence: RED, the default, is written.
    assert_eq!(expected.value(2), &[0x08, 0x03, 0x20, 0x00]);
    assert_eq!(encode(&schema, "e.Req", &by_name).unwrap(), expected);
    assert_eq!(encode(&schema, "e.Req", &by_dictionary).unwrap(), expected);
}

/// Every bad column is an error naming the column (and the row, for a bad value).
#[test]
fn bad_columns_are_errors_naming_column_and_row() {
    let schema = req_schema();
    let ok_id = || ("id", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef);
    let err = |columns: Vec<(&str, ArrayRef)>| encode(&schema, "e.Req", &batch(columns)).unwrap_err().to_string();

    let e = err(vec![ok_id(), ("nope", Arc::new(Int32Array::from(vec![1, 2])))]);
    assert_eq!(e, "column `nope` names no field of e.Req: drop it, or ignore extra columns");
    let extra = batch(vec![ok_id(), ("nope", Arc::new(Int32Array::from(vec![1, 2])))]);
    let encoder = Encoder::new(&schema, "e.Req", &ArrowOptions::default())
        .unwrap()
        .ignore_extra_columns(true)
        .allow_missing_columns(true);
    assert_eq!(encoder.encode(&extra).unwrap().value(0), &[0x08, 0x01]);

    let e = err(vec![("name", Arc::new(StringArray::from(vec!["a", "b"])))]);
    assert_eq!(e, "column `id` (a field of e.Req) is missing: the field is required");

    let e = err(vec![ok_id(), ("name", Arc::new(Int32Array::from(vec![1, 2])))]);
    assert_eq!(e, "column `name` is Int32, which cannot hold string values");

    let e = err(vec![("id", Arc::new(Int64Array::from(vec![1, 1 << 33])))]);
    assert_eq!(e, "column `id`, row 1: 8589934592 is out of range for int32");

    let e = err(vec![("id", Arc::new(Int32Array::from(vec![Some(1), None])))]);
    assert_eq!(e, "column `id`, row 1: null in a required field");
    let e = err(vec![("id", Arc::new(NullArray::new(2)))]);
    assert_eq!(e, "column `id`, row 0: null in a required field");

    let e = err(vec![ok_id(), ("color", Arc::new(StringArray::from(vec!["RED", "PINK"])))]);
    assert_eq!(e, "column `color`, row 1: `PINK` is not a value of enum e.Req.Color");
    // A closed enum (proto2) takes declared numbers only.
    let e = err(vec![ok_id(), ("color", Arc::new(Int32Array::from(vec![1, 7])))]);
    assert_eq!(e, "column `color`, row 1: 7 is not a value of enum e.Req.Color (closed: declared values only)");

    let e = err(vec![
        ok_id(),
        ("a", Arc::new(Int64Array::from(vec![Some(1), Some(2)]))),
        ("b", Arc::new(StringArray::from(vec![None, Some("x")]))),
    ]);
    assert_eq!(e, "row 1: `a` and `b` are both set, but oneof pick holds one member");

    let mut nums = ListBuilder::new(Int32Builder::new());
    nums.append(true);
    nums.values().append_null();
    nums.append(true);
    let e = err(vec![ok_id(), ("nums", Arc::new(nums.finish()))]);
    assert_eq!(e, "column `nums`, row 1: a list item is null (protobuf lists hold no nulls)");

    // proto3: a field a converter always gives a column is missing.
    let ev = ev_schema();
    let b = batch(vec![("s", Arc::new(StringArray::from(vec!["a"])) as ArrayRef)]);
    let e = Encoder::new(&ev, "f.Ev", &ArrowOptions::default()).unwrap().encode(&b).unwrap_err().to_string();
    assert!(
        e.starts_with("column `n` (a field of f.Ev) is missing: a converter always gives this field a column"),
        "{e}"
    );
    let m =
        Encoder::new(&ev, "f.Ev", &ArrowOptions::default()).unwrap().allow_missing_columns(true).encode(&b).unwrap();
    assert_eq!(m.value(0), &[0x12, 0x01, b'a']);

    let e = Encoder::new(
        &ev,
        "f.Ev",
        &ArrowOptions { framing: Framing::SchemaRegistry { schema_id_column: None }, ..ArrowOptions::default() },
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("schema-registry framing cannot be encoded back into messages"), "{e}");
}

/// Schema-registry framing: the header is written back from the schema-id column.
#[test]
fn schema_registry_headers_are_written_back() {
    let schema = Schema::from_proto_source(
        "k.proto",
        "syntax = \"proto3\"; package k; message A { int64 a = 1; } message B { int64 b = 1; message C { int64 c = 1; } }",
    )
    .unwrap();
    let options = ArrowOptions {
        framing: Framing::SchemaRegistry { schema_id_column: Some("schema_id".into()) },
        ..ArrowOptions::default()
    };
    // k.B.C: indexes [1, 0], written as count 2 then each, zigzag.
    let records = vec![vec![0, 0, 0, 1, 0x2c, 0x04, 0x02, 0x00, 0x08, 0x05], vec![0, 0, 0, 0, 7, 0x04, 0x02, 0x00]];
    let messages = round_trip(&schema, "k.B.C", &options, &records);
    assert_eq!(messages.value(0), records[0].as_slice());
    assert_eq!(messages.value(1), records[1].as_slice());
    let records = vec![vec![0, 0, 0, 0, 9, 0x00, 0x08, 0x01]];
    assert_eq!(round_trip(&schema, "k.A", &options, &records).value(0), records[0].as_slice());
}

/// A batch written to Parquet and read back encodes to the same messages.
#[test]
fn parquet_files_encode_back_to_the_records() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xe4c0_0002);
    let root = "everything3.Everything3";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let records: Vec<Vec<u8>> = (0..50).map(|_| common::random_message(&desc, 2, &mut rng).encode_to_vec()).collect();
    let options =
        ArrowOptions { decode: ArrowOptions::default().decode.with_kind(EngineKind::Jit), ..Default::default() };
    let converter = Converter::new(&schema, root, &options).unwrap();
    let batch = converter.convert(records.iter().map(Vec::as_slice)).unwrap();
    let mut file = Vec::new();
    let mut writer = protojit_arrow::parquet::arrow::ArrowWriter::try_new(&mut file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let reader =
        protojit_arrow::parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(bytes::Bytes::from(file), 1024)
            .unwrap();
    let back: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let encoder = Encoder::new(&schema, root, &options).unwrap();
    let mut from_parquet: Vec<Vec<u8>> = Vec::new();
    for b in &back {
        from_parquet.extend(encoder.encode(b).unwrap().iter().map(|m| m.unwrap().to_vec()));
    }
    let direct: Vec<Vec<u8>> = encoder.encode(&batch).unwrap().iter().map(|m| m.unwrap().to_vec()).collect();
    assert_eq!(from_parquet, direct);
}

/// A struct column of a message field, with a null row (absent) and a marker column of an
/// empty message.
#[test]
fn nested_structs_and_markers() {
    let schema = Schema::from_proto_source(
        "n.proto",
        "syntax = \"proto3\"; package n; message E {} message In { int32 x = 1; } message Out { In in = 1; E e = 2; }",
    )
    .unwrap();
    let x = Arc::new(Int32Array::from(vec![5, 0, 0])) as ArrayRef;
    let inner = StructArray::new(
        vec![Field::new("x", DataType::Int32, false)].into(),
        vec![x],
        Some(vec![true, true, false].into()),
    );
    let b = batch(vec![
        ("in", Arc::new(inner) as ArrayRef),
        ("e", Arc::new(BooleanArray::from(vec![Some(true), Some(false), None]))),
    ]);
    let m = encode(&schema, "n.Out", &b).unwrap();
    assert_eq!(m.value(0), &[0x0a, 0x02, 0x08, 0x05, 0x12, 0x00]);
    assert_eq!(m.value(1), &[0x0a, 0x00]);
    assert_eq!(m.value(2), &[] as &[u8]);
}
