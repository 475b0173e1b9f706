//! `protojit decode --delimited`: varint-length-delimited streams, `--jobs` (same output
//! as one thread), `--keep-going`, truncated streams, progress on stderr, and a reader
//! that closes the pipe early. Per-record text is compared with protoc 3.21.12's
//! `--decode` output (tests/expected/*.txt, made by tests/expected/regen.sh).

mod support;

use std::io::Read;
use std::process::Stdio;

use support::*;

/// A stream whose size cannot repay compiling its type (`Tiering::for_input`) is decoded on
/// the interpreter, which --verbose says in one note; `--engine jit` compiles anyway.
#[test]
fn small_stream_is_not_compiled_and_says_so() {
    let tmp = TempDir::new("small_stream");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let stream = generated_stream(1000);
    let input = tmp.write("stream.bin", &stream);
    let verbose = |engine: &str| {
        let mut cmd = protojit();
        cmd.args(["-v", "decode", "--proto"]).arg(&proto).args([
            "--type",
            "Reading",
            "--delimited",
            "--engine",
            engine,
        ]);
        run(cmd.arg(&input), None)
    };
    let auto = verbose("auto");
    let err = stderr(&auto);
    let want = format!("protojit: note: {} bytes of input cannot repay compiling sample.Reading (about ", stream.len());
    assert!(err.starts_with(&want) && err.ends_with(" would): decoding on the interpreter\n"), "{err:?}");
    assert_eq!(err.matches('\n').count(), 1, "{err:?}");
    let jit = verbose("jit");
    assert_eq!(stderr(&jit), "", "--engine jit decides for itself");
    assert!(auto.status.success() && !auto.stdout.is_empty() && auto.stdout == ok(&jit));
}

/// A compressed stream is read as its name says (`.gz`, `.zst`, `.bz2`, `.xz`), and under
/// another name by its first bytes; `--compression` names the format outright, and `none`
/// reads the bytes as they are (which then do not split into records).
#[test]
fn compressed_streams_by_name_and_by_first_bytes() {
    use std::io::Write;
    let tmp = TempDir::new("compressed_stream");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let stream = generated_stream(300);
    let want = ok(&decode_stream(&proto, &tmp.write("stream.bin", &stream), &[]));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&stream).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&stream[..], 3).unwrap();
    for (name, bytes, extra) in [
        ("s.bin.gz", &gz, &[][..]),
        ("s.gz.data", &gz, &[]),
        ("s.bin.zst", &zst, &[]),
        ("s.raw", &zst, &[]),
        ("s.data", &gz, &["--compression", "gzip"]),
    ] {
        let out = decode_stream(&proto, &tmp.write(name, bytes), extra);
        assert_eq!(ok(&out), want, "{name} {extra:?}");
    }
    let raw = decode_stream(&proto, &tmp.write("t.bin.gz", &gz), &["--compression", "none"]);
    assert!(!raw.status.success(), "gzip bytes read raw do not split into records");
    let err = stderr(&raw);
    assert_eq!(err.matches('\n').count(), 1, "{err}");
    assert!(err.contains("starts with gzip's magic bytes") && err.contains("--compression gzip reads it"), "{err}");
}

/// `n` small generated records (ids from 1), as a delimited stream.
fn generated_stream(n: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for id in 1..=n {
        let r = reading(id, &format!("r{id}"), f64::from(id) / 4.0);
        varint(&mut out, r.len() as u64);
        out.extend_from_slice(&r);
    }
    out
}

