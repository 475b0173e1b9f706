//! `UnknownFields::Discard`: records of a wide type decoded with a narrow schema (as a projection's pruned schema sees them) give the same known fields as when unknown fields are kept, keep none, and fail exactly where keeping fails, in both engines.

mod common;

use common::read_api::dump_fields;
use common::{Rng, ENGINES};
use prost::Message as _;
use protojit::{Arena, DecodeError, Decoder, EngineKind, EngineOptions, MessageRef, Schema, UnknownFields, Visitor};

/// The type records are written with: every wire type, one- and two-byte tags and longer
/// ones, a group, a closed enum, a map, packed and unpacked lists, a nested message.
const WIDE: &str = r#"
    syntax = "proto2";
    package u;
    enum Color { RED = 1; GREEN = 2; BLUE = 3; }
    message Inner { optional int32 x = 1; optional string y = 2; optional sint64 z = 3; repeated fixed32 w = 4; }
    message Rec {
        optional int32 a = 1;
        optional int64 b = 2;
        optional fixed64 c = 3;
        optional fixed32 d = 4;
        optional string e = 5;
        optional bytes f = 6;
        optional Inner g = 7;
        repeated int32 h = 8 [packed = true];
        repeated string i = 9;
        optional Color color = 10;
        map<string, int32> m = 15;
        optional double l = 17;
        optional uint64 j = 20;
        optional group Grp = 21 { optional int32 gx = 1; optional Inner gi = 2; }
        repeated sint32 n = 30;
        optional string k = 300;
        optional Inner deep = 2047;
        optional uint32 far = 100000;
    }
"#;

/// The same type as a reader that selected three fields sees it: everything else is
/// unknown, and the enum declares fewer values (its others are unknown fields too).
const NARROW: &str = r#"
    syntax = "proto2";
    package u;
    enum Color { RED = 1; }
    message Inner { optional int32 x = 1; }
    message Rec {
        optional Inner g = 7;
        optional Color color = 10;
        optional string k = 300;
    }
"#;

/// The decoders of `Rec` over the narrow schema, per engine and unknown-field policy.
fn decoders() -> Vec<(String, Decoder)> {
    let schema = Schema::from_proto_source("u.proto", NARROW).expect("the narrow schema compiles");
    let mut out = Vec::new();
    for kind in ENGINES {
        for unknown in [UnknownFields::Keep, UnknownFields::Discard] {
            let options = EngineOptions::default().with_kind(kind).with_unknown_fields(unknown);
            let d = schema.decoder_with_options("u.Rec", &options).unwrap();
            if kind == EngineKind::Jit && cfg!(target_arch = "x86_64") {
                assert_eq!(d.stats().interpreted(), 0, "every type compiled");
            }
            out.push((format!("{kind:?}/{unknown:?}"), d));
        }
    }
    out
}

/// Counts unknown fields at every level of a tree.
struct CountUnknown(usize);
impl<'a> Visitor<'a> for CountUnknown {
    fn unknown(&mut self, _: &'a [u8]) {
        self.0 += 1;
    }
}

fn unknown_count(m: &MessageRef<'_>) -> usize {
    let mut c = CountUnknown(0);
    m.visit(&mut c);
    c.0
}

/// The known fields of a tree (its unknown fields left out of the dump), at every level.
fn known(m: &MessageRef<'_>) -> Vec<String> {
    let mut out = Vec::new();
    dump_fields(m, &mut out);
    out.retain(|l| !l.trim_start().starts_with('?'));
    out
}

/// Decodes `bytes` with every decoder: all accept (with the same known fields, no unknown
/// field where discarded) or all fail with the same error.
fn check(decoders: &[(String, Decoder)], bytes: &[u8], what: &str) -> Result<usize, DecodeError> {
    let arena = Arena::new();
    let mut first: Option<(String, Result<Vec<String>, DecodeError>)> = None;
    let mut kept = 0;
    for (name, d) in decoders {
        let got = d.decode(bytes, &arena).map(|m| {
            let n = unknown_count(&m);
            if name.ends_with("Discard") {
                assert_eq!(n, 0, "{what}: {name} kept unknown fields");
            } else {
                kept = n;
            }
            known(&m)
        });
        match &first {
            None => first = Some((name.clone(), got)),
            Some((first_name, want)) => assert_eq!(&got, want, "{what}: {name} against {first_name} on {bytes:02x?}"),
        }
    }
    first.expect("decoders").1.map(|_| kept)
}

