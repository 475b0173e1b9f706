//! Start-up cost: what a JIT pays at run time that a code generator pays at build time.
//!
//! Per schema (the growth schemas of 1, 5, 20 and 200 message types, the 10-deep chain,
//! descriptor.proto from the shared corpus's `descriptor.fds.bin`, and the benchmark
//! schemas), group `compile/<schema>`:
//! - `load`: `.proto` text compiled by protox into a descriptor pool (for
//!   `descriptor.fds.bin`: the pool decoded from the serialized descriptor set);
//! - `layout`: `Schema::from_pool` (message layouts);
//! - `jit`: `Schema::decoder_with_options` with `EngineKind::Jit` on a fresh schema: Cranelift
//!   lowering and compilation of every type reachable from the root;
//! - `interp_setup`: `Schema::decoder_with_options` with `EngineKind::Interpreter`: the
//!   interpreter's only set-up beyond the layouts.
//!
//! Before timing, each schema's machine-code bytes and compile time per message type (from
//! `Decoder::stats`) are printed and written to `target/criterion/protojit-compile-stats.tsv`
//! (`python3 benches/report.py` puts them in BENCHMARKS.md).
//!
//! `cargo bench --bench compile`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use prost_reflect::DescriptorPool;
use protojit::{EngineKind, EngineOptions, Schema, TypeEngine};

/// How a schema is loaded.
enum Source {
    /// `.proto` files in a directory.
    Proto { dir: PathBuf, files: Vec<String> },
    /// A serialized `FileDescriptorSet`.
    DescriptorSet(PathBuf),
}

struct Target {
    name: String,
    source: Source,
    /// Root message types (each compiled on its own schema).
    roots: Vec<String>,
}

impl Source {
    fn load(&self) -> DescriptorPool {
        match self {
            Source::Proto { dir, files } => {
                let mut c = protox::Compiler::new([dir]).expect("include dir");
                c.include_imports(true);
                c.open_files(files).expect("schema compiles");
                c.descriptor_pool()
            }
            Source::DescriptorSet(path) => {
                DescriptorPool::decode(std::fs::read(path).expect("fds").as_slice()).expect("fds")
            }
        }
    }
}

fn targets() -> Vec<Target> {
    let corpus = protojit_corpus::schemas_dir();
    let proto = |name: &str, file: &str, roots: &[&str]| Target {
        name: name.into(),
        source: Source::Proto { dir: corpus.clone(), files: vec![file.into()] },
        roots: roots.iter().map(|r| r.to_string()).collect(),
    };
    let mut v: Vec<Target> = protojit_corpus::GROWTH_SIZES
        .iter()
        .map(|&n| Target {
            name: format!("growth_{n}"),
            source: Source::Proto { dir: corpus.clone(), files: vec![protojit_corpus::growth_file(n)] },
            roots: vec![format!("protojit.bench.growth{n}.Root")],
        })
        .collect();
    v.push(proto("chain10", "chain10.proto", &["protojit.bench.chain.L0"]));
    let shared = protojit_bench_support::shared_corpus();
    if shared.join("descriptor.fds.bin").exists() {
        v.push(Target {
            name: "descriptor".into(),
            source: Source::DescriptorSet(shared.join("descriptor.fds.bin")),
            roots: vec!["google.protobuf.FileDescriptorSet".into()],
        });
    } else {
        eprintln!("note: shared corpus not found at {}; its schemas are skipped", shared.display());
    }
    v.push(proto("dataset", "dataset.proto", &["protojit.bench.dataset.Dataset"]));
    v.push(proto(
        "embedded",
        "embedded.proto",
        &[
            "protojit.bench.embedded.Telemetry",
            "protojit.bench.embedded.TelemetryBatch",
            "protojit.bench.embedded.DeviceConfig",
            "protojit.bench.embedded.Command",
            "protojit.bench.embedded.Ack",
            "protojit.bench.embedded.FirmwareChunk",
        ],
    ));
    v.push(proto(
        "sweeps",
        "sweeps.proto",
        &[
            "protojit.bench.sweeps.Varints",
            "protojit.bench.sweeps.Zigzags",
            "protojit.bench.sweeps.Levels",
            "protojit.bench.sweeps.ManyTiny",
            "protojit.bench.sweeps.FewBig",
        ],
    ));
    if shared.join("README.md").exists() {
        let sh = |name: &str, file: &str, roots: &[&str]| Target {
            name: name.into(),
            source: Source::Proto { dir: shared.clone(), files: vec![file.into()] },
            roots: roots.iter().map(|r| r.to_string()).collect(),
        };
        v.push(sh("gm1_proto2", "benchmark_message1_proto2.proto", &["benchmarks.proto2.GoogleMessage1"]));
        v.push(sh("gm1_proto3", "benchmark_message1_proto3.proto", &["benchmarks.proto3.GoogleMessage1"]));
        v.push(sh("gm2", "benchmark_message2.proto", &["benchmarks.proto2.GoogleMessage2"]));
        v.push(sh("osmformat", "osmformat.proto", &["OSMPBF.HeaderBlock", "OSMPBF.PrimitiveBlock"]));
        v.push(sh("fileformat", "fileformat.proto", &["OSMPBF.BlobHeader", "OSMPBF.Blob"]));
        v.push(sh("vector_tile", "vector_tile.proto", &["vector_tile.Tile"]));
    }
    v
}

