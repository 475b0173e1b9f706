//! `STORED AS PROTOBUF`: directories, globs and Hive partitions of delimited files give the
//! same answers as the in-memory table over the same records; bad files, bad options and
//! truncated records fail with the file, record number and offset.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost::Message as _;
use protojit::Schema;
use protojit_sql::datafusion::arrow::array::RecordBatch;
use protojit_sql::datafusion::arrow::util::pretty::pretty_format_batches;
use protojit_sql::datafusion::error::DataFusionError;
use protojit_sql::datafusion::prelude::{SessionConfig, SessionContext};
use protojit_sql::{register_protobuf_format, ProtobufFormatFactory, ProtobufTable, TableOptions};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/samples")
}

fn telemetry() -> Schema {
    Schema::from_proto_files(&[samples().join("telemetry.proto")], &[samples()]).unwrap()
}

/// A fresh directory under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("protojit-sql-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

fn run(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>, DataFusionError> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut last = Vec::new();
        for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
            last = ctx.sql(statement).await?.collect().await?;
        }
        Ok(last)
    })
}

fn text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

fn session(partitions: usize) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions).with_batch_size(64));
    register_protobuf_format(&ctx, ProtobufFormatFactory::new()).unwrap();
    ctx
}

const QUERY: &str = "SELECT CAST(status AS VARCHAR) AS status, COUNT(*) AS n, COUNT(battery_volts) AS battery, \
                     MAX(device) AS device, SUM(CASE WHEN mains THEN 1 ELSE 0 END) AS mains FROM t GROUP BY 1 ORDER BY 1";

/// Eight files in two Hive partitions answer as the in-memory table over all their records,
/// at 1 and 3 partitions, through a directory, a glob, and with the partition column.
#[test]
fn a_directory_of_files_answers_as_the_same_records_in_memory() {
    let dir = TempDir::new("dir");
    let mut all = Vec::new();
    let mut day1 = Vec::new();
    for i in 0..8u64 {
        let day = if i < 3 { "day=1" } else { "day=2" };
        std::fs::create_dir_all(dir.0.join(day)).unwrap();
        let bytes = records(0x5eed + i, 40 + 13 * i as usize);
        std::fs::write(dir.0.join(day).join(format!("part-{i}.bin")), &bytes).unwrap();
        all.extend_from_slice(&bytes);
        if i < 3 {
            day1.extend_from_slice(&bytes);
        }
    }
    let memory = |bytes: &[u8]| {
        let ctx = SessionContext::new();
        let table = ProtobufTable::from_bytes(&telemetry(), "Batch", bytes.to_vec(), &TableOptions::default()).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        text(&run(&ctx, QUERY).unwrap())
    };
    let expected = memory(&all);
    let proto = samples().join("telemetry.proto");
    for partitions in [1, 3] {
        let ctx = session(partitions);
        let create = format!(
            "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' \
             OPTIONS ('message_type' 'protojit.samples.Batch', 'proto' '{}', 'proto_path' '{}')",
            dir.0.display(),
            proto.display(),
            samples().display()
        );
        assert_eq!(text(&run(&ctx, &format!("{create}; {QUERY}")).unwrap()), expected, "{partitions} partitions");
        // The partition column, from the directory names.
        let days = text(&run(&ctx, "SELECT day, COUNT(*) AS n FROM t GROUP BY day ORDER BY day").unwrap());
        assert!(days.contains("| 1   | "), "{days}");
        let day1_expected = memory(&day1);
        let day1_got = text(&run(&ctx, &QUERY.replace("FROM t", "FROM t WHERE day = '1'")).unwrap());
        assert_eq!(day1_got, day1_expected);
        // LIMIT stops the scan early and still returns whole rows.
        let limited = run(&ctx, "SELECT device FROM t LIMIT 7").unwrap();
        assert_eq!(limited.iter().map(|b| b.num_rows()).sum::<usize>(), 7);
    }
    // A glob over one partition's files (DataFusion matches a glob against file names only,
    // unless `datafusion.execution.listing_table_ignore_subdirectory` is false).
    let ctx = session(2);
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/day=1/part-*.bin' \
         OPTIONS ('format.message_type' 'Batch', 'format.proto' '{}')",
        dir.0.display(),
        proto.display()
    );
    assert_eq!(text(&run(&ctx, &format!("{create}; {QUERY}")).unwrap()), memory(&day1));
}

