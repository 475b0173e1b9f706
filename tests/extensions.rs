//! Proto2 extensions: decoded into their slots (not left unknown), readable by full name, printed as `[pkg.ext]` in text and JSON, kept by re-encoding.

mod common;

use std::path::PathBuf;

use prost_reflect::DynamicMessage;
use protojit::{Arena, EngineOptions, JsonOptions, Schema, Value};

fn schema() -> Schema {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas");
    Schema::from_proto_files(&[dir.join("ext_base.proto"), dir.join("ext_other.proto")], &[&dir]).unwrap()
}

/// id=7 and one value for every extension of `extbase.Base` (made with a script; its
/// `protoc --decode` output is `PROTOC_TEXT`).
const PAYLOAD: &str =
    "0807a00603aa06020104b206030a0170bb060a0174bc06c00601ca060161ca060162f106000000000000f83fb2090200ffba09030a016f";

/// `protoc --decode=extbase.Base ext_base.proto ext_other.proto` (protoc 3.21.12).
const PROTOC_TEXT: &str = r#"id: 7
[extbase.count]: 3
[extbase.deltas]: -1
[extbase.deltas]: 2
[extbase.payload] {
  text: "p"
}
[extbase.tag] {
  label: "t"
}
[extbase.shade]: SHADE_LIGHT
[extbase.names]: "a"
[extbase.names]: "b"
[extbase.Holder.weight]: 1.5
[extother.blob]: "\000\377"
[extother.other_payload] {
  text: "o"
}
"#;

fn payload() -> Vec<u8> {
    (0..PAYLOAD.len()).step_by(2).map(|i| u8::from_str_radix(&PAYLOAD[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn extensions_decode_into_slots_and_read_by_full_name() {
    let schema = schema();
    let bytes = payload();
    for engine in common::ENGINES {
        let decoder = schema.decoder_with_options("extbase.Base", &EngineOptions::default().with_kind(engine)).unwrap();
        let arena = Arena::new();
        let msg = decoder.decode(&bytes, &arena).unwrap();
        assert_eq!(msg.unknown_fields().count(), 0, "{engine:?}: every extension is known");
        assert_eq!(msg.get_extension("extbase.count").unwrap().as_i32(), Some(3));
        assert_eq!(msg.get_extension(".extbase.count").unwrap().as_i32(), Some(3), "leading dot");
        let deltas: Vec<i32> = msg
            .get_extension("extbase.deltas")
            .unwrap()
            .as_list()
            .unwrap()
            .iter()
            .map(|v| v.as_i32().unwrap())
            .collect();
        assert_eq!(deltas, [-1, 2]);
        let payload = msg.get_extension("extbase.payload").unwrap().as_message().unwrap();
        assert_eq!(payload.get("text").unwrap().as_str(), Some("p"));
        let tag = msg.get_extension("extbase.tag").unwrap().as_message().unwrap();
        assert_eq!(tag.get("label").unwrap().as_str(), Some("t"));
        match msg.get_extension("extbase.shade").unwrap() {
            Value::Enum(e) => assert_eq!(e.name(), Some("SHADE_LIGHT")),
            other => panic!("shade: {other:?}"),
        }
        assert_eq!(msg.get_extension("extbase.Holder.weight").unwrap().as_f64(), Some(1.5));
        assert_eq!(msg.get_extension("extother.blob").unwrap().as_bytes(), Some(&[0u8, 0xff][..]));
        let other = msg.get_extension("extother.other_payload").unwrap().as_message().unwrap();
        assert_eq!(other.get("text").unwrap().as_str(), Some("o"));
        assert!(msg.has_extension("extbase.count") && msg.has_by_number(150));
        // Unknown names, and extensions of another message, read as nothing.
        assert!(msg.get_extension("extbase.nope").is_none());
        assert!(!msg.has_extension("extbase.nope"));
        assert!(msg.get_extension("extbase.Payload").is_none());
        // Paths reach extensions by full name or number.
        assert_eq!(msg.path("(extbase.payload).text").unwrap()[0].as_str(), Some("p"));
        assert_eq!(msg.path("#110").unwrap()[0].as_f64(), Some(1.5));
        // The same tree as prost-reflect's, extensions included.
        let desc = schema.pool().get_message_by_name("extbase.Base").unwrap();
        let expected = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
        common::assert_dyn_eq(&msg.to_dynamic(), &expected);
    }
}

#[test]
fn absent_extensions_read_as_defaults() {
    let schema = schema();
    let decoder = schema.decoder("extbase.Base").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&[0x08, 0x01], &arena).unwrap();
    assert!(!msg.has_extension("extbase.shade"));
    match msg.get_extension("extbase.shade").unwrap() {
        Value::Enum(e) => assert_eq!(e.name(), Some("SHADE_DARK"), "declared default"),
        other => panic!("shade: {other:?}"),
    }
    assert_eq!(msg.get_extension("extbase.names").unwrap().as_list().unwrap().len(), 0);
    assert_eq!(
        msg.to_json_string(&JsonOptions::new().emit_defaults(true)).unwrap(),
        r#"{"id":1}"#,
        "extensions have presence"
    );
}

#[test]
fn extensions_print_like_protoc_in_text_and_like_prost_reflect_in_json() {
    let schema = schema();
    let bytes = payload();
    let decoder = schema.decoder("extbase.Base").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    assert_eq!(msg.to_text_format(), PROTOC_TEXT);
    let json = msg.to_json_string(&JsonOptions::default()).unwrap();
    assert_eq!(
        json,
        concat!(
            r#"{"id":7,"[extbase.count]":3,"[extbase.deltas]":[-1,2],"[extbase.payload]":{"text":"p"},"#,
            r#""[extbase.tag]":{"label":"t"},"[extbase.shade]":"SHADE_LIGHT","[extbase.names]":["a","b"],"#,
            r#""[extbase.Holder.weight]":1.5,"[extother.blob]":"AP8=","[extother.other_payload]":{"text":"o"}}"#
        )
    );
    let desc = schema.pool().get_message_by_name("extbase.Base").unwrap();
    let dm = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
    assert_eq!(json, serde_json::to_string(&dm).unwrap(), "prost-reflect writes the same");
    // protoc itself, when installed, prints the same text.
    if let Ok(out) = protoc_decode(&bytes) {
        assert_eq!(out, PROTOC_TEXT);
    }
}

fn protoc_decode(bytes: &[u8]) -> Result<String, String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas");
    let mut child = Command::new(std::env::var("PROTOC").unwrap_or_else(|_| "protoc".into()))
        .arg(format!("-I{}", dir.display()))
        .args(["--decode=extbase.Base", "ext_base.proto", "ext_other.proto"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child.stdin.take().unwrap().write_all(bytes).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn extensions_survive_re_encoding() {
    let schema = schema();
    let bytes = payload();
    let decoder = schema.decoder("extbase.Base").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    // The payload is canonical (number order, [packed = true] packed), so it comes back as is.
    assert_eq!(msg.encode_to_vec(), bytes);
}
