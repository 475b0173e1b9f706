//! End-to-end tests of the `protojit` binary: output identical to `protoc --decode`, input
//! from files and stdin, engines, and one-line errors with the documented exit codes.
//!
//! Expected outputs are the files `tests/expected/*.txt` of the workspace root (made by
//! `tests/expected/regen.sh` with protoc 3.21.12); these tests do not need protoc, except
//! the one that checks the protoc fallback, which says why it is skipped without it.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use support::{assert_fails, corpus, protojit, root, run, stderr};

fn expected(payload: &str) -> Vec<u8> {
    let path = root().join("tests/expected").join(format!("{payload}.txt"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; run tests/expected/regen.sh", path.display()))
}

/// Success with exactly `want` on stdout.
#[track_caller]
fn assert_prints(out: &Output, want: &[u8]) {
    assert!(out.status.success(), "exit {:?}, stderr: {}", out.status.code(), stderr(out));
    support::assert_same(&out.stdout, want, "stdout against protoc's output");
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("protojit-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SAMPLE_PROTO: &str = r#"
syntax = "proto3";
package sample;
message Reading {
  int32 id = 1;
  string label = 2;
  repeated double values = 3;
}
message Readings { repeated Reading items = 1; }
"#;

/// `id: 7, label: "hi", values: [1.5]`.
const SAMPLE_READING: &[u8] = &[0x08, 0x07, 0x12, 0x02, b'h', b'i', 0x1a, 0x08, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f];
const SAMPLE_TEXT: &str = "id: 7\nlabel: \"hi\"\nvalues: 1.5\n";

#[test]
fn acceptance_command_prints_what_protoc_prints() {
    if corpus("acceptance_command_prints_what_protoc_prints").is_none() {
        return;
    }
    let out = run(
        protojit().args([
            "decode",
            "--proto",
            "../shared/corpus/benchmark_message2.proto",
            "--type",
            "benchmarks.proto2.GoogleMessage2",
            "../shared/corpus/google_message2.payload0.bin",
        ]),
        None,
    );
    assert_prints(&out, &expected("google_message2.payload0.bin"));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
}

#[test]
fn descriptor_set_decodes_itself() {
    let Some(dir) = corpus("descriptor_set_decodes_itself") else { return };
    let fds = dir.join("descriptor.fds.bin");
    let out = run(
        protojit()
            .arg("decode")
            .arg("--descriptor-set")
            .arg(&fds)
            .args(["--type", "google.protobuf.FileDescriptorSet"])
            .arg(&fds),
        None,
    );
    assert_prints(&out, &expected("descriptor.fds.bin"));
    // A short name that is unique resolves too.
    let with_info = dir.join("descriptor_with_source_info.fds.bin");
    let out = run(
        protojit()
            .arg("decode")
            .arg("--descriptor-set")
            .arg(&fds)
            .args(["--type", "FileDescriptorSet"])
            .arg(&with_info),
        None,
    );
    assert_prints(&out, &expected("descriptor_with_source_info.fds.bin"));
}

#[test]
fn stdin_input() {
    let Some(dir) = corpus("stdin_input") else { return };
    let payload = std::fs::read(dir.join("google_message1_proto3.payload0.bin")).unwrap();
    let want = expected("google_message1_proto3.payload0.bin");
    let base = [
        "decode",
        "--proto",
        "../shared/corpus/benchmark_message1_proto3.proto",
        "--type",
        "benchmarks.proto3.GoogleMessage1",
    ];
    assert_prints(&run(protojit().args(base).arg("-"), Some(&payload)), &want);
    // No INPUT at all means stdin too.
    assert_prints(&run(protojit().args(base), Some(&payload)), &want);
}

#[test]
fn stdin_input_without_corpus() {
    let tmp = TempDir::new("stdin");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let out =
        run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading", "-"]), Some(SAMPLE_READING));
    assert_prints(&out, SAMPLE_TEXT.as_bytes());
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
}

#[test]
fn engines_print_identical_output() {
    let Some(dir) = corpus("engines_print_identical_output") else { return };
    for (proto, type_name, payload) in [
        ("benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2", "google_message2.payload0.bin"),
        ("vector_tile.proto", "vector_tile.Tile", "mvt-chicago-13-2101-3044.mvt"),
        ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block1.primitiveblock-dense.bin"),
    ] {
        let want = expected(payload);
        for engine in ["interp", "jit", "auto"] {
            let out = run(
                protojit()
                    .arg("decode")
                    .arg("--proto")
                    .arg(dir.join(proto))
                    .args(["--type", type_name, "--engine", engine])
                    .arg(dir.join(payload)),
                None,
            );
            assert!(out.status.success(), "{payload} --engine {engine}: {}", stderr(&out));
            assert!(out.stdout == want, "{payload}: --engine {engine} prints differently from protoc");
        }
    }
}

#[test]
fn malformed_input_is_one_line_with_the_offset() {
    let tmp = TempDir::new("malformed");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    // Field 2 claims 9 bytes where 2 remain: the length prefix at offset 3 runs past the end.
    let bad = [0x08, 0x07, 0x12, 0x09, b'h', b'i'];
    let out =
        run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "sample.Reading", "-"]), Some(&bad));
    let line = assert_fails(&out, 1);
    assert!(line.contains("stdin"), "{line}");
    assert!(line.contains("sample.Reading"), "{line}");
    assert!(line.contains("byte offset 3"), "{line}");

    // The same from a file names the file; a truncated varint at the very end.
    let file = tmp.write("bad.bin", &[0x08, 0x07, 0x08, 0xff]);
    for engine in ["interp", "jit"] {
        let out = run(
            protojit()
                .arg("decode")
                .arg("--proto")
                .arg(&proto)
                .args(["--type", "Reading", "--engine", engine])
                .arg(&file),
            None,
        );
        let line = assert_fails(&out, 1);
        assert!(line.contains("bad.bin"), "{line}");
        assert!(line.contains("byte offset 3"), "--engine {engine}: {line}");
    }
}

#[test]
fn malformed_corpus_payload_fails_cleanly() {
    let Some(dir) = corpus("malformed_corpus_payload_fails_cleanly") else { return };
    let payload = std::fs::read(dir.join("google_message2.payload0.bin")).unwrap();
    for cut in [1, 50, 1000, payload.len() - 1] {
        let out = run(
            protojit().arg("decode").arg("--proto").arg(dir.join("benchmark_message2.proto")).args([
                "--type",
                "GoogleMessage2",
                "-",
            ]),
            Some(&payload[..cut]),
        );
        let line = assert_fails(&out, 1);
        assert!(line.contains("byte offset"), "cut at {cut}: {line}");
    }
}

#[test]
fn missing_input_file() {
    let tmp = TempDir::new("missing-input");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let missing = tmp.0.join("no-such-input.bin");
    let out = run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Reading"]).arg(&missing), None);
    let line = assert_fails(&out, 1);
    assert!(line.contains("no-such-input.bin"), "{line}");
}

#[test]
fn missing_schema_files() {
    let tmp = TempDir::new("missing-schema");
    let input = tmp.write("in.bin", SAMPLE_READING);
    for flag in ["--proto", "--descriptor-set"] {
        let out = run(
            protojit().arg("decode").arg(flag).arg(tmp.0.join("absent.schema")).args(["--type", "Reading"]).arg(&input),
            None,
        );
        let line = assert_fails(&out, 2);
        assert!(line.contains("absent.schema"), "{flag}: {line}");
    }
}

#[test]
fn bad_proto_file() {
    let tmp = TempDir::new("bad-proto");
    let proto = tmp.write("broken.proto", b"syntax = \"proto3\";\nmessage Broken {\n  int32 a = ;\n}\n");
    let input = tmp.write("in.bin", SAMPLE_READING);
    // Whether or not a protoc is found for the fallback, the result is one line, exit 2.
    let out = run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Broken"]).arg(&input), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("cannot compile the schema"), "{line}");
    let out = run(
        protojit()
            .env("PROTOC", "/nonexistent/protoc")
            .arg("decode")
            .arg("--proto")
            .arg(&proto)
            .args(["--type", "Broken"])
            .arg(&input),
        None,
    );
    let line = assert_fails(&out, 2);
    assert!(line.contains("cannot compile the schema"), "{line}");
}

#[test]
fn not_a_descriptor_set() {
    let tmp = TempDir::new("not-fds");
    // Field 1 (`file`) announces 5 bytes, 1 follows.
    let fds = tmp.write("bogus.pb", &[0x0a, 0x05, 0x01]);
    let input = tmp.write("in.bin", SAMPLE_READING);
    let out =
        run(protojit().arg("decode").arg("--descriptor-set").arg(&fds).args(["--type", "Reading"]).arg(&input), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("bogus.pb"), "{line}");
    assert!(line.contains("is not a valid FileDescriptorSet"), "{line}");
}

#[test]
fn unknown_type_suggests_close_names() {
    let tmp = TempDir::new("unknown-type");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("in.bin", SAMPLE_READING);
    let out = run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "Readin"]).arg(&input), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("no message type `Readin`"), "{line}");
    assert!(line.contains("did you mean") && line.contains("`sample.Reading`"), "{line}");

    let out =
        run(protojit().arg("decode").arg("--proto").arg(&proto).args(["--type", "sample.Nothing"]).arg(&input), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("no message type `sample.Nothing`"), "{line}");
}

