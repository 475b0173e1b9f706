//! Times one arm of the streaming benchmark (issue 29) on one OSM block or vector tile, the way `benches/peers/protozero_harness.cc` times protozero, so `benches/peers/stream.sh` can interleave them.
//!
//! ```sh
//! cargo run --profile bench --example stream_timing -- --arm stream|tree|tree_interp|prost \
//!     --kind osm|osm_header|mvt [--corpus DIR] [--seconds 0.25] FILE
//! ```
//!
//! Every arm reads every field of the payload and computes the flat checksum of
//! `protojit_bench_support::stream_sum` (the protozero harness computes the same):
//!
//! - `stream`: `Decoder::stream` with a `StreamVisitor` (no tree, no arena);
//! - `tree`: JIT decode into an arena (reset between decodes), then `MessageRef::visit`;
//! - `tree_interp`: the same with the interpreter;
//! - `prost`: prost's generated code (`decode` into fresh structs), then a walk of them.
//!
//! Prints `MB/s checksum` (10^6 bytes per second, the median over batches calibrated to
//! ~50 ms, run for `--seconds`); `--seconds 0` prints `0 checksum` after one pass, and
//! `--passes N` makes it N passes (for callgrind: instructions per call are the difference of
//! two pass counts divided by theirs).

use std::hint::black_box;
use std::path::PathBuf;

use protojit::{Arena, EngineKind, EngineOptions, Schema};
use protojit_bench_support::stream_sum::{prost_sum, tree_sum, Kind, StreamSum};

fn usage() -> ! {
    eprintln!(
        "usage: stream_timing --arm stream|tree|tree_interp|prost --kind osm|osm_header|mvt [--corpus DIR] [--seconds S] [--passes N] FILE"
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut arm, mut kind, mut file, mut seconds, mut passes) = (None, None, None, 0.25f64, 1u64);
    let mut corpus = protojit_bench_support::shared_corpus();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--arm" => arm = args.next(),
            "--kind" => kind = Some(args.next().as_deref().and_then(Kind::from_arg).unwrap_or_else(|| usage())),
            "--corpus" => corpus = args.next().map(PathBuf::from).unwrap_or_else(|| usage()),
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--passes" => passes = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            _ => file = Some(PathBuf::from(a)),
        }
    }
    let (Some(arm), Some(kind), Some(file)) = (arm, kind, file) else { usage() };
    let bytes = std::fs::read(&file).unwrap_or_else(|e| {
        eprintln!("error: cannot read {}: {e}", file.display());
        std::process::exit(1)
    });
    let schema = Schema::from_proto_files(&[corpus.join(kind.proto())], &[&corpus]).unwrap_or_else(|e| {
        eprintln!("error: {e} (is --corpus the shared corpus directory?)");
        std::process::exit(1)
    });
    let decoder = |engine| {
        schema.decoder_with_options(kind.message(), &EngineOptions::default().with_kind(engine)).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        })
    };
    let mut arena = Arena::new();
    let mut run: Box<dyn FnMut() -> u64> = match arm.as_str() {
        "stream" => {
            // The interpreter's walk (every engine kind walks with it).
            let d = decoder(EngineKind::Interpreter);
            Box::new(move || {
                let mut s = StreamSum(0);
                assert!(d.stream(&bytes, &mut s).expect("stream").is_continue());
                s.0
            })
        }
        "tree" | "tree_interp" => {
            let d = decoder(if arm == "tree" { EngineKind::Jit } else { EngineKind::Interpreter });
            Box::new(move || {
                arena.reset();
                tree_sum(&d.decode(&bytes, &arena).expect("decode"))
            })
        }
        "prost" => Box::new(move || prost_sum(kind, &bytes).expect("prost decode")),
        _ => usage(),
    };
    let sum = run();
    for _ in 1..passes {
        black_box(run());
    }
    if seconds <= 0.0 {
        println!("0 {sum}");
        return;
    }
    let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64;
    let rate = protojit_bench_support::rounds::median_batch_rate(len, seconds, || {
        black_box(run());
    });
    println!("{rate:.1} {sum}");
}
