//! The converter's paths as metrics of the scan: `EXPLAIN ANALYZE` shows them on the scan of files and of records in memory (one `DataSourceExec` for both), and `ScanPaths::of_plan` sums them to the rows read, at any partitioning.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost::Message as _;
use protojit::{EngineKind, Schema};
use protojit_arrow::ArrowOptions;
use protojit_sql::datafusion::arrow::array::RecordBatch;
use protojit_sql::datafusion::arrow::util::pretty::pretty_format_batches;
use protojit_sql::datafusion::physical_plan::collect;
use protojit_sql::datafusion::prelude::{SessionConfig, SessionContext};
use protojit_sql::{
    register_protobuf_format, ProtobufFormatFactory, ProtobufTable, ScanPaths, TableOptions, ROWS_CHUNKED,
    ROWS_COMPILED, ROWS_OTHER, ROWS_TREE,
};

/// Fewer than 1,000, so that `EXPLAIN ANALYZE` prints the counts whole (not "1.20 K").
const N: usize = 700;

const QUERY: &str = "SELECT MAX(device) AS device, SUM(CASE WHEN mains THEN 1 ELSE 0 END) AS mains FROM t";

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/samples")
}

fn telemetry() -> Schema {
    Schema::from_proto_files(&[samples().join("telemetry.proto")], &[samples()]).unwrap()
}

