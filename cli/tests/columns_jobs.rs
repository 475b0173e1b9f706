//! `protojit decode --delimited --jobs N -o arrow|parquet`: the Arrow stream and the
//! Parquet file are byte for byte the ones one thread writes, also with bad records
//! (with and without --keep-going) and a truncated stream.
#![cfg(feature = "columns")]

mod support;

use protojit_arrow::arrow_ipc::reader::StreamReader;
use protojit_arrow::RecordBatch;
use support::columns::{fails, ids, read_parquet, stream};
use support::*;

fn decode(tmp: &TempDir, input: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(proto)
            .args(["--type", "Reading", "--delimited"])
            .args(extra)
            .arg(input),
        None,
    )
}

/// What a run wrote: the Parquet file's bytes (`None` if it left no file), or stdout.
fn output(
    tmp: &TempDir,
    input: &std::path::Path,
    format: &str,
    jobs: &str,
    extra: &[&str],
) -> (std::process::Output, Option<Vec<u8>>) {
    let target = tmp.path(&format!("out-{format}-{jobs}.parquet"));
    let _ = std::fs::remove_file(&target);
    let mut args = vec!["-o", format, "--jobs", jobs];
    if format == "parquet" {
        args.extend(["--output-file", target.to_str().unwrap()]);
    }
    args.extend(extra);
    let out = decode(tmp, input, &args);
    let bytes = if format == "parquet" { std::fs::read(&target).ok() } else { Some(out.stdout.clone()) };
    (out, bytes)
}

#[test]
fn every_thread_count_writes_the_same_bytes() {
    let tmp = TempDir::new("columns-jobs");
    let n = 20_000;
    let input = tmp.write("in.bin", &stream(n));
    for format in ["arrow", "parquet"] {
        // 20 batches of 1,000 rows, and one batch that is not full.
        for extra in [&["--batch-size", "1000"][..], &["--batch-size", "777", "--enum-numbers"]] {
            let (one, want) = output(&tmp, &input, format, "1", extra);
            ok(&one);
            let want = want.expect("--jobs 1 wrote its output");
            for jobs in ["2", "3", "0"] {
                let (out, got) = output(&tmp, &input, format, jobs, extra);
                ok(&out);
                assert!(got.as_ref() == Some(&want), "-o {format} {extra:?}: --jobs {jobs} differs from --jobs 1");
            }
        }
    }
    // And the file holds every record, in order.
    let target = tmp.path("check.parquet");
    ok(&decode(&tmp, &input, &["-o", "parquet", "--jobs", "2", "--output-file", target.to_str().unwrap()]));
    assert_eq!(ids(&read_parquet(&target)), (1..=n as i32).collect::<Vec<_>>());
}

/// Big records (300 KB each) make work items of a few records each (an item of Parquet
/// output closes at 1 MiB of input): the file is the same whatever cuts the items (one
/// record each with `--batch-size 1`, the byte limit, more threads), and holds every
/// record in order.
#[test]
fn parquet_of_big_records_does_not_depend_on_the_items() {
    let tmp = TempDir::new("columns-jobs-big");
    let label = "x".repeat(300_000);
    let records: Vec<Vec<u8>> = (1..=12).map(|id| reading(id, &label, f64::from(id))).collect();
    let input = tmp.write("in.bin", &delimited(records.iter().map(Vec::as_slice)));
    let (one, want) = output(&tmp, &input, "parquet", "1", &["--batch-size", "1"]);
    ok(&one);
    let want = want.expect("--jobs 1 wrote its file");
    for (jobs, extra) in [("1", &[][..]), ("2", &[][..]), ("3", &["--batch-size", "5"][..])] {
        let (out, got) = output(&tmp, &input, "parquet", jobs, extra);
        ok(&out);
        assert!(got.as_ref() == Some(&want), "--jobs {jobs} {extra:?}: another file than one record an item");
    }
    let target = tmp.path("check.parquet");
    ok(&decode(&tmp, &input, &["-o", "parquet", "--jobs", "2", "--output-file", target.to_str().unwrap()]));
    assert_eq!(ids(&read_parquet(&target)), (1..=12).collect::<Vec<_>>());
}

