//! Fuzz target: arbitrary bytes against several corpus schemas; the JIT and the
//! interpreter must accept and reject the same inputs with the same error and build the
//! same tree, with unknown fields kept and discarded (`UnknownFields::Discard`, where
//! compiled code skips them inline): discarding fails exactly where keeping fails.
//!
//! Run from `fuzz/`: `RUSTC_BOOTSTRAP=1 cargo fuzz run decode_differential` (needs
//! `../shared/corpus` beside the repository). The first input byte picks the schema.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema, UnknownFields};

const TARGETS: &[(&str, &str)] = &[
    ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
    ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1"),
    ("benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1"),
    ("osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("vector_tile.proto", "vector_tile.Tile"),
    ("descriptor.fds.bin", "google.protobuf.FileDescriptorSet"),
];

/// Per schema: the JIT and the interpreter keeping unknown fields, then both discarding them.
type Four = [Decoder; 4];

fn decoders() -> &'static Vec<Four> {
    static DECODERS: OnceLock<Vec<Four>> = OnceLock::new();
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
                let make = |kind, unknown| {
                    let options = options.clone().with_kind(kind).with_unknown_fields(unknown);
                    let d = schema.decoder_with_options(type_name, &options).unwrap();
                    if kind == EngineKind::Jit {
                        assert_eq!(d.stats().interpreted(), 0, "{type_name} must be compiled");
                    }
                    d
                };
                [
                    make(EngineKind::Jit, UnknownFields::Keep),
                    make(EngineKind::Interpreter, UnknownFields::Keep),
                    make(EngineKind::Jit, UnknownFields::Discard),
                    make(EngineKind::Interpreter, UnknownFields::Discard),
                ]
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else { return };
    let four = &decoders()[pick as usize % TARGETS.len()];
    let arenas: [Arena; 4] = std::array::from_fn(|_| Arena::new());
    let got: Vec<_> = four.iter().zip(&arenas).map(|(d, a)| d.decode(input, a).map(|t| t.to_text_format())).collect();
    for (i, what) in [(1, "interpreter"), (2, "jit discarding"), (3, "interpreter discarding")] {
        match (&got[0], &got[i]) {
            (Ok(_), Ok(_)) => {}
            (Err(a), Err(b)) => assert_eq!(a, b, "errors differ: jit vs {what}"),
            (a, b) => panic!("jit {:?} vs {what} {:?}", a.as_ref().err(), b.as_ref().err()),
        }
    }
    if let (Ok(a), Ok(b), Ok(c), Ok(d)) = (&got[0], &got[1], &got[2], &got[3]) {
        assert_eq!(a, b, "trees differ");
        assert_eq!(c, d, "trees differ when discarding");
    }
});