/// `n` random telemetry `Batch` records, delimited.
fn records(seed: u64, n: usize) -> Vec<u8> {
    let schema = telemetry();
    let desc = schema.pool().get_message_by_name("protojit.samples.Batch").unwrap();
    let mut rng = common::Rng(seed);
    let mut stream = Vec::new();
    for _ in 0..n {
        let m = common::random_message(&desc, 2, &mut rng).encode_to_vec();
        protojit_arena::wire::write_varint(&mut stream, m.len() as u64);
        stream.extend_from_slice(&m);
    }
    stream
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A session that splits files (and the in-memory table's ranges) into up to `partitions`
/// byte ranges, however small.
fn session(partitions: usize) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .with_batch_size(64)
        .with_repartition_file_scans(true)
        .with_repartition_file_min_size(1);
    let ctx = SessionContext::new_with_config(config);
    register_protobuf_format(&ctx, ProtobufFormatFactory::new()).unwrap();
    ctx
}

/// Decode options of `engine`.
fn engine(kind: EngineKind) -> ArrowOptions {
    ArrowOptions { decode: ArrowOptions::default().decode.with_kind(kind), ..ArrowOptions::default() }
}

/// `t`: the records in memory, in `partitions` ranges.
fn memory_table(ctx: &SessionContext, bytes: &[u8], partitions: usize, arrow: ArrowOptions) {
    let options = TableOptions { partitions, batch_size: 64, arrow };
    let table = ProtobufTable::from_bytes(&telemetry(), "Batch", bytes.to_vec(), &options).unwrap();
    ctx.deregister_table("t").unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
}

/// `t`: the records in a file, as `CREATE EXTERNAL TABLE` makes it.
fn file_table(ctx: &SessionContext, rt: &tokio::runtime::Runtime, file: &Path) {
    let sql = format!(
        "CREATE OR REPLACE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}' \
         OPTIONS ('message_type' 'Batch', 'proto' '{}')",
        file.display(),
        samples().join("telemetry.proto").display()
    );
    rt.block_on(async { ctx.sql(&sql).await?.collect().await }).unwrap();
}

/// Runs `sql`, and the paths its plan's scans counted.
fn run(ctx: &SessionContext, rt: &tokio::runtime::Runtime, sql: &str) -> (Vec<RecordBatch>, ScanPaths) {
    rt.block_on(async {
        let frame = ctx.sql(sql).await?;
        let task = Arc::new(frame.task_ctx());
        let plan = frame.create_physical_plan().await?;
        let batches = collect(plan.clone(), task).await?;
        Ok::<_, protojit_sql::datafusion::error::DataFusionError>((batches, ScanPaths::of_plan(plan.as_ref())))
    })
    .unwrap()
}

/// The scan's line of `EXPLAIN ANALYZE QUERY`, and its four path counts.
fn explain_analyze(ctx: &SessionContext, rt: &tokio::runtime::Runtime) -> (String, [u64; 4]) {
    let (batches, _) = run(ctx, rt, &format!("EXPLAIN ANALYZE {QUERY}"));
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let line = text.lines().find(|l| l.contains("DataSourceExec:")).unwrap_or_else(|| panic!("{text}")).to_owned();
    let count = |name: &str| -> u64 {
        let at = line.find(&format!(" {name}=")).unwrap_or_else(|| panic!("no {name} in {line}"));
        let digits: String = line[at + name.len() + 2..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or_else(|_| panic!("{name} in {line}"))
    };
    let counts = [count(ROWS_COMPILED), count(ROWS_CHUNKED), count(ROWS_TREE), count(ROWS_OTHER)];
    (line, counts)
}

/// `EXPLAIN ANALYZE` shows the path counts on the scan, files and records in memory alike:
/// by default the compiled appenders (or the chunked path while they compile) fill every
/// record; under the interpreter another path does, and the scan says why.
#[test]
fn explain_analyze_shows_the_path_counts() {
    let bytes = records(0xe4_91a1, N);
    let dir = std::env::temp_dir().join(format!("protojit-sql-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.bin");
    std::fs::write(&file, &bytes).unwrap();
    let rt = runtime();
    let ctx = session(3);
    let total = |c: [u64; 4]| c.iter().sum::<u64>();

    memory_table(&ctx, &bytes, 2, ArrowOptions::default());
    let (line, counts) = explain_analyze(&ctx, &rt);
    assert!(line.contains("file_type=protobuf"), "{line}");
    assert_eq!((counts[0] + counts[1], total(counts)), (N as u64, N as u64), "{line}");
    assert!(!line.contains("path_notes"), "{line}");

    file_table(&ctx, &rt, &file);
    let (line, counts) = explain_analyze(&ctx, &rt);
    assert_eq!((counts[0] + counts[1], total(counts)), (N as u64, N as u64), "{line}");

    memory_table(&ctx, &bytes, 2, engine(EngineKind::Interpreter));
    let (line, counts) = explain_analyze(&ctx, &rt);
    assert_eq!(counts, [0, 0, 0, N as u64], "{line}");
    assert!(line.contains("path_notes=[the interpreter engine compiles nothing: chunked path instead]"), "{line}");
    // Counted once by each partition that converted records (sibling partitions may take
    // each other's ranges, so not always by every one).
    assert!(line.contains(" path_note=") && !line.contains(" path_note=0"), "{line}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Summed from the executed plan's metrics, the paths' counts are the rows read, at any
/// partitioning, for the records in memory (their ranges split further by DataFusion, too)
/// and in a file; the answers are the same.
#[test]
fn the_summed_path_counts_are_the_rows_read() {
    let bytes = records(0x5a_7517, N);
    let dir = std::env::temp_dir().join(format!("protojit-sql-metrics-sum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.bin");
    std::fs::write(&file, &bytes).unwrap();
    let rt = runtime();
    let text = |b: &[RecordBatch]| pretty_format_batches(b).unwrap().to_string();
    let rows = |p: &ScanPaths| p.compiled + p.chunked + p.tree + p.other;

    let one = session(1);
    memory_table(&one, &bytes, 1, ArrowOptions::default());
    let (expected, paths) = run(&one, &rt, QUERY);
    assert_eq!((paths.scans, rows(&paths)), (1, N as u64), "{paths:?}");
    for (target, partitions) in [(1, 3), (4, 2), (7, 7)] {
        let ctx = session(target);
        memory_table(&ctx, &bytes, partitions, ArrowOptions::default());
        let (got, paths) = run(&ctx, &rt, QUERY);
        assert_eq!(text(&got), text(&expected), "{target}/{partitions}");
        assert_eq!(rows(&paths), N as u64, "{target}/{partitions}: {paths:?}");
        assert_eq!(paths.other + paths.tree, 0, "{paths:?}");
        assert!(paths.scans >= partitions.min(target) as u64, "{paths:?}");
        file_table(&ctx, &rt, &file);
        let (got, paths) = run(&ctx, &rt, QUERY);
        assert_eq!(text(&got), text(&expected), "file, {target}");
        assert_eq!(rows(&paths), N as u64, "file, {target}: {paths:?}");
    }
    // The exact row count answers COUNT(*) without a scan: nothing counted.
    let (_, paths) = run(&one, &rt, "SELECT COUNT(*) FROM t");
    assert_eq!(rows(&paths), 0, "{paths:?}");
    // Under the interpreter: all by another path, and why, once.
    memory_table(&one, &bytes, 3, engine(EngineKind::Interpreter));
    let (_, paths) = run(&one, &rt, QUERY);
    assert_eq!((paths.compiled, paths.other), (0, N as u64), "{paths:?}");
    assert_eq!(paths.notes, ["the interpreter engine compiles nothing: chunked path instead"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
