//! Decode throughput in interleaved rounds: every arm on the same bytes, one short batch
//! per arm per round, the arms' order rotating from round to round, so that a slow
//! stretch of a noisy machine lands on every arm alike. Ratios are taken per round (arm
//! over reference, same round) and reported as the median over the rounds with their
//! spread (min–max), which is the figure BENCHMARKS.md's headline tables use.
//!
//! ```sh
//! cargo bench --bench rounds                       # decode, 15 rounds, 30 ms batches
//! cargo bench --bench rounds -- --mode read        # decode + read every field (checksum)
//! cargo bench --bench rounds -- --rounds 21 --ms 50 --filter osm_ --generated
//! ```
//!
//! Arms, `decode` mode (decode alone; the tree or struct is dropped unread):
//! - `jit`, `interp`: arena reset between decodes, UTF-8 checked as the spec asks (proto3);
//! - `jit_utf8`: the same with every string checked (`Utf8Check::All`): prost's work;
//! - `jit_fresh`, `jit_fresh_utf8`: a new arena per decode;
//! - `prost` (a fresh struct per decode), `prost_reuse` (one struct cleared and merged
//!   into), `prost_reflect` (`DynamicMessage`), `scan` (the wire walk that stores nothing).
//!
//! `read` mode: the same arms, each followed by the content checksum of what it decoded
//! (`tree_checksum_visit` for protojit, the generated `checksum()` for prost); `scan`
//! has no tree and is left out.
//!
//! Before timing, every arm's checksum (string and bytes contents included) is checked
//! against the interpreter's; a mismatch aborts. Output: markdown tables on stdout, every
//! measurement as TSV in `target/rounds/<mode>.tsv` (one line per payload, arm, round).

use std::hint::black_box;
use std::time::{Duration, Instant};

use protojit_bench_support::rounds::{calibrate, geomean, median, Run};

use prost_reflect::DynamicMessage;
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Utf8Check};
use protojit_bench_support::{
    generated_cases, prost_arm, reflect_checksum, shared_cases, tree_checksum, tree_checksum_visit, Case, Scanner,
};

/// The shared-corpus wrappers (`BenchmarkDataset`): reported apart from the headline.
const WRAPPERS: [&str; 3] = ["dataset_gm1_proto2", "dataset_gm1_proto3", "dataset_gm2"];

/// References the ratios are taken against, and the arms compared with each (like with
/// like: reused against reused, fresh against fresh, equal UTF-8 work).
const PAIRS: &[(&str, &str)] = &[
    ("jit", "prost_reuse"),
    ("jit_utf8", "prost_reuse"),
    ("jit_fresh_utf8", "prost"),
    ("jit", "prost_reflect"),
    ("interp", "prost_reuse"),
    ("jit", "scan"),
    ("jit", "jit_fresh"),
];

struct Options {
    rounds: usize,
    batch: Duration,
    read: bool,
    filter: Option<String>,
    generated: bool,
}

