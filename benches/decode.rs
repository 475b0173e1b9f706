//! Decode throughput: protojit's JIT and interpreter against prost-reflect, same bytes, same run.
//!
//! `cargo bench --bench decode`; results and ratios are recorded in BENCHMARKS.md.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use prost_reflect::DynamicMessage;
use protojit::{Arena, DecodeOptions, EngineKind, Schema};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

const CASES: &[(&str, &str, &str)] = &[
    ("google_message1_proto3", "benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1"),
    ("google_message1_proto2", "benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1"),
    ("google_message2", "benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
];

fn payload(name: &str) -> Vec<u8> {
    std::fs::read(corpus().join(format!("{name}.payload0.bin"))).expect("corpus payload")
}

fn decode(c: &mut Criterion) {
    let dir = corpus();
    if !dir.exists() {
        eprintln!("decode bench skipped: {} not found", dir.display());
        return;
    }
    let mut group = c.benchmark_group("decode");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (name, proto, type_name) in CASES {
        let bytes = payload(name);
        let schema = Schema::from_proto_files(&[dir.join(proto)], &[&dir]).unwrap();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for (arm, engine) in [("jit", EngineKind::Jit), ("interp", EngineKind::Interpreter)] {
            let decoder = schema.decoder_with(type_name, DecodeOptions::default(), engine).unwrap();
            let mut arena = Arena::new();
            group.bench_with_input(BenchmarkId::new(arm, name), &bytes, |b, bytes| {
                b.iter(|| {
                    arena.reset();
                    let msg = decoder.decode(bytes, &arena).unwrap();
                    std::hint::black_box(msg.block().as_ptr());
                })
            });
        }
        let desc = schema.pool().get_message_by_name(type_name).unwrap();
        group.bench_with_input(BenchmarkId::new("prost_reflect", name), &bytes, |b, bytes| {
            b.iter(|| std::hint::black_box(DynamicMessage::decode(desc.clone(), bytes.as_slice()).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
