//! `protojit sql`: results in every format (table, CSV, JSON, Parquet read back), directories
//! with partition columns, `CREATE EXTERNAL TABLE` and several statements, and one-line errors
//! (bad query, missing file, bad --table, a record that does not decode, a cut file);
//! `--cluster` handing the command to `protojit-ballista`, or saying how to get it.

mod support;

use protojit_arrow::arrow_array::RecordBatch;
use support::columns::{fails, read_parquet, stream};
use support::*;

const N: u32 = 20_000;

fn sql(tmp: &TempDir, input: &std::path::Path, extra: &[&str], query: &str) -> std::process::Output {
    run(&mut sql_command(tmp, input, extra, query), None)
}

/// `protojit sql --proto sample.proto --table r=sample.Reading:INPUT EXTRA… QUERY`.
fn sql_command(tmp: &TempDir, input: &std::path::Path, extra: &[&str], query: &str) -> std::process::Command {
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let table = format!("r=sample.Reading:{}", input.display());
    let mut command = protojit();
    command.arg("sql").arg("--proto").arg(proto).args(["--table", &table]).args(extra).arg(query);
    command
}

/// `-v` says at the end how many records each path filled: every record by the compiled
/// appenders or, while they compiled, the chunked path (none by another path, no note why);
/// under `--engine interp`, by another path, and why.
#[test]
fn sql_verbose_says_which_path_filled_the_columns() {
    let tmp = TempDir::new("sql-paths");
    let input = tmp.write("in.bin", &stream(N));
    let query = "SELECT COUNT(*) AS n, SUM(id) AS ids, MAX(label) AS l FROM r";
    let counts = |out: &std::process::Output| -> Vec<u64> {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().find(|l| l.starts_with("protojit: note: scans: ")).unwrap_or_default().to_owned();
        line.split([':', ';']).filter_map(|part| part.trim().parse().ok()).collect()
    };
    for partitions in ["1", "2"] {
        let out = sql(&tmp, &input, &["-v", "--partitions", partitions, "-o", "csv"], query);
        assert!(out.status.success(), "{out:?}");
        let n = counts(&out);
        assert_eq!(n.len(), 5, "{out:?}");
        assert_eq!((n[1] + n[2], n[3], n[4]), (u64::from(N), 0, 0), "{out:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("chunked path instead"), "{out:?}");
    }
    let out = sql(&tmp, &input, &["-v", "--engine", "interp", "-o", "csv"], query);
    let n = counts(&out);
    assert_eq!((n[1], n[4]), (0, u64::from(N)), "{out:?}");
    let why = "protojit: note: the interpreter engine compiles nothing: chunked path instead";
    assert!(String::from_utf8_lossy(&out.stderr).lines().any(|l| l == why), "{out:?}");
    // Without -v, nothing.
    assert!(sql(&tmp, &input, &["-o", "csv"], query).stderr.is_empty());
}

#[test]
fn sql_prints_tables_csv_json_and_parquet() {
    let tmp = TempDir::new("sql");
    let input = tmp.write("in.bin", &stream(N));
    // color: id % 3 (0 = COLOR_UNSPECIFIED, not on the wire, reads as its default).
    let query = "SELECT CAST(color AS VARCHAR) AS color, COUNT(*) AS n, SUM(id) AS ids FROM r GROUP BY 1 ORDER BY 1";
    let expect = |c: u32| -> (u64, u64) {
        let ids: Vec<u64> = (1..=N).filter(|i| i % 3 == c).map(u64::from).collect();
        (ids.len() as u64, ids.iter().sum())
    };
    let (n0, s0) = expect(0);
    let (n1, s1) = expect(1);
    let (n2, s2) = expect(2);
    let csv = stdout(&sql(&tmp, &input, &["-o", "csv", "--partitions", "2"], query));
    assert_eq!(csv, format!("color,n,ids\nCOLOR_UNSPECIFIED,{n0},{s0}\nGREEN,{n2},{s2}\nRED,{n1},{s1}\n"));
    let table = stdout(&sql(&tmp, &input, &[], query));
    assert!(table.contains(&format!("| RED               | {n1:<4} |")), "{table}");
    let json = stdout(&sql(&tmp, &input, &["-o", "json"], query));
    assert_eq!(json.lines().count(), 3);
    assert!(json.contains(&format!("{{\"color\":\"RED\",\"n\":{n1},\"ids\":{s1}}}")), "{json}");
    let target = tmp.path("q.parquet");
    ok(&sql(&tmp, &input, &["-o", "parquet", "--output-file", target.to_str().unwrap()], query));
    assert_eq!(read_parquet(&target).iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
}

#[test]
fn sql_errors_are_one_line() {
    let tmp = TempDir::new("sql-err");
    let input = tmp.write("in.bin", &stream(10));
    let line = fails(&sql(&tmp, &input, &[], "SELECT nope FROM r"), 1);
    assert!(line.contains("nope"), "{line}");
    let line = fails(&sql(&tmp, &tmp.path("missing.bin"), &[], "SELECT 1"), 1);
    assert!(line.starts_with("cannot read "), "{line}");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let out = run(protojit().arg("sql").arg("--proto").arg(proto).args(["--table", "broken", "SELECT 1"]), None);
    assert_eq!(
        fails(&out, 2),
        "--table broken: expected NAME=TYPE:PATH, as in events=pkg.Event:events.bin or events=pkg.Event:dumps/"
    );
    // A record that does not decode fails the query with its number and offset.
    let mut bad = stream(10);
    bad.extend_from_slice(b"\x03\x12\x09x");
    let input = tmp.write("bad.bin", &bad);
    let line = fails(&sql(&tmp, &input, &[], "SELECT COUNT(*) FROM r"), 1);
    let offset = stream(10).len() + 1; // the record's first byte, after its length prefix
    assert!(line.contains(&format!("bad.bin: record 11 at byte {offset}: ")), "{line}");
    // A file cut inside its last record is an error, not a shorter table.
    let mut cut = stream(10);
    cut.truncate(cut.len() - 1);
    let input = tmp.write("cut.bin", &cut);
    let line = fails(&sql(&tmp, &input, &[], "SELECT COUNT(*) FROM r"), 1);
    assert!(line.contains("cut.bin: record 10 at byte") && line.contains("is truncated"), "{line}");
}

/// A directory of files in `key=value/` partitions, as `--table` and as `CREATE EXTERNAL
/// TABLE` in the query, with several statements.
#[test]
fn sql_reads_directories_and_creates_tables() {
    let tmp = TempDir::new("sql-dir");
    let all = stream(3000);
    // Cut the stream into 4 files at record boundaries, 2 per day.
    let mut cuts = vec![0];
    let mut at = 0;
    let mut records = 0;
    while at < all.len() {
        let (len, n) = {
            let (mut v, mut i) = (0u64, 0);
            loop {
                let b = all[at + i];
                v |= u64::from(b & 0x7f) << (7 * i);
                i += 1;
                if b < 0x80 {
                    break (v as usize, i);
                }
            }
        };
        at += n + len;
        records += 1;
        if records % 750 == 0 {
            cuts.push(at);
        }
    }
    assert_eq!(cuts.len(), 5);
    for (i, w) in cuts.windows(2).enumerate() {
        let day = if i < 2 { "day=1" } else { "day=2" };
        tmp.write(&format!("dir/{day}/part-{i}.bin"), &all[w[0]..w[1]]);
    }
    let dir = tmp.path("dir");
    let by_day = "SELECT day, COUNT(*) AS n, SUM(id) AS ids FROM r GROUP BY day ORDER BY day";
    let csv = stdout(&sql(&tmp, &dir, &["-o", "csv"], by_day));
    let sum = |range: std::ops::RangeInclusive<u64>| range.sum::<u64>();
    assert_eq!(
        csv,
        format!(
            "day,n,ids
1,1500,{}
2,1500,{}
",
            sum(1..=1500),
            sum(1501..=3000)
        )
    );
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let query = format!(
        "CREATE EXTERNAL TABLE e STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'sample.Reading'); \
         SELECT COUNT(*) AS n FROM e; SELECT MAX(id) AS top FROM e WHERE day = '1'",
        dir.display()
    );
    let out = run(protojit().arg("sql").arg("--proto").arg(&proto).args(["-o", "csv"]).arg(&query), None);
    assert_eq!(stdout(&out), "n\n3000\ntop\n1500\n");
    // A type the schema does not have fails at CREATE, in one line.
    let query = format!(
        "CREATE EXTERNAL TABLE e STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'Nope')",
        dir.display()
    );
    let line = fails(&run(protojit().arg("sql").arg("--proto").arg(&proto).arg(&query), None), 1);
    assert!(line.contains("Nope"), "{line}");
}

#[test]
fn sql_help_has_examples() {
    let text = String::from_utf8(ok(&run(protojit().args(["sql", "--help"]), None))).unwrap();
    assert!(text.contains("Examples:\n") && text.contains("\n  protojit sql "), "{text}");
}

#[test]
fn sql_cluster_without_protojit_ballista_says_how_to_get_it() {
    let tmp = TempDir::new("sql-cluster-missing");
    let input = tmp.write("in.bin", &stream(3));
    let missing = tmp.path("no-protojit-ballista-here");
    let out = run(
        sql_command(&tmp, &input, &["--cluster", "df://127.0.0.1:50050"], "SELECT 1")
            .env("PROTOJIT_BALLISTA", &missing),
        None,
    );
    let line = fails(&out, 2);
    assert!(line.contains(&format!("PROTOJIT_BALLISTA={}", missing.display())), "{line}");
    assert!(line.contains("cargo install --path ballista"), "{line}");
}

/// `--cluster` hands the command to `protojit-ballista sql`: its arguments arrive in that
/// command's spelling, and its exit status, stdout and stderr are protojit's.
#[cfg(unix)]
#[test]
fn sql_cluster_hands_the_command_to_protojit_ballista() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("sql-cluster");
    let input = tmp.write("in.bin", &stream(3));
    let script = tmp.write(
        "fake-protojit-ballista",
        b"#!/bin/sh\nprintf '%s\\n' \"$@\"\necho 'from the cluster command' >&2\nexit 7\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let query = "SELECT COUNT(*) FROM r; SELECT -1";
    let extra = ["--cluster", "df://10.0.0.5:50050", "-o", "json", "--partitions", "3", "-I", "inc"];
    let out = run(sql_command(&tmp, &input, &extra, query).arg("-v").env("PROTOJIT_BALLISTA", &script), None);
    assert_eq!(out.status.code(), Some(7), "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "from the cluster command\n");
    let proto = tmp.path("sample.proto");
    let table = format!("r=sample.Reading:{}", input.display());
    let expect = [
        "sql",
        "--cluster",
        "df://10.0.0.5:50050",
        "--proto",
        proto.to_str().unwrap(),
        "-I",
        "inc",
        "--table",
        &table,
        "-o",
        "json",
        "--partitions",
        "3",
        "--verbose",
        "--",
        query,
    ];
    assert_eq!(stdout(&out), expect.map(|a| format!("{a}\n")).concat());
}

/// Repeated fields are list columns and maps map columns, and SQL reaches into them with
/// DataFusion's nested functions (index, field, key, `cardinality`, `array_has`); `substr`
/// comes with its Unicode functions. The README's telemetry sample, three times.
#[test]
fn sql_reaches_into_lists_maps_and_strings() {
    let tmp = TempDir::new("sql-nested");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let batch = std::fs::read(root.join("corpus/samples/batch.bin")).unwrap();
    let input = tmp.write("batches.bin", &delimited([&batch[..], &batch, &batch]));
    let proto = root.join("corpus/samples/telemetry.proto");
    let query = "SELECT samples[1]['sensor_id'] AS s1, get_field(samples[2], 'rssi_dbm') AS rssi2, \
                 labels['site'] AS site, cardinality(samples) AS n, array_has(error_codes, 17) AS has17, \
                 substr(device, 2, 3) AS sub FROM b";
    let mut cmd = protojit();
    cmd.arg("sql").arg("--proto").arg(&proto).arg("--table").arg(format!("b=Batch:{}", input.display()));
    let csv = stdout(&run(cmd.args(["-o", "csv", query]), None));
    let row = "1,-71,north field,3,true,ree\n";
    assert_eq!(csv, format!("s1,rssi2,site,n,has17,sub\n{row}{row}{row}"));
}

/// The mapping flags shape the tables' columns, and `COPY … TO … STORED AS PROTOBUF` writes a
/// query's rows back as records that decode to the same values.
#[test]
fn sql_mapping_flags_and_copy_to_protobuf() {
    let tmp = TempDir::new("sql-copy");
    let input = tmp.write("in.bin", &stream(500));
    let types = stdout(&sql(
        &tmp,
        &input,
        &["--enums", "string", "--large", "-o", "csv"],
        "SELECT arrow_typeof(color) AS c, arrow_typeof(label) AS l FROM r LIMIT 1",
    ));
    assert_eq!(types, "c,l\nLargeUtf8,LargeUtf8\n");
    let out = tmp.path("out");
    let copy = format!(
        "COPY (SELECT * FROM r WHERE id % 2 = 0) TO '{}/' STORED AS PROTOBUF OPTIONS ('message_type' 'sample.Reading')",
        out.display()
    );
    let written = stdout(&sql(&tmp, &input, &["-o", "csv"], &copy));
    assert_eq!(written, "count\n250\n");
    let back = format!(
        "CREATE EXTERNAL TABLE w STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'sample.Reading'); \
         SELECT COUNT(*) AS n, SUM(id) AS ids FROM w",
        out.display()
    );
    let ids: u64 = (1..=500u64).filter(|i| i % 2 == 0).sum();
    assert_eq!(stdout(&sql(&tmp, &input, &["-o", "csv"], &back)), format!("n,ids\n250,{ids}\n"));
    // A mapping option of the wrong value is one line naming it.
    let bad = sql(&tmp, &input, &["-o", "csv"], &back.replace("'sample.Reading')", "'sample.Reading', 'maps' 'list')"));
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("maps") && stderr.lines().count() == 1, "{stderr}");
}
