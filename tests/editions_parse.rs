//! The JSON and text parsers on editions schemas: protoc's text (`--decode`) and protobuf
//! Python's JSON (`json_format`) of every editions fixture parse to the payload's bytes, and
//! hand-made editions 2023 and 2024 types check each feature the parsers read (implicit
//! presence, open and closed enums, `DELIMITED`, `EXPANDED`, UTF-8) with exact bytes and
//! exact errors.

mod editions_support;

use editions_support::*;
use protojit::{json_to_binary, text_to_binary, Arena, ParseError, ParseOptions, Schema};

/// The top-level records of `bytes` but `unknown` (each taken out once): JSON and text
/// carry no unknown fields (protoc prints them by number, which no parser takes back).
fn known(bytes: &[u8], unknown: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut left: Vec<&[u8]> = unknown.to_vec();
    let mut out = records(bytes);
    out.retain(|r| match left.iter().position(|u| *u == &r[..]) {
        Some(i) => {
            left.remove(i);
            false
        }
        None => true,
    });
    out
}

/// Parsed bytes against what they must be: the payload's own encoding by our encoder, byte
/// for byte (fields in number order, extensions among them), and protobuf's
/// `SerializeToString` of it as a multiset of top-level records (protobuf orders extensions
/// its own way); unknown fields left out of both.
fn check(case: &Case, what: &str, parsed: &[u8], ours: &[u8], unknown: &[&[u8]]) {
    if parsed != ours {
        let at = parsed.iter().zip(ours).position(|(a, b)| a != b).unwrap_or(parsed.len().min(ours.len()));
        panic!(
            "{what}: parsed bytes differ from the payload's encoding at byte {at} of {} / {}: {:?} vs {:?}",
            parsed.len(),
            ours.len(),
            &parsed[at.saturating_sub(8)..parsed.len().min(at + 24)],
            &ours[at.saturating_sub(8)..ours.len().min(at + 24)]
        );
    }
    let (mut got, mut want) = (records(parsed), known(&expected(case, "bin"), unknown));
    got.sort();
    want.sort();
    assert_eq!(got, want, "{what}: parsed bytes differ from protobuf's SerializeToString");
}

