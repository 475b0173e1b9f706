//! The mapping options (`oneof_case`, `maps = entries`, `large`, `enums = string`, `flatten`) and their combinations: every conversion path gives the same batch, the converter's schema is the batches', each option's shape on a hand-written schema, and the encoder turns each shape back into the records.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;

use prost::Message as _;
use prost_reflect::{DynamicMessage, MapKey, Value};
use protojit::{EngineKind, Schema};
use protojit_arrow::arrow_array::cast::AsArray;
use protojit_arrow::arrow_array::types::{Int32Type, Int8Type};
use protojit_arrow::arrow_array::{Array, RecordBatch};
use protojit_arrow::arrow_schema::DataType;
use protojit_arrow::{
    ArrowOptions, ConvertError, ConvertPath, Converter, Encoder, EnumColumns, MapColumns, StringColumns,
};

fn reflect_schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/schemas");
    let files = ["everything.proto", "everything3.proto", "reflect_wkt.proto"].map(|f| dir.join(f));
    Schema::from_proto_files(&files, &[&dir]).expect("the reflection test schemas compile")
}

/// Options with each mapping option alone, then combined (with view strings, structs for
/// the well-known types, a low recursion cut).
fn option_grid() -> Vec<(&'static str, ArrowOptions)> {
    // A cut at 2 keeps the recursive schemas within what the compiled appenders read.
    let base = ArrowOptions {
        decode: ArrowOptions::default().decode.with_kind(EngineKind::Jit),
        max_recursion: 2,
        ..Default::default()
    };
    let all = ArrowOptions {
        oneof_case: true,
        maps: MapColumns::Entries,
        large: true,
        enums: EnumColumns::String,
        flatten: true,
        ..base.clone()
    };
    vec![
        ("oneof_case", ArrowOptions { oneof_case: true, ..base.clone() }),
        ("maps=entries", ArrowOptions { maps: MapColumns::Entries, ..base.clone() }),
        ("large", ArrowOptions { large: true, ..base.clone() }),
        ("enums=string", ArrowOptions { enums: EnumColumns::String, ..base.clone() }),
        ("flatten", ArrowOptions { flatten: true, ..base.clone() }),
        ("flatten+oneof_case", ArrowOptions { flatten: true, oneof_case: true, ..base.clone() }),
        ("large+maps=entries", ArrowOptions { large: true, maps: MapColumns::Entries, ..base.clone() }),
        ("all", all.clone()),
        (
            "all+views+structs",
            ArrowOptions { strings: StringColumns::Views, well_known_types: false, max_recursion: 1, ..all.clone() },
        ),
        ("large+enums=number+flatten", ArrowOptions { large: true, enums: EnumColumns::Number, flatten: true, ..base }),
    ]
}

/// Conversions the compiled appenders ran (the others: columns past what they read).
static COMPILED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

const PATHS: [ConvertPath; 5] = [
    ConvertPath::Auto,
    ConvertPath::Chunked,
    ConvertPath::DirectCompiled,
    ConvertPath::DirectInterpreted,
    ConvertPath::Tree,
];

/// The batch of `records` by every path (each converter's schema checked against it), all
/// equal; returns the tree path's.
fn every_path(schema: &Schema, root: &str, options: &ArrowOptions, records: &[Vec<u8>], what: &str) -> RecordBatch {
    let mut batches = Vec::new();
    for path in PATHS {
        let converter = Converter::new(schema, root, &ArrowOptions { path, ..options.clone() })
            .unwrap_or_else(|e| panic!("{what}: {path:?}: {e}"));
        if path == ConvertPath::DirectCompiled {
            // Compiled before the first record (or not, with the reason), so the
            // conversions below run the code.
            let compiled = converter.wait_for_appender();
            assert_eq!(
                compiled,
                converter.path() == ConvertPath::DirectCompiled,
                "{what}: {:?}",
                converter.path_note()
            );
            COMPILED.fetch_add(u32::from(compiled), std::sync::atomic::Ordering::Relaxed);
        }
        // One batch of all, and the same records appended in runs (chunks) and one by one.
        let batch = converter.convert(records.iter().map(Vec::as_slice)).unwrap();
        assert_eq!(batch.schema(), *converter.arrow_schema(), "{what}: {path:?}: the schema before any data");
        let mut builder = converter.builder();
        for r in records {
            builder.append(r).unwrap();
        }
        assert_eq!(builder.finish().unwrap(), batch, "{what}: {path:?}: one by one");
        let empty = converter.convert(std::iter::empty()).unwrap();
        assert_eq!(empty.schema(), batch.schema(), "{what}: {path:?}: an empty batch");
        batches.push((path, batch));
    }
    let (_, tree) = batches.pop().unwrap();
    for (path, batch) in batches {
        assert_eq!(batch, tree, "{what}: {path:?} against the tree path");
    }
    tree
}

