//! Shared by the fuzz targets: the fixed schemas they decode with, loaded once per process.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub mod seeds;

use protojit::{Decoder, EngineKind, EngineOptions, Schema};

/// A schema and a root type in it: `(file, root type)`. Files ending in `.bin` are descriptor
/// sets; the others are `.proto` files. `tests/...` is the repository's, the rest the
/// shared corpus's.
pub const TARGETS: &[(&str, &str)] = &[
    // proto2: groups, closed enums, extensions, declared defaults, maps, oneofs, recursion.
    ("tests/schemas/everything.proto", "everything.Everything"),
    // proto3: open enums, implicit presence, packed by default, maps, oneofs.
    ("tests/schemas/everything3.proto", "everything3.Everything3"),
    // Every well-known type with a special JSON form (Any, wrappers, Struct, Timestamp, ...).
    ("tests/schemas/reflect_wkt.proto", "reflectwkt.Wkt"),
    ("tests/schemas/textcases.proto", "textcases.Maps"),
    ("tests/schemas/textcases.proto", "textcases.Groups"),
    ("tests/schemas/textcases.proto", "textcases.Oneofs"),
    ("tests/schemas/textcases3.proto", "textcases3.WithWkt"),
    ("tests/schemas/ext_other.proto", "extbase.Base"),
    ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
    ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1"),
    ("osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("vector_tile.proto", "vector_tile.Tile"),
    // Record types of the column benchmarks (packed lists, nested messages).
    ("osmformat.proto", "OSMPBF.Way"),
    ("vector_tile.proto", "vector_tile.Tile.Feature"),
    ("descriptor.fds.bin", "google.protobuf.FileDescriptorSet"),
];

/// The repository root (the fuzz crate lives in `fuzz/`).
pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The public corpus beside the repository.
pub fn corpus_dir() -> PathBuf {
    repo_dir().join("../shared/corpus")
}

/// Loads the schema of `file` (see [`TARGETS`]).
pub fn load_schema(file: &str) -> Schema {
    if let Some(rel) = file.strip_prefix("tests/") {
        let dir = repo_dir().join("tests/schemas");
        let path = repo_dir().join("tests").join(rel);
        return Schema::from_proto_files(&[path], &[dir]).unwrap();
    }
    let dir = corpus_dir();
    if file.ends_with(".bin") {
        Schema::from_descriptor_set(&std::fs::read(dir.join(file)).unwrap()).unwrap()
    } else {
        Schema::from_proto_files(&[dir.join(file)], &[&dir]).unwrap()
    }
}

/// One JIT and one interpreter decoder per entry of [`TARGETS`], with `max_depth`.
pub fn decoder_pairs(max_depth: u32) -> Vec<(Decoder, Decoder)> {
    let mut schemas: Vec<(&str, Schema)> = Vec::new();
    TARGETS
        .iter()
        .map(|(file, type_name)| {
            if !schemas.iter().any(|(f, _)| f == file) {
                schemas.push((file, load_schema(file)));
            }
            let schema = &schemas.iter().find(|(f, _)| f == file).unwrap().1;
            let options = EngineOptions::default().with_max_depth(max_depth);
            let jit = schema.decoder_with_options(type_name, &options.clone().with_kind(EngineKind::Jit)).unwrap();
            let interp = schema.decoder_with_options(type_name, &options.with_kind(EngineKind::Interpreter)).unwrap();
            assert_eq!(jit.stats().interpreted(), 0, "{type_name} must be compiled");
            (jit, interp)
        })
        .collect()
}

/// [`decoder_pairs`] with a depth limit of 24, cached for the process: deep enough for every
/// shape the schemas have, shallow enough that JSON output stays under serde_json's
/// parse recursion limit (128) and short inputs reach the depth checks.
pub fn decoders() -> &'static [(Decoder, Decoder)] {
    static DECODERS: OnceLock<Vec<(Decoder, Decoder)>> = OnceLock::new();
    DECODERS.get_or_init(|| decoder_pairs(24))
}
