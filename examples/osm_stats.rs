//! Counts the nodes, ways, relations and tags of an OpenStreetMap `.osm.pbf` file, decoding
//! its blocks with protojit (schemas loaded at run time: `fileformat.proto` and
//! `osmformat.proto`).
//!
//! ```sh
//! cargo run --release --example osm_stats -- ../shared/corpus/liechtenstein.osm.pbf
//! cargo run --release --example osm_stats -- FILE.osm.pbf --schemas DIR   # where the .protos are
//! ```
//!
//! An `.osm.pbf` file is a sequence of `[u32 big-endian length N][N bytes BlobHeader][Blob]`
//! records; a `Blob` holds a zlib-compressed (or raw) `HeaderBlock` or `PrimitiveBlock`.
//! Inflation uses `flate2` with its default pure-Rust backend (miniz_oxide).
//!
//! This file is also compiled into `benches/osm.rs` and `tests/osm_stats.rs` as a module.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use protojit::{Arena, Decoder, MessageRef, Schema, Value};

/// The decoders an `.osm.pbf` reader needs.
pub struct OsmDecoders {
    pub blob_header: Decoder,
    pub blob: Decoder,
    pub header_block: Decoder,
    pub primitive_block: Decoder,
}

impl OsmDecoders {
    /// Loads `fileformat.proto` and `osmformat.proto` from `dir` and prepares the decoders
    /// (default options: tiered).
    pub fn load(dir: &Path) -> Result<OsmDecoders, String> {
        OsmDecoders::load_with(dir, &protojit::EngineOptions::default())
    }

    /// The same with `options` (benchmarks pin an engine).
    pub fn load_with(dir: &Path, options: &protojit::EngineOptions) -> Result<OsmDecoders, String> {
        let schema = Schema::from_proto_files(&[dir.join("fileformat.proto"), dir.join("osmformat.proto")], &[dir])
            .map_err(|e| e.to_string())?;
        let d = |name: &str| schema.decoder_with_options(name, options).map_err(|e| e.to_string());
        Ok(OsmDecoders {
            blob_header: d("OSMPBF.BlobHeader")?,
            blob: d("OSMPBF.Blob")?,
            header_block: d("OSMPBF.HeaderBlock")?,
            primitive_block: d("OSMPBF.PrimitiveBlock")?,
        })
    }
}

/// What the walk counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `OSMHeader` blobs.
    pub header_blobs: u64,
    /// `OSMData` blobs.
    pub data_blobs: u64,
    /// Primitive groups.
    pub groups: u64,
    /// Plain `Node`s.
    pub nodes: u64,
    /// Nodes in `DenseNodes` (the length of their `id` arrays).
    pub dense_nodes: u64,
    /// Ways.
    pub ways: u64,
    /// Relations.
    pub relations: u64,
    /// Changesets.
    pub changesets: u64,
    /// Tags (key/value pairs) on nodes, dense nodes, ways and relations.
    pub tags: u64,
    /// Node references of ways.
    pub way_refs: u64,
    /// Members of relations.
    pub relation_members: u64,
    /// Bytes of inflated blocks.
    pub block_bytes: u64,
}

/// One record of the file: the `BlobHeader` bytes and the `Blob` bytes.
pub struct Frame<'a> {
    pub header: &'a [u8],
    pub blob: &'a [u8],
}

/// Splits an `.osm.pbf` file into its records (reading each `BlobHeader.datasize`).
pub fn frames<'a>(file: &'a [u8], dec: &OsmDecoders) -> Result<Vec<Frame<'a>>, String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let arena = Arena::new();
    while pos < file.len() {
        let len_bytes: [u8; 4] = file.get(pos..pos + 4).ok_or("truncated header length")?.try_into().unwrap();
        let hlen = u32::from_be_bytes(len_bytes) as usize;
        pos += 4;
        let header = file.get(pos..pos + hlen).ok_or("truncated BlobHeader")?;
        pos += hlen;
        let h = dec.blob_header.decode(header, &arena).map_err(|e| format!("BlobHeader: {e}"))?;
        let size = h.get_by_number(3).and_then(|v| v.as_i32()).ok_or("BlobHeader without datasize")? as usize;
        let blob = file.get(pos..pos + size).ok_or("truncated Blob")?;
        pos += size;
        out.push(Frame { header, blob });
    }
    Ok(out)
}

/// The type of a record (`OSMHeader` or `OSMData`).
pub fn frame_type<'a>(frame: &Frame<'a>, dec: &'a OsmDecoders, arena: &'a Arena) -> Result<&'a str, String> {
    let h = dec.blob_header.decode(frame.header, arena).map_err(|e| format!("BlobHeader: {e}"))?;
    h.get_by_number(1).and_then(|v| v.as_str()).ok_or_else(|| "BlobHeader without type".to_string())
}

