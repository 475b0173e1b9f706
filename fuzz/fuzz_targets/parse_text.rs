//! Fuzz target: the text format parser on arbitrary documents with fixed schemas: no panic; what
//! it accepts decodes; and once decoded and written back as text format, parsing gives the
//! canonical bytes (the tree's own encoding).
//!
//! The first input byte picks the schema and root type (see `common::TARGETS`); the rest is
//! the document.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use protojit::{text_to_binary, Arena, ParseOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, doc)) = data.split_first() else { return };
    let decoders = common::decoders();
    let (_, interp) = &decoders[pick as usize % decoders.len()];
    let (layouts, root) = (interp.engine().layouts(), interp.engine().root());
    let options = ParseOptions { ignore_unknown_fields: pick & 0x80 != 0, max_depth: 24 };
    let mut bytes = Vec::new();
    if text_to_binary(layouts, root, doc, &options, &mut bytes).is_err() {
        assert!(bytes.is_empty(), "output left behind by a failed parse");
        return;
    }
    let arena = Arena::new();
    let msg = interp.decode(&bytes, &arena).expect("the parser's output does not decode");
    let canonical = msg.encode_to_vec();
    let rendered = msg.to_text_format().into_bytes();
    let mut again = Vec::new();
    if let Err(e) = text_to_binary(layouts, root, &rendered, &options, &mut again) {
        panic!("our own output does not parse back: {e}\n{}", String::from_utf8_lossy(&rendered));
    }
    assert_eq!(again, canonical, "parse(write(tree)) is not the tree's encoding");
});
