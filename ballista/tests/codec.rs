//! The codecs alone, in one process: a query's logical and physical plans over protobuf tables go through bytes and run in a fresh session (no tables, no schema file) with the original's results; what they cannot carry is refused.

use std::fs;
use std::path::Path;

use datafusion::arrow::array::RecordBatch;
use datafusion::physical_plan::collect;
use datafusion::prelude::SessionContext;
use datafusion_proto::bytes::{
    logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use protojit::{EngineKind, Schema};
use protojit_arrow::ArrowOptions;
use protojit_ballista::{register_protobuf_cluster_format, ProtojitLogicalCodec, ProtojitPhysicalCodec};
use protojit_sql::ProtobufFormatFactory;

mod common;
use common::{assert_same, write_records};

const QUERIES: &[&str] = &[
    "SELECT day, status, COUNT(*) AS n, SUM(battery_volts) AS volts FROM telemetry GROUP BY day, status ORDER BY day, status",
    "SELECT device, day, cardinality(samples) AS n FROM telemetry WHERE mains ORDER BY device, day, n LIMIT 20",
];

/// A directory with telemetry files under day=1/ and day=2/, and its schema file.
fn fixture(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("protojit-ballista-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/samples/telemetry.proto");
    fs::create_dir_all(dir.join("schema")).expect("schema directory");
    let proto = dir.join("schema/telemetry.proto");
    fs::copy(samples, &proto).expect("copy telemetry.proto");
    let schema = Schema::from_proto_files(&[&proto], &[dir.join("schema")]).expect("telemetry.proto compiles");
    for day in 1..=2 {
        let part = dir.join(format!("telemetry/day={day}"));
        fs::create_dir_all(&part).expect("partition directory");
        write_records(&schema, &part.join("a.bin"), 120, day);
        write_records(&schema, &part.join("b.bin"), 80, 10 + day);
    }
    (dir, proto)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn create(ctx: &SessionContext, dir: &Path, proto: &Path) {
    let sql = format!(
        "CREATE EXTERNAL TABLE telemetry STORED AS PROTOBUF LOCATION '{}/' \
         OPTIONS ('message_type' 'Batch', 'proto' '{}')",
        dir.join("telemetry").display(),
        proto.display()
    );
    ctx.sql(&sql).await.expect("CREATE EXTERNAL TABLE");
}

#[tokio::test]
async fn plans_round_trip_through_bytes() {
    let (dir, proto) = fixture("codec");
    let ctx = SessionContext::new();
    register_protobuf_cluster_format(&ctx, ProtobufFormatFactory::new()).expect("format");
    create(&ctx, &dir, &proto).await;

    let mut originals: Vec<(String, datafusion::logical_expr::LogicalPlan, _, Vec<RecordBatch>)> = Vec::new();
    for query in QUERIES {
        let df = ctx.sql(query).await.expect("plan");
        let logical = df.logical_plan().clone();
        let physical = df.clone().create_physical_plan().await.expect("physical plan");
        let results = df.collect().await.expect("local results");
        originals.push((query.to_string(), logical, physical, results));
    }
    // From here on no process could read the schema from a file: it is in the plans.
    fs::remove_dir_all(dir.join("schema")).expect("remove the schema");

    let fresh = SessionContext::new();
    let logical_codec = ProtojitLogicalCodec::new();
    let physical_codec = ProtojitPhysicalCodec::new();
    for (query, logical, physical, results) in originals {
        let bytes = logical_plan_to_bytes_with_extension_codec(&logical, &logical_codec).expect("logical plan encodes");
        assert!(contains(&bytes, b"protojit.table\0"), "{query}: the table is not protojit's codec's");
        let decoded = logical_plan_from_bytes_with_extension_codec(&bytes, &fresh.task_ctx(), &logical_codec)
            .expect("logical plan decodes");
        let again = fresh.execute_logical_plan(decoded).await.expect("plan").collect().await.expect("run");
        assert_same(&format!("{query} (logical plan through bytes)"), &again, &results);

        let bytes =
            physical_plan_to_bytes_with_extension_codec(physical, &physical_codec).expect("physical plan encodes");
        assert!(contains(&bytes, b"protojit.scan\0"), "{query}: the scan is not protojit's codec's");
        let decoded = physical_plan_from_bytes_with_extension_codec(&bytes, &fresh.task_ctx(), &physical_codec)
            .expect("physical plan decodes");
        let again = collect(decoded, fresh.task_ctx()).await.expect("run");
        assert_same(&format!("{query} (physical plan through bytes)"), &again, &results);
    }
    fs::remove_dir_all(&dir).expect("remove the temp directory");
}

#[tokio::test]
async fn decode_options_that_do_not_travel_are_refused() {
    let (dir, proto) = fixture("options");
    let ctx = SessionContext::new();
    let mut options = ArrowOptions::default();
    options.decode = options.decode.with_kind(EngineKind::Interpreter);
    register_protobuf_cluster_format(&ctx, ProtobufFormatFactory::new().with_arrow_options(options)).expect("format");
    create(&ctx, &dir, &proto).await;
    let df = ctx.sql(QUERIES[0]).await.expect("plan");
    let error = logical_plan_to_bytes_with_extension_codec(df.logical_plan(), &ProtojitLogicalCodec::new())
        .expect_err("the options cannot be carried");
    assert!(error.to_string().contains("decode options"), "{error}");
    let physical = df.create_physical_plan().await.expect("physical plan");
    let error = physical_plan_to_bytes_with_extension_codec(physical, &ProtojitPhysicalCodec::new())
        .expect_err("the options cannot be carried");
    assert!(error.to_string().contains("decode options"), "{error}");
    fs::remove_dir_all(&dir).expect("remove the temp directory");
}