fn decode_stream(proto: &std::path::Path, input: &std::path::Path, extra: &[&str]) -> std::process::Output {
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

/// The acceptance test: 100k generated records decode on two threads to exactly the
/// output of one thread, in every output form.
#[test]
fn jobs_2_prints_what_jobs_1_prints_for_100k_records() {
    let tmp = TempDir::new("jobs");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    const N: u32 = 100_000;
    let stream = generated_stream(N);
    let input = tmp.write("stream.bin", &stream);
    for output in ["text", "jsonl", "binary"] {
        let one = ok(&decode_stream(&proto, &input, &["--output", output, "--jobs", "1"]));
        let two = ok(&decode_stream(&proto, &input, &["--output", output, "--jobs", "2"]));
        assert!(one == two, "--output {output}: --jobs 2 differs from --jobs 1");
        match output {
            "text" => {
                let text = String::from_utf8(one).unwrap();
                assert_eq!(text.matches("# record ").count(), N as usize);
                assert!(
                    text.starts_with("# record 1\nid: 1\nlabel: \"r1\"\nvalues: 0.25\ncolor: RED\n"),
                    "{}",
                    &text[..200]
                );
                assert!(text.contains("# record 100000\nid: 100000\nlabel: \"r100000\"\nvalues: 25000\ncolor: RED\n"));
            }
            "jsonl" => {
                let text = String::from_utf8(one).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                assert_eq!(lines.len(), N as usize);
                for (i, line) in lines.iter().enumerate().step_by(9973) {
                    let v: serde_json::Value = serde_json::from_str(line).unwrap();
                    assert_eq!(v["id"], i as u64 + 1, "{line}");
                }
            }
            // The generated records are canonical, so the re-encoded stream is the input.
            _ => assert!(one == stream, "--output binary --delimited re-encodes the stream"),
        }
    }
    // Compiled code on both threads prints the same (this stream alone is too small for
    // tiering to compile its type: see the next test).
    let jit = ok(&decode_stream(&proto, &input, &["--output", "text", "--jobs", "2", "--engine", "jit"]));
    let interp = ok(&decode_stream(&proto, &input, &["--output", "text", "--jobs", "1", "--engine", "interp"]));
    assert!(jit == interp, "--engine jit --jobs 2 differs from --engine interp");
    // --select, and all CPUs (--jobs 0), the same way.
    let one = ok(&decode_stream(&proto, &input, &["--select", "label", "--select", "counts[\"n\"]"]));
    let all = ok(&decode_stream(&proto, &input, &["--select", "label", "--select", "counts[\"n\"]", "--jobs", "0"]));
    assert!(one == all);
    assert_eq!(one.iter().filter(|&&b| b == b'\n').count(), 2 * N as usize);
    assert!(one.starts_with(b"\"r1\"\n2\n\"r2\"\n3\n"));
    // The workers read their items from the input in turn: from a pipe (short reads, records
    // cut across them) and through a decompressor, the same records come out.
    let text = ok(&decode_stream(&proto, &input, &["--jobs", "1"]));
    let piped = ok(&run(
        protojit().arg("decode").arg("--proto").arg(&proto).args([
            "--type",
            "Reading",
            "--delimited",
            "--jobs",
            "2",
            "-",
        ]),
        Some(&stream),
    ));
    assert!(piped == text, "--jobs 2 from stdin differs from --jobs 1 from the file");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &stream).unwrap();
    let gz = tmp.write("stream.bin.gz", &gz.finish().unwrap());
    assert!(ok(&decode_stream(&proto, &gz, &["--jobs", "2"])) == text, "--jobs 2 from .gz differs");
}

#[test]
fn corpus_tiles_as_a_stream_print_what_protoc_prints_per_record() {
    let Some(dir) = corpus("corpus_tiles_as_a_stream_print_what_protoc_prints_per_record") else { return };
    let tiles = [
        "mvt-chicago-13-2101-3044.mvt",
        "mvt-sanfrancisco-15-5238-12666.mvt",
        "vector-tile-js-14-8801-5371.vector.pbf",
    ];
    let payloads: Vec<Vec<u8>> = tiles.iter().map(|t| std::fs::read(dir.join(t)).unwrap()).collect();
    let stream = delimited(payloads.iter().map(Vec::as_slice));
    let mut want = Vec::new();
    for (i, t) in tiles.iter().enumerate() {
        want.extend_from_slice(format!("# record {}\n", i + 1).as_bytes());
        want.extend_from_slice(&std::fs::read(root().join("tests/expected").join(format!("{t}.txt"))).unwrap());
    }
    for jobs in ["1", "2"] {
        let out = run(
            protojit().arg("decode").args(schema_flags(&dir, "vector_tile.proto")).args([
                "--type",
                "vector_tile.Tile",
                "--delimited",
                "--jobs",
                jobs,
                "-",
            ]),
            Some(&stream),
        );
        assert_same(&ok(&out), &want, &format!("tile stream, --jobs {jobs}"));
    }
    // As one JSON array of the three tiles.
    let out = run(
        protojit().arg("decode").args(schema_flags(&dir, "vector_tile.proto")).args([
            "--type",
            "Tile",
            "--delimited",
            "-o",
            "json",
            "-",
        ]),
        Some(&stream),
    );
    let v: serde_json::Value = serde_json::from_slice(&ok(&out)).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(3));
}