fn random_records(schema: &Schema, root: &str, n: usize, rng: &mut common::Rng) -> Vec<Vec<u8>> {
    let desc = schema.pool().get_message_by_name(root).unwrap();
    (0..n).map(|_| common::random_message(&desc, 3, rng).encode_to_vec()).collect()
}

/// Random records of the reflection schemas (oneofs of every member kind, maps of
/// messages, enums, groups, recursion, the well-known types): under each option and the
/// combinations, every path gives the same batch, whose schema the converter gave first;
/// the batch differs from the default mapping's where the option applies.
#[test]
fn every_path_gives_the_same_batch_under_each_option() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0x3a99_0001);
    for root in common::REFLECT_ROOTS {
        let records = random_records(&schema, root, 60, &mut rng);
        let default = Converter::new(&schema, root, &ArrowOptions::default()).unwrap();
        let canonical = default.convert(records.iter().map(Vec::as_slice)).unwrap();
        for (name, options) in option_grid() {
            let what = format!("{root} under {name}");
            let batch = every_path(&schema, root, &options, &records, &what);
            assert_eq!(batch.num_rows(), canonical.num_rows(), "{what}");
            if options.flatten {
                assert!(batch.schema().fields().iter().any(|f| f.name().contains('.')), "{what}: flattened");
                assert!(batch.schema().fields().iter().all(|f| !matches!(f.data_type(), DataType::Struct(_))));
            }
        }
    }
    assert!(COMPILED.load(std::sync::atomic::Ordering::Relaxed) >= 10, "the compiled appenders ran");
}

/// The way back: under `maps = entries`, `large` and `enums = string` (alone and together)
/// the encoder gives the same bytes as from the default mapping's batch; with the case
/// columns too (they are accepted and not read); a flattened batch comes back as the same
/// batch (a message present with every column null comes back absent, so the fixpoint is
/// the batch, not the bytes).
#[test]
fn each_option_encodes_back_to_the_same_records() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0x3a99_0002);
    for root in common::REFLECT_ROOTS {
        // A Timestamp or Duration past 64-bit nanoseconds converts to a null (counted): in
        // a list, a null item, which has no protobuf form.
        let converter = Converter::new(&schema, root, &ArrowOptions::default()).unwrap();
        let records: Vec<Vec<u8>> = random_records(&schema, root, 80, &mut rng)
            .into_iter()
            .filter(|r| {
                let mut b = converter.builder();
                b.append(r).unwrap();
                b.stats().time_out_of_range == 0
            })
            .collect();
        assert!(records.len() > 40, "{root}: {} records in range", records.len());
        for (name, options) in option_grid() {
            let what = format!("{root} under {name}");
            // The default mapping's batch with the same cut and well-known types.
            let default_options = ArrowOptions {
                max_recursion: options.max_recursion,
                well_known_types: options.well_known_types,
                ..ArrowOptions::default()
            };
            let default = Converter::new(&schema, root, &default_options).unwrap();
            let canonical = default.convert(records.iter().map(Vec::as_slice)).unwrap();
            let expected = Encoder::new(&schema, root, &default_options).unwrap().encode(&canonical).unwrap();
            let converter = Converter::new(&schema, root, &options).unwrap();
            let encoder = Encoder::new(&schema, root, &options).unwrap();
            let batch = converter.convert(records.iter().map(Vec::as_slice)).unwrap();
            let messages = encoder.encode(&batch).unwrap_or_else(|e| panic!("{what}: {e}"));
            if options.flatten {
                let again = converter.convert_binary(&messages).unwrap();
                assert_eq!(again, batch, "{what}: the flattened batch comes back");
                assert_eq!(encoder.encode(&again).unwrap(), messages, "{what}: canonical bytes are a fixpoint");
            } else {
                assert_eq!(messages, expected, "{what}: the same records as from the default mapping");
                let again = converter.convert_binary(&messages).unwrap();
                assert_eq!(again, batch, "{what}: the batch comes back");
            }
        }
    }
}

