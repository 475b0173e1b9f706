//! Records to Arrow: every cell of every converted batch equals what the record's
//! `to_dynamic()` holds, under the documented mapping (checked by an independent walk over
//! the DynamicMessage), for the property schemas (every kind, cardinality, map, oneof,
//! presence case, well-known type and nesting) and the public corpus; projections convert
//! the same cells as full conversions; Parquet files read back to equal batches; options the
//! converter cannot honour are errors.

// The facade's test support (shared corpus, random messages, deep equality), shared rather
// than copied.
#[path = "../../tests/common/mod.rs"]
mod common;

use protojit_arrow::arrow_array::cast::AsArray;
use protojit_arrow::arrow_array::types::{
    DurationNanosecondType, Float32Type, Float64Type, Int32Type, Int64Type, TimestampNanosecondType, UInt32Type,
    UInt64Type,
};
use protojit_arrow::arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use protojit_arrow::arrow_schema::{DataType, Fields};
use protojit_arrow::{ArrowOptions, ConvertError, Converter, EnumColumns, StringColumns};

use prost::Message as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value};
use protojit::{Arena, EngineKind, EngineOptions, Schema, Utf8Check};

// ---------------------------------------------------------------------------------------
// The oracle: one row of a batch against a DynamicMessage, by the mapping table of
// protojit-arrow's crate docs, written again here from the descriptor's side.

/// `cuts`: the converter's notes when every field was converted (then each field must have
/// a column or a note), `None` for projections.
fn check_row(
    columns: &[ArrayRef],
    fields: &Fields,
    row: usize,
    m: &DynamicMessage,
    path: &str,
    cuts: Option<&[String]>,
) {
    let desc = m.descriptor();
    for (col, f) in columns.iter().zip(fields.iter()) {
        let fd = desc.get_field_by_name(f.name()).unwrap_or_else(|| panic!("{path}: column {} is no field", f.name()));
        check_field(col, row, m, &fd, &format!("{path}.{}", fd.name()), cuts);
    }
}

/// With every field converted: each field of `desc` has a column, unless a cut left it out.
fn check_complete(fields: &Fields, desc: &MessageDescriptor, path: &str, cuts: Option<&[String]>) {
    let Some(cuts) = cuts else { return };
    for fd in desc.fields() {
        if fields.iter().all(|f| f.name() != fd.name()) {
            // Notes name field paths without list indexes or map keys.
            let mut p = String::new();
            let mut skip = false;
            for ch in format!("{path}.{}", fd.name()).chars() {
                match ch {
                    '[' => skip = true,
                    ']' => skip = false,
                    c if !skip => p.push(c),
                    _ => {}
                }
            }
            let p = p.trim_start_matches('.');
            // (A map whose value type is cut is noted at its `.value`.)
            let noted = |c: &&String| c.starts_with(&format!("`{p}`")) || c.starts_with(&format!("`{p}.value`"));
            assert!(cuts.iter().any(|c| noted(&c)), "{p}: no column and no cut note");
        }
    }
}

fn check_field(
    col: &ArrayRef,
    row: usize,
    m: &DynamicMessage,
    fd: &FieldDescriptor,
    path: &str,
    cuts: Option<&[String]>,
) {
    let value = m.get_field(fd);
    if fd.is_map() {
        let Kind::Message(entry) = fd.kind() else { unreachable!() };
        let value_fd = entry.map_entry_value_field();
        let map = col.as_map();
        let expected = value.as_map().unwrap();
        let offsets = map.value_offsets();
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        assert_eq!(end - start, expected.len(), "{path}: entries");
        for j in start..end {
            let key = map_key(map.keys(), j);
            let v = expected.get(&key).unwrap_or_else(|| panic!("{path}: key {key:?} not in the message"));
            check_value(map.values(), j, &value_fd, v, &format!("{path}.value[{key:?}]"), cuts);
        }
    } else if fd.is_list() {
        let list = col.as_list::<i32>();
        assert!(col.is_valid(row), "{path}: lists are never null");
        let items = list.value(row);
        let expected = value.as_list().unwrap();
        assert_eq!(items.len(), expected.len(), "{path}: items");
        for (j, v) in expected.iter().enumerate() {
            check_value(&items, j, fd, v, &format!("{path}[{j}]"), cuts);
        }
    } else if fd.supports_presence() && !m.has_field(fd) {
        assert!(col.is_null(row), "{path}: absent, so null");
    } else {
        check_value(col, row, fd, &value, path, cuts);
    }
}

