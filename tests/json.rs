//! Proto3 JSON: protojit's output equals prost-reflect's serde JSON (field order included) over the corpus and generated messages, for default and non-default options, except where prost-reflect departs from the mapping.

mod common;

use prost::Message as _;
use prost_reflect::ReflectMessage as _;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor};
use protojit::{Arena, EngineOptions, JsonOptions, MessageRef, Schema};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

// ---------------------------------------------------------------------------------------
// An order-preserving JSON tree, and a comparison that knows which objects are maps

/// JSON with object keys in document order.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<J, E> {
                Ok(J::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<J, E> {
                Ok(J::Num(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<J, E> {
                Ok(J::Num(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<J, E> {
                Ok(J::Num(serde_json::Number::from_f64(v).expect("finite")))
            }
            fn visit_str<E>(self, v: &str) -> Result<J, E> {
                Ok(J::Str(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = a.next_element()? {
                    out.push(v);
                }
                Ok(J::Arr(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, J>()? {
                    out.push((k, v));
                }
                Ok(J::Obj(out))
            }
        }
        d.deserialize_any(V)
    }
}

fn parse(s: &str) -> J {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("invalid JSON ({e}): {s}"))
}

/// What a JSON value stands for, so that map objects compare as sets of keys while message
/// objects must list their fields in the same order.
#[derive(Clone)]
enum Shape {
    Message(MessageDescriptor),
    Field(Kind, bool, bool),
    Value(Kind),
}

fn diff(a: &J, b: &J, shape: &Shape, pool: &prost_reflect::DescriptorPool, path: &str) -> Option<String> {
    match shape {
        Shape::Field(kind, list, map) => {
            if *map {
                let Kind::Message(entry) = kind else { unreachable!() };
                let (J::Obj(x), J::Obj(y)) = (a, b) else { return Some(format!("{path}: map {a:?} vs {b:?}")) };
                if x.len() != y.len() {
                    return Some(format!("{path}: {} vs {} map keys", x.len(), y.len()));
                }
                let vk = entry.map_entry_value_field().kind();
                for (k, v) in x {
                    let Some((_, w)) = y.iter().find(|(k2, _)| k2 == k) else {
                        return Some(format!("{path}: map key {k:?} missing on the right"));
                    };
                    if let Some(d) = diff(v, w, &Shape::Value(vk.clone()), pool, &format!("{path}[{k}]")) {
                        return Some(d);
                    }
                }
                return None;
            }
            if *list {
                let (J::Arr(x), J::Arr(y)) = (a, b) else { return Some(format!("{path}: list {a:?} vs {b:?}")) };
                if x.len() != y.len() {
                    return Some(format!("{path}: {} vs {} elements", x.len(), y.len()));
                }
                for (i, (v, w)) in x.iter().zip(y).enumerate() {
                    if let Some(d) = diff(v, w, &Shape::Value(kind.clone()), pool, &format!("{path}[{i}]")) {
                        return Some(d);
                    }
                }
                return None;
            }
            diff(a, b, &Shape::Value(kind.clone()), pool, path)
        }
        Shape::Value(Kind::Message(m)) => diff(a, b, &Shape::Message(m.clone()), pool, path),
        Shape::Value(_) => (a != b).then(|| format!("{path}: {a:?} vs {b:?}")),
        Shape::Message(desc) => {
            let name = desc.full_name();
            if name == "google.protobuf.Any" {
                let (J::Obj(x), J::Obj(y)) = (a, b) else { return Some(format!("{path}: Any {a:?} vs {b:?}")) };
                let Some((_, J::Str(url))) = x.first() else { return Some(format!("{path}: Any without @type")) };
                let ty = pool.get_message_by_name(url.rsplit_once('/').unwrap().1).unwrap();
                if x.first() != y.first() {
                    return Some(format!("{path}: @type {:?} vs {:?}", x.first(), y.first()));
                }
                // protobuf writes an Any of Empty with no "value" (Empty has no special JSON
                // form); prost-reflect writes `"value": {}`. Exactly that difference is allowed.
                if ty.full_name() == "google.protobuf.Empty" {
                    let theirs = y.len() == 2 && y[1].0 == "value" && y[1].1 == J::Obj(Vec::new());
                    return (x.len() != 1 || !theirs).then(|| format!("{path}: Any of Empty {a:?} vs {b:?}"));
                }
                if ty.full_name().starts_with("google.protobuf.") && x.len() == 2 && x[1].0 == "value" {
                    return diff(&x[1].1, &y[1].1, &Shape::Message(ty), pool, &format!("{path}.value"));
                }
                return diff(&J::Obj(x[1..].to_vec()), &J::Obj(y[1..].to_vec()), &Shape::Message(ty), pool, path);
            }
            // prost-reflect writes a non-finite wrapped float as `null`; the mapping (and
            // protojit) as the number's string form.
            if matches!(name, "google.protobuf.FloatValue" | "google.protobuf.DoubleValue")
                && matches!((a, b), (J::Str(s), J::Null) if ["NaN", "Infinity", "-Infinity"].contains(&s.as_str()))
            {
                return None;
            }
            if name.starts_with("google.protobuf.") && !matches!(a, J::Obj(_)) || is_loose_wkt(name) {
                return loose_diff(a, b, path);
            }
            let (J::Obj(x), J::Obj(y)) = (a, b) else { return Some(format!("{path}: message {a:?} vs {b:?}")) };
            let kx: Vec<&str> = x.iter().map(|(k, _)| k.as_str()).collect();
            let ky: Vec<&str> = y.iter().map(|(k, _)| k.as_str()).collect();
            if kx != ky {
                return Some(format!("{path}: fields {kx:?} vs {ky:?}"));
            }
            for ((k, v), (_, w)) in x.iter().zip(y) {
                let shape = field_shape(desc, k, pool);
                if let Some(d) = diff(v, w, &shape, pool, &format!("{path}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
    }
}

fn is_loose_wkt(name: &str) -> bool {
    matches!(
        name,
        "google.protobuf.Struct" | "google.protobuf.Value" | "google.protobuf.ListValue" | "google.protobuf.Empty"
    )
}

/// Equality where every object is a map (the inside of Struct/Value/ListValue).
fn loose_diff(a: &J, b: &J, path: &str) -> Option<String> {
    match (a, b) {
        (J::Obj(x), J::Obj(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} vs {} keys", x.len(), y.len()));
            }
            for (k, v) in x {
                let Some((_, w)) = y.iter().find(|(k2, _)| k2 == k) else {
                    return Some(format!("{path}: key {k:?} missing"));
                };
                if let Some(d) = loose_diff(v, w, &format!("{path}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        (J::Arr(x), J::Arr(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (v, w))| loose_diff(v, w, &format!("{path}[{i}]")))
        }
        _ => (a != b).then(|| format!("{path}: {a:?} vs {b:?}")),
    }
}

fn field_shape(desc: &MessageDescriptor, key: &str, pool: &prost_reflect::DescriptorPool) -> Shape {
    if let Some(ext) = key.strip_prefix('[').and_then(|k| k.strip_suffix(']')) {
        let e = pool.get_extension_by_name(ext).unwrap_or_else(|| panic!("no extension {ext}"));
        return Shape::Field(e.kind(), e.is_list(), e.is_map());
    }
    let f = desc
        .get_field_by_json_name(key)
        .or_else(|| desc.get_field_by_name(key))
        .unwrap_or_else(|| panic!("no field {key} in {}", desc.full_name()));
    Shape::Field(f.kind(), f.is_list(), f.is_map())
}

// ---------------------------------------------------------------------------------------
// The differential check

const OPTIONS: [JsonOptions; 4] = [
    JsonOptions::new(),
    JsonOptions::new().emit_defaults(true),
    JsonOptions::new().use_proto_field_name(true).use_enum_numbers(true),
    JsonOptions::new().emit_defaults(true).stringify_64_bit_integers(false).use_proto_field_name(true),
];

fn prost_reflect_json(msg: &DynamicMessage, options: &JsonOptions) -> Result<String, String> {
    let mut out = Vec::new();
    msg.serialize_with_options(&mut serde_json::Serializer::new(&mut out), &options.to_prost_reflect())
        .map(|_| String::from_utf8(out).unwrap())
        .map_err(|e| e.to_string())
}

/// Compares protojit's JSON of `msg` with prost-reflect's of `expected` for every option
/// set; returns how many comparisons had JSON on both sides (the rest errored on both).
fn check_json(msg: &MessageRef<'_>, expected: &DynamicMessage, what: &str) -> usize {
    let pool = expected.descriptor().parent_pool().clone();
    let mut compared = 0;
    for options in &OPTIONS {
        let ours = msg.to_json_string(options);
        let theirs = prost_reflect_json(expected, options);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => {
                // Byte-identical, or (with maps, which prost-reflect writes in hash order)
                // the same JSON with message fields in the same order.
                if a != b {
                    if let Some(d) = diff(&parse(a), &parse(b), &Shape::Message(expected.descriptor()), &pool, "") {
                        panic!("{what} {options:?}: JSON differs at {d}\nprotojit:      {a}\nprost-reflect: {b}");
                    }
                }
                compared += 1;
                if a.len() < 20_000 {
                    // The pretty form is the same JSON.
                    let pretty = msg.to_json_string_pretty(options).unwrap();
                    assert_eq!(parse(&pretty), parse(a), "{what}: pretty JSON");
                }
            }
            // protobuf refuses a Timestamp whose nanos are outside 0..=999999999 and a Duration
            // whose nanos and seconds differ in sign (conformance's TimestampProtoNegativeNanos,
            // DurationProtoNanosWrongSign, ...); prost-reflect normalises them. protojit follows
            // protobuf there.
            (Err(a), _)
                if matches!(
                    a.to_string().as_str(),
                    "timestamp nanos out of range (0 to 999999999)" | "duration nanos and seconds have opposite signs"
                ) => {}
            (Err(a), Err(b)) => {
                // Same reason on both sides (protojit mirrors prost-reflect's messages).
                assert_eq!(a.to_string(), *b, "{what} {options:?}: both reject, for different reasons");
            }
            _ => panic!("{what} {options:?}: protojit {ours:?} vs prost-reflect {theirs:?}"),
        }
    }
    compared
}

#[test]
fn corpus_json_matches_prost_reflect() {
    let Some(dir) = common::corpus_dir("corpus_json_matches_prost_reflect") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let desc = schema.pool().get_message_by_name(type_name).unwrap();
        let expected = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
        for engine in common::ENGINES {
            let decoder = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(engine)).unwrap();
            let arena = Arena::new();
            let msg = decoder.decode(&bytes, &arena).unwrap();
            let compared = check_json(&msg, &expected, &format!("{file} ({engine:?})"));
            assert_eq!(compared, OPTIONS.len(), "{file}: corpus messages all have a JSON form");
        }
    }
}

#[test]
fn generated_json_matches_prost_reflect() {
    let schema = common::reflect_schema();
    let mut compared = 0;
    let mut total = 0;
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoders: Vec<_> = common::ENGINES
            .iter()
            .map(|&e| schema.decoder_with_options(root, &EngineOptions::default().with_kind(e)).unwrap())
            .collect();
        for seed in 0..200u64 {
            let mut rng = common::Rng(seed);
            let generated = common::random_message(&desc, 3, &mut rng);
            let bytes = generated.encode_to_vec();
            let expected = DynamicMessage::decode(desc.clone(), bytes.as_slice()).unwrap();
            for decoder in &decoders {
                let arena = Arena::new();
                let msg = decoder.decode(&bytes, &arena).unwrap();
                compared += check_json(&msg, &expected, &format!("{root} seed {seed}"));
                total += OPTIONS.len();
            }
        }
    }
    // Both outcomes are exercised: most messages have JSON, some (out-of-range
    // timestamps, NaN in a Value, unresolvable Any) have none.
    assert!(compared > total / 2 && compared < total, "{compared} of {total} had JSON");
}

// ---------------------------------------------------------------------------------------
// Exact output for hand-made cases

fn one(schema: &Schema, ty: &str, bytes: &[u8], options: &JsonOptions) -> String {
    let decoder = schema.decoder(ty).unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(bytes, &arena).unwrap();
    msg.to_json_string(options).unwrap()
}

#[test]
fn scalars_names_and_options() {
    let schema = Schema::from_proto_source(
        "j.proto",
        r#"syntax = "proto3";
        enum E { E_ZERO = 0; E_ONE = 1; }
        message M { int64 big_num = 1; double d = 2; bytes b = 3; E e = 4; map<int32, string> m = 5; float f = 6; }"#,
    )
    .unwrap();
    let bytes = [
        0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, // big_num = -1
        0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f, // d = NaN
        0x1a, 0x02, 0xfb, 0xff, // b
        0x20, 0x07, // e = 7 (undeclared)
        0x2a, 0x05, 0x08, 0x02, 0x12, 0x01, b'b', // m[2] = "b"
        0x2a, 0x05, 0x08, 0x01, 0x12, 0x01, b'a', // m[1] = "a"
        0x35, 0xcd, 0xcc, 0xcc, 0x3d, // f = 0.1
    ];
    assert_eq!(
        one(&schema, "M", &bytes, &JsonOptions::default()),
        r#"{"bigNum":"-1","d":"NaN","b":"+/8=","e":7,"m":{"1":"a","2":"b"},"f":0.1}"#
    );
    assert_eq!(
        one(&schema, "M", &bytes, &JsonOptions::new().use_proto_field_name(true).stringify_64_bit_integers(false)),
        r#"{"big_num":-1,"d":"NaN","b":"+/8=","e":7,"m":{"1":"a","2":"b"},"f":0.1}"#
    );
    assert_eq!(one(&schema, "M", &[0x20, 0x01], &JsonOptions::default()), r#"{"e":"E_ONE"}"#);
    assert_eq!(one(&schema, "M", &[0x20, 0x01], &JsonOptions::new().use_enum_numbers(true)), r#"{"e":1}"#);
    assert_eq!(
        one(&schema, "M", &[], &JsonOptions::new().emit_defaults(true)),
        r#"{"bigNum":"0","d":0.0,"b":"","e":"E_ZERO","m":{},"f":0.0}"#
    );
}

#[test]
fn well_known_types_have_their_special_forms() {
    let schema = common::reflect_schema();
    let desc = schema.pool().get_message_by_name("reflectwkt.Wkt").unwrap();
    let json = r#"{
        "ts": "2024-02-29T12:00:00.500Z", "dur": "-1.000001s", "mask": "fooBar,a.bC",
        "st": {"k": [1, "x", null, true, {"n": {}}]}, "val": 2.5, "lv": [],
        "any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "3s"},
        "empty": {}, "wDouble": 1.5, "wInt64": "-7", "wBytes": "AAE=", "wString": "s",
        "rAny": [{"@type": "type.googleapis.com/everything3.Child", "id": 4, "name": "kid"}],
        "null": null, "nulls": [null], "level": "LEVEL_HIGH", "oInt": 0, "snakeCaseName": "y"
    }"#;
    let mut de = serde_json::Deserializer::from_str(json);
    let dm = DynamicMessage::deserialize(desc.clone(), &mut de).unwrap();
    let bytes = dm.encode_to_vec();
    let out = one(&schema, "reflectwkt.Wkt", &bytes, &JsonOptions::default());
    assert_eq!(
        out,
        concat!(
            r#"{"ts":"2024-02-29T12:00:00.500Z","dur":"-1.000001s","mask":"fooBar,a.bC","#,
            r#""st":{"k":[1.0,"x",null,true,{"n":{}}]},"val":2.5,"lv":[],"#,
            r#""any":{"@type":"type.googleapis.com/google.protobuf.Duration","value":"3s"},"#,
            r#""empty":{},"wDouble":1.5,"wInt64":"-7","wString":"s","wBytes":"AAE=","#,
            r#""rAny":[{"@type":"type.googleapis.com/everything3.Child","id":4,"name":"kid"}],"#,
            r#""nulls":[null],"level":"LEVEL_HIGH","oInt":0,"snakeCaseName":"y"}"#
        )
    );
    let decoder = schema.decoder("reflectwkt.Wkt").unwrap();
    let arena = Arena::new();
    check_json(&decoder.decode(&bytes, &arena).unwrap(), &dm, "hand-made well-known types");
}

#[test]
fn well_known_types_without_json_form_are_errors() {
    let schema = common::reflect_schema();
    let cases: &[(&[u8], &str)] = &[
        (&[0x0a, 0x0a, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], "timestamp out of range"),
        (&[0x0a, 0x06, 0x10, 0x80, 0x94, 0xeb, 0xdc, 0x03], "timestamp nanos out of range (0 to 999999999)"),
        (
            &[0x0a, 0x0b, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            "timestamp nanos out of range (0 to 999999999)",
        ),
        (
            &[0x12, 0x0d, 0x08, 0x01, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            "duration nanos and seconds have opposite signs",
        ),
        (
            &[0x12, 0x0d, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x01],
            "duration nanos and seconds have opposite signs",
        ),
        (
            &[0x2a, 0x09, 0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f],
            "cannot serialize non-finite double in google.protobuf.Value",
        ),
        (
            &[0x1a, 0x08, 0x0a, 0x06, b'f', b'o', b'o', b'B', b'a', b'r'],
            "cannot roundtrip field name through camelcase",
        ),
        (&[0x3a, 0x03, 0x0a, 0x01, b'x'], "unsupported type url 'x': missing at least one '/'"),
        (&[0x3a, 0x05, 0x0a, 0x03, b'/', b'n', b'o'], "message 'no' not found"),
    ];
    let decoder = schema.decoder("reflectwkt.Wkt").unwrap();
    for (bytes, reason) in cases {
        let arena = Arena::new();
        let msg = decoder.decode(bytes, &arena).unwrap();
        let err = msg.to_json_string(&JsonOptions::default()).unwrap_err();
        assert_eq!(err.to_string(), *reason);
    }
}

#[test]
fn extensions_are_written_by_full_name_after_fields() {
    let schema = common::reflect_schema();
    // req_int32 = 1, ext_int32 (100) = 5, far_string (5000) = "f", ext_bytes (1000) = ["\x01"]
    let bytes = [0x98, 0x01, 0x01, 0xa0, 0x06, 0x05, 0xc2, 0xb8, 0x02, 0x01, b'f', 0xc2, 0x3e, 0x01, 0x01];
    let out = one(&schema, "everything.Everything", &bytes, &JsonOptions::default());
    assert_eq!(out, r#"{"reqInt32":1,"farString":"f","[everything.ext_int32]":5,"[everything.ext_bytes]":["AQ=="]}"#);
}

#[test]
fn values_serialize_on_their_own() {
    let schema = common::reflect_schema();
    let decoder = schema.decoder("everything3.Everything3").unwrap();
    // f_int64 = 9, r_int32 = [1, 2], m_bool[true] = "t"
    let bytes = [0x20, 0x09, 0xda, 0x02, 0x02, 0x01, 0x02, 0x8a, 0x05, 0x05, 0x08, 0x01, 0x12, 0x01, b't'];
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    let o = JsonOptions::default();
    assert_eq!(msg.get("f_int64").unwrap().to_json_string(&o).unwrap(), r#""9""#);
    assert_eq!(msg.get("r_int32").unwrap().to_json(&o).unwrap(), serde_json::json!([1, 2]));
    assert_eq!(msg.get("m_bool").unwrap().to_json(&o).unwrap(), serde_json::json!({"true": "t"}));
    assert_eq!(serde_json::to_string(&msg).unwrap(), msg.to_json_string(&o).unwrap());
    assert_eq!(serde_json::to_string(&msg.json(&o)).unwrap(), msg.to_json_string(&o).unwrap());
}

// ---------------------------------------------------------------------------------------
// Where protojit follows the proto3 JSON mapping (and protoc) rather than prost-reflect

/// `FloatValue` and `DoubleValue` use the JSON form of the number they wrap, so NaN and the
/// infinities are the strings `"NaN"`, `"Infinity"`, `"-Infinity"` (prost-reflect writes
/// `null`, which a JSON parser reads back as an unset wrapper).
#[test]
fn non_finite_wrapped_floats_are_strings() {
    let schema = common::reflect_schema();
    let o = JsonOptions::default();
    let double = |x: f64| [&[0x4a, 0x09, 0x09][..], &x.to_le_bytes()].concat(); // w_double (9) { value (1) }
    let float = |x: f32| [&[0x52, 0x05, 0x0d][..], &x.to_le_bytes()].concat(); // w_float (10) { value (1) }
    for (x, want) in [(f64::NAN, "\"NaN\""), (f64::INFINITY, "\"Infinity\""), (f64::NEG_INFINITY, "\"-Infinity\"")] {
        assert_eq!(one(&schema, "reflectwkt.Wkt", &double(x), &o), format!(r#"{{"wDouble":{want}}}"#));
        assert_eq!(one(&schema, "reflectwkt.Wkt", &float(x as f32), &o), format!(r#"{{"wFloat":{want}}}"#));
    }
    // Finite values are unchanged, and so are non-finite plain fields.
    assert_eq!(one(&schema, "reflectwkt.Wkt", &double(1.5), &o), r#"{"wDouble":1.5}"#);
    let plain = [&[0x09][..], &f64::NEG_INFINITY.to_le_bytes(), &[0x15], &f32::NAN.to_le_bytes()].concat();
    assert_eq!(one(&schema, "everything3.Everything3", &plain, &o), r#"{"fDouble":"-Infinity","fFloat":"NaN"}"#);
}

/// An implicit-presence `float`/`double` is present when its bits are not zero: `-0.0` was
/// on the wire and is written (protoc prints `f_double: -0` for it), like any other value.
#[test]
fn negative_zero_without_presence_is_written() {
    let schema = common::reflect_schema();
    let bytes = [
        &[0x09][..],
        &(-0.0f64).to_le_bytes(), // f_double = -0.0
        &[0x15],
        &(-0.0f32).to_le_bytes(), // f_float = -0.0
    ]
    .concat();
    let o = JsonOptions::default();
    assert_eq!(one(&schema, "everything3.Everything3", &bytes, &o), r#"{"fDouble":-0.0,"fFloat":-0.0}"#);
    // Positive zero on the wire is still the default, and skipped.
    let zeros = [&[0x09][..], &0.0f64.to_le_bytes(), &[0x15], &0.0f32.to_le_bytes()].concat();
    assert_eq!(one(&schema, "everything3.Everything3", &zeros, &o), "{}");
    // Inside a wrapper too (its `value` field has no presence either).
    let wrapped = [&[0x4a, 0x09, 0x09][..], &(-0.0f64).to_le_bytes()].concat();
    assert_eq!(one(&schema, "reflectwkt.Wkt", &wrapped, &o), r#"{"wDouble":-0.0}"#);
}

/// The default `Any` (no type URL, no value: legal on the wire, and what an unset `Any`
/// field reads as) is `{}`, as protoc writes it; an `Any` with a value but no type URL still
/// has no JSON form.
#[test]
fn default_any_is_an_empty_object() {
    let schema = common::reflect_schema();
    let o = JsonOptions::default();
    // any (7) present but empty, and one explicit empty type_url and value.
    assert_eq!(one(&schema, "reflectwkt.Wkt", &[0x3a, 0x00], &o), r#"{"any":{}}"#);
    assert_eq!(one(&schema, "reflectwkt.Wkt", &[0x3a, 0x04, 0x0a, 0x00, 0x12, 0x00], &o), r#"{"any":{}}"#);
    // In a list and with emit_defaults.
    assert_eq!(one(&schema, "reflectwkt.Wkt", &[0xaa, 0x01, 0x00], &o), r#"{"rAny":[{}]}"#);
    let all = one(&schema, "reflectwkt.Wkt", &[0x3a, 0x00], &JsonOptions::new().emit_defaults(true));
    assert!(all.contains(r#""any":{}"#), "{all}");
    // A value without a type URL cannot be interpreted.
    let decoder = schema.decoder("reflectwkt.Wkt").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&[0x3a, 0x03, 0x12, 0x01, 0x08], &arena).unwrap();
    let err = msg.to_json_string(&o).unwrap_err();
    assert_eq!(err.to_string(), "unsupported type url '': missing at least one '/'");
}
