//! The other commands end to end: `schema list|show|layout|jit`, `bench`, `completions`,
//! `--help` (with examples for every command), `--version`, and usage errors (exit 2).

mod support;

use support::*;

const ITEM_PROTO: &str = r#"
syntax = "proto2";
package p2;
enum Kind { SMALL = 1; LARGE = 2; }
message Item {
  required int32 id = 1;
  optional string name = 2 [default = "none"];
  repeated int32 tags = 3 [packed = true];
  oneof choice { int64 n = 4; Item child = 5; }
  map<string, Item> byname = 6;
  optional group Extra = 7 { optional bool flag = 1; }
  optional Kind kind = 8 [default = LARGE];
  optional double ratio = 9 [default = 0.5];
  extensions 100 to 200;
}
extend Item { optional uint32 ext = 100; }
message Other { optional string s = 1; }
"#;

#[test]
fn schema_list_prints_message_types() {
    let tmp = TempDir::new("schema-list");
    let proto = tmp.write("item.proto", ITEM_PROTO.as_bytes());
    let out = run(protojit().args(["schema", "list", "--proto"]).arg(&proto), None);
    // Map entries are left out; nested types (the group) are in.
    assert_eq!(stdout(&out), "p2.Item\np2.Item.Extra\np2.Other\n");
    ok(&out);
    let Some(dir) = corpus("schema_list_prints_message_types (corpus part)") else { return };
    let out = run(protojit().args(["schema", "list", "--descriptor-set"]).arg(dir.join("descriptor.fds.bin")), None);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.lines().any(|l| l == "google.protobuf.FileDescriptorSet"), "{text}");
    assert!(text.lines().any(|l| l == "google.protobuf.DescriptorProto.ExtensionRange"), "{text}");
}

#[test]
fn schema_show_prints_fields() {
    let tmp = TempDir::new("schema-show");
    let proto = tmp.write("item.proto", ITEM_PROTO.as_bytes());
    let out = run(protojit().args(["schema", "show", "--proto"]).arg(&proto).arg("Item"), None);
    assert_eq!(
        stdout(&out),
        "\
message p2.Item (proto2, item.proto)
  features: field_presence=EXPLICIT enum_type=CLOSED repeated_field_encoding=EXPANDED utf8_validation=NONE \
message_encoding=LENGTH_PREFIXED json_format=LEGACY_BEST_EFFORT enforce_naming_style=STYLE_LEGACY \
default_symbol_visibility=EXPORT_ALL
  number  name      kind                  cardinality           oneof   default  features
  1       id        int32                 required                      0        field_presence=LEGACY_REQUIRED
  2       name      string                optional                      \"none\"
  3       tags      int32                 repeated packed                        repeated_field_encoding=PACKED
  4       n         int64                 optional              choice  0
  5       child     message p2.Item       optional              choice
  6       byname    map<string, p2.Item>  map
  7       extra     group p2.Item.Extra   optional                               message_encoding=DELIMITED
  8       kind      enum p2.Kind          optional                      LARGE
  9       ratio     double                optional                      0.5
  100     [p2.ext]  uint32                optional (extension)          0
"
    );
    ok(&out);
    // proto3: implicit presence is `singular`.
    let sample = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let out = run(protojit().args(["schema", "show", "--proto"]).arg(&sample).arg("sample.Reading"), None);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.starts_with("message sample.Reading (proto3, sample.proto)\n"), "{text}");
    assert!(text.contains("  1       id      int32                   singular                0\n"), "{text}");
    assert!(
        text.contains("  4       color   enum sample.Color       singular                COLOR_UNSPECIFIED\n"),
        "{text}"
    );
    assert!(text.contains("  5       counts  map<string, int64>      map\n"), "{text}");
}