fn map_key(keys: &ArrayRef, j: usize) -> MapKey {
    match keys.data_type() {
        DataType::Boolean => MapKey::Bool(keys.as_boolean().value(j)),
        DataType::Int32 => MapKey::I32(keys.as_primitive::<Int32Type>().value(j)),
        DataType::Int64 => MapKey::I64(keys.as_primitive::<Int64Type>().value(j)),
        DataType::UInt32 => MapKey::U32(keys.as_primitive::<UInt32Type>().value(j)),
        DataType::UInt64 => MapKey::U64(keys.as_primitive::<UInt64Type>().value(j)),
        DataType::Utf8 => MapKey::String(keys.as_string::<i32>().value(j).to_owned()),
        DataType::Utf8View => MapKey::String(keys.as_string_view().value(j).to_owned()),
        t => panic!("map key column of type {t}"),
    }
}

fn check_value(col: &ArrayRef, row: usize, fd: &FieldDescriptor, v: &Value, path: &str, cuts: Option<&[String]>) {
    match fd.kind() {
        Kind::Message(md) => {
            let msg = v.as_message().unwrap_or_else(|| {
                panic!(
                    "{path}: {} holds {} which is no message",
                    fd.full_name(),
                    format!("{v:?}").chars().take(80).collect::<String>()
                )
            });
            match md.full_name() {
                "google.protobuf.Timestamp" | "google.protobuf.Duration" => {
                    let s = msg.get_field_by_number(1).unwrap().as_i64().unwrap();
                    let n = msg.get_field_by_number(2).unwrap().as_i32().unwrap();
                    let expected = s.checked_mul(1_000_000_000).and_then(|x| x.checked_add(i64::from(n)));
                    let got = if md.name() == "Timestamp" {
                        let a = col.as_primitive::<TimestampNanosecondType>();
                        a.is_valid(row).then(|| a.value(row))
                    } else {
                        let a = col.as_primitive::<DurationNanosecondType>();
                        a.is_valid(row).then(|| a.value(row))
                    };
                    assert_eq!(got, expected, "{path}");
                }
                "google.protobuf.DoubleValue"
                | "google.protobuf.FloatValue"
                | "google.protobuf.Int64Value"
                | "google.protobuf.UInt64Value"
                | "google.protobuf.Int32Value"
                | "google.protobuf.UInt32Value"
                | "google.protobuf.BoolValue"
                | "google.protobuf.StringValue"
                | "google.protobuf.BytesValue" => {
                    assert!(col.is_valid(row), "{path}: a present wrapper is not null");
                    let inner = md.get_field(1).unwrap();
                    check_value(col, row, &inner, &msg.get_field(&inner), path, cuts);
                }
                _ if col.data_type() == &DataType::Boolean => {
                    // A message without columns: present.
                    assert!(col.is_valid(row) && col.as_boolean().value(row), "{path}: present, so true");
                }
                _ => {
                    assert!(col.is_valid(row), "{path}: a present message is not null");
                    let s = col.as_struct();
                    check_complete(s.fields(), &md, path, cuts);
                    check_row(s.columns(), s.fields(), row, msg, path, cuts);
                }
            }
        }
        Kind::Bool => assert_eq!(col.as_boolean().value(row), v.as_bool().unwrap(), "{path}"),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            assert_eq!(col.as_primitive::<Int32Type>().value(row), v.as_i32().unwrap(), "{path}")
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            assert_eq!(col.as_primitive::<Int64Type>().value(row), v.as_i64().unwrap(), "{path}")
        }
        Kind::Uint32 | Kind::Fixed32 => {
            assert_eq!(col.as_primitive::<UInt32Type>().value(row), v.as_u32().unwrap(), "{path}")
        }
        Kind::Uint64 | Kind::Fixed64 => {
            assert_eq!(col.as_primitive::<UInt64Type>().value(row), v.as_u64().unwrap(), "{path}")
        }
        Kind::Float => {
            assert_eq!(col.as_primitive::<Float32Type>().value(row).to_bits(), v.as_f32().unwrap().to_bits(), "{path}")
        }
        Kind::Double => {
            assert_eq!(col.as_primitive::<Float64Type>().value(row).to_bits(), v.as_f64().unwrap().to_bits(), "{path}")
        }
        Kind::String => match col.data_type() {
            DataType::Utf8View => assert_eq!(col.as_string_view().value(row), v.as_str().unwrap(), "{path}"),
            _ => assert_eq!(col.as_string::<i32>().value(row), v.as_str().unwrap(), "{path}"),
        },
        Kind::Bytes => match col.data_type() {
            DataType::BinaryView => assert_eq!(col.as_binary_view().value(row), &v.as_bytes().unwrap()[..], "{path}"),
            _ => assert_eq!(col.as_binary::<i32>().value(row), &v.as_bytes().unwrap()[..], "{path}"),
        },
        Kind::Enum(e) => {
            let n = v.as_enum_number().unwrap();
            match col.data_type() {
                DataType::Int32 => assert_eq!(col.as_primitive::<Int32Type>().value(row), n, "{path}"),
                _ => {
                    let dict = col.as_dictionary::<Int32Type>();
                    let key = dict.keys().value(row) as usize;
                    let name = dict.values().as_string::<i32>().value(key);
                    let expected = e.get_value(n).map(|v| v.name().to_owned()).unwrap_or_else(|| n.to_string());
                    assert_eq!(name, expected, "{path}");
                }
            }
        }
    }
}