/// One file split into byte ranges (DataFusion balances partitions by size; here every file
/// qualifies) answers as the in-memory table: each range converts the records whose length
/// prefix starts in it, found by walking the prefixes before it. A cut last record is still
/// an error, from the range that owns it.
#[test]
fn one_file_split_into_byte_ranges_converts_each_record_once() {
    let dir = TempDir::new("split");
    let bytes = records(0x5_1117, 700);
    std::fs::write(dir.0.join("one.bin"), &bytes).unwrap();
    let memory = SessionContext::new();
    let table = ProtobufTable::from_bytes(&telemetry(), "Batch", bytes.clone(), &TableOptions::default()).unwrap();
    memory.register_table("t", Arc::new(table)).unwrap();
    let expected = text(&run(&memory, QUERY).unwrap());
    let proto = samples().join("telemetry.proto");
    let create = |dir: &Path| {
        format!(
            "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'Batch', 'proto' '{}')",
            dir.display(),
            proto.display()
        )
    };
    let split_session = |partitions: usize| {
        let config = SessionConfig::new()
            .with_target_partitions(partitions)
            .with_batch_size(64)
            .with_repartition_file_scans(true)
            .with_repartition_file_min_size(1);
        let ctx = SessionContext::new_with_config(config);
        register_protobuf_format(&ctx, ProtobufFormatFactory::new()).unwrap();
        ctx
    };
    for partitions in [1, 2, 3, 7] {
        let ctx = split_session(partitions);
        assert_eq!(text(&run(&ctx, &format!("{}; {QUERY}", create(&dir.0))).unwrap()), expected, "{partitions}");
        let plan = text(&run(&ctx, &format!("EXPLAIN {QUERY}")).unwrap());
        if partitions > 1 {
            assert!(plan.contains("one.bin:0.."), "{partitions} partitions, not split: {plan}");
        }
        let n = run(&ctx, "SELECT COUNT(*) FROM t").unwrap();
        assert!(text(&n).contains("| 700 "), "{}", text(&n));
    }
    let mut cut = bytes.clone();
    cut.truncate(cut.len() - 2);
    std::fs::write(dir.0.join("one.bin"), &cut).unwrap();
    let e = run(&split_session(3), &format!("{}; {QUERY}", create(&dir.0))).unwrap_err().to_string();
    assert!(e.contains("one.bin: record 700 at byte"), "{e}");
    assert!(e.contains("is truncated: the input ends 2 byte(s) short of it"), "{e}");
}

/// A table whose schema comes from a descriptor set, and one made with a session-wide schema.
#[test]
fn descriptor_sets_and_a_session_schema() {
    let dir = TempDir::new("fds");
    let bytes = records(7, 100);
    std::fs::write(dir.0.join("a.bin"), &bytes).unwrap();
    let set = TempDir::new("fds-schema");
    std::fs::write(set.0.join("schema.pb"), telemetry().pool().encode_to_vec()).unwrap();
    let ctx = session(2);
    let sql = format!(
        "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}' OPTIONS ('message_type' 'Batch', 'descriptor_set' '{}'); \
         SELECT COUNT(*) AS n FROM t",
        dir.0.join("a.bin").display(),
        set.0.join("schema.pb").display()
    );
    assert!(text(&run(&ctx, &sql).unwrap()).contains("| 100 |"));

    let ctx = SessionContext::new();
    register_protobuf_format(&ctx, ProtobufFormatFactory::with_schema(telemetry())).unwrap();
    let sql = format!(
        "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'Batch'); SELECT COUNT(*) AS n FROM t",
        dir.0.display()
    );
    assert!(text(&run(&ctx, &sql).unwrap()).contains("| 100 |"));
    let sql = format!(
        "CREATE EXTERNAL TABLE u STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'Batch', 'proto' 'x.proto')",
        dir.0.display()
    );
    let e = run(&ctx, &sql).unwrap_err().to_string();
    assert!(e.contains("this session has one schema for protobuf tables"), "{e}");
}

