//! The read grid: one handle resolver (`Field::resolve`), one type-name rule (`Layouts::find_type`), one field-path grammar (`parse_path` / `find_field`) that handles, `FieldPath` and Arrow's `select` read alike. Every path form each old dialect accepted resolves to the same field.

mod support;

use protojit_arena::Arena;
use protojit_reflect::{
    field, find_field, parse_path, Field, FieldName, FieldPath, HandleError, MessageRef, PathErrorKind, PathSegment,
    Selector, Value,
};
use support::{decode, layouts, len_field, varint_field};

const PROTO: &str = r#"
syntax = "proto2";
package g;
message Root {
  optional int64 id = 1;
  optional string display_name = 2;
  optional Inner inner = 3;
  repeated Inner items = 4;
  map<string, int32> counts = 5;
  repeated int32 deltas = 6;
  optional int32 json_clash = 7 [json_name = "renamed"];
  optional int32 other = 8;
  extensions 100 to 200;
  message Inner { optional Leaf leaf = 1; optional int32 x = 2; }
}
message Leaf { optional double v = 1; optional string note_text = 2; }
message Again { message Inner { optional int32 y = 1; } }
extend Root { optional int32 tag_ext = 100; optional Leaf leaf_ext = 101; }
"#;

fn sample() -> Vec<u8> {
    let mut leaf = Vec::new();
    leaf.extend([0x09]);
    leaf.extend(2.5f64.to_le_bytes());
    len_field(&mut leaf, 2, b"deep");
    let mut inner = Vec::new();
    len_field(&mut inner, 1, &leaf);
    varint_field(&mut inner, 2, 9);
    let mut out = Vec::new();
    varint_field(&mut out, 1, 7);
    len_field(&mut out, 2, b"seven");
    len_field(&mut out, 3, &inner);
    len_field(&mut out, 4, &inner);
    varint_field(&mut out, 7, 70);
    varint_field(&mut out, 8, 80);
    varint_field(&mut out, 100, 42);
    len_field(&mut out, 101, &leaf);
    out
}

