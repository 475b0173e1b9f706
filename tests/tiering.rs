//! Tiering: every mix of interpreted and compiled message types decodes the same tree,
//! types swap in while other threads decode, and `Auto` compiles hot types by itself.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;
use prost_reflect::DynamicMessage;
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema, Tiering, TypeEngine};
use protojit::{CompileOptions, Engines};

/// A tiered decoder for `root` over fresh tiers in which exactly the types `pick` selects
/// (by position in the reachable list) are compiled.
fn mixed(schema: &Schema, root: &str, pick: impl Fn(usize) -> bool) -> Decoder {
    let li = schema.layouts().index_of(root).unwrap();
    let engines = Engines::new(schema.layouts().clone(), CompileOptions::default());
    let tiers = engines.tiers();
    for (i, t) in schema.layouts().reachable(li).into_iter().enumerate() {
        if pick(i) {
            assert!(tiers.compile_now(t) || !cfg!(target_arch = "x86_64"), "{root}: type {i} did not compile");
        }
    }
    // Thresholds out of reach: the test decides the tiers, not the counters.
    let options =
        EngineOptions { tiering: Tiering { after_decodes: u64::MAX, after_bytes: u64::MAX }, ..Default::default() };
    Decoder::from_engine(engines.engine(li, &options))
}

/// Decodes `bytes` with `decoder` and compares the tree with `expected` (or the error).
fn check(decoder: &Decoder, bytes: &[u8], expected: &Result<DynamicMessage, protojit::DecodeError>, what: &str) {
    let arena = Arena::new();
    match (decoder.decode(bytes, &arena), expected) {
        (Ok(msg), Ok(want)) => {
            if let Some(path) = common::dyn_diff(&msg.to_dynamic(), want) {
                panic!("{what}: tree differs at {path}");
            }
        }
        (Err(e), Err(want)) => assert_eq!(&e, want, "{what}"),
        (got, want) => panic!("{what}: got {:?}, want {:?}", got.map(|m| m.to_dynamic()), want),
    }
}

/// How many messages of type `name` the tree `m` holds, `m` included.
fn count_messages_of(m: &DynamicMessage, name: &str) -> usize {
    fn value(v: &prost_reflect::Value, name: &str) -> usize {
        use prost_reflect::Value;
        match v {
            Value::Message(m) => count_messages_of(m, name),
            Value::List(l) => l.iter().map(|v| value(v, name)).sum(),
            Value::Map(m) => m.values().map(|v| value(v, name)).sum(),
            _ => 0,
        }
    }
    let own = usize::from(prost_reflect::ReflectMessage::descriptor(m).full_name() == name);
    own + m.fields().map(|(_, v)| value(v, name)).sum::<usize>()
}

/// The interpreter's answer: the oracle.
fn oracle(schema: &Schema, root: &str, bytes: &[u8]) -> Result<DynamicMessage, protojit::DecodeError> {
    let d = schema.decoder_with_options(root, &EngineOptions::default().with_kind(EngineKind::Interpreter)).unwrap();
    let arena = Arena::new();
    d.decode(bytes, &arena).map(|m| m.to_dynamic())
}

#[test]
fn corpus_payloads_decode_alike_in_every_mix_of_tiers() {
    let Some(dir) = common::corpus_dir("corpus_payloads_decode_alike_in_every_mix_of_tiers") else { return };
    let mut rng = common::Rng(0x7133);
    for (proto, root, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let want = oracle(&schema, root, &bytes);
        assert!(want.is_ok(), "{file}");
        let n = schema.layouts().reachable(schema.layouts().index_of(root).unwrap()).len();
        check(&mixed(&schema, root, |_| false), &bytes, &want, &format!("{file}: all interpreted"));
        check(&mixed(&schema, root, |_| true), &bytes, &want, &format!("{file}: all compiled"));
        for round in 0..3 {
            let picks: Vec<bool> = (0..n).map(|_| rng.one_in(2)).collect();
            check(&mixed(&schema, root, |i| picks[i]), &bytes, &want, &format!("{file}: mix {round} {picks:?}"));
        }
    }
}

fn everything() -> Schema {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas");
    Schema::from_proto_files(&[dir.join("everything.proto"), dir.join("everything3.proto")], &[&dir]).unwrap()
}

#[test]
fn random_messages_decode_alike_in_every_mix_of_tiers() {
    let schema = everything();
    let mut rng = common::Rng(0x71e5);
    for root in ["everything.Everything", "everything3.Everything3"] {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let n = schema.layouts().reachable(schema.layouts().index_of(root).unwrap()).len();
        for seed in 0..12 {
            let picks: Vec<bool> = (0..n).map(|_| rng.one_in(2)).collect();
            let decoder = mixed(&schema, root, |i| picks[i]);
            for _ in 0..8 {
                let mut bytes = common::random_message(&desc, 3, &mut rng).encode_to_vec();
                let want = oracle(&schema, root, &bytes);
                check(&decoder, &bytes, &want, &format!("{root} seed {seed} {picks:?}"));
                // Truncated and corrupted: the same error, at the same offset, in every mix.
                if !bytes.is_empty() {
                    let cut = rng.index(bytes.len());
                    let want = oracle(&schema, root, &bytes[..cut]);
                    check(&decoder, &bytes[..cut], &want, &format!("{root} seed {seed} cut {cut}"));
                    let at = rng.index(bytes.len());
                    bytes[at] = rng.next() as u8;
                    let want = oracle(&schema, root, &bytes);
                    check(&decoder, &bytes, &want, &format!("{root} seed {seed} byte {at}"));
                }
            }
        }
    }
}

