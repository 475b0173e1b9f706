//! Owned trees (`decode_owned`: `Send`, self-contained) and arena reuse (a reset loop allocates nothing after its first decode).

mod common;

use protojit::{Arena, Bytes, EngineOptions, OwnedMessage, Schema};

fn assert_send_sync<T: Send + Sync + 'static>() {}

#[test]
fn owned_messages_are_self_contained_and_move_across_threads() {
    assert_send_sync::<OwnedMessage>();
    let schema = Schema::from_proto_source(
        "o.proto",
        r#"syntax = "proto3"; message P { string s = 1; repeated P kids = 2; bytes b = 3; }"#,
    )
    .unwrap();
    for engine in common::ENGINES {
        let decoder = schema.decoder_with_options("P", &EngineOptions::default().with_kind(engine)).unwrap();
        // P { s: "root", kids: [P { s: "kid" }], b: "\x01\x02" }
        let input =
            vec![0x0a, 0x04, b'r', b'o', b'o', b't', 0x12, 0x05, 0x0a, 0x03, b'k', b'i', b'd', 0x1a, 0x02, 1, 2];
        let owned = decoder.decode_owned(input.clone()).unwrap();
        drop(decoder); // the handle keeps the layouts alive by itself
        let text = std::thread::spawn(move || {
            let msg = owned.message();
            assert_eq!(msg.path("kids[0].s").unwrap()[0].as_str(), Some("kid"));
            // Strings point into the owned input, not into a copy.
            let s = msg.get("s").unwrap().as_str().unwrap();
            assert!(owned.input().as_ptr_range().contains(&s.as_ptr()));
            msg.to_text_format()
        })
        .join()
        .unwrap();
        assert_eq!(text, "s: \"root\"\nkids {\n  s: \"kid\"\n}\nb: \"\\001\\002\"\n", "{engine:?}");
        // Bytes in, shared rather than copied; static slices work too.
        let decoder = schema.decoder_with_options("P", &EngineOptions::default().with_kind(engine)).unwrap();
        let shared = Bytes::from(input);
        let owned = decoder.decode_owned(shared.clone()).unwrap();
        assert_eq!(owned.input().as_ptr(), shared.as_ptr());
        let owned_static = decoder.decode_owned(&b"\x0a\x01x"[..]).unwrap();
        assert_eq!(owned_static.message().get("s").unwrap().as_str(), Some("x"));
        // Malformed input is an error, not a handle.
        assert!(decoder.decode_owned(vec![0x0a, 0x05, b'x']).is_err());
        // An arena handed back is reused.
        let arena = owned.into_arena();
        let again = decoder.decode_owned_in(shared, arena).unwrap();
        assert_eq!(again.message().get("s").unwrap().as_str(), Some("root"));
        assert!(format!("{again:?}").contains("OwnedMessage"));
    }
}

#[test]
fn owned_handles_are_shared_between_threads() {
    let schema = Schema::from_proto_source("o.proto", "syntax = \"proto3\"; message P { int32 n = 1; }").unwrap();
    let decoder = schema.decoder("P").unwrap();
    let owned = std::sync::Arc::new(decoder.decode_owned(vec![0x08, 0x2a]).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let o = owned.clone();
            std::thread::spawn(move || o.message().get("n").unwrap().as_i32().unwrap())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 42);
    }
}

#[test]
fn arena_reuse_allocates_nothing_after_the_first_decode() {
    let Some(dir) = common::corpus_dir("arena_reuse_allocates_nothing_after_the_first_decode") else { return };
    // A payload whose tree takes many arena chunks, and a small one.
    for (proto, type_name, file) in [
        ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block1.primitiveblock-dense.bin"),
        ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2", "google_message2.payload0.bin"),
        ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1", "google_message1_proto3.payload0.bin"),
    ] {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        for engine in common::ENGINES {
            let decoder = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(engine)).unwrap();
            let mut arena = Arena::new();
            let mut held_after_first = None;
            for i in 0..20 {
                arena.reset();
                let before = arena.allocated_bytes();
                let msg = decoder.decode(&bytes, &arena).unwrap();
                assert!(msg.encoded_len() > 0);
                let after = arena.allocated_bytes();
                match held_after_first {
                    None => held_after_first = Some(after),
                    Some(held) => {
                        assert_eq!(before, after, "{file} ({engine:?}), decode {i}: the arena grew");
                        assert!(after <= held.max(before), "{file} ({engine:?}), decode {i}");
                    }
                }
            }
            // The first decode of a fresh arena took chunks from the system (so the check
            // can fail), except for the small payload, whose tree may fit in the arena's
            // inline first block.
            if !file.starts_with("google_message1") {
                assert!(held_after_first.unwrap() > Arena::new().allocated_bytes(), "{file} ({engine:?})");
            }
        }
    }
}
