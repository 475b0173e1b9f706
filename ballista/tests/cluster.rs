//! A real Ballista cluster runs protojit's SQL tables: a scheduler and two executors, each its own `protojit-ballista` process on 127.0.0.1, answer an aggregate, a join of two protobuf tables and a filter + projection exactly as a local session does, and a malformed record fails the query naming its file.

use std::fs::{self, File};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionContext;
use protojit::Schema;
use protojit_ballista::{connect, register_protobuf_cluster_format};
use protojit_sql::{register_protobuf_format, ProtobufFormatFactory};

mod common;
use common::{assert_same, write_records};

/// How long the cluster may take to come up, and a query to finish, before the test
/// fails instead of hanging (guards against a stuck cluster, not performance checks).
const START_LIMIT: Duration = Duration::from_secs(60);
const QUERY_LIMIT: Duration = Duration::from_secs(300);

/// The cluster's processes: killed and reaped when the test ends, passing or not.
struct Cluster {
    children: Vec<(String, Child)>,
    logs: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    fn spawn(&mut self, name: &str, args: &[String]) {
        let log = File::create(self.logs.join(format!("{name}.log"))).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_protojit-ballista"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("protojit-ballista starts");
        self.children.push((name.to_owned(), child));
    }

    /// Every process's log, for a failure message.
    fn logs(&self) -> String {
        self.children
            .iter()
            .map(|(name, _)| {
                let text = fs::read_to_string(self.logs.join(format!("{name}.log"))).unwrap_or_default();
                format!("--- {name} ---\n{text}")
            })
            .collect()
    }

    /// Waits until `port` accepts connections; fails if a process exits or the limit passes.
    fn wait_for(&mut self, port: u16, deadline: Instant) {
        let address: SocketAddr = ([127, 0, 0, 1], port).into();
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok() {
                return;
            }
            for (name, child) in &mut self.children {
                if let Ok(Some(status)) = child.try_wait() {
                    let name = name.clone();
                    panic!("{name} exited ({status}) before the cluster came up\n{}", self.logs());
                }
            }
            if Instant::now() > deadline {
                panic!("port {port} did not open within {START_LIMIT:?}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A temporary directory, removed when the test ends, passing or not.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `n` ports that were free a moment ago (each bound to port 0, then released together).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port")).collect();
    listeners.iter().map(|l| l.local_addr().expect("bound address").port()).collect()
}

/// Starts a scheduler and two executors; returns the cluster and the scheduler's port.
fn start_cluster(dir: &Path) -> (Cluster, u16) {
    let logs = dir.join("logs");
    fs::create_dir_all(&logs).expect("log directory");
    let ports = free_ports(5);
    let mut cluster = Cluster { children: Vec::new(), logs };
    let deadline = Instant::now() + START_LIMIT;
    cluster.spawn("scheduler", &["scheduler".into(), "--port".into(), ports[0].to_string()]);
    cluster.wait_for(ports[0], deadline);
    for (i, pair) in ports[1..].chunks(2).enumerate() {
        let work = dir.join(format!("work-{i}"));
        fs::create_dir_all(&work).expect("work directory");
        let args = [
            "executor",
            "--port",
            &pair[0].to_string(),
            "--grpc-port",
            &pair[1].to_string(),
            "--scheduler",
            &format!("127.0.0.1:{}", ports[0]),
            "--vcores",
            "2",
            "--work-dir",
            &work.display().to_string(),
        ]
        .map(String::from);
        cluster.spawn(&format!("executor-{i}"), &args);
    }
    for &port in &ports[1..] {
        cluster.wait_for(port, deadline);
    }
    (cluster, ports[0])
}

async fn run(ctx: &SessionContext, query: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    match tokio::time::timeout(QUERY_LIMIT, async { ctx.sql(query).await?.collect().await }).await {
        Ok(result) => result,
        Err(_) => panic!("{query}: no answer within {QUERY_LIMIT:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_tables_on_a_two_executor_cluster() {
    let dir = std::env::temp_dir().join(format!("protojit-ballista-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp directory");
    let _cleanup = TempDir(dir.clone());

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

    let (cluster, port) = start_cluster(&dir);
    let remote = connect(&format!("df://127.0.0.1:{port}")).await.expect("client session");
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
