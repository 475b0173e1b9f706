//! `protojit decode` flags end to end: text against protoc 3.21.12's `--decode` output
//! (the committed files in tests/expected/, made by tests/expected/regen.sh with
//! `protoc -I<corpus> --decode=<type> <proto> < <payload>`), JSON against prost-reflect's
//! serde output, canonical binary, `--select`, schema flags, engine flags.

mod support;

use std::path::Path;

use prost_reflect::{DescriptorPool, DynamicMessage, SerializeOptions};
use support::*;

/// prost-reflect's JSON for `bytes` as `type_name`, as a `serde_json::Value` (so that map
/// order, which prost-reflect leaves to its hash map, does not matter).
fn prost_json(pool: &DescriptorPool, type_name: &str, bytes: &[u8], options: &SerializeOptions) -> serde_json::Value {
    let desc = pool.get_message_by_name(type_name).unwrap_or_else(|| panic!("{type_name} not in pool"));
    let msg = DynamicMessage::decode(desc, bytes).unwrap();
    let mut buf = Vec::new();
    msg.serialize_with_options(&mut serde_json::Serializer::new(&mut buf), options).unwrap();
    serde_json::from_slice(&buf).unwrap()
}

fn corpus_pool(dir: &Path, proto: &str) -> DescriptorPool {
    let schema = if proto == "descriptor.proto" {
        protojit::Schema::from_descriptor_set(&std::fs::read(dir.join("descriptor.fds.bin")).unwrap()).unwrap()
    } else {
        protojit::Schema::from_proto_files(&[dir.join(proto)], &[dir]).unwrap()
    };
    schema.pool().clone()
}

fn sample_pool() -> DescriptorPool {
    protojit::Schema::from_proto_source("sample.proto", SAMPLE_PROTO).unwrap().pool().clone()
}

