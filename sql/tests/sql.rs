//! SQL over protobuf records: an aggregate through DataFusion, at several partitionings and
//! string layouts, equals the same aggregate over decoded trees; options a table cannot
//! honour are errors.

// The facade's test support (random messages), shared rather than copied.
#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use prost::Message as _;
use protojit::{Arena, Schema};
use protojit_arrow::{ArrowOptions, StringColumns};
use protojit_sql::datafusion::arrow::array::cast::AsArray;
use protojit_sql::datafusion::arrow::compute::cast;
use protojit_sql::datafusion::arrow::datatypes::{DataType, Int64Type};
use protojit_sql::datafusion::prelude::SessionContext;
use protojit_sql::{ProtobufTable, SqlError, TableOptions};

/// The shipped sample schema (`corpus/samples/telemetry.proto`).
fn telemetry() -> Schema {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/samples");
    Schema::from_proto_files(&[samples.join("telemetry.proto")], &[&samples]).unwrap()
}

/// A SQL aggregate over a table of telemetry records, at 1 and 3 partitions, equals the
/// same aggregate computed from decoded trees.
#[test]
fn sql_aggregate_equals_the_trees() {
    let schema = telemetry();
    let batch_desc = schema.pool().get_message_by_name("protojit.samples.Batch").unwrap();
    let mut rng = common::Rng(0xa770_0005);
    let mut stream = Vec::new();
    let mut records = Vec::new();
    for _ in 0..500 {
        let m = common::random_message(&batch_desc, 2, &mut rng).encode_to_vec();
        protojit_arena::wire::write_varint(&mut stream, m.len() as u64);
        stream.extend_from_slice(&m);
        records.push(m);
    }
    // The expected aggregate, from trees: per status, records, records on battery, records
    // on mains, and the greatest device name.
    let decoder = schema.decoder("protojit.samples.Batch").unwrap();
    let mut expected = std::collections::BTreeMap::<String, (i64, i64, i64, String)>::new();
    for r in &records {
        let arena = Arena::new();
        let m = decoder.decode(r, &arena).unwrap();
        let protojit::Value::Enum(status) = m.get("status").unwrap() else { panic!("status is an enum") };
        let status = status.name().map(str::to_owned).unwrap_or_else(|| status.number.to_string());
        let device = m.get("device").unwrap().as_str().unwrap().to_owned();
        let e = expected.entry(status).or_default();
        e.0 += 1;
        e.1 += m.has("battery_volts") as i64;
        e.2 += m.has("mains") as i64;
        if device > e.3 {
            e.3 = device;
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    for (partitions, strings) in [(1, StringColumns::Offsets), (3, StringColumns::Offsets), (3, StringColumns::Views)] {
        let arrow = ArrowOptions { strings, ..ArrowOptions::default() };
        let options = TableOptions { partitions, batch_size: 64, arrow };
        let table = ProtobufTable::from_bytes(&schema, "Batch", stream.clone(), &options).unwrap();
        assert_eq!(table.len(), 500);
        let stats = protojit_sql::datafusion::catalog::TableProvider::statistics(&table).unwrap();
        assert_eq!(stats.num_rows, protojit_sql::datafusion::common::stats::Precision::Exact(500));
        let batches = rt
            .block_on(async {
                let ctx = SessionContext::new();
                ctx.register_table("b", Arc::new(table))?;
                ctx.sql(
                    "SELECT CAST(status AS VARCHAR) AS status, COUNT(*) AS n, COUNT(battery_volts) AS battery, \
                     COUNT(mains) AS mains, MAX(device) AS device FROM b GROUP BY 1 ORDER BY 1",
                )
                .await?
                .collect()
                .await
            })
            .unwrap_or_else(|e| panic!("{partitions} partitions, {strings:?}: {e}"));
        let mut got = std::collections::BTreeMap::new();
        for b in &batches {
            let status = cast(b.column(0), &DataType::Utf8).unwrap();
            let status = status.as_string::<i32>();
            let n = b.column(1).as_primitive::<Int64Type>();
            let battery = b.column(2).as_primitive::<Int64Type>();
            let mains = b.column(3).as_primitive::<Int64Type>();
            let device = cast(b.column(4), &DataType::Utf8).unwrap();
            let device = device.as_string::<i32>();
            for i in 0..b.num_rows() {
                got.insert(
                    status.value(i).to_owned(),
                    (n.value(i), battery.value(i), mains.value(i), device.value(i).to_owned()),
                );
            }
        }
        assert_eq!(got, expected, "{partitions} partitions, {strings:?}");
    }
}

/// A table chooses its columns per scan: a `select` in its options is an error, not ignored.
#[test]
fn a_selection_in_the_options_is_an_error() {
    let arrow = ArrowOptions { select: Some(vec!["device".into()]), ..ArrowOptions::default() };
    let options = TableOptions { arrow, ..TableOptions::default() };
    let e = ProtobufTable::from_bytes(&telemetry(), "Batch", Vec::new(), &options).unwrap_err();
    assert!(matches!(e, SqlError::Select), "{e:?}");
    assert_eq!(
        e.to_string(),
        "TableOptions::arrow.select must be None: each scan converts the columns its query reads"
    );
    let table = ProtobufTable::from_bytes(&telemetry(), "Batch", Vec::new(), &TableOptions::default()).unwrap();
    assert!(table.is_empty());
}

/// A record in memory that does not decode fails the query with its number and offset, as
/// a file's does (the table is scanned through the same file source).
#[test]
fn a_bad_record_in_memory_names_its_number_and_offset() {
    let schema = Schema::from_proto_source("t.proto", "syntax = \"proto3\"; message T { int64 a = 1; }").unwrap();
    // (a=1), (a=2), then a varint cut inside the third record.
    let data = b"\x02\x08\x01\x02\x08\x02\x02\x08\x80".to_vec();
    let options = TableOptions { partitions: 2, ..TableOptions::default() };
    let table = ProtobufTable::from_bytes(&schema, "T", data, &options).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let e = rt
        .block_on(async {
            let ctx = SessionContext::new();
            ctx.register_table("t", Arc::new(table))?;
            ctx.sql("SELECT SUM(a) FROM t").await?.collect().await
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("<memory>: record 3 at byte 7: "), "{e}");
}