fn options() -> Options {
    let mut o = Options { rounds: 15, batch: Duration::from_millis(30), read: false, filter: None, generated: false };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => o.rounds = args.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            "--ms" => o.batch = Duration::from_millis(args.next().and_then(|v| v.parse().ok()).expect("--ms N")),
            "--mode" => {
                o.read = match args.next().as_deref() {
                    Some("read") => true,
                    Some("decode") => false,
                    m => panic!("--mode decode|read, not {m:?}"),
                }
            }
            "--filter" => o.filter = args.next(),
            "--generated" => o.generated = true,
            // What cargo bench passes to every bench target.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

fn decoder(case: &Case, engine: EngineKind, utf8: Utf8Check) -> Decoder {
    let opts = EngineOptions::default().with_kind(engine).with_utf8(utf8);
    case.schema.decoder_with_options(&case.message, &opts).expect("decoder")
}

/// The arms of one payload, each a closure doing one decode (and read), after checking
/// every arm's checksum against the interpreter's.
fn arms<'a>(case: &'a Case, read: bool) -> Vec<(&'static str, Run<'a>)> {
    let bytes = case.bytes.as_slice();
    let fail = |arm: &str, what: String| -> ! {
        eprintln!("error: cross-check failed for payload `{}`, arm `{arm}`: {what}", case.name);
        std::process::exit(1);
    };
    let want = {
        let arena = Arena::new();
        let d = decoder(case, EngineKind::Interpreter, Utf8Check::All);
        tree_checksum(&d.decode(bytes, &arena).unwrap_or_else(|e| fail("interp", e.to_string())))
    };
    let mut out: Vec<(&'static str, Run<'a>)> = Vec::new();
    let tree_arms = [
        ("jit", EngineKind::Jit, Utf8Check::Features, false),
        ("jit_utf8", EngineKind::Jit, Utf8Check::All, false),
        ("jit_fresh", EngineKind::Jit, Utf8Check::Features, true),
        ("jit_fresh_utf8", EngineKind::Jit, Utf8Check::All, true),
        ("interp", EngineKind::Interpreter, Utf8Check::Features, false),
    ];
    for (name, engine, utf8, fresh) in tree_arms {
        let d = decoder(case, engine, utf8);
        {
            let arena = Arena::new();
            let t = d.decode(bytes, &arena).unwrap_or_else(|e| fail(name, e.to_string()));
            if tree_checksum_visit(&t) != want {
                fail(name, "checksum differs from the interpreter's".into());
            }
        }
        let mut arena = Arena::new();
        out.push((
            name,
            match (fresh, read) {
                (false, false) => Box::new(move || {
                    arena.reset();
                    black_box(d.decode(bytes, &arena).unwrap().block().as_ptr());
                }),
                (false, true) => Box::new(move || {
                    arena.reset();
                    black_box(tree_checksum_visit(&d.decode(bytes, &arena).unwrap()));
                }),
                (true, false) => Box::new(move || {
                    let arena = Arena::new();
                    black_box(d.decode(bytes, &arena).unwrap().block().as_ptr());
                }),
                (true, true) => Box::new(move || {
                    let arena = Arena::new();
                    black_box(tree_checksum_visit(&d.decode(bytes, &arena).unwrap()));
                }),
            },
        ));
    }
    match prost_arm(&case.message) {
        Some(fresh) => {
            let mut reused = prost_arm(&case.message).expect("the same type");
            let got = fresh.decode_checksum(bytes).unwrap_or_else(|e| fail("prost", e));
            if got != want || reused.reuse_checksum(bytes) != want || reused.reuse_checksum(bytes) != want {
                fail("prost", "checksum differs from the interpreter's".into());
            }
            if read {
                out.push((
                    "prost",
                    Box::new(move || {
                        black_box(fresh.decode_checksum(bytes).unwrap());
                    }),
                ));
                out.push((
                    "prost_reuse",
                    Box::new(move || {
                        black_box(reused.reuse_checksum(bytes));
                    }),
                ));
            } else {
                out.push(("prost", Box::new(move || fresh.decode_only(bytes))));
                out.push(("prost_reuse", Box::new(move || reused.reuse_only(bytes))));
            }
        }
        None => eprintln!("note: {}: no prost code for {}", case.name, case.message),
    }
    let desc = case.schema.pool().get_message_by_name(&case.message).expect("message type");
    let dm = DynamicMessage::decode(desc.clone(), bytes).unwrap_or_else(|e| fail("prost_reflect", e.to_string()));
    if reflect_checksum(&dm) != want {
        fail("prost_reflect", "checksum differs from the interpreter's".into());
    }
    let d2 = desc.clone();
    out.push((
        "prost_reflect",
        if read {
            Box::new(move || {
                black_box(reflect_checksum(&DynamicMessage::decode(d2.clone(), bytes).unwrap()));
            })
        } else {
            Box::new(move || drop(black_box(DynamicMessage::decode(d2.clone(), bytes).unwrap())))
        },
    ));
    if !read {
        let scanner = Scanner::new(&desc);
        scanner.scan(bytes).unwrap_or_else(|_| fail("scan", "not valid wire format".into()));
        out.push(("scan", Box::new(move || drop(black_box(scanner.scan(bytes))))));
    }
    out
}

/// MB/s per (arm, round) of one payload.
struct Measured {
    name: String,
    /// From the public corpus (not the generated one).
    shared: bool,
    bytes: usize,
    arms: Vec<&'static str>,
    /// `mbs[arm][round]`.
    mbs: Vec<Vec<f64>>,
}

impl Measured {
    fn arm(&self, name: &str) -> Option<usize> {
        self.arms.iter().position(|&a| a == name)
    }