fn json_of(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

#[test]
fn text_output_matches_protoc_on_every_corpus_payload() {
    let Some(dir) = corpus("text_output_matches_protoc_on_every_corpus_payload") else { return };
    for (proto, type_name, payload) in PAYLOADS {
        let out = run(
            protojit().arg("decode").args(schema_flags(&dir, proto)).args(["--type", type_name]).arg(dir.join(payload)),
            None,
        );
        assert_expected(&root().join("tests/expected").join(payload), &ok(&out));
    }
}

#[test]
fn json_matches_prost_reflect_on_every_corpus_payload() {
    let Some(dir) = corpus("json_matches_prost_reflect_on_every_corpus_payload") else { return };
    for (proto, type_name, payload) in PAYLOADS {
        let pool = corpus_pool(&dir, proto);
        let bytes = std::fs::read(dir.join(payload)).unwrap();
        let want = prost_json(&pool, type_name, &bytes, &SerializeOptions::new());
        let base = || {
            let mut c = protojit();
            c.arg("decode").args(schema_flags(&dir, proto)).args(["--type", type_name]).arg(dir.join(payload));
            c
        };
        let compact = ok(&run(base().args(["--output", "json"]), None));
        assert_eq!(compact.iter().filter(|&&b| b == b'\n').count(), 1, "{payload}: compact JSON is one line");
        assert!(json_of(&compact) == want, "{payload}: --output json differs from prost-reflect");
        // jsonl: the same line; json-pretty: the same value, indented.
        assert_eq!(ok(&run(base().args(["--output", "jsonl"]), None)), compact, "{payload}");
        let pretty = ok(&run(base().args(["--output", "json-pretty"]), None));
        assert!(pretty.starts_with(b"{\n  ") || pretty == b"{}\n", "{payload}: not indented");
        assert!(json_of(&pretty) == want, "{payload}: --output json-pretty differs from prost-reflect");
    }
}

#[test]
fn json_flags_match_prost_reflect_options() {
    let tmp = TempDir::new("json-flags");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let pool = sample_pool();
    // Two records' worth of fields, one of them holding defaults.
    let mut bytes = reading(4, "four", 0.5);
    bytes.extend_from_slice(&[0x32, 0x00]); // child {} (all defaults)
    let cases: [(&[&str], SerializeOptions); 5] = [
        (&[], SerializeOptions::new()),
        (&["--emit-defaults"], SerializeOptions::new().skip_default_fields(false)),
        (&["--proto-names"], SerializeOptions::new().use_proto_field_name(true)),
        (&["--enum-numbers"], SerializeOptions::new().use_enum_numbers(true)),
        (
            &["--emit-defaults", "--proto-names", "--enum-numbers"],
            SerializeOptions::new().skip_default_fields(false).use_proto_field_name(true).use_enum_numbers(true),
        ),
    ];
    for (flags, options) in cases {
        let want = prost_json(&pool, "sample.Reading", &bytes, &options);
        for output in ["json", "json-pretty", "jsonl"] {
            let out = run(
                protojit()
                    .arg("decode")
                    .arg("--proto")
                    .arg(&proto)
                    .args(["--type", "Reading", "--output", output])
                    .args(flags),
                Some(&bytes),
            );
            assert!(json_of(&ok(&out)) == want, "{flags:?} --output {output}: {}", stdout(&out));
        }
    }
    // And on a corpus message with proto3 defaults written explicitly on the wire.
    let Some(dir) = corpus("json_flags_match_prost_reflect_options (corpus part)") else { return };
    let payload = dir.join("google_message1_proto3.payload0.bin");
    let pool = corpus_pool(&dir, "benchmark_message1_proto3.proto");
    let bytes = std::fs::read(&payload).unwrap();
    let options = SerializeOptions::new().skip_default_fields(false).use_proto_field_name(true).use_enum_numbers(true);
    let want = prost_json(&pool, "benchmarks.proto3.GoogleMessage1", &bytes, &options);
    let out = run(
        protojit()
            .arg("decode")
            .args(schema_flags(&dir, "benchmark_message1_proto3.proto"))
            .args(["--type", "GoogleMessage1", "-o", "json", "--emit-defaults", "--proto-names", "--enum-numbers"])
            .arg(&payload),
        None,
    );
    assert!(json_of(&ok(&out)) == want);
}

#[test]
fn json_flags_need_json_output() {
    let tmp = TempDir::new("json-flags-text");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    for flag in ["--emit-defaults", "--proto-names", "--enum-numbers"] {
        let out = run(
            protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", flag]),
            Some(&reading(1, "a", 1.0)),
        );
        let line = assert_fails(&out, 2);
        assert!(line.contains("apply to JSON output"), "{line}");
    }
}

#[test]
fn binary_output_is_the_canonical_encoding() {
    let tmp = TempDir::new("binary");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let canonical = reading(5, "five", 2.5);
    // The same message with `values` unpacked and first, and `id` written twice.
    let mut scrambled = vec![0x08, 0x63];
    scrambled.extend_from_slice(&canonical[2..]);
    scrambled.splice(0..0, [0x19, 0, 0, 0, 0, 0, 0, 0x04, 0x40]); // values: 2.5, unpacked
    let mut fixed = scrambled.clone();
    // ...and drop the packed `values` copy, so the list is [2.5] once.
    let at = fixed.windows(2).position(|w| w == [0x1a, 0x08]).unwrap();
    fixed.drain(at..at + 10);
    fixed.extend_from_slice(&[0x08, 0x05]); // id: 5 last (last one wins)
    let out = run(
        protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--output", "binary"]),
        Some(&fixed),
    );
    assert_eq!(ok(&out), canonical, "re-encoding is canonical");

    let Some(dir) = corpus("binary_output_is_the_canonical_encoding (corpus part)") else { return };
    // Payloads that protobuf itself re-serializes byte for byte (corpus README).
    for (proto, type_name, payload) in [
        ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2", "google_message2.payload0.bin"),
        ("benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1", "google_message1_proto2.payload0.bin"),
        ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block1.primitiveblock-dense.bin"),
    ] {
        let out = run(
            protojit()
                .arg("decode")
                .args(schema_flags(&dir, proto))
                .args(["--type", type_name, "-o", "binary"])
                .arg(dir.join(payload)),
            None,
        );
        assert!(ok(&out) == std::fs::read(dir.join(payload)).unwrap(), "{payload}: re-encoding differs from the input");
    }
    // A payload protobuf does not re-serialize identically: the re-encoding still decodes
    // to the same text.
    let flags = schema_flags(&dir, "benchmark_message1_proto3.proto");
    let out = run(
        protojit()
            .arg("decode")
            .args(&flags)
            .args(["--type", "GoogleMessage1", "-o", "binary"])
            .arg(dir.join("google_message1_proto3.payload0.bin")),
        None,
    );
    let reencoded = ok(&out);
    assert_eq!(reencoded.len(), 221, "proto3 drops the explicit zero values (corpus README)");
    let text = run(protojit().arg("decode").args(&flags).args(["--type", "GoogleMessage1", "-"]), Some(&reencoded));
    let want = std::fs::read(root().join("tests/expected/google_message1_proto3.payload0.bin.txt")).unwrap();
    assert_same(&ok(&text), &want, "re-encoded GoogleMessage1");
}

#[test]
fn select_prints_values_one_per_line() {
    let tmp = TempDir::new("select");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let mut bytes = reading(7, "seven \"7\"\n", 1.5);
    bytes.extend_from_slice(&[0x1a, 0x08]);
    bytes.extend_from_slice(&0.25f64.to_le_bytes());
    let child = reading(8, "eight", 1e300);
    bytes.push(0x32);
    varint(&mut bytes, child.len() as u64);
    bytes.extend_from_slice(&child);
    let select = |output: &str| {
        let out = run(
            protojit()
                .arg("decode")
                .arg("--proto")
                .arg(&proto)
                .args(["--type", "Reading", "--output", output])
                .args(["--select", "label", "--select", "values[*]", "--select", "values", "--select", "color"])
                .args([
                    "--select",
                    "counts[\"n\"]",
                    "--select",
                    "child.id",
                    "--select",
                    "child.values[-1]",
                    "--select",
                    "big",
                ])
                .args(["--select", "values[9]", "--select", "#1"]),
            Some(&bytes),
        );
        String::from_utf8(ok(&out)).unwrap()
    };
    assert_eq!(select("text"), "\"seven \\\"7\\\"\\n\"\n1.5\n0.25\n[1.5, 0.25]\nRED\n8\n8\n1e300\n1099511627783\n7\n");
    assert_eq!(
        select("json"),
        "\"seven \\\"7\\\"\\n\"\n1.5\n0.25\n[1.5,0.25]\n\"RED\"\n\"8\"\n8\n1e+300\n\"1099511627783\"\n7\n"
    );
    // A message selects as one line of text format, or one JSON object.
    let out = run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(&proto)
            .args(["--type", "Reading", "--select", "child", "--select", "counts"]),
        Some(&bytes),
    );
    assert_eq!(
        String::from_utf8(ok(&out)).unwrap(),
        "{ id: 8 label: \"eight\" values: 1e+300 color: GREEN counts { key: \"n\" value: 9 } big: 1099511627784 }\n{\"n\": 8}\n"
    );
    let out = run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(&proto)
            .args(["--type", "Reading", "-o", "json", "--select", "child", "--select", "counts"]),
        Some(&bytes),
    );
    let pool = sample_pool();
    let want = prost_json(&pool, "sample.Reading", &child, &SerializeOptions::new());
    let text = String::from_utf8(ok(&out)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(serde_json::from_str::<serde_json::Value>(lines[0]).unwrap() == want);
    assert_eq!(lines[1], "{\"n\":\"8\"}");
}

