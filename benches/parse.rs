//! Parsing into binary (issue 31), in interleaved rounds: the public corpus rendered as proto3
//! JSON and as text format by protojit's writers, then parsed back to binary by every arm:
//!
//! - JSON: `protojit_json` (`json_to_binary`), `pbjson` (prost structs generated from the same
//!   `.proto` files with pbjson's serde impls: `serde_json::from_str` + `prost::Message::encode`),
//!   `reflect_json` (prost-reflect: `DynamicMessage::deserialize` + `encode`);
//! - text: `protojit_text` (`text_to_binary`), `reflect_text` (prost-reflect's
//!   `DynamicMessage::parse_text_format` + `encode`).
//!
//! Every arm appends to one reused `Vec`. Before timing, each arm's bytes must decode to the
//! same `DynamicMessage` as protojit's, and protojit's text and JSON bytes must be equal; a
//! mismatch aborts. One short batch per arm per round, the order rotating from round to round;
//! a ratio is taken within a round and reported as the median over the rounds [min–max]
//! (DESIGN.md, performance method). `protoc --encode` is timed whole-process by
//! `benches/parse_protoc.py`.
//!
//! ```sh
//! cargo bench --bench parse                              # 15 rounds of 30 ms batches
//! cargo bench --bench parse -- --rounds 21 --ms 50 --filter osm_
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use protojit_bench_support::rounds::{calibrate, geomean, median, Run};

use prost_reflect::{DynamicMessage, MessageDescriptor};
use protojit::{json_to_binary, text_to_binary, JsonOptions, ParseOptions};
use protojit_arena::Layouts;
use protojit_bench_support::parse::{pbjson_arm, reflect_json_to_binary, reflect_text_to_binary};
use protojit_bench_support::{shared_cases, Case};

/// The shared-corpus wrappers (`BenchmarkDataset`): reported apart from the headline.
const WRAPPERS: [&str; 3] = ["dataset_gm1_proto2", "dataset_gm1_proto3", "dataset_gm2"];

/// (arm, reference): the ratios reported, as speeds (above 1: the arm is faster).
const PAIRS: &[(&str, &str)] = &[
    ("protojit_json", "reflect_json"),
    ("protojit_json", "pbjson"),
    ("protojit_text", "reflect_text"),
    ("pbjson", "reflect_json"),
];

struct Options {
    rounds: usize,
    batch: Duration,
    filter: Option<String>,
}