/// Checks every row of `batch` (converted with every field) against `messages`.
fn check_batch(batch: &RecordBatch, messages: &[DynamicMessage], converter: &Converter, what: &str) {
    assert_eq!(batch.num_rows(), messages.len(), "{what}: rows");
    let fields = batch.schema().fields().clone();
    if let Some(first) = messages.first() {
        check_complete(&fields, &first.descriptor(), "", Some(converter.notes()));
    }
    for (row, m) in messages.iter().enumerate() {
        check_row(batch.columns(), &fields, row, m, "", Some(converter.notes()));
    }
}

/// Writes `batch` as Parquet and reads it back.
fn parquet_round_trip(batch: &RecordBatch) -> RecordBatch {
    use protojit_arrow::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use protojit_arrow::parquet::arrow::ArrowWriter;
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(buf))
        .unwrap()
        .with_batch_size(1 << 20)
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&batch.schema(), &batches).unwrap()
}

/// `n` random messages of `desc`, encoded, with the oracle's view of each: the bytes decoded
/// by prost-reflect (not the generated message: prost-reflect's encoder drops a map entry's
/// `-0.0` value, which then decodes as `0.0`).
fn random_records(desc: &MessageDescriptor, n: usize, rng: &mut common::Rng) -> (Vec<DynamicMessage>, Vec<Vec<u8>>) {
    let encoded: Vec<Vec<u8>> = (0..n).map(|_| common::random_message(desc, 3, rng).encode_to_vec()).collect();
    let messages = encoded.iter().map(|b| DynamicMessage::decode(desc.clone(), b.as_slice()).unwrap()).collect();
    (messages, encoded)
}

fn engines() -> [EngineOptions; 2] {
    let decode = ArrowOptions::default().decode;
    [decode.with_kind(EngineKind::Interpreter), decode.with_kind(EngineKind::Jit)]
}

/// The facade's reflection test schemas (`tests/schemas/` of the workspace), in one pool.
fn reflect_schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/schemas");
    let files = ["everything.proto", "everything3.proto", "reflect_wkt.proto"].map(|f| dir.join(f));
    Schema::from_proto_files(&files, &[&dir]).expect("the reflection test schemas compile")
}

// ---------------------------------------------------------------------------------------

/// Random messages of the reflection schemas (every field kind, cardinality, map, oneof,
/// presence case, nesting, and the well-known types) convert to exactly their values.
#[test]
fn property_messages_convert_to_their_values() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xa770_0001);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let (messages, encoded) = random_records(&desc, 60, &mut rng);
        for decode in engines() {
            for (enums, strings) in
                [(EnumColumns::Dictionary, StringColumns::Offsets), (EnumColumns::Number, StringColumns::Views)]
            {
                let options = ArrowOptions { enums, strings, decode, ..ArrowOptions::default() };
                let converter = Converter::new(&schema, root, &options).unwrap();
                let batch = converter.convert(encoded.iter().map(Vec::as_slice)).unwrap();
                check_batch(&batch, &messages, &converter, root);
            }
        }
    }
}

