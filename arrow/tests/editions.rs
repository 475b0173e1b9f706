//! Editions schemas to Arrow: a singular field's column is nullable exactly when its resolved `field_presence` gives it presence (EXPLICIT, LEGACY_REQUIRED, messages, oneof members), not when its file's syntax (proto2, as the loader hands editions files on) would.

use protojit::Schema;
use protojit_arrow::arrow_array::Array;
use protojit_arrow::{ArrowOptions, Converter};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/editions").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn nullability_follows_presence() {
    let schema = Schema::from_descriptor_set(&fixture("mixed_2024.fds")).unwrap();
    let converter = Converter::new(&schema, "fx.ed2024.Implicit", &ArrowOptions::default()).unwrap();
    let arrow = converter.arrow_schema();
    let nullable = |name: &str| arrow.field_with_name(name).unwrap().is_nullable();
    // IMPLICIT scalars and enums: their values, never null.
    assert!(!nullable("a"));
    assert!(!nullable("s"));
    assert!(!nullable("o"));
    // EXPLICIT (the 2024 default), LEGACY_REQUIRED, a message, oneof members: null when absent.
    assert!(nullable("b"));
    assert!(nullable("c"));
    assert!(nullable("req"));
    assert!(nullable("inner"));
    assert!(nullable("x"));

    // One record with `a` absent and `b` absent: `a` reads 0, `b` null.
    let batch = converter.convert([&b"\x50\x01"[..]]).unwrap();
    let column = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
    assert_eq!(column("a").null_count(), 0);
    assert_eq!(column("b").null_count(), 1);
    assert_eq!(column("req").null_count(), 0);
}
