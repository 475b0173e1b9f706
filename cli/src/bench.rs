//! `protojit bench`: a few seconds of decoding with each engine and prost-reflect, as MB/s
//! (min / median / max over samples) and ratios to prost-reflect.

use std::fmt::Write as _;
use std::hint::black_box;
use std::ops::Range;
use std::time::{Duration, Instant};

use protojit::{Arena, Decoder, EngineKind, EngineOptions, TypeEngine};

use crate::args::BenchArgs;
use crate::common::{self, input_name, Failure, Out};
use crate::stream::RecordReader;

/// MB/s of one arm.
struct Measured {
    name: &'static str,
    samples: Vec<f64>,
    note: String,
}

impl Measured {
    fn median(&self) -> f64 {
        let s = &self.samples;
        if s.len() % 2 == 1 {
            s[s.len() / 2]
        } else {
            (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
        }
    }
}

pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    if !(args.time.is_finite() && args.time > 0.0) {
        return Err(Failure::usage(format!("--time {}: give a positive number of seconds", args.time)));
    }
    let schema = common::load_schema(&args.schema)?;
    let full = common::resolve(&schema, &args.type_name)?;
    let name = input_name(&args.input).to_owned();
    let bytes = common::read_input(&args.input, None)?;
    let records: Vec<Range<usize>> = if args.delimited {
        let mut reader = RecordReader::new(bytes.as_slice(), &name, &full);
        let mut sink = Vec::new();
        let mut ranges = Vec::new();
        while let Some(info) = reader.next_into(&mut sink)? {
            let start = info.data_offset as usize;
            ranges.push(start..start + info.len);
            sink.clear();
        }
        ranges
    } else {
        std::iter::once(0..bytes.len()).collect()
    };
    let payload: usize = records.iter().map(|r| r.len()).sum();
    let options = EngineOptions::default()
        .with_max_depth(args.max_depth)
        .with_utf8(crate::args::utf8_check(args.utf8, args.no_utf8_check));
    let decoder =
        |kind| schema.decoder_with_options(&full, &options.with_kind(kind)).map_err(|e| Failure::usage(e.to_string()));
    let jit = decoder(EngineKind::Jit)?;
    let interp = decoder(EngineKind::Interpreter)?;
    // Every record must decode, or the numbers would measure error paths.
    {
        let mut arena = Arena::new();
        for (i, r) in records.iter().enumerate() {
            if let Err(e) = interp.decode(&bytes[r.clone()], &arena) {
                let what = if args.delimited { format!("{name}: record {}", i + 1) } else { name.clone() };
                return Err(Failure::input(format!("{what}: cannot decode as {full}: {e}")));
            }
            arena.reset();
        }
    }
    let budget = Duration::from_secs_f64(args.time / 3.0);
    let mut arms = Vec::new();
    for (label, dec) in [("protojit jit", &jit), ("protojit interpreter", &interp)] {
        arms.push(Measured {
            name: label,
            samples: measure(budget, payload, || pass_protojit(dec, &bytes, &records)),
            note: String::new(),
        });
    }
    let desc = schema.pool().get_message_by_name(&full).expect("resolved names exist");
    let reference = records
        .iter()
        .try_for_each(|r| prost_reflect::DynamicMessage::decode(desc.clone(), &bytes[r.clone()]).map(drop));
    match reference {
        Ok(()) => arms.push(Measured {
            name: "prost-reflect",
            samples: measure(budget, payload, || {
                for r in &records {
                    black_box(prost_reflect::DynamicMessage::decode(desc.clone(), &bytes[r.clone()]).ok());
                }
            }),
            note: String::new(),
        }),
        Err(e) => {
            arms.push(Measured { name: "prost-reflect", samples: Vec::new(), note: format!("rejects the input: {e}") })
        }
    }

    let stats = jit.stats();
    let compiled = stats.types.iter().filter(|t| t.engine == TypeEngine::Jit).count();
    let compile: Duration = stats.types.iter().map(|t| t.compile_time).sum();
    let mut text = String::new();
    writeln!(
        text,
        "protojit bench: {full}, {} record{}, {payload} bytes, {:.1} s",
        records.len(),
        if records.len() == 1 { "" } else { "s" },
        args.time
    )
    .unwrap();
    let reference = arms.iter().find(|a| a.name == "prost-reflect" && !a.samples.is_empty()).map(Measured::median);
    let mut rows = vec![["arm", "MB/s min", "median", "max", "vs prost-reflect", "samples"].map(String::from).to_vec()];
    for arm in &arms {
        if arm.samples.is_empty() {
            rows.push(vec![arm.name.to_owned(), arm.note.clone()]);
            continue;
        }
        let ratio = reference.map_or("-".to_owned(), |r| format!("{:.2}x", arm.median() / r));
        rows.push(vec![
            arm.name.to_owned(),
            format!("{:.1}", arm.samples[0]),
            format!("{:.1}", arm.median()),
            format!("{:.1}", arm.samples[arm.samples.len() - 1]),
            ratio,
            arm.samples.len().to_string(),
        ]);
    }
    table(&rows, &mut text);
    writeln!(
        text,
        "compiled {compiled} of {} message types: {} bytes of machine code in {:.2} ms{}",
        stats.types.len(),
        stats.code_bytes(),
        compile.as_secs_f64() * 1e3,
        if compiled < stats.types.len() { " (the rest run on the interpreter: see `protojit schema jit`)" } else { "" }
    )
    .unwrap();
    let mut out = Out::new();
    out.write(text.as_bytes())?;
    out.flush()
}

fn pass_protojit(decoder: &Decoder, bytes: &[u8], records: &[Range<usize>]) {
    thread_local! {
        static ARENA: std::cell::RefCell<Arena> = std::cell::RefCell::new(Arena::new());
    }
    ARENA.with(|a| {
        let mut arena = a.borrow_mut();
        for r in records {
            black_box(decoder.decode(&bytes[r.clone()], &arena).is_ok());
            arena.reset();
        }
    });
}

/// Runs `pass` for about `budget` in samples of several passes; MB/s per sample, sorted.
fn measure(budget: Duration, payload: usize, mut pass: impl FnMut()) -> Vec<f64> {
    // Warm up (caches, arena growth) and calibrate.
    pass();
    let t = Instant::now();
    pass();
    let one = t.elapsed().max(Duration::from_nanos(1));
    let sample_target = (budget / 20).max(Duration::from_micros(500));
    let per_sample = (sample_target.as_secs_f64() / one.as_secs_f64()).ceil().clamp(1.0, 1e9) as u64;
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 3 || start.elapsed() < budget {
        let t = Instant::now();
        for _ in 0..per_sample {
            pass();
        }
        let secs = t.elapsed().as_secs_f64().max(1e-9);
        samples.push(payload as f64 * per_sample as f64 / secs / 1e6);
    }
    samples.sort_by(f64::total_cmp);
    samples
}

fn table(rows: &[Vec<String>], out: &mut String) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(String::len).max().unwrap_or(0)).collect();
    for row in rows {
        let mut line = String::from("  ");
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                write!(line, "{cell:<w$}  ", w = widths[c]).unwrap();
            } else {
                write!(line, "{cell:>w$}  ", w = widths[c]).unwrap();
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}
