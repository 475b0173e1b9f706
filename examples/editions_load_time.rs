//! Schema load time of an editions descriptor set against the same schema as proto2/proto3: `Schema::from_descriptor_set` on the set as written, and on its twin, in rotated rounds; prints the median per-round ratio (issue goal: within 1.2×).
//!
//! `cargo run --release --example editions_load_time -- SET.fds [rounds] [loads per round] [TWIN.fds]`
//! (e.g. `../shared/corpus/editions/test_messages_proto2_editions.fds 15 100
//! tests/fixtures/editions/twin35_proto2.fds`). The twin is the same schema written in
//! proto2/proto3 (protobuf's test messages of the same release); without one, the set's own
//! lowered form (the same declarations, every file proto2). Wall time: on a busy machine run it
//! several times.

use std::hint::black_box;
use std::time::{Duration, Instant};

use protojit::{lower_descriptor_set, Schema};

fn time(loads: usize, bytes: &[u8]) -> Duration {
    let start = Instant::now();
    for _ in 0..loads {
        black_box(Schema::from_descriptor_set(bytes).expect("the set loads"));
    }
    start.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: editions_load_time SET.fds [rounds] [loads per round]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let loads: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let editions = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lowered = lower_descriptor_set(&editions).unwrap_or_else(|e| panic!("{path}: {e}"));
    if !lowered.has_editions {
        eprintln!("{path} has no editions file: both arms would be the same");
    }
    let (twin_name, twin) = match args.get(3) {
        Some(twin) => (twin.as_str(), std::fs::read(twin).unwrap_or_else(|e| panic!("{twin}: {e}"))),
        None => ("its lowered form", lowered.bytes),
    };
    let mut ratios = Vec::with_capacity(rounds);
    let (mut total_editions, mut total_proto2) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        // Alternate which arm goes first, so that a drift in the machine's load hits both.
        let (e, p) = if round % 2 == 0 {
            let e = time(loads, &editions);
            (e, time(loads, &twin))
        } else {
            let p = time(loads, &twin);
            (time(loads, &editions), p)
        };
        total_editions += e;
        total_proto2 += p;
        ratios.push(e.as_secs_f64() / p.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (rounds * loads) as f64;
    println!(
        "{path}: editions {:.1} µs, {twin_name} {:.1} µs per load; median ratio {:.3} over {rounds} rounds of {loads}",
        per(total_editions),
        per(total_proto2),
        ratios[rounds / 2]
    );
}