#[test]
fn select_on_a_corpus_payload_matches_prost_reflect() {
    let Some(dir) = corpus("select_on_a_corpus_payload_matches_prost_reflect") else { return };
    let payload = dir.join("mvt-chicago-13-2101-3044.mvt");
    let pool = corpus_pool(&dir, "vector_tile.proto");
    let tile = DynamicMessage::decode(
        pool.get_message_by_name("vector_tile.Tile").unwrap(),
        std::fs::read(&payload).unwrap().as_slice(),
    )
    .unwrap();
    let layers = tile.get_field_by_name("layers").unwrap();
    let mut want = String::new();
    for layer in layers.as_list().unwrap() {
        let layer = layer.as_message().unwrap();
        want.push_str(&format!("{:?}\n", layer.get_field_by_name("name").unwrap().as_str().unwrap()));
        want.push_str(&format!("{}\n", layer.get_field_by_name("features").unwrap().as_list().unwrap().len()));
    }
    // Per layer: its name, then its number of features (`layers[*].features` is a list).
    let out = run(
        protojit()
            .arg("decode")
            .args(schema_flags(&dir, "vector_tile.proto"))
            .args(["--type", "Tile", "-o", "json", "--select", "layers[*].name"])
            .arg(&payload),
        None,
    );
    let names: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    ok(&out);
    let want_names: Vec<String> = want.lines().step_by(2).map(str::to_owned).collect();
    assert_eq!(names, want_names);
    assert!(!names.is_empty());
}

#[test]
fn bad_select_path_is_a_usage_error() {
    let tmp = TempDir::new("select-bad");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    for (path, needle) in
        [("nope", "has no field `nope`"), ("label.x", "not a message"), ("values[", "invalid field path")]
    {
        let out = run(
            protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--select", path]),
            Some(&[]),
        );
        let line = assert_fails(&out, 2);
        assert!(line.contains(&format!("--select {path}")) && line.contains(needle), "{line}");
    }
    let out = run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(&proto)
            .args(["--type", "Reading", "--select", "id", "-o", "binary"]),
        Some(&[]),
    );
    assert_fails(&out, 2);
}

