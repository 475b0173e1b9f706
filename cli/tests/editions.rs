//! Editions end to end: an editions descriptor set decodes as protoc prints it, `schema show` prints the edition and the resolved features, and every editions refusal is one line with exit code 2.

mod support;

use std::path::PathBuf;

use support::*;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/editions").join(name)
}

/// A descriptor set of one file, `name`, with `syntax = "editions"`, edition number
/// `edition` and, if given, file options holding a `FeatureSet` of `features` bytes.
fn editions_set(name: &str, edition: u16, features: &[u8]) -> Vec<u8> {
    let mut file = vec![0x0a, name.len() as u8];
    file.extend_from_slice(name.as_bytes());
    file.extend_from_slice(&[0x62, 8]);
    file.extend_from_slice(b"editions");
    file.push(0x70); // field 14 (edition), varint
    varint(&mut file, edition.into());
    if !features.is_empty() {
        // FileOptions.features is field 50: tag 402.
        let mut options = vec![0x92, 0x03, features.len() as u8];
        options.extend_from_slice(features);
        file.push(0x42);
        file.push(options.len() as u8);
        file.extend_from_slice(&options);
    }
    let mut set = vec![0x0a, file.len() as u8];
    set.extend_from_slice(&file);
    set
}

#[test]
fn editions_set_decodes_as_protoc_prints_it() {
    for (payload, type_name) in
        [("implicit_2024.payload.bin", "fx.ed2024.Implicit"), ("expanded_2024.payload.bin", "fx.ed2024.Expanded")]
    {
        for engine in ["interpreter", "jit"] {
            let out = run(
                protojit()
                    .args(["decode", "--engine", engine, "--utf8", "proto3", "--descriptor-set"])
                    .arg(fixture("mixed_2024.fds"))
                    .args(["--type", type_name])
                    .arg(fixture(payload)),
                None,
            );
            let want = std::fs::read(fixture(&format!("expected/{payload}.{type_name}.txt"))).unwrap();
            assert_same(&ok(&out), &want, &format!("{payload} ({engine})"));
        }
    }
}

#[test]
fn schema_show_prints_edition_and_features() {
    let out = run(
        protojit()
            .args(["schema", "show", "--descriptor-set"])
            .arg(fixture("mixed_2024.fds"))
            .arg("fx.ed2024.Implicit"),
        None,
    );
    let text = stdout(&out);
    ok(&out);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("message fx.ed2024.Implicit (edition 2024, ed2024.proto)"));
    assert_eq!(
        lines.next(),
        Some(
            "  features: field_presence=EXPLICIT enum_type=OPEN repeated_field_encoding=PACKED utf8_validation=NONE \
             message_encoding=LENGTH_PREFIXED json_format=LEGACY_BEST_EFFORT enforce_naming_style=STYLE2024 \
             default_symbol_visibility=EXPORT_TOP_LEVEL"
        )
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("a"), "1 a int32 singular 0 field_presence=IMPLICIT");
    assert_eq!(row("s"), "2 s string singular \"\" field_presence=IMPLICIT utf8_validation=VERIFY");
    assert_eq!(row("b"), "3 b int32 optional 0");
    assert_eq!(row("expanded"), "8 expanded int32 repeated repeated_field_encoding=EXPANDED");
    assert_eq!(row("req"), "10 req int32 required 0 field_presence=LEGACY_REQUIRED");
    assert!(
        row("delimited").starts_with("9 delimited group fx.ed2024.Implicit.Inner optional message_encoding=DELIMITED")
    );
}

#[test]
fn editions_refusals_exit_2_with_one_line() {
    let tmp = TempDir::new("editions-refusals");
    let new = tmp.write("new.pb", &editions_set("new.proto", 1002, &[]));
    let out = run(protojit().args(["schema", "list", "--descriptor-set"]).arg(&new), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("file `new.proto`: edition EDITION_2026 is not supported"), "{line}");
    assert!(line.contains(&new.display().to_string()), "{line}");

    // field_presence = 9 in the file's options.
    let value = tmp.write("value.pb", &editions_set("v.proto", 1000, &[0x08, 0x09]));
    let out = run(protojit().args(["schema", "list", "--descriptor-set"]).arg(&value), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("file `v.proto`: file options: feature `field_presence` has value 9"), "{line}");

    // An editions .proto with a protoc too old for it.
    let proto = tmp.write("e.proto", b"edition = \"2023\";\npackage e;\nmessage M { int32 a = 1; }\n");
    let protoc = tmp.write("old-protoc", b"#!/bin/sh\necho 'libprotoc 3.21.12'\n");
    std::fs::set_permissions(&protoc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = run(protojit().env("PROTOC", &protoc).args(["schema", "list", "--proto"]).arg(&proto), None);
    let line = assert_fails(&out, 2);
    assert!(line.contains("uses edition 2023, which protox cannot parse and which needs protoc 27 or newer"), "{line}");
    assert!(line.contains("found libprotoc 3.21.12"), "{line}");
}
