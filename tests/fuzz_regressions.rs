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
/// included. The editions loader (src/editions.rs) now reads every file's syntax before
/// prost-reflect does: editions files reach it lowered to proto2, any other syntax is a
/// `SchemaError::Editions`.
#[test]
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

fn everything() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas");
    Schema::from_proto_files(&[dir.join("everything.proto")], &[&dir]).unwrap()
}

/// The unknown fields of `input` decoded as `everything.Everything` with `engine`.
fn unknown_fields(schema: &Schema, engine: protojit::EngineKind, input: &[u8]) -> Vec<Vec<u8>> {
    let decoder = schema
        .decoder_with_options("everything.Everything", &protojit::EngineOptions::default().with_kind(engine))
        .unwrap();
    let arena = protojit::Arena::new();
    let msg = decoder.decode(input, &arena).unwrap();
    msg.unknown_fields().map(<[u8]>::to_vec).collect()
}

/// Found by `reencode_roundtrip` (re-encoding was not canonical: the second decode
/// changed an unknown field). Not a bug: protoc does the same.
///
/// A closed enum's undeclared value is kept as an unknown varint field. A single value is
/// kept as the enum's int32, sign-extended (2^32 + 7 is kept as 7), but a value inside a
/// packed run keeps its raw varint: protoc 3.21 prints exactly that for both (the golden
/// case `enums_closed_wide_varints` of tests/text_format.rs pins it). So re-encoding a
/// packed run's undeclared 2^32 + 7 and decoding it again reads 7, in protoc as here; the
/// `reencode_roundtrip` target tolerates it.
#[test]
fn packed_closed_enum_unknown_value_keeps_its_raw_varint_as_protoc_does() {
    let schema = everything();
    // packed_color (field 64, packed) = [2^32 + 7]; 7 is no Color.
    let packed = [0x82, 0x04, 0x05, 0x87, 0x80, 0x80, 0x80, 0x10];
    // The same value unpacked: field 64 as a varint.
    let unpacked = [0x80, 0x04, 0x87, 0x80, 0x80, 0x80, 0x10];
    for engine in [protojit::EngineKind::Jit, protojit::EngineKind::Interpreter] {
        assert_eq!(unknown_fields(&schema, engine, &unpacked), [vec![0x80, 0x04, 0x07]], "{engine:?} unpacked");
        assert_eq!(
            unknown_fields(&schema, engine, &packed),
            [vec![0x80, 0x04, 0x87, 0x80, 0x80, 0x80, 0x10]],
            "{engine:?} packed"
        );
    }
}