/// What a user gets wrong fails at CREATE time, with one line saying what to do.
#[test]
fn bad_options_fail_at_create() {
    let dir = TempDir::new("opts");
    std::fs::write(dir.0.join("a.bin"), records(1, 3)).unwrap();
    let ctx = session(1);
    let proto = samples().join("telemetry.proto");
    let create = |options: &str| {
        format!("CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' OPTIONS ({options})", dir.0.display())
    };
    let cases = [
        (create("'proto' 'x'"), "a protobuf table needs OPTIONS ('message_type' 'pkg.Message')".to_owned()),
        (
            create("'message_type' 'Batch'"),
            "a protobuf table needs its schema: OPTIONS ('descriptor_set' 'schema.pb') or ('proto' 'a.proto')"
                .to_owned(),
        ),
        (create(&format!("'message_type' 'Nope', 'proto' '{}'", proto.display())), "Nope".to_owned()),
        (create("'message_type' 'Batch', 'descriptor_set' '/no/such/schema.pb'"), "/no/such/schema.pb".to_owned()),
        (create("'message_type' 'Batch', 'colour' 'red'"), "unknown option 'format.colour'".to_owned()),
    ];
    for (sql, expected) in cases {
        let e = run(&ctx, &sql).unwrap_err().to_string();
        assert!(e.contains(&expected), "{sql}: {e}");
        assert!(!e.contains('\n'), "{sql}: {e}");
    }
}

/// A truncated last record, a record that does not decode, and a file that is not delimited
/// protobuf fail the query with the file's name, the record's number and its offset.
#[test]
fn bad_files_fail_with_file_record_and_offset() {
    let proto = samples().join("telemetry.proto");
    let query = |dir: &Path| {
        let ctx = session(2);
        let sql = format!(
            "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'Batch', 'proto' '{}'); \
             SELECT COUNT(*), MAX(device) FROM t",
            dir.display(),
            proto.display()
        );
        run(&ctx, &sql).map(|b| text(&b))
    };
    let good = records(3, 20);

    let dir = TempDir::new("trunc");
    std::fs::write(dir.0.join("good.bin"), &good).unwrap();
    let mut cut = good.clone();
    cut.truncate(cut.len() - 3);
    std::fs::write(dir.0.join("cut.bin"), &cut).unwrap();
    let e = query(&dir.0).unwrap_err().to_string();
    assert!(e.contains("cut.bin: record 20 at byte"), "{e}");
    assert!(e.contains("is truncated: the input ends 3 byte(s) short of it"), "{e}");

    let dir = TempDir::new("notpb");
    std::fs::write(dir.0.join("good.bin"), &good).unwrap();
    std::fs::write(dir.0.join("notes.txt"), "this is not protobuf\n").unwrap();
    let e = query(&dir.0).unwrap_err().to_string();
    assert!(e.contains("notes.txt: record 1 at byte 0"), "{e}");

    let dir = TempDir::new("empty");
    std::fs::write(dir.0.join("empty.bin"), b"").unwrap();
    assert!(query(&dir.0).unwrap().contains("| 0 "), "an empty file has no records");
}

/// With the compression feature, gzip files answer as the same files uncompressed; without
/// it a compressed table is refused at CREATE, saying which feature reads it.
#[test]
fn gzip_files() {
    let dir = TempDir::new("gzip");
    let bytes = records(11, 300);
    let proto = samples().join("telemetry.proto");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &bytes).unwrap();
    std::fs::write(dir.0.join("a.bin.gz"), gz.finish().unwrap()).unwrap();
    let sql = format!(
        "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' \
         OPTIONS ('message_type' 'Batch', 'proto' '{}', 'compression' 'gzip'); {QUERY}",
        dir.0.display(),
        proto.display()
    );
    let got = run(&session(2), &sql);
    if cfg!(feature = "compression") {
        let ctx = SessionContext::new();
        let table = ProtobufTable::from_bytes(&telemetry(), "Batch", bytes, &TableOptions::default()).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        assert_eq!(text(&got.unwrap()), text(&run(&ctx, QUERY).unwrap()));
    } else {
        let e = got.unwrap_err().to_string();
        assert!(e.contains("build protojit-sql with its `compression` feature"), "{e}");
    }
}

