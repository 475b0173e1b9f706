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
    AnyColumns, ArrowOptions, ConvertError, ConvertPath, Converter, EncodeError, Encoder, EnumColumns, Explode,
    MapColumns, RecursionColumns, StringColumns, StructColumns,
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
        any: AnyColumns::Json,
        ..base.clone()
    };
    vec![
        ("oneof_case", ArrowOptions { oneof_case: true, ..base.clone() }),
        ("maps=entries", ArrowOptions { maps: MapColumns::Entries, ..base.clone() }),
        ("large", ArrowOptions { large: true, ..base.clone() }),
        ("enums=string", ArrowOptions { enums: EnumColumns::String, ..base.clone() }),
        ("flatten", ArrowOptions { flatten: true, ..base.clone() }),
        ("any=json", ArrowOptions { any: AnyColumns::Json, ..base.clone() }),
        ("recursion=json", ArrowOptions { recursion: RecursionColumns::Json, ..base.clone() }),
        ("structs=json", ArrowOptions { structs: StructColumns::Json, ..base.clone() }),
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
            if options.recursion == RecursionColumns::Json || options.structs == StructColumns::Json {
                // Proto3 JSON cannot hold every subtree the random records make (an Any
                // of a type the schema lacks): its round trip is tested on records that
                // it holds (recursion_json_holds_the_subtree_past_the_cut).
                continue;
            }
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
            if options.any == AnyColumns::Json {
                // Proto3 JSON holds a NullValue field as `null` whatever its number (the
                // random records give them undeclared ones), so the records come back
                // with such values at NULL_VALUE: once back, they are a fixpoint.
                let again = converter.convert_binary(&messages).unwrap();
                assert_eq!(encoder.encode(&again).unwrap(), messages, "{what}: canonical bytes are a fixpoint");
            } else if options.flatten {
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
    assert!(o.set("explodes", "a").unwrap_err().contains("oneof_case"));
    o.set("explode", "items").unwrap();
    assert_eq!(o.explode, Some(Explode { path: "items".into(), outer: false }));
    o.set("explode_outer", " order.lines ").unwrap();
    assert_eq!(o.explode, Some(Explode { path: "order.lines".into(), outer: true }));
    o.set("explode", "").unwrap();
    assert_eq!(o.explode, None);
    for key in ArrowOptions::MAPPING_OPTIONS.iter().chain(&ArrowOptions::OTHER_OPTIONS) {
        let value = if key.starts_with("explode") {
            "items"
        } else if *key == "maps" {
            "map"
        } else if *key == "enums" {
            "string"
        } else if *key == "any" || *key == "recursion" || *key == "structs" {
            "json"
        } else {
            "true"
        };
        o.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
    }
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

const CART: &str = r#"
    syntax = "proto3";
    package c;
    message Inner { string s = 1; }
    message Item { string sku = 1; int32 qty = 2; Inner inner = 3; }
    message Order { repeated Item lines = 1; string note = 2; }
    message Cart {
      int32 id = 1;
      repeated Item items = 2;
      Order order = 3;
      repeated int32 nums = 4;
      map<string, int32> m = 5;
      oneof k { string a = 6; int32 b = 7; }
    }
"#;

/// Three carts: id 1 with items a, b (and nums 4, 5); id 2 with none (an order without
/// lines); id 3 with item c and an order of lines d, e.
fn carts() -> (Schema, Vec<Vec<u8>>) {
    let schema = Schema::from_proto_source("c.proto", CART).unwrap();
    let cart = schema.pool().get_message_by_name("c.Cart").unwrap();
    let item = schema.pool().get_message_by_name("c.Item").unwrap();
    let order = schema.pool().get_message_by_name("c.Order").unwrap();
    let inner = schema.pool().get_message_by_name("c.Inner").unwrap();
    let make_item = |sku: &str, qty: i32| {
        let mut m = DynamicMessage::new(item.clone());
        m.set_field_by_name("sku", Value::String(sku.into()));
        m.set_field_by_name("qty", Value::I32(qty));
        if qty == 2 {
            let mut i = DynamicMessage::new(inner.clone());
            i.set_field_by_name("s", Value::String("in".into()));
            m.set_field_by_name("inner", Value::Message(i));
        }
        Value::Message(m)
    };
    let mut records = Vec::new();
    let mut r = DynamicMessage::new(cart.clone());
    r.set_field_by_name("id", Value::I32(1));
    r.set_field_by_name("items", Value::List(vec![make_item("a", 1), make_item("b", 2)]));
    r.set_field_by_name("nums", Value::List(vec![Value::I32(4), Value::I32(5)]));
    r.set_field_by_name("a", Value::String("x".into()));
    records.push(r.encode_to_vec());
    let mut r = DynamicMessage::new(cart.clone());
    r.set_field_by_name("id", Value::I32(2));
    let mut o = DynamicMessage::new(order.clone());
    o.set_field_by_name("note", Value::String("empty".into()));
    r.set_field_by_name("order", Value::Message(o));
    records.push(r.encode_to_vec());
    let mut r = DynamicMessage::new(cart);
    r.set_field_by_name("id", Value::I32(3));
    r.set_field_by_name("items", Value::List(vec![make_item("c", 3)]));
    let mut o = DynamicMessage::new(order);
    o.set_field_by_name("lines", Value::List(vec![make_item("d", 4), make_item("e", 5)]));
    r.set_field_by_name("order", Value::Message(o));
    r.set_field_by_name("b", Value::I32(9));
    records.push(r.encode_to_vec());
    (schema, records)
}

fn explode(path: &str, outer: bool) -> ArrowOptions {
    ArrowOptions { explode: Some(Explode { path: path.into(), outer }), ..jit() }
}

fn ints(column: &dyn Array) -> Vec<Option<i32>> {
    column.as_primitive::<Int32Type>().iter().collect()
}

fn strings(column: &dyn Array) -> Vec<Option<&str>> {
    column.as_string::<i32>().iter().collect()
}

/// The converter's count of records without an element, after converting `records`.
fn unexploded(schema: &Schema, options: &ArrowOptions, records: &[Vec<u8>]) -> (RecordBatch, u64) {
    let converter = Converter::new(schema, "c.Cart", options).unwrap();
    let batch = converter.convert(records.iter().map(Vec::as_slice)).unwrap();
    (batch, converter.unexploded_records())
}

#[test]
fn explode_makes_a_row_per_element() {
    let (schema, records) = carts();
    let batch = every_path(&schema, "c.Cart", &explode("items", false), &records, "explode items");
    let arrow = batch.schema();
    let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "items", "order", "nums", "m", "a", "b"]);
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(ints(batch.column(0)), [Some(1), Some(1), Some(3)]);
    // The element is a struct under the field's name, present in every row.
    let field = batch.schema().field(1).clone();
    assert!(matches!(field.data_type(), DataType::Struct(_)) && !field.is_nullable(), "{field:?}");
    let items = batch.column(1).as_struct();
    assert_eq!(strings(items.column(0)), [Some("a"), Some("b"), Some("c")]);
    assert_eq!(ints(items.column(1)), [Some(1), Some(2), Some(3)]);
    // The other columns repeat their record's values: lists, oneof members, nulls.
    let nums = batch.column(3).as_list::<i32>();
    assert_eq!(nums.offsets().lengths().collect::<Vec<_>>(), [2, 2, 0]);
    assert_eq!(strings(batch.column(5)), [Some("x"), Some("x"), None]);
    assert_eq!(ints(batch.column(6)), [None, None, Some(9)]);
    let (_, count) = unexploded(&schema, &explode("items", false), &records);
    assert_eq!(count, 1, "cart 2 has no items");
    // A repeated scalar explodes too, into its values.
    let batch = every_path(&schema, "c.Cart", &explode("nums", false), &records, "explode nums");
    assert_eq!(batch.schema().field(3).data_type(), &DataType::Int32);
    assert_eq!(ints(batch.column(3)), [Some(4), Some(5)]);
    assert_eq!(ints(batch.column(0)), [Some(1), Some(1)]);
}

