//! `Schema::notes`: what loading a schema has to say that is not an error, returned to the caller instead of printed.

mod common;

use protojit::Schema;

#[test]
fn schemas_compiled_by_protox_or_read_from_descriptor_sets_have_no_notes() {
    let schema = Schema::from_proto_source("n.proto", "syntax = \"proto3\"; message M { int32 a = 1; }").unwrap();
    assert!(schema.notes().is_empty(), "{:?}", schema.notes());
    let schema = common::reflect_schema();
    assert!(schema.notes().is_empty(), "{:?}", schema.notes());
}

/// protox 0.10 rejects the corpus's descriptor.proto; protoc compiles it, and the schema
/// says so in its notes (with protox's reason) rather than on stderr.
#[test]
fn protoc_fallback_is_a_note() {
    let Some(dir) = common::corpus_dir("protoc_fallback_is_a_note") else { return };
    let protoc = std::env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    if !std::process::Command::new(&protoc).arg("--version").output().is_ok_and(|o| o.status.success()) {
        println!("SKIPPED protoc_fallback_is_a_note: {protoc:?} is not runnable");
        return;
    }
    let schema = Schema::from_proto_files(&[dir.join("descriptor.proto")], &[&dir]).unwrap();
    let [note] = schema.notes() else { panic!("one note expected: {:?}", schema.notes()) };
    assert!(note.starts_with("protox could not compile the schema ("), "{note}");
    assert!(note.ends_with("; compiled it with protoc instead"), "{note}");
    // Clones keep them.
    assert_eq!(schema.clone().notes(), schema.notes());
}
