//! `protojit decode-raw` against protoc 3.21.12's `--decode_raw`: the committed files in
//! tests/expected/raw/ were made by tests/expected/regen.sh with
//! `protoc --decode_raw < INPUT` on every corpus payload and on the edge cases in
//! tests/expected/raw/cases/ (`<case>.txt` is protoc's output; `<case>.fails` holds its
//! error, "Failed to parse input.", exit 1, for input it rejects).

mod support;

use support::*;

fn raw_dir() -> std::path::PathBuf {
    root().join("tests/expected/raw")
}

#[test]
fn every_corpus_payload_prints_what_protoc_prints() {
    let Some(dir) = corpus("every_corpus_payload_prints_what_protoc_prints") else { return };
    for (_, _, payload) in PAYLOADS {
        let out = run(protojit().arg("decode-raw").arg(dir.join(payload)), None);
        assert_expected(&raw_dir().join(payload), &ok(&out));
    }
    // protoc rejects the OSM file (a stream of 4-byte-length-prefixed blobs); so do we.
    assert!(raw_dir().join("osm-binary-sample.osm.pbf.fails").exists());
    let out = run(protojit().arg("decode-raw").arg(dir.join("osm-binary-sample.osm.pbf")), None);
    let line = assert_fails(&out, 1);
    assert!(
        line.contains("osm-binary-sample.osm.pbf: not a protobuf message: ") && line.contains("at byte offset 0"),
        "{line}"
    );
}

