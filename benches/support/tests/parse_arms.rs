//! The parse bench's cross-check, run as a test: on every payload of the shared corpus,
//! rendered as proto3 JSON and as text format by protojit's writers, the peer arms (prost +
//! pbjson, prost-reflect from JSON, prost-reflect's text parser) and protojit's parsers all
//! give bytes that decode to the same message (protojit's bytes rendering back to the same
//! JSON), so an arm that drifts fails here before a benchmark run would.

use prost_reflect::DynamicMessage;
use protojit::{json_to_binary, text_to_binary, JsonOptions, ParseOptions};
use protojit_bench_support::parse::{pbjson_arm, reflect_json_to_binary, reflect_text_to_binary};
use protojit_bench_support::shared_cases;

#[test]
fn every_parse_arm_gives_the_same_message() {
    let cases = shared_cases();
    let options = ParseOptions::default();
    for c in &cases {
        let desc = c.schema.pool().get_message_by_name(&c.message).unwrap();
        let decoder = c.schema.decoder(&c.message).unwrap();
        let owned = decoder.decode_owned(c.bytes.clone()).unwrap();
        let json = owned.message().to_json_string(&JsonOptions::default()).unwrap();
        let text = owned.message().to_text_format();
        let layouts = c.schema.layouts();
        let root = layouts.index_of(&c.message).unwrap();
        // protojit's bytes are the reference (the payload itself may hold proto3 defaults on
        // the wire, which no JSON or text rendering keeps): they must render back to the same
        // JSON, and the text parser must give the same bytes.
        let mut ours = Vec::new();
        json_to_binary(layouts, root, json.as_bytes(), &options, &mut ours).unwrap();
        let back = decoder.decode_owned(ours.clone()).unwrap();
        assert_eq!(
            back.message().to_json_string(&JsonOptions::default()).unwrap(),
            json,
            "{}: JSON round trip",
            c.name
        );
        let want = DynamicMessage::decode(desc.clone(), ours.as_slice()).unwrap();
        let mut from_text = Vec::new();
        text_to_binary(layouts, root, text.as_bytes(), &options, &mut from_text).unwrap();
        assert_eq!(from_text, ours, "{}: protojit's text and JSON bytes differ", c.name);

        let check = |arm: &str, bytes: &[u8]| {
            let got = DynamicMessage::decode(desc.clone(), bytes).unwrap_or_else(|e| panic!("{}: {arm}: {e}", c.name));
            assert!(got == want, "{}: {arm} gives a different message", c.name);
        };

        let mut out = Vec::new();
        let arm =
            pbjson_arm(&c.message).unwrap_or_else(|| panic!("{}: no prost + pbjson code for {}", c.name, c.message));
        out.clear();
        arm.json_to_binary(&json, &mut out).unwrap_or_else(|e| panic!("{}: pbjson: {e}", c.name));
        check("pbjson", &out);

        out.clear();
        reflect_json_to_binary(&desc, &json, &mut out).unwrap_or_else(|e| panic!("{}: reflect_json: {e}", c.name));
        check("reflect_json", &out);

        out.clear();
        reflect_text_to_binary(&desc, &text, &mut out).unwrap_or_else(|e| panic!("{}: reflect_text: {e}", c.name));
        check("reflect_text", &out);
    }
}