/// The same records through a `BinaryArray` and through a delimited stream, in batches
/// of 7, give the same rows as one `convert`.
#[test]
fn binary_arrays_and_delimited_streams_give_the_same_rows() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xa770_0002);
    let root = "everything3.Everything3";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let encoded: Vec<Vec<u8>> = (0..40).map(|_| common::random_message(&desc, 2, &mut rng).encode_to_vec()).collect();
    let converter = Converter::new(&schema, root, &ArrowOptions::default()).unwrap();
    let whole = converter.convert(encoded.iter().map(Vec::as_slice)).unwrap();
    let array = BinaryArray::from_iter_values(encoded.iter());
    assert_eq!(converter.convert_binary(&array).unwrap(), whole);
    let mut stream = Vec::new();
    for e in &encoded {
        protojit_arena::wire::write_varint(&mut stream, e.len() as u64);
        stream.extend_from_slice(e);
    }
    let batches: Vec<RecordBatch> = converter.convert_delimited(&stream, 7).map(Result::unwrap).collect();
    assert_eq!(batches.len(), 6);
    assert!(batches.iter().all(|b| b.num_rows() <= 7));
    assert_eq!(arrow_select::concat::concat_batches(&whole.schema(), &batches).unwrap(), whole);
}

/// A delimited stream of big records: a batch closes after the record that takes its input
/// to `STREAM_BATCH_INPUT`, whatever `batch_size` allows; the rows are all there, in order.
#[test]
fn delimited_batches_close_at_their_input_limit() {
    let schema = Schema::from_proto_source(
        "big.proto",
        r#"syntax = "proto3"; package big; message Blob { int32 id = 1; bytes data = 2; }"#,
    )
    .unwrap();
    let converter = Converter::new(&schema, "big.Blob", &ArrowOptions::default()).unwrap();
    // Records of a quarter of the limit and a few bytes: the fourth reaches it.
    let quarter = protojit_arrow::STREAM_BATCH_INPUT / 4;
    let mut stream = Vec::new();
    for id in 1..=10u8 {
        let mut record = vec![0x08, id, 0x12];
        protojit_arena::wire::write_varint(&mut record, quarter as u64);
        record.resize(record.len() + quarter, id);
        protojit_arena::wire::write_varint(&mut stream, record.len() as u64);
        stream.extend_from_slice(&record);
    }
    let batches: Vec<RecordBatch> = converter.convert_delimited(&stream, 1000).map(Result::unwrap).collect();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [4, 4, 2]);
    let ids: Vec<i32> =
        batches.iter().flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec()).collect();
    assert_eq!(ids, (1..=10).collect::<Vec<_>>());
    // Small records still make batches of `batch_size` rows.
    let small: Vec<u8> = (0..100).flat_map(|_| [2u8, 0x08, 1]).collect();
    let sizes: Vec<usize> = converter.convert_delimited(&small, 30).map(|b| b.unwrap().num_rows()).collect();
    assert_eq!(sizes, [30, 30, 30, 10]);
}

/// Every `Utf8View` / `BinaryView` array under `array` (through structs, lists and maps).
fn view_arrays<'a>(array: &'a ArrayRef, out: &mut Vec<&'a ArrayRef>) {
    match array.data_type() {
        DataType::Utf8View | DataType::BinaryView => out.push(array),
        DataType::Struct(_) => array.as_struct().columns().iter().for_each(|c| view_arrays(c, out)),
        DataType::List(_) => view_arrays(array.as_list::<i32>().values(), out),
        DataType::Map(..) => array.as_map().entries().columns().iter().for_each(|c| view_arrays(c, out)),
        _ => {}
    }
}