#[test]
fn schema_layout_matches_the_arena_layout() {
    let tmp = TempDir::new("schema-layout");
    let proto = tmp.write("item.proto", ITEM_PROTO.as_bytes());
    let schema = protojit::Schema::from_proto_files(&[&proto], &[&tmp.0]).unwrap();
    let layouts = schema.layouts();
    let out = run(protojit().args(["schema", "layout", "--proto"]).arg(&proto).args(["Item", "--reachable"]), None);
    let text = String::from_utf8(ok(&out)).unwrap();
    let reachable = layouts.reachable(layouts.index_of("p2.Item").unwrap());
    assert_eq!(reachable.len(), 3);
    for li in reachable {
        let layout = layouts.get(li);
        let name = layout.descriptor().full_name();
        let header = format!("message {name}: block of {} bytes, 8-byte aligned\n", layout.size());
        let at = text.find(&header).unwrap_or_else(|| panic!("no {header:?} in\n{text}"));
        let section = text[at..].split("\n\n").next().unwrap();
        for slot in layout.slots() {
            let row = section
                .lines()
                .filter(|l| l.split_whitespace().next().is_some_and(|t| t.parse::<u32>().is_ok()))
                .find(|l| l.split_whitespace().nth(2) == Some(&slot.number.to_string()))
                .unwrap_or_else(|| panic!("{name}: no row for field {}\n{section}", slot.number));
            let cols: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cols[0], slot.offset.to_string(), "{name}.{}: offset\n{section}", slot.number);
            assert!(slot.offset + cols[1].parse::<u32>().unwrap() <= layout.size(), "{row}");
            if slot.hasbit != protojit_arena::NO_INDEX {
                assert!(row.contains(&format!("bit {} (word {}", slot.hasbit, slot.hasbit / 32)), "{row}");
            }
        }
        for i in 0..layout.oneofs().len() {
            assert!(section.contains(&format!(
                "case word (u32, active field number) at byte {}",
                layout.oneof_case_offset(i as u32)
            )));
        }
        assert!(
            section.contains(&format!("unknown fields: span vector (16 bytes) at byte {}", layout.unknown_offset()))
        );
    }
    // Without --reachable, just the one type.
    let out = run(protojit().args(["schema", "layout", "--proto"]).arg(&proto).arg("Other"), None);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert_eq!(text.matches("message ").count(), 1, "{text}");
    assert!(text.contains("presence bits: 1 u32 word at bytes 0..4"), "{text}");
}