fn stats_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("criterion/protojit-compile-stats.tsv")
}

/// Prints and records code bytes and compile time per message type.
fn record_stats(targets: &[Target]) {
    let path = stats_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::fs::File::create(&path).expect("stats file");
    writeln!(out, "schema\troot\ttypes\tjit_types\tcode_bytes\tmin_type_bytes\tmax_type_bytes\tcompile_us").unwrap();
    println!(
        "{:<12} {:<40} {:>6} {:>6} {:>10} {:>9} {:>9} {:>11} {:>11}",
        "schema", "root", "types", "jit", "code B", "B/type", "max B", "compile ms", "us/type"
    );
    for t in targets {
        let pool = t.source.load();
        for root in &t.roots {
            let schema = Schema::from_pool(&pool).expect("layouts");
            let d = schema
                .decoder_with_options(root, &EngineOptions::default().with_kind(EngineKind::Jit))
                .expect("decoder");
            let st = d.stats();
            let jit: Vec<_> = st.types.iter().filter(|t| t.engine == TypeEngine::Jit).collect();
            for ty in st.types.iter().filter(|t| t.engine != TypeEngine::Jit) {
                eprintln!("note: {}: {} runs on the interpreter: {:?}", t.name, ty.message_type, ty.engine);
            }
            let bytes: u64 = jit.iter().map(|t| t.code_bytes as u64).sum();
            let min = jit.iter().map(|t| t.code_bytes).min().unwrap_or(0);
            let max = jit.iter().map(|t| t.code_bytes).max().unwrap_or(0);
            let time: Duration = st.types.iter().map(|t| t.compile_time).sum();
            writeln!(
                out,
                "{}\t{root}\t{}\t{}\t{bytes}\t{min}\t{max}\t{}",
                t.name,
                st.types.len(),
                jit.len(),
                time.as_micros()
            )
            .unwrap();
            println!(
                "{:<12} {:<40} {:>6} {:>6} {:>10} {:>9} {:>9} {:>11.2} {:>11.1}",
                t.name,
                root,
                st.types.len(),
                jit.len(),
                bytes,
                bytes / jit.len().max(1) as u64,
                max,
                time.as_secs_f64() * 1e3,
                time.as_secs_f64() * 1e6 / st.types.len().max(1) as f64
            );
        }
    }
    println!("(written to {})", path.display());
    record_per_type(targets);
}

