//! `protojit decode -o arrow|parquet` and `protojit sql`: files that read back (Arrow IPC
//! and Parquet readers), projections, bad records with and without --keep-going (no
//! Parquet file that looks complete after a failure), and SQL results in every format.

mod support;

use std::fs::File;

use protojit_arrow::arrow_array::cast::AsArray;
use protojit_arrow::arrow_array::types::Int32Type;
use protojit_arrow::arrow_array::RecordBatch;
use protojit_arrow::arrow_ipc::reader::StreamReader;
use protojit_arrow::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use support::*;

const N: u32 = 20_000;

/// The one error line (without the `protojit: ` prefix) of a run that failed with `code`.
fn fails(out: &std::process::Output, code: i32) -> String {
    assert_fails(out, code).trim_start_matches("protojit: ").to_owned()
}

fn stream(n: u32) -> Vec<u8> {
    let records: Vec<Vec<u8>> = (1..=n).map(|id| reading(id, &format!("r{id}"), f64::from(id))).collect();
    delimited(records.iter().map(Vec::as_slice))
}

fn decode(tmp: &TempDir, input: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    run(protojit().arg("decode").arg("--proto").arg(proto).args(["--type", "Reading"]).args(extra).arg(input), None)
}

fn read_parquet(path: &std::path::Path) -> Vec<RecordBatch> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(Result::unwrap).collect()
}

/// The `id` column of `batches`, in order.
fn ids(batches: &[RecordBatch]) -> Vec<i32> {
    batches
        .iter()
        .flat_map(|b| {
            let i = b.schema().index_of("id").unwrap();
            b.column(i).as_primitive::<Int32Type>().values().to_vec()
        })
        .collect()
}

#[test]
fn parquet_output_reads_back() {
    let tmp = TempDir::new("parquet-out");
    let input = tmp.write("in.bin", &stream(N));
    let target = tmp.path("out.parquet");
    let out = decode(&tmp, &input, &["--delimited", "-o", "parquet", "--output-file", target.to_str().unwrap()]);
    ok(&out);
    let batches = read_parquet(&target);
    assert_eq!(ids(&batches), (1..=N as i32).collect::<Vec<_>>());
    // Batches of --batch-size rows (row groups of as many).
    assert!(batches.iter().all(|b| b.num_rows() <= 8192));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "label", "values", "color", "counts", "child", "big"]);
    assert!(std::fs::read_dir(&tmp.0).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("partial")));
}

#[test]
fn arrow_output_with_a_projection_reads_back() {
    let tmp = TempDir::new("arrow-out");
    let input = tmp.write("in.bin", &stream(N));
    let out = decode(
        &tmp,
        &input,
        &["--delimited", "-o", "arrow", "--select", "label", "--select", "id", "--batch-size", "1000"],
    );
    let bytes = ok(&out);
    let reader = StreamReader::try_new(bytes.as_slice(), None).unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), (N as usize).div_ceil(1000));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["label", "id"]);
    assert_eq!(ids(&batches), (1..=N as i32).collect::<Vec<_>>());
    assert_eq!(batches[1].column(0).as_string::<i32>().value(0), "r1001");
}

#[test]
fn bad_records_fail_without_leaving_a_parquet_file() {
    let tmp = TempDir::new("parquet-bad");
    let mut records: Vec<Vec<u8>> = (1..=100).map(|id| reading(id, "x", 1.0)).collect();
    records[41] = b"\x12\x09short".to_vec(); // record 42: a length past its end
    let input = tmp.write("in.bin", &delimited(records.iter().map(Vec::as_slice)));
    let target = tmp.path("out.parquet");
    let out = decode(&tmp, &input, &["--delimited", "-o", "parquet", "--output-file", target.to_str().unwrap()]);
    let line = fails(&out, 1);
    assert!(line.contains("record 42: cannot decode as sample.Reading"), "{line}");
    assert!(line.contains("byte offset"), "{line}");
    assert!(std::fs::read_dir(&tmp.0).unwrap().all(|e| {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        !name.contains("out.parquet")
    }));

    // --keep-going: reported (number and offset), skipped, exit 1 at the end, file complete.
    let out = decode(
        &tmp,
        &input,
        &["--delimited", "--keep-going", "-o", "parquet", "--output-file", target.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("record 42: cannot decode") && err.contains("1 record(s) did not decode"), "{err}");
    let got = ids(&read_parquet(&target));
    assert_eq!(got.len(), 99);
    assert!(!got.contains(&42));
}

#[test]
fn column_flags_are_checked() {
    let tmp = TempDir::new("arrow-usage");
    let input = tmp.write("in.bin", &stream(3));
    let line = fails(&decode(&tmp, &input, &["--delimited", "-o", "parquet"]), 2);
    assert_eq!(line, "--output parquet needs --output-file FILE");
    let line = fails(&decode(&tmp, &input, &["--delimited", "-o", "arrow", "--select", "values[0]"]), 2);
    assert!(line.starts_with("--select values[0]: with --output arrow or parquet"), "{line}");
    let line = fails(&decode(&tmp, &input, &["--delimited", "-o", "arrow", "--select", "nope"]), 2);
    assert_eq!(line, "cannot select `nope`: `sample.Reading` has no field `nope`");
    let line = fails(&decode(&tmp, &input, &["--delimited", "--output-file", "x"]), 2);
    assert!(line.starts_with("--output-file applies to --output arrow and parquet"), "{line}");
}

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
