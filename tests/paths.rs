//! Field paths: every grammar form evaluates to the right values, and every parse error says what and where.

mod common;

use prost::Message as _;
use prost_reflect::DynamicMessage;
use protojit::{Arena, EngineOptions, FieldPath, MessageRef, PathError, Schema, Value};

const SCHEMA: &str = r#"
syntax = "proto2";
package p;
message Root {
  optional string name = 1;
  optional Inner inner = 2;
  repeated Inner items = 3;
  map<string, Inner> by_name = 4;
  map<int32, string> labels = 5;
  map<bool, int32> flags = 6;
  repeated int32 nums = 7;
  map<uint64, string> big = 8;
  optional int32 json_name_field = 9;
  optional Level level = 10;
  extensions 100 to 200;
}
message Inner {
  optional int32 id = 1;
  repeated string tags = 2;
  optional Inner next = 3;
}
enum Level { LOW = 0; HIGH = 1; }
extend Root {
  optional int32 ext_id = 100;
  repeated Inner ext_items = 101;
}
"#;

const JSON: &str = r#"{
  "name": "root",
  "items": [{"id": 1, "tags": ["a", "b"]}, {"id": 2}, {"id": 3, "tags": ["c"]}],
  "byName": {"x": {"id": 10}, "q\"y": {"id": 11}},
  "labels": {"-1": "minus one", "3": "three"},
  "flags": {"true": 7},
  "nums": [5, 6, 7],
  "big": {"18446744073709551615": "max"},
  "jsonNameField": 42,
  "level": "HIGH",
  "[p.ext_id]": 99,
  "[p.ext_items]": [{"id": 100}]
}"#;

fn schema() -> Schema {
    Schema::from_proto_source("paths.proto", SCHEMA).unwrap()
}

fn input(schema: &Schema) -> Vec<u8> {
    let desc = schema.pool().get_message_by_name("p.Root").unwrap();
    let mut de = serde_json::Deserializer::from_str(JSON);
    DynamicMessage::deserialize(desc, &mut de).unwrap().encode_to_vec()
}

/// The values at `path` in a compact printed form.
fn show(msg: &MessageRef<'_>, path: &str) -> Vec<String> {
    msg.path(path).unwrap_or_else(|e| panic!("{path}: {e}")).iter().map(show_value).collect()
}

fn show_value(v: &Value<'_>) -> String {
    match v {
        Value::Message(m) => format!("{{{}}}", m.to_text_format().trim_end().replace('\n', " ")),
        Value::List(l) => format!("list of {}", l.len()),
        Value::Map(m) => format!("map of {}", m.len()),
        Value::Enum(e) => e.name().unwrap_or_default().to_owned(),
        other => other.to_json_string(&Default::default()).unwrap(),
    }
}