#[test]
fn explode_outer_keeps_a_row_of_nulls() {
    let (schema, records) = carts();
    let batch = every_path(&schema, "c.Cart", &explode("items", true), &records, "explode_outer items");
    assert_eq!(ints(batch.column(0)), [Some(1), Some(1), Some(2), Some(3)]);
    assert!(batch.schema().field(1).is_nullable());
    let items = batch.column(1).as_struct();
    assert_eq!(items.nulls().map(|n| n.iter().collect::<Vec<_>>()), Some(vec![true, true, false, true]));
    assert_eq!(strings(items.column(0)), [Some("a"), Some("b"), None, Some("c")]);
    let (_, count) = unexploded(&schema, &explode("items", true), &records);
    assert_eq!(count, 1);
}

/// A path through a singular message: the structs on the way are rebuilt around the
/// element; a record whose message is absent or whose list is empty has nothing to
/// explode. With flatten, the element's fields become `path.sub` columns.
#[test]
fn explode_through_messages_and_flattened() {
    let (schema, records) = carts();
    let batch = every_path(&schema, "c.Cart", &explode("order.lines", false), &records, "explode order.lines");
    assert_eq!(ints(batch.column(0)), [Some(3), Some(3)]);
    let order = batch.column(2).as_struct();
    let DataType::Struct(fields) = batch.schema().field(2).data_type().clone() else { panic!() };
    assert_eq!(fields.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["lines", "note"]);
    assert!(matches!(fields[0].data_type(), DataType::Struct(_)));
    assert_eq!(strings(order.column(0).as_struct().column(0)), [Some("d"), Some("e")]);
    let (_, count) = unexploded(&schema, &explode("order.lines", false), &records);
    assert_eq!(count, 2, "cart 1 has no order, cart 2 an order without lines");

    let options = ArrowOptions { flatten: true, oneof_case: true, ..explode("order.lines", true) };
    let batch = every_path(&schema, "c.Cart", &options, &records, "explode_outer order.lines, flattened");
    let arrow = batch.schema();
    let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "id",
            "items",
            "order.lines.sku",
            "order.lines.qty",
            "order.lines.inner.s",
            "order.note",
            "nums",
            "m",
            "a",
            "b",
            "k_case"
        ]
    );
    assert_eq!(ints(batch.column(0)), [Some(1), Some(2), Some(3), Some(3)]);
    assert_eq!(strings(batch.column(2)), [None, None, Some("d"), Some("e")]);
    assert_eq!(strings(batch.column(5)), [None, Some("empty"), Some(""), Some("")]);
    assert_eq!(cases(batch.column(10)), [Some("a".into()), None, Some("b".into()), Some("b".into())]);
    // Other options hold on the element: large lists and strings.
    let options = ArrowOptions { large: true, ..explode("items", false) };
    let batch = every_path(&schema, "c.Cart", &options, &records, "explode items, large");
    let items = batch.column(1).as_struct();
    assert_eq!(items.column(0).as_string::<i64>().iter().collect::<Vec<_>>(), [Some("a"), Some("b"), Some("c")]);
}

