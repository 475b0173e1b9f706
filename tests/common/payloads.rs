//! The shared corpus payloads and how to decode them (shared by the root and CLI tests).

/// The corpus payloads with their schema file and message type, as listed in the corpus README.
pub const PAYLOADS: &[(&str, &str, &str)] = &[
    ("benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1", "google_message1_proto2.payload0.bin"),
    ("benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1", "google_message1_proto3.payload0.bin"),
    ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2", "google_message2.payload0.bin"),
    ("benchmarks.proto", "benchmarks.BenchmarkDataset", "dataset.google_message1_proto2.pb"),
    ("benchmarks.proto", "benchmarks.BenchmarkDataset", "dataset.google_message1_proto3.pb"),
    ("benchmarks.proto", "benchmarks.BenchmarkDataset", "dataset.google_message2.pb"),
    ("osmformat.proto", "OSMPBF.HeaderBlock", "liechtenstein.block0.headerblock.bin"),
    ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block1.primitiveblock-dense.bin"),
    ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block40.primitiveblock-ways.bin"),
    ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block45.primitiveblock-relations.bin"),
    ("vector_tile.proto", "vector_tile.Tile", "mvt-chicago-13-2101-3044.mvt"),
    ("vector_tile.proto", "vector_tile.Tile", "mvt-osmqa-astana-12-2860-1368.mvt"),
    ("vector_tile.proto", "vector_tile.Tile", "mvt-sanfrancisco-15-5238-12666.mvt"),
    ("vector_tile.proto", "vector_tile.Tile", "vector-tile-js-14-8801-5371.vector.pbf"),
    ("descriptor.proto", "google.protobuf.FileDescriptorSet", "descriptor.fds.bin"),
    ("descriptor.proto", "google.protobuf.FileDescriptorSet", "descriptor_with_source_info.fds.bin"),
];
