//! The conformance testee (`protojit-conformance`) answers hand-made conformance requests over its stdin/stdout protocol.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, Value};

/// The conformance schemas of the shared corpus (see `protojit_corpus::require_shared_corpus`:
/// skipped without the corpus, a failure under `CI=true`).
fn conformance_dir(test: &str) -> Option<PathBuf> {
    let dir = protojit_corpus::require_shared_corpus(test)?.join("conformance");
    assert!(dir.join("conformance.proto").exists(), "{test}: the shared corpus has no {}", dir.display());
    Some(dir)
}

fn pool(dir: &std::path::Path) -> prost_reflect::DescriptorPool {
    let files = ["conformance.proto", "test_messages_proto2.proto", "test_messages_proto3.proto"].map(|f| dir.join(f));
    protojit::Schema::from_proto_files(&files, &[dir]).unwrap().pool().clone()
}

/// A request: `payload` is (oneof member name, value).
fn request(pool: &prost_reflect::DescriptorPool, message_type: &str, payload: (&str, Value), output: i32) -> Vec<u8> {
    let mut req = DynamicMessage::new(pool.get_message_by_name("conformance.ConformanceRequest").unwrap());
    req.set_field_by_name(payload.0, payload.1);
    req.set_field_by_name("message_type", Value::String(message_type.to_owned()));
    req.set_field_by_name("requested_output_format", Value::EnumNumber(output));
    req.encode_to_vec()
}

/// Runs the testee on `requests` and returns each response's (result member, value).
fn run(dir: &std::path::Path, pool: &prost_reflect::DescriptorPool, requests: &[Vec<u8>]) -> Vec<(String, Value)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_protojit-conformance"))
        .env("PROTOJIT_CONFORMANCE_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the testee starts");
    let mut input = Vec::new();
    for r in requests {
        input.extend_from_slice(&(r.len() as u32).to_le_bytes());
        input.extend_from_slice(r);
    }
    child.stdin.take().unwrap().write_all(&input).unwrap(); // closes stdin: the testee ends
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "testee failed: {}", String::from_utf8_lossy(&out.stderr));
    let desc: MessageDescriptor = pool.get_message_by_name("conformance.ConformanceResponse").unwrap();
    let mut responses = Vec::new();
    let mut rest = out.stdout.as_slice();
    while !rest.is_empty() {
        let mut len = [0u8; 4];
        rest.read_exact(&mut len).unwrap();
        let (msg, tail) = rest.split_at(u32::from_le_bytes(len) as usize);
        rest = tail;
        let resp = DynamicMessage::decode(desc.clone(), msg).unwrap();
        let (field, value) = resp.fields().next().expect("a response sets one result");
        responses.push((field.name().to_owned(), value.clone()));
    }
    responses
}

const PROTOBUF: i32 = 1;
const JSON: i32 = 2;
const TEXT_FORMAT: i32 = 4;

