//! Decodes one file many times with one engine: a target for `perf record` / `callgrind`.
//! `PROTOJIT_PROFILE_WARM=1` with `auto` compiles every type the payload holds (tiering,
//! calls through the entry table) before the timed loop; `PROTOJIT_PROFILE_STATS=1` prints
//! each type's tier afterwards; `PROTOJIT_PROFILE_FRESH=1` decodes into a new arena each time.
//!
//! `cargo run --release --example profile -- SCHEMA.proto|SET.fds TYPE INPUT [jit|interp] [ITERATIONS]`
//! Set `PERF_BUILDID_DIR=1` so `perf report` can name the compiled functions.

use protojit::{Arena, EngineKind, EngineOptions, Schema};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [proto, type_name, input, rest @ ..] = args.as_slice() else {
        return Err("usage: profile SCHEMA.proto TYPE INPUT [jit|interp|auto] [ITERATIONS]".into());
    };
    let engine = match rest.first().map(String::as_str) {
        Some("interp") => EngineKind::Interpreter,
        Some("auto") => EngineKind::Auto,
        _ => EngineKind::Jit,
    };
    let iterations: usize = rest.get(1).map_or(Ok(1000), |n| n.parse())?;
    // A `.proto` file, or any other file as a descriptor set (`.fds`, `.pb`, …).
    let schema = if proto.ends_with(".proto") {
        let dir = std::path::Path::new(proto).parent().unwrap_or(std::path::Path::new("."));
        Schema::from_proto_files(&[proto], &[dir])?
    } else {
        Schema::from_descriptor_set_files(&[proto])?
    };
    let mut options = EngineOptions::default().with_kind(engine);
    if std::env::var_os("PROTOJIT_PROFILE_WARM").is_some() {
        // Steady state of tiering: every type hot at once, compiled before the timing.
        options.tiering = protojit::Tiering { after_decodes: 1, after_bytes: 1 };
    }
    let decoder = schema.decoder_with_options(type_name, &options)?;
    let bytes = std::fs::read(input)?;
    let mut arena = Arena::new();
    if std::env::var_os("PROTOJIT_PROFILE_WARM").is_some() {
        let unsettled = |t: &protojit::TypeStats| {
            t.engine == protojit::TypeEngine::Queued
                || (t.engine == protojit::TypeEngine::Cold && t.interpreted_decodes > 0)
        };
        // One decode first: it is what makes the payload's types hot.
        decoder.decode(&bytes, &arena)?;
        // Then the types it met compiled, and the root recompiled with direct calls.
        while decoder.stats().types.iter().any(unsettled) || !decoder.stats().direct_calls {
            arena.reset();
            decoder.decode(&bytes, &arena)?;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let fresh = std::env::var_os("PROTOJIT_PROFILE_FRESH").is_some();
    let started = std::time::Instant::now();
    if fresh {
        // A new arena per decode, dropped after it.
        for _ in 0..iterations {
            let arena = Arena::new();
            std::hint::black_box(decoder.decode(&bytes, &arena)?.block().as_ptr());
        }
    } else {
        for _ in 0..iterations {
            arena.reset();
            std::hint::black_box(decoder.decode(&bytes, &arena)?.block().as_ptr());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{iterations} x {} bytes with {engine:?}: {:.1} MB/s, {:.1} ns per decode",
        bytes.len(),
        (iterations * bytes.len()) as f64 / secs / 1e6,
        secs * 1e9 / iterations as f64
    );
    if std::env::var_os("PROTOJIT_PROFILE_STATS").is_some() {
        for t in decoder.stats().types {
            eprintln!(
                "{}: {:?}, {} interpreted decodes, compiled in {:?}",
                t.message_type, t.engine, t.interpreted_decodes, t.compile_time
            );
        }
    }
    Ok(())
}
