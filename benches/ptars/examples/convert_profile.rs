//! Converts one record set N times (for callgrind or perf): `cargo run --release --example
//! convert_profile -- gm1|telemetry|osm_ways|mvt_features N [protojit|tree|project2|project2_tree|ptars|decode]`.
//! `protojit` and `project2` take the default (direct) path; `tree` and `project2_tree` the
//! same conversions through a decoded tree (`ArrowOptions::direct` off).

use protojit::{Arena, EngineKind};
use protojit_arrow::{ArrowOptions, Converter, EnumColumns};
use protojit_bench_support::records;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let set = match args.get(1).map(String::as_str).unwrap_or("gm1") {
        "telemetry" => records::telemetry(10_000),
        "osm_ways" => records::osm_ways().expect("shared corpus"),
        "mvt_features" => records::mvt_features().expect("shared corpus"),
        _ => records::gm1(10_000).expect("shared corpus"),
    };
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let arm = args.get(3).map(String::as_str).unwrap_or("protojit");
    let options = ArrowOptions {
        enums: EnumColumns::Number,
        decode: ArrowOptions::default().decode.with_kind(EngineKind::Jit),
        ..ArrowOptions::default()
    };
    let options = match arm {
        // google_message1: 2 of its 40 top-level fields.
        "project2" | "project2_tree" => {
            ArrowOptions { select: Some(vec!["field1".into(), "field2".into()]), ..options }
        }
        _ => options,
    };
    let options = ArrowOptions { direct: !arm.ends_with("tree"), ..options };
    let converter = Converter::new(&set.schema, set.message, &options).unwrap();
    // No silent fallback: the arms measure the path they name.
    let direct = matches!(converter.path(), protojit_arrow::ConvertPath::DirectInterpreted);
    assert_eq!(direct, !arm.ends_with("tree"), "{arm}: {}", converter.path());
    let array59 = protojit_arrow::arrow_array::BinaryArray::from_iter_values(set.records.iter());
    let array60 = arrow_array_60::BinaryArray::from_iter_values(set.records.iter());
    let desc = set.schema.pool().get_message_by_name(set.message).unwrap();
    let config = ptars_core::PtarsConfig::default();
    let mut rows = 0;
    for _ in 0..n {
        rows += match arm {
            "ptars" => ptars_core::binary_array_to_record_batch_direct(&array60, &desc, &config).unwrap().num_rows(),
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
    println!("{rows} rows");
}
