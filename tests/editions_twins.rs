//! An editions type and its proto2/proto3 twin get the same layout and the same Cranelift IR: features resolve to the decisions the syntax made, so the decoder cannot tell them apart.
//!
//! The twins are protobuf's proto2/proto3 test messages and their edition 2023 forms, both
//! from release 35.1 (`tests/fixtures/editions/twin35_*.fds` and the corpus's editions sets,
//! made by `scripts/editions_fixtures.sh`): same types, same fields, different packages.

mod editions_support;

use std::collections::BTreeMap;

use editions_support::{corpus, fixture};
use protojit::{EngineKind, EngineOptions, Schema};
use protojit_jit::CompileOptions;

/// `name` without its package (`protobuf_test_messages.proto2.` or `….editions.proto2.`),
/// so that twins' names compare equal; other packages (the well-known types) stay.
fn local(name: &str, package: &str) -> String {
    name.strip_prefix(package).map_or_else(|| name.to_owned(), str::to_owned)
}

/// `text` with the package removed from every type name in it (the twins' packages differ;
/// nothing else may).
fn unpackage(text: &str, package: &str) -> String {
    text.replace(package, "")
}

/// The IR with what legitimately differs between two compilations of the same decoder
/// blanked out: absolute addresses (the empty-message blocks each schema owns are
/// addresses baked into the code as constants).
fn normalize(ir: &str) -> String {
    let mut out = String::with_capacity(ir.len());
    for line in ir.lines() {
        let words: Vec<String> = line
            .split(' ')
            .map(|w| {
                let digits = w.strip_prefix("0x").unwrap_or("");
                // Addresses are 12+ hex digits on x86-64 and aarch64; field numbers, tags,
                // offsets and masks of the layouts are far shorter.
                if digits.len() >= 12 && digits.chars().all(|c| c.is_ascii_hexdigit() || c == '_') {
                    "<address>".to_owned()
                } else {
                    w.to_owned()
                }
            })
            .collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// Per reachable type (package stripped): machine-code bytes and normalized IR.
fn compiled(bytes: &[u8], root: &str, package: &str) -> BTreeMap<String, (u32, String)> {
    let schema = Schema::from_descriptor_set(bytes).unwrap();
    let options = CompileOptions { keep_clif: true, ..schema.compile_options().clone() };
    let schema = schema.with_compile_options(options);
    let decoder = schema.decoder_with_options(root, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
    decoder
        .stats()
        .types
        .into_iter()
        .map(|t| {
            let ir = t.clif.unwrap_or_else(|| panic!("{}: not compiled", t.message_type));
            (local(&t.message_type, package), (t.code_bytes, normalize(&unpackage(&ir, package))))
        })
        .collect()
}

fn same_code(legacy_set: &str, editions_set: &str, legacy_pkg: &str, editions_pkg: &str, root: &str) {
    let Some(editions) = corpus(editions_set) else { return };
    let legacy = compiled(&fixture(legacy_set), &format!("{legacy_pkg}{root}"), legacy_pkg);
    let editions = compiled(&editions, &format!("{editions_pkg}{root}"), editions_pkg);
    assert_eq!(
        legacy.keys().collect::<Vec<_>>(),
        editions.keys().collect::<Vec<_>>(),
        "{root}: the twins reach the same types"
    );
    assert!(legacy.len() > 5, "{root}: {} types", legacy.len());
    for (name, (bytes, ir)) in &legacy {
        let (e_bytes, e_ir) = &editions[name];
        if ir != e_ir {
            let first = ir.lines().zip(e_ir.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{name}: the IR differs from line {first}:\n  legacy:   {}\n  editions: {}",
                ir.lines().nth(first).unwrap_or(""),
                e_ir.lines().nth(first).unwrap_or("")
            );
        }
        assert_eq!(bytes, e_bytes, "{name}: machine-code bytes");
    }
}

#[test]
fn proto2_twin_compiles_to_the_same_code() {
    same_code(
        "twin35_proto2.fds",
        "editions/test_messages_proto2_editions.fds",
        "protobuf_test_messages.proto2.",
        "protobuf_test_messages.editions.proto2.",
        "TestAllTypesProto2",
    );
}

#[test]
fn proto3_twin_compiles_to_the_same_code() {
    same_code(
        "twin35_proto3.fds",
        "editions/test_messages_proto3_editions.fds",
        "protobuf_test_messages.proto3.",
        "protobuf_test_messages.editions.proto3.",
        "TestAllTypesProto3",
    );
}
