//! Converts one record set N times (for callgrind or perf): `cargo run --release --example
//! convert_profile -- gm1|telemetry|osm_ways|mvt_features|osm_block|mvt_tile N [protojit|chunked|compiled|direct|tree|project2|project2_chunked|project2_compiled|project2_direct|project2_tree|ptars|decode|scan|encode]`.
//! `protojit` and `project2` take the default (auto) path: the compiled column appenders
//! raced against the chunked path; `chunked`, `compiled`, `direct` and `tree` (and their
//! `project2_` forms) the same conversions through the chunked path alone, the compiled
//! column appenders alone, the streaming decoder's direct appends and a tree read row by
//! row. `opt:KEY=VALUE[,KEY=VALUE]` is the `compiled` arm with mapping options set by
//! `ArrowOptions::set` (`opt:oneof_case=true`, `opt:enums=string`): what an option costs.
//! `encode` converts once, then turns the batch back into messages N times (`Encoder`).

use protojit::{Arena, EngineKind};
use protojit_arrow::arrow_array::Array;
use protojit_arrow::{ArrowOptions, ConvertPath, Converter, EnumColumns};
use protojit_bench_support::records;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let set = match args.get(1).map(String::as_str).unwrap_or("gm1") {
        "telemetry" => records::telemetry(10_000),
        "osm_ways" => records::osm_ways().expect("shared corpus"),
        "mvt_features" => records::mvt_features().expect("shared corpus"),
        // Whole public payloads: the OSM ways block ×3 and the Chicago tile ×10.
        "osm_block" => records::osm_block(3).expect("shared corpus"),
        "mvt_tile" => records::mvt_tile(10).expect("shared corpus"),
        _ => records::gm1(10_000).expect("shared corpus"),
    };
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let arm = args.get(3).map(String::as_str).unwrap_or("protojit");
    let options = ArrowOptions {
        enums: EnumColumns::Number,
        // PJ_INTERP=1: the interpreter decodes (the chunked and tree arms), as a one-shot
        // CLI conversion starts.
        decode: ArrowOptions::default().decode.with_kind(match std::env::var_os("PJ_INTERP") {
            Some(_) => EngineKind::Interpreter,
            None => EngineKind::Jit,
        }),
        ..ArrowOptions::default()
    };
    let mut options = options;
    if let Some(list) = arm.strip_prefix("opt:") {
        for pair in list.split(',') {
            let (key, value) = pair.split_once('=').expect("opt:KEY=VALUE");
            options.set(key, value).unwrap();
        }
    }
    let options = match arm {
        // google_message1: 2 of its 40 top-level fields.
        "project2" | "project2_chunked" | "project2_compiled" | "project2_direct" | "project2_tree" => {
            ArrowOptions { select: Some(vec!["field1".into(), "field2".into()]), ..options }
        }
        _ => options,
    };
    let path = match arm {
        "compiled" | "project2_compiled" => ConvertPath::DirectCompiled,
        a if a.starts_with("opt:") => ConvertPath::DirectCompiled,
        "direct" | "project2_direct" => ConvertPath::DirectInterpreted,
        "tree" | "project2_tree" => ConvertPath::Tree,
        "chunked" | "project2_chunked" => ConvertPath::Chunked,
        _ => ConvertPath::Auto,
    };
    let converter = Converter::new(&set.schema, set.message, &ArrowOptions { path, ..options.clone() }).unwrap();
    // No silent fallback: the arms measure the path they name.
    assert_eq!(converter.path(), path, "{arm}: {:?}", converter.path_note());
    // The appenders compile in the background: set-up, as the decoder's compile is.
    assert_eq!(converter.wait_for_appender(), matches!(path, ConvertPath::DirectCompiled | ConvertPath::Auto));
    if std::env::var_os("PJ_COMPILE_STATS").is_some() {
        // The compiled appender's size and compile time beside the decoder's (the JIT's
        // eager compile of every type the root reaches).
        let decoder: (u32, f64) = converter
            .decoder()
            .stats()
            .types
            .iter()
            .fold((0, 0.0), |(b, t), s| (b + s.code_bytes, t + s.compile_time.as_secs_f64()));
        eprintln!(
            "{}: appender {:?}; decoder {} code bytes, {:.2} ms",
            set.message,
            converter.appender_stats().map(|(b, t)| format!("{b} code bytes, {:.2} ms", t.as_secs_f64() * 1e3)),
            decoder.0,
            decoder.1 * 1e3
        );
    }
    let array59 = protojit_arrow::arrow_array::BinaryArray::from_iter_values(set.records.iter());
    let array60 = arrow_array_60::BinaryArray::from_iter_values(set.records.iter());
    let desc = set.schema.pool().get_message_by_name(set.message).unwrap();
    let config = ptars_core::PtarsConfig::default();
    // The way back: the batch converted once (set-up), then encoded `n` times.
    let encode = (arm == "encode").then(|| {
        let encoder = protojit_arrow::Encoder::new(&set.schema, set.message, &options).unwrap();
        (encoder, converter.convert_binary(&array59).unwrap())
    });
    let mut rows = 0;
    for _ in 0..n {
        rows += match arm {
            "encode" => {
                let (encoder, batch) = encode.as_ref().unwrap();
                encoder.encode(batch).unwrap().len()
            }
            "ptars" => ptars_core::binary_array_to_record_batch_direct(&array60, &desc, &config).unwrap().num_rows(),
            // The wire-walk floor: every tag read, every value skipped, nothing stored.
            "scan" => {
                let scanner = protojit_bench_support::Scanner::new(&desc);
                set.records.iter().map(|r| scanner.scan(r).is_ok() as usize).sum()
            }
            "decode" => {
                let mut arena = Arena::new();
                let mut k = 0;
                for r in &set.records {
                    arena.reset();
                    k += converter.decoder().decode(r, &arena).is_ok() as usize;
                }
                k
            }
            _ => converter.convert_binary(&array59).unwrap().num_rows(),
        };
    }
    if std::env::var_os("PJ_SHOW_PATH").is_some() {
        // Which path converted (the auto path's race verdict), and the rows of each.
        eprintln!("{arm}: {:?}, {:?}; {:?}", converter.path(), converter.path_note(), converter.compiled_records());
    }
    // Read by rounds.sh (per-core records/s and MB/s): rows and payload bytes of one conversion.
    println!("{rows} rows {} bytes", set.bytes() * n);
}
