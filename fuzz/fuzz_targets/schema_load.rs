//! Fuzz target: `Schema::from_descriptor_set` over arbitrary and mutated descriptor sets;
//! whatever loads must make working decoders (both engines, agreeing) for its types.
//!
//! Input: `[mode][...]`.
//! - even mode: `[lo][hi][descriptor set bytes][message bytes]`, the last `u16(lo, hi)` bytes
//!   (at most all of them) are the message.
//! - odd mode: `[seed][ops][op * 4][message bytes]`: one of the built-in hostile sets
//!   (`common::seeds`: recursion, field numbers up to 2^29 - 1, 5,000 fields, 200 nested
//!   declarations, colliding names) with `ops % 8` byte overwrites `[pos: 3 bytes LE][byte]`.
//!
//! `PROTOJIT_WRITE_SEEDS=DIR` writes the built-in sets as even-mode inputs into `DIR` first
//! (a corpus for raw mutation: `fuzz/seeds/schema_load/`).
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use protojit::{Arena, EngineKind, EngineOptions, Schema};

fn seeds() -> &'static Vec<(&'static str, Vec<u8>)> {
    static SEEDS: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let seeds = common::seeds::seed_sets();
        if let Some(dir) = std::env::var_os("PROTOJIT_WRITE_SEEDS") {
            std::fs::create_dir_all(&dir).unwrap();
            for (name, set) in &seeds {
                // Even mode, no message bytes.
                let mut input = vec![0, 0, 0];
                input.extend_from_slice(set);
                std::fs::write(std::path::Path::new(&dir).join(name), input).unwrap();
            }
        }
        seeds
    })
}

/// Loads `set`; for a few of its message types, decodes `message` with both engines.
fn check(set: &[u8], message: &[u8], picks: &[u8]) {
    // Editions sets and unknown syntaxes are fed too: the editions loader lowers the former
    // and refuses the latter before prost-reflect (which panics on any syntax it does not
    // know, `tests/fuzz_regressions.rs`) sees them.
    let Ok(schema) = Schema::from_descriptor_set(set) else { return };
    let names = schema.message_names();
    if names.is_empty() {
        return;
    }
    for &pick in picks.iter().take(3) {
        let name = &names[pick as usize % names.len()];
        let options = EngineOptions::default().with_max_depth(32);
        let jit = schema
            .decoder_with_options(name, &options.clone().with_kind(EngineKind::Jit))
            .expect("a listed type has a decoder");
        let interp = schema.decoder_with_options(name, &options.with_kind(EngineKind::Interpreter)).unwrap();
        let (arena_a, arena_b) = (Arena::new(), Arena::new());
        for input in [message, &[][..]] {
            match (jit.decode(input, &arena_a), interp.decode(input, &arena_b)) {
                (Ok(a), Ok(b)) => {
                    let text = a.to_text_format();
                    assert_eq!(text, b.to_text_format(), "{name}: trees differ");
                    let _ = a.to_json_string(&Default::default());
                    let again = a.encode_to_vec();
                    let c = jit.decode(&again, &arena_a).expect("re-encoded message decodes");
                    assert_eq!(text, c.to_text_format(), "{name}: re-encoding changed the tree");
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{name}: errors differ"),
                (a, b) => panic!("{name}: jit {:?} vs interpreter {:?}", a.err(), b.err()),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let seeds = seeds();
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        let [lo, hi, rest @ ..] = rest else { return };
        let m = (u16::from_le_bytes([*lo, *hi]) as usize).min(rest.len());
        let (set, message) = rest.split_at(rest.len() - m);
        check(set, message, &[mode / 2, *lo, *hi]);
    } else {
        let [seed, n_ops, rest @ ..] = rest else { return };
        let mut set = seeds[*seed as usize % seeds.len()].1.clone();
        let n = (*n_ops % 8) as usize;
        let (ops, message) = rest.split_at((n * 4).min(rest.len()));
        for op in ops.chunks_exact(4) {
            let pos = u32::from_le_bytes([op[0], op[1], op[2], 0]) as usize % set.len();
            set[pos] = op[3];
        }
        check(&set, message, &[mode / 2, *seed, *n_ops]);
    }
});
