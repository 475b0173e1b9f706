//! Repeated messages are pointer vectors whose child blocks compiled code bump-allocates
//! from per-decode chunks: random runs of children of three block sizes (small, just under
//! the inline-allocation limit, above it), interleaved so chunk refills and vector growth
//! fall anywhere, decode to the same tree with both engines and read back exactly.

mod common;

use common::ENGINES;
use proptest::prelude::*;
use protojit::{Arena, Decoder, Schema};
use protojit_arena::wire::write_varint;

/// Mid has 28 int64 fields (a 240-byte block, allocated inline by compiled code); Big has
/// 40 (336 bytes, allocated by the helper).
fn schema() -> Schema {
    let fields = |n: u32| (1..=n).map(|i| format!("int64 f{i} = {i};")).collect::<Vec<_>>().join(" ");
    let source = format!(
        "syntax = \"proto3\"; package rc;
         message Root {{ repeated Small small = 1; repeated Mid mid = 2; repeated Big big = 3; int32 tail = 4; }}
         message Small {{ int32 v = 1; }}
         message Mid {{ {} }}
         message Big {{ {} }}",
        fields(28),
        fields(40)
    );
    Schema::from_proto_source("rc.proto", &source).unwrap()
}

/// Which repeated field an element goes to (1 small, 2 mid, 3 big) and its value.
type Element = (u32, i64);

/// Each child sets its first and its last field, so a block that overlapped another or
/// was not zeroed would read wrong; a child of value 0 is empty on the wire (it shares the
/// layouts' zero block).
fn encode(elements: &[Element], tail: i32) -> Vec<u8> {
    let mut out = Vec::new();
    for &(field, v) in elements {
        let mut child = Vec::new();
        if v == 0 {
            out.push((field << 3 | 2) as u8);
            out.push(0);
            continue;
        }
        let last = match field {
            1 => 1,
            2 => 28,
            _ => 40,
        };
        child.push(0x08);
        write_varint(&mut child, v as u64);
        if last != 1 {
            write_varint(&mut child, (last << 3) as u64);
            write_varint(&mut child, (v ^ 1) as u64);
        }
        out.push((field << 3 | 2) as u8);
        write_varint(&mut out, child.len() as u64);
        out.extend_from_slice(&child);
    }
    out.push(0x20);
    write_varint(&mut out, tail as i64 as u64);
    out
}

fn check(decoder: &Decoder, elements: &[Element], tail: i32, arena: &Arena) -> Result<Vec<u8>, TestCaseError> {
    let bytes = encode(elements, tail);
    let msg = decoder.decode(&bytes, arena).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (field, name, last) in [(1, "small", "v"), (2, "mid", "f28"), (3, "big", "f40")] {
        let want: Vec<i64> = elements.iter().filter(|e| e.0 == field).map(|e| e.1).collect();
        let list = msg.get(name).unwrap();
        let list = list.as_list().unwrap();
        prop_assert_eq!(list.len(), want.len(), "{} length", name);
        for (i, &v) in want.iter().enumerate() {
            let child = list.get(i).unwrap();
            let child = child.as_message().unwrap();
            if field == 1 {
                prop_assert_eq!(child.get("v").unwrap().as_i32(), Some(v as i32));
            } else {
                prop_assert_eq!(child.get("f1").unwrap().as_i64(), Some(v), "{}[{}].f1", name, i);
                let want_last = if v == 0 { 0 } else { v ^ 1 };
                prop_assert_eq!(child.get(last).unwrap().as_i64(), Some(want_last), "{}[{}].{}", name, i, last);
                prop_assert_eq!(child.get("f2").unwrap().as_i64(), Some(0), "{}[{}] is zeroed", name, i);
            }
        }
    }
    prop_assert_eq!(msg.get("tail").unwrap().as_i32(), Some(tail));
    Ok(msg.encode_to_vec())
}

fn element() -> impl Strategy<Value = Element> {
    (prop_oneof![4 => Just(1u32), 3 => Just(2u32), 1 => Just(3u32)], prop_oneof![1 => Just(0i64), 4 => any::<i64>()])
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn repeated_children_of_many_sizes_across_chunk_boundaries(
        elements in prop::collection::vec(element(), 0..1500),
        tail in any::<i32>(),
        reuse in any::<bool>(),
    ) {
        let schema = schema();
        let mut encoded = Vec::new();
        // A reused arena keeps its memory after reset: chunks then come from old space.
        let mut arena = Arena::new();
        for engine in ENGINES {
            let decoder = schema
                .decoder_with_options("rc.Root", &protojit::EngineOptions { kind: engine, ..Default::default() })
                .unwrap();
            if reuse {
                arena.reset();
                check(&decoder, &elements, tail, &arena)?;
                arena.reset();
            }
            encoded.push(check(&decoder, &elements, tail, &arena)?);
            arena.reset();
        }
        prop_assert_eq!(&encoded[0], &encoded[1]);
    }
}
