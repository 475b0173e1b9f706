//! Packed varint runs decoded by the interpreter (the terminator count that sizes the vector, the word-at-a-time run decoder, BMI2 where present) against a byte-at-a-time loop written here.

mod support;

use protojit_arena::wire::write_varint;
use protojit_arena::{Arena, DecodeErrorKind, Layouts, Utf8Check};
use support::{decode, pool, Rng};

const PROTO: &str = r#"
syntax = "proto3";
package t;
enum E { E0 = 0; E1 = 1; }
message Runs {
  repeated uint64 u64s = 1;
  repeated int64 i64s = 2;
  repeated sint64 s64s = 3;
  repeated uint32 u32s = 4;
  repeated int32 i32s = 5;
  repeated sint32 s32s = 6;
  repeated bool flags = 7;
  repeated E es = 8;
}
"#;

/// One varint read a byte at a time: the value and the bytes it took, `None` if cut off
/// or longer than ten bytes.
fn byte_loop(buf: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in buf.iter().take(10).enumerate() {
        value |= ((b & 0x7f) as u64).wrapping_shl(7 * i as u32);
        if b < 0x80 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Every varint of `run` by the byte loop; `None` if one is malformed.
fn run_by_bytes(run: &[u8]) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    let mut p = 0;
    while p < run.len() {
        let (v, n) = byte_loop(&run[p..])?;
        out.push(v);
        p += n;
    }
    Some(out)
}

/// A value of a random bit width (0 to 64 bits), so runs hold varints of every length.
fn value(rng: &mut Rng) -> u64 {
    let bits = rng.next() % 65;
    if bits == 64 {
        rng.next()
    } else {
        rng.next() & ((1u64 << bits) - 1)
    }
}

fn field(out: &mut Vec<u8>, number: u32, run: &[u8]) {
    write_varint(out, (number << 3 | 2) as u64);
    write_varint(out, run.len() as u64);
    out.extend_from_slice(run);
}

#[test]
fn packed_runs_agree_with_a_byte_loop_for_every_width_and_length() {
    let pool = pool("runs.proto", PROTO);
    let layouts = Layouts::new(&pool).unwrap();
    let runs = layouts.get(layouts.index_of("t.Runs").unwrap());
    let slot = |n: u32| runs.slot_by_number(n).unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for round in 0..300 {
        // Lengths 0 to 70 elements: short runs (the byte loop), long ones (words), and
        // every remainder of eight.
        let len = (rng.next() % 71) as usize;
        let small = round % 3 == 0;
        let values: Vec<u64> = (0..len).map(|_| if small { rng.next() % 128 } else { value(&mut rng) }).collect();
        let mut run = Vec::new();
        for &v in &values {
            write_varint(&mut run, v);
        }
        assert_eq!(run_by_bytes(&run).as_deref(), Some(&values[..]));
        // The same run in every field, and twice in field 1 (a second run appends).
        let mut input = Vec::new();
        for n in 1..=8 {
            field(&mut input, n, &run);
        }
        field(&mut input, 1, &run);
        let arena = Arena::new();
        let tree = decode(&layouts, "t.Runs", &input, &arena, Utf8Check::Features).unwrap();
        let twice: Vec<u64> = values.iter().chain(&values).copied().collect();
        assert_eq!(tree.vec_slice::<u64>(slot(1)), &twice[..], "round {round}");
        let as_i64: Vec<i64> = values.iter().map(|&v| v as i64).collect();
        assert_eq!(tree.vec_slice::<i64>(slot(2)), &as_i64[..], "round {round}");
        let zz64: Vec<i64> = values.iter().map(|&v| ((v >> 1) as i64) ^ -((v & 1) as i64)).collect();
        assert_eq!(tree.vec_slice::<i64>(slot(3)), &zz64[..], "round {round}");
        let as_u32: Vec<u32> = values.iter().map(|&v| v as u32).collect();
        assert_eq!(tree.vec_slice::<u32>(slot(4)), &as_u32[..], "round {round}");
        let as_i32: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        assert_eq!(tree.vec_slice::<i32>(slot(5)), &as_i32[..], "round {round}");
        let zz32: Vec<i32> = values.iter().map(|&v| ((v as u32 >> 1) as i32) ^ -((v as u32 & 1) as i32)).collect();
        assert_eq!(tree.vec_slice::<i32>(slot(6)), &zz32[..], "round {round}");
        let flags: Vec<bool> = values.iter().map(|&v| v != 0).collect();
        assert_eq!(tree.vec_slice::<bool>(slot(7)), &flags[..], "round {round}");
        assert_eq!(tree.vec_slice::<i32>(slot(8)), &as_i32[..], "round {round}");
    }
}

#[test]
fn a_malformed_varint_in_a_run_is_an_error() {
    let pool = pool("runs.proto", PROTO);
    let layouts = Layouts::new(&pool).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let mut run = Vec::new();
        for _ in 0..rng.next() % 30 {
            write_varint(&mut run, value(&mut rng));
        }
        // A varint cut off at the end of the run, or one of eleven bytes.
        let cut = round % 2 == 0;
        if cut {
            run.extend((0..1 + rng.next() % 9).map(|_| 0x80 | rng.next() as u8));
        } else {
            run.extend([0xffu8; 10]);
            run.push(0x01);
        }
        assert_eq!(run_by_bytes(&run), None);
        let mut input = Vec::new();
        field(&mut input, 1, &run);
        let arena = Arena::new();
        let Err(err) = decode(&layouts, "t.Runs", &input, &arena, Utf8Check::Features) else {
            panic!("round {round}: a malformed run decoded: {run:02x?}")
        };
        let want = if cut { DecodeErrorKind::Truncated } else { DecodeErrorKind::VarintTooLong };
        assert_eq!(err.kind, want, "round {round}: {run:02x?}");
    }
}