#[test]
fn protocs_text_and_json_formats_json_parse_to_the_payload() {
    let mut checked = 0;
    for case in cases() {
        let Some(schema) = schema(&case) else { continue };
        let what = format!("{} as {}", case.payload, case.type_name);
        let layouts = schema.layouts();
        let root = layouts.index_of(&case.type_name).unwrap();
        let decoder = schema.decoder(&case.type_name).unwrap();
        let arena = Arena::new();
        let payload = fixture(&case.payload);
        let msg = decoder.decode(&payload, &arena).unwrap_or_else(|e| panic!("{what}: {e}"));
        let unknown: Vec<&[u8]> = msg.unknown_fields().collect();
        let ours = known(&msg.encode_to_vec(), &unknown).concat();
        let options = ParseOptions::default();

        // protoc --decode prints unknown fields by number; its parser (and ours) takes none.
        let text = String::from_utf8(expected(&case, "txt")).unwrap();
        let text: String = text
            .lines()
            .filter(|l| !l.split(':').next().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut parsed = Vec::new();
        text_to_binary(layouts, root, text.as_bytes(), &options, &mut parsed)
            .unwrap_or_else(|e| panic!("{what}: protoc's text: {e}"));
        check(&case, &format!("{what}, text"), &parsed, &ours, &unknown);

        // Without and with the fields that have no presence at their defaults: the same bytes.
        for ext in ["json", "defaults.json"] {
            let mut parsed = Vec::new();
            json_to_binary(layouts, root, &expected(&case, ext), &options, &mut parsed)
                .unwrap_or_else(|e| panic!("{what}: json_format's {ext}: {e}"));
            check(&case, &format!("{what}, {ext}"), &parsed, &ours, &unknown);
        }
        checked += 1;
    }
    eprintln!("{checked} fixture cases checked");
    assert!(checked >= 4, "only {checked} fixture cases ran");
}

// ---- hand-made editions types -------------------------------------------------------------

const DELIMITED: Option<FeatureSet> = Some(FeatureSet { message_encoding: Some(2), ..EMPTY });
const IMPLICIT: Option<FeatureSet> = Some(FeatureSet { field_presence: Some(2), ..EMPTY });
const EXPANDED: Option<FeatureSet> = Some(FeatureSet { repeated_field_encoding: Some(2), ..EMPTY });
const EMPTY: FeatureSet = FeatureSet {
    field_presence: None,
    enum_type: None,
    repeated_field_encoding: None,
    utf8_validation: None,
    message_encoding: None,
    json_format: None,
    enforce_naming_style: None,
    default_symbol_visibility: None,
    unknown_core: None,
    cpp: None,
    custom: None,
};

/// `hp.M` of edition `edition` (1000: 2023, 1001: 2024), every feature at its edition's
/// default but where a field says otherwise.
fn handmade(edition: i32) -> Schema {
    let mut f = editions_file(&format!("hp{edition}.proto"), "hp", edition, None);
    let values = |names: [&str; 2]| {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| EnumValue { name: Some((*n).into()), number: Some(i as i32), ..Default::default() })
            .collect()
    };
    f.enum_type.push(Enum { name: Some("Open".into()), value: values(["O0", "O1"]), ..Default::default() });
    f.enum_type.push(Enum {
        name: Some("Closed".into()),
        value: values(["C0", "C1"]),
        options: Some(EnumOptions { features: Some(FeatureSet { enum_type: Some(2), ..EMPTY }) }),
    });
    let inner = |name: &str| Msg {
        name: Some(name.into()),
        field: vec![field("v", 1, OPTIONAL, INT32, None, None)],
        ..Default::default()
    };
    f.message_type.push(inner("Inner"));
    let mut m = Msg {
        name: Some("M".into()),
        field: vec![
            field("imp", 1, OPTIONAL, INT32, None, IMPLICIT),
            field("exp", 2, OPTIONAL, INT32, None, None),
            field("s_imp", 3, OPTIONAL, STRING, None, IMPLICIT),
            field("o", 4, OPTIONAL, ENUM, Some(".hp.Open"), None),
            field("oi", 5, OPTIONAL, ENUM, Some(".hp.Open"), IMPLICIT),
            field("c", 6, OPTIONAL, ENUM, Some(".hp.Closed"), None),
            field("packed", 7, REPEATED, INT32, None, None),
            field("expanded", 8, REPEATED, INT32, None, EXPANDED),
            field("delim", 9, OPTIONAL, MESSAGE, Some(".hp.Inner"), DELIMITED),
            field("group", 10, OPTIONAL, MESSAGE, Some(".hp.M.Group"), DELIMITED),
            field("s_none", 11, OPTIONAL, STRING, None, Some(FeatureSet { utf8_validation: Some(3), ..EMPTY })),
            field("s", 12, OPTIONAL, STRING, None, None),
            field("rc", 13, REPEATED, ENUM, Some(".hp.Closed"), None),
            field("ro", 14, REPEATED, ENUM, Some(".hp.Open"), EXPANDED),
            field("groups", 15, REPEATED, MESSAGE, Some(".hp.Inner"), DELIMITED),
        ],
        ..Default::default()
    };
    m.nested_type.push(inner("Group"));
    f.message_type.push(m);
    Schema::from_descriptor_set(&encode(vec![f])).unwrap_or_else(|e| panic!("edition {edition}: {e}"))
}

fn parse(schema: &Schema, json: bool, input: &str, options: &ParseOptions) -> Result<Vec<u8>, ParseError> {
    let layouts = schema.layouts();
    let root = layouts.index_of("hp.M").unwrap();
    let mut out = Vec::new();
    match json {
        true => json_to_binary(layouts, root, input.as_bytes(), options, &mut out),
        false => text_to_binary(layouts, root, input.as_bytes(), options, &mut out),
    }
    .map(|()| out)
}

/// Both formats of one message give `want`, and our writers' forms of it parse back to it.
#[track_caller]
fn both(schema: &Schema, json: &str, text: &str, want: &[u8]) {
    let options = ParseOptions::default();
    let got = parse(schema, true, json, &options).unwrap_or_else(|e| panic!("{json}: {e}"));
    assert_eq!(got, want, "JSON {json}");
    let got = parse(schema, false, text, &options).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(got, want, "text {text}");
    let decoder = schema.decoder("hp.M").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(want, &arena).unwrap();
    let written = msg.to_text_format();
    assert_eq!(parse(schema, false, &written, &options).unwrap(), want, "our text {written}");
    let written = msg.to_json_string(&Default::default()).unwrap();
    assert_eq!(parse(schema, true, &written, &options).unwrap(), want, "our JSON {written}");
}

/// `input` is refused with exactly `message` at `(line, column)`.
#[track_caller]
fn refused(schema: &Schema, json: bool, input: &str, message: &str, at: (usize, usize)) {
    let e = parse(schema, json, input, &ParseOptions::default()).expect_err(input);
    assert_eq!((e.message(), e.position()), (message, at), "{input}");
}

