//! Varints of every shape the decoders have a path for decode in every engine to what
//! prost-reflect decodes: packed runs (words of eight one-byte varints, varints ending inside
//! a word, varints longer than a word, tails under eight bytes, malformed ends) and single
//! fields of every length at every distance from the message's end (compiled code reads
//! three to eight bytes from one load when eight remain).

mod common;

use prost_reflect::DynamicMessage;
use prost_reflect::MessageDescriptor;
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema};
use protojit_arena::wire::write_varint;

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
    // A third of the runs are mostly one-byte varints with a rare longer one, so whole
    // words of one-byte varints (stored from one load), words a longer varint interrupts,
    // and tails under eight bytes all come up in runs compiled code decodes itself.
    let small = rng.one_in(3);
    for _ in 0..count {
        if small && !rng.one_in(12) {
            body.push(rng.below(0x80) as u8);
        } else {
            varint(rng, &mut body);
        }
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
        .map(|&e| (e, schema.decoder_with_options(name, &EngineOptions::default().with_kind(e)).unwrap()))
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
            let count = match rng.below(3) {
                0 => rng.below(12),
                1 => rng.below(64),
                _ => 8 * rng.below(40) + rng.below(3),
            } as usize;
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

const CLOSED: &str = r#"
syntax = "proto2";
package closed;

enum Run { R0 = 0; R1 = 1; R2 = 2; R3 = 3; }
enum Gap { G1 = 1; G5 = 5; }

message C {
  optional Run run = 1;
  optional Gap gap = 2;
  repeated Run runs = 3;
  repeated Run packed_runs = 4 [packed = true];
  repeated Gap packed_gaps = 5 [packed = true];
}
"#;

/// Closed enums (declared values checked: compiled code by a range check when they are
/// consecutive, the interpreter's run decoder by one pass over one-byte runs) decode the
/// same in every engine: values, the unknown fields undeclared ones become, and their
/// order. prost-reflect keeps undeclared values of closed enums as values, so the engines
/// are compared with each other (and with what the interpreter is tested for elsewhere).
#[test]
fn closed_enums_decode_alike_in_every_engine() {
    let schema = Schema::from_proto_source("closed.proto", CLOSED).unwrap();
    let decoders = decoders(&schema, "closed.C");
    let mut rng = common::Rng(0xc105_ed00);
    let value = |rng: &mut common::Rng| -> u64 {
        match rng.below(20) {
            0 => 4 + rng.below(200),       // undeclared, small
            1 => (1 << 32) + rng.below(4), // truncates to a declared value
            2 => u64::MAX - rng.below(3),  // negative: undeclared
            _ => rng.below(4),             // declared Run (and G1 for Gap)
        }
    };
    let (mut unknowns, mut cases) = (0, 0);
    // The model: the declared values each repeated field keeps, in order (a value is
    // declared when its low 32 bits, as an int32, are).
    let declared = |field: u32, v: u64| match field {
        5 => [1, 5].contains(&(v as i32)),
        _ => (0..=3).contains(&(v as i32)),
    };
    for case in 0..400 {
        let mut input = Vec::new();
        let mut want: [Vec<i32>; 6] = Default::default();
        for _ in 0..1 + rng.below(4) {
            let field = 1 + rng.below(5) as u32;
            if field <= 3 {
                write_varint(&mut input, u64::from(field) << 3);
                let v = if field == 2 && rng.one_in(2) { 5 } else { value(&mut rng) };
                write_varint(&mut input, v);
                if field == 3 && declared(3, v) {
                    want[3].push(v as i32);
                }
            } else {
                // Short runs (compiled code's loop) and long ones (the run decoder).
                let count = if rng.one_in(2) { rng.below(12) } else { 60 + rng.below(80) } as usize;
                let clean = rng.one_in(2);
                let mut body = Vec::new();
                for _ in 0..count {
                    let v = if clean { rng.below(4) } else { value(&mut rng) };
                    write_varint(&mut body, v);
                    if declared(field, v) {
                        want[field as usize].push(v as i32);
                    }
                }
                write_varint(&mut input, u64::from(field) << 3 | 2);
                write_varint(&mut input, body.len() as u64);
                input.extend(body);
            }
        }
        let mut seen = Vec::new();
        for (engine, decoder) in &decoders {
            let arena = Arena::new();
            let msg = decoder.decode(&input, &arena).unwrap_or_else(|e| panic!("case {case}, {engine:?}: {e}"));
            for (field, name) in [(3, "runs"), (4, "packed_runs"), (5, "packed_gaps")] {
                let got: Vec<i32> =
                    msg.get(name).unwrap().as_list().unwrap().iter().map(|v| v.as_i32().unwrap()).collect();
                assert_eq!(got, want[field], "case {case}, {engine:?}: {name}; input {input:02x?}");
            }
            let unknown: Vec<Vec<u8>> = msg.unknown_fields().map(<[u8]>::to_vec).collect();
            seen.push((format!("{:?}", msg.to_dynamic()), msg.encode_to_vec(), unknown));
        }
        for (i, s) in seen.iter().enumerate().skip(1) {
            assert_eq!(
                &seen[0], s,
                "case {case}: {:?} differs from the interpreter; input {input:02x?}",
                decoders[i].0
            );
        }
        unknowns += usize::from(!seen[0].2.is_empty());
        cases += 1;
    }
    assert!(unknowns > 50 && unknowns < cases, "{unknowns} of {cases} cases had unknown fields");
}