/// With string views, a `BinaryArray` of records converts without copying a string: every
/// value longer than 12 bytes points into the array's values buffer (the column's own
/// block stays empty), the values are the oracle's, and the rows equal the copying
/// conversion's. Records from plain slices get copies, with the same values.
#[test]
fn string_views_point_into_the_input() {
    use arrow_cast::cast;
    let schema = reflect_schema();
    let mut rng = common::Rng(0xa770_0007);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let (messages, encoded) = random_records(&desc, 40, &mut rng);
        let array = BinaryArray::from_iter_values(encoded.iter());
        let input = array.values().as_ptr_range();
        let input = input.start as usize..input.end as usize;
        for decode in engines() {
            let views = ArrowOptions { strings: StringColumns::Views, decode, ..ArrowOptions::default() };
            let converter = Converter::new(&schema, root, &views).unwrap();
            let batch = converter.convert_binary(&array).unwrap();
            check_batch(&batch, &messages, &converter, root);
            let mut arrays = Vec::new();
            batch.columns().iter().for_each(|c| view_arrays(c, &mut arrays));
            let mut pointed = 0;
            for a in &arrays {
                let (own, shared) = match a.data_type() {
                    DataType::Utf8View => a.as_string_view().data_buffers().split_first().unwrap(),
                    _ => a.as_binary_view().data_buffers().split_first().unwrap(),
                };
                assert!(own.is_empty(), "{root}: a string was copied ({} bytes)", own.len());
                for b in shared {
                    let at = b.as_ptr() as usize;
                    assert!(input.contains(&at), "{root}: a view block outside the input");
                    pointed += 1;
                }
            }
            // The random messages hold strings longer than 12 bytes in every schema with strings.
            assert_eq!(arrays.is_empty(), pointed == 0, "{root}: no view points into the input");

            // The same rows as the copying conversion, and as views of copies.
            let offsets = Converter::new(&schema, root, &ArrowOptions { decode, ..Default::default() })
                .unwrap()
                .convert_binary(&array)
                .unwrap();
            let copied = converter.convert(encoded.iter().map(Vec::as_slice)).unwrap();
            for (i, f) in offsets.schema().fields().iter().enumerate() {
                assert_eq!(&cast(batch.column(i), f.data_type()).unwrap(), offsets.column(i), "{root}.{}", f.name());
                assert_eq!(&cast(copied.column(i), f.data_type()).unwrap(), offsets.column(i), "{root}.{}", f.name());
            }
        }
    }
}

/// A projection converts exactly the selected cells of the full conversion, in the
/// selected order, and a nested selection keeps only the selected members.
#[test]
fn projections_convert_the_selected_cells() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xa770_0003);
    let root = "everything3.Everything3";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let (messages, encoded) = random_records(&desc, 50, &mut rng);
    let full = Converter::new(&schema, root, &ArrowOptions::default()).unwrap();
    let full_batch = full.convert(encoded.iter().map(Vec::as_slice)).unwrap();
    let names: Vec<String> = full_batch.schema().fields().iter().map(|f| f.name().clone()).collect();
    // Every single column, then a few pairs in reverse order.
    let mut selections: Vec<Vec<String>> = names.iter().map(|n| vec![n.clone()]).collect();
    for w in names.windows(2).step_by(5) {
        selections.push(vec![w[1].clone(), w[0].clone()]);
    }
    for select in selections {
        let options = ArrowOptions { select: Some(select.clone()), ..ArrowOptions::default() };
        let projected = Converter::new(&schema, root, &options).unwrap();
        let batch = projected.convert(encoded.iter().map(Vec::as_slice)).unwrap();
        assert_eq!(batch.num_columns(), select.len());
        for (i, name) in select.iter().enumerate() {
            let j = names.iter().position(|n| n == name).unwrap();
            assert_eq!(batch.column(i), full_batch.column(j), "{select:?}: column {name}");
            assert_eq!(batch.schema().field(i), full_batch.schema().field(j));
        }
    }
    // Nested: one member of a singular message and one of a repeated message.
    let msg_fields: Vec<FieldDescriptor> = desc
        .fields()
        .filter(|f| !f.is_map() && matches!(f.kind(), Kind::Message(m) if !m.full_name().starts_with("google.")))
        .collect();
    for fd in msg_fields.iter().take(4) {
        let Kind::Message(child) = fd.kind() else { unreachable!() };
        let Some(member) = child.fields().next() else { continue };
        let path = format!("{}.{}", fd.name(), member.name());
        let options = ArrowOptions { select: Some(vec![path.clone()]), ..ArrowOptions::default() };
        let projected = Converter::new(&schema, root, &options).unwrap();
        let batch = projected.convert(encoded.iter().map(Vec::as_slice)).unwrap();
        let inner_fields = match batch.schema().field(0).data_type() {
            DataType::Struct(f) => f.clone(),
            DataType::List(item) => match item.data_type() {
                DataType::Struct(f) => f.clone(),
                t => panic!("{path}: list of {t}"),
            },
            t => panic!("{path}: {t}"),
        };
        assert_eq!(inner_fields.len(), 1, "{path}");
        assert_eq!(inner_fields[0].name(), member.name());
        // The oracle checks the selected cells (it reads the fields the columns name).
        for (row, m) in messages.iter().enumerate() {
            check_row(batch.columns(), batch.schema().fields(), row, m, "", None);
        }
    }
}