/// Per message type, compiled alone as tiering compiles it (`Tiers::compile_now`: one
/// function lowered, compiled and finalized into the schema's module): compile time and
/// machine-code bytes, median and p90 per schema and over all of them.
fn record_per_type(targets: &[Target]) {
    use protojit::{CompileOptions, Engines};
    let path = stats_path().with_file_name("protojit-compile-types.tsv");
    let mut out = std::fs::File::create(&path).expect("stats file");
    writeln!(out, "schema	type	compile_us	code_bytes").unwrap();
    let (mut all_us, mut all_bytes) = (Vec::new(), Vec::new());
    println!("{:<12} {:>6} {:>12} {:>12} {:>10} {:>10}", "schema", "types", "median us", "p90 us", "median B", "p90 B");
    let summary = |name: &str, us: &mut Vec<f64>, bytes: &mut Vec<u32>| {
        us.sort_by(f64::total_cmp);
        bytes.sort();
        let q = |n: usize, f: f64| ((n as f64 * f).ceil() as usize).clamp(1, n.max(1)) - 1;
        if us.is_empty() {
            return;
        }
        println!(
            "{:<12} {:>6} {:>12.0} {:>12.0} {:>10} {:>10}",
            name,
            us.len(),
            us[q(us.len(), 0.5)],
            us[q(us.len(), 0.9)],
            bytes[q(bytes.len(), 0.5)],
            bytes[q(bytes.len(), 0.9)]
        );
    };
    for t in targets {
        let pool = t.source.load();
        let schema = Schema::from_pool(&pool).expect("layouts");
        let engines = Engines::new(schema.layouts().clone(), CompileOptions::default());
        let tiers = engines.tiers();
        let mut seen = vec![false; schema.layouts().len()];
        let (mut us, mut bytes) = (Vec::new(), Vec::new());
        for root in &t.roots {
            let li = schema.layouts().index_of(&schema.resolve_type(root).unwrap()).unwrap();
            for ty in schema.layouts().reachable(li) {
                if std::mem::replace(&mut seen[ty.index()], true) {
                    continue;
                }
                tiers.compile_now(ty);
            }
        }
        for (i, _) in seen.iter().enumerate().filter(|(_, s)| **s) {
            let st = tiers.type_stats(protojit_arena::LayoutIndex::new(i as u32));
            if st.engine != TypeEngine::Jit {
                continue;
            }
            let micros = st.compile_time.as_secs_f64() * 1e6;
            writeln!(out, "{}\t{}\t{micros:.0}\t{}", t.name, st.message_type, st.code_bytes).unwrap();
            us.push(micros);
            bytes.push(st.code_bytes);
        }
        // The growth schemas and the chain are synthetic: the corpus summary leaves them out.
        if !t.name.starts_with("growth") && t.name != "chain10" {
            all_us.extend(&us);
            all_bytes.extend(&bytes);
        }
        summary(&t.name, &mut us, &mut bytes);
    }
    summary("corpus", &mut all_us, &mut all_bytes);
    println!("(written to {})", path.display());
}

fn bench(c: &mut Criterion) {
    let targets = targets();
    record_stats(&targets);
    for t in &targets {
        let mut g = c.benchmark_group(format!("compile/{}", t.name));
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(1000));
        g.bench_function("load", |b| b.iter(|| std::hint::black_box(t.source.load())));
        let pool = t.source.load();
        g.bench_function("layout", |b| b.iter(|| std::hint::black_box(Schema::from_pool(&pool).unwrap())));
        g.bench_function("jit", |b| {
            b.iter_batched(
                || Schema::from_pool(&pool).unwrap(),
                |schema| {
                    for root in &t.roots {
                        std::hint::black_box(
                            schema
                                .decoder_with_options(root, &EngineOptions::default().with_kind(EngineKind::Jit))
                                .unwrap(),
                        );
                    }
                    schema
                },
                BatchSize::PerIteration,
            )
        });
        let schema = Schema::from_pool(&pool).unwrap();
        g.bench_function("interp_setup", |b| {
            b.iter(|| {
                for root in &t.roots {
                    std::hint::black_box(
                        schema
                            .decoder_with_options(root, &EngineOptions::default().with_kind(EngineKind::Interpreter))
                            .unwrap(),
                    );
                }
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
