//! The text parser on what protobuf 36's text format conformance suite asks beyond protoc
//! 3.21: a field named in its message's `reserved` names is skipped with its value, a group
//! (or a group-like delimited field) goes by its field name as well as its type name, and an
//! Any's type URL prefix may hold RFC 3986 sub-delims, `~` and `%XX` escapes. Exact bytes,
//! exact errors, and what must still be refused.

#[path = "support/mod.rs"]
mod support;

use std::process::{Command, Stdio};

use prost_reflect::DescriptorPool;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use protojit_parse::{text_to_binary, ParseError, ParseOptions};

const C3: &str = r#"
syntax = "proto3";
package c3;
import "google/protobuf/any.proto";
message M {
  int32 a = 1;
  M child = 2;
  google.protobuf.Any any = 3;
  reserved 10 to 12;
  reserved "reserved_field", "old";
}
"#;

const C2: &str = r#"
syntax = "proto2";
package c2;
message P {
  optional group Data = 1 { optional int32 group_int32 = 1; }
  repeated group MultiWordGroupField = 2 { optional int32 x = 1; }
  extensions 100 to 199;
}
extend P { optional group GExt = 100 { optional int32 q = 1; } }
"#;

fn pool() -> DescriptorPool {
    protojit_corpus::pool_from_sources(&[("c3.proto", C3), ("c2.proto", C2)])
}

