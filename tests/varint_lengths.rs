//! Varints of every length (one to ten bytes, canonical and padded with continuation bytes, a tenth byte with high bits set), too long (eleven bytes) and cut by the input's or an embedded message's end, in every kind of varint field and in length prefixes: the compiled decoder and the interpreter give the same tree or the same error (kind and offset).
//!
//! Compiled code reads one-, two- and three-byte varints inline (lengths, tags, enums and
//! bools: one and two), 64-bit fields' varints up to eight bytes from one word, and
//! everything longer through one out-of-line routine (`wire::varint_long`); each boundary
//! between those is a length here, and tags of every length too.

mod common;

use common::read_api::dump_fields;
use common::ENGINES;
use protojit::{Arena, DecodeError, Decoder, EngineOptions, Schema};
use protojit_corpus::{full_varint_value, varint_of_len};

const SCHEMA: &str = r#"
    syntax = "proto2";
    package v;
    enum E { A = 0; B = 1; C = 2; }
    message M {
        optional int32 a = 1;
        optional uint32 b = 2;
        optional sint32 c = 3;
        optional E d = 4;
        optional bool e = 5;
        optional int64 f = 6;
        optional uint64 g = 7;
        optional sint64 h = 8;
        optional string s = 9;
        optional bytes y = 10;
        optional M child = 11;
        repeated int32 p = 12 [packed = true];
        repeated uint64 q = 13;
    }
"#;

/// The varint fields of `M` (field numbers).
const VARINT_FIELDS: [u8; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 13];

fn decoders() -> Vec<(String, Decoder)> {
    let schema = Schema::from_proto_source("v.proto", SCHEMA).expect("the schema compiles");
    ENGINES
        .iter()
        .map(|&kind| {
            let d = schema.decoder_with_options("v.M", &EngineOptions::default().with_kind(kind)).unwrap();
            if kind == protojit::EngineKind::Jit && cfg!(target_arch = "x86_64") {
                assert_eq!(d.stats().interpreted(), 0, "every type compiled");
            }
            (format!("{kind:?}"), d)
        })
        .collect()
}

/// Every engine gives the same fields or the same error; returns whether they accepted.
fn check(decoders: &[(String, Decoder)], bytes: &[u8], what: &str) -> bool {
    let arena = Arena::new();
    let mut first: Option<(&str, Result<Vec<String>, DecodeError>)> = None;
    for (name, d) in decoders {
        let got = d.decode(bytes, &arena).map(|m| {
            let mut out = Vec::new();
            dump_fields(&m, &mut out);
            out
        });
        match &first {
            None => first = Some((name, got)),
            Some((first_name, want)) => {
                assert_eq!(&got, want, "{what}: {name} against {first_name} on {bytes:02x?}")
            }
        }
    }
    first.expect("decoders").1.is_ok()
}

/// A field `number` holding `varint` as a record alone, between two other fields, and
/// inside an embedded message followed by more of the outer message (so that the
/// varint's end is the embedded message's, not the input's).
fn placements(number: u8, varint: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let field = [&[number << 3][..], varint].concat();
    let before = [0x4a, 0x01, b'x']; // s = "x"
    let after = [0x52, 0x02, 0xab, 0xcd]; // y = [ab cd]
    let child = [&[0x5a, field.len() as u8][..], &field, &after].concat();
    vec![("alone", field.clone()), ("between", [&before[..], &field, &after].concat()), ("last in a child", child)]
}

#[test]
fn varints_of_every_length_decode_alike() {
    let decoders = decoders();
    let (mut accepted, mut rejected) = (0, 0);
    for number in VARINT_FIELDS {
        for len in 1..=11 {
            let mut varints = vec![varint_of_len(full_varint_value(len), len), varint_of_len(1, len)];
            if len == 10 {
                // A tenth byte with more than bit 63: its high bits are dropped.
                varints.push([&[0xff; 9][..], &[0x7f]].concat());
            }
            for v in &varints {
                for (place, bytes) in placements(number, v) {
                    let ok = check(&decoders, &bytes, &format!("field {number}, {len} bytes, {place}"));
                    assert_eq!(ok, len <= 10, "field {number}, {len} bytes, {place}: {bytes:02x?}");
                    if ok {
                        accepted += 1;
                    } else {
                        rejected += 1;
                    }
                }
                // Cut after each of its bytes, at the input's end.
                for cut in 1..v.len() {
                    let field = [&[number << 3][..], &v[..cut]].concat();
                    assert!(!check(&decoders, &field, &format!("field {number}, {len} bytes cut to {cut}")));
                    rejected += 1;
                }
            }
        }
    }
    assert!(accepted > 200 && rejected > 200, "{accepted} accepted, {rejected} rejected");
}

#[test]
fn length_prefixes_of_every_length_decode_alike() {
    let decoders = decoders();
    for len in 1..=11 {
        for (number, body) in [(9u8, &b"abc"[..]), (10, &[0xfe, 0xff, 0x00][..]), (11, &[0x08, 0x05][..])] {
            // The length padded to `len` bytes; then the body, and a byte more or less.
            let prefix = varint_of_len(body.len() as u64, len);
            for (what, tail) in [("exact", body.to_vec()), ("short", body[..body.len() - 1].to_vec())] {
                let field = [&[number << 3 | 2][..], &prefix, &tail].concat();
                let ok = check(&decoders, &field, &format!("field {number}, {len}-byte length, {what}"));
                assert_eq!(ok, len <= 10 && what == "exact", "field {number}, {len}-byte length, {what}");
                let nested = [&[0x5a, field.len() as u8][..], &field, &[0x08, 0x01]].concat();
                let ok = check(&decoders, &nested, &format!("field {number}, {len}-byte length, {what}, in a child"));
                assert_eq!(ok, len <= 10 && what == "exact", "field {number}, {len}-byte length, {what}, nested");
            }
        }
        // A packed run whose items take every length.
        let items: Vec<u8> = (1..=10).flat_map(|l| varint_of_len(full_varint_value(l), l)).collect();
        let run = [&[0x62][..], &varint_of_len(items.len() as u64, len), &items].concat();
        check(&decoders, &run, &format!("a packed run, {len}-byte length"));
    }
}

#[test]
fn tags_of_every_length_decode_alike() {
    let decoders = decoders();
    for len in 1..=11 {
        // Field 1 (a one-byte tag) padded to `len` bytes: five at most, as protobuf reads tags.
        let tag = varint_of_len(1 << 3, len);
        for record in [[&tag[..], &[0x05]].concat(), [&tag[..], &[0x05, 0x10, 0x07]].concat()] {
            let ok = check(&decoders, &record, &format!("a {len}-byte tag"));
            assert_eq!(ok, len <= 5, "a {len}-byte tag: {record:02x?}");
        }
        // An unknown field past 2047 (a tag of three bytes or more, padded).
        if len >= 3 {
            let record = [varint_of_len(5000 << 3, len), vec![0x01, 0x08, 0x02]].concat();
            let ok = check(&decoders, &record, &format!("a {len}-byte unknown tag"));
            assert_eq!(ok, len <= 5, "a {len}-byte unknown tag: {record:02x?}");
        }
    }
}
