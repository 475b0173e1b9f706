//! Round trips through the parsers: decode → proto3 JSON or text format (our writers) →
//! `json_to_binary` / `text_to_binary` gives the canonical bytes (the tree's own encoding,
//! up to the order of map entries), on every shared corpus payload and every payload the
//! project's generators make.

mod common;

use prost_reflect::{DynamicMessage, MessageDescriptor};
use protojit::{json_to_binary, text_to_binary, Decoder, JsonOptions, ParseOptions, Schema};
use protojit_arena::{LayoutIndex, Layouts};
use protojit_parse::{json_to_binary_with, JsonReaders};

/// Whether `back` is the canonical encoding. Both writers put map entries in key order and
/// the parsers keep the order they read, so a payload whose map entries are not in key order
/// on the wire comes back with the same entries reordered: those are compared as messages
/// (where a map is unordered), and must still be as long.
fn same_message(desc: &MessageDescriptor, back: &[u8], canonical: &[u8]) -> bool {
    let decode = |b: &[u8]| DynamicMessage::decode(desc.clone(), b).expect("parsed bytes decode");
    back == canonical || (back.len() == canonical.len() && decode(back) == decode(canonical))
}

/// `json_to_binary`'s two readers (its direct one, and serde_json on what that does not
/// take) on `json` and on mutations of it: whatever the direct reader takes, serde_json
/// takes with the same bytes, and `json_to_binary` gives what serde_json alone gives
/// (bytes or error). Returns whether the direct reader took `json` itself.
fn readers_agree(layouts: &Layouts, root: LayoutIndex, json: &[u8], mutations: usize, what: &str) -> bool {
    let options = ParseOptions::default();
    let run = |readers: JsonReaders, input: &[u8]| {
        let mut out = vec![7];
        let result = json_to_binary_with(readers, layouts, root, input, &options, &mut out);
        (result, out)
    };
    let check = |input: &[u8], case: &str| {
        let serde = run(JsonReaders::Serde, input);
        let direct = run(JsonReaders::Direct, input);
        if direct.0.is_ok() {
            assert_eq!(direct, serde, "{what} ({case}): the direct reader and serde_json differ");
        } else {
            assert_eq!(direct.1, [7], "{what} ({case}): a refused input left output behind");
        }
        assert_eq!(run(JsonReaders::Both, input), serde, "{what} ({case}): json_to_binary differs from serde_json");
        direct.0.is_ok()
    };
    let taken = check(json, "as written");
    // Mutations: a byte replaced by one of JSON's own, or dropped, or doubled, at places a
    // small generator picks (the same every run).
    const BYTES: &[u8] = b"\"\\{}[],:0-1e.ntu \n\x01\x7f\xc3aA";
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ json.len() as u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    for m in 0..if json.is_empty() { 0 } else { mutations } {
        let at = next() % json.len();
        let mut input = json.to_vec();
        match m % 3 {
            0 => input[at] = BYTES[next() % BYTES.len()],
            1 => _ = input.remove(at),
            _ => input.insert(at, input[at]),
        }
        check(&input, &format!("mutation {m} at byte {at}"));
    }
    taken
}

/// Decodes `bytes`, writes it both ways, parses each back and compares with the canonical
/// re-encoding; whether `json_to_binary`'s direct reader took the JSON.
fn round_trip(decoder: &Decoder, bytes: Vec<u8>, what: &str) -> bool {
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
    // Every mutation parses the whole input three times more: fewer for large payloads.
    // PROTOJIT_JSON_MUTATIONS=N runs N per payload up to 64 KiB (a longer fuzz, outside CI).
    let mutations = match json.len() <= 1 << 16 {
        true => common::env_count("PROTOJIT_JSON_MUTATIONS").unwrap_or(120),
        false => 8,
    };
    let taken = readers_agree(layouts, root, json.as_bytes(), mutations, what);
    let text = msg.to_text_format();
    back.clear();
    text_to_binary(layouts, root, text.as_bytes(), &options, &mut back).unwrap_or_else(|e| panic!("{what} text: {e}"));
    assert!(
        same_message(desc, &back, &canonical),
        "{what}: text round trip differs ({} vs {} bytes)",
        back.len(),
        canonical.len()
    );
    taken
}

#[test]
fn every_shared_corpus_payload() {
    let Some(dir) = common::corpus_dir("every_shared_corpus_payload") else { return };
    for (proto, type_name, payload) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let decoder = schema.decoder(type_name).unwrap();
        // No well-known type with a JSON form of its own is in them: the direct reader
        // takes every one.
        assert!(
            round_trip(&decoder, std::fs::read(dir.join(payload)).unwrap(), payload),
            "{payload}: left to serde_json"
        );
    }
}

#[test]
fn every_generated_payload() {
    let schema = Schema::from_pool(&protojit_corpus::pool()).unwrap();
    let payloads = protojit_corpus::payloads();
    assert!(payloads.len() > 10);
    let mut by_serde = Vec::new();
    for p in payloads {
        let decoder = schema.decoder(&p.message).unwrap();
        if !round_trip(&decoder, p.bytes, &p.name) {
            by_serde.push(p.name);
        }
    }
    assert!(by_serde.is_empty(), "left to serde_json: {by_serde:?}");
}