/// `Reading { child { child { ... id: 1 } } }`, `levels` deep.
fn nested(levels: usize) -> Vec<u8> {
    let mut m = vec![0x08, 0x01];
    for _ in 0..levels {
        let mut outer = vec![0x32];
        varint(&mut outer, m.len() as u64);
        outer.extend_from_slice(&m);
        m = outer;
    }
    m
}

#[test]
fn max_depth_limits_nesting() {
    let tmp = TempDir::new("max-depth");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("deep.bin", &nested(5));
    for engine in ["interp", "jit", "auto"] {
        let base = || {
            let mut c = protojit();
            c.arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--engine", engine]);
            c
        };
        let out = run(base().args(["--max-depth", "10"]).arg(&input), None);
        assert!(stdout(&out).contains("          id: 1\n"), "{engine}: {}", stdout(&out));
        ok(&out);
        // Default limit (100) also accepts it.
        ok(&run(base().arg(&input), None));
        let out = run(base().args(["--max-depth", "3"]).arg(&input), None);
        let line = assert_fails(&out, 1);
        assert!(line.contains("deeper than the depth limit") && line.contains("deep.bin"), "{engine}: {line}");
    }
}

/// What decodes prints: a message at the largest `--max-depth` (1000) prints in every output
/// format (JSON used to stop at 100 levels), also on the worker threads of `--jobs`.
#[test]
fn every_output_format_prints_at_the_largest_max_depth() {
    let tmp = TempDir::new("max-depth-1000");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let message = nested(1000);
    let input = tmp.write("deep.bin", &message);
    let stream = tmp.write("deep.stream", &delimited([&message[..], &message[..], &message[..]]));
    let base = || {
        let mut c = protojit();
        c.arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--max-depth", "1000"]);
        c
    };
    let want_json = format!("{}{{\"id\":1}}{}\n", "{\"child\":".repeat(1000), "}".repeat(1000));
    assert_eq!(stdout(&run(base().args(["-o", "json"]).arg(&input), None)), want_json);
    // (Compared without whitespace: serde_json's parser stops at 128 levels.)
    let pretty = stdout(&run(base().args(["-o", "json-pretty"]).arg(&input), None));
    assert_eq!(pretty.split_whitespace().collect::<String>(), want_json.trim_end());
    let text = stdout(&run(base().arg(&input), None));
    assert_eq!(text.lines().count(), 2001, "text format");
    assert_eq!(ok(&run(base().args(["-o", "binary"]).arg(&input), None)), message);
    let out = run(base().args(["--delimited", "--jobs", "2", "-o", "jsonl"]).arg(&stream), None);
    assert_eq!(stdout(&out), want_json.repeat(3));
    // One level more is an input error, not a writer failure.
    let deeper = tmp.write("deeper.bin", &nested(1001));
    let line = assert_fails(&run(base().args(["-o", "json"]).arg(&deeper), None), 1);
    assert!(line.contains("deeper than the depth limit"), "{line}");
}

#[test]
fn no_utf8_check_accepts_invalid_strings() {
    let tmp = TempDir::new("utf8");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("bad-utf8.bin", &[0x08, 0x01, 0x12, 0x02, 0xc3, 0x28]);
    for engine in ["interp", "jit"] {
        let base = || {
            let mut c = protojit();
            c.arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "--engine", engine]);
            c
        };
        let line = assert_fails(&run(base().arg(&input), None), 1);
        assert!(line.contains("not valid UTF-8") && line.contains("byte offset 3"), "{engine}: {line}");
        let out = run(base().arg("--no-utf8-check").arg(&input), None);
        assert_eq!(stdout(&out), "id: 1\nlabel: \"\\303(\"\n", "{engine}");
        ok(&out);
    }
}

