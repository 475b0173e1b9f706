//! `protojit sql`: results in every format (table, CSV, JSON, Parquet read back) and
//! one-line errors (bad query, missing file, bad --table, a record that does not decode).

mod support;

use protojit_arrow::arrow_array::RecordBatch;
use support::columns::{fails, read_parquet, stream};
use support::*;

const N: u32 = 20_000;

fn sql(tmp: &TempDir, input: &std::path::Path, extra: &[&str], query: &str) -> std::process::Output {
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let table = format!("r=sample.Reading:{}", input.display());
    run(protojit().arg("sql").arg("--proto").arg(proto).args(["--table", &table]).args(extra).arg(query), None)
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
    assert_eq!(fails(&out, 2), "--table broken: expected NAME=TYPE:FILE, as in events=pkg.Event:events.bin");
    // A record that does not decode fails the query with its number and offset.
    let mut bad = stream(10);
    bad.extend_from_slice(b"\x03\x12\x09x");
    let input = tmp.write("bad.bin", &bad);
    let line = fails(&sql(&tmp, &input, &[], "SELECT COUNT(*) FROM r"), 1);
    assert!(line.contains("record 11") && line.contains("stream byte offset"), "{line}");
}

#[test]
fn sql_help_has_examples() {
    let text = String::from_utf8(ok(&run(protojit().args(["sql", "--help"]), None))).unwrap();
    assert!(text.contains("Examples:\n") && text.contains("\n  protojit sql "), "{text}");
}