#[test]
fn explode_paths_that_name_no_list_are_errors() {
    let (schema, _) = carts();
    for (path, says) in [
        ("nope", "no column `nope`"),
        ("id", "not a repeated field"),
        ("m", "is a map"),
        ("items.sku", "is repeated"),
        ("order.note", "not a repeated field"),
        ("order.nope", "in `order`"),
    ] {
        match Converter::new(&schema, "c.Cart", &explode(path, false)) {
            Err(ConvertError::Explode { path: p, why }) => {
                assert_eq!(p, path);
                assert!(why.contains(says), "{path}: {why}");
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    // A selection that leaves the list out leaves nothing to explode.
    let options = ArrowOptions { select: Some(vec!["id".into()]), ..explode("items", false) };
    assert!(matches!(Converter::new(&schema, "c.Cart", &options), Err(ConvertError::Explode { .. })));
    // With the list selected, its rows.
    let options = ArrowOptions { select: Some(vec!["id".into(), "items.sku".into()]), ..explode("items", false) };
    let (schema2, records) = carts();
    let batch = every_path(&schema2, "c.Cart", &options, &records, "explode a selection");
    assert_eq!(batch.num_rows(), 3);
}

#[test]
fn the_encoder_refuses_explode() {
    let (schema, _) = carts();
    for outer in [false, true] {
        match Encoder::new(&schema, "c.Cart", &explode("items", outer)) {
            Err(EncodeError::NotInvertible { what, .. }) => {
                assert!(what.starts_with(if outer { "explode_outer" } else { "explode " }), "{what}");
                assert!(what.contains("items"));
            }
            other => panic!("{other:?}"),
        }
    }
}

/// The first repeated message field (not a map) of `root`, if any.
fn repeated_message_field(schema: &Schema, root: &str) -> Option<String> {
    let desc = schema.pool().get_message_by_name(root)?;
    let found = desc.fields().find(|f| f.is_list() && matches!(f.kind(), prost_reflect::Kind::Message(_)));
    found.map(|f| f.name().to_owned())
}

/// Random records of the reflection schemas, each root's first repeated message field
/// exploded (inner and outer, alone and with the other options): every path gives the
/// same batch, with a row per element (and one per empty record when outer), the other
/// columns their record's values.
#[test]
fn every_path_gives_the_same_exploded_batch() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0x3a99_0003);
    let mut exploded = 0;
    for root in common::REFLECT_ROOTS {
        let Some(path) = repeated_message_field(&schema, root) else { continue };
        exploded += 1;
        let records = random_records(&schema, root, 60, &mut rng);
        for (name, base) in option_grid().into_iter().filter(|(n, _)| ["flatten", "all", "oneof_case"].contains(n)) {
            let default = Converter::new(&schema, root, &ArrowOptions { explode: None, ..base.clone() }).unwrap();
            let canonical = default.convert(records.iter().map(Vec::as_slice)).unwrap();
            for outer in [false, true] {
                let options = ArrowOptions { explode: Some(Explode { path: path.clone(), outer }), ..base.clone() };
                let what = format!("{root} under {name}, explode{} {path}", if outer { "_outer" } else { "" });
                let batch = every_path(&schema, root, &options, &records, &what);
                let converter = Converter::new(&schema, root, &options).unwrap();
                converter.convert(records.iter().map(Vec::as_slice)).unwrap();
                let lengths: Vec<usize> = {
                    let plain = Converter::new(
                        &schema,
                        root,
                        &ArrowOptions { flatten: false, explode: None, large: false, ..base.clone() },
                    )
                    .unwrap();
                    let b = plain.convert(records.iter().map(Vec::as_slice)).unwrap();
                    let list = b.column_by_name(&path).unwrap().as_list::<i32>();
                    list.offsets().lengths().collect()
                };
                let empty = lengths.iter().filter(|&&n| n == 0).count();
                let elements: usize = lengths.iter().sum();
                assert_eq!(converter.unexploded_records(), empty as u64, "{what}");
                assert_eq!(batch.num_rows(), elements + if outer { empty } else { 0 }, "{what}");
                // A column outside the list holds its record's values on each of its rows.
                let first = canonical.schema().field(0).name().clone();
                if let Some(column) = batch.column_by_name(&first) {
                    let mut rows = Vec::new();
                    for (record, &n) in lengths.iter().enumerate() {
                        let n = if n == 0 { usize::from(outer) } else { n };
                        rows.extend(std::iter::repeat_n(record as u32, n));
                    }
                    let indices = protojit_arrow::arrow_array::UInt32Array::from(rows);
                    let expected = arrow_select::take::take(canonical.column(0), &indices, None).unwrap();
                    assert_eq!(column, &expected, "{what}: {first}");
                }
            }
        }
    }
    assert!(exploded >= 2, "roots with a repeated message field: {exploded}");
}

/// Schema-registry framing: each exploded row carries its record's schema id.
#[test]
fn exploded_rows_keep_their_schema_ids() {
    let (schema, records) = carts();
    // Cart is the file's fourth message: indexes [3].
    let framed: Vec<Vec<u8>> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut f = vec![0];
            f.extend_from_slice(&(100 + i as i32).to_be_bytes());
            f.extend_from_slice(&[2, 6]);
            f.extend_from_slice(r);
            f
        })
        .collect();
    let framing = protojit_arrow::Framing::SchemaRegistry { schema_id_column: Some("sid".into()) };
    for outer in [false, true] {
        let options = ArrowOptions { framing: framing.clone(), ..explode("items", outer) };
        let batch = every_path(&schema, "c.Cart", &options, &framed, "explode, framed");
        let expected: &[i32] = if outer { &[100, 100, 101, 102] } else { &[100, 100, 102] };
        let sid = batch.column_by_name("sid").unwrap().as_primitive::<Int32Type>();
        assert_eq!(sid.values().to_vec(), expected);
        assert_eq!(ints(batch.column(0)), expected.iter().map(|i| Some(i - 99)).collect::<Vec<_>>());
    }
}