#[test]
fn bad_selections_are_exact_errors() {
    let schema = reflect_schema();
    let root = "everything3.Everything3";
    let err = |p: &str| {
        let options = ArrowOptions { select: Some(vec![p.to_owned()]), ..ArrowOptions::default() };
        Converter::new(&schema, root, &options).unwrap_err().to_string()
    };
    assert_eq!(err("nope"), "cannot select `nope`: `everything3.Everything3` has no field `nope`");
    assert_eq!(err("a..b"), "cannot select `a..b`: expected a field name, `#number` or `(extension)` at byte 2");
    let scalar = schema
        .pool()
        .get_message_by_name(root)
        .unwrap()
        .fields()
        .find(|f| f.kind() == Kind::Int32 && !f.is_list())
        .unwrap();
    assert_eq!(
        err(&format!("{}.x", scalar.name())),
        format!("cannot select `{0}.x`: `everything3.Everything3.{0}` is not a message", scalar.name())
    );
    let unknown = Converter::new(&schema, "NoSuchType", &ArrowOptions::default()).unwrap_err();
    assert!(matches!(unknown, ConvertError::Type(_)), "{unknown}");
}

/// `select` follows the one field-path grammar: a JSON name and a `#number` name the same
/// column as the declared name (columns keep the declared name); selectors and extensions
/// are refused, saying why.
#[test]
fn selections_follow_the_field_path_grammar() {
    let schema = reflect_schema();
    let root = "everything3.Everything3";
    let converter = |paths: &[&str]| {
        let select = Some(paths.iter().map(|p| p.to_string()).collect());
        Converter::new(&schema, root, &ArrowOptions { select, ..ArrowOptions::default() })
    };
    let declared = converter(&["f_int32", "f_child.name"]).unwrap();
    for same in [&["fInt32", "fChild.name"][..], &["#3", "#17.#2"], &["f_int32", "fChild.name", "#17.name"]] {
        let other = converter(same).unwrap();
        assert_eq!(other.arrow_schema(), declared.arrow_schema(), "{same:?}");
    }
    let err = |p: &str| converter(&[p]).unwrap_err().to_string();
    assert_eq!(
        err("r_child[0].name"),
        "cannot select `r_child[0].name`: `[0]` selects elements; a column holds the whole field (select `r_child`)"
    );
    assert_eq!(
        err("(everything3.ext)"),
        "cannot select `(everything3.ext)`: `(everything3.ext)` is an extension; columns are declared fields"
    );
    assert_eq!(err("#999"), "cannot select `#999`: `everything3.Everything3` has no field `#999`");
    assert_eq!(err(""), "cannot select ``: empty path");
}

/// Every converted batch of the property schemas writes to Parquet and reads back equal.
#[test]
fn parquet_files_read_back_to_equal_batches() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xa770_0004);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let encoded: Vec<Vec<u8>> =
            (0..40).map(|_| common::random_message(&desc, 3, &mut rng).encode_to_vec()).collect();
        for strings in [StringColumns::Offsets, StringColumns::Views] {
            let converter = Converter::new(&schema, root, &ArrowOptions { strings, ..Default::default() }).unwrap();
            let batch = converter.convert(encoded.iter().map(Vec::as_slice)).unwrap();
            assert_eq!(parquet_round_trip(&batch), batch, "{root} {strings:?}");
        }
    }
}

