//! Editions payloads through both engines and every output: the interpreter and the JIT build the same tree, whose text equals protoc 35.1's `--decode`, whose JSON equals protobuf Python's `json_format` (presence deciding default output), whose re-encoding equals protobuf's, and which reads as its proto2/proto3 twin does.

mod common;
mod editions_support;

use editions_support::{cases, expected, fixture, records, schema, Case};
use protojit::{Arena, EngineKind, EngineOptions, JsonOptions, MessageRef, Schema};

fn json(text: &[u8]) -> serde_json::Value {
    serde_json::from_slice(text).unwrap()
}

/// Checks every output of `msg` against what protobuf's tools recorded for `case`.
fn check_outputs(case: &Case, msg: &MessageRef<'_>, what: &str) {
    let text = msg.to_text_format();
    assert_eq!(text, String::from_utf8(expected(case, "txt")).unwrap(), "{what}: text differs from protoc --decode");
    let plain = msg.to_json_string(&JsonOptions::default()).unwrap();
    assert_eq!(json(plain.as_bytes()), json(&expected(case, "json")), "{what}: JSON differs from json_format");
    let defaults = msg.to_json_string(&JsonOptions::default().emit_defaults(true)).unwrap();
    assert_eq!(
        json(defaults.as_bytes()),
        json(&expected(case, "defaults.json")),
        "{what}: JSON with defaults differs from json_format(always_print_fields_with_no_presence)"
    );
    // protobuf writes extensions in an order of its own (upb: newest first), so the top-level
    // records are compared as a multiset; each record (packed or expanded, length-prefixed
    // or delimited, nested messages) must be byte for byte protobuf's.
    let (mut ours, mut theirs) = (records(&msg.encode_to_vec()), records(&expected(case, "bin")));
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "{what}: re-encoding differs from SerializeToString");
}

/// Every recorded case, both engines: the same tree (text, read API) and protobuf's outputs.
#[test]
fn engines_agree_and_match_protobuf_on_every_fixture() {
    let mut checked = 0;
    for case in cases() {
        let Some(schema) = schema(&case) else { continue };
        let bytes = fixture(&case.payload);
        let mut texts = Vec::new();
        let mut reads = Vec::new();
        for engine in common::ENGINES {
            let decoder =
                schema.decoder_with_options(&case.type_name, &EngineOptions::default().with_kind(engine)).unwrap();
            if engine == EngineKind::Jit && cfg!(target_arch = "x86_64") {
                assert_eq!(decoder.stats().interpreted(), 0, "{}: every type compiles", case.type_name);
            }
            let arena = Arena::new();
            let what = format!("{} as {} ({engine:?})", case.payload, case.type_name);
            let msg = decoder.decode(&bytes, &arena).unwrap_or_else(|e| panic!("{what}: {e}"));
            check_outputs(&case, &msg, &what);
            texts.push(msg.to_text_format());
            reads.push(common::read_api::check_readers_agree(&msg, &what));
        }
        assert_eq!(texts[0], texts[1], "{}: engines differ", case.payload);
        assert!(reads[0] == reads[1], "{}: the engines' trees read differently", case.payload);
        checked += 1;
    }
    assert!(checked >= 3, "the fixture cases ran ({checked})");
}

/// The proto2/proto3 twins' payloads print the same text read as the legacy type and as its
/// editions form (the recorded protoc output says the same, checked above).
#[test]
fn twins_decode_alike() {
    let cases = cases();
    for payload in ["p2_twin.payload.bin", "p3_twin.payload.bin"] {
        let mut texts = Vec::new();
        for case in cases.iter().filter(|c| c.payload == payload) {
            let Some(schema) = schema(case) else { return };
            let decoder = schema.decoder(&case.type_name).unwrap();
            let arena = Arena::new();
            let bytes = fixture(payload);
            let msg = decoder.decode(&bytes, &arena).unwrap();
            texts.push((msg.to_text_format(), msg.unknown_fields().count(), msg.encode_to_vec()));
        }
        assert_eq!(texts.len(), 2, "{payload}: a legacy and an editions case");
        assert_eq!(texts[0], texts[1], "{payload}: the twins differ");
    }
}

/// Presence decides default output: an editions IMPLICIT scalar is written with its zero value
/// only with `emit_defaults`, an EXPLICIT one whenever set (also to zero).
#[test]
fn json_default_output_follows_presence() {
    let schema = Schema::from_descriptor_set(&fixture("mixed_2024.fds")).unwrap();
    let decoder = schema.decoder("fx.ed2024.Implicit").unwrap();
    let arena = Arena::new();
    // a = 0 (IMPLICIT, written by hand: protoc leaves it out), b = 0 (EXPLICIT), req = 0.
    let msg = decoder.decode(b"\x08\x00\x18\x00\x50\x00", &arena).unwrap();
    let plain = json(msg.to_json_string(&JsonOptions::default()).unwrap().as_bytes());
    assert_eq!(plain, serde_json::json!({"b": 0, "req": 0}));
    let defaults = json(msg.to_json_string(&JsonOptions::default().emit_defaults(true)).unwrap().as_bytes());
    assert_eq!(defaults["a"], serde_json::json!(0));
    assert_eq!(defaults["o"], serde_json::json!("OPEN_ZERO"));
    assert!(defaults.get("c").is_none(), "an explicit field that is absent stays out: {defaults}");
    // Re-encoding: the implicit zero is dropped, the explicit zeros are kept.
    assert_eq!(msg.encode_to_vec(), b"\x18\x00\x50\x00");
}
