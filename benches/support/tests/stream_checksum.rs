//! The streaming benchmark's arms compute the same flat checksum on every payload (streaming visitor, tree visitor on both engines, prost, and the protozero harness when its compiler and headers are there), so its timings compare equal work.

use std::path::Path;
use std::process::Command;

use protojit::{Arena, EngineKind, EngineOptions, Schema};
use protojit_bench_support::stream_sum::{prost_sum, tree_sum, Kind, StreamSum, STREAM_CASES};

/// The checksum of every payload by every in-process arm, asserted equal; returns them.
fn protojit_and_prost_sums() -> Vec<(&'static str, &'static str, Kind, u64)> {
    let Some(dir) = protojit_corpus::require_shared_corpus("the streaming checksum test") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for kind in [Kind::OsmBlock, Kind::OsmHeader, Kind::Tile] {
        let schema = Schema::from_proto_files(&[dir.join(kind.proto())], &[&dir]).unwrap();
        let decoder = |e| schema.decoder_with_options(kind.message(), &EngineOptions::default().with_kind(e)).unwrap();
        let (interp, jit) = (decoder(EngineKind::Interpreter), decoder(EngineKind::Jit));
        for &(name, file, _) in STREAM_CASES.iter().filter(|c| c.2 == kind) {
            let bytes = std::fs::read(dir.join(file)).unwrap();
            let want = prost_sum(kind, &bytes).unwrap();
            assert_ne!(want, 0, "{name}");
            for (engine, d) in [("interp", &interp), ("jit", &jit)] {
                let mut s = StreamSum(0);
                assert!(d.stream(&bytes, &mut s).unwrap().is_continue(), "{name}");
                assert_eq!(s.0, want, "{name}: streaming visitor ({engine} decoder) vs prost");
                let arena = Arena::new();
                let tree = d.decode(&bytes, &arena).unwrap();
                assert_eq!(tree_sum(&tree), want, "{name}: tree visitor ({engine}) vs prost");
            }
            out.push((name, file, kind, want));
        }
    }
    out
}

#[test]
fn stream_tree_and_prost_agree() {
    let sums = protojit_and_prost_sums();
    if protojit_corpus::shared_corpus_path().is_dir() {
        assert_eq!(sums.len(), STREAM_CASES.len());
    }
}

/// A changed value changes the checksum (it is not blind to what the arms read).
#[test]
fn the_checksum_sees_a_changed_value() {
    let Some(dir) = protojit_corpus::require_shared_corpus("the streaming checksum test") else { return };
    let (_, file, kind) = STREAM_CASES[4];
    let mut bytes = std::fs::read(dir.join(file)).unwrap();
    let before = prost_sum(kind, &bytes).unwrap();
    // The last byte ends the last layer's last field: a varint's last byte (or a string's);
    // flipping its low bit keeps the wire valid and changes one value.
    *bytes.last_mut().unwrap() ^= 1;
    assert_ne!(prost_sum(kind, &bytes).unwrap(), before);
}

/// The protozero consumer (benches/peers/protozero_harness.cc) agrees with protojit. Needs
/// g++ and Debian's header-only libprotozero-dev; without them it says so and checks nothing
/// (`PROTOJIT_REQUIRE_PROTOZERO=1` makes that a failure).
#[test]
fn protozero_harness_agrees() {
    let sums = protojit_and_prost_sums();
    if sums.is_empty() {
        return;
    }
    let required = std::env::var_os("PROTOJIT_REQUIRE_PROTOZERO").is_some();
    if !Path::new("/usr/include/protozero/pbf_reader.hpp").exists() {
        assert!(!required, "no /usr/include/protozero: apt-get install libprotozero-dev");
        eprintln!("skipped: no /usr/include/protozero (apt-get install libprotozero-dev)");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../peers/protozero_harness.cc");
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("protozero_harness");
    let built = Command::new("g++").args(["-O1", "-std=c++17", "-o"]).arg(&exe).arg(&src).status();
    match built {
        Ok(s) => assert!(s.success(), "g++ failed on {}", src.display()),
        Err(e) => {
            assert!(!required, "cannot run g++: {e}");
            eprintln!("skipped: cannot run g++: {e}");
            return;
        }
    }
    let dir = protojit_corpus::shared_corpus_path();
    for (name, file, kind, want) in sums {
        let out = Command::new(&exe).arg(kind.arg()).arg(dir.join(file)).arg("0").output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let got: u64 = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("`0 checksum`");
        assert_eq!(got, want, "{name}: protozero vs protojit/prost");
    }
}