/// Recursive types are cut where a type would appear more than `max_recursion` times on
/// a path, with a note naming the field.
#[test]
fn recursive_types_are_cut_with_a_note() {
    let schema = Schema::from_proto_source(
        "tree.proto",
        "syntax = \"proto3\"; package t; message Node { int32 v = 1; Node left = 2; repeated Node kids = 3; }",
    )
    .unwrap();
    let options = ArrowOptions { max_recursion: 2, ..ArrowOptions::default() };
    let converter = Converter::new(&schema, "t.Node", &options).unwrap();
    assert_eq!(
        converter.notes(),
        [
            "`left.left` (t.Node) left out: the type recurses more than 2 levels",
            "`left.kids` (t.Node) left out: the type recurses more than 2 levels",
            "`kids.left` (t.Node) left out: the type recurses more than 2 levels",
            "`kids.kids` (t.Node) left out: the type recurses more than 2 levels",
        ]
    );
    assert!(converter.arrow_schema().metadata()["protojit.cut"].contains("`left.left`"));
    // Node { v: 1, left: { v: 2, left: { v: 3 } }, kids: [{ v: 4 }] }
    let bytes = b"\x08\x01\x12\x06\x08\x02\x12\x02\x08\x03\x1a\x02\x08\x04";
    let batch = converter.convert([&bytes[..]]).unwrap();
    let left = batch.column(1).as_struct();
    assert_eq!(left.column(0).as_primitive::<Int32Type>().value(0), 2);
    assert_eq!(left.num_columns(), 1, "left.left and left.kids are cut");
    let kids = batch.column(2).as_list::<i32>().value(0);
    assert_eq!(kids.as_struct().column(0).as_primitive::<Int32Type>().value(0), 4);
}

/// A record that does not decode fails the conversion with its number; a delimited stream
/// goes on past it with `keep_going`, listing it.
#[test]
fn bad_records_are_reported_with_their_number() {
    let schema =
        Schema::from_proto_source("e.proto", "syntax = \"proto3\"; message E { int32 a = 1; string s = 2; }").unwrap();
    let converter = Converter::new(&schema, "E", &ArrowOptions::default()).unwrap();
    let good: &[u8] = b"\x08\x01";
    let bad: &[u8] = b"\x12\x05ab";
    let err = converter.convert([good, bad, good]).unwrap_err();
    assert_eq!(err.to_string(), "record 2: length prefix past the end of the message at byte offset 1");
    let null = BinaryArray::from_opt_vec(vec![Some(good), None]);
    assert_eq!(converter.convert_binary(&null).unwrap_err().to_string(), "record 2 is null");
    // Invalid UTF-8 in a string is refused (Arrow strings hold text).
    let err = converter.convert([&b"\x12\x01\xff"[..]]).unwrap_err();
    assert!(matches!(err, ConvertError::Record(_)), "{err}");

    let mut stream = Vec::new();
    for r in [good, bad, good, good] {
        stream.push(r.len() as u8);
        stream.extend_from_slice(r);
    }
    // Without keep_going: the rows before the bad record, then its error, then the end.
    let mut it = converter.convert_delimited(&stream, 100);
    assert_eq!(it.next().unwrap().unwrap().num_rows(), 1);
    assert_eq!(
        it.next().unwrap().unwrap_err().to_string(),
        "record 2 (stream byte offset 4): length prefix past the end of the message at byte offset 1"
    );
    assert!(it.next().is_none());
    let mut it = converter.convert_delimited(&stream, 100).keep_going(true);
    let batch = it.next().unwrap().unwrap();
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(it.skipped().len(), 1);
    assert_eq!(it.skipped()[0].number, 2);
    // A cut-off stream: the framing error names the record and the prefix offset.
    let results: Vec<_> = converter.convert_delimited(&stream[..stream.len() - 1], 100).keep_going(true).collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].as_ref().unwrap().num_rows(), 2);
    assert_eq!(
        results[1].as_ref().unwrap_err().to_string(),
        "record 4: the length prefix at byte offset 11 announces 2 bytes, only 1 remain"
    );
}

/// The public corpus converts cell for cell (both engines).
#[test]
fn corpus_payloads_convert_to_their_values() {
    let Some(dir) = common::corpus_dir("corpus_payloads_convert_to_their_values") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let desc = schema.pool().get_message_by_name(type_name).unwrap();
        let expected = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
        for decode in engines() {
            let options = ArrowOptions { decode, ..ArrowOptions::default() };
            let converter = Converter::new(&schema, type_name, &options).unwrap();
            let batch = converter.convert([bytes.as_slice()]).unwrap_or_else(|e| panic!("{file}: {e}"));
            check_batch(&batch, std::slice::from_ref(&expected), &converter, file);
        }
    }
}

