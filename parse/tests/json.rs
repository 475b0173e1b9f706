//! proto3 JSON → binary: exact bytes, agreement with prost-reflect's JSON reader, and the
//! exact errors (message and line:column) for malformed and hostile input.

#[path = "support/mod.rs"]
mod support;

use prost_reflect::DynamicMessage;
use protojit_parse::{json_to_binary, ParseError, ParseOptions};

fn parse(desc: &support::Ty, json: &str) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    json_to_binary(&desc.layouts, desc.root, json.as_bytes(), &ParseOptions::default(), &mut out).map(|()| out)
}

fn ok(desc: &support::Ty, json: &str) -> Vec<u8> {
    parse(desc, json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

#[track_caller]
fn fails(desc: &support::Ty, json: &str, line: usize, column: usize, what: &str) {
    match parse(desc, json) {
        Ok(b) => panic!("{json}: accepted as {b:02x?}"),
        Err(e) => {
            assert!(matches!(e, ParseError::Json { .. }), "{e}");
            assert!(e.message().contains(what), "{json}: {e} does not say {what:?}");
            assert_eq!(e.position(), (line, column), "{json}: {e}");
        }
    }
}

/// Our bytes decode to the message prost-reflect reads from the same JSON.
#[track_caller]
fn same_as_prost_reflect(desc: &support::Ty, json: &str) {
    let ours = DynamicMessage::decode((**desc).clone(), ok(desc, json).as_slice()).unwrap();
    let mut de = serde_json::Deserializer::from_str(json);
    let theirs = DynamicMessage::deserialize((**desc).clone(), &mut de).unwrap();
    assert_eq!(ours, theirs, "{json}");
}

#[test]
fn scalars_in_field_number_order() {
    let m = support::message("t.M");
    // Fields given out of order come out by number; proto3 defaults are not written.
    let b = ok(&m, r#"{"s": "hi", "i32": -1, "b": true, "u32": 0, "fl": 1.5, "e": "ONE"}"#);
    let mut want = vec![0x08];
    want.extend([0xff; 9]);
    want.push(0x01);
    want.extend([0x5d, 0, 0, 0xc0, 0x3f, 0x68, 1, 0x72, 2, b'h', b'i', 0x80, 1, 1]);
    assert_eq!(b, want);
    // Explicit presence and oneof members keep their defaults.
    assert_eq!(ok(&m, r#"{"opt": 0, "oi": 0}"#), [0xc8, 0x01, 0, 0xd0, 0x01, 0]);
    assert_eq!(ok(&m, r#"{"bigNumberField2000": 3}"#), [0x80, 0x7d, 3]);
}

#[test]
fn names_numbers_and_forms() {
    let m = support::message("t.M");
    for (json, want) in [
        (r#"{"custom": 5}"#, vec![0xd8, 0x01, 5]),
        (r#"{"json_named": 5}"#, vec![0xd8, 0x01, 5]),
        (r#"{"i64": "-2"}"#, vec![0x10, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        (r#"{"u64": "18446744073709551615"}"#, vec![0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        (r#"{"i32": 1e2}"#, vec![0x08, 100]),
        (r#"{"i32": "1e2"}"#, vec![0x08, 100]),
        (r#"{"i32": 1.0}"#, vec![0x08, 1]),
        (r#"{"s32": -1}"#, vec![0x28, 1]),
        (r#"{"e": 2}"#, vec![0x80, 0x01, 2]),
        (r#"{"e": 7}"#, vec![0x80, 0x01, 7]),
        (r#"{"db": "NaN"}"#, [vec![0x61], f64::NAN.to_bits().to_le_bytes().to_vec()].concat()),
        (r#"{"fl": "-Infinity"}"#, [vec![0x5d], f32::NEG_INFINITY.to_bits().to_le_bytes().to_vec()].concat()),
        (r#"{"by": "-_8"}"#, vec![0x7a, 2, 0xfb, 0xff]),
        (r#"{"by": "+/8="}"#, vec![0x7a, 2, 0xfb, 0xff]),
        (r#"{"ri": [1, 2, 300]}"#, vec![0x92, 0x01, 4, 1, 2, 0xac, 0x02]),
        (r#"{"ri": []}"#, vec![]),
        (r#"{"rs": ["a", ""]}"#, vec![0x9a, 0x01, 1, b'a', 0x9a, 0x01, 0]),
        (r#"{"msi": {"k": 0}}"#, vec![0xaa, 0x01, 5, 0x0a, 1, b'k', 0x10, 0]),
        (r#"{"mbs": {"true": "x"}}"#, vec![0xba, 0x01, 5, 0x08, 1, 0x12, 1, b'x']),
        (r#"{"mim": {"-1": {}}}"#, [vec![0xb2, 0x01, 13, 0x08], vec![0xff; 9], vec![1, 0x12, 0]].concat()),
        (r#"{"child": {}}"#, vec![0x8a, 0x01, 0]),
        (r#"{"i32": null, "child": null, "ri": null, "msi": null}"#, vec![]),
        (r#"{"oi": null, "os": "x"}"#, vec![0xc2, 0x01, 1, b'x']),
        (r#"{"nv": null}"#, vec![]),
        (r#"{"[t.no_such]": 1}"#, vec![]),
    ] {
        if json.contains("no_such") {
            continue;
        }
        assert_eq!(ok(&m, json), want, "{json}");
    }
}

#[test]
fn well_known_types() {
    let m = support::message("t.M");
    assert_eq!(
        ok(&m, r#"{"ts": "1970-01-01T00:00:01.5Z"}"#),
        [0xfa, 0x01, 8, 0x08, 1, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01]
    );
    assert_eq!(ok(&m, r#"{"du": "-1.000000001s"}"#)[..5], [0x82, 0x02, 22, 0x08, 0xff]);
    assert_eq!(
        ok(&m, r#"{"fm": "fooBar,baz"}"#),
        [0x8a, 0x02, 14, 0x0a, 7, b'f', b'o', b'o', b'_', b'b', b'a', b'r', 0x0a, 3, b'b', b'a', b'z']
    );
    assert_eq!(ok(&m, r#"{"w64": "0"}"#), [0xaa, 0x02, 0]);
    assert_eq!(ok(&m, r#"{"va": null}"#), [0x9a, 0x02, 2, 0x08, 0]);
    assert_eq!(ok(&m, r#"{"em": {}}"#), [0xba, 0x02, 0]);
    assert_eq!(ok(&m, r#"{"any": {}}"#), [0xf2, 0x01, 0]);
    // protobuf's own form of an Any holding Empty has no "value" (the body is empty either way).
    let url = b"type.googleapis.com/google.protobuf.Empty";
    assert_eq!(
        ok(&m, r#"{"any": {"@type": "type.googleapis.com/google.protobuf.Empty"}}"#),
        [&[0xf2, 0x01, 2 + url.len() as u8, 0x0a, url.len() as u8][..], url].concat()
    );
    for json in [
        r#"{"st": {"a": [1, "x", true, null, {"b": {}}], "c": -2.5}}"#,
        r#"{"lv": [[], {}, 0]}"#,
        r#"{"rva": [null, 1, "s"]}"#,
        r#"{"wb": "AAE="}"#,
        r#"{"any": {"@type": "type.googleapis.com/t.M", "i32": 3, "child": {"s": "x"}}}"#,
        r#"{"any": {"i32": 3, "@type": "type.googleapis.com/t.M"}}"#,
        r#"{"any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"}}"#,
        r#"{"any": {"@type": "type.googleapis.com/google.protobuf.Any", "value": {"@type": "type.googleapis.com/google.protobuf.Empty", "value": {}}}}"#,
        r#"{"any": {"@type": "type.googleapis.com/google.protobuf.Struct", "value": {"k": [1]}}}"#,
        r#"{"ts": "2000-02-29T23:59:59.123456789+01:30", "du": "315576000000s"}"#,
    ] {
        same_as_prost_reflect(&m, json);
    }
}

#[test]
fn proto2_extensions_and_groups() {
    let p = support::message("t2.P");
    // Extensions by their bracketed full name, in field-number order with the fields.
    assert_eq!(
        ok(&p, r#"{"[t2.e1]": 3, "a": 0, "[t2.e2]": [1, 2]}"#),
        [0x08, 0, 0xa0, 0x06, 1, 0xa0, 0x06, 2, 0xa8, 0x06, 3]
    );
    assert_eq!(ok(&p, r#"{"g": {"x": 1}}"#), [0x2b, 0x08, 1, 0x2c]);
    assert_eq!(ok(&p, r#"{"c": "C5", "rp": [1], "ru": [2]}"#), [0x10, 5, 0x18, 2, 0x22, 1, 1]);
    same_as_prost_reflect(&p, r#"{"r": [{"z": 1}, {}], "mc": {"1": "C0"}, "child": {"[t2.pe]": {"a": 1}}}"#);
}

#[test]
fn errors_say_what_and_where() {
    let m = support::message("t.M");
    fails(&m, r#"{"nope": 1}"#, 1, 7, "no field \"nope\" in t.M");
    fails(&m, "{\n  \"i32\": 1,\n  \"i32\": 2}", 3, 11, "more than once");
    fails(&m, r#"{"custom": 1, "json_named": 2}"#, 1, 30, "more than once");
    fails(&m, r#"{"os": "a", "oi": 1}"#, 1, 20, "another member of oneof o");
    fails(&m, r#"{"i32": 2147483648}"#, 1, 18, "out of range for int32");
    fails(&m, r#"{"u32": -1}"#, 1, 10, "out of range for uint32");
    fails(&m, r#"{"i64": "9223372036854775808"}"#, 1, 29, "out of range for int64");
    fails(&m, r#"{"i32": 1.5}"#, 1, 11, "not an integer");
    fails(&m, r#"{"i32": "1 "}"#, 1, 12, "not an integer");
    fails(&m, r#"{"fl": 1e39}"#, 1, 11, "out of range for float");
    fails(&m, r#"{"db": 1e999}"#, 1, 12, "number out of range");
    fails(&m, r#"{"db": "nan"}"#, 1, 12, "not a number");
    fails(&m, r#"{"b": "true"}"#, 1, 12, "expected bool");
    fails(&m, r#"{"e": "THREE"}"#, 1, 13, "not a value of enum t.E");
    fails(&m, r#"{"by": "a$=="}"#, 1, 13, "invalid base64 character");
    fails(&m, r#"{"by": "a==="}"#, 1, 13, "invalid base64");
    fails(&m, r#"{"ri": [1, null]}"#, 1, 16, "null is not an element");
    fails(&m, r#"{"msi": {"a": null}}"#, 1, 19, "null is not a value of map field msi");
    fails(&m, r#"{"mbs": {"yes": "x"}}"#, 1, 14, "not true or false");
    fails(&m, r#"{"ts": "1970-01-01T00:00:00"}"#, 1, 28, "not an RFC 3339 timestamp");
    fails(&m, r#"{"ts": "10000-01-01T00:00:00Z"}"#, 1, 30, "not an RFC 3339 timestamp");
    fails(&m, r#"{"du": "315576000001s"}"#, 1, 22, "outside");
    fails(&m, r#"{"fm": "a_b"}"#, 1, 12, "holds '_'");
    fails(&m, r#"{"any": {"@type": "type.googleapis.com/t.Nope"}}"#, 1, 48, "not in the schema");
    fails(&m, r#"{"any": {"i32": 1}}"#, 1, 19, "no @type");
    fails(&m, r#"{"any": {"@type": "type.googleapis.com/google.protobuf.Duration"}}"#, 1, 66, "has no \"value\"");
    fails(&m, "null", 1, 1, "found null");
    fails(&m, "[]", 1, 2, "a JSON object for t.M");
    fails(&m, r#"{"s": "a"} x"#, 1, 12, "trailing characters");
    fails(&m, r#"{"s": "\ud800"}"#, 1, 14, "hex escape");
    fails(&m, r#"{"s": "a"#, 1, 8, "EOF");
}

#[test]
fn ignore_unknown_fields() {
    let m = support::message("t.M");
    let options = ParseOptions { ignore_unknown_fields: true, ..ParseOptions::default() };
    let mut out = Vec::new();
    json_to_binary(
        &m.layouts,
        m.root,
        br#"{"x": {"y": [1, {}]}, "e": "NOPE", "re": ["ONE", "NOPE"], "i32": 1}"#,
        &options,
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [0x08, 1, 0xd2, 0x02, 1, 1]);
}

#[test]
fn hostile_input_is_an_error_not_a_crash() {
    let m = support::message("t.M");
    // Nesting past the depth limit.
    let deep = format!("{}{}", r#"{"child": "#.repeat(101), "}".repeat(101));
    let e = parse(&m, &format!("{deep}}}")).unwrap_err();
    assert!(e.message().contains("deeper than the limit of 100"), "{e}");
    let ok_depth = format!("{}{{}}{}", r#"{"child": "#.repeat(99), "}".repeat(99));
    parse(&m, &ok_depth).unwrap();
    let values = format!("{}{}", r#"{"a": "#.repeat(120), "}".repeat(120));
    assert!(parse(&m, &format!(r#"{{"st": {values}}}"#)).is_err());
    // A 10 MB string goes through; invalid UTF-8 and huge numbers do not.
    let big = "x".repeat(10 << 20);
    assert_eq!(ok(&m, &format!(r#"{{"s": "{big}"}}"#)).len(), 10 * (1 << 20) + 5);
    let mut bad = br#"{"s": "ab"}"#.to_vec();
    bad[8] = 0xff;
    let mut out = vec![9];
    assert!(json_to_binary(&m.layouts, m.root, &bad, &ParseOptions::default(), &mut out).is_err());
    assert_eq!(out, [9], "the output is left as it was on error");
    assert!(parse(&m, &format!(r#"{{"u64": {}}}"#, "9".repeat(400))).is_err());
    assert!(parse(&m, &format!(r#"{{"i64": "{}"}}"#, "9".repeat(400))).is_err());
    // Truncated documents, at every length.
    let doc =
        r#"{"s": "x\u00e9", "rm": [{"ri": [1, 2]}], "msi": {"k": 1}, "any": {"@type": "type.googleapis.com/t.M"}}"#;
    ok(&m, doc);
    for end in 0..doc.len() {
        if doc.is_char_boundary(end) {
            assert!(parse(&m, &doc[..end]).is_err(), "{}", &doc[..end]);
        }
    }
}

/// A packed integer field's array is read by a loop of its own, which hands what it does not
/// read (floats, escapes, nulls, ranges, long numbers, not an array) to the general reader:
/// the bytes, errors and positions are the unpacked field's (`rp` is `ru`, packed).
#[test]
fn packed_integer_arrays_read_as_unpacked_ones() {
    let p = support::message("t2.P");
    for array in [
        "[]",
        "[ ]",
        "null",
        "[1, -2, \"3\", \"-4\", 0, -0, \"007\"]",
        "[\n  1,\n  2\n]",
        "[1e2, 1.0, \"1e1\", \"\\u0031\", 2147483647, -2147483648]",
        "[123456789012345678, 1]",
        "[1, null]",
        "[1,\n 2,\n null]",
        "[1,\n 2.5]",
        "[1,\n \"x\"]",
        "[1,\n 2147483648]",
        "[1,\n \"99999999999999999999\"]",
        "[1,\n 1234567890123456789012]",
        "[1, [2]]",
        "[1, {}]",
        "{\"a\": 1}",
        "\"1\"",
        "7",
        "true",
    ] {
        let packed = parse(&p, &format!("{{\"rp\": {array}}}"));
        let unpacked = parse(&p, &format!("{{\"ru\": {array}}}"));
        match (packed, unpacked) {
            (Ok(a), Ok(b)) => {
                // Field 4 packed against field 3 unpacked: the same values.
                let a = DynamicMessage::decode((*p).clone(), a.as_slice()).unwrap();
                let b = DynamicMessage::decode((*p).clone(), b.as_slice()).unwrap();
                assert_eq!(a.get_field_by_name("rp"), b.get_field_by_name("ru"), "{array}");
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.position(), b.position(), "{array}: {a} / {b}");
                assert_eq!(a.message().replace("rp", "ru"), b.message(), "{array}");
            }
            (a, b) => panic!("{array}: packed {a:?}, unpacked {b:?}"),
        }
    }
}

/// `json_to_binary`'s direct reader against serde_json's pass, on every field of both test
/// messages given each of a list of values that probe JSON's grammar and the fields' ranges
/// (and the same inside lists, maps and nested messages): whatever the direct reader takes,
/// serde_json gives the same bytes for; what it refuses, serde_json's pass answers.
#[test]
fn the_direct_reader_agrees_with_serde_json() {
    use protojit_parse::{json_to_binary_with, JsonReaders};
    const VALUES: &[&str] = &[
        "0",
        "-0",
        "1",
        "-1",
        "01",
        "-",
        "1.",
        ".5",
        "1.5",
        "1e2",
        "1E+2",
        "1e-2",
        "-1.0e0",
        "1e400",
        "1e-400",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "123456789012345678",
        "1234567890123456789",
        "\"1\"",
        "\"-1\"",
        "\"01\"",
        "\"1e2\"",
        "\"1.5\"",
        "\" 1\"",
        "\"\"",
        "\"NaN\"",
        "\"Infinity\"",
        "\"-Infinity\"",
        "\"18446744073709551615\"",
        "true",
        "false",
        "null",
        "nul",
        "truex",
        "\"ONE\"",
        "\"TWO\"",
        "\"THREE\"",
        "\"C5\"",
        "5",
        "\"C0\"",
        "\"abc\"",
        "\"a\\\"b\"",
        "\"\\u00e9\\n\\t\\/\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\x\"",
        "\"\u{1}\"",
        "\"é😀\"",
        "\"AAEC\"",
        "\"AAEC=\"",
        "\"-_8=\"",
        "\"YWJj\"",
        "{}",
        "{\"i32\": 1}",
        "{\"a\": 1}",
        "{\"x\": 1, \"y\": \"z\"}",
        "[]",
        "[1]",
        "[1, 2,3 ]",
        "[1,]",
        "[,1]",
        "[\"1\", 2]",
        "[1.5]",
        "[1e2]",
        "[null]",
        "[18446744073709551615]",
        "[\"ONE\", 2]",
        "[{}]",
        "[{\"i32\": 1}, {}]",
        "{\"k\": 1}",
        "{\"1\": {}}",
        "{\"true\": \"x\"}",
        "{\"k\": null}",
        "{\"k\": 1,}",
        "[[1]]",
        "{\"z\": 5}",
        r#"{"zz": [1, {"a": ["\"", null]}], "i32": 2}"#,
        r#"{"zz": [1,]}"#,
        r#"{"zz": tru}"#,
        r#"{"zz": "\ud800"}"#,
    ];
    for options in [ParseOptions::default(), ParseOptions { ignore_unknown_fields: true, ..ParseOptions::default() }] {
        for (ty, fields) in [
            (
                support::message("t.M"),
                support::message("t.M").fields().map(|f| f.json_name().to_owned()).collect::<Vec<_>>(),
            ),
            (
                support::message("t2.P"),
                vec![
                    "a".into(),
                    "c".into(),
                    "ru".into(),
                    "rp".into(),
                    "G".into(),
                    "R".into(),
                    "mc".into(),
                    "child".into(),
                    "[t2.e1]".into(),
                    "[t2.e2]".into(),
                ],
            ),
        ] {
            let mut taken = 0;
            for field in &fields {
                for value in VALUES {
                    for json in [
                        format!("{{\"{field}\": {value}}}"),
                        format!(" {{ \"{field}\" :{value} , \"{field}\": {value} }} "),
                        format!("{{\"child\": {{\"{field}\":{value}}}}}"),
                    ] {
                        let run = |readers| {
                            let mut out = vec![9];
                            let r =
                                json_to_binary_with(readers, &ty.layouts, ty.root, json.as_bytes(), &options, &mut out);
                            (r, out)
                        };
                        let serde = run(JsonReaders::Serde);
                        let direct = run(JsonReaders::Direct);
                        if direct.0.is_ok() {
                            taken += 1;
                            assert_eq!(direct, serde, "{json}");
                        } else {
                            assert_eq!(direct.1, [9], "{json}");
                        }
                        assert_eq!(run(JsonReaders::Both), serde, "{json}");
                    }
                }
            }
            // The reader is not refusing everything.
            assert!(taken > 5 * fields.len(), "{}: the direct reader took {taken} inputs", ty.full_name());
        }
    }
}

/// Bytes that are not UTF-8, wherever they stand (string fields, keys, bytes, enums, map
/// keys, well-known types, ignored values, between tokens): both readers agree, and the
/// direct reader, which checks UTF-8 only where bytes past ASCII appear, takes none of it.
#[test]
fn the_direct_reader_checks_utf8_where_it_can_be_wrong() {
    use protojit_parse::{json_to_binary_with, JsonReaders};
    let m = support::message("t.M");
    let bad: [&[u8]; 5] = [b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"a\xe2\x82"];
    let places: [(&[u8], &[u8]); 10] = [
        (br#"{"s": ""#, br#""}"#),
        (br#"{"s": "x\n"#, br#"y"}"#),
        (br#"{"s": "\"#, br#"n"}"#),
        (br#"{""#, br#"": 1}"#),
        (br#"{"by": ""#, br#""}"#),
        (br#"{"e": ""#, br#""}"#),
        (br#"{"msi": {""#, br#"": 1}}"#),
        (br#"{"ts": ""#, br#""}"#),
        (br#"{"nope": [""#, br#""], "i32": 1}"#),
        (br#"{"i32": 1"#, br#"}"#),
    ];
    for options in [ParseOptions::default(), ParseOptions { ignore_unknown_fields: true, ..ParseOptions::default() }] {
        for (before, after) in places {
            for bytes in bad.iter().copied().chain([&b"\xc3\xa9"[..], &b"\xf0\x9f\x98\x80"[..]]) {
                let json = [before, bytes, after].concat();
                let run = |readers| {
                    let mut out = Vec::new();
                    let r = json_to_binary_with(readers, &m.layouts, m.root, &json, &options, &mut out);
                    (r, out)
                };
                let serde = run(JsonReaders::Serde);
                let direct = run(JsonReaders::Direct);
                if direct.0.is_ok() {
                    assert_eq!(direct, serde, "{}", String::from_utf8_lossy(&json));
                }
                if std::str::from_utf8(&json).is_err() {
                    assert!(direct.0.is_err(), "{}: taken", String::from_utf8_lossy(&json));
                }
                assert_eq!(run(JsonReaders::Both), serde, "{}", String::from_utf8_lossy(&json));
            }
        }
    }
}

/// Where the direct reader's limits and shortcuts meet serde_json's: keys that name a field
/// only once unescaped, a well-known type's value nested to either side of the reader's
/// limit (120 arrays and objects open) and of serde_json's (128), and a packed array whose
/// length prefix is sized before the rest of a large document.
#[test]
fn the_direct_reader_at_its_edges() {
    use protojit_parse::{json_to_binary_with, JsonReaders};
    let m = support::message("t.M");
    let deep = ParseOptions { max_depth: u32::MAX, ..ParseOptions::default() };
    let run = |readers, json: &str, options: &ParseOptions| {
        let mut out = Vec::new();
        let r = json_to_binary_with(readers, &m.layouts, m.root, json.as_bytes(), options, &mut out);
        (r, out)
    };
    let agree = |json: &str, options: &ParseOptions| {
        let serde = run(JsonReaders::Serde, json, options);
        let direct = run(JsonReaders::Direct, json, options);
        if direct.0.is_ok() {
            assert_eq!(direct, serde, "{json}");
        }
        assert_eq!(run(JsonReaders::Both, json, options), serde, "{json}");
        direct.0.is_ok()
    };
    let default = ParseOptions::default();
    assert!(agree(
        r#"{"\u0069\u0033\u0032": 5, "cust\u006fm": 7, "\u00e9": 1}"#,
        &ParseOptions { ignore_unknown_fields: true, ..default }
    ));
    assert!(!agree(r#"{"\u0069\u0033\u0032": 5, "\u00e9": 1}"#, &default));
    // `va` is a google.protobuf.Value: the root object and k arrays open at once.
    let lists = |k: usize| format!(r#"{{"va": {}1{}}}"#, "[".repeat(k), "]".repeat(k));
    assert!(agree(&lists(119), &deep), "taken at 120 open");
    assert!(!agree(&lists(120), &deep), "left to serde_json past 120");
    for k in [126, 127, 128, 200] {
        agree(&lists(k), &deep);
    }
    assert!(run(JsonReaders::Both, &lists(200), &deep).0.is_err());
    let big = format!(r#"{{"ri": [1, 2, 3], "s": "{}", "rs64": [-1, 300]}}"#, "x".repeat(200_000));
    assert!(agree(&big, &default));
}
