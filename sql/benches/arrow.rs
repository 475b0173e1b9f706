//! Columns and SQL: records → RecordBatch (all columns, and a 2-column projection; string
//! offsets against string views), Parquet write throughput, and a SQL aggregate over
//! 1,000,000 records at 1 and 2 partitions. The ptars peer arm lives in the workspace's `benches/ptars` (another arrow version).
//!
//! Run: `cargo bench -p protojit-sql --bench arrow` (BENCHMARKS.md has the figures).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use protojit::EngineKind;
use protojit_arrow::arrow_array::BinaryArray;
use protojit_arrow::parquet::arrow::ArrowWriter;
use protojit_arrow::{ArrowOptions, Converter, StringColumns};
use protojit_bench_support::records;
use protojit_sql::datafusion::prelude::{SessionConfig, SessionContext};
use protojit_sql::{ProtobufTable, TableOptions};

/// The chunked path on compiled decoders: these groups measure what the mapping costs
/// (projections, string columns), on one path throughout.
fn jit(select: Option<Vec<String>>) -> ArrowOptions {
    ArrowOptions {
        select,
        decode: ArrowOptions::default().decode.with_kind(EngineKind::Jit),
        path: protojit_arrow::ConvertPath::Chunked,
        ..ArrowOptions::default()
    }
}

/// All columns against a projection of 2, on google_message1 (proto3: 40 top-level fields).
fn projection(c: &mut Criterion) {
    let Some(set) = records::gm1(100_000) else {
        eprintln!("arrow/projection: shared corpus absent, skipped");
        return;
    };
    let stream = set.delimited();
    let mut g = c.benchmark_group("to_arrow_projection/gm1");
    g.throughput(Throughput::Bytes(set.bytes() as u64));
    g.sample_size(20);
    let all = Converter::new(&set.schema, set.message, &jit(None)).unwrap();
    let two = Converter::new(&set.schema, set.message, &jit(Some(vec!["field1".into(), "field2".into()]))).unwrap();
    eprintln!("gm1: {} top-level columns; projection keeps 2", all.arrow_schema().fields().len());
    // No silent fallback: both arms take the chunked path.
    assert_eq!(all.path(), protojit_arrow::ConvertPath::Chunked);
    assert_eq!(two.path(), protojit_arrow::ConvertPath::Chunked);
    g.bench_function("all_columns", |b| {
        b.iter(|| all.convert_delimited(&stream, 8192).map(|r| r.unwrap().num_rows()).sum::<usize>())
    });
    g.bench_function("two_columns", |b| {
        b.iter(|| two.convert_delimited(&stream, 8192).map(|r| r.unwrap().num_rows()).sum::<usize>())
    });
    g.finish();
}

/// A `BinaryArray` of records (the Kafka-connector shape) with `Utf8` columns (strings
/// copied) against `Utf8View` columns (long strings pointing into the array), on
/// google_message1 ×100k and telemetry ×100k.
fn strings(c: &mut Criterion) {
    let sets = [records::gm1(100_000), Some(records::telemetry(100_000))];
    for set in sets.into_iter().flatten() {
        let array = BinaryArray::from_iter_values(set.records.iter());
        let mut g = c.benchmark_group(format!("to_arrow_strings/{}", set.name));
        g.throughput(Throughput::Bytes(set.bytes() as u64));
        g.sample_size(20);
        for (arm, strings) in [("offsets", StringColumns::Offsets), ("views", StringColumns::Views)] {
            let converter = Converter::new(&set.schema, set.message, &ArrowOptions { strings, ..jit(None) }).unwrap();
            g.bench_function(arm, |b| b.iter(|| converter.convert_binary(&array).unwrap().num_rows()));
        }
        g.finish();
    }
}

/// Records → Parquet (snappy), telemetry ×100k.
fn parquet(c: &mut Criterion) {
    let set = records::telemetry(100_000);
    let stream = set.delimited();
    let converter = Converter::new(&set.schema, set.message, &jit(None)).unwrap();
    let mut g = c.benchmark_group("parquet_write/telemetry");
    g.throughput(Throughput::Bytes(set.bytes() as u64));
    g.sample_size(10);
    g.bench_function("convert_only", |b| {
        b.iter(|| converter.convert_delimited(&stream, 8192).map(|r| r.unwrap().num_rows()).sum::<usize>())
    });
    g.bench_function("convert_and_write", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(set.bytes());
            let props = protojit_arrow::parquet::file::properties::WriterProperties::builder()
                .set_compression(protojit_arrow::parquet::basic::Compression::SNAPPY)
                .build();
            let mut w = ArrowWriter::try_new(&mut out, converter.arrow_schema().clone(), Some(props)).unwrap();
            for batch in converter.convert_delimited(&stream, 8192) {
                w.write(&batch.unwrap()).unwrap();
            }
            w.close().unwrap();
            black_box(out.len())
        })
    });
    g.finish();
}

/// `SELECT status, COUNT(*), AVG(battery_volts), MAX(device) ... GROUP BY status` over
/// 1,000,000 telemetry records, 1 and 2 partitions (and as many DataFusion threads).
fn sql(c: &mut Criterion) {
    let set = records::telemetry(1_000_000);
    let stream = set.delimited();
    let mut g = c.benchmark_group("sql_aggregate/telemetry_1m");
    g.throughput(Throughput::Bytes(set.bytes() as u64));
    g.sample_size(10);
    for (partitions, strings) in
        [(1usize, StringColumns::Offsets), (2, StringColumns::Offsets), (2, StringColumns::Views)]
    {
        let arrow = ArrowOptions { strings, ..jit(None) };
        let options = TableOptions { partitions, arrow, ..TableOptions::default() };
        let table = Arc::new(ProtobufTable::from_bytes(&set.schema, set.message, stream.clone(), &options).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(partitions).build().unwrap();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
        ctx.register_table("t", table).unwrap();
        let query = "SELECT CAST(status AS VARCHAR) AS s, COUNT(*), AVG(battery_volts), MAX(device) FROM t GROUP BY 1";
        let views = if strings == StringColumns::Views { "_views" } else { "" };
        g.bench_function(format!("partitions_{partitions}{views}"), |b| {
            b.iter(|| {
                let batches = rt.block_on(async { ctx.sql(query).await?.collect().await }).unwrap();
                black_box(batches.iter().map(|b| b.num_rows()).sum::<usize>())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, projection, strings, parquet, sql);
criterion_main!(benches);