#[test]
fn testee_answers_binary_json_text_and_errors() {
    let Some(dir) = conformance_dir("testee_answers_binary_json_text_and_errors") else { return };
    let pool = pool(&dir);
    let p3 = "protobuf_test_messages.proto3.TestAllTypesProto3";
    let p2 = "protobuf_test_messages.proto2.TestAllTypesProto2";

    // TestAllTypesProto3 { optional_int32: 5, optional_string: "x", repeated_int32: [1, 2]
    // (written unpacked), optional_nested_enum: BAR, optional_int32_wrapper: 0 } and an
    // unknown field 999.
    let mut m3 = DynamicMessage::new(pool.get_message_by_name(p3).unwrap());
    m3.set_field_by_name("optional_int32", Value::I32(5));
    m3.set_field_by_name("optional_string", Value::String("x".into()));
    m3.set_field_by_name("optional_nested_enum", Value::EnumNumber(1));
    let wrapper = DynamicMessage::new(pool.get_message_by_name("google.protobuf.Int32Value").unwrap());
    m3.set_field_by_name("optional_int32_wrapper", Value::Message(wrapper));
    let mut p3_bytes = m3.encode_to_vec();
    p3_bytes.extend_from_slice(&[0xf8, 0x01, 0x01, 0xf8, 0x01, 0x02]); // repeated_int32 = 1, 2 (field 31, unpacked)
    p3_bytes.extend_from_slice(&[0xb8, 0x3e, 0x07]); // unknown field 999 = 7

    // TestAllTypesProto2 { optional_int32: -1, [extension_int32]: 9 }
    let p2_bytes = vec![0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xc0, 0x07, 0x09];

    let requests = vec![
        // The runner's first request: the failure list, echoed back.
        request(&pool, "conformance.FailureSet", ("protobuf_payload", Value::Bytes(Vec::new().into())), PROTOBUF),
        request(&pool, p3, ("protobuf_payload", Value::Bytes(p3_bytes.clone().into())), PROTOBUF),
        request(&pool, p3, ("protobuf_payload", Value::Bytes(p3_bytes.clone().into())), JSON),
        request(&pool, p2, ("protobuf_payload", Value::Bytes(p2_bytes.clone().into())), JSON),
        request(&pool, p3, ("protobuf_payload", Value::Bytes(vec![0x0a, 0x05, 0x01].into())), PROTOBUF),
        // optional_string (proto3) with invalid UTF-8.
        request(&pool, p3, ("protobuf_payload", Value::Bytes(vec![0x72, 0x01, 0xff].into())), PROTOBUF),
        request(&pool, p3, ("json_payload", Value::String("{}".into())), PROTOBUF),
        request(&pool, p3, ("text_payload", Value::String("".into())), PROTOBUF),
        request(&pool, p3, ("protobuf_payload", Value::Bytes(Vec::new().into())), TEXT_FORMAT),
        request(&pool, "no.such.Type", ("protobuf_payload", Value::Bytes(Vec::new().into())), PROTOBUF),
    ];
    let responses = run(&dir, &pool, &requests);
    assert_eq!(responses.len(), requests.len());
    let kinds: Vec<&str> = responses.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "protobuf_payload",
            "protobuf_payload",
            "json_payload",
            "json_payload",
            "parse_error",
            "parse_error",
            "protobuf_payload",
            "protobuf_payload",
            "text_payload",
            "runtime_error"
        ]
    );
    assert_eq!(responses[0].1, Value::Bytes(Vec::new().into()));
    // JSON `{}` and empty text parse to the empty message; the empty message prints as
    // empty text.
    assert_eq!(responses[6].1, Value::Bytes(Vec::new().into()));
    assert_eq!(responses[7].1, Value::Bytes(Vec::new().into()));
    assert_eq!(responses[8].1, Value::String(String::new()));

    // Binary: canonical (repeated_int32 packed, unknown field last) and equal to the input.
    let Value::Bytes(out) = &responses[1].1 else { unreachable!() };
    let desc = pool.get_message_by_name(p3).unwrap();
    let back = DynamicMessage::decode(desc.clone(), out.as_ref()).unwrap();
    let orig = DynamicMessage::decode(desc, p3_bytes.as_slice()).unwrap();
    assert_eq!(back, orig);
    assert!(out.ends_with(&[0xb8, 0x3e, 0x07]), "unknown fields kept, last");
    assert!(out.windows(4).any(|w| w == [0xfa, 0x01, 0x02, 0x01]), "repeated_int32 re-encoded packed: {out:?}");

    assert_eq!(
        responses[2].1,
        Value::String(
            r#"{"optionalInt32":5,"optionalString":"x","optionalNestedEnum":"BAR","repeatedInt32":[1,2],"optionalInt32Wrapper":0}"#.into()
        )
    );
    assert_eq!(
        responses[3].1,
        Value::String(r#"{"optionalInt32":-1,"[protobuf_test_messages.proto2.extension_int32]":9}"#.into())
    );
    let Value::String(e) = &responses[4].1 else { unreachable!() };
    assert!(e.contains("length prefix past the end"), "{e}");
    let Value::String(e) = &responses[5].1 else { unreachable!() };
    assert!(e.contains("UTF-8"), "{e}");
    let Value::String(e) = &responses[9].1 else { unreachable!() };
    assert!(e.contains("no.such.Type"), "{e}");
}

#[test]
fn testee_without_schemas_says_where_to_point_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_protojit-conformance"))
        .env("PROTOJIT_CONFORMANCE_DIR", "/nonexistent/protojit")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PROTOJIT_CONFORMANCE_DIR=/nonexistent/protojit does not hold conformance.proto"), "{err}");
}

#[test]
fn testee_finds_the_shared_schemas_by_itself() {
    let Some(dir) = conformance_dir("testee_finds_the_shared_schemas_by_itself") else { return };
    let pool = pool(&dir);
    let req = request(&pool, "conformance.FailureSet", ("protobuf_payload", Value::Bytes(Vec::new().into())), PROTOBUF);
    let mut input = (req.len() as u32).to_le_bytes().to_vec();
    input.extend_from_slice(&req);
    let mut child = Command::new(env!("CARGO_BIN_EXE_protojit-conformance"))
        .env_remove("PROTOJIT_CONFORMANCE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 4 + 2, "one response: protobuf_payload (field 3) = empty");
    assert_eq!(&out.stdout[4..], &[0x1a, 0x00]);
}