/// The block a `Blob` holds, inflated into `buf` when compressed.
pub fn inflate(blob: &[u8], dec: &OsmDecoders, buf: &mut Vec<u8>) -> Result<(), String> {
    let arena = Arena::new();
    let b = dec.blob.decode(blob, &arena).map_err(|e| format!("Blob: {e}"))?;
    buf.clear();
    if let Some(raw) = b.has_by_number(1).then(|| b.get_by_number(1)).flatten().and_then(|v| v.as_bytes()) {
        buf.extend_from_slice(raw);
        return Ok(());
    }
    let size = b.get_by_number(2).and_then(|v| v.as_i32()).unwrap_or(0).max(0) as usize;
    if b.has_by_number(3) {
        let z = b.get_by_number(3).and_then(|v| v.as_bytes()).unwrap_or_default();
        buf.reserve(size);
        flate2::read::ZlibDecoder::new(z).read_to_end(buf).map_err(|e| format!("zlib: {e}"))?;
        if buf.len() != size {
            return Err(format!("inflated {} bytes, raw_size says {size}", buf.len()));
        }
        return Ok(());
    }
    Err("Blob holds neither raw nor zlib data (lzma, lz4 and zstd are not supported here)".into())
}

fn list_len(m: &MessageRef<'_>, number: u32) -> u64 {
    m.get_by_number(number).and_then(|v| v.as_list()).map_or(0, |l| l.len() as u64)
}

/// Adds the contents of one `PrimitiveBlock` to `counts`.
pub fn count_block(block: &MessageRef<'_>, counts: &mut Counts) {
    let Some(groups) = block.get_by_number(2).and_then(|v| v.as_list()) else { return };
    for g in groups.iter() {
        let Value::Message(g) = g else { continue };
        counts.groups += 1;
        if let Some(nodes) = g.get_by_number(1).and_then(|v| v.as_list()) {
            for n in nodes.iter() {
                if let Value::Message(n) = n {
                    counts.nodes += 1;
                    counts.tags += list_len(&n, 2);
                }
            }
        }
        if g.has_by_number(2) {
            let dense = g.get_by_number(2).and_then(|v| v.as_message()).expect("dense is a message");
            counts.dense_nodes += list_len(&dense, 1);
            // keys_vals: per node, (key, value) pairs closed by a 0.
            if let Some(kv) = dense.get_by_number(10).and_then(|v| v.as_list()) {
                let n = kv.len();
                let mut i = 0;
                while i < n {
                    if kv.get(i).and_then(|v| v.as_i32()) == Some(0) {
                        i += 1;
                    } else {
                        counts.tags += 1;
                        i += 2;
                    }
                }
            }
        }
        if let Some(ways) = g.get_by_number(3).and_then(|v| v.as_list()) {
            for w in ways.iter() {
                if let Value::Message(w) = w {
                    counts.ways += 1;
                    counts.tags += list_len(&w, 2);
                    counts.way_refs += list_len(&w, 8);
                }
            }
        }
        if let Some(rels) = g.get_by_number(4).and_then(|v| v.as_list()) {
            for r in rels.iter() {
                if let Value::Message(r) = r {
                    counts.relations += 1;
                    counts.tags += list_len(&r, 2);
                    counts.relation_members += list_len(&r, 9);
                }
            }
        }
        counts.changesets += list_len(&g, 5);
    }
}

/// Where the time went.
#[derive(Debug, Default)]
pub struct Timing {
    pub inflate: Duration,
    pub decode_and_walk: Duration,
}

/// Reads a whole `.osm.pbf` file held in memory: frames, inflates, decodes and counts.
pub fn stats(file: &[u8], dec: &OsmDecoders, timing: &mut Timing) -> Result<Counts, String> {
    let mut counts = Counts::default();
    let mut buf = Vec::new();
    let mut arena = Arena::new();
    for frame in frames(file, dec)? {
        arena.reset();
        let kind = frame_type(&frame, dec, &arena)?.to_owned();
        let t0 = Instant::now();
        inflate(frame.blob, dec, &mut buf)?;
        let t1 = Instant::now();
        counts.block_bytes += buf.len() as u64;
        match kind.as_str() {
            "OSMHeader" => {
                counts.header_blobs += 1;
                let h = dec.header_block.decode(&buf, &arena).map_err(|e| format!("HeaderBlock: {e}"))?;
                for f in h.get_by_number(4).and_then(|v| v.as_list()).into_iter().flat_map(|l| l.iter()) {
                    let feature = f.as_str().unwrap_or("");
                    if !matches!(feature, "OsmSchema-V0.6" | "DenseNodes" | "HistoricalInformation") {
                        return Err(format!("unsupported required feature {feature}"));
                    }
                }
            }
            "OSMData" => {
                counts.data_blobs += 1;
                let b = dec.primitive_block.decode(&buf, &arena).map_err(|e| format!("PrimitiveBlock: {e}"))?;
                count_block(&b, &mut counts);
            }
            other => eprintln!("skipping unknown blob type {other}"),
        }
        timing.inflate += t1 - t0;
        timing.decode_and_walk += t1.elapsed();
    }
    Ok(counts)
}