#[test]
fn schema_jit_reports_engines_code_and_clif() {
    let tmp = TempDir::new("schema-jit");
    let proto = tmp.write("item.proto", ITEM_PROTO.as_bytes());
    let out = run(protojit().args(["schema", "jit", "--proto"]).arg(&proto).arg("Item"), None);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.starts_with("p2.Item: 3 reachable message types, "), "{text}");
    let jit = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
    for ty in ["p2.Item ", "p2.Item.BynameEntry ", "p2.Item.Extra "] {
        let row = text.lines().find(|l| l.trim_start().starts_with(ty)).unwrap_or_else(|| panic!("no {ty} in {text}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert!(row.contains(" ms "), "{row}");
        if jit {
            assert!(cols[1].parse::<u32>().unwrap() > 0, "{row}");
            assert_eq!(cols.last(), Some(&"jit"), "{row}");
        }
    }
    if !jit {
        println!(
            "SKIPPED the --clif part of schema_jit_reports_engines_code_and_clif: no Cranelift backend for this host"
        );
        return;
    }
    let out = run(protojit().args(["schema", "jit", "--proto"]).arg(&proto).args(["p2.Item", "--clif"]), None);
    let text = String::from_utf8(ok(&out)).unwrap();
    for ty in ["p2.Item", "p2.Item.BynameEntry", "p2.Item.Extra"] {
        let header = format!("\n; {ty} (");
        let at = text.find(&header).unwrap_or_else(|| panic!("no CLIF header for {ty}"));
        assert!(text[at..].contains("function u0:") && text[at..].contains("block0("), "{ty}");
    }
    // An unknown type: one line, exit 2.
    let line = assert_fails(&run(protojit().args(["schema", "jit", "--proto"]).arg(&proto).arg("Itm"), None), 2);
    assert!(line.contains("did you mean `p2.Item`"), "{line}");
}

#[test]
fn schema_errors_are_one_line_exit_2() {
    let tmp = TempDir::new("schema-errors");
    let proto = tmp.write("item.proto", ITEM_PROTO.as_bytes());
    let broken = tmp.write("broken.proto", b"syntax = \"proto3\";\nmessage { }\n");
    for sub in ["show", "layout", "jit"] {
        let out = run(protojit().args(["schema", sub, "--proto"]).arg(&proto).arg("Nope"), None);
        assert!(assert_fails(&out, 2).contains("no message type `Nope`"));
    }
    let out =
        run(protojit().env("PROTOC", "/nonexistent/protoc").args(["schema", "list", "--proto"]).arg(&broken), None);
    assert!(assert_fails(&out, 2).contains("cannot compile the schema"));
    let out = run(protojit().args(["schema", "list"]), None);
    assert!(assert_fails(&out, 2).contains("no schema"));
    let out = run(protojit().args(["schema", "list", "--descriptor-set"]).arg(tmp.path("absent.pb")), None);
    assert!(assert_fails(&out, 2).contains("absent.pb"));
}

#[test]
fn bench_prints_throughput_and_ratios() {
    let tmp = TempDir::new("bench");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("one.bin", &reading(3, "three", 3.0));
    let out = run(
        protojit().arg("bench").arg("--proto").arg(&proto).args(["--type", "Reading", "--time", "0.3"]).arg(&input),
        None,
    );
    let text = String::from_utf8(ok(&out)).unwrap();
    let len = reading(3, "three", 3.0).len();
    assert!(text.starts_with(&format!("protojit bench: sample.Reading, 1 record, {len} bytes, 0.3 s\n")), "{text}");
    assert!(text.contains("MB/s min") && text.contains("median") && text.contains("vs prost-reflect"), "{text}");
    for arm in ["protojit jit", "protojit interpreter", "prost-reflect"] {
        let row =
            text.lines().find(|l| l.trim_start().starts_with(arm)).unwrap_or_else(|| panic!("no {arm} row: {text}"));
        let nums: Vec<f64> = row[arm.len() + 2..].split_whitespace().take(3).map(|s| s.parse().unwrap()).collect();
        assert!(nums[0] > 0.0 && nums[0] <= nums[1] && nums[1] <= nums[2], "{row}");
        assert!(row.contains('x'), "{row}");
    }
    assert!(text.lines().any(|l| l.trim_start().starts_with("prost-reflect") && l.contains("1.00x")), "{text}");
    assert!(text.contains("compiled "), "{text}");
    // A delimited stream: every record per pass.
    let stream = delimited([reading(1, "a", 1.0), reading(2, "b", 2.0)].iter().map(Vec::as_slice));
    let input = tmp.write("stream.bin", &stream);
    let out = run(
        protojit()
            .arg("bench")
            .arg("--proto")
            .arg(&proto)
            .args(["--type", "Reading", "--time", "0.2", "--delimited"])
            .arg(&input),
        None,
    );
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(
        text.starts_with(&format!("protojit bench: sample.Reading, 2 records, {} bytes", stream.len() - 2)),
        "{text}"
    );
    // Malformed input: exit 1; a bad --time: exit 2.
    let bad = tmp.write("bad.bin", &[0x08]);
    let out = run(
        protojit().arg("bench").arg("--proto").arg(&proto).args(["--type", "Reading", "--time", "0.1"]).arg(&bad),
        None,
    );
    assert!(
        assert_fails(&out, 1).contains("bad.bin: cannot decode as sample.Reading: truncated value at byte offset 1")
    );
    let out = run(
        protojit().arg("bench").arg("--proto").arg(&proto).args(["--type", "Reading", "--time", "0"]).arg(&input),
        None,
    );
    assert_fails(&out, 2);
}

#[test]
fn bench_on_a_corpus_payload() {
    let Some(dir) = corpus("bench_on_a_corpus_payload") else { return };
    let out = run(
        protojit()
            .arg("bench")
            .args(schema_flags(&dir, "benchmark_message2.proto"))
            .args(["--type", "GoogleMessage2", "--time", "0.3"])
            .arg(dir.join("google_message2.payload0.bin")),
        None,
    );
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.starts_with("protojit bench: benchmarks.proto2.GoogleMessage2, 1 record, 84570 bytes"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains('x') && l.contains('.')).count(), 3, "{text}");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(protojit().args(["completions", shell]), None);
        let script = String::from_utf8(ok(&out)).unwrap();
        assert!(script.contains("protojit"), "{shell}");
        for word in ["decode-raw", "descriptor-set", "delimited"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    let out = run(protojit().args(["completions", "tcsh"]), None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_has_examples_for_every_command() {
    let commands: [&[&str]; 10] = [
        &[],
        &["decode"],
        &["decode-raw"],
        &["schema"],
        &["schema", "list"],
        &["schema", "show"],
        &["schema", "layout"],
        &["schema", "jit"],
        &["bench"],
        &["completions"],
    ];
    for cmd in commands {
        let out = run(protojit().args(cmd).arg("--help"), None);
        let text = String::from_utf8(ok(&out)).unwrap();
        assert!(
            text.contains("Examples:\n") && text.contains("\n  protojit "),
            "{cmd:?} --help has no examples:\n{text}"
        );
        if let Some(last) = cmd.last() {
            assert!(text.contains(&format!(" {last} ")), "{cmd:?}: examples do not use the command:\n{text}");
        }
    }
    let text = stdout(&run(protojit().arg("--help"), None));
    for sub in ["decode", "decode-raw", "schema", "bench", "completions"] {
        assert!(text.contains(&format!("\n  {sub} ")), "top-level help lists {sub}");
    }
    assert!(text.contains("Exit codes: 0 success, 1 bad input"), "{text}");
}

#[test]
fn version_and_usage_errors() {
    let out = run(protojit().arg("--version"), None);
    assert_eq!(stdout(&out), format!("protojit {}\n", env!("CARGO_PKG_VERSION")));
    // clap's usage errors: exit 2.
    for args in [&["frobnicate"][..], &["decode", "--no-such-flag"], &["decode", "--type", "X", "--output", "xml"], &[]]
    {
        let out = run(protojit().args(args), None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn closed_pipe_on_schema_output_is_quiet() {
    use std::io::Read;
    use std::process::Stdio;
    // `protojit schema jit ... --clif | head -c 10`: a large output into a pipe closed early.
    let tmp = TempDir::new("closed-pipe");
    let proto = tmp.write("item.proto", ITEM_PROTO.as_bytes());
    let mut child = protojit()
        .args(["schema", "jit", "--clif", "--proto"])
        .arg(&proto)
        .arg("Item")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success() && err.is_empty(), "{status:?} {err:?}");
}

/// A build without the `sql` feature keeps the command's name: whatever its arguments, it
/// says how to get it, in one line, with exit code 2.
#[cfg(not(feature = "sql"))]
#[test]
fn the_sql_command_left_out_says_how_to_get_it() {
    for args in [&["sql"][..], &["sql", "--help"], &["sql", "--table", "t=T:t.bin", "-o", "csv", "SELECT 1"]] {
        let line = assert_fails(&run(protojit().args(args), None), 2);
        assert_eq!(line, "protojit: the sql command is not in this build; install protojit-cli with --features sql");
    }
}

/// A build without the `columns` feature refuses `-o arrow|parquet` in one line (exit 2)
/// before it reads anything.
#[cfg(not(feature = "columns"))]
#[test]
fn columnar_outputs_left_out_say_how_to_get_them() {
    for format in ["arrow", "parquet"] {
        let out = run(protojit().args(["decode", "--type", "T", "-o", format, "missing.bin"]), None);
        let line = assert_fails(&out, 2);
        assert_eq!(
            line,
            format!("protojit: --output {format} is not in this build; install protojit-cli with --features columns")
        );
    }
}
