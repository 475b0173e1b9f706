//! Decode throughput: every arm on the same bytes in the same run.
//!
//! Arms: protojit's `jit` and `interp` (arena reset between decodes, and `*_fresh`: a new
//! arena per decode), `prost` (code generated at build time from the same `.proto` files;
//! `prost_reuse` clears and merges into one struct), `prost_reflect` (DynamicMessage),
//! `protobuf` (rust-protobuf v3 dynamic messages, where it handles the schema) and `scan`
//! (a wire walk that reads every tag, skips every value and stores nothing: the floor).
//!
//! Payloads: the shared public corpus (`../shared/corpus/`) and the project's generated
//! corpus (`protojit-corpus`, made in memory).
//!
//! Groups, one per payload:
//! - `read/<payload>`: decode and read every present field (a checksum walk, the work a
//!   real consumer does): `jit`/`interp` through `MessageRef::fields()`, `jit_visit` /
//!   `interp_visit` through `MessageRef::visit` (typed callbacks, slices); `jit_stream` /
//!   `interp_stream`: no tree, `Decoder::stream` (the interpreted walk, on a `jit` and an `interp` decoder)
//!   computing the same checksum;
//! - `decode/<payload>`: decode alone.
//!
//! Before any timing, every arm's checksum is checked against the interpreter's (scan:
//! its count of nested messages); a mismatch aborts the run.
//!
//! `cargo bench --bench decode` (all), `cargo bench --bench decode -- read/osm_` (a
//! subset). `PROTOJIT_BENCH_WARMUP_MS` / `PROTOJIT_BENCH_MEASURE_MS` override the times.
//! Results and ratios are in BENCHMARKS.md (`python3 benches/report.py` makes the tables).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost_reflect::DynamicMessage;
use protojit::{Arena, Decoder, EngineKind, EngineOptions};
use protojit_bench_support::{
    all_cases, prost_arm, reflect_checksum, rp_checksum, stream_checksum, tree_checksum, tree_checksum_visit,
    tree_message_count, Case, ProstArm, RustProtobuf, Scanner,
};

struct Prepared {
    case: Case,
    jit: Decoder,
    interp: Decoder,
    prost: Option<Box<dyn ProstArm>>,
    reflect: prost_reflect::MessageDescriptor,
    /// Whether the `*_stream` arms run (the payload's stream checksum is its tree's).
    streams: bool,
    protobuf: Option<RustProtobuf>,
    scanner: Scanner,
}

fn fail(case: &Case, arm: &str, what: String) -> ! {
    eprintln!("error: cross-check failed for payload `{}`, arm `{arm}`: {what}", case.name);
    std::process::exit(1);
}

/// Builds every arm for `case` and checks each against the interpreter before timing.
fn prepare(case: Case) -> Prepared {
    let opts = EngineOptions::default();
    let jit = case.schema.decoder_with_options(&case.message, &opts.with_kind(EngineKind::Jit)).expect("jit decoder");
    let interp = case
        .schema
        .decoder_with_options(&case.message, &opts.with_kind(EngineKind::Interpreter))
        .expect("interp decoder");
    let stats = jit.stats();
    if stats.interpreted() > 0 {
        eprintln!(
            "note: {}: {} of {} message types run on the interpreter inside the jit arm",
            case.name,
            stats.interpreted(),
            stats.types.len()
        );
    }

    let arena = Arena::new();
    let tree = interp.decode(&case.bytes, &arena).unwrap_or_else(|e| fail(&case, "interp", e.to_string()));
    let want = tree_checksum(&tree);
    let want_messages = tree_message_count(&tree);

    let check = |arm: &str, got: u64| {
        if got != want {
            fail(&case, arm, format!("checksum {got:#018x}, interp says {want:#018x}"));
        }
    };
    {
        let arena = Arena::new();
        let t = jit.decode(&case.bytes, &arena).unwrap_or_else(|e| fail(&case, "jit", e.to_string()));
        check("jit", tree_checksum(&t));
        check("jit_visit", tree_checksum_visit(&t));
        check("interp_visit", tree_checksum_visit(&tree));
    }
    // The streaming arms read the wire, so they sum what it holds: equal to the tree's
    // checksum on canonical encodings (each singular field once).
    let streams = match stream_checksum(&jit, &case.bytes) {
        Ok(got) if got == want => {
            check("interp_stream", stream_checksum(&interp, &case.bytes).unwrap_or(!want));
            true
        }
        Ok(_) => {
            eprintln!("note: {}: the wire holds a field twice (the stream sums both); stream arms skipped", case.name);
            false
        }
        Err(e) => fail(&case, "jit_stream", e.to_string()),
    };

    let mut prost = prost_arm(&case.message);
    match prost.as_mut() {
        Some(arm) => {
            let got = arm.decode_checksum(&case.bytes).unwrap_or_else(|e| fail(&case, "prost", e));
            check("prost", got);
            check("prost_reuse", arm.reuse_checksum(&case.bytes));
            check("prost_reuse (second decode)", arm.reuse_checksum(&case.bytes));
        }
        None => eprintln!("note: {}: no generated prost code for {}; prost arms skipped", case.name, case.message),
    }

    let reflect = case.schema.pool().get_message_by_name(&case.message).expect("message type");
    let dm = DynamicMessage::decode(reflect.clone(), case.bytes.as_slice())
        .unwrap_or_else(|e| fail(&case, "prost_reflect", e.to_string()));
    check("prost_reflect", reflect_checksum(&dm));

    let protobuf = match RustProtobuf::new(case.schema.pool(), &case.message) {
        Err(e) => {
            eprintln!("note: {}: rust-protobuf cannot load the schema ({e}); protobuf arm skipped", case.name);
            None
        }
        Ok(rp) => match rp.decode(&case.bytes) {
            Err(e) => {
                eprintln!("note: {}: rust-protobuf cannot parse the payload ({e}); protobuf arm skipped", case.name);
                None
            }
            Ok(m) => {
                check("protobuf", rp_checksum(&*m));
                Some(rp)
            }
        },
    };

    let scanner = Scanner::new(&reflect);
    match scanner.scan(&case.bytes) {
        Ok(n) if n == want_messages => {}
        Ok(n) => fail(&case, "scan", format!("walked {n} nested messages, the interp tree has {want_messages}")),
        Err(_) => fail(&case, "scan", "not valid wire format".into()),
    }
    Prepared { case, jit, interp, prost, reflect, protobuf, scanner, streams }
}