#[test]
fn every_grammar_form_selects_the_right_values() {
    let schema = schema();
    let bytes = input(&schema);
    for engine in common::ENGINES {
        let decoder = schema.decoder_with_options("p.Root", &EngineOptions::default().with_kind(engine)).unwrap();
        let arena = Arena::new();
        let msg = decoder.decode(&bytes, &arena).unwrap();
        let cases: &[(&str, &[&str])] = &[
            // Field names, JSON names, numbers, extensions.
            ("name", &[r#""root""#]),
            ("jsonNameField", &["42"]),
            ("json_name_field", &["42"]),
            ("#1", &[r#""root""#]),
            ("#100", &["99"]),
            ("(p.ext_id)", &["99"]),
            ("(.p.ext_id)", &["99"]),
            ("(p.ext_items)[0].id", &["100"]),
            ("level", &["HIGH"]),
            // Absent fields read as their defaults, through absent messages too.
            ("inner.id", &["0"]),
            ("inner.next.next.tags", &["list of 0"]),
            // Lists: whole, index, negative index, out of range, every element.
            ("items", &["list of 3"]),
            ("items[0].id", &["1"]),
            ("items[-1].id", &["3"]),
            ("items[-3].id", &["1"]),
            ("items[3]", &[]),
            ("items[-4]", &[]),
            ("items[*].id", &["1", "2", "3"]),
            ("items[*].tags[*]", &[r#""a""#, r#""b""#, r#""c""#]),
            ("items[*].tags[0]", &[r#""a""#, r#""c""#]),
            ("items[ 1 ].id", &["2"]),
            ("nums[*]", &["5", "6", "7"]),
            ("nums[1]", &["6"]),
            // Maps: whole, string / integer / negative / bool / u64 keys, missing keys,
            // entries with .key and .value.
            ("by_name", &["map of 2"]),
            ("by_name[\"x\"].id", &["10"]),
            ("by_name[\"q\\\"y\"].id", &["11"]),
            ("by_name[\"nope\"]", &[]),
            ("by_name[\"nope\"].id", &[]),
            ("labels[3]", &[r#""three""#]),
            ("labels[-1]", &[r#""minus one""#]),
            ("labels[4]", &[]),
            ("flags[true]", &["7"]),
            ("flags[false]", &[]),
            ("big[18446744073709551615]", &[r#""max""#]),
            ("byName[*].value.id", &["10", "11"]),
            ("labels[*].key", &["-1", "3"]),
            ("labels[*].value", &[r#""minus one""#, r#""three""#]),
            ("#4[\"x\"].#1", &["10"]),
        ];
        let sorted_maps = |path: &str, mut got: Vec<String>| {
            // Map entries come in wire order, which the JSON deserializer did not fix.
            if path.contains("[*].key") || path.contains("[*].value") {
                got.sort();
            }
            got
        };
        for (path, expected) in cases {
            let got = sorted_maps(path, show(&msg, path));
            let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            if path.contains("[*].key") || path.contains("[*].value") {
                expected.sort();
            }
            assert_eq!(got, expected, "{path} ({engine:?})");
            // The compiled forms agree with the one-shot form.
            let desc = schema.pool().get_message_by_name("p.Root").unwrap();
            let by_desc = FieldPath::parse(&desc, path).unwrap();
            let li = schema.layouts().index_of("p.Root").unwrap();
            let by_layout = FieldPath::parse_in(schema.layouts(), li, path).unwrap();
            assert_eq!(by_desc, by_layout, "{path}: slots computed from the descriptor match the layout's");
            let values: Vec<String> = by_desc.eval(&msg).iter().map(show_value).collect();
            assert_eq!(sorted_maps(path, values), expected, "{path}: compiled");
            assert_eq!(by_desc.first(&msg).map(|v| show_value(&v)), by_desc.eval(&msg).first().map(show_value));
        }
    }
}

#[test]
fn map_lookups_and_entries_follow_last_key_wins() {
    let schema = schema();
    let decoder = schema.decoder("p.Root").unwrap();
    // labels: {1: "a"}, {2: "b"}, {1: "c"} on the wire.
    let bytes = [
        0x2a, 0x05, 0x08, 0x01, 0x12, 0x01, b'a', //
        0x2a, 0x05, 0x08, 0x02, 0x12, 0x01, b'b', //
        0x2a, 0x05, 0x08, 0x01, 0x12, 0x01, b'c',
    ];
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    assert_eq!(show(&msg, "labels[1]"), [r#""c""#]);
    assert_eq!(show(&msg, "labels[*].key"), ["2", "1"], "one entry per key, the winners in wire order");
    assert_eq!(show(&msg, "labels[*].value"), [r#""b""#, r#""c""#]);
}

#[test]
fn compiled_paths_evaluate_many_messages() {
    let schema = schema();
    let decoder = schema.decoder("p.Root").unwrap();
    let desc = schema.pool().get_message_by_name("p.Root").unwrap();
    let path = FieldPath::parse(&desc, "items[*].id").unwrap();
    assert_eq!(path.to_string(), "items[*].id");
    assert_eq!(path.as_str(), "items[*].id");
    assert_eq!(path.root().full_name(), "p.Root");
    let mut arena = Arena::new();
    for n in 0..20u8 {
        // items: n elements with ids 0..n
        let mut bytes = Vec::new();
        for id in 0..n {
            bytes.extend_from_slice(&[0x1a, 0x02, 0x08, id]);
        }
        arena.reset();
        let msg = decoder.decode(&bytes, &arena).unwrap();
        let mut out = vec![Value::Bool(true)];
        path.eval_into(&msg, &mut out);
        assert!(out.remove(0).as_bool().unwrap(), "eval_into appends");
        let ids: Vec<i32> = out.iter().map(|v| v.as_i32().unwrap()).collect();
        assert_eq!(ids, (0..n as i32).collect::<Vec<_>>());
        let mut sum = 0;
        path.for_each(&msg, |v| sum += v.as_i32().unwrap());
        assert_eq!(sum, (0..n as i32).sum::<i32>());
        assert_eq!(path.first(&msg).map(|v| v.as_i32().unwrap()), (n > 0).then_some(0));
    }
}

fn error(path: &str) -> PathError {
    let schema = schema();
    let desc = schema.pool().get_message_by_name("p.Root").unwrap();
    let err = FieldPath::parse(&desc, path).expect_err(path);
    let decoder = schema.decoder("p.Root").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&[], &arena).unwrap();
    assert_eq!(msg.path(path).expect_err(path), err, "{path}: MessageRef::path reports the same error");
    err
}

#[test]
fn parse_errors_name_the_segment_and_the_message_type() {
    let cases: &[(&str, &str)] = &[
        ("", "empty field path"),
        ("nope", "message type `p.Root` has no field `nope` (segment `nope` of `nope`)"),
        ("inner.nope", "message type `p.Inner` has no field `nope` (segment `nope` of `inner.nope`)"),
        ("items[0].next.bad_name", "message type `p.Inner` has no field `bad_name` (segment `bad_name` of `items[0].next.bad_name`)"),
        ("#99", "message type `p.Root` has no field number 99 (segment `#99` of `#99`)"),
        ("inner.#100", "message type `p.Inner` has no field number 100 (segment `#100` of `inner.#100`)"),
        ("(p.nope)", "no extension `p.nope` extends message type `p.Root` (segment `(p.nope)` of `(p.nope)`)"),
        ("inner.(p.ext_id)", "no extension `p.ext_id` extends message type `p.Inner` (segment `(p.ext_id)` of `inner.(p.ext_id)`)"),
        ("name.x", "`x` selects a field, but this is a `string`, not a message (segment `x` of `name.x`)"),
        ("items.id", "`id` selects a field, but this is a `repeated p.Inner`, not a message (segment `id` of `items.id`)"),
        ("by_name.x", "`x` selects a field, but this is a `map<string, p.Inner>`, not a message (segment `x` of `by_name.x`)"),
        ("nums[0].x", "`x` selects a field, but this is a `int32`, not a message (segment `x` of `nums[0].x`)"),
        ("name[0]", "`[0]` selects elements, but this is a `string`, not a repeated field or map (segment `[0]` of `name[0]`)"),
        ("inner[*]", "`[*]` selects elements, but this is message `p.Inner`, not a repeated field or map (segment `[*]` of `inner[*]`)"),
        ("items[0][0]", "`[0]` selects elements, but this is message `p.Inner`, not a repeated field or map (segment `[0]` of `items[0][0]`)"),
        ("items[x]", "`[x]` is not a list index (an integer, negative from the end, or `*`) (segment `[x]` of `items[x]`)"),
        ("items[\"0\"]", "`[\"0\"]` is not a list index (an integer, negative from the end, or `*`) (segment `[\"0\"]` of `items[\"0\"]`)"),
        ("by_name[3]", "`[3]` is not a key of this map (keys are string, quoted) (segment `[3]` of `by_name[3]`)"),
        ("labels[\"3\"]", "`[\"3\"]` is not a key of this map (keys are int32) (segment `[\"3\"]` of `labels[\"3\"]`)"),
        ("labels[9999999999]", "`[9999999999]` is not a key of this map (keys are int32) (segment `[9999999999]` of `labels[9999999999]`)"),
        ("big[-1]", "`[-1]` is not a key of this map (keys are uint64) (segment `[-1]` of `big[-1]`)"),
        ("flags[yes]", "`[yes]` is not a key of this map (keys are bool) (segment `[yes]` of `flags[yes]`)"),
        ("name..x", "invalid field path `name..x`: expected a field name, `#number` or `(extension)` at byte 5"),
        ("[0]", "invalid field path `[0]`: expected a field name, `#number` or `(extension)` at byte 0"),
        ("name.", "invalid field path `name.`: expected a field name, `#number` or `(extension)` at byte 5"),
        ("#", "invalid field path `#`: expected a field number after `#` at byte 1"),
        ("(p.ext_id", "invalid field path `(p.ext_id`: expected an extension name and `)` at byte 1"),
        ("name x", "invalid field path `name x`: expected `.`, `[` or the end of the path at byte 4"),
        ("items[0]x", "invalid field path `items[0]x`: expected `.`, `[` or the end of the path at byte 8"),
        ("items[0", "invalid field path `items[0`: expected a closing `]` at byte 5"),
        ("by_name[\"x]", "invalid field path `by_name[\"x]`: expected a closing `\"` at byte 7"),
        ("by_name[\"x\"y]", "invalid field path `by_name[\"x\"y]`: expected `]` at byte 11"),
    ];
    for (path, message) in cases {
        assert_eq!(error(path).to_string(), *message, "{path}");
    }
    let e = error("inner.nope");
    assert_eq!((e.segment.as_str(), e.offset), ("nope", 6));
}

#[test]
fn corpus_paths_match_prost_reflect_field_access() {
    let Some(dir) = common::corpus_dir("corpus_paths_match_prost_reflect_field_access") else { return };
    let schema = common::corpus_schema(&dir, "benchmark_message2.proto");
    let bytes = std::fs::read(dir.join("google_message2.payload0.bin")).unwrap();
    let desc = schema.pool().get_message_by_name("benchmarks.proto2.GoogleMessage2").unwrap();
    let dm = DynamicMessage::decode(desc.clone(), bytes.as_slice()).unwrap();
    let decoder = schema.decoder("benchmarks.proto2.GoogleMessage2").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    // group1[*].field11 (float) and field1 (string), compared with prost-reflect.
    let groups = dm.get_field_by_name("group1").unwrap();
    let expected: Vec<f32> = groups
        .as_list()
        .unwrap()
        .iter()
        .map(|g| g.as_message().unwrap().get_field_by_name("field11").unwrap().as_f32().unwrap())
        .collect();
    assert!(!expected.is_empty());
    let got: Vec<f32> = msg.path("group1[*].field11").unwrap().iter().map(|v| v.as_f32().unwrap()).collect();
    assert_eq!(got, expected);
    let name = dm.get_field_by_name("field1").unwrap().as_str().unwrap().to_owned();
    assert_eq!(msg.path("field1").unwrap()[0].as_str(), Some(name.as_str()));
}
