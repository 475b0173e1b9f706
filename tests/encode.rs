//! Re-encoding: `decode(encode(decode(x)))` equals `decode(x)` for the corpus and generated messages, with canonical, idempotent bytes.

mod common;

use prost::Message as _;
use prost_reflect::DynamicMessage;
use protojit::{Arena, Decoder, EngineOptions, MessageRef, Schema};

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
            let decoder = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(engine)).unwrap();
            let arena = Arena::new();
            let msg = decoder.decode(&input, &arena).unwrap();
            check_round_trip(&decoder, &msg, &format!("{file} ({engine:?})"));
        }
    }
}

/// A decoder of `root` per engine (`common::ENGINES`).
fn every_engine(schema: &protojit::Schema, root: &str) -> Vec<Decoder> {
    common::ENGINES
        .iter()
        .map(|&e| schema.decoder_with_options(root, &EngineOptions::default().with_kind(e)).unwrap())
        .collect()
}

#[test]
fn generated_messages_round_trip() {
    let schema = common::reflect_schema();
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoders = every_engine(&schema, root);
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
        let decoder = schema.decoder_with_options("M", &EngineOptions::default().with_kind(engine)).unwrap();
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

/// Unknown fields come out in wire order, whether their number is unknown or known with the
/// wrong wire type (both kinds are unknown fields, kept in one list), with every engine and
/// through nested messages.
#[test]
fn unknown_fields_keep_wire_order_with_wrong_wire_types() {
    let schema = schema(
        r#"
        syntax = "proto3";
        message M { int32 a = 1; string s = 2; M child = 3; repeated int32 r = 4; }
        "#,
    );
    let unknowns: &[&[u8]] = &[
        &[0xf8, 0x01, 0x05],             // 31: 5 (unknown number)
        &[0x0d, 0x01, 0x00, 0x00, 0x00], // a as fixed32 (wrong wire type)
        &[0x28, 0x07],                   // 5: 7 (unknown number)
        &[0x10, 0x05],                   // s as a varint (wrong wire type)
        &[0xf8, 0x01, 0x06],             // 31: 6
        &[0x1d, 0x02, 0x00, 0x00, 0x00], // child as fixed32 (wrong wire type)
        &[0x21, 1, 2, 3, 4, 5, 6, 7, 8], // r as fixed64 (wrong wire type)
        &[0x32, 0x01, b'z'],             // 6: "z"
    ];
    let mut body = vec![0x08, 0x01]; // a = 1
    for (i, u) in unknowns.iter().enumerate() {
        body.extend_from_slice(u);
        if i == 3 {
            body.extend_from_slice(&[0x12, 0x01, b'x']); // s = "x", between the unknowns
        }
    }
    // The same fields at the root and inside `child`.
    let mut input = body.clone();
    input.push(0x1a);
    input.push(body.len() as u8);
    input.extend_from_slice(&body);
    let want_body = [&[0x08, 0x01, 0x12, 0x01, b'x'][..], &unknowns.concat()].concat();
    let mut want = [&[0x08, 0x01, 0x12, 0x01, b'x', 0x1a, want_body.len() as u8][..], &want_body].concat();
    want.extend_from_slice(&unknowns.concat());
    for engine in common::ENGINES {
        let decoder = schema.decoder_with_options("M", &EngineOptions::default().with_kind(engine)).unwrap();
        let arena = Arena::new();
        let msg = decoder.decode(&input, &arena).unwrap();
        assert_eq!(msg.unknown_fields().collect::<Vec<_>>(), unknowns, "{engine:?}: unknown fields in wire order");
        assert_eq!(msg.encode_to_vec(), want, "{engine:?}: re-encoding");
        check_round_trip(&decoder, &msg, &format!("wrong wire types ({engine:?})"));
    }
}

/// Generated messages with unknown fields spliced in between their fields (unknown numbers,
/// and known numbers with every wrong wire type, groups included): the unknown fields are
/// read, re-encoded and read again in wire order, with every engine.
#[test]
fn spliced_unknown_fields_keep_wire_order() {
    use prost_reflect::Kind;
    use protojit_arena::wire;
    let schema = common::reflect_schema();
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoders = every_engine(&schema, root);
        let known: Vec<u32> = desc.fields().map(|f| f.number()).collect();
        for seed in 0..300u64 {
            let mut rng = common::Rng(seed ^ 0x0bad);
            let generated = common::random_message(&desc, 2, &mut rng).encode_to_vec();
            let (mut input, mut spliced) = (Vec::new(), Vec::<Vec<u8>>::new());
            let mut pos = 0;
            while pos < generated.len() {
                if rng.one_in(2) {
                    let number = match rng.below(4) {
                        0 | 1 => *rng.pick(&known),
                        2 => 900 + rng.below(90) as u32, // two-byte tags, no field or extension there
                        _ => 20_000 + rng.below(100) as u32, // three-byte tags
                    };
                    // A wire type the field does not take (any, for an unknown number).
                    let own = desc.get_field(number).map(|f| {
                        let packable =
                            f.is_list() && !matches!(f.kind(), Kind::String | Kind::Bytes | Kind::Message(_));
                        let own = match f.kind() {
                            Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => wire::FIXED64,
                            Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => wire::FIXED32,
                            Kind::Message(_) if f.is_group() => wire::SGROUP,
                            Kind::String | Kind::Bytes | Kind::Message(_) => wire::LEN,
                            _ => wire::VARINT,
                        };
                        (own, packable)
                    });
                    let choices: Vec<u8> = [wire::VARINT, wire::FIXED64, wire::LEN, wire::SGROUP, wire::FIXED32]
                        .into_iter()
                        .filter(|&w| own.is_none_or(|(own, packable)| w != own && !(packable && w == wire::LEN)))
                        .collect();
                    let wt = *rng.pick(&choices);
                    let mut span = Vec::new();
                    wire::write_varint(&mut span, (u64::from(number) << 3) | u64::from(wt));
                    match wt {
                        wire::VARINT => span.push(rng.below(128) as u8),
                        wire::FIXED64 => span.extend([7; 8]),
                        wire::FIXED32 => span.extend([9; 4]),
                        wire::LEN => span.extend([2, 0x08, 0x01]),
                        _ => {
                            span.extend([0x08, 0x01]);
                            wire::write_varint(&mut span, (u64::from(number) << 3) | u64::from(wire::EGROUP));
                        }
                    }
                    input.extend_from_slice(&span);
                    spliced.push(span);
                }
                let (number, wt, next) = wire::read_tag(&generated, pos).unwrap();
                let end = common::value_end(&generated, next, number, wt);
                input.extend_from_slice(&generated[pos..end]);
                pos = end;
            }
            for decoder in &decoders {
                let what = format!("{root} seed {seed}");
                let arena = Arena::new();
                let msg = decoder.decode(&input, &arena).unwrap();
                assert_eq!(msg.unknown_fields().collect::<Vec<_>>(), spliced, "{what}: unknown fields in wire order");
                let bytes = msg.encode_to_vec();
                assert!(bytes.ends_with(&spliced.concat()), "{what}: unknown fields re-encoded in wire order");
                check_round_trip(decoder, &msg, &what);
            }
        }
    }
}

/// Re-encoding keeps a proto3 implicit-presence `-0.0` (its bits are not zero, so it was on
/// the wire, as protoc keeps it), and drops `+0.0`.
#[test]
fn negative_zero_without_presence_is_re_encoded() {
    let schema = schema("syntax = \"proto3\"; message M { double d = 1; float f = 2; }");
    let negative = [&[0x09][..], &(-0.0f64).to_le_bytes(), &[0x15], &(-0.0f32).to_le_bytes()].concat();
    let positive = [&[0x09][..], &0.0f64.to_le_bytes(), &[0x15], &0.0f32.to_le_bytes()].concat();
    for engine in common::ENGINES {
        let decoder = schema.decoder_with_options("M", &EngineOptions::default().with_kind(engine)).unwrap();
        let arena = Arena::new();
        assert_eq!(decoder.decode(&negative, &arena).unwrap().encode_to_vec(), negative, "{engine:?}");
        assert_eq!(decoder.decode(&positive, &arena).unwrap().encode_to_vec(), Vec::<u8>::new(), "{engine:?}");
    }
}
