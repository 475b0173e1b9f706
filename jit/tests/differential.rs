//! The compiled decoder against the interpreter, its oracle: eager and tiered engines
//! decode the same trees (and fail at the same byte with the same error) on hand-written
//! schemas, random messages and the shared corpus.

mod common;

use std::sync::Arc;

use common::{dump, Rng};
use protojit_arena::{Arena, Layouts};
use protojit_jit::{CompileOptions, Engine, EngineKind, EngineOptions, Engines, Tiering, TypeEngine};

const SCHEMA: &str = r#"
    syntax = "proto2";
    package d;
    message Leaf { optional int32 a = 1; optional string s = 2; repeated sint64 z = 3; }
    message Root {
      optional int64 i64 = 1; optional uint32 u32 = 2; optional bool b = 3; optional double d = 4;
      optional float f = 5; optional fixed64 x64 = 6; optional sfixed32 sx32 = 7; optional bytes raw = 8;
      optional string name = 9; optional Leaf leaf = 10; repeated Leaf leaves = 11;
      repeated int32 packed = 12 [packed = true]; repeated fixed32 fixed = 13; repeated string tags = 14;
      optional group G = 15 { optional int32 g = 1; optional Leaf inner = 2; }
      optional Root child = 16; map<string, Leaf> by_name = 17;
      oneof choice { int32 n = 18; string t = 19; Leaf l = 20; }
      optional int32 far = 300; enum E { ZERO = 0; ONE = 1; } optional E e = 21; repeated E es = 22;
    }
"#;

/// The three engines over one set of layouts: the interpreter, eager code, and tiers with
/// every type already compiled (thresholds out of reach, so the test decides the tier).
fn engines(layouts: &Arc<Layouts>, root: &str) -> [(EngineKind, Engine); 3] {
    let root = layouts.index_of(root).expect("root type");
    let engines = Engines::new(layouts.clone(), CompileOptions::default());
    engines.tiers().compile_reachable(root);
    let tiered = EngineOptions::default()
        .with_tiering(Tiering { after_decodes: u64::MAX, after_bytes: u64::MAX })
        .with_kind(EngineKind::Auto);
    [EngineKind::Interpreter, EngineKind::Jit, EngineKind::Auto].map(|kind| {
        let options = if kind == EngineKind::Auto { tiered } else { EngineOptions::default().with_kind(kind) };
        (kind, engines.engine(root, &options))
    })
}

/// Decodes `input` with every engine and checks each against the interpreter.
fn check(engines: &[(EngineKind, Engine)], input: &[u8], what: &str) -> Result<(), String> {
    let arena = Arena::new();
    let want = engines[0].1.decode(input, &arena).map(dump);
    for (kind, engine) in &engines[1..] {
        let arena = Arena::new();
        let got = engine.decode(input, &arena).map(dump);
        if got != want {
            return Err(format!("{what}: {kind:?} decoded {got:?}, the interpreter {want:?}"));
        }
    }
    Ok(())
}

fn jit_host() -> bool {
    cfg!(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_endian = "little"))
}

#[test]
fn engines_run_what_was_asked_for() {
    let layouts = common::layouts_from_source(SCHEMA);
    let [(_, interp), (_, jit), (_, tiered)] = engines(&layouts, "d.Root");
    assert_eq!(interp.kind(), EngineKind::Interpreter);
    assert_eq!(tiered.kind(), EngineKind::Auto);
    assert!(tiered.tiers().is_some());
    if jit_host() {
        assert_eq!(jit.kind(), EngineKind::Jit);
        assert_eq!(jit.stats().interpreted(), 0, "{:?}", jit.stats());
        assert!(tiered.stats().types.iter().all(|t| t.engine == TypeEngine::Jit), "{:?}", tiered.stats());
    }
    assert_eq!(jit.stats().kind, jit.kind());
    assert!(interp
        .stats()
        .types
        .iter()
        .all(|t| t.engine == TypeEngine::Interpreter("the interpreter was requested".into())));
}

