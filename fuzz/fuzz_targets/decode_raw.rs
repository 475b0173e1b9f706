//! Fuzz target: `decode_raw_to_text` (protoc `--decode_raw`) over arbitrary bytes: no panic,
//! errors point inside the input, and output is well-formed (balanced braces).
#![no_main]

use libfuzzer_sys::fuzz_target;
use protojit_reflect::decode_raw_to_text;

fuzz_target!(|data: &[u8]| {
    match decode_raw_to_text(data) {
        Ok(text) => {
            // Every `N {` a nested message or group opens is closed on a line of its own.
            let opened = text.lines().filter(|l| l.trim_end().ends_with(" {")).count();
            let closed = text.lines().filter(|l| l.trim() == "}").count();
            assert_eq!(opened, closed, "unbalanced output:\n{text}");
            // Accepting input means every byte was consumed by some field.
            assert!(data.is_empty() || !text.is_empty(), "non-empty input printed nothing");
        }
        Err(e) => assert!(e.offset <= data.len(), "error offset {} past the input ({})", e.offset, data.len()),
    }
});
