//! Read-path benchmarks (issue 10): typed handle reads, typed slices, map lookups and the text/JSON writers, each next to its reference in the same run.
//!
//! Groups:
//! - `handle/gm1_field2`: 10^6 reads of `GoogleMessage1.field2` (int32) per iteration on one
//!   decoded message: a `Field<i32>` handle, `MessageRef::get("field2")` (name lookup and a
//!   `Value`), and the same field of the prost struct. Each read goes through
//!   `black_box(&message)`, so no arm can hoist the load out of the loop.
//! - `slices/<payload>`: decode + read through handles where the schema makes it natural:
//!   OSM dense nodes (sum of every id, lat and lon through `Field<List<i64>>` slices) and
//!   vector tiles (sum of every feature's geometry through `Field<List<u32>>`), against
//!   prost decoding and summing the same struct fields.
//! - `map/string_10k`: a `map<string, int64>` of 10,000 entries, 10,000 lookups per
//!   iteration: `MapRef::get` (the scan the API had), `MapRef::index()` then lookups, and
//!   lookups on an index built beforehand; plus iteration (`MapRef::iter`, which builds
//!   a set per call, vs `MapIndex::iter`).
//! - `write/<payload>`: `to_text_format` and `to_json_string` on the large corpus payloads
//!   (the tree decoded once, outside the loop).
//!
//! `cargo bench --bench read` (all), `cargo bench --bench read -- map/` (a subset);
//! `PROTOJIT_BENCH_WARMUP_MS` / `PROTOJIT_BENCH_MEASURE_MS` override the times.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message as _;
use protojit::{field, Arena, EngineKind, EngineOptions, Field, JsonOptions, MapKey, Schema};
use protojit_bench_support::gen;
use protojit_bench_support::{shared_cases, Case};

fn millis(var: &str, default: u64) -> Duration {
    Duration::from_millis(std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default))
}

fn group<'c>(c: &'c mut Criterion, name: &str) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.warm_up_time(millis("PROTOJIT_BENCH_WARMUP_MS", 300))
        .measurement_time(millis("PROTOJIT_BENCH_MEASURE_MS", 1000))
        .sample_size(10);
    g
}

const READS: usize = 1_000_000;

