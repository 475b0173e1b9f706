//! Differential mutation test: compiled code and the interpreter agree on mutated corpus payloads.
//!
//! Seeded byte flips, bit flips, insertions, deletions and truncations (>= 100k cases in
//! all) of corpus payloads are decoded by both engines; they must give the same error
//! (kind and offset) or equal trees.

mod common;

use protojit::{Arena, EngineKind, EngineOptions, MessageRef, Value};

/// The mutation test's case budget (default 100,000 in all); `PROTOJIT_MUTATIONS` overrides
/// it, for slow runs such as under valgrind. Each payload's share scales with it.
fn budget() -> Option<usize> {
    common::env_count("PROTOJIT_MUTATIONS")
}

fn mutate(rng: &mut common::Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = 1 + rng.index(3);
    for _ in 0..rounds {
        if v.is_empty() {
            v.push(rng.next() as u8);
            continue;
        }
        let i = rng.index(v.len());
        match rng.index(6) {
            0 => v[i] = rng.next() as u8,
            1 => v[i] ^= 1 << rng.index(8),
            2 => v.insert(i, rng.next() as u8),
            3 => {
                v.remove(i);
            }
            4 => v.truncate(i),
            _ => {
                // Interesting bytes: continuation bits, tags of every wire type, 0.
                const SPECIAL: [u8; 10] = [0x00, 0x80, 0xff, 0x7f, 0x08, 0x0a, 0x0b, 0x0c, 0x0d, 0x0f];
                v[i] = SPECIAL[rng.index(SPECIAL.len())];
            }
        }
    }
    v
}

/// Structural equality of two decoded trees of the same type (values, presence, unknown
/// field bytes), without building intermediate representations.
fn tree_eq(a: &MessageRef<'_>, b: &MessageRef<'_>) -> bool {
    let fa: Vec<_> = a.fields().collect();
    let fb: Vec<_> = b.fields().collect();
    fa.len() == fb.len()
        && fa.iter().zip(&fb).all(|((da, va), (db, vb))| da.number() == db.number() && value_eq(va, vb))
        && a.unknown_fields().eq(b.unknown_fields())
}

fn value_eq(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::I32(x), Value::I32(y)) => x == y,
        (Value::I64(x), Value::I64(y)) => x == y,
        (Value::U32(x), Value::U32(y)) => x == y,
        (Value::U64(x), Value::U64(y)) => x == y,
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Enum(x), Value::Enum(y)) => x.number == y.number,
        (Value::Message(x), Value::Message(y)) => tree_eq(x, y),
        (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(u, v)| value_eq(&u, &v)),
        (Value::Map(x), Value::Map(y)) => {
            let ex: Vec<_> = x.iter().collect();
            let ey: Vec<_> = y.iter().collect();
            ex.len() == ey.len() && ex.iter().zip(&ey).all(|((kx, vx), (ky, vy))| kx == ky && value_eq(vx, vy))
        }
        _ => false,
    }
}

#[test]
fn jit_agrees_with_interpreter_on_mutated_corpus() {
    let Some(dir) = common::corpus_dir("jit_agrees_with_interpreter_on_mutated_corpus") else { return };
    // (payload, cases): small payloads get most of the cases; large ones are cut to a
    // window so each case stays cheap.
    let plan: &[(&str, usize)] = &[
        ("google_message1_proto2.payload0.bin", 30_000),
        ("google_message1_proto3.payload0.bin", 30_000),
        ("liechtenstein.block0.headerblock.bin", 15_000),
        ("dataset.google_message1_proto3.pb", 10_000),
        ("descriptor.fds.bin", 6_000),
        ("google_message2.payload0.bin", 4_000),
        ("mvt-chicago-13-2101-3044.mvt", 3_000),
        ("liechtenstein.block1.primitiveblock-dense.bin", 2_000),
    ];
    let mut rng = common::Rng(0x5eed_0001);
    let mut total = 0;
    let (mut oks, mut errs) = (0, 0);
    let planned: usize = plan.iter().map(|p| p.1).sum();
    for &(file, cases) in plan {
        // At least one case per payload, so every schema runs under a small budget too.
        let cases = budget().map_or(cases, |b| (cases * b / planned).max(1));
        let &(proto, type_name, _) = common::PAYLOADS.iter().find(|p| p.2 == file).unwrap();
        let schema = common::corpus_schema(&dir, proto);
        let jit = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
        let interp = schema
            .decoder_with_options(type_name, &EngineOptions::default().with_kind(EngineKind::Interpreter))
            .unwrap();
        let full = std::fs::read(dir.join(file)).unwrap();
        // Large payloads: mutate the first 4 KiB (the decoders see a truncated message,
        // which is itself a good malformed input).
        let base = &full[..full.len().min(4096)];
        let mut arena_a = Arena::new();
        let mut arena_b = Arena::new();
        for case in 0..cases {
            let input = mutate(&mut rng, base);
            arena_a.reset();
            arena_b.reset();
            let a = jit.decode(&input, &arena_a);
            let b = interp.decode(&input, &arena_b);
            match (&a, &b) {
                (Ok(x), Ok(y)) => {
                    oks += 1;
                    assert!(tree_eq(x, y), "{file} case {case}: trees differ for input {input:02x?}");
                }
                (Err(x), Err(y)) => {
                    errs += 1;
                    assert_eq!(x, y, "{file} case {case}: errors differ for input {input:02x?}");
                }
                _ => {
                    panic!("{file} case {case}: jit {:?} vs interpreter {:?} for input {input:02x?}", a.err(), b.err())
                }
            }
            total += 1;
        }
    }
    if budget().is_none() {
        assert!(total >= 100_000);
        // Both outcomes must be exercised, or the test proves little.
        assert!(oks > 1000 && errs > 1000, "ok {oks}, err {errs}");
    }
    println!("{total} mutated inputs: {oks} decoded, {errs} rejected, engines agree");
}

#[test]
fn jit_agrees_with_interpreter_on_random_bytes() {
    let Some(dir) = common::corpus_dir("jit_agrees_with_interpreter_on_random_bytes") else { return };
    let mut rng = common::Rng(0x5eed_0002);
    for (proto, type_name) in [
        ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
        ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1"),
        ("vector_tile.proto", "vector_tile.Tile"),
        ("osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ] {
        let schema = common::corpus_schema(&dir, proto);
        let jit = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
        let interp = schema
            .decoder_with_options(type_name, &EngineOptions::default().with_kind(EngineKind::Interpreter))
            .unwrap();
        for _ in 0..budget().map_or(5_000, |b| b / 20) {
            let len = rng.index(64);
            let input: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let (arena_a, arena_b) = (Arena::new(), Arena::new());
            match (jit.decode(&input, &arena_a), interp.decode(&input, &arena_b)) {
                (Ok(x), Ok(y)) => assert!(tree_eq(&x, &y), "{type_name}: trees differ for {input:02x?}"),
                (Err(x), Err(y)) => assert_eq!(x, y, "{type_name}: {input:02x?}"),
                (a, b) => panic!("{type_name}: jit {:?} vs interp {:?} for {input:02x?}", a.err(), b.err()),
            }
        }
    }
}
