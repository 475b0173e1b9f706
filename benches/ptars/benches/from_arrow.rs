//! The way back, `RecordBatch` → protobuf messages: protojit-arrow's `Encoder` against ptars'
//! `record_batch_to_array` (which writes wire bytes straight from Arrow arrays), each on
//! its own library's table of the same records (every field, enums as Int32 numbers, both
//! libraries' default), with protojit's records → batch conversion in the same group for
//! the "≥ 0.5× the conversion into columns" goal.
//!
//! Run: `cd benches/ptars && cargo bench --bench from_arrow` (BENCHMARKS.md has the figures).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use protojit::EngineKind;
use protojit_arrow::arrow_array::Array;
use protojit_arrow::{ArrowOptions, Converter, Encoder, EnumColumns};
use protojit_bench_support::records::{self, RecordSet};

fn sets() -> Vec<RecordSet> {
    let mut sets = Vec::new();
    sets.extend(records::gm1(100_000));
    sets.push(records::telemetry(100_000));
    sets.extend(records::osm_ways());
    sets.extend(records::mvt_features());
    sets
}

fn bench(c: &mut Criterion) {
    for set in sets() {
        let mut g = c.benchmark_group(format!("from_arrow/{}", set.name));
        g.throughput(Throughput::Bytes(set.bytes() as u64));
        g.sample_size(20);
        let array59 = protojit_arrow::arrow_array::BinaryArray::from_iter_values(set.records.iter());
        let array60 = arrow_array_60::BinaryArray::from_iter_values(set.records.iter());
        let options = ArrowOptions {
            enums: EnumColumns::Number,
            decode: ArrowOptions::default().decode.with_kind(EngineKind::Jit),
            ..ArrowOptions::default()
        };
        let converter = Converter::new(&set.schema, set.message, &options).unwrap();
        converter.wait_for_appender();
        let encoder = Encoder::new(&set.schema, set.message, &options).unwrap();
        let desc = set.schema.pool().get_message_by_name(set.message).unwrap();
        let config = ptars_core::PtarsConfig::default();
        let ours = converter.convert_binary(&array59).unwrap();
        let theirs = ptars_core::binary_array_to_record_batch_direct(&array60, &desc, &config).unwrap();
        // Both give one message per row, and ours are the records' canonical bytes (a
        // check, not a timing: the records are canonical, so they come back as they were).
        let back = encoder.encode(&ours).unwrap();
        assert_eq!(back.len(), set.records.len());
        let same = set.records.iter().enumerate().filter(|(i, r)| back.value(*i) == r.as_slice()).count();
        eprintln!("{}: {same} of {} records byte for byte", set.name, set.records.len());
        assert_eq!(ptars_core::record_batch_to_array(&theirs, &desc).len(), set.records.len());
        g.bench_function("protojit_encode", |b| b.iter(|| black_box(encoder.encode(&ours).unwrap())));
        g.bench_function("ptars_encode", |b| b.iter(|| black_box(ptars_core::record_batch_to_array(&theirs, &desc))));
        g.bench_function("protojit_convert", |b| b.iter(|| black_box(converter.convert_binary(&array59).unwrap())));
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
