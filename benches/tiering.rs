//! Tiering: what `EngineKind::Auto` costs on one-shot work and what it reaches on long runs,
//! against eager compilation (`Jit`) and the interpreter alone, every arm on the same bytes.
//!
//! Groups:
//! - `first_decode/<payload>`: from a loaded descriptor pool to the first decoded message:
//!   layouts, decoder (Jit compiles here), one decode. Arms `auto`, `jit`, `interp`.
//! - `stream/gm1_100k` and `stream/osm_45_blocks`: a whole run including schema set-up:
//!   100,000 google_message1 (proto3) records, or the 46 inflated blocks of the
//!   Liechtenstein extract (1 header block, 45 primitive blocks), decoded in a loop (arena
//!   reset per record). `auto` starts cold every iteration.
//! - `steady/<payload>`: decode only, after warm-up: `jit` (eager, direct calls between
//!   types) against `auto_warm` (every type compiled by tiering, calls through the
//!   per-type entry table): the price of the indirection.
//!
//! `cargo bench --bench tiering`. Results in BENCHMARKS.md.

#[allow(dead_code)]
#[path = "../examples/osm_stats.rs"]
mod osm_stats;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use prost_reflect::DescriptorPool;
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema, TypeEngine};
use protojit_bench_support::{shared_cases, tree_checksum};

const ARMS: [(&str, EngineKind); 3] =
    [("auto", EngineKind::Auto), ("jit", EngineKind::Jit), ("interp", EngineKind::Interpreter)];

fn options(engine: EngineKind) -> EngineOptions {
    EngineOptions::default().with_kind(engine)
}

/// Decodes `records` in a loop into one reset arena; the sum of their checksums.
fn run(decoder: &Decoder, records: &[&[u8]]) -> u64 {
    let mut arena = Arena::new();
    let mut sum = 0u64;
    for r in records {
        arena.reset();
        let m = decoder.decode(r, &arena).expect("decodes");
        sum = sum.wrapping_add(tree_checksum(&m));
    }
    sum
}

/// Decodes with `decoder` until tiering has settled every type (bounded: a broken
/// background compiler must not hang the bench).
fn warm(decoder: &Decoder, bytes: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut arena = Arena::new();
    // Types the payload never holds stay cold; the others must be compiled (or refused).
    let unsettled = |t: &protojit::TypeStats| {
        t.engine == TypeEngine::Queued || (t.engine == TypeEngine::Cold && t.interpreted_decodes > 0)
    };
    // One decode first: it is what makes the payload's types hot.
    std::hint::black_box(decoder.decode(bytes, &arena).expect("decodes"));
    while decoder.stats().types.iter().any(unsettled) || !decoder.stats().direct_calls {
        assert!(Instant::now() < deadline, "tiering did not settle: {:?}", decoder.stats().types);
        for _ in 0..64 {
            arena.reset();
            std::hint::black_box(decoder.decode(bytes, &arena).expect("decodes"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn bench(c: &mut Criterion) {
    let cases = shared_cases();
    let short = |g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>| {
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
    };

    // One-shot: descriptor pool → first decoded message.
    for case in cases.iter().filter(|c| !c.name.starts_with("dataset_")) {
        let pool: DescriptorPool = case.schema.pool().clone();
        let mut g = c.benchmark_group(format!("first_decode/{}", case.name));
        short(&mut g);
        for (arm, engine) in ARMS {
            g.bench_function(arm, |b| {
                b.iter(|| {
                    let schema = Schema::from_pool(&pool).unwrap();
                    let d = schema.decoder_with_options(&case.message, &options(engine)).unwrap();
                    let arena = Arena::new();
                    let m = d.decode(&case.bytes, &arena).unwrap();
                    tree_checksum(&m)
                })
            });
        }
        g.finish();
    }

    // Long runs, schema set-up included: (name, schema, records as (message type, bytes)).
    type Stream = (String, DescriptorPool, Vec<(String, Vec<u8>)>);
    let mut streams: Vec<Stream> = Vec::new();
    if let Some(gm1) = cases.iter().find(|c| c.name == "gm1_proto3") {
        let records = vec![(gm1.message.clone(), gm1.bytes.clone()); 100_000];
        streams.push(("gm1_100k".into(), gm1.schema.pool().clone(), records));
    }
    let dir = osm_stats::shared_corpus();
    if let Ok(file) = std::fs::read(dir.join("liechtenstein.osm.pbf")) {
        let dec = osm_stats::OsmDecoders::load_with(&dir, &options(EngineKind::Interpreter)).expect("OSM schemas");
        let blocks = osm_stats::inflated_blocks(&file, &dec).expect("inflates");
        let records = blocks
            .into_iter()
            .map(|(kind, b)| {
                (if kind == "OSMData" { "OSMPBF.PrimitiveBlock" } else { "OSMPBF.HeaderBlock" }.to_owned(), b)
            })
            .collect();
        let pool = dec.primitive_block.descriptor().parent_pool().clone();
        streams.push(("osm_45_blocks".into(), pool, records));
    }
    for (name, pool, records) in &streams {
        let bytes: usize = records.iter().map(|r| r.1.len()).sum();
        let mut g = c.benchmark_group(format!("stream/{name}"));
        g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(5));
        g.throughput(Throughput::Bytes(bytes as u64));
        let mut sums = Vec::new();
        for (arm, engine) in ARMS {
            let go = || {
                let schema = Schema::from_pool(pool).unwrap();
                let mut decoders: Vec<(String, Decoder)> = Vec::new();
                let mut arena = Arena::new();
                let mut sum = 0u64;
                for (ty, r) in records {
                    let d = match decoders.iter().position(|(t, _)| t == ty) {
                        Some(i) => &decoders[i].1,
                        None => {
                            decoders.push((ty.clone(), schema.decoder_with_options(ty, &options(engine)).unwrap()));
                            &decoders.last().unwrap().1
                        }
                    };
                    arena.reset();
                    sum = sum.wrapping_add(tree_checksum(&d.decode(r, &arena).unwrap()));
                }
                sum
            };
            sums.push(go());
            g.bench_function(arm, |b| b.iter(go));
        }
        assert!(sums.windows(2).all(|w| w[0] == w[1]), "{name}: arms disagree: {sums:?}");
        g.finish();
    }

    // Steady state: direct calls (eager) against the entry table (tiered, warmed up).
    for case in cases.iter().filter(|c| !c.name.starts_with("dataset_")) {
        let jit = case.schema.decoder_with_options(&case.message, &options(EngineKind::Jit)).unwrap();
        let fast = EngineOptions {
            tiering: protojit::Tiering { after_decodes: 1, after_bytes: 1 },
            ..options(EngineKind::Auto)
        };
        let auto = Schema::from_pool(case.schema.pool()).unwrap().decoder_with_options(&case.message, &fast).unwrap();
        warm(&auto, &case.bytes);
        assert_eq!(run(&jit, &[&case.bytes]), run(&auto, &[&case.bytes]), "{}", case.name);
        let mut g = c.benchmark_group(format!("steady/{}", case.name));
        short(&mut g);
        g.throughput(Throughput::Bytes(case.bytes.len() as u64));
        let mut arena = Arena::new();
        for (arm, d) in [("jit", &jit), ("auto_warm", &auto)] {
            g.bench_function(arm, |b| {
                b.iter(|| {
                    arena.reset();
                    std::hint::black_box(d.decode(&case.bytes, &arena).unwrap());
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