const ANY_PROTO: &str = r#"
    syntax = "proto3";
    package a;
    import "google/protobuf/any.proto";
    message Payload { string name = 1; int64 n = 2; }
    message Env {
      int32 id = 1;
      google.protobuf.Any body = 2;
      repeated google.protobuf.Any items = 3;
      map<string, google.protobuf.Any> m = 4;
      Inner inner = 5;
    }
    message Inner { google.protobuf.Any deep = 1; }
"#;

/// `Any` of `url` and `value`.
fn any(schema: &Schema, url: &str, value: &[u8]) -> Value {
    let mut a = DynamicMessage::new(schema.pool().get_message_by_name("google.protobuf.Any").unwrap());
    a.set_field_by_name("type_url", Value::String(url.into()));
    a.set_field_by_name("value", Value::Bytes(value.to_vec().into()));
    Value::Message(a)
}

/// Two envelopes: a body of a known type, items of an unknown type and the empty `Any`,
/// a map value and a nested one; then one with nothing set.
fn envelopes() -> (Schema, Vec<Vec<u8>>) {
    let schema = Schema::from_proto_source("a.proto", ANY_PROTO).unwrap();
    let env = schema.pool().get_message_by_name("a.Env").unwrap();
    let inner = schema.pool().get_message_by_name("a.Inner").unwrap();
    let payload = b"\x0a\x01x\x10\x05"; // a.Payload { name: "x", n: 5 }
    let mut r = DynamicMessage::new(env.clone());
    r.set_field_by_name("id", Value::I32(1));
    r.set_field_by_name("body", any(&schema, "type.googleapis.com/a.Payload", payload));
    r.set_field_by_name(
        "items",
        Value::List(vec![any(&schema, "type.googleapis.com/nope.Missing", b"\x08\x01"), any(&schema, "", b"")]),
    );
    r.set_field_by_name(
        "m",
        Value::Map(HashMap::from([(MapKey::String("k".into()), any(&schema, "x/a.Payload", b""))])),
    );
    let mut i = DynamicMessage::new(inner);
    i.set_field_by_name("deep", any(&schema, "type.googleapis.com/a.Payload", b"\x10\x07"));
    r.set_field_by_name("inner", Value::Message(i));
    let mut records = vec![r.encode_to_vec()];
    records.push(DynamicMessage::new(env).encode_to_vec());
    (schema, records)
}