#[test]
fn edge_cases_match_protoc_and_failures_are_one_line() {
    let mut cases: Vec<_> = std::fs::read_dir(raw_dir().join("cases"))
        .expect("tests/expected/raw/cases (run tests/expected/regen.sh)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut failures = 0;
    for bin in cases {
        let stem = bin.with_extension("");
        let out = run(protojit().arg("decode-raw").arg(&bin), None);
        if stem.with_extension("fails").exists() {
            let line = assert_fails(&out, 1);
            assert!(
                line.contains("not a protobuf message") && line.contains("at byte offset"),
                "{}: {line}",
                bin.display()
            );
            failures += 1;
        } else {
            let txt = std::fs::read(stem.with_extension("txt")).unwrap();
            assert_same(&ok(&out), &txt, &bin.display().to_string());
        }
    }
    assert!(failures >= 10);
}

#[test]
fn malformed_input_names_the_fault_and_offset() {
    let cases: [(&[u8], &str); 7] = [
        (b"\x08\x01\x12\x09hi", "length prefix past the end of the message at byte offset 3"),
        (b"\x08\x96", "truncated value at byte offset 1"),
        (b"\x08\x01\x00\x01", "field number 0 at byte offset 2"),
        (b"\x0f\x01", "invalid wire type at byte offset 0"),
        (b"\x08\x01\x0c", "end-group tag without a matching start-group at byte offset 2"),
        (b"\x0b\x08\x01", "group not closed before the end of its message at byte offset 0"),
        (b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "varint longer than 10 bytes at byte offset 1"),
    ];
    for (bytes, want) in cases {
        let out = run(protojit().arg("decode-raw"), Some(bytes));
        let line = assert_fails(&out, 1);
        assert_eq!(line, format!("protojit: stdin: not a protobuf message: {want}"));
    }
    // Nesting: 100 groups parse (as in protoc), 101 do not.
    let deep = |n: usize| [vec![0x0b; n], vec![0x0c; n]].concat();
    ok(&run(protojit().arg("decode-raw").arg("-"), Some(&deep(100))));
    let line = assert_fails(&run(protojit().arg("decode-raw").arg("-"), Some(&deep(101))), 1);
    assert!(line.contains("deeper than the depth limit at byte offset 100"), "{line}");
}

/// Lengths and tags are 64-bit varints: a length of 2^32 or more lies past the end of any input
/// (it is not its value modulo 2^32), and a tag past 32 bits that protoc's parser does not read
/// as 32 bits names a field number past 2^29. The verdicts are protoc 3.21.12's
/// (`protoc --decode_raw` fails, "Failed to parse input.", on every rejected case here).
#[test]
fn lengths_and_tags_past_32_bits_are_not_truncated() {
    let rejected: [(&[u8], &str); 6] = [
        // Length 2^32: used to print `8: ""`.
        (b"\x42\x80\x80\x80\x80\x10", "length prefix past the end of the message at byte offset 1"),
        // Length 2^32 + 1 followed by one byte: used to print `8: "A"`.
        (b"\x42\x81\x80\x80\x80\x10\x41", "length prefix past the end of the message at byte offset 1"),
        // Length 2^63 (10-byte varint).
        (b"\x42\x80\x80\x80\x80\x80\x80\x80\x80\x01", "length prefix past the end of the message at byte offset 1"),
        // After a good field.
        (b"\x12\x02\x08\x01\x42\x81\x80\x80\x80\x10\x41", "length prefix past the end of the message at byte offset 5"),
        // Inside a group.
        (b"\x4b\x42\x80\x80\x80\x80\x10\x4c", "length prefix past the end of the message at byte offset 2"),
        // A 6-byte tag (its field number would be 2^32 + 1): used to print `1: 1`; protobuf
        // reads at most 5 bytes of a tag.
        (b"\x88\x80\x80\x80\x80\x01\x01", "tag longer than 5 bytes at byte offset 0"),
    ];
    for (bytes, want) in rejected {
        let out = run(protojit().arg("decode-raw"), Some(bytes));
        let line = assert_fails(&out, 1);
        assert_eq!(line, format!("protojit: stdin: not a protobuf message: {want}"), "input {bytes:02x?}");
    }
    let accepted: [(&[u8], &str); 3] = [
        // protoc's parser reads a tag of up to 5 bytes as 32 bits: bits 32-34 are dropped.
        (b"\x88\x80\x80\x80\x10\x01", "1: 1\n"),
        // A 5-byte length below 2^32 is fine.
        (b"\x42\x81\x80\x80\x80\x00\x41", "8: \"A\"\n"),
        // protoc's printer re-reads a length-delimited value as a message with 32-bit lengths
        // (CodedInputStream::ReadVarint32), so a nested length of 2^32 prints as 0 there.
        (b"\x32\x06\x0a\x80\x80\x80\x80\x10", "6 {\n  1: \"\"\n}\n"),
    ];
    for (bytes, want) in accepted {
        let out = run(protojit().arg("decode-raw"), Some(bytes));
        assert_eq!(String::from_utf8(ok(&out)).unwrap(), want, "input {bytes:02x?}");
    }
}

#[test]
fn stdin_and_missing_file() {
    let msg = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'];
    let want = "1: 150\n2 {\n  13: 105\n}\n";
    assert_eq!(stdout(&run(protojit().arg("decode-raw"), Some(&msg))), want);
    assert_eq!(stdout(&run(protojit().args(["decode-raw", "-"]), Some(&msg))), want);
    let tmp = TempDir::new("raw-missing");
    let line = assert_fails(&run(protojit().arg("decode-raw").arg(tmp.path("absent.bin")), None), 1);
    assert!(line.contains("absent.bin"), "{line}");
}

#[test]
fn delimited_raw_stream() {
    let a = [0x08, 0x01];
    let b = [0x12, 0x02, b'h', b'i'];
    let stream = delimited([&a[..], &b[..], &[][..]]);
    let out = run(protojit().args(["decode-raw", "--delimited"]), Some(&stream));
    assert_eq!(stdout(&out), "# record 1\n1: 1\n# record 2\n2 {\n  13: 105\n}\n# record 3\n");
    ok(&out);
    // A bad record: the records before it, then one line with record and offsets.
    let stream = delimited([&a[..], &[0x08, 0x96][..]]);
    let out = run(protojit().args(["decode-raw", "--delimited"]), Some(&stream));
    let line = one_line_error(&out, 1);
    assert_eq!(
        line,
        "protojit: stdin: record 2: not a protobuf message: truncated value at byte offset 5 (1 bytes into the record, which starts at byte offset 4)"
    );
    assert_eq!(stdout(&out), "# record 1\n1: 1\n");
    // Truncated framing.
    let out = run(protojit().args(["decode-raw", "--delimited"]), Some(&[0x02, 0x08, 0x01, 0x05, 0x08]));
    let line = one_line_error(&out, 1);
    assert!(
        line.contains("record 2: truncated stream") && line.contains("byte offset 3 announces 5 bytes, only 1 remain"),
        "{line}"
    );
}