/// An Arrow stream of big records: a batch closes once its records hold 8 MiB of input
/// (`STREAM_BATCH_INPUT`), however many rows `--batch-size` allows, and the stream is the
/// same at every `--jobs`.
#[test]
fn arrow_batches_of_big_records_close_at_their_input_limit() {
    let tmp = TempDir::new("columns-jobs-arrow-big");
    let label = "y".repeat(1 << 20);
    let records: Vec<Vec<u8>> = (1..=20).map(|id| reading(id, &label, f64::from(id))).collect();
    let input = tmp.write("in.bin", &delimited(records.iter().map(Vec::as_slice)));
    let (one, want) = output(&tmp, &input, "arrow", "1", &[]);
    ok(&one);
    let want = want.expect("stdout");
    let batches: Vec<RecordBatch> = StreamReader::try_new(want.as_slice(), None).unwrap().map(Result::unwrap).collect();
    // Each record is a little over 1 MiB: the eighth reaches the limit.
    assert_eq!(batches.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [8, 8, 4]);
    assert_eq!(ids(&batches), (1..=20).collect::<Vec<_>>());
    let (two, got) = output(&tmp, &input, "arrow", "2", &[]);
    ok(&two);
    assert!(got.as_ref() == Some(&want), "--jobs 2 wrote another stream");
}

/// Bad records at 42 and 1,500 of 2,000 (batches of 100): without --keep-going the run
/// fails at record 42 and leaves no Parquet file; with it both are reported, in order, and
/// the output is what one thread writes.
#[test]
fn bad_records_are_reported_as_on_one_thread() {
    let tmp = TempDir::new("columns-jobs-bad");
    let mut records: Vec<Vec<u8>> = (1..=2000).map(|id| reading(id, "x", 1.0)).collect();
    records[41] = b"\x12\x09short".to_vec();
    records[1499] = b"\x12\x09short".to_vec();
    let input = tmp.write("in.bin", &delimited(records.iter().map(Vec::as_slice)));
    for format in ["arrow", "parquet"] {
        // An Arrow stream on stdout holds the batches before the failure's.
        let (one, _) = output(&tmp, &input, format, "1", &["--batch-size", "100"]);
        let want = one_line_error(&one, 1);
        assert!(want.contains("record 42: cannot decode as sample.Reading"), "{want}");
        let (two, file) = output(&tmp, &input, format, "2", &["--batch-size", "100"]);
        assert_eq!(one_line_error(&two, 1), want, "-o {format}");
        assert!(two.stdout == one.stdout, "-o {format}: --jobs 2 wrote other bytes before the failure");
        if format == "parquet" {
            assert!(file.is_none(), "a failed run left a Parquet file");
        }

        let keep = ["--batch-size", "100", "--keep-going"];
        let (one, want) = output(&tmp, &input, format, "1", &keep);
        assert_eq!(one.status.code(), Some(1));
        let (two, got) = output(&tmp, &input, format, "2", &keep);
        assert_eq!(two.status.code(), Some(1));
        assert_eq!(stderr(&two), stderr(&one), "-o {format}");
        let err = stderr(&two);
        let first = err.find("record 42: cannot decode").expect("record 42 reported");
        let second = err.find("record 1500: cannot decode").expect("record 1500 reported");
        assert!(first < second && err.contains("2 record(s) did not decode"), "{err}");
        assert!(got.is_some() && got == want, "-o {format} --keep-going: --jobs 2 differs from --jobs 1");
    }
}

/// A stream cut inside its last record fails with the framing error, as on one thread.
#[test]
fn a_truncated_stream_fails_as_on_one_thread() {
    let tmp = TempDir::new("columns-jobs-cut");
    let full = stream(3000);
    let input = tmp.write("in.bin", &full[..full.len() - 3]);
    for format in ["arrow", "parquet"] {
        let (one, _) = output(&tmp, &input, format, "1", &["--batch-size", "100"]);
        let want = one_line_error(&one, 1);
        assert!(want.contains("record 3000: truncated stream"), "{want}");
        let (two, file) = output(&tmp, &input, format, "2", &["--batch-size", "100"]);
        assert_eq!(one_line_error(&two, 1), want, "-o {format}");
        assert!(two.stdout == one.stdout, "-o {format}: --jobs 2 wrote other bytes before the failure");
        if format == "parquet" {
            assert!(file.is_none(), "a failed run left a Parquet file");
        }
    }
}

#[test]
fn jobs_need_a_stream() {
    let tmp = TempDir::new("columns-jobs-usage");
    let input = tmp.write("one.bin", &reading(1, "x", 1.0));
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let out = run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(proto)
            .args(["--type", "Reading", "-o", "arrow", "--jobs", "2"])
            .arg(&input),
        None,
    );
    assert_eq!(fails(&out, 2), "--jobs and --keep-going apply to --delimited streams");
}
