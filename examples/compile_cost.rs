//! Per-type compile cost of a schema, as tiering pays it: every message type compiled
//! alone into the schema's module, `ROUNDS` times on fresh tiers; prints the median and
//! p90 compile time and code bytes, the median of each phase (lowering to IR, Cranelift,
//! linking), Cranelift's own pass table over all compiles, and the slowest types.
//!
//! `cargo run --release --example compile_cost -- SCHEMA.proto|SET.fds.bin [opt_level] [rounds]`
//! (opt_level: `speed` (default) or `none`; `PROTOJIT_SINGLE_PASS=1` uses Cranelift's
//! single-pass register allocator).

use protojit::{CompileOptions, Engines, OptLevel, Regalloc, Schema, TypeEngine};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: compile_cost SCHEMA.proto|SET.fds.bin [speed|none] [rounds]");
        std::process::exit(2);
    };
    let opt_level = match args.get(1).map(String::as_str) {
        None | Some("speed") => OptLevel::Speed,
        Some("none") => OptLevel::None,
        Some(other) => {
            eprintln!("error: unknown opt_level `{other}` (speed or none)");
            std::process::exit(2);
        }
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let path = std::path::Path::new(path);
    let schema = if path.extension().is_some_and(|e| e == "proto") {
        let dir = path.parent().unwrap();
        Schema::from_proto_files(&[path], &[dir])
    } else {
        Schema::from_descriptor_set_files(&[path])
    }
    .unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1);
    });
    let regalloc =
        if std::env::var_os("PROTOJIT_SINGLE_PASS").is_some() { Regalloc::SinglePass } else { Regalloc::Backtracking };
    let options = CompileOptions { opt_level, regalloc, ..Default::default() };
    let n = schema.layouts().len();
    // Per type: the fastest of the rounds (the least disturbed by other work), with its
    // phases.
    let mut best = vec![(f64::MAX, 0u32); n];
    let mut best_phases = vec![protojit::CompilePhases::default(); n];
    let _ = cranelift_codegen::timing::take_current();
    for _ in 0..rounds {
        let engines = Engines::new(schema.layouts().clone(), options.clone());
        let tiers = engines.tiers();
        for (li, _) in schema.layouts().iter() {
            tiers.compile_now(li);
            let st = tiers.type_stats(li);
            if st.engine == TypeEngine::Jit {
                let us = st.compile_time.as_secs_f64() * 1e6;
                if us < best[li.index()].0 {
                    best[li.index()] = (us, st.code_bytes);
                    best_phases[li.index()] = st.phases;
                }
            }
        }
    }
    let mut rows: Vec<(f64, u32, String)> = schema
        .layouts()
        .iter()
        .filter(|(li, _)| best[li.index()].0 < f64::MAX)
        .map(|(li, l)| (best[li.index()].0, best[li.index()].1, l.descriptor().full_name().to_owned()))
        .collect();
    if rows.is_empty() {
        eprintln!("error: nothing compiled");
        std::process::exit(1);
    }
    let mut us: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let mut bytes: Vec<u32> = rows.iter().map(|r| r.1).collect();
    us.sort_by(f64::total_cmp);
    bytes.sort();
    let q = |len: usize, f: f64| ((len as f64 * f).ceil() as usize).clamp(1, len) - 1;
    let total: f64 = us.iter().sum();
    println!(
        "{} types, opt_level {opt_level:?}: compile median {:.0} us, p90 {:.0} us, total {:.1} ms; code median {} B, p90 {} B",
        rows.len(),
        us[q(us.len(), 0.5)],
        us[q(us.len(), 0.9)],
        total / 1e3,
        bytes[q(bytes.len(), 0.5)],
        bytes[q(bytes.len(), 0.9)]
    );
    let median_us = |f: fn(&protojit::CompilePhases) -> std::time::Duration| {
        let mut v: Vec<f64> = schema
            .layouts()
            .iter()
            .filter(|(li, _)| best[li.index()].0 < f64::MAX)
            .map(|(li, _)| f(&best_phases[li.index()]).as_secs_f64() * 1e6)
            .collect();
        v.sort_by(f64::total_cmp);
        v[q(v.len(), 0.5)]
    };
    println!(
        "phases (median us): lower to IR {:.0}, Cranelift {:.0}, link {:.0}",
        median_us(|p| p.lower),
        median_us(|p| p.codegen),
        median_us(|p| p.link)
    );
    println!("Cranelift's passes, all compiles of all rounds:\n{}", cranelift_codegen::timing::take_current());
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (us, bytes, name) in rows.iter().take(5) {
        println!("  {us:>8.0} us {bytes:>7} B  {name}");
    }
}
