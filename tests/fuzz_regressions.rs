//! Reproducers of bugs the fuzz targets found (see FUZZING.md); ignored ones are not fixed yet and name the bug.

use protojit::Schema;

/// A `FileDescriptorSet` with one file, `a.proto`, whose `syntax` field is `syntax`.
fn set_with_syntax(syntax: &str) -> Vec<u8> {
    let mut file = vec![0x0a, 7];
    file.extend_from_slice(b"a.proto");
    file.push(0x62); // field 12 (syntax), length-delimited
    file.push(syntax.len() as u8);
    file.extend_from_slice(syntax.as_bytes());
    let mut set = vec![0x0a, file.len() as u8]; // field 1 (file)
    set.extend_from_slice(&file);
    set
}

/// Found by `schema_load` (input `\0\0\0` + a descriptor set with `syntax = "proto4"`).
///
/// prost-reflect 0.16.5 panics ("index out of bounds: the len is 0 but the index is 0",
/// `descriptor/error.rs:782`) instead of returning its `UnknownSyntax` error: its name
/// collector (`descriptor/build/names.rs`, `visit_file`) builds the error's label with
/// `Label::new(&self.pool.files, .., index, ..)` before the file is pushed to
/// `pool.files`. Any syntax but absent, "proto2" or "proto3" triggers it, "editions"
/// included, so `Schema::from_descriptor_set` panics on an editions descriptor set from
/// protoc. Until prost-reflect is fixed, `Schema::descriptor_set` (src/schema.rs) should
/// check the syntax of every file (decoding the set with prost first) and return a
/// `SchemaError` for the others.
#[test]
#[ignore = "bug: prost-reflect 0.16.5 panics on an unknown `syntax` (Schema::from_descriptor_set must not)"]
fn unknown_syntax_is_an_error_not_a_panic() {
    for syntax in ["proto4", "editions", ""] {
        let set = set_with_syntax(syntax);
        let result = std::panic::catch_unwind(|| Schema::from_descriptor_set(&set).map(|_| ()));
        match result {
            Ok(Err(_)) => {}
            Ok(Ok(())) => panic!("syntax {syntax:?} loaded"),
            Err(_) => panic!("syntax {syntax:?}: Schema::from_descriptor_set panicked"),
        }
    }
}

/// The same sets with the syntaxes prost-reflect knows load (the reproducer's encoding is
/// right).
#[test]
fn known_syntaxes_load() {
    for syntax in ["proto2", "proto3"] {
        Schema::from_descriptor_set(&set_with_syntax(syntax)).unwrap();
    }
}