#[test]
fn threads_decode_while_types_are_swapped_in() {
    let schema = everything();
    let root = "everything.Everything";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let li = schema.layouts().index_of(root).unwrap();
    let mut rng = common::Rng(0x5a9);
    let inputs: Vec<Vec<u8>> = (0..16).map(|_| common::random_message(&desc, 3, &mut rng).encode_to_vec()).collect();
    let wants: Vec<_> = inputs.iter().map(|b| oracle(&schema, root, b)).collect();
    let engines = Engines::new(schema.layouts().clone(), CompileOptions::default());
    let tiers = engines.tiers().clone();
    let options =
        EngineOptions { tiering: Tiering { after_decodes: u64::MAX, after_bytes: u64::MAX }, ..Default::default() };
    let decoder = Arc::new(Decoder::from_engine(engines.engine(li, &options)));
    let mut order = schema.layouts().reachable(li);
    // Leaves first, root last, and in between a shuffle: children change tier under
    // compiled and interpreted parents alike.
    for i in (1..order.len()).rev() {
        let j = rng.index(i + 1);
        order.swap(i, j);
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let (decoder, inputs, wants, done) = (decoder.clone(), &inputs, &wants, &done);
                s.spawn(move || {
                    let mut rounds = 0u32;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) || rounds < 2 {
                        for (i, bytes) in inputs.iter().enumerate() {
                            check(&decoder, bytes, &wants[i], &format!("worker {w} input {i}"));
                        }
                        rounds += 1;
                    }
                    rounds
                })
            })
            .collect();
        for li in order {
            tiers.compile_now(li);
            std::thread::sleep(Duration::from_millis(2));
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in workers {
            assert!(w.join().unwrap() >= 2);
        }
    });
    if cfg!(target_arch = "x86_64") {
        assert_eq!(decoder.stats().interpreted(), 0, "{:?}", decoder.stats().types);
    }
}

#[test]
fn auto_starts_interpreted_and_compiles_hot_types_in_the_background() {
    let schema = everything();
    let root = "everything3.Everything3";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let mut rng = common::Rng(0xa070);
    let inputs: Vec<Vec<u8>> = (0..8).map(|_| common::random_message(&desc, 2, &mut rng).encode_to_vec()).collect();
    let wants: Vec<_> = inputs.iter().map(|b| oracle(&schema, root, b)).collect();

    // Default thresholds: one decode leaves every type cold, counted. Every decode of a
    // type counts, nested ones too (the type is recursive): take an input whose tree holds
    // the root type once.
    let decoder = schema.decoder(root).unwrap();
    assert_eq!(decoder.stats().kind, EngineKind::Auto);
    let once = (0..inputs.len())
        .find(|&i| wants[i].as_ref().is_ok_and(|m| count_messages_of(m, root) == 1))
        .expect("an input without a nested root");
    check(&decoder, &inputs[once], &wants[once], "first decode");
    let stats = decoder.stats();
    assert_eq!(stats.types[0].engine, TypeEngine::Cold);
    assert_eq!(stats.types[0].interpreted_decodes, 1);
    assert_eq!(stats.types[0].interpreted_bytes, inputs[once].len() as u64);

    // Low thresholds: types are queued as they are met and swapped in by the background
    // compiler while decoding goes on.
    let hot = EngineOptions { tiering: Tiering { after_decodes: 2, after_bytes: u64::MAX }, ..Default::default() };
    let decoder = schema.decoder_with_options(root, &hot).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rounds = 0;
    loop {
        for (i, bytes) in inputs.iter().enumerate() {
            check(&decoder, bytes, &wants[i], &format!("round {rounds} input {i}"));
        }
        rounds += 1;
        let stats = decoder.stats();
        // Compiled root, then (every type the inputs hold compiled) the root recompiled
        // with direct calls: the inputs keep decoding alike through every step.
        if !cfg!(target_arch = "x86_64") || (stats.types[0].engine == TypeEngine::Jit && stats.direct_calls) {
            break;
        }
        assert!(Instant::now() < deadline, "the root never reached direct calls: {:?}", stats.types);
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = decoder.stats();
    assert!(stats.types[0].code_bytes > 0 && stats.types[0].compile_time > Duration::ZERO);
    assert!(stats.types[0].interpreted_decodes >= 2);
}

#[test]
fn types_the_lowering_refuses_stay_interpreted_with_the_reason() {
    let schema = everything();
    let root = "everything3.Everything3";
    let li = schema.layouts().index_of(root).unwrap();
    let engines = Engines::new(schema.layouts().clone(), CompileOptions { max_fields: 1, ..Default::default() });
    let tiers = engines.tiers();
    assert!(!tiers.compile_now(li));
    let stats = tiers.stats(li);
    match &stats[0].engine {
        TypeEngine::Interpreter(why) => assert!(why.contains("exceed the compile limit of 1"), "{why}"),
        other => panic!("{other:?}"),
    }
    let decoder = Decoder::from_engine(engines.engine(li, &EngineOptions::default()));
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let bytes = common::random_message(&desc, 2, &mut common::Rng(3)).encode_to_vec();
    check(&decoder, &bytes, &oracle(&schema, root, &bytes), "refused root");
}
