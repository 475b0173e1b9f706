//! Times protojit decoding one payload file, the way the C/C++ peer harnesses in
//! `benches/peers/` time theirs, so `benches/peers/run.sh` can interleave them.
//!
//! ```sh
//! cargo run --release --example decode_timing -- --schema S.proto [--include DIR] --type T FILE
//!     [--engine jit|interp] [--fresh] [--seconds 0.5]
//! ```
//!
//! `--schema` takes a `.proto` file (compiled by protox) or a serialized
//! `FileDescriptorSet` (`*.fds.bin`, `*.pb`, `*.desc`). Decode only, arena reset between
//! decodes (`--fresh`: a new arena each time). Method (as the peers): calibrate a batch
//! to ~50 ms, run batches for `--seconds`, print the median batch throughput as `MB/s`
//! (10^6 bytes per second) on stdout, alone on its line.

use std::path::PathBuf;

use protojit::{Arena, EngineKind, EngineOptions, Schema};

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut schema, mut includes, mut ty, mut file) = (None, Vec::<PathBuf>::new(), None, None);
    let (mut engine, mut fresh, mut seconds) = (EngineKind::Jit, false, 0.5f64);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--schema" => schema = args.next().map(PathBuf::from),
            "--include" => includes.push(args.next().expect("--include DIR").into()),
            "--type" => ty = args.next(),
            "--engine" => {
                engine = match args.next().as_deref() {
                    Some("jit") => EngineKind::Jit,
                    Some("interp") => EngineKind::Interpreter,
                    e => panic!("--engine jit|interp, not {e:?}"),
                }
            }
            "--fresh" => fresh = true,
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).expect("--seconds S"),
            _ => file = Some(PathBuf::from(a)),
        }
    }
    let (Some(schema), Some(ty), Some(file)) = (schema, ty, file) else {
        eprintln!("usage: decode_timing --schema FILE [--include DIR] --type NAME [--engine jit|interp] [--fresh] [--seconds S] PAYLOAD");
        std::process::exit(2);
    };
    let s = schema.to_string_lossy();
    let schema = if s.ends_with(".proto") {
        if includes.is_empty() {
            includes.push(schema.parent().map(PathBuf::from).unwrap_or_else(|| ".".into()));
        }
        Schema::from_proto_files(&[&schema], &includes)
    } else {
        Schema::from_descriptor_set_files(&[&schema])
    }
    .unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    let decoder = schema.decoder_with_options(&ty, &EngineOptions::default().with_kind(engine)).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    let bytes = std::fs::read(&file).expect("payload");
    let mut arena = Arena::new();
    let once = |arena: &mut Arena| {
        if fresh {
            let a = Arena::new();
            std::hint::black_box(decoder.decode(&bytes, &a).expect("decode").block().as_ptr());
        } else {
            arena.reset();
            std::hint::black_box(decoder.decode(&bytes, arena).expect("decode").block().as_ptr());
        }
    };
    let rate = protojit_bench_support::rounds::median_batch_rate(bytes.len() as f64, seconds, || once(&mut arena));
    println!("{rate:.1}");
}