/// The eagerly compiled decoder of a case (read benchmarks time reading, not tiering).
fn jit_decoder(case: &Case) -> protojit::Decoder {
    case.schema.decoder_with_options(&case.message, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap()
}

fn handle_reads(c: &mut Criterion, cases: &[Case]) {
    let Some(case) = cases.iter().find(|c| c.name == "gm1_proto2") else { return };
    let decoder = jit_decoder(case);
    let arena = Arena::new();
    let msg = decoder.decode(&case.bytes, &arena).unwrap();
    let h = Field::<i32>::resolve(case.schema.layouts(), &case.message, "field2").unwrap();
    let pm = gen::benchmarks::proto2::GoogleMessage1::decode(case.bytes.as_slice()).unwrap();
    assert_eq!(h.get(&msg), Some(pm.field2));

    let mut g = group(c, "handle/gm1_field2");
    g.throughput(Throughput::Elements(READS as u64));
    g.bench_function("protojit_handle", |b| {
        b.iter(|| {
            let mut acc = 0i32;
            for _ in 0..READS {
                acc = acc.wrapping_add(h.get(black_box(&msg)).unwrap_or_default());
            }
            acc
        })
    });
    g.bench_function("prost_field", |b| {
        b.iter(|| {
            let mut acc = 0i32;
            for _ in 0..READS {
                acc = acc.wrapping_add(black_box(&pm).field2);
            }
            acc
        })
    });
    g.bench_function("protojit_get_by_name", |b| {
        b.iter(|| {
            let mut acc = 0i32;
            for _ in 0..READS {
                acc = acc.wrapping_add(black_box(&msg).get("field2").and_then(|v| v.as_i32()).unwrap_or_default());
            }
            acc
        })
    });
    g.finish();
}

fn osm_dense(c: &mut Criterion, cases: &[Case]) {
    let Some(case) = cases.iter().find(|c| c.name == "osm_dense") else { return };
    let decoder = jit_decoder(case);
    let layouts = case.schema.layouts();
    let groups =
        Field::<field::List<field::Message>>::resolve(layouts, "OSMPBF.PrimitiveBlock", "primitivegroup").unwrap();
    let id = Field::<field::List<i64>>::resolve(layouts, "OSMPBF.PrimitiveGroup", "dense.id").unwrap();
    let lat = Field::<field::List<i64>>::resolve(layouts, "OSMPBF.PrimitiveGroup", "dense.lat").unwrap();
    let lon = Field::<field::List<i64>>::resolve(layouts, "OSMPBF.PrimitiveGroup", "dense.lon").unwrap();
    let sum = |s: &[i64]| s.iter().fold(0i64, |a, &x| a.wrapping_add(x));
    let pj = |arena: &Arena| {
        let block = decoder.decode(&case.bytes, arena).unwrap();
        let mut acc = 0i64;
        for g in groups.get(&block).unwrap() {
            acc = acc.wrapping_add(sum(id.get(&g).unwrap()));
            acc = acc.wrapping_add(sum(lat.get(&g).unwrap()));
            acc = acc.wrapping_add(sum(lon.get(&g).unwrap()));
        }
        acc
    };
    let pr = || {
        let block = gen::osmpbf::PrimitiveBlock::decode(case.bytes.as_slice()).unwrap();
        let mut acc = 0i64;
        for g in &block.primitivegroup {
            if let Some(d) = &g.dense {
                acc = acc.wrapping_add(sum(&d.id)).wrapping_add(sum(&d.lat)).wrapping_add(sum(&d.lon));
            }
        }
        acc
    };
    assert_ne!(pr(), 0);
    handles_vs_prost(c, "osm_dense", case.bytes.len() as u64, pj, pr);
}

/// Checks a handle walk against the same walk over prost's structs, then times both in
/// group `slices/<name>`.
fn handles_vs_prost<T: PartialEq + std::fmt::Debug>(
    c: &mut Criterion,
    name: &str,
    bytes: u64,
    pj: impl Fn(&Arena) -> T,
    pr: impl Fn() -> T,
) {
    let mut arena = Arena::new();
    assert_eq!(pj(&arena), pr(), "{name}: handle sums differ from prost's");
    let mut g = group(c, &format!("slices/{name}"));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("protojit_handles", |b| {
        b.iter(|| {
            arena.reset();
            black_box(pj(&arena))
        })
    });
    g.bench_function("prost", |b| b.iter(|| black_box(pr())));
    g.finish();
}

fn mvt_geometry(c: &mut Criterion, cases: &[Case]) {
    for case in cases.iter().filter(|c| c.name.starts_with("mvt_")) {
        let decoder = jit_decoder(case);
        let layouts = case.schema.layouts();
        let layers = Field::<field::List<field::Message>>::resolve(layouts, "vector_tile.Tile", "layers").unwrap();
        let features =
            Field::<field::List<field::Message>>::resolve(layouts, "vector_tile.Tile.Layer", "features").unwrap();
        let geometry = Field::<field::List<u32>>::resolve(layouts, "vector_tile.Tile.Feature", "geometry").unwrap();
        let pj = |arena: &Arena| {
            let tile = decoder.decode(&case.bytes, arena).unwrap();
            let mut acc = 0u64;
            for layer in layers.get(&tile).unwrap() {
                for f in features.get(&layer).unwrap() {
                    acc = geometry.get(&f).unwrap().iter().fold(acc, |a, &x| a.wrapping_add(u64::from(x)));
                }
            }
            acc
        };
        let pr = || {
            let tile = gen::vector_tile::Tile::decode(case.bytes.as_slice()).unwrap();
            let mut acc = 0u64;
            for layer in &tile.layers {
                for f in &layer.features {
                    acc = f.geometry.iter().fold(acc, |a, &x| a.wrapping_add(u64::from(x)));
                }
            }
            acc
        };
        handles_vs_prost(c, &case.name, case.bytes.len() as u64, pj, pr);
    }
}

const MAP_ENTRIES: usize = 10_000;

fn map_lookups(c: &mut Criterion) {
    let schema =
        Schema::from_proto_source("m.proto", "syntax = \"proto3\"; message M { map<string, int64> m = 1; }").unwrap();
    let keys: Vec<String> = (0..MAP_ENTRIES).map(|i| format!("key-{:08}", i.wrapping_mul(7919) % 1_000_003)).collect();
    let mut bytes = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        // entry = { 1: key, 2: value }, as field 1 of M
        let mut entry = vec![0x0a, k.len() as u8];
        entry.extend_from_slice(k.as_bytes());
        entry.push(0x10);
        let mut v = i as u64 + 1;
        while v >= 0x80 {
            entry.push((v as u8) | 0x80);
            v >>= 7;
        }
        entry.push(v as u8);
        bytes.push(0x0a);
        bytes.push(entry.len() as u8);
        bytes.extend_from_slice(&entry);
    }
    let decoder = schema.decoder_with_options("M", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    let map = msg.get("m").unwrap().as_map().unwrap();
    let index = map.index();
    assert_eq!(index.len(), MAP_ENTRIES);
    let lookups: Vec<MapKey<'_>> = keys.iter().map(|k| MapKey::String(k.as_str())).collect();
    let total = |get: &dyn Fn(&MapKey<'_>) -> i64| lookups.iter().fold(0i64, |a, k| a.wrapping_add(get(k)));
    let want = (1..=MAP_ENTRIES as i64).sum::<i64>();
    assert_eq!(total(&|k| map.get(k).and_then(|v| v.as_i64()).unwrap()), want);
    assert_eq!(total(&|k| index.get(k).and_then(|v| v.as_i64()).unwrap()), want);

    let mut g = group(c, "map/string_10k");
    g.throughput(Throughput::Elements(MAP_ENTRIES as u64));
    g.bench_function("old_mapref_get", |b| {
        b.iter(|| total(&|k| black_box(&map).get(k).and_then(|v| v.as_i64()).unwrap_or_default()))
    });
    g.bench_function("index_build_then_get", |b| {
        b.iter(|| {
            let index = black_box(&map).index();
            total(&|k| index.get(k).and_then(|v| v.as_i64()).unwrap_or_default())
        })
    });
    g.bench_function("index_get", |b| {
        b.iter(|| total(&|k| black_box(&index).get(k).and_then(|v| v.as_i64()).unwrap_or_default()))
    });
    g.bench_function("index_build", |b| b.iter(|| black_box(black_box(&map).index().len())));
    // What building the index at decode time would add to: the decode of the map alone.
    let mut arena2 = Arena::new();
    g.bench_function("decode_only", |b| {
        b.iter(|| {
            arena2.reset();
            black_box(decoder.decode(black_box(&bytes), &arena2).unwrap().block().as_ptr())
        })
    });
    g.bench_function("old_mapref_iter", |b| {
        b.iter(|| black_box(&map).iter().fold(0i64, |a, (_, v)| a.wrapping_add(v.as_i64().unwrap_or_default())))
    });
    g.bench_function("index_iter", |b| {
        b.iter(|| black_box(&index).iter().fold(0i64, |a, (_, v)| a.wrapping_add(v.as_i64().unwrap_or_default())))
    });
    g.finish();
}

fn writers(c: &mut Criterion, cases: &[Case]) {
    const LARGE: &[&str] =
        &["gm2", "osm_dense", "osm_ways", "osm_relations", "mvt_sanfrancisco", "descriptor_fds_srcinfo"];
    for case in cases.iter().filter(|c| LARGE.contains(&c.name.as_str())) {
        let decoder = jit_decoder(case);
        let arena = Arena::new();
        let msg = decoder.decode(&case.bytes, &arena).unwrap();
        let options = JsonOptions::default();
        let mut g = group(c, &format!("write/{}", case.name));
        g.throughput(Throughput::Bytes(case.bytes.len() as u64));
        g.bench_function("text", |b| b.iter(|| black_box(msg.to_text_format().len())));
        g.bench_function("json", |b| b.iter(|| black_box(msg.to_json_string(&options).unwrap().len())));
        g.finish();
    }
}

fn bench(c: &mut Criterion) {
    let cases = shared_cases();
    handle_reads(c, &cases);
    osm_dense(c, &cases);
    mvt_geometry(c, &cases);
    map_lookups(c);
    writers(c, &cases);
}

criterion_group! { name = benches; config = Criterion::default().nresamples(5_000); targets = bench }
criterion_main!(benches);
