//! Text format → binary: byte-identical to `protoc --encode` on the forms protoc's parser
//! accepts, the same accept/reject decision on malformed input, and exact errors.

#[path = "support/mod.rs"]
mod support;

use protojit_parse::{text_to_binary, ParseError, ParseOptions};

fn parse(desc: &support::Ty, text: &str) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    text_to_binary(&desc.layouts, desc.root, text.as_bytes(), &ParseOptions::default(), &mut out).map(|()| out)
}

#[track_caller]
fn fails(desc: &support::Ty, text: &str, line: usize, column: usize, what: &str) {
    match parse(desc, text) {
        Ok(b) => panic!("{text}: accepted as {b:02x?}"),
        Err(e) => {
            assert!(e.message().contains(what), "{text}: {e} does not say {what:?}");
            assert_eq!(e.position(), (line, column), "{text}: {e}");
        }
    }
}

/// Inputs protoc accepts: our bytes must be protoc's.
const VALID: &[(&str, &str)] = &[
    ("t.M", "i32: 1 s: 'x' b: true"),
    ("t.M", "s: 'x' i32: 1 # comment\n b: t"),
    ("t.M", "i32: 0 s: \"\" b: false e: ZERO opt: 0 oi: 0"),
    ("t.M", "i32: -2147483648 i64: -9223372036854775808 u64: 18446744073709551615 u32: 0xffffffff"),
    ("t.M", "i32: 010 s32: -0x10 sf64: -1 f64: 0x7fffffffffffffff sf32: -7"),
    ("t.M", "fl: 1.5f db: -inf"),
    ("t.M", "fl: 3.4028235e+39 db: 1e400"),
    ("t.M", "fl: nan db: -Infinity"),
    ("t.M", "fl: 18446744073709551616 db: 10"),
    ("t.M", "fl: .5 db: 1."),
    ("t.M", "fl: 1F db: 5e-1"),
    ("t.M", "s: 'a' \"b\"\n 'c'"),
    ("t.M", r#"s: '\a\b\f\n\r\t\v\?\\\'\"' by: '\0\1\12\123\x1\xff\u00e9\U0001F600'"#),
    ("t.M", "by: '\\300\\xc0'"),
    ("t.M", "e: TWO re: ONE re: 2 re: [ZERO, 7]"),
    ("t.M", "ri: 1 i32: 2 ri: [2, 3] ri: []"),
    // A packed field named again and again is one record, whatever separates the values.
    ("t.M", "ri: 1 ri: 2; ri: 3, ri:4 ri: [5, 6] ri: 7 i32: 1 ri: 8"),
    ("t.M", "ri: 1 # c\n ri: -2 ri: [] ri: 0x10 rs64: -1 rs64: 2 ri: 3"),
    ("t.M", "rs: 'a' rs: ['b', 'c'] rm {} rm <i32: 1> rm: [{s: 'x'}, <>]"),
    ("t.M", "child { child: { i32: 1 } } rm { ri: 1 }"),
    ("t.M", "i32: 1, s: 'x'; b: true,"),
    (
        "t.M",
        "msi { key: 'a' value: 1 } msi { key: 'a' value: 2 } msi { value: 3 key: 'b' } msi {} msi { key: '' value: 0 }",
    ),
    ("t.M", "mim { key: 5 value { s: 'x' } } mim { key: 6 } mbs { value: 'v' } mbs [{key: true}, {}]"),
    ("t.M", "om { i32: 1 }"),
    ("t.M", "any { [type.googleapis.com/t.M] { i32: 1 child { s: 'x' } } }"),
    ("t.M", "any { [type.googleapis.com/t.M] { } }"),
    ("t.M", "any { type_url: 'type.googleapis.com/t.M' value: '\\010\\001' }"),
    ("t.M", "any: < [type.googleapis.com/google.protobuf.Duration]: < seconds: 1 > >"),
    ("t.M", "ts { seconds: 1 nanos: 2 } va { struct_value { fields { key: 'a' value { null_value: NULL_VALUE } } } }"),
    ("t.M", "big_number_field_2000: 1 i32: 1"),
    ("t.M", "rd: [1, 2.5, -inf] rs64: [-1, 1] rd: 3"),
    ("t2.P", "a: 0 c: C5 ru: 1 ru: 2 rp: 1 rp: [2, 3]"),
    ("t2.P", "rp: 1 rp: 2 ru: 1 rp: 3 rp: [4] rp: 5 rp: -1"),
    ("t2.P", "c: 0"),
    ("t2.P", "G { x: 1 } R { z: 1 } R: { } R < z: 2 >"),
    ("t2.P", "[t2.e1]: 3 a: 1 [t2.e2]: 1 [t2.e2]: [2, 3] [ t2 . pe ] { a: 1 }"),
    ("t2.P", "mc { key: 1 } mc { value: C5 } mc {}"),
    ("t2.P", "child { [t2.e1]: 1 G {} }"),
    ("t2.P", ""),
    ("t2.P", "# only a comment"),
];

/// Inputs protoc rejects: we must reject them too. (A proto3 string with invalid UTF-8,
/// `s: '\xc0'`, a lone surrogate escape, `s: '\ud800'`, and `\U00110000`, protoc 3.21 only logs or lets
/// through; protojit rejects both, as the conformance suite requires: see
/// `errors_say_what_and_where`.)
const INVALID: &[(&str, &str)] = &[
    ("t.M", "i32: 2147483648"),
    ("t.M", "i32: -2147483649"),
    ("t.M", "u32: -1"),
    ("t.M", "u64: 18446744073709551616"),
    ("t.M", "i64: 9223372036854775808"),
    ("t.M", "i32: 1.0"),
    ("t.M", "i32: 1f"),
    ("t.M", "i32 1"),
    ("t.M", "i32: 1 i32: 2"),
    ("t.M", "child {} child {}"),
    ("t.M", "os: 'a' oi: 1"),
    ("t.M", "nope: 1"),
    ("t.M", "s: 'abc"),
    ("t.M", "s: 'a\nb'"),
    ("t.M", "db: 0x10"),
    ("t.M", "fl: 010"),
    ("t.M", "s: '\\q'"),
    ("t.M", "e: THREE"),
    ("t.M", "b: yes"),
    ("t.M", "b: 2"),
    ("t.M", "child { i32: 1"),
    ("t.M", "child { i32: 1 >"),
    ("t.M", "i32: [1, 2]"),
    ("t.M", "ri: [1, 2"),
    ("t.M", "ri: 1 ri: x"),
    ("t.M", "ri: 1 ri: 2 rix: 3"),
    ("t.M", "ri: 1 ri { }"),
    ("t.M", "ri: [1 2]"),
    ("t.M", "s: 1"),
    ("t.M", "i32: 'x'"),
    ("t.M", "any { [type.googleapis.com/t.Nope] { } }"),
    ("t.M", "[t.x]: 1"),
    ("t.M", "i32: 0x"),
    ("t.M", "fl: --1"),
    ("t.M", "i32: 1x"),
    ("t.M", "}"),
    ("t2.P", "c: 3"),
    ("t2.P", "a: 1 a: 1"),
    ("t2.P", "[t2.e1]: 1 [t2.e1]: 2"),
];

#[test]
fn bytes_are_protocs() {
    if !support::have_protoc("bytes_are_protocs") {
        return;
    }
    let pool = support::pool();
    for (ty, text) in VALID {
        let desc = support::ty(&pool, ty);
        let file = if ty.starts_with("t2") { "t2.proto" } else { "t.proto" };
        let want =
            support::protoc_encode(ty, file, text).unwrap().unwrap_or_else(|e| panic!("protoc rejects {text}: {e}"));
        let ours = parse(&desc, text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(ours, want, "{text}");
    }
}

#[test]
fn rejected_as_protoc_rejects() {
    let pool = support::pool();
    let protoc = support::have_protoc("rejected_as_protoc_rejects");
    for (ty, text) in INVALID {
        let desc = support::ty(&pool, ty);
        if protoc {
            let file = if ty.starts_with("t2") { "t2.proto" } else { "t.proto" };
            let theirs = support::protoc_encode(ty, file, text).unwrap();
            assert!(theirs.is_err(), "protoc accepts {text}");
        }
        assert!(parse(&desc, text).is_err(), "{text}: accepted");
    }
}

#[test]
fn errors_say_what_and_where() {
    let m = support::message("t.M");
    fails(&m, "i32: 1\n  nope: 2", 2, 3, "no field named nope in t.M");
    fails(&m, "i32: 1\ni32: 2", 2, 1, "more than once");
    fails(&m, "os: 'a'\n oi: 1", 2, 2, "another member of oneof o");
    fails(&m, "i32: 2147483648", 1, 6, "out of range for int32");
    fails(&m, "i32: 1.5", 1, 6, "expected an integer");
    fails(&m, "s: 'é\\xc0'", 1, 4, "invalid UTF-8");
    fails(&m, "s: 'ab\\q'", 1, 7, "unknown escape \\q");
    fails(&m, "s: '\\udc00'", 1, 5, "surrogate");
    fails(&m, "child {\n i32: 1", 2, 8, "expected '}' before the end");
    fails(&m, "e: NOPE", 1, 4, "not a value of enum t.E");
    fails(&m, "i32 1", 1, 5, "expected ':'");
    fails(&m, "any { [type.googleapis.com/x.Y] {} }", 1, 7, "not in the schema");
    let p = support::message("t2.P");
    fails(&p, "c: 3", 1, 4, "not a value of closed enum t2.C");
}

#[test]
fn hostile_input_is_an_error_not_a_crash() {
    let m = support::message("t.M");
    let deep = format!("{}{}", "child { ".repeat(101), "}".repeat(101));
    let e = parse(&m, &deep).unwrap_err();
    assert!(e.message().contains("deeper than the limit of 100"), "{e}");
    parse(&m, &format!("{}{}", "child { ".repeat(99), "}".repeat(99))).unwrap();
    let big = "x".repeat(10 << 20);
    assert_eq!(parse(&m, &format!("s: '{big}'")).unwrap().len(), 10 * (1 << 20) + 5);
    assert!(parse(&m, &format!("u64: {}", "9".repeat(400))).is_err());
    let mut out = vec![7];
    assert!(text_to_binary(&m.layouts, m.root, b"s: '\xff'", &ParseOptions::default(), &mut out).is_err());
    assert_eq!(out, [7], "the output is left as it was on error");
    let doc = "s: 'x' rm { ri: [1, 2] } msi { key: 'k' value: 1 } any { [type.googleapis.com/t.M] { i32: 1 } }";
    parse(&m, doc).unwrap();
    for end in 0..doc.len() {
        // Every cut either parses (a cut between fields) or is an error; never a panic.
        let _ = parse(&m, &doc[..end]);
    }
}