#[test]
fn include_dirs_resolve_imports() {
    let tmp = TempDir::new("include");
    tmp.write(
        "deps/geo/point.proto",
        b"syntax = \"proto3\";\npackage geo;\nmessage Point { int32 x = 1; int32 y = 2; }\n",
    );
    tmp.write("deps2/unit.proto", b"syntax = \"proto3\";\npackage geo;\nenum Unit { METER = 0; FOOT = 1; }\n");
    let main = tmp.write(
        "src/shape.proto",
        b"syntax = \"proto3\";\npackage shapes;\nimport \"geo/point.proto\";\nimport \"unit.proto\";\nmessage Shape { repeated geo.Point points = 1; geo.Unit unit = 2; }\n",
    );
    let input = [0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x10, 0x01];
    let out = run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(&main)
            .arg("-I")
            .arg(tmp.path("src"))
            .arg("--include")
            .arg(tmp.path("deps"))
            .arg("-I")
            .arg(tmp.path("deps2"))
            .args(["--type", "Shape"]),
        Some(&input),
    );
    assert_eq!(stdout(&out), "points {\n  x: 1\n  y: 2\n}\nunit: FOOT\n");
    ok(&out);
    // Without the include directories, the import is not found: a schema error, exit 2.
    let out = run(
        protojit()
            .env("PROTOC", "/nonexistent/protoc")
            .arg("decode")
            .arg("--proto")
            .arg(&main)
            .args(["--type", "Shape"]),
        Some(&input),
    );
    let line = assert_fails(&out, 2);
    assert!(line.contains("geo/point.proto"), "{line}");
}

#[test]
fn descriptor_sets_are_repeatable() {
    let tmp = TempDir::new("fds");
    let point = "syntax = \"proto3\";\npackage geo;\nmessage Point { int32 x = 1; int32 y = 2; }\n";
    let shape = "syntax = \"proto3\";\npackage shapes;\nimport \"point.proto\";\nmessage Shape { repeated geo.Point points = 1; }\n";
    tmp.write("point.proto", point.as_bytes());
    let main = tmp.write("shape.proto", shape.as_bytes());
    let schema = protojit::Schema::from_proto_files(&[&main], &[&tmp.0]).unwrap();
    // One FileDescriptorSet per file: `file` (field 1) holding each FileDescriptorProto.
    let set_of = |name: &str| {
        let file = schema.pool().get_file_by_name(name).unwrap().encode_to_vec();
        let mut set = vec![0x0a];
        varint(&mut set, file.len() as u64);
        set.extend_from_slice(&file);
        set
    };
    let point_pb = tmp.write("point.pb", &set_of("point.proto"));
    let shape_pb = tmp.write("shape.pb", &set_of("shape.proto"));
    let input = [0x0a, 0x02, 0x08, 0x03];
    let out = run(
        protojit()
            .arg("decode")
            .arg("--descriptor-set")
            .arg(&point_pb)
            .arg("--descriptor-set")
            .arg(&shape_pb)
            .args(["--type", "shapes.Shape"]),
        Some(&input),
    );
    assert_eq!(stdout(&out), "points {\n  x: 3\n}\n");
    ok(&out);
    // The dependent set alone does not load: exit 2, naming the file.
    let out =
        run(protojit().arg("decode").arg("--descriptor-set").arg(&shape_pb).args(["--type", "Shape"]), Some(&input));
    let line = assert_fails(&out, 2);
    assert!(line.contains("shape.pb"), "{line}");
}

#[test]
fn schema_flag_combinations_are_usage_errors() {
    let tmp = TempDir::new("schema-flags");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let out = run(
        protojit()
            .arg("decode")
            .arg("--proto")
            .arg(&proto)
            .arg("--descriptor-set")
            .arg(&proto)
            .args(["--type", "Reading"]),
        Some(&[]),
    );
    assert!(assert_fails(&out, 2).contains("not both"));
    // Ambiguous short names list the candidates.
    let other = tmp.write("other.proto", b"syntax = \"proto3\";\npackage other;\nmessage Reading { int32 id = 1; }\n");
    let out = run(
        protojit().arg("decode").arg("--proto").arg(&proto).arg("--proto").arg(&other).args(["--type", "Reading"]),
        Some(&[]),
    );
    let line = assert_fails(&out, 2);
    assert!(
        line.contains("ambiguous") && line.contains("`sample.Reading`") && line.contains("`other.Reading`"),
        "{line}"
    );
    // A missing --type is clap's usage error, exit 2.
    let out = run(protojit().arg("decode").arg("--proto").arg(&proto), Some(&[]));
    assert_eq!(out.status.code(), Some(2));
    // --jobs and --keep-going belong to --delimited.
    for flag in [&["--jobs", "2"][..], &["--keep-going"]] {
        let out =
            run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading"]).args(flag), Some(&[]));
        assert!(assert_fails(&out, 2).contains("--delimited"));
    }
}

#[test]
fn empty_input_is_the_empty_message() {
    let tmp = TempDir::new("empty");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    for (output, want) in [("text", ""), ("json", "{}\n"), ("binary", "")] {
        let out = run(
            protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "-o", output]),
            Some(&[]),
        );
        assert_eq!(stdout(&out), want, "{output}");
        ok(&out);
    }
}
