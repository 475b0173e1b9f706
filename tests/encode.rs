//! Re-encoding: `decode(encode(decode(x)))` equals `decode(x)` for the corpus and generated messages, with canonical, idempotent bytes.

mod common;

use prost::Message as _;
use prost_reflect::DynamicMessage;
use protojit::{Arena, DecodeOptions, Decoder, MessageRef, Schema};

/// Checks one decoded tree: its encoding has the length `encoded_len` says, decodes back to
/// an equal tree (as a `DynamicMessage`, and in text format when no map has duplicate keys),
/// and re-encodes to the same bytes.
fn check_round_trip(decoder: &Decoder, msg: &MessageRef<'_>, what: &str) {
    let bytes = msg.encode_to_vec();
    assert_eq!(bytes.len(), msg.encoded_len(), "{what}: encoded_len");
    let arena = Arena::new();
    let again = decoder.decode(&bytes, &arena).unwrap_or_else(|e| panic!("{what}: re-encoding does not decode: {e}"));
    if let Some(path) = common::dyn_diff(&again.to_dynamic(), &msg.to_dynamic()) {
        panic!("{what}: round trip differs at {path}");
    }
    assert_eq!(again.to_dynamic_lossy_count(), msg.to_dynamic_lossy_count(), "{what}: unknown fields");
    assert_eq!(
        again.unknown_fields().collect::<Vec<_>>(),
        msg.unknown_fields().collect::<Vec<_>>(),
        "{what}: unknown fields of the root"
    );
    assert_eq!(again.encode_to_vec(), bytes, "{what}: encoding is not canonical (differs on re-encoding)");
}

#[test]
fn corpus_payloads_round_trip() {
    let Some(dir) = common::corpus_dir("corpus_payloads_round_trip") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let input = std::fs::read(dir.join(file)).unwrap();
        for engine in common::ENGINES {
            let decoder = schema.decoder_with(type_name, DecodeOptions::default(), engine).unwrap();
            let arena = Arena::new();
            let msg = decoder.decode(&input, &arena).unwrap();
            check_round_trip(&decoder, &msg, &format!("{file} ({engine:?})"));
        }
    }
}

#[test]
fn generated_messages_round_trip() {
    let schema = common::reflect_schema();
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoders: Vec<Decoder> =
            common::ENGINES.iter().map(|&e| schema.decoder_with(root, DecodeOptions::default(), e).unwrap()).collect();
        for seed in 0..150u64 {
            let mut rng = common::Rng(seed ^ 0x5eed);
            let generated = common::random_message(&desc, 3, &mut rng);
            let input = generated.encode_to_vec();
            for decoder in &decoders {
                let arena = Arena::new();
                let msg = decoder.decode(&input, &arena).unwrap();
                check_round_trip(decoder, &msg, &format!("{root} seed {seed}"));
                // Without maps (hash-ordered in prost-reflect), prost-reflect's encoding is
                // canonical too, and protojit's equals it byte for byte.
                if !has_map(&generated) {
                    assert_eq!(msg.encode_to_vec(), input, "{root} seed {seed}: differs from prost-reflect's encoding");
                }
            }
        }
    }
}

fn has_map(msg: &DynamicMessage) -> bool {
    use prost_reflect::{ReflectMessage, Value};
    fn value_has_map(v: &Value) -> bool {
        match v {
            Value::Map(_) => true,
            Value::Message(m) => has_map(m),
            Value::List(l) => l.iter().any(value_has_map),
            _ => false,
        }
    }
    let _ = msg.descriptor();
    msg.fields().any(|(_, v)| value_has_map(v)) || msg.extensions().any(|(_, v)| value_has_map(v))
}

fn schema(source: &str) -> Schema {
    Schema::from_proto_source("encode_cases.proto", source).unwrap()
}