/// The inflated `(type, block)` pairs of a file, for benchmarking the protobuf layer alone.
pub fn inflated_blocks(file: &[u8], dec: &OsmDecoders) -> Result<Vec<(String, Vec<u8>)>, String> {
    let arena = Arena::new();
    frames(file, dec)?
        .iter()
        .map(|f| {
            let kind = frame_type(f, dec, &arena)?.to_owned();
            let mut buf = Vec::new();
            inflate(f.blob, dec, &mut buf)?;
            Ok((kind, buf))
        })
        .collect()
}

/// Decodes and counts already inflated blocks (the protobuf layer alone).
pub fn count_blocks(blocks: &[(String, Vec<u8>)], dec: &OsmDecoders, arena: &mut Arena) -> Counts {
    let mut counts = Counts::default();
    for (kind, block) in blocks {
        arena.reset();
        if kind == "OSMData" {
            counts.data_blobs += 1;
            let b = dec.primitive_block.decode(block, arena).expect("PrimitiveBlock");
            count_block(&b, &mut counts);
        } else {
            counts.header_blobs += 1;
            std::hint::black_box(dec.header_block.decode(block, arena).expect("HeaderBlock"));
        }
        counts.block_bytes += block.len() as u64;
    }
    counts
}

/// The shared corpus directory (`<workspace>/../shared/corpus`), for the tests and benches
/// that include this file: under `CI=true` its absence is a failure, otherwise they skip
/// when its files are missing (`protojit_corpus::require_shared_corpus`).
#[allow(dead_code)]
pub fn shared_corpus() -> PathBuf {
    protojit_corpus::require_shared_corpus("the OSM example's corpus files")
        .unwrap_or_else(protojit_corpus::shared_corpus_path)
}

#[allow(dead_code)]
fn main() {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    // Defaults: the shared corpus (without it, the error names the path tried).
    let mut schemas = protojit_corpus::shared_corpus_path();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--schemas" => schemas = PathBuf::from(args.next().expect("--schemas DIR")),
            "-h" | "--help" => {
                eprintln!("usage: osm_stats FILE.osm.pbf [--schemas DIR-with-fileformat.proto-and-osmformat.proto]");
                return;
            }
            _ => file = Some(PathBuf::from(a)),
        }
    }
    let file = file.unwrap_or_else(|| protojit_corpus::shared_corpus_path().join("liechtenstein.osm.pbf"));
    let t0 = Instant::now();
    let dec = OsmDecoders::load(&schemas).unwrap_or_else(|e| {
        eprintln!("error: cannot load the OSM schemas from {}: {e}", schemas.display());
        std::process::exit(1)
    });
    let setup = t0.elapsed();
    let bytes = std::fs::read(&file).unwrap_or_else(|e| {
        eprintln!("error: cannot read {}: {e}", file.display());
        std::process::exit(1)
    });
    let t1 = Instant::now();
    let mut timing = Timing::default();
    let c = stats(&bytes, &dec, &mut timing).unwrap_or_else(|e| {
        eprintln!("error: {}: {e}", file.display());
        std::process::exit(1)
    });
    let total = t1.elapsed();
    println!("file:              {} ({} bytes)", file.display(), bytes.len());
    println!("blobs:             {} header, {} data ({} bytes inflated)", c.header_blobs, c.data_blobs, c.block_bytes);
    println!("primitive groups:  {}", c.groups);
    println!("nodes:             {} ({} dense, {} plain)", c.nodes + c.dense_nodes, c.dense_nodes, c.nodes);
    println!("ways:              {} ({} node refs)", c.ways, c.way_refs);
    println!("relations:         {} ({} members)", c.relations, c.relation_members);
    println!("changesets:        {}", c.changesets);
    println!("tags:              {}", c.tags);
    println!(
        "time:              {:.1} ms (schema load + JIT {:.1} ms not included): inflate {:.1} ms, decode + walk {:.1} ms",
        total.as_secs_f64() * 1e3,
        setup.as_secs_f64() * 1e3,
        timing.inflate.as_secs_f64() * 1e3,
        timing.decode_and_walk.as_secs_f64() * 1e3
    );
}