#[test]
fn no_schema_given() {
    let tmp = TempDir::new("no-schema");
    let input = tmp.write("in.bin", SAMPLE_READING);
    let out = run(protojit().args(["decode", "--type", "Reading"]).arg(&input), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("no schema"), "{line}");
    assert!(line.contains("--descriptor-set") && line.contains("--proto"), "{line}");
}

/// `$PROTOC` pointing nowhere: protox's rejection of the 2026 descriptor.proto is reported
/// with the hint to install protoc or pass a descriptor set.
#[test]
fn protox_rejection_without_protoc_explains_the_way_out() {
    let Some(dir) = corpus("protox_rejection_without_protoc_explains_the_way_out") else { return };
    let out = run(
        protojit()
            .env("PROTOC", "/nonexistent/protoc")
            .arg("decode")
            .arg("--proto")
            .arg(dir.join("descriptor.proto"))
            .arg("-I")
            .arg(&dir)
            .args(["--type", "google.protobuf.FileDescriptorSet"])
            .arg(dir.join("descriptor.fds.bin")),
        None,
    );
    let line = assert_fails(&out, 2);
    let (_, rest) = line.split_once("cannot compile the schema: ").unwrap_or_else(|| panic!("{line}"));
    let (protox_msg, hint) = rest.split_once("; if the file is valid for protoc").unwrap_or_else(|| panic!("{line}"));
    assert!(!protox_msg.trim().is_empty(), "protox's message is missing: {line}");
    assert!(!protox_msg.contains("protoc"), "the message should be protox's own: {line}");
    assert!(hint.contains("install protoc"), "{line}");
    assert!(hint.contains("descriptor set") && hint.contains("--include_imports -o"), "{line}");
}

