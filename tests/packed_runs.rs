//! Varints of every shape the decoders have a path for decode in every engine to what
//! prost-reflect decodes: packed runs (words of eight one-byte varints, varints ending inside
//! a word, varints longer than a word, tails under eight bytes, malformed ends) and single
//! fields of every length at every distance from the message's end (compiled code reads
//! three to eight bytes from one load when eight remain).

mod common;

use prost_reflect::DynamicMessage;
use prost_reflect::MessageDescriptor;
use protojit::raw::arena::wire::write_varint;
use protojit::{Arena, DecodeOptions, Decoder, EngineKind, Schema};

const PROTO: &str = r#"
syntax = "proto3";
package packed;

enum E {
  E0 = 0;
  E1 = 1;
  E200 = 200;
}

message S {
  uint64 a = 1;
  int64 b = 2;
  uint32 c = 3;
  sint64 d = 4;
  int32 e = 5;
}

message P {
  repeated int32 i32 = 1;
  repeated int64 i64 = 2;
  repeated uint32 u32 = 3;
  repeated uint64 u64 = 4;
  repeated sint32 s32 = 5;
  repeated sint64 s64 = 6;
  repeated bool b = 7;
  repeated E e = 8;
}
"#;

/// One varint of a random shape: mostly one byte (runs of them fill whole words), else
/// 2-10 bytes, sometimes overlong (zero groups with continuation bits).
fn varint(rng: &mut common::Rng, out: &mut Vec<u8>) {
    match rng.below(10) {
        0..=5 => out.push(rng.below(0x80) as u8),
        6 | 7 => write_varint(out, rng.next() >> rng.below(64)),
        8 => write_varint(out, rng.next() | 1 << 63),
        _ => {
            let extra = 1 + rng.below(4) as usize;
            out.push(rng.below(0x80) as u8 | 0x80);
            out.extend(std::iter::repeat_n(0x80, extra - 1));
            out.push(0);
        }
    }
}

/// A packed run of `field`: the tag, the length, `count` varints, and sometimes a bad end
/// (a cut varint or one longer than ten bytes) inside the length.
fn run(rng: &mut common::Rng, field: u32, count: usize, out: &mut Vec<u8>) {
    let mut body = Vec::new();
    for _ in 0..count {
        varint(rng, &mut body);
    }
    match rng.below(12) {
        0 => body.push(0x80 | rng.below(0x80) as u8),
        1 => body.extend([0xff; 11]),
        _ => {}
    }
    write_varint(out, u64::from(field) << 3 | 2);
    write_varint(out, body.len() as u64);
    out.extend(body);
}

/// One decoder per engine for `name`; the compiled one must really be compiled.
fn decoders(schema: &Schema, name: &str) -> Vec<(EngineKind, Decoder)> {
    let ds: Vec<_> = common::ENGINES
        .iter()
        .map(|&e| (e, schema.decoder_with_options(name, &DecodeOptions::default().with_engine(e)).unwrap()))
        .collect();
    // A silent fallback to the interpreter would leave compiled code untested.
    assert_eq!(ds[1].0, EngineKind::Jit);
    if cfg!(target_arch = "x86_64") {
        assert_eq!(ds[1].1.stats().interpreted(), 0);
    }
    ds
}

/// Decodes `input` in every engine and with prost-reflect: the same accept/reject, the same
/// tree, and (rejected) the same error in both engines. Returns whether it was accepted.
fn check(decoders: &[(EngineKind, Decoder)], desc: &MessageDescriptor, input: &[u8], case: usize) -> bool {
    let want = DynamicMessage::decode(desc.clone(), input);
    let mut errors = Vec::new();
    for (engine, decoder) in decoders {
        let arena = Arena::new();
        match (decoder.decode(input, &arena), &want) {
            (Ok(got), Ok(want)) => {
                if let Some(path) = common::dyn_diff(&got.to_dynamic(), want) {
                    panic!("case {case}, {engine:?}: differs at {path}; input {input:02x?}");
                }
            }
            (Err(e), Err(_)) => errors.push(e),
            (got, want) => panic!(
                "case {case}, {engine:?}: got {:?}, prost-reflect {:?}; input {input:02x?}",
                got.map(|m| m.to_dynamic()),
                want
            ),
        }
    }
    assert!(errors.windows(2).all(|w| w[0] == w[1]), "case {case}: {errors:?}");
    want.is_ok()
}

#[test]
fn packed_runs_decode_like_prost_reflect_in_every_engine() {
    let schema = Schema::from_proto_source("packed.proto", PROTO).unwrap();
    let desc = schema.pool().get_message_by_name("packed.P").unwrap();
    let decoders = decoders(&schema, "packed.P");
    let mut rng = common::Rng(0x9ac4_ed00);
    let (mut accepted, mut rejected) = (0, 0);
    for case in 0..600 {
        let mut input = Vec::new();
        for _ in 0..1 + rng.below(3) {
            // Short runs (compiled code may decode them itself) and long ones (the
            // run decoder), lengths around multiples of eight.
            let count = if rng.one_in(2) { rng.below(12) } else { 8 * rng.below(40) + rng.below(3) } as usize;
            let field = 1 + rng.below(8) as u32;
            run(&mut rng, field, count, &mut input);
        }
        if check(&decoders, &desc, &input, case) {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    // The generator reaches both outcomes often enough to test each.
    assert!(accepted > 100 && rejected > 100, "accepted {accepted}, rejected {rejected}");
}

#[test]
fn single_varints_of_every_length_decode_like_prost_reflect_in_every_engine() {
    let schema = Schema::from_proto_source("packed.proto", PROTO).unwrap();
    let desc = schema.pool().get_message_by_name("packed.S").unwrap();
    let decoders = decoders(&schema, "packed.S");
    let mut rng = common::Rng(0x5157_1e00);
    let (mut accepted, mut rejected) = (0, 0);
    for case in 0..400 {
        let mut input = Vec::new();
        for _ in 0..1 + rng.below(6) {
            write_varint(&mut input, (1 + rng.below(5)) << 3);
            varint(&mut rng, &mut input);
        }
        // Every cut: varints end (or are cut) at every distance from the end.
        let cuts: Vec<usize> = if rng.one_in(3) { (0..=input.len()).collect() } else { vec![input.len()] };
        for cut in cuts {
            if check(&decoders, &desc, &input[..cut], case) {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
    }
    assert!(accepted > 400 && rejected > 100, "accepted {accepted}, rejected {rejected}");
}