fn millis(var: &str, default: u64) -> Duration {
    Duration::from_millis(std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default))
}

fn bench(c: &mut Criterion) {
    let cases = all_cases();
    let prepared: Vec<Prepared> = cases.into_iter().map(prepare).collect();
    eprintln!("cross-checks passed on {} payloads", prepared.len());
    let warm = millis("PROTOJIT_BENCH_WARMUP_MS", 300);
    let measure = millis("PROTOJIT_BENCH_MEASURE_MS", 1000);

    for mut p in prepared {
        let bytes = p.case.bytes.clone();
        let bytes = bytes.as_slice();
        let name = p.case.name.clone();

        // Decode and read every present field.
        let mut g = c.benchmark_group(format!("read/{name}"));
        g.warm_up_time(warm)
            .measurement_time(measure)
            .sample_size(10)
            .throughput(Throughput::Bytes(bytes.len() as u64));
        for (arm, decoder) in [("jit", &p.jit), ("interp", &p.interp)] {
            let mut arena = Arena::new();
            g.bench_function(arm, |b| {
                b.iter(|| {
                    arena.reset();
                    let m = decoder.decode(bytes, &arena).unwrap();
                    std::hint::black_box(tree_checksum(&m))
                })
            });
            g.bench_function(format!("{arm}_visit"), |b| {
                b.iter(|| {
                    arena.reset();
                    let m = decoder.decode(bytes, &arena).unwrap();
                    std::hint::black_box(tree_checksum_visit(&m))
                })
            });
            g.bench_function(format!("{arm}_fresh"), |b| {
                b.iter(|| {
                    let arena = Arena::new();
                    let m = decoder.decode(bytes, &arena).unwrap();
                    std::hint::black_box(tree_checksum(&m))
                })
            });
            if p.streams {
                g.bench_function(format!("{arm}_stream"), |b| {
                    b.iter(|| std::hint::black_box(stream_checksum(decoder, bytes).unwrap()))
                });
            }
        }
        if let Some(arm) = p.prost.as_mut() {
            g.bench_function("prost", |b| b.iter(|| std::hint::black_box(arm.decode_checksum(bytes).unwrap())));
            g.bench_function("prost_reuse", |b| b.iter(|| std::hint::black_box(arm.reuse_checksum(bytes))));
        }
        g.bench_function("prost_reflect", |b| {
            b.iter(|| {
                std::hint::black_box(reflect_checksum(&DynamicMessage::decode(p.reflect.clone(), bytes).unwrap()))
            })
        });
        if let Some(rp) = &p.protobuf {
            g.bench_function("protobuf", |b| b.iter(|| std::hint::black_box(rp_checksum(&*rp.decode(bytes).unwrap()))));
        }
        g.finish();

        // Decode alone.
        let mut g = c.benchmark_group(format!("decode/{name}"));
        g.warm_up_time(warm)
            .measurement_time(measure)
            .sample_size(10)
            .throughput(Throughput::Bytes(bytes.len() as u64));
        for (arm, decoder) in [("jit", &p.jit), ("interp", &p.interp)] {
            let mut arena = Arena::new();
            g.bench_function(arm, |b| {
                b.iter(|| {
                    arena.reset();
                    let m = decoder.decode(bytes, &arena).unwrap();
                    std::hint::black_box(m.block().as_ptr());
                })
            });
            g.bench_function(format!("{arm}_fresh"), |b| {
                b.iter(|| {
                    let arena = Arena::new();
                    let m = decoder.decode(bytes, &arena).unwrap();
                    std::hint::black_box(m.block().as_ptr());
                })
            });
        }
        if let Some(arm) = p.prost.as_mut() {
            g.bench_function("prost", |b| b.iter(|| arm.decode_only(bytes)));
            g.bench_function("prost_reuse", |b| b.iter(|| arm.reuse_only(bytes)));
        }
        g.bench_function("prost_reflect", |b| {
            b.iter(|| std::hint::black_box(DynamicMessage::decode(p.reflect.clone(), bytes).unwrap()))
        });
        if let Some(rp) = &p.protobuf {
            g.bench_function("protobuf", |b| b.iter(|| std::hint::black_box(rp.decode(bytes).unwrap())));
        }
        g.bench_function("scan", |b| b.iter(|| std::hint::black_box(p.scanner.scan(bytes).unwrap())));
        g.finish();
    }
}

fn config() -> Criterion {
    Criterion::default().nresamples(5_000)
}

criterion_group! { name = benches; config = config(); targets = bench }
criterion_main!(benches);
