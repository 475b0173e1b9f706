//! `protojit encode`: text format and JSON to binary, normalising, streams and their errors,
//! and `decode | encode` round trips on every corpus payload.

mod support;

use support::*;

fn sample(dir: &TempDir) -> Vec<String> {
    let proto = dir.write("sample.proto", SAMPLE_PROTO.as_bytes());
    vec!["--proto".into(), proto.display().to_string()]
}

#[test]
fn text_and_json_to_the_canonical_bytes() {
    let dir = TempDir::new("encode-basic");
    let flags = sample(&dir);
    // reading(4, ..): color RED (4 % 3), counts { n: 5 }, big 1 << 40 | 4.
    let want = reading(4, "hi", 1.5);
    let text = "id: 4 label: 'hi' values: 1.5 color: RED counts { key: 'n' value: 5 } big: 1099511627780";
    let out = run(protojit().arg("encode").args(&flags).args(["--type", "Reading"]), Some(text.as_bytes()));
    assert_same(&ok(&out), &want, "text from stdin");
    let json = dir.write(
        "r.json",
        br#"{"big": "1099511627780", "counts": {"n": "5"}, "color": "RED", "values": [1.5], "label": "hi", "id": 4}"#,
    );
    let bin = dir.path("r.bin");
    let out = run(
        protojit()
            .arg("encode")
            .args(&flags)
            .args(["--type", "sample.Reading", "--from", "json"])
            .arg(&json)
            .arg("--output-file")
            .arg(&bin),
        None,
    );
    assert!(ok(&out).is_empty());
    assert_same(&std::fs::read(&bin).unwrap(), &want, "JSON from a file");
    // Normalising: JSON in, text out.
    let out = run(
        protojit().arg("encode").args(&flags).args(["--type", "Reading", "--from", "json", "-o", "text"]).arg(&json),
        None,
    );
    assert_eq!(
        stdout(&out),
        "id: 4\nlabel: \"hi\"\nvalues: 1.5\ncolor: RED\ncounts {\n  key: \"n\"\n  value: 5\n}\nbig: 1099511627780\n"
    );
}

#[test]
fn errors_are_one_line_with_position() {
    let dir = TempDir::new("encode-errors");
    let flags = sample(&dir);
    let out = run(protojit().arg("encode").args(&flags).args(["--type", "Reading"]), Some(b"id: 1\nlabel: 3"));
    let line = assert_fails(&out, 1);
    assert_eq!(line, "protojit: stdin:2:8: text format: expected a string, found \"3\"");
    let out = run(
        protojit().arg("encode").args(&flags).args(["--type", "Reading", "--from", "json"]),
        Some(b"{\"id\": \"x\"}"),
    );
    let line = assert_fails(&out, 1);
    // serde_json places an error in a value at the value's last character (the closing quote).
    assert!(line.starts_with("protojit: stdin:1:10: JSON: "), "{line}");
    let out = run(protojit().arg("encode").args(&flags).args(["--type", "Nope"]), Some(b""));
    assert_fails(&out, 2);
}

#[test]
fn streams_and_keep_going() {
    let dir = TempDir::new("encode-streams");
    let flags = sample(&dir);
    let jsonl = b"{\"id\": 1}\n\n{\"id\": 2, \"label\": 7}\n{\"id\": 3}\n";
    let out = run(
        protojit().arg("encode").args(&flags).args(["--type", "Reading", "--from", "json", "--delimited"]),
        Some(jsonl),
    );
    let line = one_line_error(&out, 1);
    assert!(line.starts_with("protojit: stdin:3:") && line.contains("record 2: JSON:"), "{line}");
    assert_eq!(out.stdout, delimited([&[0x08, 1][..]]));
    let out = run(
        protojit().arg("encode").args(&flags).args([
            "--type",
            "Reading",
            "--from",
            "json",
            "--delimited",
            "--keep-going",
        ]),
        Some(jsonl),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, delimited([&[0x08, 1][..], &[0x08, 3]]));
    let err = stderr(&out);
    assert!(err.contains("record 2") && err.contains("1 of 3 records could not be encoded"), "{err}");
    // Text records as `decode --delimited` writes them.
    let text = b"# record 1\nid: 1\n# record 2\nid: 2\nlabel: 'x'\n";
    let out = run(protojit().arg("encode").args(&flags).args(["--type", "Reading", "--delimited"]), Some(text));
    assert_eq!(ok(&out), delimited([&[0x08, 1][..], &[0x08, 2, 0x12, 1, b'x']]));
}

#[test]
fn decode_then_encode_gives_the_canonical_bytes_of_every_corpus_payload() {
    let Some(dir) = corpus("decode_then_encode_gives_the_canonical_bytes_of_every_corpus_payload") else { return };
    for (proto, type_name, payload) in PAYLOADS {
        let flags = schema_flags(&dir, proto);
        // The canonical bytes: decode to binary re-encodes.
        let canonical = ok(&run(
            protojit().arg("decode").args(&flags).args(["--type", type_name, "-o", "binary"]).arg(dir.join(payload)),
            None,
        ));
        for (out_format, from) in [("text", "text"), ("json", "json")] {
            let rendered = ok(&run(
                protojit()
                    .arg("decode")
                    .args(&flags)
                    .args(["--type", type_name, "-o", out_format])
                    .arg(dir.join(payload)),
                None,
            ));
            let back = ok(&run(
                protojit().arg("encode").args(&flags).args(["--type", type_name, "--from", from]),
                Some(&rendered),
            ));
            assert_same(&back, &canonical, &format!("{payload} through {out_format}"));
        }
    }
}
