//! Read driver for benches/callgrind/callgrind.sh (built there as a crate of its own, not a workspace member):
//! decodes one payload once with the eager JIT, then runs one read N times, so that
//! (instructions at 3N − at N) ÷ 2N is the cost of one read, as `examples/profile` does for
//! decodes. The reads are the bodies of benches/read.rs and benches/decode.rs:
//!
//!   visit        `tree_checksum_visit` (MessageRef::visit, the `*_visit` arms of benches/decode.rs)
//!   handle       `Field<i32>` read of GoogleMessage1.field2 (read.rs `handle/gm1_field2` protojit_handle)
//!   get_by_name  `MessageRef::get("field2")` (read.rs `handle/gm1_field2` protojit_get_by_name)
//!   slices_osm   sum of dense id/lat/lon via `Field<List<i64>>` (read.rs `slices/osm_dense`, read part)
//!   slices_mvt   sum of every feature's geometry via `Field<List<u32>>` (read.rs `slices/mvt_*`, read part)
//!
//! usage: callgrind-read MODE SCHEMA.proto TYPE INPUT N
//! Prints the value of one read (equal before and after a refactor, or the read changed).
//!
//! Only the section marked ADAPT names the library's API; an API rename is absorbed there.

use std::hint::black_box;

// ======================= ADAPT: every use of protojit's API is in this section ===========
use protojit::{field, Arena, Decoder, EngineKind, EngineOptions, Field, MessageRef, Schema};

/// A decoded tree, as the decoder returns it.
type Tree<'a> = MessageRef<'a>;
type I32Handle = Field<i32>;
type MessagesHandle = Field<field::List<field::Message>>;
type I64sHandle = Field<field::List<i64>>;
type U32sHandle = Field<field::List<u32>>;

fn load_schema(proto: &str) -> Schema {
    let dir = std::path::Path::new(proto).parent().unwrap_or(std::path::Path::new("."));
    Schema::from_proto_files(&[proto], &[dir]).expect("schema")
}

/// The eagerly compiled decoder (read benchmarks time reading, not tiering).
fn jit_decoder(schema: &Schema, message: &str) -> Decoder {
    schema.decoder_with_options(message, &EngineOptions::default().with_kind(EngineKind::Jit)).expect("decoder")
}

fn decode<'a>(decoder: &'a Decoder, bytes: &'a [u8], arena: &'a Arena) -> Tree<'a> {
    decoder.decode(bytes, arena).expect("decode")
}

fn i32_handle(schema: &Schema, message: &str, path: &str) -> I32Handle {
    Field::<i32>::resolve(schema.layouts(), message, path).expect("handle")
}
fn messages_handle(schema: &Schema, message: &str, path: &str) -> MessagesHandle {
    Field::<field::List<field::Message>>::resolve(schema.layouts(), message, path).expect("handle")
}
fn i64s_handle(schema: &Schema, message: &str, path: &str) -> I64sHandle {
    Field::<field::List<i64>>::resolve(schema.layouts(), message, path).expect("handle")
}
fn u32s_handle(schema: &Schema, message: &str, path: &str) -> U32sHandle {
    Field::<field::List<u32>>::resolve(schema.layouts(), message, path).expect("handle")
}

#[inline(always)]
fn read_i32(h: &I32Handle, m: &Tree<'_>) -> Option<i32> {
    h.get(m)
}
#[inline(always)]
fn read_messages<'a>(h: &MessagesHandle, m: &Tree<'a>) -> impl Iterator<Item = Tree<'a>> {
    h.get(m).expect("handle of this type")
}
#[inline(always)]
fn read_i64s<'a>(h: &I64sHandle, m: &Tree<'a>) -> &'a [i64] {
    h.get(m).expect("handle of this type")
}
#[inline(always)]
fn read_u32s<'a>(h: &U32sHandle, m: &Tree<'a>) -> &'a [u32] {
    h.get(m).expect("handle of this type")
}
/// Read by name, through a `Value` (read.rs `protojit_get_by_name`).
#[inline(always)]
fn get_i32_by_name(m: &Tree<'_>, name: &str) -> i32 {
    m.get(name).and_then(|v| v.as_i32()).unwrap_or_default()
}
/// The visitor walk every decode arm shares (benches/support).
#[inline(always)]
fn visit_checksum(m: &Tree<'_>) -> u64 {
    protojit_bench_support::tree_checksum_visit(m)
}
// ======================= end of ADAPT ====================================================

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, proto, message, input, n] = args.as_slice() else {
        eprintln!("usage: callgrind-read visit|handle|get_by_name|slices_osm|slices_mvt SCHEMA.proto TYPE INPUT N");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N");
    let schema = load_schema(proto);
    let decoder = jit_decoder(&schema, message);
    let bytes = std::fs::read(input).expect("input");
    let arena = Arena::new();
    let tree = decode(&decoder, &bytes, &arena);
    let one = match mode.as_str() {
        "visit" => repeat(n, || visit_checksum(black_box(&tree))),
        "handle" => {
            let h = i32_handle(&schema, message, "field2");
            repeat(n, || read_i32(&h, black_box(&tree)).unwrap_or_default() as u64)
        }
        "get_by_name" => repeat(n, || get_i32_by_name(black_box(&tree), "field2") as u64),
        "slices_osm" => {
            let groups = messages_handle(&schema, "OSMPBF.PrimitiveBlock", "primitivegroup");
            let id = i64s_handle(&schema, "OSMPBF.PrimitiveGroup", "dense.id");
            let lat = i64s_handle(&schema, "OSMPBF.PrimitiveGroup", "dense.lat");
            let lon = i64s_handle(&schema, "OSMPBF.PrimitiveGroup", "dense.lon");
            let sum = |s: &[i64]| s.iter().fold(0i64, |a, &x| a.wrapping_add(x));
            repeat(n, || {
                let mut acc = 0i64;
                for g in read_messages(&groups, black_box(&tree)) {
                    acc = acc.wrapping_add(sum(read_i64s(&id, &g)));
                    acc = acc.wrapping_add(sum(read_i64s(&lat, &g)));
                    acc = acc.wrapping_add(sum(read_i64s(&lon, &g)));
                }
                acc as u64
            })
        }
        "slices_mvt" => {
            let layers = messages_handle(&schema, "vector_tile.Tile", "layers");
            let features = messages_handle(&schema, "vector_tile.Tile.Layer", "features");
            let geometry = u32s_handle(&schema, "vector_tile.Tile.Feature", "geometry");
            repeat(n, || {
                let mut acc = 0u64;
                for layer in read_messages(&layers, black_box(&tree)) {
                    for f in read_messages(&features, &layer) {
                        acc = fold_geometry(read_u32s(&geometry, &f), acc);
                    }
                }
                acc
            })
        }
        other => {
            eprintln!("unknown mode {other}");
            std::process::exit(2);
        }
    };
    println!("{mode} {input}: one read = {one}, {n} reads");
}

/// read.rs's geometry fold.
#[inline(always)]
fn fold_geometry(g: &[u32], acc: u64) -> u64 {
    g.iter().fold(acc, |a, &x| a.wrapping_add(u64::from(x)))
}

/// Runs `read` n times (each result kept alive with `black_box`); returns one read's value.
#[inline(never)]
fn repeat(n: usize, mut read: impl FnMut() -> u64) -> u64 {
    let first = read();
    for _ in 1..n {
        black_box(read());
    }
    first
}
