//! Shared helpers of the CLI tests: running the binary, the shared corpus, expected files.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The workspace root: relative paths in commands are resolved from there.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The shared corpus (`../shared/corpus` beside the workspace), if present; when absent,
/// `test` fails under `CI=true` and is skipped (saying so) otherwise. See
/// [`protojit_corpus::require_shared_corpus`].
pub fn corpus(test: &str) -> Option<PathBuf> {
    protojit_corpus::require_shared_corpus(test)
}

#[path = "../../../tests/common/payloads.rs"]
mod payloads;
#[allow(unused_imports)]
pub use payloads::PAYLOADS;

/// Columnar and SQL helpers (they read Arrow and Parquet back with protojit-arrow).
#[cfg(feature = "columns")]
pub mod columns;

/// Schema flags for a corpus `.proto` file. `descriptor.proto` uses syntax protox 0.10
/// rejects, so it is read from the descriptor set it describes (no protoc needed).
pub fn schema_flags(dir: &Path, proto: &str) -> Vec<String> {
    if proto == "descriptor.proto" {
        vec!["--descriptor-set".into(), dir.join("descriptor.fds.bin").display().to_string()]
    } else {
        vec!["--proto".into(), dir.join(proto).display().to_string(), "-I".into(), dir.display().to_string()]
    }
}

/// The binary, run from the workspace root, with a backtrace requested so that a panic
/// could not go unnoticed in stderr.
pub fn protojit() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_protojit"));
    cmd.current_dir(root()).env("RUST_BACKTRACE", "1");
    cmd
}

/// Runs `cmd` with `stdin` as its standard input (empty when `None`).
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run protojit");
    let input = stdin.unwrap_or_default().to_vec();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The child may exit before reading everything (errors); a broken pipe is fine.
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Success, with nothing on stderr; returns stdout.
#[track_caller]
pub fn ok(out: &Output) -> Vec<u8> {
    assert!(out.status.success(), "exit {:?}, stderr: {}", out.status.code(), stderr(out));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(out));
    out.stdout.clone()
}

/// Panics with the first differing line of `got` and `want`.
#[track_caller]
pub fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let got = String::from_utf8_lossy(got);
        let exp = String::from_utf8_lossy(want);
        let line = got
            .lines()
            .zip(exp.lines())
            .position(|(a, b)| a != b)
            .map_or(got.lines().count().min(exp.lines().count()), |i| i)
            + 1;
        panic!(
            "{what}: output differs ({} vs {} bytes), first at line {line}: {:?} vs {:?}",
            got.len(),
            exp.len(),
            got.lines().nth(line - 1),
            exp.lines().nth(line - 1)
        );
    }
}

/// Failure with exit code `code` and exactly one line on stderr (`protojit: ...`) that
/// is no panic message; returns that line. Stdout may hold earlier records of a stream.
#[track_caller]
pub fn one_line_error(out: &Output, code: i32) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(err.ends_with('\n') && err.matches('\n').count() == 1, "stderr is not exactly one line: {err:?}");
    assert!(err.starts_with("protojit: "), "{err:?}");
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE"] {
        assert!(!err.contains(bad), "stderr mentions {bad}: {err:?}");
    }
    err.trim_end().to_owned()
}

/// Like [`one_line_error`], and nothing on stdout.
#[track_caller]
pub fn assert_fails(out: &Output, code: i32) -> String {
    let line = one_line_error(out, code);
    assert!(out.stdout.is_empty(), "stdout not empty: {}", stdout(out));
    line
}

/// 64-bit FNV-1a, as tests/expected/regen.sh computes it for `.digest` files.
pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    h
}

/// Checks `got` against `<stem>.txt`, or the length and digest in `<stem>.digest`.
#[track_caller]
pub fn assert_expected(stem: &Path, got: &[u8]) {
    let txt = stem.with_file_name(format!("{}.txt", stem.file_name().unwrap().to_string_lossy()));
    let digest = stem.with_file_name(format!("{}.digest", stem.file_name().unwrap().to_string_lossy()));
    if let Ok(want) = std::fs::read(&txt) {
        assert_same(got, &want, &txt.display().to_string());
    } else {
        let d = std::fs::read_to_string(&digest)
            .unwrap_or_else(|e| panic!("{}: {e}; run tests/expected/regen.sh", digest.display()));
        let want = format!("len {}\nfnv1a64 {:016x}\n", got.len(), fnv1a64(got));
        assert_eq!(want, d, "{}: output differs from protoc's", digest.display());
    }
}

/// Appends `v` as a varint.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Records as one varint-length-delimited stream.
pub fn delimited<'a>(records: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        varint(&mut out, r.len() as u64);
        out.extend_from_slice(r);
    }
    out
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("protojit-clitest-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn write(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        path
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small proto3 schema used by tests that need no corpus.
pub const SAMPLE_PROTO: &str = r#"
syntax = "proto3";
package sample;
enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }
message Reading {
  int32 id = 1;
  string label = 2;
  repeated double values = 3;
  Color color = 4;
  map<string, int64> counts = 5;
  Reading child = 6;
  int64 big = 7;
}
message Readings { repeated Reading items = 1; }
"#;

/// One `Reading` in canonical encoding: id, label, values, color, one map entry and a
/// 64-bit number.
pub fn reading(id: u32, label: &str, value: f64) -> Vec<u8> {
    let mut m = Vec::new();
    if id != 0 {
        m.push(0x08);
        varint(&mut m, u64::from(id));
    }
    m.push(0x12);
    varint(&mut m, label.len() as u64);
    m.extend_from_slice(label.as_bytes());
    m.extend_from_slice(&[0x1a, 0x08]);
    m.extend_from_slice(&value.to_le_bytes());
    if !id.is_multiple_of(3) {
        m.extend_from_slice(&[0x20, (id % 3) as u8]);
    }
    // counts { key: "n" value: id + 1 }
    let mut entry = vec![0x0a, 0x01, b'n', 0x10];
    varint(&mut entry, u64::from(id) + 1);
    m.push(0x2a);
    varint(&mut m, entry.len() as u64);
    m.extend_from_slice(&entry);
    m.push(0x38);
    varint(&mut m, 1u64 << 40 | u64::from(id));
    m
}