#[test]
fn json_forms_of_a_stream() {
    let tmp = TempDir::new("json-stream");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("s.bin", &generated_stream(3));
    let json = String::from_utf8(ok(&decode_stream(&proto, &input, &["-o", "json"]))).unwrap();
    assert!(json.starts_with("[\n{\"id\":1,") && json.ends_with("}\n]\n"), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 3);
    let pretty = String::from_utf8(ok(&decode_stream(&proto, &input, &["-o", "json-pretty"]))).unwrap();
    let p: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    assert_eq!(p, v);
    assert!(pretty.contains("\n  \"id\": 2,"), "{pretty}");
    let jsonl = String::from_utf8(ok(&decode_stream(&proto, &input, &["-o", "jsonl"]))).unwrap();
    let lines: Vec<serde_json::Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(&lines[..], v.as_array().unwrap().as_slice());
    // An empty stream: an empty array, no lines.
    let empty = tmp.write("empty.bin", b"");
    assert_eq!(ok(&decode_stream(&proto, &empty, &["-o", "json"])), b"[]\n");
    assert_eq!(ok(&decode_stream(&proto, &empty, &["-o", "jsonl"])), b"");
    assert_eq!(ok(&decode_stream(&proto, &empty, &[])), b"");
}

/// A stream whose records 3 and 5 do not decode (the framing is intact).
fn stream_with_bad_records() -> Vec<u8> {
    let bad = vec![0x08, 0x01, 0x12, 0x09, b'x'];
    let records: Vec<Vec<u8>> =
        (1..=6).map(|i| if i == 3 || i == 5 { bad.clone() } else { reading(i, "ok", 1.0) }).collect();
    delimited(records.iter().map(Vec::as_slice))
}

#[test]
fn malformed_record_names_record_and_offsets() {
    let tmp = TempDir::new("bad-record");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let stream = stream_with_bad_records();
    let input = tmp.write("records.bin", &stream);
    let start3 = 2 * (1 + reading(1, "ok", 1.0).len()) + 1;
    for jobs in ["1", "2"] {
        let out = decode_stream(&proto, &input, &["--jobs", jobs, "-o", "jsonl"]);
        let line = one_line_error(&out, 1);
        assert!(line.contains("records.bin: record 3: cannot decode as sample.Reading"), "{line}");
        assert!(
            line.contains(&format!(
                "at byte offset {} (3 bytes into the record, which starts at byte offset {start3})",
                start3 + 3
            )),
            "{line}"
        );
        // The records before it were printed.
        assert_eq!(stdout(&out).lines().count(), 2, "--jobs {jobs}");
    }
}

