//! Shared test support: finding the shared corpus, the engines under test, and a deep
//! equality for `DynamicMessage` that treats "absent" and "default" alike where protobuf does.
#![allow(dead_code)]

use std::path::PathBuf;

use prost_reflect::{DynamicMessage, Kind, MapKey, ReflectMessage, Value};
use protojit::EngineKind;

/// Every engine a differential test must run against.
pub const ENGINES: [EngineKind; 2] = [EngineKind::Interpreter, EngineKind::Jit];

/// `../shared/corpus` relative to the repository root, if present. When absent, prints why
/// the calling test is skipped (so the skip shows in the test output) and returns `None`.
pub fn corpus_dir(test: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.join("README.md").exists() {
        Some(dir)
    } else {
        println!("SKIPPED {test}: shared corpus not found at {} (see README)", dir.display());
        None
    }
}

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

/// The schema for a corpus `.proto` file. `descriptor.proto` (2026 syntax that protox
/// 0.10 rejects) is read from the descriptor set it describes, so tests do not need protoc.
pub fn corpus_schema(dir: &std::path::Path, proto: &str) -> protojit::Schema {
    if proto == "descriptor.proto" {
        let bytes = std::fs::read(dir.join("descriptor.fds.bin")).unwrap();
        return protojit::Schema::from_descriptor_set(&bytes).unwrap();
    }
    protojit::Schema::from_proto_files(&[dir.join(proto)], &[dir]).unwrap()
}

/// Deep equality of two messages as protobuf defines it: a field without presence that
/// holds its default equals an absent one; floats compare by bits (NaN equals NaN); maps
/// compare as maps; unknown fields compare in order. Returns the path of the first
/// difference.
pub fn dyn_diff(a: &DynamicMessage, b: &DynamicMessage) -> Option<String> {
    diff_message(a, b, &mut String::from(a.descriptor().full_name()))
}

/// Panics with the path of the first difference.
#[track_caller]
pub fn assert_dyn_eq(a: &DynamicMessage, b: &DynamicMessage) {
    if let Some(path) = dyn_diff(a, b) {
        panic!("messages differ at {path}");
    }
}

fn diff_message(a: &DynamicMessage, b: &DynamicMessage, path: &mut String) -> Option<String> {
    if a.descriptor() != b.descriptor() {
        return Some(format!("{path}: types {} vs {}", a.descriptor().full_name(), b.descriptor().full_name()));
    }
    for field in a.descriptor().fields() {
        let (ha, hb) = (a.has_field(&field), b.has_field(&field));
        let len = path.len();
        path.push('.');
        path.push_str(field.name());
        if ha != hb {
            return Some(format!("{path}: present {ha} vs {hb}"));
        }
        if ha {
            if let Some(d) = diff_value(&a.get_field(&field), &b.get_field(&field), &field.kind(), path) {
                return Some(d);
            }
        }
        path.truncate(len);
    }
    let ea: Vec<_> = a.extensions().collect();
    let eb: Vec<_> = b.extensions().collect();
    if ea.len() != eb.len() {
        return Some(format!("{path}: {} vs {} extensions", ea.len(), eb.len()));
    }
    for ((da, va), (db, vb)) in ea.iter().zip(&eb) {
        if da.full_name() != db.full_name() {
            return Some(format!("{path}: extension {} vs {}", da.full_name(), db.full_name()));
        }
        if let Some(d) = diff_value(va, vb, &da.kind(), &mut format!("{path}.[{}]", da.full_name())) {
            return Some(d);
        }
    }
    let ua: Vec<_> = a.unknown_fields().collect();
    let ub: Vec<_> = b.unknown_fields().collect();
    if ua != ub {
        return Some(format!("{path}: unknown fields {ua:?} vs {ub:?}"));
    }
    None
}

fn diff_value(a: &Value, b: &Value, kind: &Kind, path: &mut String) -> Option<String> {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) => None,
        (Value::F64(x), Value::F64(y)) if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) => None,
        (Value::F32(_), Value::F32(_)) | (Value::F64(_), Value::F64(_)) => Some(format!("{path}: {a:?} vs {b:?}")),
        (Value::Message(x), Value::Message(y)) => diff_message(x, y, path),
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} vs {} elements", x.len(), y.len()));
            }
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                if let Some(d) = diff_value(u, v, kind, path) {
                    return Some(d);
                }
                path.truncate(len);
            }
            None
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} vs {} map entries", x.len(), y.len()));
            }
            let value_kind = match kind {
                Kind::Message(m) => m.map_entry_value_field().kind(),
                _ => kind.clone(),
            };
            let mut keys: Vec<&MapKey> = x.keys().collect();
            keys.sort();
            for k in keys {
                let len = path.len();
                path.push_str(&format!("[{k:?}]"));
                match y.get(k) {
                    None => return Some(format!("{path}: key missing on the right")),
                    Some(v) => {
                        if let Some(d) = diff_value(&x[k], v, &value_kind, path) {
                            return Some(d);
                        }
                    }
                }
                path.truncate(len);
            }
            None
        }
        _ if a == b => None,
        _ => Some(format!("{path}: {a:?} vs {b:?}")),
    }
}