#[test]
fn one_resolver_for_every_type_name_form() {
    let l = layouts("g.proto", PROTO);
    let input = sample();
    let arena = Arena::new();
    let m = decode(&l, "g.Root", &input, &arena);
    // Full name, leading dot, short name: the same handle.
    for name in ["g.Root", ".g.Root", "Root"] {
        let id = Field::<i64>::resolve(&l, name, "id").unwrap();
        assert_eq!(id.get(&m), Some(7), "{name}");
        assert_eq!(id.message_name(), "g.Root");
    }
    // From a decoded message, through its type's full name.
    let from_msg = Field::<i64>::resolve(m.layouts(), m.descriptor().full_name(), "id").unwrap();
    assert_eq!(from_msg.get(&m), Some(7));
    // Partly qualified (as `Schema::decoder` takes it): `Root.Inner`.
    let x = Field::<i32>::resolve(&l, "Root.Inner", "x").unwrap();
    assert_eq!(x.message_name(), "g.Root.Inner");
    // Ambiguous and unknown short names.
    match Field::<i32>::resolve(&l, "Inner", "x") {
        Err(HandleError::AmbiguousType { name, mut candidates }) => {
            candidates.sort();
            assert_eq!(
                (name.as_str(), &candidates[..]),
                ("Inner", &["g.Again.Inner".to_owned(), "g.Root.Inner".to_owned()][..])
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(Field::<i32>::resolve(&l, "Nope", "x").unwrap_err(), HandleError::UnknownType("Nope".into()));
    // Map entries by full name only.
    assert!(Field::<i32>::resolve(&l, "g.Root.CountsEntry", "value").is_ok());
    assert_eq!(
        Field::<i32>::resolve(&l, "CountsEntry", "value").unwrap_err(),
        HandleError::UnknownType("CountsEntry".into())
    );
}

/// Every segment form the old dialects took (handles: name, JSON name, `#number`;
/// `FieldPath`: those and `(extension)`; Arrow's `select`: declared names), through
/// handles and through `FieldPath`: the same field, the same value.
#[test]
fn every_old_path_form_reads_the_same_field_everywhere() {
    let l = layouts("g.proto", PROTO);
    let input = sample();
    let arena = Arena::new();
    let m = decode(&l, "g.Root", &input, &arena);
    let root = l.get(l.index_of("g.Root").unwrap()).descriptor().clone();
    let cases: &[(&str, f64)] = &[
        ("inner.leaf.v", 2.5),
        ("inner.#1.v", 2.5),
        ("#3.#1.#1", 2.5),
        ("inner.leaf.#1", 2.5),
        ("(g.leaf_ext).v", 2.5),
        ("(.g.leaf_ext).v", 2.5),
        ("#101.v", 2.5),
    ];
    for &(path, want) in cases {
        let h = Field::<f64>::resolve(&l, "g.Root", path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(h.get(&m), Some(want), "handle {path}");
        let fp = FieldPath::parse(&root, path).unwrap();
        assert_eq!(fp.first(&m).and_then(|v| v.as_f64()), Some(want), "FieldPath {path}");
        assert_eq!(m.path(path).unwrap().len(), 1, "{path}");
    }
    // Declared names and JSON names (a custom one too).
    let ints: &[(&str, i64)] =
        &[("id", 7), ("#1", 7), ("other", 80), ("json_clash", 70), ("renamed", 70), ("#7", 70), ("#100", 42)];
    for &(path, want) in ints {
        let got = match Field::<i64>::resolve(&l, "g.Root", path) {
            Ok(h) => h.get(&m).unwrap(),
            Err(_) => Field::<i32>::resolve(&l, "g.Root", path).unwrap().get(&m).unwrap() as i64,
        };
        assert_eq!(got, want, "handle {path}");
        let v = m.path(path).unwrap();
        assert_eq!(v.len(), 1, "{path}");
        assert_eq!(v[0].as_i64().or(v[0].as_i32().map(i64::from)), Some(want), "FieldPath {path}");
    }
    let names: &[(&str, &str)] =
        &[("display_name", "seven"), ("displayName", "seven"), ("inner.leaf.note_text", "deep")];
    for &(path, want) in names {
        assert_eq!(Field::<field::Str>::resolve(&l, "g.Root", path).unwrap().get(&m), Some(want), "{path}");
        assert_eq!(m.path(path).unwrap()[0].as_str(), Some(want), "{path}");
    }
    // The lookup a segment goes through: declared name, else JSON name.
    let seg = parse_path("renamed").unwrap();
    let PathSegment::Field(name) = &seg[0].segment else { panic!() };
    assert_eq!(find_field(&root, name).unwrap().number(), 7);
    assert!(find_field(&root, &FieldName::Name("jsonClash")).is_none());
    assert_eq!(find_field(&root, &FieldName::Name("displayName")).unwrap().number(), 2);
}

#[test]
fn the_parser_splits_every_form_of_the_grammar() {
    let segs = parse_path(r#"a.#7.(pkg.ext)[2][-1][*]["k \"q\""][true].b_c9"#).unwrap();
    let got: Vec<(PathSegment<'_>, &str, usize)> = segs.iter().map(|s| (s.segment.clone(), s.text, s.offset)).collect();
    assert_eq!(
        got,
        [
            (PathSegment::Field(FieldName::Name("a")), "a", 0),
            (PathSegment::Field(FieldName::Number(7)), "#7", 2),
            (PathSegment::Field(FieldName::Extension("pkg.ext")), "(pkg.ext)", 5),
            (PathSegment::Select(Selector::Bare("2".into())), "[2]", 14),
            (PathSegment::Select(Selector::Bare("-1".into())), "[-1]", 17),
            (PathSegment::Select(Selector::All), "[*]", 21),
            (PathSegment::Select(Selector::Quoted("k \"q\"".into())), r#"["k \"q\""]"#, 24),
            (PathSegment::Select(Selector::Bare("true".into())), "[true]", 35),
            (PathSegment::Field(FieldName::Name("b_c9")), "b_c9", 42),
        ]
    );
    for bad in ["", "a.", ".a", "a..b", "#", "#x", "a b", "a[", "a[\"x]", "()", "1a", "a-b"] {
        let err = parse_path(bad).unwrap_err();
        assert!(matches!(err.kind, PathErrorKind::Empty | PathErrorKind::Syntax(_)), "{bad:?}: {err}");
    }
}

#[test]
fn handles_take_field_chains_through_singular_messages() {
    let l = layouts("g.proto", PROTO);
    let err = |path: &str| Field::<i32>::resolve(&l, "g.Root", path).unwrap_err();
    for path in ["", "inner.", ".id", "inner..x"] {
        assert_eq!(err(path), HandleError::Empty { path: path.into() }, "{path:?}");
    }
    assert!(matches!(err("deltas[0]"), HandleError::Selector { ref segment, .. } if segment == "[0]"));
    assert!(matches!(err("items.x"), HandleError::NotAMessage { ref field, .. } if field == "items"));
    assert!(matches!(err("nope"), HandleError::UnknownField { ref field, .. } if field == "nope"));
    assert!(matches!(err("#99"), HandleError::UnknownField { ref field, .. } if field == "#99"));
    assert!(matches!(err("(g.nope)"), HandleError::UnknownField { .. }));
    assert!(matches!(err("a b"), HandleError::Path(_)));
    // `FieldPath` takes what handles do not: elements and map values.
    let input = sample();
    let arena = Arena::new();
    let m = decode(&l, "g.Root", &input, &arena);
    assert_eq!(m.path("items[0].x").unwrap()[0].as_i32(), Some(9));
    assert_eq!(m.path("items[*].leaf.v").unwrap().len(), 1);
    assert!(matches!(m.path("counts[\"a\"]").unwrap()[..], []));
}

#[test]
fn reads_go_through_one_name_each() {
    let l = layouts("g.proto", PROTO);
    let input = sample();
    let arena = Arena::new();
    let m: MessageRef<'_> = decode(&l, "g.Root", &input, &arena);
    let id = Field::<i64>::resolve(&l, "g.Root", "id").unwrap();
    assert_eq!(id.get(&m), Some(7));
    assert!(id.has(&m));
    assert_eq!(m.get("id").and_then(|v| v.as_i64()), Some(7));
    assert_eq!(m.get_by_number(1).and_then(|v| v.as_i64()), Some(7));
    assert!(m.has("id") && m.has_by_number(1) && !m.has("inner.x"));
    assert!(matches!(m.get("display_name"), Some(Value::String("seven"))));
    // A string list read as text, checked on read (a tree a writer finished).
    let strs = Field::<field::List<field::Str>>::resolve(&l, "g.Leaf", "note_text");
    assert!(matches!(strs, Err(HandleError::KindMismatch { .. })));
}