/// With a protoc to fall back on, the same file decodes; stderr stays empty unless
/// `-v`/`--verbose` asks for the note that protoc was used.
#[test]
fn protoc_fallback_decodes_descriptor_proto() {
    let Some(dir) = corpus("protoc_fallback_decodes_descriptor_proto") else { return };
    if !protoc_runnable("protoc_fallback_decodes_descriptor_proto") {
        return;
    }
    let decode = |verbose: Option<&str>| {
        let mut cmd = protojit();
        cmd.args(verbose).arg("decode").arg("--proto").arg(dir.join("descriptor.proto")).arg("-I").arg(&dir);
        cmd.args(["--type", "google.protobuf.FileDescriptorSet"]).arg(dir.join("descriptor.fds.bin"));
        run(&mut cmd, None)
    };
    let out = decode(None);
    assert_prints(&out, &expected("descriptor.fds.bin"));
    assert!(out.stderr.is_empty(), "stderr without --verbose: {:?}", stderr(&out));
    for flag in ["-v", "--verbose"] {
        let out = decode(Some(flag));
        assert_prints(&out, &expected("descriptor.fds.bin"));
        let err = stderr(&out);
        assert!(err.starts_with("protojit: note: protox could not compile the schema ("), "{flag}: {err:?}");
        assert!(err.ends_with("; compiled it with protoc instead\n") && err.matches('\n').count() == 1, "{err:?}");
    }
}

