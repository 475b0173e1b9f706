//! An executor killed (SIGKILL) in the middle of a query: the query either fails with an error or returns exactly the local result, never part of it as if complete.
//!
//! What Ballista 55 does (ballista-scheduler 55.0.0: `scheduler_server::expire_dead_executors`,
//! `SchedulerState::remove_executor`, `ExecutionGraph::reset_stages_on_lost_executor`):
//! executors push a heartbeat every `--heartbeat-interval` seconds; every
//! `--expire-interval` seconds the scheduler removes executors silent for longer than
//! `--executor-timeout` (defaults 60, 15 and 180 s: a lost executor goes unnoticed for up
//! to about three minutes), and a failed task launch or a failed fetch of its shuffle
//! output removes it at once. Removing it posts `ExecutorLost`: the running stages with
//! tasks on it go back to pending, and finished stages whose shuffle files lived on it
//! are rolled back, recursively, so their tasks run again on the executors left; a task
//! fails the job after `task_max_failures` (4) attempts, and a job fails once no executor
//! is left for `--executor-timeout` seconds. The client polls the job's status and fetches
//! the final partitions only once the job succeeded; a fetch that fails fails the query.
//! This test runs with a 1 s heartbeat, a 5 s timeout and a 1 s check, so a lost executor
//! is noticed within about 6 s.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use ballista::prelude::SessionConfigExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{SessionConfig, SessionContext};
use protojit::Schema;
use protojit_ballista::{connect_with_config, register_protobuf_cluster_format};
use protojit_sql::{register_protobuf_format, ProtobufFormatFactory};

mod common;
mod harness;
use common::{assert_same, write_records};
use harness::{start_cluster, TempDir};

/// How long the query may run before the test fails instead of hanging (a stuck cluster,
/// not a performance check), and how long the executors may take to start on it.
const QUERY_LIMIT: Duration = Duration::from_secs(120);
const TASKS_LIMIT: Duration = Duration::from_secs(60);

/// Files and records per file of the table: a self-join on `device` (60 devices) makes
/// about records² / 60 rows, enough work that the query is still running when an executor
/// dies a moment after both started on it.
const FILES: usize = 12;
const RECORDS: usize = 1000;

/// Self-join of the table on `device`, then an aggregate: two scan stages, a join stage
/// that reads both of their shuffles, and a final aggregate.
const QUERY: &str = "SELECT a.device, COUNT(*) AS pairs, SUM(cardinality(b.samples)) AS samples, \
     SUM(cardinality(a.error_codes)) AS codes \
     FROM big a JOIN big b ON a.device = b.device GROUP BY a.device ORDER BY a.device";

/// Every path under `dir` (shuffle files and their directories).
fn entries(dir: &Path) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.insert(path.display().to_string());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_survives_or_fails_when_an_executor_dies() {
    let temp = TempDir::new("executor-loss");
    let dir = temp.0.clone();
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/samples/telemetry.proto");
    let schema =
        Schema::from_proto_files(&[&proto], &[proto.parent().expect("a directory")]).expect("telemetry.proto compiles");
    let table_dir = dir.join("big");
    fs::create_dir_all(&table_dir).expect("table directory");
    for f in 0..FILES {
        write_records(&schema, &table_dir.join(format!("part-{f:02}.bin")), RECORDS, 31 + f as u64);
    }
    let create = format!(
        "CREATE EXTERNAL TABLE big STORED AS PROTOBUF LOCATION '{}/' \
         OPTIONS ('message_type' 'protojit.samples.Batch', 'proto' '{}')",
        table_dir.display(),
        proto.display()
    );

    let local = SessionContext::new();
    register_protobuf_format(&local, ProtobufFormatFactory::new()).expect("local format");
    local.sql(&create).await.expect("local table");
    let started = Instant::now();
    let here = local.sql(QUERY).await.expect("plan").collect().await.expect("the local query");
    eprintln!("local query: {:?}", started.elapsed());

    let mut cluster =
        start_cluster(&dir, &["--executor-timeout", "5", "--expire-interval", "1"], &["--heartbeat-interval", "1"]);
    // Eight partitions: the scan, join and aggregate stages have eight tasks each, more
    // than one executor's two slots, so both executors take tasks.
    let config = SessionConfig::new_with_ballista().with_target_partitions(8);
    let remote = connect_with_config(&cluster.url(), config).await.expect("client session");
    register_protobuf_cluster_format(&remote, ProtobufFormatFactory::new()).expect("cluster format");
    remote.sql(&create).await.expect("cluster table");

    let before: Vec<HashSet<String>> = cluster.work_dirs.iter().map(|d| entries(d)).collect();
    let started = Instant::now();
    let query = {
        let remote = remote.clone();
        tokio::spawn(async move {
            tokio::time::timeout(QUERY_LIMIT, async { remote.sql(QUERY).await?.collect().await }).await
        })
    };
    // Both executors have written shuffle files of this query: it is running on both.
    let deadline = Instant::now() + TASKS_LIMIT;
    loop {
        assert!(!query.is_finished(), "the query ended before both executors wrote shuffle files; make it longer");
        let busy = cluster.work_dirs.iter().zip(&before).all(|(d, old)| !entries(d).is_subset(old));
        if busy {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the executors did not both start within {TASKS_LIMIT:?}\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!query.is_finished(), "the query ended before the executor could be killed; make it longer");
    cluster.kill_executor(0);
    eprintln!("executor-0 killed {:?} into the query", started.elapsed());

    let outcome = match query.await.expect("the query task") {
        Ok(outcome) => outcome,
        Err(_) => panic!("no answer within {QUERY_LIMIT:?} after an executor died\n{}", cluster.logs()),
    };
    eprintln!("cluster query, executor-0 killed: {:?}", started.elapsed());
    match outcome {
        // The lost executor's tasks ran again elsewhere: the whole result, or the test fails.
        Ok(batches) => {
            assert_same(QUERY, &batches, &here);
            eprintln!("outcome: the complete result, from the executor left");
        }
        Err(e) => {
            let text = e.to_string();
            eprintln!("outcome: the query failed: {text}");
            // Ballista's words for a failed job, and for a result partition on an
            // executor that cannot be reached.
            let clear = ["failed", "Error connecting to Ballista", "fetch partition error"];
            assert!(clear.iter().any(|c| text.contains(c)), "an unclear error after an executor died: {text}");
        }
    }

    // The executor left still answers, completely.
    let small = "SELECT device, COUNT(*) AS records FROM big GROUP BY device ORDER BY device";
    let local_small = local.sql(small).await.expect("plan").collect().await.expect("the local query");
    let after: Vec<RecordBatch> = tokio::time::timeout(QUERY_LIMIT, async { remote.sql(small).await?.collect().await })
        .await
        .unwrap_or_else(|_| panic!("{small}: no answer within {QUERY_LIMIT:?}\n{}", cluster.logs()))
        .unwrap_or_else(|e| panic!("{small}: {e}\n{}", cluster.logs()));
    assert_same(small, &after, &local_small);
    eprintln!("scheduler log:\n{}", cluster.log("scheduler"));

    // The processes stop before their directories go (locals drop in reverse order).
    drop(cluster);
}