    /// Median and min/max over rounds of `arm / reference` (same round).
    fn ratio(&self, arm: &str, reference: &str) -> Option<(f64, f64, f64)> {
        let (a, r) = (self.arm(arm)?, self.arm(reference)?);
        let mut v: Vec<f64> = self.mbs[a].iter().zip(&self.mbs[r]).map(|(x, y)| x / y).collect();
        let m = median(&mut v);
        Some((m, v[0], v[v.len() - 1]))
    }

    fn median_mbs(&self, arm: &str) -> Option<f64> {
        self.arm(arm).map(|a| median(&mut self.mbs[a].clone()))
    }
}

fn main() {
    let o = options();
    let mut cases = shared_cases();
    if o.generated {
        cases.extend(generated_cases());
    }
    if let Some(f) = &o.filter {
        cases.retain(|c| c.name.contains(f.as_str()));
    }
    let mode = if o.read { "read" } else { "decode" };
    eprintln!("{mode}: {} payloads, {} rounds of {:?} per arm", cases.len(), o.rounds, o.batch);

    let mut measured = Vec::new();
    for case in &cases {
        let mut arms = arms(case, o.read);
        let iters: Vec<u64> = arms.iter_mut().map(|(_, run)| calibrate(run, o.batch)).collect();
        let mut mbs = vec![Vec::with_capacity(o.rounds); arms.len()];
        for round in 0..o.rounds {
            for k in 0..arms.len() {
                let i = (k + round) % arms.len();
                let run = &mut arms[i].1;
                let t = Instant::now();
                for _ in 0..iters[i] {
                    run();
                }
                let secs = t.elapsed().as_secs_f64();
                mbs[i].push(case.bytes.len() as f64 * iters[i] as f64 / secs / 1e6);
            }
        }
        eprintln!("  {} done", case.name);
        measured.push(Measured {
            name: case.name.clone(),
            shared: case.family == "shared",
            bytes: case.bytes.len(),
            arms: arms.iter().map(|a| a.0).collect(),
            mbs,
        });
    }

    // Every measurement, for reports.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/rounds");
    std::fs::create_dir_all(&dir).expect("target/rounds");
    let mut tsv = String::from("payload\tbytes\tarm\tround\tmb_per_s\n");
    for m in &measured {
        for (a, arm) in m.arms.iter().enumerate() {
            for (r, v) in m.mbs[a].iter().enumerate() {
                tsv.push_str(&format!("{}\t{}\t{arm}\t{r}\t{v:.3}\n", m.name, m.bytes));
            }
        }
    }
    std::fs::write(dir.join(format!("{mode}.tsv")), tsv).expect("write tsv");

    let all_arms: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for m in &measured {
            for a in &m.arms {
                if !v.contains(a) {
                    v.push(a);
                }
            }
        }
        v
    };
    println!("### `{mode}`: MB/s (10^6 B/s), median of {} interleaved rounds", o.rounds);
    println!();
    print!("| payload | bytes |");
    all_arms.iter().for_each(|a| print!(" {a} |"));
    println!();
    print!("|---|---:|");
    all_arms.iter().for_each(|_| print!("---:|"));
    println!();
    for m in &measured {
        print!("| {} | {} |", m.name, m.bytes);
        for a in &all_arms {
            match m.median_mbs(a) {
                Some(v) => print!(" {v:.0} |"),
                None => print!(" — |"),
            }
        }
        println!();
    }
    println!();
    println!("### `{mode}`: ratios, median of per-round ratios [min–max over {} rounds]", o.rounds);
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
    println!("### `{mode}`: geometric means of the per-payload medians");
    println!();
    print!("| payloads |");
    PAIRS.iter().for_each(|(a, r)| print!(" {a} ÷ {r} |"));
    println!();
    print!("|---|");
    PAIRS.iter().for_each(|_| print!("---:|"));
    println!();
    type Group = (&'static str, fn(&Measured) -> bool);
    let groups: [Group; 3] = [
        ("public corpus without the wrappers", |m| m.shared && !WRAPPERS.contains(&m.name.as_str())),
        ("the three `dataset_*` wrappers", |m| WRAPPERS.contains(&m.name.as_str())),
        ("generated corpus", |m| !m.shared),
    ];
    for (label, keep) in groups {
        let ms: Vec<&Measured> = measured.iter().filter(|m| keep(m)).collect();
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
                print!(
                    " {:.2} (min {:.2}; {below} below 1) |",
                    geomean(&v),
                    v.iter().cloned().fold(f64::MAX, f64::min)
                );
            }
        }
        println!();
    }
}
