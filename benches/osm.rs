//! A real application: counting an OpenStreetMap `.osm.pbf` file (`examples/osm_stats.rs`) on
//! the shared corpus's Liechtenstein extract (2.7 MB, 46 zlib blobs).
//!
//! Group `osm/liechtenstein`, throughput in bytes of the file:
//! - `end_to_end`: framing, zlib inflation, protojit decode of every block, the counting walk;
//! - `inflate_only`: framing and inflation alone (what is not protobuf);
//!
//! Group `osm_blocks/liechtenstein`, throughput in bytes of the inflated blocks:
//! - `protojit`: the protobuf layer alone: decode every inflated block (JIT, arena reset per
//!   block) and walk it;
//! - `prost`: the same decode and walk over the prost structs generated from the same schema.
//!
//! Counts are checked against the corpus README (306,700 dense nodes, 32,585 ways, 890
//! relations) before timing. `cargo bench --bench osm`.

#[allow(dead_code)]
#[path = "../examples/osm_stats.rs"]
mod osm_stats;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use osm_stats::{count_blocks, inflated_blocks, stats, Counts, OsmDecoders, Timing};
use prost::Message;
use protojit::Arena;
use protojit_bench_support::gen::osmpbf;

/// The same walk over prost's structs.
fn prost_count(blocks: &[(String, Vec<u8>)]) -> Counts {
    let mut c = Counts::default();
    for (kind, bytes) in blocks {
        c.block_bytes += bytes.len() as u64;
        if kind != "OSMData" {
            c.header_blobs += 1;
            std::hint::black_box(osmpbf::HeaderBlock::decode(bytes.as_slice()).unwrap());
            continue;
        }
        c.data_blobs += 1;
        let b = osmpbf::PrimitiveBlock::decode(bytes.as_slice()).unwrap();
        for g in &b.primitivegroup {
            c.groups += 1;
            for n in &g.nodes {
                c.nodes += 1;
                c.tags += n.keys.len() as u64;
            }
            if let Some(d) = &g.dense {
                c.dense_nodes += d.id.len() as u64;
                let kv = &d.keys_vals;
                let mut i = 0;
                while i < kv.len() {
                    if kv[i] == 0 {
                        i += 1;
                    } else {
                        c.tags += 1;
                        i += 2;
                    }
                }
            }
            for w in &g.ways {
                c.ways += 1;
                c.tags += w.keys.len() as u64;
                c.way_refs += w.refs.len() as u64;
            }
            for r in &g.relations {
                c.relations += 1;
                c.tags += r.keys.len() as u64;
                c.relation_members += r.memids.len() as u64;
            }
            c.changesets += g.changesets.len() as u64;
        }
    }
    c
}

fn bench(c: &mut Criterion) {
    let dir = osm_stats::shared_corpus();
    let path = dir.join("liechtenstein.osm.pbf");
    let Ok(file) = std::fs::read(&path) else {
        eprintln!("osm bench skipped: {} not found", path.display());
        return;
    };
    let dec = OsmDecoders::load_with(&dir, &protojit::EngineOptions::default().with_kind(protojit::EngineKind::Jit))
        .expect("OSM schemas");
    let counts = stats(&file, &dec, &mut Timing::default()).expect("liechtenstein.osm.pbf");
    assert_eq!((counts.dense_nodes, counts.ways, counts.relations), (306_700, 32_585, 890), "{counts:?}");
    let blocks = inflated_blocks(&file, &dec).unwrap();
    let mut arena = Arena::new();
    let layer = count_blocks(&blocks, &dec, &mut arena);
    let prost = prost_count(&blocks);
    assert_eq!(layer, counts, "protobuf-layer walk disagrees with the end-to-end walk");
    assert_eq!(prost, layer, "prost walk disagrees with protojit's");
    let inflated: u64 = blocks.iter().map(|b| b.1.len() as u64).sum();

    let mut g = c.benchmark_group("osm/liechtenstein");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Bytes(file.len() as u64));
    g.bench_function("end_to_end", |b| {
        b.iter(|| std::hint::black_box(stats(&file, &dec, &mut Timing::default()).unwrap()))
    });
    g.bench_function("inflate_only", |b| b.iter(|| std::hint::black_box(inflated_blocks(&file, &dec).unwrap())));
    g.finish();

    let mut g = c.benchmark_group("osm_blocks/liechtenstein");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Bytes(inflated));
    g.bench_function("protojit", |b| b.iter(|| std::hint::black_box(count_blocks(&blocks, &dec, &mut arena))));
    g.bench_function("prost", |b| b.iter(|| std::hint::black_box(prost_count(&blocks))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