#[test]
fn keep_going_reports_each_bad_record_and_continues() {
    let tmp = TempDir::new("keep-going");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("records.bin", &stream_with_bad_records());
    let mut outputs = Vec::new();
    for jobs in ["1", "2"] {
        let out = decode_stream(&proto, &input, &["--keep-going", "--jobs", jobs, "--select", "id"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(stdout(&out), "1\n2\n4\n6\n");
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 3, "{err}");
        assert!(lines[0].starts_with("protojit: ") && lines[0].contains("record 3: cannot decode"), "{err}");
        assert!(lines[1].contains("record 5: cannot decode"), "{err}");
        assert!(lines[2].contains("2 of 6 records could not be decoded as sample.Reading"), "{err}");
        outputs.push(out.stdout);
    }
    assert_eq!(outputs[0], outputs[1]);
    // --keep-going needs --delimited (usage error, exit 2).
    let out = run(
        protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--keep-going"]).arg(&input),
        None,
    );
    assert_fails(&out, 2);
}

#[test]
fn truncated_stream_is_one_line_with_record_and_offset() {
    let tmp = TempDir::new("truncated");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let stream = generated_stream(10);
    let first = 1 + reading(1, "r1", 0.25).len();
    // Cut inside record 2's payload, then inside a length prefix of 2 bytes.
    let cut = tmp.write("cut.bin", &stream[..first + 5]);
    for jobs in ["1", "2"] {
        let out = decode_stream(&proto, &cut, &["--jobs", jobs]);
        let line = one_line_error(&out, 1);
        assert!(line.contains("cut.bin: record 2: truncated stream of sample.Reading"), "{line}");
        assert!(line.contains(&format!("the length prefix at byte offset {first} announces")), "{line}");
        assert!(line.contains("only 4 remain"), "{line}");
        assert!(stdout(&out).starts_with("# record 1\nid: 1\n") && !stdout(&out).contains("record 2"));
    }
    let mut prefix_cut = stream[..first].to_vec();
    prefix_cut.push(0x80);
    let out = run(
        protojit().arg("decode").arg("--proto").arg(&proto).args([
            "--type",
            "Reading",
            "--delimited",
            "-o",
            "jsonl",
            "-",
        ]),
        Some(&prefix_cut),
    );
    let line = one_line_error(&out, 1);
    assert!(
        line.contains("stdin: record 2: truncated stream") && line.contains(&format!("byte offset {first} is cut off")),
        "{line}"
    );
    assert_eq!(stdout(&out).lines().count(), 1);
    // A length prefix that is not a varint at all.
    let out = run(
        protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--delimited", "-"]),
        Some(&[0xff; 12]),
    );
    let line = assert_fails(&out, 1);
    assert!(line.contains("record 1") && line.contains("longer than 10 bytes"), "{line}");
}

#[test]
fn missing_stream_file() {
    let tmp = TempDir::new("missing-stream");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let out = decode_stream(&proto, &tmp.path("absent.bin"), &[]);
    assert!(assert_fails(&out, 1).contains("absent.bin"));
}

#[test]
fn progress_is_silent_unless_asked_for() {
    let tmp = TempDir::new("progress");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("s.bin", &generated_stream(2000));
    // stderr is a pipe here: silent by default and with --quiet.
    assert!(decode_stream(&proto, &input, &[]).stderr.is_empty());
    assert!(decode_stream(&proto, &input, &["--quiet"]).stderr.is_empty());
    let out = decode_stream(&proto, &input, &["--progress", "--jobs", "2"]);
    assert!(out.status.success());
    let err = stderr(&out);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("protojit: 2,000 records, ") && last.contains("MB/s"), "{err:?}");
    assert!(!err.contains('\r'), "no terminal, no redraws: {err:?}");
    // A single message reports too when asked.
    let one = tmp.write("one.bin", &reading(1, "a", 1.0));
    let out = run(
        protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--progress"]).arg(&one),
        None,
    );
    assert!(stderr(&out).starts_with("protojit: 1 record, "), "{}", stderr(&out));
    // --quiet and --progress contradict each other: clap's usage error.
    assert_eq!(decode_stream(&proto, &input, &["--quiet", "--progress"]).status.code(), Some(2));
}

#[test]
fn closed_stdout_ends_quietly() {
    let tmp = TempDir::new("closed-stdout");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("s.bin", &generated_stream(100_000));
    for (flags, sub) in [
        (&["--jobs", "1"][..], "decode"),
        (&["--jobs", "2", "-o", "jsonl"], "decode"),
        (&["--select", "label"], "decode"),
        (&["--delimited"], "decode-raw"),
    ] {
        let mut cmd = protojit();
        if sub == "decode" {
            cmd.arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--delimited"]);
        } else {
            cmd.arg("decode-raw");
        }
        let mut child = cmd
            .args(flags)
            .arg(&input)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        // Read a little, like `| head -c 100`, then close the pipe.
        let mut head = [0u8; 100];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{sub} {flags:?}: {status:?}, stderr {err:?}");
        assert!(err.is_empty(), "{sub} {flags:?}: stderr {err:?}");
    }
}