#[test]
fn random_messages_decode_alike() {
    let layouts = common::layouts_from_source(SCHEMA);
    let root = layouts.index_of("d.Root").unwrap();
    let engines = engines(&layouts, "d.Root");
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut failures = Vec::new();
    for case in 0..400 {
        let input = common::random_message(&layouts, root, 3, &mut rng);
        if let Err(e) = check(&engines, &input, &format!("case {case}")) {
            failures.push(e);
        }
        // Every prefix too: truncated input fails alike.
        if case % 20 == 0 {
            for cut in 0..input.len() {
                if let Err(e) = check(&engines, &input[..cut], &format!("case {case} cut at {cut}")) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures, first: {}", failures.len(), failures[0]);
}

#[test]
fn malformed_input_fails_alike() {
    let layouts = common::layouts_from_source(SCHEMA);
    let engines = engines(&layouts, "d.Root");
    let cases: &[(&str, &[u8])] = &[
        ("field number 0", &[0x00, 0x01]),
        ("length past the end", &[0x4a, 0x05, b'a']),
        ("varint over 10 bytes", &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ("unmatched end group", &[0x7c]),
        ("unterminated group", &[0x7b, 0x08, 0x01]),
        ("bad wire type", &[0x0e]),
        ("truncated fixed64", &[0x31, 1, 2, 3]),
        ("child past its end", &[0x52, 0x02, 0x08]),
    ];
    for (what, input) in cases {
        let arena = Arena::new();
        assert!(engines[0].1.decode(input, &arena).is_err(), "{what}: the interpreter accepted it");
        check(&engines, input, what).unwrap();
    }
}

#[test]
fn depth_limit_and_utf8_policy_are_honoured_alike() {
    let layouts = common::layouts_from_source(SCHEMA);
    let root = layouts.index_of("d.Root").unwrap();
    // `child` nested 10 deep.
    let mut nested = Vec::new();
    for _ in 0..10 {
        let mut outer = vec![0x82, 0x01];
        common::varint(&mut outer, nested.len() as u64);
        outer.extend(nested);
        nested = outer;
    }
    let all = Engines::new(layouts.clone(), CompileOptions::default());
    for max_depth in [0, 5, 9, 10, 100] {
        let options = EngineOptions::default().with_max_depth(max_depth);
        let engines: Vec<_> = [EngineKind::Interpreter, EngineKind::Jit]
            .map(|kind| (kind, all.engine(root, &options.with_kind(kind))))
            .into();
        check(&engines, &nested, &format!("depth 10 at max_depth {max_depth}")).unwrap();
        let arena = Arena::new();
        assert_eq!(engines[1].1.decode(&nested, &arena).is_ok(), max_depth >= 10, "max_depth {max_depth}");
    }
    // Invalid UTF-8 in a proto2 string: accepted under proto3's rule, refused under `All`.
    let bad = [0x4a, 0x02, 0xff, 0xfe];
    for utf8 in [protojit_arena::Utf8Check::Features, protojit_arena::Utf8Check::All, protojit_arena::Utf8Check::Off] {
        let options = EngineOptions::default().with_utf8(utf8);
        let engines: Vec<_> = [EngineKind::Interpreter, EngineKind::Jit]
            .map(|kind| (kind, all.engine(root, &options.with_kind(kind))))
            .into();
        check(&engines, &bad, &format!("{utf8:?}")).unwrap();
        let arena = Arena::new();
        assert_eq!(engines[1].1.decode(&bad, &arena).is_ok(), utf8 != protojit_arena::Utf8Check::All);
    }
}

#[test]
fn tiers_in_every_mix_decode_alike() {
    let layouts = common::layouts_from_source(SCHEMA);
    let root = layouts.index_of("d.Root").unwrap();
    let reachable = layouts.reachable(root);
    let mut rng = Rng(77);
    let inputs: Vec<Vec<u8>> = (0..60).map(|_| common::random_message(&layouts, root, 3, &mut rng)).collect();
    let interp = Engines::new(layouts.clone(), CompileOptions::default())
        .engine(root, &EngineOptions::default().with_kind(EngineKind::Interpreter));
    let options = EngineOptions::default().with_tiering(Tiering { after_decodes: u64::MAX, after_bytes: u64::MAX });
    // Compile the types one by one, leaves first: every prefix is a mix of tiers.
    let engines = Engines::new(layouts.clone(), CompileOptions::default());
    let tiered = engines.engine(root, &options);
    for (step, &li) in reachable.iter().rev().enumerate() {
        engines.tiers().compile_now(li);
        for (i, input) in inputs.iter().enumerate() {
            let (a, b) = (Arena::new(), Arena::new());
            let want = interp.decode(input, &a).map(dump);
            let got = tiered.decode(input, &b).map(dump);
            assert_eq!(got, want, "step {step}, input {i}");
        }
    }
}

#[test]
fn the_shared_corpus_decodes_alike() {
    let Some(dir) = common::corpus_dir("jit differential corpus") else { return };
    let payloads = [
        ("benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1", "google_message1_proto2.payload0.bin"),
        ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1", "google_message1_proto3.payload0.bin"),
        ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2", "google_message2.payload0.bin"),
        ("osmformat.proto", "OSMPBF.HeaderBlock", "liechtenstein.block0.headerblock.bin"),
        ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block1.primitiveblock-dense.bin"),
        ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block40.primitiveblock-ways.bin"),
        ("vector_tile.proto", "vector_tile.Tile", "mvt-chicago-13-2101-3044.mvt"),
        ("descriptor.proto", "google.protobuf.FileDescriptorSet", "descriptor.fds.bin"),
    ];
    for (proto, root, payload) in payloads {
        let layouts = common::corpus_layouts(&dir, proto);
        let engines = engines(&layouts, root);
        let input = std::fs::read(dir.join(payload)).unwrap();
        let arena = Arena::new();
        assert!(engines[0].1.decode(&input, &arena).is_ok(), "{payload}: the interpreter refused it");
        check(&engines, &input, payload).unwrap();
    }
}

#[test]
fn owned_trees_read_like_borrowed_ones() {
    let layouts = common::layouts_from_source(SCHEMA);
    let root = layouts.index_of("d.Root").unwrap();
    let mut rng = Rng(9);
    let input = common::random_message(&layouts, root, 2, &mut rng);
    for (kind, engine) in engines(&layouts, "d.Root") {
        let arena = Arena::new();
        let want = dump(engine.decode(&input, &arena).unwrap());
        let owned = engine.decode_owned(input.clone(), Arena::new()).unwrap();
        let moved = std::thread::spawn(move || dump(owned.tree())).join().unwrap();
        assert_eq!(moved, want, "{kind:?}");
    }
}
