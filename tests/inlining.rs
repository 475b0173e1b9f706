//! Small leaf message types are inlined into their callers' compiled code: the decoded
//! tree, errors and depth limits stay those of the interpreter.

mod common;

use prost::Message as _;
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema};
use protojit_jit::{CompileOptions, Compiled};

const SCHEMA: &str = r#"
    syntax = "proto2";
    package inl;
    message Leaf { optional int32 a = 1; optional string s = 2; repeated sint64 p = 3 [packed = true]; }
    message Tiny { optional uint32 v = 1; }
    message Wide {
      optional int32 f1 = 1; optional int32 f2 = 2; optional int32 f3 = 3;
      optional int32 f4 = 4; optional int32 f5 = 5; optional int32 f6 = 6;
    }
    enum Color { RED = 0; GREEN = 1; }
    message Root {
      optional Leaf leaf = 1;
      repeated Leaf leaves = 2;
      oneof pick { Tiny tiny = 3; Leaf other = 4; }
      map<string, int32> counts = 5;
      optional group G = 6 { optional int32 x = 7; optional Color c = 8; }
      repeated Wide wide = 9;
      optional Root next = 10;
    }
    message OnlyWide { repeated Wide wide = 1; }
"#;

fn schema() -> Schema {
    Schema::from_proto_source("inl.proto", SCHEMA).unwrap()
}

fn decoders(schema: &Schema, options: EngineOptions) -> (Decoder, Decoder) {
    let jit = schema.decoder_with_options("inl.Root", &options.with_kind(EngineKind::Jit)).unwrap();
    let interp = schema.decoder_with_options("inl.Root", &options.with_kind(EngineKind::Interpreter)).unwrap();
    (jit, interp)
}

/// The text of the tree, or the error, of one decode.
fn outcome(decoder: &Decoder, input: &[u8]) -> Result<String, String> {
    let arena = Arena::new();
    decoder.decode(input, &arena).map(|m| m.to_text_format()).map_err(|e| format!("{:?} at {}", e.kind, e.offset))
}

#[test]
fn small_leaves_are_inlined_and_wide_ones_called() {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return;
    }
    let schema = schema();
    let (layouts, root) = (schema.layouts(), schema.layouts().index_of("inl.Root").unwrap());
    let compiled = Compiled::compile(layouts, root, &CompileOptions::default()).unwrap();
    let by_name = |name: &str| compiled.stats().iter().find(|t| t.message_type == name).unwrap().clone();
    // Leaf, Tiny, the map entry and the group are leaves of at most four fields.
    assert!(by_name("inl.Root").inlined_calls >= 4, "{:?}", by_name("inl.Root"));
    // Leaves themselves call nothing.
    assert_eq!(by_name("inl.Leaf").inlined_calls, 0);
    // Six fields: called, not inlined.
    let only = schema.layouts().index_of("inl.OnlyWide").unwrap();
    let compiled = Compiled::compile(layouts, only, &CompileOptions::default()).unwrap();
    assert_eq!(compiled.stats()[0].inlined_calls, 0);
}

#[test]
fn inlined_leaves_decode_as_the_interpreter_does() {
    let schema = schema();
    let desc = schema.pool().get_message_by_name("inl.Root").unwrap();
    let (jit, interp) = decoders(&schema, EngineOptions::default());
    let mut rng = common::Rng(0x001a_11e5);
    for _ in 0..300 {
        let msg = common::random_message(&desc, 4, &mut rng);
        let bytes = msg.encode_to_vec();
        let want = outcome(&interp, &bytes);
        assert!(want.is_ok(), "{want:?}");
        assert_eq!(outcome(&jit, &bytes), want);
        // Every prefix, and one corrupted byte: the same acceptance, tree or error offset.
        for cut in 0..bytes.len() {
            assert_eq!(outcome(&jit, &bytes[..cut]), outcome(&interp, &bytes[..cut]), "prefix {cut} of {bytes:02x?}");
        }
        if !bytes.is_empty() {
            let mut bad = bytes.clone();
            let at = rng.index(bad.len());
            bad[at] ^= 1 << rng.below(8);
            assert_eq!(outcome(&jit, &bad), outcome(&interp, &bad), "{bad:02x?}");
        }
    }
}

#[test]
fn depth_limit_counts_inlined_levels() {
    let schema = schema();
    // Root > next > leaf: the inlined leaf is the third level.
    let leaf = [0x0a, 0x02, 0x08, 0x05];
    let mut next = vec![0x52, leaf.len() as u8];
    next.extend_from_slice(&leaf);
    for max_depth in 0..4 {
        let options = EngineOptions::default().with_max_depth(max_depth);
        let (jit, interp) = decoders(&schema, options);
        for input in [&leaf[..], &next[..]] {
            assert_eq!(outcome(&jit, input), outcome(&interp, input), "max_depth {max_depth}, {input:02x?}");
        }
    }
}