/// Corrupted records (bytes flipped, cut short, spliced): the converter accepts exactly
/// the records the decoder accepts (with UTF-8 checked on every string) and converts them
/// to what the tree's `to_dynamic()` holds; it never panics. (Where prost-reflect's
/// accept/reject differs from protojit's, FUZZING.md says why.)
#[test]
fn corrupted_records_convert_exactly_when_they_decode() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xa770_0006);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let (_, encoded) = random_records(&desc, 25, &mut rng);
        // Two levels of recursion keep the schema (and the test) small.
        let converter =
            Converter::new(&schema, root, &ArrowOptions { max_recursion: 2, ..ArrowOptions::default() }).unwrap();
        let decoder = schema.decoder_with_options(root, &EngineOptions::default().with_utf8(Utf8Check::All)).unwrap();
        let (mut accepted, mut rejected, mut checked) = (0, 0, 0);
        for bytes in &encoded {
            for _ in 0..5 {
                let mut b = bytes.clone();
                match rng.below(3) {
                    0 if !b.is_empty() => {
                        let i = rng.index(b.len());
                        b[i] ^= 1 << rng.below(8);
                    }
                    1 => b.truncate(rng.index(b.len() + 1)),
                    _ => {
                        let other = rng.pick(&encoded);
                        let at = rng.index(b.len() + 1);
                        b.splice(at..at, other.iter().copied());
                    }
                }
                let arena = Arena::new();
                let expected = decoder.decode(&b, &arena);
                let got = converter.convert([b.as_slice()]);
                match (expected, got) {
                    (Ok(m), Ok(batch)) => {
                        // Unknown fields in the tree (a closed enum's undeclared value, a
                        // wrong wire type) are merged by `to_dynamic`, which may then hold
                        // another value than the tree; the cells are compared where it holds
                        // the tree's.
                        struct Unknowns(usize);
                        impl<'a> protojit::Visitor<'a> for Unknowns {
                            fn unknown(&mut self, _: &'a [u8]) {
                                self.0 += 1;
                            }
                        }
                        let mut unknowns = Unknowns(0);
                        m.visit(&mut unknowns);
                        if unknowns.0 == 0 {
                            check_batch(&batch, std::slice::from_ref(&m.to_dynamic()), &converter, root);
                            checked += 1;
                        }
                        assert_eq!(batch.num_rows(), 1);
                        accepted += 1;
                    }
                    (Err(e), Err(ConvertError::Record(r))) => {
                        assert_eq!(r.source, protojit_arrow::AppendError::Decode(e));
                        rejected += 1;
                    }
                    (Ok(_), Err(e)) => panic!("{root}: the decoder accepts, the converter says {e}"),
                    (Err(e), Ok(_)) => panic!("{root}: the converter accepts, the decoder says {e}"),
                    (Err(_), Err(e)) => panic!("{root}: unexpected error kind {e}"),
                }
            }
        }
        assert!(
            accepted > 10 && rejected > 10 && checked > 5,
            "{root}: {accepted} accepted ({checked} cell by cell), {rejected} rejected"
        );
    }
}

/// A decoder that skips UTF-8 checks cannot fill Arrow `Utf8` columns: every setting but
/// `Utf8Check::All` is an error that says so, instead of being overridden.
#[test]
fn unchecked_strings_are_an_error() {
    let schema =
        Schema::from_proto_source("s.proto", "syntax = \"proto2\"; message S { optional string s = 1; }").unwrap();
    for utf8 in [Utf8Check::Features, Utf8Check::Off] {
        let options = ArrowOptions { decode: EngineOptions::default().with_utf8(utf8), ..ArrowOptions::default() };
        let e = Converter::new(&schema, "S", &options).unwrap_err();
        assert!(matches!(e, ConvertError::Utf8(u) if u == utf8), "{e:?}");
        assert!(e.to_string().contains("give ArrowOptions::decode the policy Utf8Check::All"), "{e}");
    }
    // The default checks every string: a proto2 string that is not UTF-8 is a bad record.
    let converter = Converter::new(&schema, "S", &ArrowOptions::default()).unwrap();
    assert!(matches!(converter.convert([&b"\x0a\x01\xff"[..]]), Err(ConvertError::Record(_))));
    assert_eq!(converter.convert([&b"\x0a\x01a"[..]]).unwrap().num_rows(), 1);
}