const PROTO: &str = r#"
    syntax = "proto3";
    package m;
    enum Color { RED = 0; GREEN = 1; BLUE = 2; }
    message Empty {}
    message Inner {
      string s = 1;
      optional int32 n = 2;
      oneof pick { int32 x = 3; Empty e = 4; }
    }
    message Top {
      int32 id = 1;
      Inner inner = 2;
      map<string, int32> tags = 3;
      repeated string names = 4;
      Color color = 5;
      oneof kind { string text = 6; Inner nested = 7; }
      bytes blob = 8;
    }
    message Clash {
      oneof kind { int32 a = 1; int32 b = 2; }
      int32 kind_case = 3;
    }
"#;

/// Three records: `text` set (no `inner`); `nested` set and `inner` with the empty
/// message `e`; neither member (and `inner` with `x`).
fn small() -> (Schema, Vec<Vec<u8>>) {
    let schema = Schema::from_proto_source("m.proto", PROTO).unwrap();
    let top = schema.pool().get_message_by_name("m.Top").unwrap();
    let inner = schema.pool().get_message_by_name("m.Inner").unwrap();
    let empty = schema.pool().get_message_by_name("m.Empty").unwrap();
    let mut records = Vec::new();
    let mut r = DynamicMessage::new(top.clone());
    r.set_field_by_name("id", Value::I32(1));
    r.set_field_by_name("text", Value::String("hello".into()));
    r.set_field_by_name("names", Value::List(vec![Value::String("a".into()), Value::String("b".into())]));
    r.set_field_by_name("tags", Value::Map(HashMap::from([(MapKey::String("k".into()), Value::I32(7))])));
    r.set_field_by_name("color", Value::EnumNumber(1));
    r.set_field_by_name("blob", Value::Bytes(b"xyz"[..].into()));
    records.push(r.encode_to_vec());
    let mut r = DynamicMessage::new(top.clone());
    let mut i = DynamicMessage::new(inner.clone());
    i.set_field_by_name("s", Value::String("in".into()));
    i.set_field_by_name("e", Value::Message(DynamicMessage::new(empty)));
    r.set_field_by_name("inner", Value::Message(i));
    r.set_field_by_name("nested", Value::Message(DynamicMessage::new(inner.clone())));
    r.set_field_by_name("color", Value::EnumNumber(2));
    records.push(r.encode_to_vec());
    let mut r = DynamicMessage::new(top);
    let mut i = DynamicMessage::new(inner);
    i.set_field_by_name("x", Value::I32(5));
    i.set_field_by_name("n", Value::I32(0));
    r.set_field_by_name("inner", Value::Message(i));
    records.push(r.encode_to_vec());
    (schema, records)
}

fn small_batch(options: &ArrowOptions) -> RecordBatch {
    let (schema, records) = small();
    let batch = every_path(&schema, "m.Top", options, &records, "m.Top");
    // And back: the same records as from the default mapping's batch.
    let encoded = Encoder::new(&schema, "m.Top", options).unwrap().encode(&batch).unwrap();
    let messages: Vec<&[u8]> = encoded.iter().map(Option::unwrap).collect();
    assert_eq!(messages, records.iter().map(Vec::as_slice).collect::<Vec<_>>(), "{options:?}: the way back");
    batch
}

fn jit() -> ArrowOptions {
    ArrowOptions { decode: ArrowOptions::default().decode.with_kind(EngineKind::Jit), ..Default::default() }
}

/// The names of a case column's rows (`None`: no member set).
fn cases(column: &dyn Array) -> Vec<Option<String>> {
    let dict = column.as_dictionary::<Int8Type>();
    let names = dict.values().as_string::<i32>();
    dict.keys().iter().map(|k| k.map(|k| names.value(k as usize).to_owned())).collect()
}