/// An edition 2023 message as the editions loader lowers it: `groupliketype` and
/// `delimited_field` are `DELIMITED` message fields of the nested type `GroupLikeType`, so
/// both are `TYPE_GROUP`; only `groupliketype` is group-like (named as its type).
fn lowered_editions() -> support::Ty {
    let group = |name: &str, number| FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(Type::Group as i32),
        type_name: Some(".e.M.GroupLikeType".into()),
        ..Default::default()
    };
    let v = FieldDescriptorProto {
        name: Some("v".into()),
        number: Some(1),
        label: Some(Label::Optional as i32),
        r#type: Some(Type::Int32 as i32),
        ..Default::default()
    };
    let file = FileDescriptorProto {
        name: Some("e.proto".into()),
        package: Some("e".into()),
        syntax: Some("proto2".into()),
        message_type: vec![DescriptorProto {
            name: Some("M".into()),
            field: vec![group("groupliketype", 1), group("delimited_field", 2)],
            nested_type: vec![DescriptorProto {
                name: Some("GroupLikeType".into()),
                field: vec![v],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let pool = DescriptorPool::from_file_descriptor_set(FileDescriptorSet { file: vec![file] }).unwrap();
    support::ty(&pool, "e.M")
}

fn parse(ty: &support::Ty, text: &str) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    text_to_binary(&ty.layouts, ty.root, text.as_bytes(), &ParseOptions::default(), &mut out).map(|()| out)
}

#[track_caller]
fn gives(ty: &support::Ty, text: &str, want: &[u8]) {
    assert_eq!(parse(ty, text).unwrap_or_else(|e| panic!("{text}: {e}")), want, "{text}");
}

/// `text` is refused with exactly `message` at `(line, column)`.
#[track_caller]
fn refused(ty: &support::Ty, text: &str, message: &str, at: (usize, usize)) {
    match parse(ty, text) {
        Ok(b) => panic!("{text}: accepted as {b:02x?}"),
        Err(e) => assert_eq!((e.message(), e.position()), (message, at), "{text}"),
    }
}

/// `protoc --encode=TYPE` (the installed protoc) on `text` in `file` of C3/C2: Ok(bytes) or
/// Err(protoc's message).
fn protoc_encode(type_name: &str, file: &str, text: &str) -> Result<Vec<u8>, String> {
    // A directory per call: the tests run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("protojit-parse-conformance-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("c3.proto"), C3).unwrap();
    std::fs::write(dir.join("c2.proto"), C2).unwrap();
    let mut child = Command::new("protoc")
        .arg(format!("--encode={type_name}"))
        .arg(format!("-I{}", dir.display()))
        .arg(dir.join(file))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Reserved names with every value shape protobuf skips, and the bytes of the fields around
/// them. protoc 3.21 skips these as protobuf 36 does.
const RESERVED_SKIPPED: &[(&str, &[u8])] = &[
    ("reserved_field: true a: 1", &[0x08, 1]),
    ("reserved_field: -123", &[]),
    ("reserved_field: 0.123", &[]),
    ("reserved_field: ENUM_VALUE", &[]),
    ("reserved_field: \"hello\" 'world'", &[]),
    ("reserved_field: { a: 123 }", &[]),
    ("reserved_field: < a: 123 >", &[]),
    ("reserved_field { a: 123 }", &[]),
    ("reserved_field: [-123, 456]", &[]),
    ("reserved_field: [0.123, 1e-10] ", &[]),
    ("reserved_field: [\"hello\", \"world\"]", &[]),
    ("reserved_field: [{x: 1}, <y: [2]>, 3, [4]]", &[]),
    // Names inside a skipped message are not looked up: any name, extension or Any URL.
    ("reserved_field { [a.b] { q: 1 } [type.googleapis.com/x.Y] < > nope: -inf n2: 1f } a: 2", &[0x08, 2]),
    ("old: -nan old: 0x1F a: 3 old: 'x'", &[0x08, 3]),
    ("child { old: 0x1F a: 5 } reserved_field: 1", &[0x12, 2, 0x08, 5]),
    ("any { [type.googleapis.com/c3.M] { old: 1 a: 1 } }", &[]),
];

#[test]
fn reserved_names_are_skipped_with_their_values() {
    let m = support::ty(&pool(), "c3.M");
    // The Any's bytes hold its URL: written out rather than in the table.
    let any = any_bytes("type.googleapis.com/c3.M", &[0x08, 1]);
    for (text, want) in RESERVED_SKIPPED {
        gives(&m, text, if text.starts_with("any") { &any } else { want });
    }
    // protobuf 36 also takes an empty list and a `;` or `,` after a skipped field, which
    // protoc 3.21 refused.
    gives(&m, "reserved_field: []", &[]);
    gives(&m, "old: -nan; old: 1f, a: 3", &[0x08, 3]);
    if support::have_protoc("reserved_names_are_skipped_with_their_values") {
        for (text, _) in RESERVED_SKIPPED {
            let theirs = protoc_encode("c3.M", "c3.proto", text).unwrap_or_else(|e| panic!("protoc: {text}: {e}"));
            assert_eq!(parse(&m, text).unwrap(), theirs, "{text}");
        }
    }
}

/// Malformed values after a reserved name, and names that are not reserved: refused, as
/// protoc refuses them.
const RESERVED_REFUSED: &[(&str, &str, (usize, usize))] = &[
    ("reserved_field: -foo", "expected a number after '-', found foo", (1, 18)),
    ("reserved_field: --1", "expected a value, found \"-\"", (1, 18)),
    ("reserved_field: 1x", "expected a number, found \"1x\"", (1, 17)),
    ("reserved_field: [1 2]", "expected ',', found \"2\"", (1, 20)),
    ("reserved_field: [1,", "expected a value, found the end of the input", (1, 20)),
    ("reserved_field { a: 1 >", "expected '}', found \">\"", (1, 23)),
    ("reserved_field { a: }", "expected a value, found \"}\"", (1, 21)),
    ("reserved_field { old {", "expected an identifier, found the end of the input", (1, 23)),
    ("reserved_field", "expected '{' or '<', found the end of the input", (1, 15)),
    ("reserved_field: \"a\\q\"", "unknown escape \\q", (1, 19)),
    ("Reserved_field: 1", "no field named Reserved_field in c3.M", (1, 1)),
    ("reserved: 1", "no field named reserved in c3.M", (1, 1)),
    ("[reserved_field]: 1", "[reserved_field] is not an extension of c3.M", (1, 1)),
];

#[test]
fn malformed_skipped_values_and_unreserved_names_are_refused() {
    let m = support::ty(&pool(), "c3.M");
    for (text, message, at) in RESERVED_REFUSED {
        refused(&m, text, message, *at);
    }
    if support::have_protoc("malformed_skipped_values_and_unreserved_names_are_refused") {
        for (text, ..) in RESERVED_REFUSED {
            assert!(protoc_encode("c3.M", "c3.proto", text).is_err(), "protoc accepts {text}");
        }
    }
}

#[test]
fn skipped_values_nest_within_the_depth_limit() {
    let m = support::ty(&pool(), "c3.M");
    let nested = |n: usize| format!("reserved_field {}{}", "{ x ".repeat(n - 1), "{ }".to_owned() + &"}".repeat(n - 1));
    gives(&m, &nested(100), &[]);
    let e = parse(&m, &nested(101)).unwrap_err();
    assert_eq!(e.message(), "messages nest deeper than the limit of 100");
    // A list is a level, and so is the scalar in the innermost one.
    let lists = |n: usize| format!("reserved_field: {}1{}", "[".repeat(n), "]".repeat(n));
    gives(&m, &lists(99), &[]);
    for n in [100, 200_000] {
        let e = parse(&m, &lists(n)).unwrap_err();
        assert_eq!(e.message(), "messages nest deeper than the limit of 100");
    }
}

#[test]
fn groups_go_by_their_field_name_and_their_type_name() {
    let p = support::ty(&pool(), "c2.P");
    // Field 1 as a group: start-group tag 0x0b, end-group tag 0x0c.
    gives(&p, "Data { group_int32: 1 }", &[0x0b, 0x08, 1, 0x0c]);
    gives(&p, "data { group_int32: 1 }", &[0x0b, 0x08, 1, 0x0c]);
    gives(&p, "data: < >", &[0x0b, 0x0c]);
    gives(&p, "multiwordgroupfield { x: 2 } MultiWordGroupField { x: 3 }", &[0x13, 0x08, 2, 0x14, 0x13, 0x08, 3, 0x14]);
    // Still once only for a singular group, whichever name is used.
    refused(&p, "data {} Data {}", "field data is specified more than once", (1, 9));
    // Other spellings are not names of the field.
    refused(&p, "DATA {}", "no field named DATA in c2.P", (1, 1));
    refused(&p, "Multiwordgroupfield {}", "no field named Multiwordgroupfield in c2.P", (1, 1));
    // An extension goes by its full field name only, never its type's (protobuf's
    // GroupFieldExtensionGroupName).
    gives(&p, "[c2.gext] { q: 1 }", &[0xa3, 0x06, 0x08, 1, 0xa4, 0x06]);
    refused(&p, "[c2.GExt] { q: 1 }", "[c2.GExt] is not an extension of c2.P", (1, 1));
    refused(&p, "gext { q: 1 }", "no field named gext in c2.P", (1, 1));
}

#[test]
fn delimited_fields_go_by_their_field_name_and_group_like_ones_by_their_type_name() {
    let m = lowered_editions();
    gives(&m, "GroupLikeType { v: 1 }", &[0x0b, 0x08, 1, 0x0c]);
    gives(&m, "groupliketype { v: 1 }", &[0x0b, 0x08, 1, 0x0c]);
    gives(&m, "delimited_field { v: 2 }", &[0x13, 0x08, 2, 0x14]);
    // `delimited_field` is not group-like: its type's name stays the group-like field's.
    gives(&m, "GroupLikeType { } delimited_field { }", &[0x0b, 0x0c, 0x13, 0x14]);
    refused(&m, "Delimited_field { v: 2 }", "no field named Delimited_field in e.M", (1, 1));
    refused(&m, "GROUPLIKETYPE { }", "no field named GROUPLIKETYPE in e.M", (1, 1));
}

/// A `google.protobuf.Any` in field 3 of c3.M: type_url `url`, value `value`.
fn any_bytes(url: &str, value: &[u8]) -> Vec<u8> {
    let mut any = vec![0x0a, url.len() as u8];
    any.extend_from_slice(url.as_bytes());
    any.extend_from_slice(&[0x12, value.len() as u8]);
    any.extend_from_slice(value);
    let mut out = vec![0x1a, any.len() as u8];
    out.extend(any);
    out
}

#[test]
fn any_type_urls_take_sub_delims_tildes_and_percent_escapes() {
    let m = support::ty(&pool(), "c3.M");
    let one = [0x08, 1];
    // The URL is kept as written (escapes not decoded), whitespace and comments dropped;
    // the type is the name after the last `/`.
    for (text, url) in [
        (
            "any { [non.default.domain/sub-path_0/~!$&()*+,;=/c3.M] { a: 1 } }",
            "non.default.domain/sub-path_0/~!$&()*+,;=/c3.M",
        ),
        ("any { [non.default.domain/%2F/c3.M] { a: 1 } }", "non.default.domain/%2F/c3.M"),
        ("any { [a%2fb%7E/c3.M] { a: 1 } }", "a%2fb%7E/c3.M"),
        ("any { [ type.googleapis # comment\n .com/ c3 . M ]: < a: 1 > }", "type.googleapis.com/c3.M"),
    ] {
        gives(&m, text, &any_bytes(url, &one));
    }
    for (text, message, at) in [
        ("any { [a/%ZZ/c3.M] {} }", "[a/%ZZ/c3.M]: invalid percent escape \"%ZZ\"", (1, 7)),
        ("any { [a/%2/c3.M] {} }", "[a/%2/c3.M]: invalid percent escape \"%2/\"", (1, 7)),
        ("any { [a%2/c3.M] {} }", "[a%2/c3.M]: invalid percent escape \"%2/\"", (1, 7)),
        ("any { [/c3.M] {} }", "[/c3.M]: the type URL prefix is empty", (1, 7)),
        ("any { [/a/c3.M] {} }", "[/a/c3.M]: a type URL does not start with '/'", (1, 7)),
        ("any { [a/c3..M] {} }", "[a/c3..M]: \"\" in the type name is not an identifier", (1, 7)),
        ("any { [a/c3.M%2F] {} }", "[a/c3.M%2F]: \"M%2F\" in the type name is not an identifier", (1, 7)),
        ("any { [a/] {} }", "[a/]: \"\" in the type name is not an identifier", (1, 7)),
        ("any { [a/1c.M] {} }", "[a/1c.M]: \"1c\" in the type name is not an identifier", (1, 7)),
        ("any { [a:b/c3.M] {} }", "expected ']' after [a, found \":\"", (1, 9)),
        ("any { [a@b/c3.M] {} }", "expected ']' after [a, found \"@\"", (1, 9)),
        ("any { [a/c3.M?x] {} }", "expected ']' after [a/c3.M, found \"?\"", (1, 14)),
        ("any { [a/c3.Nope] {} }", "Any type \"c3.Nope\" is not in the schema", (1, 7)),
        ("any { [c3.M] {} }", "[c3.M] in an Any needs a type URL prefix, as in [type.googleapis.com/c3.M]", (1, 7)),
        ("[a/c3.M] {}", "[a/c3.M] expands an Any, but c3.M is not google.protobuf.Any", (1, 1)),
    ] {
        refused(&m, text, message, at);
    }
}
