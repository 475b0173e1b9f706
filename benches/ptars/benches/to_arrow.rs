//! Records → Arrow `RecordBatch`: protojit-arrow against ptars (`binary_array_to_record_batch_direct`,
//! which parses the wire format straight into Arrow builders), on the same records and the
//! same columns: every field, strings included, enums as Int32 numbers (ptars' default;
//! protojit's `EnumColumns::Number`), one batch per record set.
//!
//! Run: `cd benches/ptars && cargo bench --bench to_arrow` (BENCHMARKS.md has the figures).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use protojit::EngineKind;
use protojit_arrow::{ArrowOptions, ConvertPath, Converter, EnumColumns};
use protojit_bench_support::records::{self, RecordSet};

fn sets() -> Vec<RecordSet> {
    let mut sets = Vec::new();
    sets.extend(records::gm1(100_000));
    sets.push(records::telemetry(100_000));
    sets.extend(records::osm_ways());
    sets
}

fn bench(c: &mut Criterion) {
    for set in sets() {
        let mut g = c.benchmark_group(format!("to_arrow/{}", set.name));
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
        let tree =
            Converter::new(&set.schema, set.message, &ArrowOptions { path: ConvertPath::Tree, ..options }).unwrap();
        // No silent fallback: each arm runs the path it is named after (`protojit`: the
        // default, the compiled appenders raced against the chunked path).
        assert_eq!(converter.path(), ConvertPath::Auto);
        assert_eq!(tree.path(), ConvertPath::Tree);
        let desc = set.schema.pool().get_message_by_name(set.message).unwrap();
        let config = ptars_core::PtarsConfig::default();
        // Same rows and columns from all (a check, not a timing).
        let ours = converter.convert_binary(&array59).unwrap();
        assert_eq!(ours, tree.convert_binary(&array59).unwrap(), "{}", set.name);
        let theirs = ptars_core::binary_array_to_record_batch_direct(&array60, &desc, &config).unwrap();
        assert_eq!(ours.num_rows(), theirs.num_rows());
        assert_eq!(ours.num_columns(), theirs.num_columns(), "{}", set.name);
        g.bench_function("protojit", |b| b.iter(|| black_box(converter.convert_binary(&array59).unwrap())));
        g.bench_function("protojit_tree", |b| b.iter(|| black_box(tree.convert_binary(&array59).unwrap())));
        g.bench_function("ptars", |b| {
            b.iter(|| black_box(ptars_core::binary_array_to_record_batch_direct(&array60, &desc, &config).unwrap()))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
