//! `.proto` files written in editions: protox cannot parse them, so they go to protoc, whose version is checked first (27 for edition 2023, 32 for 2024); an old or missing protoc is one line that says what to do. One test: it sets `$PROTOC`, which the whole process shares.

use std::path::{Path, PathBuf};

use protojit::{Arena, Schema, SchemaError};

const E2023: &str = "edition = \"2023\";\npackage ed;\nmessage Event {\n  int32 id = 1 [features.field_presence = IMPLICIT];\n  string name = 2;\n}\n";
const E2024: &str =
    "// a comment first\n/* and a block */\nedition = \"2024\";\npackage ed;\nmessage Event { int32 id = 1; }\n";

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!("protojit-editions-protoc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
    /// A fake protoc that prints `version` for `--version` and fails otherwise.
    fn fake_protoc(&self, version: &str) -> PathBuf {
        let path = self.write(
            &format!("protoc-{version}"),
            &format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'libprotoc {version}'; exit 0; fi\necho ran >&2; exit 1\n"),
        );
        make_executable(&path);
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn compile_error(file: &Path) -> String {
    match Schema::from_proto_files(&[file], &[] as &[&Path]) {
        Err(e @ SchemaError::Compile { .. }) => e.to_string(),
        Err(e) => panic!("{}: not a compile error: {e}", file.display()),
        Ok(_) => panic!("{}: compiled", file.display()),
    }
}

/// A protoc that compiles editions: `$PROTOJIT_EDITIONS_PROTOC` (a protoc ≥ 32, or a script
/// running `python -m grpc_tools.protoc`), else `protoc` on PATH if it is new enough.
fn real_protoc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROTOJIT_EDITIONS_PROTOC") {
        return Some(PathBuf::from(p));
    }
    let out = std::process::Command::new("protoc").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let major: u32 = text.trim().strip_prefix("libprotoc ")?.split('.').next()?.parse().ok()?;
    (major >= 32).then(|| PathBuf::from("protoc"))
}

#[test]
fn editions_proto_files_need_a_new_enough_protoc() {
    let tmp = TempDir::new();
    let e2023 = tmp.write("e2023.proto", E2023);
    let e2024 = tmp.write("e2024.proto", E2024);

    std::env::set_var("PROTOC", tmp.fake_protoc("25.1"));
    let err = compile_error(&e2023);
    assert!(
        err.starts_with(&format!(
            "{} uses edition 2023, which protox cannot parse and which needs protoc 27 or newer (found libprotoc 25.1 at ",
            e2023.display()
        )),
        "{err}"
    );
    assert!(err.contains("install protoc 27 or newer"), "{err}");
    assert!(err.contains(&format!("`protoc --include_imports -o set.pb {}`", e2023.display())), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");

    // A proto3 file that imports an editions file (through another import, after comments)
    // needs the same protoc: the imported file is named.
    let via = tmp.write(
        "via.proto",
        "syntax = \"proto3\";\n/* imports */ import public \"e2023.proto\"; // the editions file\n",
    );
    let importer = tmp.write(
        "importer.proto",
        "syntax = \"proto3\";\n// first\nimport \"via.proto\";\nmessage Uses { ed.Event event = 1; }\n",
    );
    let err = compile_error(&importer);
    assert!(
        err.starts_with(&format!(
            "{} uses edition 2023, which protox cannot parse and which needs protoc 27",
            e2023.display()
        )),
        "{err}"
    );
    let _ = via;

    // The 3.x series (Debian's 3.21) is older than 27, and 2024 needs 32.
    std::env::set_var("PROTOC", tmp.fake_protoc("3.21.12"));
    assert!(compile_error(&e2023).contains("needs protoc 27 or newer (found libprotoc 3.21.12 at "));
    std::env::set_var("PROTOC", tmp.fake_protoc("31.1"));
    let err = compile_error(&e2024);
    assert!(err.contains("uses edition 2024, which protox cannot parse and which needs protoc 32 or newer"), "{err}");
    assert!(err.contains("found libprotoc 31.1"), "{err}");

    // New enough: protoc is run (the fake one fails, and says so).
    std::env::set_var("PROTOC", tmp.fake_protoc("32.0"));
    let err = compile_error(&e2024);
    assert!(err.starts_with("cannot compile the schema: protoc: ran"), "{err}");

    std::env::set_var("PROTOC", tmp.0.join("no-such-protoc"));
    let err = compile_error(&e2023);
    assert!(err.contains("needs protoc 27 or newer ($PROTOC names "), "{err}");
    assert!(err.contains("no-such-protoc, which does not exist): install protoc 27 or newer"), "{err}");

    // A proto2/proto3 file never asks for protoc's version: protox compiles it.
    let p3 = tmp.write("p3.proto", "syntax = \"proto3\";\nmessage M { int32 a = 1; }\n");
    Schema::from_proto_files(&[&p3], &[] as &[&Path]).unwrap();

    // With a real protoc, an editions file compiles, its features honoured.
    let Some(protoc) = real_protoc() else {
        eprintln!("SKIPPED editions_proto_files_need_a_new_enough_protoc (real protoc part): no protoc >= 32 (set PROTOJIT_EDITIONS_PROTOC)");
        return;
    };
    std::env::set_var("PROTOC", &protoc);
    for file in [&e2023, &e2024] {
        let schema = Schema::from_proto_files(&[file], &[] as &[&Path]).unwrap();
        assert!(schema.notes().iter().any(|n| n.contains("compiled it with protoc instead")), "{:?}", schema.notes());
        let decoder = schema.decoder("ed.Event").unwrap();
        let arena = Arena::new();
        let msg = decoder.decode(b"\x08\x00", &arena).unwrap();
        let explicit = file == &e2024;
        assert_eq!(msg.has("id"), explicit, "{}: id's presence is its feature's", file.display());
        assert_eq!(msg.encode_to_vec(), if explicit { b"\x08\x00".to_vec() } else { Vec::new() });
    }
}