#[test]
fn discarding_keeps_the_known_fields_and_fails_where_keeping_fails() {
    let decoders = decoders();
    let wide = Schema::from_proto_source("u.proto", WIDE).expect("the wide schema compiles");
    let desc = wide.pool().get_message_by_name("u.Rec").unwrap();
    let mut rng = Rng(0x5eed_0fd1_5ca4);
    let (mut accepted, mut rejected, mut unknown) = (0, 0, 0);
    for case in 0..2000 {
        let msg = common::random_message(&desc, 3, &mut rng);
        let bytes = msg.encode_to_vec();
        unknown += check(&decoders, &bytes, &format!("case {case}")).expect("a whole record decodes");
        // Damaged copies: cut short, a byte changed, a byte inserted.
        for _ in 0..4 {
            let mut bad = bytes.clone();
            if bad.is_empty() {
                break;
            }
            match rng.below(3) {
                0 => bad.truncate(rng.index(bad.len())),
                1 => {
                    let i = rng.index(bad.len());
                    bad[i] = rng.next() as u8;
                }
                _ => {
                    let i = rng.index(bad.len());
                    bad.insert(i, rng.next() as u8);
                }
            }
            match check(&decoders, &bad, &format!("case {case}, damaged")) {
                Ok(_) => accepted += 1,
                Err(_) => rejected += 1,
            }
        }
    }
    // The generator must have exercised both outcomes and many unknown fields.
    assert!(accepted > 100 && rejected > 100, "accepted {accepted}, rejected {rejected}");
    assert!(unknown > 1000, "only {unknown} unknown fields met");
}

#[test]
fn each_wire_form_of_an_unknown_field_is_skipped_or_fails_alike() {
    let decoders = decoders();
    // A known field (k = 300, "ok") after the unknown one shows the skip landed right.
    let then_k = [0xe2, 0x12, 0x02, b'o', b'k'];
    let cases: &[(&str, &[u8])] = &[
        ("varint, one-byte tag", &[0x08, 0x96, 0x01]),
        ("varint of nine bytes", &[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ("varint of ten bytes", &[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ("varint of ten bytes, tenth above 1", &[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        ("varint of eleven bytes", &[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ("fixed64", &[0x19, 1, 2, 3, 4, 5, 6, 7, 8]),
        ("fixed64 cut short", &[0x19, 1, 2, 3]),
        ("fixed32", &[0x25, 1, 2, 3, 4]),
        ("length-delimited", &[0x2a, 0x03, b'a', b'b', b'c']),
        ("length-delimited, two-byte length", &[0x2a, 0x80, 0x01]),
        ("length past the end", &[0x2a, 0x05, b'a']),
        ("length of three bytes", &[0x2a, 0x80, 0x80, 0x01]),
        ("two-byte tag", &[0xa0, 0x01, 0x07]),
        ("two-byte tag, declared number, other wire type", &[0xe0, 0x12, 0x07]),
        ("three-byte tag", &[0x80, 0xb5, 0x18, 0x07]),
        ("group", &[0xab, 0x01, 0x08, 0x01, 0xac, 0x01]),
        ("group never ended", &[0xab, 0x01, 0x08, 0x01]),
        ("stray end-group tag", &[0xac, 0x01]),
        ("field number 0", &[0x00, 0x01]),
        ("wire type 6", &[0x0e, 0x01]),
        ("undeclared value of a closed enum", &[0x50, 0x02]),
        ("declared message, unknown inside", &[0x3a, 0x04, 0x10, 0x05, 0x08, 0x09]),
    ];
    for (what, field) in cases {
        let mut bytes = field.to_vec();
        bytes.extend_from_slice(&then_k);
        let _ = check(&decoders, &bytes, what);
        // At the end of the record too (the skip meets the end, not another tag).
        let _ = check(&decoders, field, what);
    }
    // A whole value behind a three-byte length (20,000 bytes), and one a byte short.
    let mut long = vec![0x2a, 0xa0, 0x9c, 0x01];
    long.resize(4 + 20_000, b'x');
    for field in [&long[..], &long[..long.len() - 1]] {
        let mut bytes = field.to_vec();
        bytes.extend_from_slice(&then_k);
        let _ = check(&decoders, &bytes, "length of three bytes, whole");
        let _ = check(&decoders, field, "length of three bytes, whole");
    }
    // And the outcomes are the ones protobuf gives.
    let arena = Arena::new();
    let (_, discard) = &decoders[3];
    let ok = discard.decode(&[0x2a, 0x03, b'a', b'b', b'c', 0xe2, 0x12, 0x02, b'o', b'k'], &arena).unwrap();
    assert_eq!(ok.unknown_fields().len(), 0);
    assert_eq!(known(&ok), vec!["300=s:\"ok\"".to_owned()]);
    let err = discard.decode(&[0x2a, 0x05, b'a'], &arena).unwrap_err();
    assert_eq!((err.kind, err.offset), (protojit::DecodeErrorKind::LengthOutOfBounds, 1));
}
