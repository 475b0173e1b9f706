//! A real Ballista cluster runs protojit's SQL tables: a scheduler and two executors, each its own `protojit-ballista` process on 127.0.0.1, answer an aggregate, a join of two protobuf tables and a filter + projection exactly as a local session does, as does `protojit-ballista sql --cluster` (the command behind `protojit sql --cluster`), and a malformed record fails the query naming its file.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv;
use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionContext;
use protojit::Schema;
use protojit_ballista::{connect, register_protobuf_cluster_format};
use protojit_sql::{register_protobuf_format, ProtobufFormatFactory};

mod common;
mod harness;
use common::{assert_same, write_records};
use harness::{run_bounded, start_cluster, TempDir};

/// How long a query may take before the test fails instead of hanging (guards against a
/// stuck cluster, not a performance check).
const QUERY_LIMIT: Duration = Duration::from_secs(300);

async fn run(ctx: &SessionContext, query: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    match tokio::time::timeout(QUERY_LIMIT, async { ctx.sql(query).await?.collect().await }).await {
        Ok(result) => result,
        Err(_) => panic!("{query}: no answer within {QUERY_LIMIT:?}"),
    }
}

fn csv_text(batches: &[RecordBatch]) -> String {
    let mut out = Vec::new();
    let mut w = csv::WriterBuilder::new().with_header(true).build(&mut out);
    for b in batches {
        w.write(b).expect("CSV");
    }
    drop(w);
    String::from_utf8(out).expect("UTF-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_tables_on_a_two_executor_cluster() {
    let temp = TempDir::new("cluster");
    let dir = temp.0.clone();

    // The schema lives in a directory that is removed once the tables exist: the scheduler
    // and the executors get it from the plans, as FileDescriptorSet bytes.
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/samples/telemetry.proto");
    let schema_dir = dir.join("schema");
    fs::create_dir_all(&schema_dir).expect("schema directory");
    let proto = schema_dir.join("telemetry.proto");
    fs::copy(&samples, &proto).expect("copy telemetry.proto");
    let schema = Schema::from_proto_files(&[&proto], &[&schema_dir]).expect("telemetry.proto compiles");

    // Two tables in several files: `telemetry` with Hive partitions day=1 and day=2.
    for (day, files) in [(1, 3), (2, 2)] {
        let part = dir.join(format!("telemetry/day={day}"));
        fs::create_dir_all(&part).expect("partition directory");
        for f in 0..files {
            write_records(&schema, &part.join(format!("part-{f}.bin")), 400, 1000 * day + f);
        }
    }
    fs::create_dir_all(dir.join("fleet")).expect("fleet directory");
    for f in 0..2 {
        write_records(&schema, &dir.join(format!("fleet/f{f}.bin")), 150, 77 + f);
    }
    // A table with one malformed record in the middle of its second file (tag 0x0f: field
    // 1 with wire type 7, which does not exist).
    fs::create_dir_all(dir.join("broken")).expect("broken directory");
    write_records(&schema, &dir.join("broken/good.bin"), 50, 5);
    write_records(&schema, &dir.join("broken/bad.bin"), 50, 6);
    let mut bad = fs::read(dir.join("broken/bad.bin")).expect("read bad.bin");
    let tail = fs::read(dir.join("broken/good.bin")).expect("read good.bin");
    bad.extend_from_slice(&[2, 0x0f, 0x01]);
    bad.extend_from_slice(&tail);
    fs::write(dir.join("broken/bad.bin"), bad).expect("write bad.bin");

    let cluster = start_cluster(&dir, &[], &[]);
    let remote = connect(&cluster.url()).await.expect("client session");
    register_protobuf_cluster_format(&remote, ProtobufFormatFactory::new()).expect("cluster format");
    let local = SessionContext::new();
    register_protobuf_format(&local, ProtobufFormatFactory::new()).expect("local format");
    for name in ["telemetry", "fleet", "broken"] {
        let create = format!(
            "CREATE EXTERNAL TABLE {name} STORED AS PROTOBUF LOCATION '{}/' \
             OPTIONS ('message_type' 'protojit.samples.Batch', 'proto' '{}')",
            dir.join(name).display(),
            proto.display()
        );
        for ctx in [&remote, &local] {
            ctx.sql(&create).await.unwrap_or_else(|e| panic!("{create}: {e}"));
        }
    }

    // `protojit-ballista sql --cluster` (what `protojit sql --cluster` runs): a --table
    // directory with Hive partitions, then CREATE EXTERNAL TABLE and a join in the same
    // query text; its CSV is the local session's, statement after statement.
    let aggregate = |t: &str| {
        format!(
            "SELECT status, day, COUNT(*) AS records, SUM(cardinality(samples)) AS samples, \
             MIN(device) AS first_device, COUNT(DISTINCT device) AS devices \
             FROM {t} GROUP BY status, day ORDER BY status, day"
        )
    };
    let join = |t: &str, f: &str| {
        format!(
            "SELECT t.device, COUNT(*) AS pairs, SUM(cardinality(f.samples)) AS fleet_samples \
             FROM {t} t JOIN {f} f ON t.device = f.device GROUP BY t.device ORDER BY t.device"
        )
    };
    let statements = [
        aggregate("t"),
        format!(
            "CREATE EXTERNAL TABLE f STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'protojit.samples.Batch')",
            dir.join("fleet").display()
        ),
        join("t", "f"),
    ];
    let table = format!("t=protojit.samples.Batch:{}/", dir.join("telemetry").display());
    let url = cluster.url();
    let mut command = Command::new(env!("CARGO_BIN_EXE_protojit-ballista"));
    command.args(["sql", "--cluster", &url, "--proto"]).arg(&proto).args(["--table", &table, "-o", "csv"]);
    command.arg(statements.join("; "));
    let out = tokio::task::spawn_blocking(move || run_bounded(&mut command, QUERY_LIMIT)).await.expect("sql runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "protojit-ballista sql: {}: {stderr}\n{}", out.status, cluster.logs());
    let mut want = Vec::new();
    for local_query in [aggregate("telemetry"), join("telemetry", "fleet")] {
        let batches = run(&local, &local_query).await.unwrap_or_else(|e| panic!("{local_query} (local): {e}"));
        let mut w = csv::WriterBuilder::new().with_header(true).build(&mut want);
        for b in &batches {
            w.write(b).expect("CSV");
        }
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&want), "stderr: {stderr}");
    assert!(want.len() > 200, "the local CSV is too short to compare: {}", String::from_utf8_lossy(&want));

    // COPY … TO … STORED AS PROTOBUF on the cluster: the executors write the rows as
    // records (its options reach the scheduler bound to the format: without
    // 'ignore_extra_columns' the partition column `day` would be an error), which a table
    // over the output reads back.
    let copied = dir.join("copied");
    let statements = [
        format!(
            "COPY (SELECT * FROM t WHERE day = 1) TO '{}/' STORED AS PROTOBUF \
             OPTIONS ('message_type' 'protojit.samples.Batch', 'ignore_extra_columns' 'true')",
            copied.display()
        ),
        format!(
            "CREATE EXTERNAL TABLE c STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'protojit.samples.Batch')",
            copied.display()
        ),
        "SELECT COUNT(*) AS records, COUNT(DISTINCT device) AS devices FROM c".to_owned(),
    ];
    let mut command = Command::new(env!("CARGO_BIN_EXE_protojit-ballista"));
    command.args(["sql", "--cluster", &url, "--proto"]).arg(&proto).args(["--table", &table, "-o", "csv"]);
    command.arg(statements.join("; "));
    let out = tokio::task::spawn_blocking(move || run_bounded(&mut command, QUERY_LIMIT)).await.expect("sql runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "COPY on the cluster: {}: {stderr}\n{}", out.status, cluster.logs());
    let devices = run(&local, "SELECT COUNT(DISTINCT device) AS d FROM telemetry WHERE day = 1").await.expect("local");
    let devices = csv_text(&devices);
    let devices = devices.lines().nth(1).expect("a count");
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("count\n1200\nrecords,devices\n1200,{devices}\n"));

    fs::remove_dir_all(&schema_dir).expect("remove the schema");

    let queries = [
        // An aggregate over both partitions.
        "SELECT status, day, COUNT(*) AS records, SUM(cardinality(samples)) AS samples, \
         SUM(cardinality(error_codes)) AS codes, SUM(battery_volts) AS volts, AVG(battery_volts) AS mean_volts, \
         MIN(device) AS first_device, COUNT(DISTINCT device) AS devices \
         FROM telemetry GROUP BY status, day ORDER BY status, day",
        // A join of two protobuf tables.
        "SELECT t.device, COUNT(*) AS pairs, SUM(cardinality(f.samples)) AS fleet_samples, \
         MAX(t.battery_volts) AS max_volts, AVG(f.battery_volts) AS fleet_volts \
         FROM telemetry t JOIN fleet f ON t.device = f.device GROUP BY t.device ORDER BY t.device",
        // A filter and a projection.
        "SELECT device, day, battery_volts, cardinality(samples) AS n, cardinality(error_codes) AS codes \
         FROM telemetry WHERE status = 'STATUS_OK' AND battery_volts > 3.5 \
         ORDER BY device, day, battery_volts, n, codes",
    ];
    for query in queries {
        let plan = remote.sql(query).await.expect("plan").create_physical_plan().await.expect("physical plan");
        let shown = displayable(plan.as_ref()).indent(false).to_string();
        assert!(shown.contains("DistributedQueryExec"), "{query}: not sent to the cluster:\n{shown}");
        let on_cluster = run(&remote, query).await.unwrap_or_else(|e| panic!("{query}: {e}\n{}", cluster.logs()));
        let here = run(&local, query).await.unwrap_or_else(|e| panic!("{query} (local): {e}"));
        assert_same(query, &on_cluster, &here);
    }

    // A malformed record fails the query, naming the file, rather than returning the rest.
    let query = "SELECT COUNT(*) AS records, SUM(cardinality(samples)) AS samples FROM broken";
    let local_error = run(&local, query).await.expect_err("the local query fails").to_string();
    assert!(local_error.contains("bad.bin"), "local error does not name the file: {local_error}");
    match run(&remote, query).await {
        Ok(batches) => panic!("the cluster returned a result over a malformed record: {batches:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("bad.bin"), "the cluster's error does not name the file: {text}");
            eprintln!("the cluster's error: {text}");
        }
    }

    // The processes stop before their directories go (locals drop in reverse order).
    drop(cluster);
}
