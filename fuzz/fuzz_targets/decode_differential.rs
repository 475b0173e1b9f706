//! Fuzz target: arbitrary bytes against several corpus schemas; the JIT and the
//! interpreter must accept and reject the same inputs with the same error and build the
//! same tree.
//!
//! Run from `fuzz/`: `RUSTC_BOOTSTRAP=1 cargo fuzz run decode_differential` (needs
//! `../shared/corpus` beside the repository). The first input byte picks the schema.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use protojit::{Arena, EngineOptions, Decoder, EngineKind, Schema};

const TARGETS: &[(&str, &str)] = &[
    ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
    ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1"),
    ("benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1"),
    ("osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("vector_tile.proto", "vector_tile.Tile"),
    ("descriptor.fds.bin", "google.protobuf.FileDescriptorSet"),
];

fn decoders() -> &'static Vec<(Decoder, Decoder)> {
    static DECODERS: OnceLock<Vec<(Decoder, Decoder)>> = OnceLock::new();
    DECODERS.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
        TARGETS
            .iter()
            .map(|(file, type_name)| {
                let schema = if file.ends_with(".bin") {
                    Schema::from_descriptor_set(&std::fs::read(dir.join(file)).unwrap()).unwrap()
                } else {
                    Schema::from_proto_files(&[dir.join(file)], &[&dir]).unwrap()
                };
                // A small depth limit reaches the depth checks with short inputs.
                let options = EngineOptions::default().with_max_depth(12);
                let jit = schema.decoder_with_options(type_name, &options.clone().with_kind(EngineKind::Jit)).unwrap();
                let interp = schema.decoder_with_options(type_name, &options.with_kind(EngineKind::Interpreter)).unwrap();
                assert_eq!(jit.stats().interpreted(), 0, "{type_name} must be compiled");
                (jit, interp)
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else { return };
    let (jit, interp) = &decoders()[pick as usize % TARGETS.len()];
    let (arena_a, arena_b) = (Arena::new(), Arena::new());
    match (jit.decode(input, &arena_a), interp.decode(input, &arena_b)) {
        (Ok(a), Ok(b)) => assert_eq!(a.to_text_format(), b.to_text_format(), "trees differ"),
        (Err(a), Err(b)) => assert_eq!(a, b, "errors differ"),
        (a, b) => panic!("jit {:?} vs interpreter {:?}", a.err(), b.err()),
    }
});
