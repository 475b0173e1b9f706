//! The engine's contract: thread safety, stats, shared compiled code, CLIF dumps.

use std::sync::Arc;

use protojit::{Arena, DecodeErrorKind, Decoder, EngineKind, EngineOptions, Schema};
use protojit_jit::{CompileOptions, Compiled, TypeEngine};

const NESTED: &str = r#"
    syntax = "proto3";
    package t;
    message Node { Node child = 1; int32 value = 2; repeated Node kids = 3; string name = 4; }
"#;

fn schema() -> Schema {
    Schema::from_proto_source("nested.proto", NESTED).unwrap()
}

/// `depth` nested `child` messages, innermost value 7.
fn nested(depth: usize) -> Vec<u8> {
    let mut msg = vec![0x10, 0x07];
    for _ in 0..depth {
        let mut outer = vec![0x0a];
        protojit_arena::wire::write_varint(&mut outer, msg.len() as u64);
        outer.extend_from_slice(&msg);
        msg = outer;
    }
    msg
}

#[test]
fn decoder_is_send_and_sync_and_usable_from_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Decoder>();
    let decoder = Arc::new(
        schema().decoder_with_options("t.Node", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap(),
    );
    let input = Arc::new(nested(50));
    let expected = {
        let arena = Arena::new();
        decoder.decode(&input, &arena).unwrap().to_text_format()
    };
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (decoder, input) = (decoder.clone(), input.clone());
            std::thread::spawn(move || {
                let mut arena = Arena::new();
                let mut last = String::new();
                for _ in 0..200 {
                    arena.reset();
                    last = decoder.decode(&input, &arena).unwrap().to_text_format();
                }
                last
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), expected);
    }
}

#[test]
fn stats_name_every_reachable_type_and_engine() {
    let schema = schema();
    let jit = schema.decoder_with_options("Node", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
    let stats = jit.stats();
    assert_eq!(stats.types.len(), 1);
    assert_eq!(stats.types[0].message_type, "t.Node");
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert_eq!(stats.types[0].engine, TypeEngine::Jit);
        assert!(stats.types[0].code_bytes > 0);
        assert_eq!(stats.interpreted(), 0);
    }
    let interp =
        schema.decoder_with_options("Node", &EngineOptions::default().with_kind(EngineKind::Interpreter)).unwrap();
    assert_eq!(interp.stats().types[0].engine, TypeEngine::Interpreter("the interpreter was requested".into()));
    assert_eq!(interp.stats().code_bytes(), 0);
}

#[test]
fn compiled_code_is_shared_and_reads_options_at_run_time() {
    let schema = schema();
    let input = nested(5);
    let strict = schema
        .decoder_with_options("Node", &EngineOptions::default().with_max_depth(4).with_kind(EngineKind::Jit))
        .unwrap();
    let loose = schema
        .decoder_with_options("Node", &EngineOptions::default().with_max_depth(5).with_kind(EngineKind::Jit))
        .unwrap();
    let arena = Arena::new();
    let err = strict.decode(&input, &arena).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::DepthLimitExceeded);
    // The fifth `child` tag is at offset 4 * 2 (each level adds a tag and a 1-byte length).
    assert_eq!(err.offset, 8);
    assert!(loose.decode(&input, &arena).is_ok());
    // Both decoders run the same machine code (compiled once per root type).
    assert_eq!(strict.stats().types[0].compile_time, loose.stats().types[0].compile_time);
}

#[test]
fn utf8_validation_can_be_turned_off() {
    let schema = schema();
    let input = [0x22, 0x02, 0xff, 0xfe];
    for engine in [EngineKind::Jit, EngineKind::Interpreter] {
        let arena = Arena::new();
        let on = schema.decoder_with_options("Node", &EngineOptions::default().with_kind(engine)).unwrap();
        let err = on.decode(&input, &arena).unwrap_err();
        assert_eq!((err.kind, err.offset), (DecodeErrorKind::InvalidUtf8, 1));
        let off = schema
            .decoder_with_options(
                "Node",
                &EngineOptions::default().with_utf8(protojit::Utf8Check::Off).with_kind(engine),
            )
            .unwrap();
        let msg = off.decode(&input, &arena).unwrap();
        // Unvalidated text that is not UTF-8 reads as bytes, never as a broken `&str`.
        assert_eq!(msg.get("name").unwrap().as_bytes(), Some(&[0xff, 0xfe][..]));
    }
}

#[test]
fn clif_is_kept_on_request_and_shows_the_peek_hub() {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        println!("SKIPPED clif test: no compiled code on this host");
        return;
    }
    let schema = schema();
    let root = schema.layouts().index_of("t.Node").unwrap();
    let options = CompileOptions { keep_clif: true, ..Default::default() };
    let compiled = Compiled::compile(schema.layouts(), root, &options).unwrap();
    let clif = compiled.stats()[0].clif.as_deref().unwrap();
    assert!(clif.contains("br_table"), "{clif}");
}

#[test]
fn message_types_over_the_field_limit_fall_back_explicitly() {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return;
    }
    let schema = schema();
    let root = schema.layouts().index_of("t.Node").unwrap();
    let options = CompileOptions { max_fields: 2, ..Default::default() };
    let compiled = Compiled::compile(schema.layouts(), root, &options).unwrap();
    assert_eq!(compiled.stats()[0].engine, TypeEngine::Interpreter("4 fields exceed the compile limit of 2".into()));
    // The fallback still decodes, through the interpreter at the message boundary.
    let schema = schema.with_compile_options(options);
    let decoder = schema.decoder_with_options("t.Node", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
    assert_eq!(decoder.stats().types[0].engine, compiled.stats()[0].engine);
    let engine = decoder.engine();
    let arena = Arena::new();
    assert!(engine.decode(&nested(3), &arena).is_ok());
    assert_eq!(engine.decode(&[0x0a, 0x05], &arena).err().map(|e| e.kind), Some(DecodeErrorKind::LengthOutOfBounds));
}