#[test]
fn oneof_case_names_the_member_set() {
    let batch = small_batch(&ArrowOptions { oneof_case: true, ..jit() });
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "inner", "tags", "names", "color", "text", "nested", "blob", "kind_case"]);
    let case_type = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    assert_eq!(schema.field(8).data_type(), &case_type);
    assert!(schema.field(8).is_nullable());
    assert_eq!(cases(batch.column(8)), [Some("text".into()), Some("nested".into()), None]);
    // Inside the struct, after its other columns; null where the message is absent; the
    // empty message `e` (a Boolean marker) is seen too.
    let inner = batch.column(1).as_struct();
    let DataType::Struct(fields) = schema.field(1).data_type() else { panic!() };
    assert_eq!(fields.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["s", "n", "x", "e", "pick_case"]);
    assert_eq!(cases(inner.column(4)), [None, Some("e".into()), Some("x".into())]);
    let nested = batch.column(6).as_struct();
    assert_eq!(cases(nested.column(4)), [None, None, None]);
}

#[test]
fn oneof_case_named_like_a_field_is_an_error() {
    let (schema, _) = small();
    let options = ArrowOptions { oneof_case: true, ..ArrowOptions::default() };
    match Converter::new(&schema, "m.Clash", &options) {
        Err(ConvertError::ColumnName { column, .. }) => assert_eq!(column, "kind_case"),
        other => panic!("{other:?}"),
    }
    // Without the option, nothing clashes.
    Converter::new(&schema, "m.Clash", &ArrowOptions::default()).unwrap();
}

#[test]
fn maps_as_entries_are_lists_of_key_value_structs() {
    let canonical = small_batch(&jit());
    let batch = small_batch(&ArrowOptions { maps: MapColumns::Entries, ..jit() });
    let DataType::List(item) = batch.schema().field(2).data_type().clone() else { panic!("{:?}", batch.schema()) };
    let DataType::Struct(kv) = item.data_type() else { panic!() };
    assert_eq!((kv[0].name().as_str(), kv[0].data_type()), ("key", &DataType::Utf8));
    assert_eq!((kv[1].name().as_str(), kv[1].data_type()), ("value", &DataType::Int32));
    assert!(!item.is_nullable() && !batch.schema().field(2).is_nullable());
    let (list, map) = (batch.column(2).as_list::<i32>(), canonical.column(2).as_map());
    assert_eq!(list.offsets(), map.offsets());
    assert_eq!(list.values().as_struct(), map.entries());
}

#[test]
fn large_widens_every_offset() {
    let canonical = small_batch(&jit());
    let batch = small_batch(&ArrowOptions { large: true, ..jit() });
    let schema = batch.schema();
    let DataType::Struct(inner) = schema.field(1).data_type() else { panic!() };
    assert_eq!(inner[0].data_type(), &DataType::LargeUtf8);
    let DataType::LargeList(item) = schema.field(3).data_type() else { panic!("{schema:?}") };
    assert_eq!(item.data_type(), &DataType::LargeUtf8);
    assert_eq!(schema.field(5).data_type(), &DataType::LargeUtf8);
    assert_eq!(schema.field(7).data_type(), &DataType::LargeBinary);
    // A map stays a Map (Arrow's has 32-bit offsets), its strings large; enums stay
    // dictionaries of Utf8 names.
    let DataType::Map(entries, _) = schema.field(2).data_type() else { panic!() };
    let DataType::Struct(kv) = entries.data_type() else { panic!() };
    assert_eq!(kv[0].data_type(), &DataType::LargeUtf8);
    assert_eq!(schema.field(4).data_type(), canonical.schema().field(4).data_type());
    let names = batch.column(3).as_list::<i64>();
    let strings = names.values().as_string::<i64>();
    assert_eq!(strings.iter().collect::<Vec<_>>(), [Some("a"), Some("b")]);
    assert_eq!(names.offsets().iter().copied().collect::<Vec<i64>>(), [0, 2, 2, 2]);
    let text = canonical.column(5).as_string::<i32>();
    assert_eq!(batch.column(5).as_string::<i64>().iter().collect::<Vec<_>>(), text.iter().collect::<Vec<_>>());
    // With maps as entries, a LargeList of them.
    let batch = small_batch(&ArrowOptions { large: true, maps: MapColumns::Entries, ..jit() });
    assert!(matches!(batch.schema().field(2).data_type(), DataType::LargeList(_)));
    // View strings stay views.
    let batch = small_batch(&ArrowOptions { large: true, strings: StringColumns::Views, ..jit() });
    assert_eq!(batch.schema().field(5).data_type(), &DataType::Utf8View);
    let DataType::LargeList(item) = batch.schema().field(3).data_type().clone() else { panic!() };
    assert_eq!(item.data_type(), &DataType::Utf8View);
}