#[test]
fn any_as_json_is_the_packed_message() {
    let (schema, records) = envelopes();
    let options = ArrowOptions { any: AnyColumns::Json, ..jit() };
    let batch = every_path(&schema, "a.Env", &options, &records, "any=json");
    let arrow = batch.schema();
    let body = arrow.field_with_name("body").unwrap();
    assert_eq!(body.data_type(), &DataType::Utf8);
    assert_eq!(body.metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    assert_eq!(
        strings(batch.column(1)),
        [Some(r#"{"@type":"type.googleapis.com/a.Payload","name":"x","n":"5"}"#), None]
    );
    let items = batch.column(2).as_list::<i32>();
    let DataType::List(item) = arrow.field(2).data_type().clone() else { panic!() };
    assert_eq!(item.metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    assert_eq!(
        strings(items.values().as_ref()),
        [Some(r#"{"@type":"type.googleapis.com/nope.Missing","value":"CAE="}"#), Some("{}")]
    );
    let m = batch.column(3).as_map();
    assert_eq!(strings(m.values().as_ref()), [Some(r#"{"@type":"x/a.Payload"}"#)]);
    let inner = batch.column(4).as_struct();
    assert_eq!(strings(inner.column(0).as_ref()), [Some(r#"{"@type":"type.googleapis.com/a.Payload","n":"7"}"#), None]);
    let converter = Converter::new(&schema, "a.Env", &options).unwrap();
    converter.convert(records.iter().map(Vec::as_slice)).unwrap();
    assert_eq!(converter.unresolved_any(), 1, "nope.Missing");
    // Back: the same records (the unresolved one from its base64 value).
    let encoded = Encoder::new(&schema, "a.Env", &options).unwrap().encode(&batch).unwrap();
    assert_eq!(
        encoded.iter().map(Option::unwrap).collect::<Vec<_>>(),
        records.iter().map(Vec::as_slice).collect::<Vec<_>>()
    );
    // Flattened, the JSON column stays one column; large, LargeUtf8 (still arrow.json).
    let batch = every_path(
        &schema,
        "a.Env",
        &ArrowOptions { flatten: true, large: true, ..options.clone() },
        &records,
        "any=json, flat",
    );
    let arrow = batch.schema();
    let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "body", "items", "m", "inner.deep"]);
    let deep = arrow.field(4);
    assert_eq!(deep.data_type(), &DataType::LargeUtf8);
    assert_eq!(deep.metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    // A selection that keeps half an Any cannot be printed.
    let half = ArrowOptions { select: Some(vec!["body.type_url".into()]), ..options.clone() };
    assert!(matches!(Converter::new(&schema, "a.Env", &half), Err(ConvertError::Schema(_))));
    // Bad JSON back is an error naming the column and row.
    let bad = protojit_arrow::arrow_array::RecordBatch::try_from_iter([(
        "body",
        std::sync::Arc::new(protojit_arrow::arrow_array::StringArray::from(vec![r#"{"@type": 5}"#])) as _,
    )])
    .unwrap();
    let e = Encoder::new(&schema, "a.Env", &options).unwrap().allow_missing_columns(true).encode(&bad).unwrap_err();
    assert!(matches!(e, EncodeError::Json { ref column, row: 0, .. } if column == "body"), "{e}");
}

/// `extensions`: the extensions of `everything.Everything` as `[everything.ext_*]` columns
/// after its fields, null where absent, every path equal (alone, flattened, large); the
/// Encoder refuses them.
#[test]
fn extensions_are_columns_named_by_their_full_name() {
    let schema = reflect_schema();
    let desc = schema.pool().get_message_by_name("everything.Everything").unwrap();
    let mut rng = common::Rng(0x3a99_0004);
    let ext = |name: &str| schema.pool().get_extension_by_name(&format!("everything.{name}")).unwrap();
    let nested = schema.pool().get_message_by_name("everything.Nested").unwrap();
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let mut m = common::random_message(&desc, 2, &mut rng);
            // (Random messages may hold extensions already: these are set or cleared.)
            for name in ["ext_int32", "ext_packed", "ext_nested", "ext_string"] {
                m.clear_extension(&ext(name));
            }
            if i % 3 != 0 {
                m.set_extension(&ext("ext_int32"), Value::I32(i));
                m.set_extension(&ext("ext_packed"), Value::List(vec![Value::I32(-1), Value::I32(i)]));
                let mut n = DynamicMessage::new(nested.clone());
                n.set_field_by_name("id", Value::I32(i * 10));
                m.set_extension(&ext("ext_nested"), Value::Message(n));
            }
            if i % 2 == 0 {
                m.set_extension(&ext("ext_string"), Value::String(format!("s{i}")));
            }
            m.encode_to_vec()
        })
        .collect();
    let options = ArrowOptions { extensions: true, max_recursion: 2, ..jit() };
    let batch = every_path(&schema, "everything.Everything", &options, &records, "extensions");
    let arrow = batch.schema();
    let names: Vec<&str> = arrow.fields().iter().map(|f| f.name().as_str()).collect();
    let first = names.iter().position(|n| n.starts_with('[')).unwrap();
    assert_eq!(
        &names[first..],
        [
            "[everything.ext_int32]",
            "[everything.ext_string]",
            "[everything.ext_nested]",
            "[everything.ext_packed]",
            "[everything.ext_repeated]",
            "[everything.ext_color]",
            "[everything.extgroup]",
            "[everything.ext_bytes]"
        ]
    );
    let column = |name: &str| batch.column_by_name(name).unwrap().clone();
    let ints: Vec<Option<i32>> = column("[everything.ext_int32]").as_primitive::<Int32Type>().iter().collect();
    assert_eq!(ints, (0..40).map(|i| (i % 3 != 0).then_some(i)).collect::<Vec<_>>());
    let strings: Vec<Option<String>> =
        column("[everything.ext_string]").as_string::<i32>().iter().map(|s| s.map(str::to_owned)).collect();
    assert_eq!(strings, (0..40).map(|i| (i % 2 == 0).then(|| format!("s{i}"))).collect::<Vec<_>>());
    let packed = column("[everything.ext_packed]");
    assert_eq!(packed.as_list::<i32>().value(1).as_primitive::<Int32Type>().values().to_vec(), [-1, 1]);
    let nested_ids = column("[everything.ext_nested]");
    assert_eq!(nested_ids.as_struct().column_by_name("id").unwrap().as_primitive::<Int32Type>().value(1), 10);
    assert!(nested_ids.is_null(0));
    // Reshaped like any field.
    let flat = ArrowOptions { flatten: true, large: true, ..options.clone() };
    let batch = every_path(&schema, "everything.Everything", &flat, &records, "extensions, flat");
    assert!(batch.column_by_name("[everything.ext_nested].id").is_some());
    // An extension list explodes (its name is one step of the path).
    let exploded = ArrowOptions {
        explode: Some(Explode { path: "[everything.ext_packed]".into(), outer: false }),
        ..options.clone()
    };
    let batch = every_path(&schema, "everything.Everything", &exploded, &records, "extensions, exploded");
    let values = batch.column_by_name("[everything.ext_packed]").unwrap().as_primitive::<Int32Type>().clone();
    assert_eq!(batch.num_rows(), 2 * (0..40).filter(|i| i % 3 != 0).count());
    assert_eq!(values.values()[..2], [-1, 1]);
    // Without the option, none; the way back refuses them.
    let plain = Converter::new(&schema, "everything.Everything", &ArrowOptions { max_recursion: 2, ..jit() }).unwrap();
    assert!(plain.arrow_schema().fields().iter().all(|f| !f.name().starts_with('[')));
    match Encoder::new(&schema, "everything.Everything", &options) {
        Err(EncodeError::NotInvertible { what, .. }) => assert_eq!(what, "extensions"),
        other => panic!("{other:?}"),
    }
}

const TREE_PROTO: &str = r#"
    syntax = "proto3";
    package t;
    message Node {
      string name = 1;
      Node child = 2;
      repeated Node kids = 3;
      map<string, Node> by_name = 4;
    }
"#;

/// `recursion = json`: past the cut, the subtree as one JSON column (the compiled
/// appenders leave it to the chunked path, with a note); every path equal; the records
/// come back whole, deeper than the columns go.
#[test]
fn recursion_json_holds_the_subtree_past_the_cut() {
    let schema = Schema::from_proto_source("t.proto", TREE_PROTO).unwrap();
    let node = schema.pool().get_message_by_name("t.Node").unwrap();
    let make = |name: &str, child: Option<DynamicMessage>, kids: Vec<DynamicMessage>| {
        let mut m = DynamicMessage::new(node.clone());
        m.set_field_by_name("name", Value::String(name.into()));
        if let Some(c) = child {
            m.set_field_by_name("child", Value::Message(c));
        }
        m.set_field_by_name("kids", Value::List(kids.into_iter().map(Value::Message).collect()));
        m
    };
    let deep = make("a", Some(make("b", Some(make("c", Some(make("d", None, vec![])), vec![])), vec![])), vec![]);
    let mut wide = make("w", None, vec![make("k1", Some(make("k2", None, vec![])), vec![]), make("k3", None, vec![])]);
    wide.set_field_by_name(
        "by_name",
        Value::Map(HashMap::from([(
            MapKey::String("x".into()),
            Value::Message(make("v", Some(make("vv", None, vec![])), vec![])),
        )])),
    );
    let records = vec![deep.encode_to_vec(), wide.encode_to_vec(), make("", None, vec![]).encode_to_vec()];
    let options = ArrowOptions { recursion: RecursionColumns::Json, max_recursion: 2, ..jit() };
    let batch = every_path(&schema, "t.Node", &options, &records, "recursion=json");
    let converter =
        Converter::new(&schema, "t.Node", &ArrowOptions { path: ConvertPath::DirectCompiled, ..options.clone() })
            .unwrap();
    assert_eq!(converter.path(), ConvertPath::Chunked);
    assert!(converter.path_note().unwrap().contains("JSON text"), "{:?}", converter.path_note());
    assert!(converter.notes().iter().any(|n| n.contains("as JSON text")), "{:?}", converter.notes());
    // child.child is the cut: its column holds the JSON of what is below.
    let arrow = batch.schema();
    let child = batch.column(1).as_struct();
    let DataType::Struct(fields) = arrow.field(1).data_type().clone() else { panic!() };
    let cut = fields.iter().position(|f| f.name() == "child").unwrap();
    assert_eq!(fields[cut].data_type(), &DataType::Utf8);
    assert_eq!(fields[cut].metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    assert_eq!(strings(child.column(cut).as_ref()), [Some(r#"{"name":"c","child":{"name":"d"}}"#), None, None]);
    // Kept as JSON through large (LargeUtf8) and flatten.
    let flat = ArrowOptions { large: true, flatten: true, ..options.clone() };
    let flat_batch = every_path(&schema, "t.Node", &flat, &records, "recursion=json, flat");
    let field = flat_batch.schema().field_with_name("child.child").unwrap().clone();
    assert_eq!(field.data_type(), &DataType::LargeUtf8);
    assert_eq!(field.metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    // Back: the whole records, the subtrees from their JSON.
    for options in [&options, &flat] {
        let batch =
            Converter::new(&schema, "t.Node", options).unwrap().convert(records.iter().map(Vec::as_slice)).unwrap();
        let encoded = Encoder::new(&schema, "t.Node", options).unwrap().encode(&batch).unwrap();
        let back: Vec<&[u8]> = encoded.iter().map(Option::unwrap).collect();
        assert_eq!(back, records.iter().map(Vec::as_slice).collect::<Vec<_>>(), "{options:?}");
    }
}

const STRUCT_PROTO: &str = r#"
    syntax = "proto3";
    package s;
    import "google/protobuf/struct.proto";
    message Doc {
      int32 id = 1;
      google.protobuf.Struct attrs = 2;
      google.protobuf.Value v = 3;
      repeated google.protobuf.ListValue lists = 4;
    }
"#;

/// `structs = json`: Struct, Value and ListValue as their proto3 JSON, whole however deep
/// (as structs they are cut at the recursion limit); every path equal; back to the records.
#[test]
fn structs_as_json_are_whole() {
    let schema = Schema::from_proto_source("s.proto", STRUCT_PROTO).unwrap();
    let json = r#"{"id":1,"attrs":{"a":{"b":{"c":[1,"x",true,null]}}},"v":"text","lists":[[1,2],[]]}"#;
    let root = schema.layouts().index_of("s.Doc").unwrap();
    let mut first = Vec::new();
    protojit::json_to_binary(schema.layouts(), root, json.as_bytes(), &Default::default(), &mut first).unwrap();
    let records = vec![first, b"\x08\x02".to_vec()];
    let options = ArrowOptions { structs: StructColumns::Json, ..jit() };
    let batch = every_path(&schema, "s.Doc", &options, &records, "structs=json");
    let arrow = batch.schema();
    for name in ["attrs", "v"] {
        let field = arrow.field_with_name(name).unwrap();
        assert_eq!(field.data_type(), &DataType::Utf8, "{name}");
        assert_eq!(field.metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    }
    assert_eq!(strings(batch.column(1).as_ref()), [Some(r#"{"a":{"b":{"c":[1.0,"x",true,null]}}}"#), None]);
    assert_eq!(strings(batch.column(2).as_ref()), [Some(r#""text""#), None]);
    let lists = batch.column(3).as_list::<i32>();
    assert_eq!(strings(lists.values().as_ref()), [Some("[1.0,2.0]"), Some("[]")]);
    let converter =
        Converter::new(&schema, "s.Doc", &ArrowOptions { path: ConvertPath::DirectCompiled, ..options.clone() })
            .unwrap();
    assert_eq!(converter.path(), ConvertPath::Chunked, "{:?}", converter.path_note());
    let encoded = Encoder::new(&schema, "s.Doc", &options).unwrap().encode(&batch).unwrap();
    assert_eq!(
        encoded.iter().map(Option::unwrap).collect::<Vec<_>>(),
        records.iter().map(Vec::as_slice).collect::<Vec<_>>()
    );
    // Without well-known types, structs as before.
    let plain = Converter::new(&schema, "s.Doc", &ArrowOptions { well_known_types: false, ..options }).unwrap();
    assert!(matches!(plain.arrow_schema().field(1).data_type(), DataType::Struct(_)));
}