#[test]
fn huge_depth_limits_are_capped_before_the_stack_is() {
    let schema = schema();
    let input = nested(5000);
    let options = EngineOptions::default().with_max_depth(u32::MAX);
    for engine in [EngineKind::Jit, EngineKind::Interpreter] {
        let decoder = schema.decoder_with_options("Node", &options.with_kind(engine)).unwrap();
        // A spawned thread has the default 2 MiB stack: deep recursion would overflow it.
        let err = std::thread::scope(|s| {
            s.spawn(|| {
                let arena = Arena::new();
                decoder.decode(&input, &arena).unwrap_err()
            })
            .join()
            .unwrap()
        });
        assert_eq!(err.kind, DecodeErrorKind::DepthLimitExceeded, "{engine:?}");
        // The error is at the tag of the first level past the limit: walk down to it.
        let mut pos = 0;
        for _ in 0..protojit::MAX_DEPTH_LIMIT {
            assert_eq!(input[pos], 0x0a);
            pos = protojit_arena::wire::read_varint(&input, pos + 1).unwrap().1;
        }
        assert_eq!(err.offset, pos, "{engine:?}: {err}");
    }
}

#[test]
fn decoder_options_choose_engine_depth_and_utf8() {
    let schema = schema();
    let options = protojit::EngineOptions {
        kind: EngineKind::Interpreter,
        decode: protojit::DecodeOptions::default().with_max_depth(2).with_utf8(protojit::Utf8Check::Off),
        ..Default::default()
    };
    let decoder = schema.decoder_with_options("Node", &options).unwrap();
    assert_eq!(decoder.stats().interpreted(), 1);
    let arena = Arena::new();
    assert_eq!(decoder.decode(&nested(3), &arena).unwrap_err().kind, DecodeErrorKind::DepthLimitExceeded);
    assert!(decoder.decode(&[0x22, 0x01, 0xff], &arena).is_ok());
    assert_eq!(protojit::EngineOptions::default().kind, EngineKind::Auto);
}

#[test]
fn short_string_ascii_fast_path_sees_exactly_the_string() {
    // name (field 4) of every length 0..=20 with one invalid byte at every position, then
    // bytes after the string (a valid field) that must not count: ASCII and non-ASCII.
    let schema = schema();
    for engine in [EngineKind::Jit, EngineKind::Interpreter] {
        let decoder = schema.decoder_with_options("Node", &EngineOptions::default().with_kind(engine)).unwrap();
        for len in 0..=20usize {
            for bad in std::iter::once(None).chain((0..len).map(Some)) {
                let mut input = vec![0x22, len as u8];
                input.extend((0..len).map(|i| if Some(i) == bad { 0xff } else { b'a' + (i % 26) as u8 }));
                // A trailing `kids` message holding a non-ASCII (valid) name.
                input.extend([0x1a, 0x04, 0x22, 0x02, 0xc3, 0xa9]);
                input.extend([0x10, 0x01].repeat(8));
                let arena = Arena::new();
                let result = decoder.decode(&input, &arena);
                match bad {
                    None => assert!(result.is_ok(), "{engine:?} len {len}: {:?}", result.err()),
                    Some(_) => {
                        let err = result.unwrap_err();
                        assert_eq!(
                            (err.kind, err.offset),
                            (DecodeErrorKind::InvalidUtf8, 1),
                            "{engine:?} len {len} bad {bad:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn short_packed_runs_decode_alike_in_both_engines_byte_by_byte() {
    // Compiled code decodes packed varint runs of up to 64 bytes in its own loop and hands
    // the rest of a run to the interpreter at the first varint of three bytes or more:
    // every short run of these bytes (complete, cut inside a varint, with over-long
    // varints) must give the same values or the same error at the same offset.
    let schema = protojit::Schema::from_proto_source(
        "packed.proto",
        "syntax = \"proto3\"; package pk; message P { repeated int32 a = 1; repeated sint64 b = 2; \
         repeated bool c = 3; repeated uint32 d = 4; }",
    )
    .unwrap();
    let jit = schema.decoder_with_options("pk.P", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
    let interp =
        schema.decoder_with_options("pk.P", &EngineOptions::default().with_kind(EngineKind::Interpreter)).unwrap();
    let alphabet = [0x00u8, 0x01, 0x7f, 0x80, 0xff];
    let arena = Arena::new();
    for field in 1..=4u8 {
        for len in 0..=6usize {
            for mut code in 0..alphabet.len().pow(len as u32) {
                let mut input = vec![(field << 3) | 2, len as u8];
                for _ in 0..len {
                    input.push(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                // A second field after the run: threading must resume at the run's end.
                input.extend([0x20, 0x05]);
                let a = jit.decode(&input, &arena).map(|m| format!("{:?}", m.to_dynamic()));
                let b = interp.decode(&input, &arena).map(|m| format!("{:?}", m.to_dynamic()));
                assert_eq!(a, b, "{input:02x?}");
            }
        }
    }
}