#[test]
fn enums_as_strings_are_plain_names() {
    let batch = small_batch(&ArrowOptions { enums: EnumColumns::String, ..jit() });
    assert_eq!(batch.schema().field(4).data_type(), &DataType::Utf8);
    let colors = batch.column(4).as_string::<i32>();
    assert_eq!(colors.iter().collect::<Vec<_>>(), [Some("GREEN"), Some("BLUE"), Some("RED")]);
    let batch = small_batch(&ArrowOptions { enums: EnumColumns::String, large: true, ..jit() });
    assert_eq!(batch.schema().field(4).data_type(), &DataType::LargeUtf8);
    // The dictionary itself keeps Int32 keys.
    let batch = small_batch(&jit());
    assert_eq!(batch.column(4).as_dictionary::<Int32Type>().keys().len(), 3);
}

#[test]
fn flatten_lifts_singular_messages_to_path_columns() {
    let batch = small_batch(&ArrowOptions { flatten: true, ..jit() });
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "id", "inner.s", "inner.n", "inner.x", "inner.e", "tags", "names", "color", "text", "nested.s", "nested.n",
            "nested.x", "nested.e", "blob"
        ]
    );
    // `inner.s` has no presence, but is null where `inner` is absent (row 0).
    assert!(schema.field(1).is_nullable());
    let s = batch.column(1).as_string::<i32>();
    assert_eq!(s.iter().collect::<Vec<_>>(), [None, Some("in"), Some("")]);
    let n = batch.column(2).as_primitive::<Int32Type>();
    assert_eq!(n.iter().collect::<Vec<_>>(), [None, None, Some(0)]);
    assert_eq!(batch.column(4).as_boolean().iter().collect::<Vec<_>>(), [None, Some(true), None]);
    // Lists and maps stay whole.
    assert!(matches!(schema.field(5).data_type(), DataType::Map(..)));
    assert!(matches!(schema.field(6).data_type(), DataType::List(_)));
    // With the case columns: each after its message's columns, by path.
    let batch = small_batch(&ArrowOptions { flatten: true, oneof_case: true, ..jit() });
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(&names[1..6], ["inner.s", "inner.n", "inner.x", "inner.e", "inner.pick_case"]);
    assert_eq!(names.last(), Some(&"kind_case"));
    assert_eq!(cases(batch.column(5)), [None, Some("e".into()), Some("x".into())]);
}

/// Option names and values as option lists spell them.
#[test]
fn options_are_set_by_name() {
    let mut o = ArrowOptions::default();
    for (k, v) in
        [("oneof_case", "true"), ("maps", "entries"), ("large", "TRUE"), ("enums", "string"), ("flatten", "true")]
    {
        o.set(k, v).unwrap();
    }
    assert!(o.oneof_case && o.large && o.flatten);
    assert_eq!((o.maps, o.enums), (MapColumns::Entries, EnumColumns::String));
    o.set("enums", "number").unwrap();
    assert_eq!(o.enums, EnumColumns::Number);
    o.set("flatten", "false").unwrap();
    assert!(!o.flatten);
    assert!(o.set("maps", "list").unwrap_err().contains("entries"));
    assert!(o.set("large", "yes").is_err());
    assert!(o.set("explode", "a").unwrap_err().contains("oneof_case"));
}

#[test]
fn selected_columns_keep_their_mapping() {
    // A scan selects the columns its query reads: the mapping options hold for them, and a
    // oneof's case column is selected by its name.
    let select = |paths: &[&str]| Some(paths.iter().map(|p| p.to_string()).collect());
    let (schema, records) = small();
    let options = ArrowOptions { enums: EnumColumns::String, select: select(&["color"]), ..jit() };
    let batch = every_path(&schema, "m.Top", &options, &records, "m.Top");
    let colors = batch.column(0).as_string::<i32>();
    assert_eq!(colors.iter().collect::<Vec<_>>(), [Some("GREEN"), Some("BLUE"), Some("RED")]);
    let options = ArrowOptions { oneof_case: true, select: select(&["id", "kind_case"]), ..jit() };
    let batch = every_path(&schema, "m.Top", &options, &records, "m.Top");
    let names: Vec<_> = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert!(names.contains(&"kind_case".to_string()), "{names:?}");
}