#[test]
fn implicit_presence_writes_no_defaults() {
    for edition in [1000, 1001] {
        let s = handmade(edition);
        // `imp`, `s_imp` and `oi` have no presence: at their defaults they are not written,
        // as protoc does not; `exp` has presence (the editions default): written.
        both(&s, r#"{"imp": 0, "exp": 0, "sImp": "", "oi": "O0"}"#, r#"imp: 0 exp: 0 s_imp: "" oi: O0"#, &[0x10, 0]);
        both(
            &s,
            r#"{"imp": 5, "sImp": "a", "oi": 1}"#,
            r#"imp: 5 s_imp: "a" oi: 1"#,
            &[0x08, 5, 0x1a, 1, b'a', 0x28, 1],
        );
        // JSON null: absent, with or without presence.
        assert_eq!(parse(&s, true, r#"{"imp": null, "exp": null, "o": null}"#, &Default::default()).unwrap(), [0u8; 0]);
    }
}

#[test]
fn open_enums_take_unknown_numbers_and_closed_ones_refuse_them() {
    for edition in [1000, 1001] {
        let s = handmade(edition);
        both(&s, r#"{"o": 7, "ro": [7, 1]}"#, "o: 7 ro: [7, 1]", &[0x20, 7, 0x70, 7, 0x70, 1]);
        both(&s, r#"{"c": "C1", "rc": [1, 0]}"#, "c: C1 rc: [1, 0]", &[0x30, 1, 0x6a, 2, 1, 0]);
        refused(&s, true, r#"{"c": 7}"#, "7 is not a value of closed enum hp.Closed", (1, 7));
        refused(&s, true, r#"{"rc": [1, 7]}"#, "7 is not a value of closed enum hp.Closed", (1, 12));
        refused(&s, false, "c: 7", "7 is not a value of closed enum hp.Closed", (1, 4));
        refused(&s, false, "rc: [1, 7]", "7 is not a value of closed enum hp.Closed", (1, 9));
        // Ignoring unknown values leaves the field unset, as protobuf's ignore option does.
        let ignore = ParseOptions { ignore_unknown_fields: true, ..Default::default() };
        assert_eq!(parse(&s, true, r#"{"c": 7, "rc": [7, 1]}"#, &ignore).unwrap(), [0x6a, 1, 1]);
    }
}

#[test]
fn delimited_fields_are_groups_named_as_protoc_names_them() {
    for edition in [1000, 1001] {
        let s = handmade(edition);
        // Start-group and end-group tags with the field's own number. `group` is group-like
        // (its type `Group` is named as it and nested beside it): text format calls it by
        // its type's name; `delim` and `groups` are not, and keep their field names.
        let want = [
            0x4b, 0x08, 3, 0x4c, // delim (9)
            0x53, 0x08, 4, 0x54, // group (10)
            0x7b, 0x08, 5, 0x7c, 0x7b, 0x7c, // groups (15)
        ];
        both(
            &s,
            r#"{"delim": {"v": 3}, "group": {"v": 4}, "groups": [{"v": 5}, {}]}"#,
            "delim { v: 3 } Group { v: 4 } groups [{ v: 5 }, {}]",
            &want,
        );
        // protobuf 36's parser also takes a group-like field by its own name.
        let text = parse(&s, false, "group { v: 4 }", &ParseOptions::default()).unwrap();
        assert_eq!(text, [0x53, 0x08, 4, 0x54]);
        refused(&s, false, "Delim { v: 3 }", "no field named Delim in hp.M", (1, 1));
    }
}

#[test]
fn expanded_and_packed_repeated_fields_are_written_as_their_features_say() {
    for edition in [1000, 1001] {
        let s = handmade(edition);
        // `packed` (the default): one record; `expanded`: a record per value, also when text
        // gives them apart.
        let want = [0x3a, 4, 1, 2, 0x96, 0x01, 0x40, 1, 0x40, 2];
        both(
            &s,
            r#"{"packed": [1, 2, 150], "expanded": [1, 2]}"#,
            "expanded: 1 packed: [1, 2] expanded: 2 packed: 150",
            &want,
        );
    }
}

#[test]
fn utf8_is_checked_where_the_feature_says_verify() {
    for edition in [1000, 1001] {
        let s = handmade(edition);
        let options = ParseOptions::default();
        assert_eq!(parse(&s, false, r#"s_none: "\xff""#, &options).unwrap(), [0x5a, 1, 0xff]);
        refused(
            &s,
            false,
            r#"s: "\xff""#,
            "string field holds invalid UTF-8 (use a bytes field for raw bytes)",
            (1, 4),
        );
        refused(
            &s,
            false,
            r#"s_imp: "\xff""#,
            "string field holds invalid UTF-8 (use a bytes field for raw bytes)",
            (1, 8),
        );
    }
}