/// Without a compression option, a directory that mixes plain and compressed files answers as
/// all their records: each file read as its name says (`.gz`, `.zst`), or as its first bytes
/// show under another name; split into byte ranges, a compressed file is still read once,
/// whole.
#[test]
fn mixed_compressed_and_plain_files_by_name_and_first_bytes() {
    use std::io::Write;
    let dir = TempDir::new("mixed_compression");
    let parts: Vec<Vec<u8>> = (0..4).map(|i| records(0xC0 + i, 150)).collect();
    let gzip = |bytes: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    };
    std::fs::write(dir.0.join("a.bin"), &parts[0]).unwrap();
    std::fs::write(dir.0.join("b.bin.gz"), gzip(&parts[1])).unwrap();
    std::fs::write(dir.0.join("c.data"), gzip(&parts[2])).unwrap();
    std::fs::write(dir.0.join("d.bin.zst"), zstd::encode_all(&parts[3][..], 3).unwrap()).unwrap();
    let memory = SessionContext::new();
    let table = ProtobufTable::from_bytes(&telemetry(), "Batch", parts.concat(), &TableOptions::default()).unwrap();
    memory.register_table("t", Arc::new(table)).unwrap();
    let expected = text(&run(&memory, QUERY).unwrap());
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'Batch', 'proto' '{}')",
        dir.0.display(),
        samples().join("telemetry.proto").display()
    );
    for (partitions, min_size) in [(1, 10 << 20), (3, 1)] {
        let config = SessionConfig::new()
            .with_target_partitions(partitions)
            .with_batch_size(64)
            .with_repartition_file_scans(true)
            .with_repartition_file_min_size(min_size);
        let ctx = SessionContext::new_with_config(config);
        register_protobuf_format(&ctx, ProtobufFormatFactory::new()).unwrap();
        assert_eq!(text(&run(&ctx, &format!("{create}; {QUERY}")).unwrap()), expected, "{partitions} partitions");
    }
}

/// Kafka dumps: delimited records with the schema-registry header, checked and stripped, and
/// the schema id as a column.
#[test]
fn schema_registry_framing() {
    let dir = TempDir::new("framing");
    std::fs::write(dir.0.join("k.proto"), "syntax = \"proto3\"; package k; message E { int64 v = 1; }").unwrap();
    let mut data = Vec::new();
    for (id, v) in [(3i32, 5u8), (3, 6), (4, 7)] {
        let mut r = vec![0];
        r.extend_from_slice(&id.to_be_bytes());
        r.extend_from_slice(&[0, 0x08, v]);
        data.push(r.len() as u8);
        data.extend_from_slice(&r);
    }
    std::fs::write(dir.0.join("topic.bin"), &data).unwrap();
    let create = |extra: &str| {
        format!(
            "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '{}' \
             OPTIONS ('message_type' 'k.E', 'proto' '{}', 'proto_path' '{}'{extra})",
            dir.0.join("topic.bin").display(),
            dir.0.join("k.proto").display(),
            dir.0.display()
        )
    };
    let ctx = session(1);
    let sql = format!(
        "{}; SELECT sid, SUM(v) AS v FROM t GROUP BY sid ORDER BY sid",
        create(", 'framing' 'schema_registry', 'schema_id_column' 'sid'")
    );
    let got = text(&run(&ctx, &sql).unwrap());
    assert!(got.contains("| 3   | 11 |") && got.contains("| 4   | 7  |"), "{got}");
    // Without the framing option the header is read as protobuf, and fails.
    let e = run(&session(1), &format!("{}; SELECT SUM(v) FROM t", create(""))).unwrap_err().to_string();
    assert!(e.contains("topic.bin: record 1 at byte 1"), "{e}");
    let e = run(&session(1), &create(", 'schema_id_column' 'sid'")).unwrap_err().to_string();
    assert!(e.contains("'schema_id_column' needs 'framing' 'schema_registry'"), "{e}");
}