/// A command that fails after its schema went through the protoc fallback prints one line
/// on stderr, the error (the library used to print its fallback note first).
#[test]
fn protoc_fallback_failure_is_one_line() {
    let Some(dir) = corpus("protoc_fallback_failure_is_one_line") else { return };
    if !protoc_runnable("protoc_fallback_failure_is_one_line") {
        return;
    }
    let out = run(
        protojit().arg("decode").arg("--proto").arg(dir.join("descriptor.proto")).arg("-I").arg(&dir).args([
            "--type",
            "google.protobuf.FileDescriptorSet",
            "-",
        ]),
        Some(b"\x0a\x05ab"),
    );
    let line = assert_fails(&out, 1);
    assert!(line.contains("length prefix past the end of the message at byte offset 1"), "{line}");
    // With --verbose the note comes first, on its own line.
    let out = run(
        protojit()
            .args(["decode", "--verbose", "--proto"])
            .arg(dir.join("descriptor.proto"))
            .arg("-I")
            .arg(&dir)
            .args(["--type", "google.protobuf.FileDescriptorSet", "-"]),
        Some(b"\x0a\x05ab"),
    );
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err:?}");
    assert!(lines[0].starts_with("protojit: note: ") && lines[1] == line, "{err:?}");
}

/// Whether protoc (`$PROTOC`, else from `PATH`) runs; says why `test` is skipped if not.
fn protoc_runnable(test: &str) -> bool {
    let protoc = std::env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    let runs = Command::new(&protoc).arg("--version").output().is_ok_and(|o| o.status.success());
    if !runs {
        println!("SKIPPED {test}: {protoc:?} is not runnable");
    }
    runs
}

/// The README's first set-up command, `cargo run -p protojit-cli -- decode ...`, works on a
/// fresh clone: the package has two binaries, so `cargo run` needs `default-run` to pick
/// `protojit`; and the command's arguments decode the shipped sample. (`.ci/run` also runs
/// the command itself, exactly as the README writes it.)
#[test]
fn readme_first_command_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let block = readme.split("```sh\n").nth(1).expect("README has a ```sh block");
    let command = block.lines().next().unwrap();
    let args = command
        .strip_prefix("cargo run -p protojit-cli -- ")
        .unwrap_or_else(|| panic!("README's first command is not `cargo run -p protojit-cli -- ...`: {command}"));
    let manifest = std::fs::read_to_string(root().join("cli/Cargo.toml")).unwrap();
    let default_run = manifest
        .lines()
        .take_while(|l| !l.starts_with("[[") && *l != "[dependencies]")
        .find_map(|l| l.strip_prefix("default-run = "))
        .unwrap_or_else(|| {
            panic!("cli/Cargo.toml has no `default-run` in [package]: `cargo run` cannot choose a binary")
        });
    assert_eq!(default_run, "\"protojit\"", "cargo run must run the protojit command");
    let out = run(protojit().args(args.split_whitespace()), None);
    assert!(out.status.success(), "{command}: exit {:?}, stderr: {}", out.status.code(), stderr(&out));
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("device: "), "{command}");
}
