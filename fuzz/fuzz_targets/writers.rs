//! Fuzz target: every writer (text format, proto3 JSON under several options, binary) over
//! trees decoded from arbitrary bytes with fixed schemas: no panic, and JSON parses back.
//!
//! The first input byte picks the schema and root type (see `common::TARGETS`); the rest is
//! the message. Both engines decode it; whichever tree results is written.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use protojit::{Arena, JsonOptions, MessageRef};

const JSON_OPTIONS: [JsonOptions; 4] = [
    JsonOptions::new(),
    JsonOptions::new().use_proto_field_name(true).use_enum_numbers(true),
    JsonOptions::new().emit_defaults(true).stringify_64_bit_integers(false),
    JsonOptions::new().emit_defaults(true).use_enum_numbers(true).use_proto_field_name(true),
];

fn write_all(msg: &MessageRef<'_>) {
    let text = msg.to_text_format();
    // Text format is ASCII-safe output: escapes, never raw control bytes past the line end.
    assert!(!text.contains('\0'), "text format wrote a NUL byte:\n{text}");
    for options in &JSON_OPTIONS {
        match msg.to_json_string(options) {
            Ok(json) => {
                if let Err(e) = serde_json::from_str::<serde_json::Value>(&json) {
                    // Deeply nested `Any`s can go past serde_json's own nesting limit; that is
                    // the reader's limit, not a writer fault.
                    assert!(e.to_string().contains("recursion limit"), "JSON does not parse ({e}): {json}");
                }
                // The pretty form is the same document.
                let pretty = msg.to_json_string_pretty(options).expect("pretty JSON fails where compact did not");
                if let (Ok(a), Ok(b)) = (
                    serde_json::from_str::<serde_json::Value>(&json),
                    serde_json::from_str::<serde_json::Value>(&pretty),
                ) {
                    assert_eq!(a, b, "compact and pretty JSON differ");
                }
            }
            // A message without a JSON form (Timestamp out of range, Any of an unknown type,
            // ...) is an error, not a panic.
            Err(_) => {}
        }
    }
    let bytes = msg.encode_to_vec();
    assert_eq!(bytes.len(), msg.encoded_len(), "encoded_len disagrees with encode");
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else { return };
    let decoders = common::decoders();
    let (jit, interp) = &decoders[pick as usize % decoders.len()];
    let arena = Arena::new();
    if let Ok(msg) = jit.decode(input, &arena) {
        write_all(&msg);
    }
    if let Ok(msg) = interp.decode(input, &arena) {
        write_all(&msg);
    }
});
