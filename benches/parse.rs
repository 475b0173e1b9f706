//! Parsing into binary (issue 31): `json_to_binary` against prost-reflect (`DynamicMessage`
//! deserialize + encode) on the public corpus rendered as proto3 JSON by our writer, both
//! arms cross-checked first (they must decode to the same message); `text_to_binary` on the
//! same payloads rendered as text format, timed alone (prost-reflect's text parser is behind
//! a feature the workspace does not enable).
//!
//! `cargo bench --bench parse`; `PROTOJIT_BENCH_WARMUP_MS` / `PROTOJIT_BENCH_MEASURE_MS`
//! override the times. Ratios in one run are the signal (see DESIGN.md, performance method).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message as _;
use prost_reflect::DynamicMessage;
use protojit::{json_to_binary, text_to_binary, JsonOptions, ParseOptions};
use protojit_bench_support::shared_cases;

fn millis(var: &str, default: u64) -> Duration {
    Duration::from_millis(std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default))
}

fn parse(c: &mut Criterion) {
    let options = ParseOptions::default();
    for case in shared_cases() {
        let desc = case.schema.pool().get_message_by_name(&case.message).unwrap();
        let decoder = case.schema.decoder(&case.message).unwrap();
        let owned = decoder.decode_owned(case.bytes.clone()).unwrap();
        let Ok(json) = owned.message().to_json_string(&JsonOptions::default()) else { continue };
        let text = owned.message().to_text_format();
        // Cross-check: both arms give the same message.
        let mut ours = Vec::new();
        json_to_binary(&desc, json.as_bytes(), &options, &mut ours).unwrap();
        let mut de = serde_json::Deserializer::from_str(&json);
        let theirs = DynamicMessage::deserialize(desc.clone(), &mut de).unwrap();
        assert_eq!(DynamicMessage::decode(desc.clone(), ours.as_slice()).unwrap(), theirs, "{}", case.name);

        let mut g = c.benchmark_group(format!("json_to_binary/{}", case.name));
        g.warm_up_time(millis("PROTOJIT_BENCH_WARMUP_MS", 300))
            .measurement_time(millis("PROTOJIT_BENCH_MEASURE_MS", 1000))
            .sample_size(10)
            .throughput(Throughput::Bytes(json.len() as u64));
        let mut out = Vec::with_capacity(ours.len());
        g.bench_function("protojit", |b| {
            b.iter(|| {
                out.clear();
                json_to_binary(&desc, black_box(json.as_bytes()), &options, &mut out).unwrap();
                black_box(out.len())
            })
        });
        g.bench_function("prost_reflect", |b| {
            b.iter(|| {
                let mut de = serde_json::Deserializer::from_str(black_box(&json));
                let m = DynamicMessage::deserialize(desc.clone(), &mut de).unwrap();
                black_box(m.encode_to_vec().len())
            })
        });
        g.finish();

        let mut g = c.benchmark_group(format!("text_to_binary/{}", case.name));
        g.warm_up_time(millis("PROTOJIT_BENCH_WARMUP_MS", 300))
            .measurement_time(millis("PROTOJIT_BENCH_MEASURE_MS", 1000))
            .sample_size(10)
            .throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function("protojit", |b| {
            b.iter(|| {
                out.clear();
                text_to_binary(&desc, black_box(text.as_bytes()), &options, &mut out).unwrap();
                black_box(out.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, parse);
criterion_main!(benches);