fn options() -> Options {
    let mut o = Options { rounds: 15, batch: Duration::from_millis(30), filter: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => o.rounds = args.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            "--ms" => o.batch = Duration::from_millis(args.next().and_then(|v| v.parse().ok()).expect("--ms N")),
            "--filter" => o.filter = args.next(),
            // What cargo bench passes to every bench target.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

/// One payload's inputs: the message type and the payload rendered as JSON and as text.
struct Inputs {
    desc: MessageDescriptor,
    json: String,
    text: String,
}

fn fail(case: &Case, arm: &str, what: impl std::fmt::Display) -> ! {
    eprintln!("error: cross-check failed for payload `{}`, arm `{arm}`: {what}", case.name);
    std::process::exit(1);
}

/// The payload as JSON and text, or why it cannot be rendered (then it is left out, said).
fn inputs(case: &Case) -> Result<Inputs, String> {
    let desc = case.schema.pool().get_message_by_name(&case.message).ok_or("no such message type")?;
    let decoder = case.schema.decoder(&case.message).map_err(|e| e.to_string())?;
    let owned = decoder.decode_owned(case.bytes.clone()).map_err(|e| e.to_string())?;
    let json = owned.message().to_json_string(&JsonOptions::default()).map_err(|e| format!("JSON: {e}"))?;
    let text = owned.message().to_text_format();
    Ok(Inputs { desc, json, text })
}

/// The arms of one payload, each a closure doing one parse into a reused `Vec`, after
/// checking that each arm's bytes decode to the same message as protojit's.
fn arms<'a>(case: &'a Case, inp: &'a Inputs) -> Vec<(&'static str, Run<'a>)> {
    let options = ParseOptions::default();
    let desc = &inp.desc;
    let layouts: &Layouts = case.schema.layouts();
    let root = layouts.index_of(desc.full_name()).unwrap_or_else(|| fail(case, "protojit_json", "no layout"));
    let mut ours = Vec::new();
    json_to_binary(layouts, root, inp.json.as_bytes(), &options, &mut ours)
        .unwrap_or_else(|e| fail(case, "protojit_json", e));
    let mut ours_text = Vec::new();
    text_to_binary(layouts, root, inp.text.as_bytes(), &options, &mut ours_text)
        .unwrap_or_else(|e| fail(case, "protojit_text", e));
    if ours != ours_text {
        fail(case, "protojit_text", "bytes differ from protojit_json's");
    }
    let want = DynamicMessage::decode(desc.clone(), ours.as_slice()).unwrap_or_else(|e| fail(case, "protojit_json", e));
    let check = |arm: &str, bytes: &[u8]| {
        let got = DynamicMessage::decode(desc.clone(), bytes).unwrap_or_else(|e| fail(case, arm, e));
        if got != want {
            fail(case, arm, "decodes to a different message than protojit's bytes");
        }
    };

    let mut out: Vec<(&'static str, Run<'a>)> = Vec::new();
    let (json, text) = (inp.json.as_str(), inp.text.as_str());
    let mut buf = Vec::with_capacity(ours.len());
    out.push((
        "protojit_json",
        Box::new(move || {
            buf.clear();
            json_to_binary(layouts, root, black_box(json.as_bytes()), &options, &mut buf).unwrap();
            black_box(buf.len());
        }),
    ));
    let mut buf = Vec::with_capacity(ours.len());
    out.push((
        "protojit_text",
        Box::new(move || {
            buf.clear();
            text_to_binary(layouts, root, black_box(text.as_bytes()), &options, &mut buf).unwrap();
            black_box(buf.len());
        }),
    ));
    match pbjson_arm(&case.message) {
        Some(arm) => {
            let mut b = Vec::new();
            arm.json_to_binary(json, &mut b).unwrap_or_else(|e| fail(case, "pbjson", e));
            check("pbjson", &b);
            let mut buf = Vec::with_capacity(ours.len());
            out.push((
                "pbjson",
                Box::new(move || {
                    buf.clear();
                    arm.json_to_binary(black_box(json), &mut buf).unwrap();
                    black_box(buf.len());
                }),
            ));
        }
        None => eprintln!("note: {}: no prost + pbjson code for {}", case.name, case.message),
    }
    let mut b = Vec::new();
    reflect_json_to_binary(desc, json, &mut b).unwrap_or_else(|e| fail(case, "reflect_json", e));
    check("reflect_json", &b);
    let mut buf = Vec::with_capacity(ours.len());
    out.push((
        "reflect_json",
        Box::new(move || {
            buf.clear();
            reflect_json_to_binary(desc, black_box(json), &mut buf).unwrap();
            black_box(buf.len());
        }),
    ));
    let mut b = Vec::new();
    reflect_text_to_binary(desc, text, &mut b).unwrap_or_else(|e| fail(case, "reflect_text", e));
    check("reflect_text", &b);
    let mut buf = Vec::with_capacity(ours.len());
    out.push((
        "reflect_text",
        Box::new(move || {
            buf.clear();
            reflect_text_to_binary(desc, black_box(text), &mut buf).unwrap();
            black_box(buf.len());
        }),
    ));
    out
}

/// Seconds per parse for each (arm, round) of one payload.
struct Measured {
    name: String,
    json_bytes: usize,
    text_bytes: usize,
    arms: Vec<&'static str>,
    /// `secs[arm][round]`.
    secs: Vec<Vec<f64>>,
}

impl Measured {
    fn arm(&self, name: &str) -> Option<usize> {
        self.arms.iter().position(|&a| a == name)
    }

    /// Median and min/max over rounds of the speed ratio `arm / reference` (same round).
    fn ratio(&self, arm: &str, reference: &str) -> Option<(f64, f64, f64)> {
        let (a, r) = (self.arm(arm)?, self.arm(reference)?);
        let mut v: Vec<f64> = self.secs[r].iter().zip(&self.secs[a]).map(|(r, a)| r / a).collect();
        let m = median(&mut v);
        Some((m, v[0], v[v.len() - 1]))
    }

    fn median_us(&self, arm: &str) -> Option<f64> {
        self.arm(arm).map(|a| median(&mut self.secs[a].clone()) * 1e6)
    }
}

fn main() {
    let o = options();
    let mut cases = shared_cases();
    if let Some(f) = &o.filter {
        cases.retain(|c| c.name.contains(f.as_str()));
    }
    eprintln!("parse: {} payloads, {} rounds of {:?} per arm", cases.len(), o.rounds, o.batch);

    let mut measured = Vec::new();
    let mut left_out = Vec::new();
    for case in &cases {
        let inp = match inputs(case) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("note: {} left out: {e}", case.name);
                left_out.push(format!("{} ({e})", case.name));
                continue;
            }
        };
        let mut arms = arms(case, &inp);
        let iters: Vec<u64> = arms.iter_mut().map(|(_, run)| calibrate(run, o.batch)).collect();
        let mut secs = vec![Vec::with_capacity(o.rounds); arms.len()];
        for round in 0..o.rounds {
            for k in 0..arms.len() {
                let i = (k + round) % arms.len();
                let run = &mut arms[i].1;
                let t = Instant::now();
                for _ in 0..iters[i] {
                    run();
                }
                secs[i].push(t.elapsed().as_secs_f64() / iters[i] as f64);
            }
        }
        eprintln!("  {} done", case.name);
        measured.push(Measured {
            name: case.name.clone(),
            json_bytes: inp.json.len(),
            text_bytes: inp.text.len(),
            arms: arms.iter().map(|a| a.0).collect(),
            secs,
        });
    }

    let all_arms = ["protojit_json", "pbjson", "reflect_json", "protojit_text", "reflect_text"];
    println!("### `parse`: µs per parse, median of {} interleaved rounds", o.rounds);
    println!();
    print!("| payload | JSON bytes | text bytes |");
    all_arms.iter().for_each(|a| print!(" {a} |"));
    println!();
    print!("|---|---:|---:|");
    all_arms.iter().for_each(|_| print!("---:|"));
    println!();
    for m in &measured {
        print!("| {} | {} | {} |", m.name, m.json_bytes, m.text_bytes);
        for a in &all_arms {
            match m.median_us(a) {
                Some(v) => print!(" {v:.1} |"),
                None => print!(" — |"),
            }
        }
        println!();
    }
    println!();
    println!("### `parse`: speed ratios, median of per-round ratios [min–max over {} rounds]", o.rounds);
    println!();
    print!("| payload |");
    PAIRS.iter().for_each(|(a, r)| print!(" {a} ÷ {r} |"));
    println!();
    print!("|---|");
    PAIRS.iter().for_each(|_| print!("---:|"));
    println!();
    for m in &measured {
        print!("| {} |", m.name);
        for (a, r) in PAIRS {
            match m.ratio(a, r) {
                Some((med, lo, hi)) => print!(" {med:.2} [{lo:.2}–{hi:.2}] |"),
                None => print!(" — |"),
            }
        }
        println!();
    }
    println!();
    println!("### `parse`: geometric means of the per-payload medians");
    println!();
    print!("| payloads |");
    PAIRS.iter().for_each(|(a, r)| print!(" {a} ÷ {r} |"));
    println!();
    print!("|---|");
    PAIRS.iter().for_each(|_| print!("---:|"));
    println!();
    for (label, wrappers) in [("public corpus without the wrappers", false), ("the three `dataset_*` wrappers", true)] {
        let ms: Vec<&Measured> = measured.iter().filter(|m| WRAPPERS.contains(&m.name.as_str()) == wrappers).collect();
        if ms.is_empty() {
            continue;
        }
        print!("| {label} ({}) |", ms.len());
        for (a, r) in PAIRS {
            let v: Vec<f64> = ms.iter().filter_map(|m| m.ratio(a, r).map(|x| x.0)).collect();
            if v.is_empty() {
                print!(" — |");
            } else {
                let below = v.iter().filter(|&&x| x < 1.0).count();
                let min = v.iter().cloned().fold(f64::MAX, f64::min);
                print!(" {:.2} (n {}, min {min:.2}; {below} below 1) |", geomean(&v), v.len());
            }
        }
        println!();
    }
    if !left_out.is_empty() {
        println!();
        println!("Left out: {}", left_out.join("; "));
    }
}