#[test]
fn canonical_form_orders_packs_dedups_and_keeps_unknowns() {
    let schema = schema(
        r#"
        syntax = "proto3";
        message M {
          repeated int32 packed = 1;
          repeated int32 unpacked = 2 [packed = false];
          map<string, int32> m = 3;
          string s = 4;
          M child = 5;
          optional int32 zero = 6;
          int32 implicit_zero = 7;
        }
        "#,
    );
    for engine in common::ENGINES {
        let decoder = schema.decoder_with("M", DecodeOptions::default(), engine).unwrap();
        let input: &[u8] = &[
            0x22, 0x01, b'x', // s = "x"
            0x08, 0x01, 0x08, 0x96, 0x01, // packed, written unpacked: 1, 150
            0x12, 0x01, 0x07, // unpacked = [7], written packed
            0x1a, 0x05, 0x0a, 0x01, b'k', 0x10, 0x01, // m["k"] = 1
            0x1a, 0x05, 0x0a, 0x01, b'k', 0x10, 0x02, // m["k"] = 2 (wins)
            0xf8, 0x01, 0x05, // unknown field 31 = 5
            0x2a, 0x02, 0x30, 0x00, // child { zero: 0 }
            0x38, 0x00, // implicit_zero = 0 (not written back)
            0x30, 0x00, // zero = 0 (explicit presence: written back)
        ];
        let arena = Arena::new();
        let msg = decoder.decode(input, &arena).unwrap();
        let expected: &[u8] = &[
            0x0a, 0x03, 0x01, 0x96, 0x01, // 1: packed [1, 150]
            0x10, 0x07, // 2: unpacked [7]
            0x1a, 0x05, 0x0a, 0x01, b'k', 0x10, 0x02, // 3: m["k"] = 2, once
            0x22, 0x01, b'x', // 4
            0x2a, 0x02, 0x30, 0x00, // 5: child { zero: 0 }
            0x30, 0x00, // 6: zero = 0
            0xf8, 0x01, 0x05, // unknown fields last
        ];
        assert_eq!(msg.encode_to_vec(), expected, "{engine:?}");
        assert_eq!(msg.encoded_len(), expected.len());
        let mut out = vec![0xaa];
        msg.encode(&mut out);
        assert_eq!(&out[1..], expected, "encode appends");
    }
}

#[test]
fn groups_extensions_and_closed_enums_round_trip() {
    let schema = schema(
        r#"
        syntax = "proto2";
        enum E { A = 1; B = 2; }
        message M {
          optional group G = 1 { optional int32 a = 2; }
          repeated E e = 3 [packed = true];
          map<int32, E> me = 4;
          extensions 100 to 200;
        }
        extend M { optional sint64 ext = 100; repeated fixed32 rext = 101; }
        "#,
    );
    let decoder = schema.decoder("M").unwrap();
    let input: &[u8] = &[
        0x0b, 0x10, 0x05, 0x0c, // G { a: 5 }
        0x1a, 0x03, 0x01, 0x09, 0x02, // e: packed [A, 9 (unknown), B]
        0xa0, 0x06, 0x03, // ext = -2
        0xad, 0x06, 0x01, 0x00, 0x00, 0x00, // rext = [1]
    ];
    let arena = Arena::new();
    let msg = decoder.decode(input, &arena).unwrap();
    assert_eq!(msg.unknown_fields().count(), 1, "the undeclared closed-enum value");
    let expected: &[u8] = &[
        0x0b, 0x10, 0x05, 0x0c, // group, between its tags
        0x1a, 0x02, 0x01, 0x02, // [packed = true]
        0xa0, 0x06, 0x03, // extension 100
        0xad, 0x06, 0x01, 0x00, 0x00, 0x00, // extension 101
        0x18, 0x09, // the unknown value, kept, last
    ];
    assert_eq!(msg.encode_to_vec(), expected);
    check_round_trip(&decoder, &msg, "proto2 groups/extensions");
}

#[test]
fn empty_message_encodes_to_nothing() {
    let schema = schema("syntax = \"proto3\"; message M { int32 a = 1; }");
    let decoder = schema.decoder("M").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&[], &arena).unwrap();
    assert!(msg.encode_to_vec().is_empty());
    assert_eq!(msg.encoded_len(), 0);
}
