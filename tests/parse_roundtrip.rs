//! Round trips through the parsers: decode → proto3 JSON or text format (our writers) →
//! `json_to_binary` / `text_to_binary` gives the canonical bytes (the tree's own encoding,
//! up to the order of map entries), on every shared corpus payload and every payload the
//! project's generators make.

mod common;

use prost_reflect::{DynamicMessage, MessageDescriptor};
use protojit::{json_to_binary, text_to_binary, Decoder, JsonOptions, ParseOptions, Schema};

/// Whether `back` is the canonical encoding. Both writers put map entries in key order and
/// the parsers keep the order they read, so a payload whose map entries are not in key order
/// on the wire comes back with the same entries reordered: those are compared as messages
/// (where a map is unordered), and must still be as long.
fn same_message(desc: &MessageDescriptor, back: &[u8], canonical: &[u8]) -> bool {
    let decode = |b: &[u8]| DynamicMessage::decode(desc.clone(), b).expect("parsed bytes decode");
    back == canonical || (back.len() == canonical.len() && decode(back) == decode(canonical))
}

/// Decodes `bytes`, writes it both ways, parses each back and compares with the canonical
/// re-encoding.
fn round_trip(decoder: &Decoder, bytes: Vec<u8>, what: &str) {
    let owned = decoder.decode_owned(bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
    let msg = owned.message();
    let canonical = msg.encode_to_vec();
    let desc = decoder.descriptor();
    let (layouts, root) = (decoder.engine().layouts(), decoder.engine().root());
    let options = ParseOptions::default();
    let json = msg.to_json_string(&JsonOptions::default()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut back = Vec::new();
    json_to_binary(layouts, root, json.as_bytes(), &options, &mut back).unwrap_or_else(|e| panic!("{what} JSON: {e}"));
    assert!(
        same_message(desc, &back, &canonical),
        "{what}: JSON round trip differs ({} vs {} bytes)",
        back.len(),
        canonical.len()
    );
    let text = msg.to_text_format();
    back.clear();
    text_to_binary(layouts, root, text.as_bytes(), &options, &mut back).unwrap_or_else(|e| panic!("{what} text: {e}"));
    assert!(
        same_message(desc, &back, &canonical),
        "{what}: text round trip differs ({} vs {} bytes)",
        back.len(),
        canonical.len()
    );
}

#[test]
fn every_shared_corpus_payload() {
    let Some(dir) = common::corpus_dir("every_shared_corpus_payload") else { return };
    for (proto, type_name, payload) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let decoder = schema.decoder(type_name).unwrap();
        round_trip(&decoder, std::fs::read(dir.join(payload)).unwrap(), payload);
    }
}

#[test]
fn every_generated_payload() {
    let schema = Schema::from_pool(&protojit_corpus::pool()).unwrap();
    let payloads = protojit_corpus::payloads();
    assert!(payloads.len() > 10);
    for p in payloads {
        let decoder = schema.decoder(&p.message).unwrap();
        round_trip(&decoder, p.bytes, &p.name);
    }
}
