//! A compiled message function compares the first byte with its first field's tag before
//! the hub, and only the functions of types some field decodes as a group check for a
//! group's end: both decode every input as the interpreter does, fields in order or not.

mod common;

use prost::Message as _;
use prost_reflect::{DynamicMessage, Kind, ReflectMessage as _, Value};
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema};

const SCHEMA: &str = r#"
    syntax = "proto2";
    package ff;
    enum Sparse { ZERO = 0; ONE = 1; FIVE = 5; }
    message PackedFirst { repeated int32 v = 1 [packed = true]; optional int32 w = 2; }
    message StrFirst { optional string s = 1; optional sint64 n = 2; }
    message MsgFirst { optional StrFirst m = 1; optional int32 n = 2; repeated MsgFirst more = 3; }
    message Empty {}
    message HighFirst { optional int32 big = 20; optional int32 small = 1; }
    message EnumFirst { optional Sparse e = 1; optional fixed32 f = 2; }
    message Root {
      optional group Grp = 1 { optional int32 a = 1; optional string s = 2; optional Root r = 3; }
      optional Grp grp_as_message = 2;
      repeated Grp grps_as_messages = 3;
      optional PackedFirst pf = 4;
      optional StrFirst sf = 5;
      optional MsgFirst mf = 6;
      optional Empty e = 7;
      optional HighFirst hf = 8;
      optional EnumFirst ef = 9;
      repeated group Rep = 10 { optional Empty e = 11; optional fixed64 x = 12; }
    }
"#;

fn schema() -> Schema {
    Schema::from_proto_source("ff.proto", SCHEMA).unwrap()
}

/// The text of the tree, or the error, of one decode.
fn outcome(decoder: &Decoder, input: &[u8]) -> Result<String, String> {
    let arena = Arena::new();
    decoder.decode(input, &arena).map(|m| m.to_text_format()).map_err(|e| format!("{:?} at {}", e.kind, e.offset))
}

/// `msg` encoded with its fields in reverse order, singular child messages and groups
/// reversed too: first bytes that are not the first field's tag, at every level.
fn reversed(msg: &DynamicMessage) -> Vec<u8> {
    let mut out = Vec::new();
    let fields: Vec<_> = msg.fields().map(|(f, v)| (f, v.clone())).collect();
    for (field, value) in fields.into_iter().rev() {
        match (&value, field.kind()) {
            (Value::Message(child), Kind::Message(_)) if !field.is_list() => {
                let inner = reversed(child);
                if field.is_group() {
                    prost::encoding::encode_key(field.number(), prost::encoding::WireType::StartGroup, &mut out);
                    out.extend_from_slice(&inner);
                    prost::encoding::encode_key(field.number(), prost::encoding::WireType::EndGroup, &mut out);
                } else {
                    prost::encoding::encode_key(field.number(), prost::encoding::WireType::LengthDelimited, &mut out);
                    prost::encoding::encode_varint(inner.len() as u64, &mut out);
                    out.extend_from_slice(&inner);
                }
            }
            _ => {
                let mut one = DynamicMessage::new(msg.descriptor());
                one.set_field(&field, value);
                out.extend_from_slice(&one.encode_to_vec());
            }
        }
    }
    out
}

#[test]
fn first_field_check_and_group_ends_decode_as_the_interpreter_does() {
    let schema = schema();
    let desc = schema.pool().get_message_by_name("ff.Root").unwrap();
    let options = EngineOptions::default();
    let jit = schema.decoder_with_options("ff.Root", &options.with_kind(EngineKind::Jit)).unwrap();
    let interp = schema.decoder_with_options("ff.Root", &options.with_kind(EngineKind::Interpreter)).unwrap();
    let mut rng = common::Rng(0xf1_257);
    let mut out_of_order = 0;
    for _ in 0..300 {
        let msg = common::random_message(&desc, 4, &mut rng);
        let in_order = msg.encode_to_vec();
        let backwards = reversed(&msg);
        out_of_order += usize::from(backwards != in_order);
        for bytes in [in_order, backwards] {
            let want = outcome(&interp, &bytes);
            assert!(want.is_ok(), "{want:?}");
            assert_eq!(outcome(&jit, &bytes), want, "{bytes:02x?}");
            // Every prefix (groups cut before their end tag among them), and one corrupted byte.
            for cut in 0..bytes.len() {
                assert_eq!(
                    outcome(&jit, &bytes[..cut]),
                    outcome(&interp, &bytes[..cut]),
                    "prefix {cut} of {bytes:02x?}"
                );
            }
            if !bytes.is_empty() {
                let mut bad = bytes.clone();
                let at = rng.index(bad.len());
                bad[at] ^= 1 << rng.below(8);
                assert_eq!(outcome(&jit, &bad), outcome(&interp, &bad), "{bad:02x?}");
            }
        }
    }
    assert!(out_of_order > 100, "only {out_of_order} messages came out in another order");
}

#[test]
fn a_group_type_decodes_as_group_and_as_message() {
    let schema = schema();
    let jit = schema.decoder_with_options("ff.Root", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
    let interp =
        schema.decoder_with_options("ff.Root", &EngineOptions::default().with_kind(EngineKind::Interpreter)).unwrap();
    let cases: [(&[u8], Result<&str, &str>); 6] = [
        // grp { a: 5 }, then grp_as_message { a: 6 }.
        (&[0x0b, 0x08, 0x05, 0x0c, 0x12, 0x02, 0x08, 0x06], Ok("Grp { a: 5 } grp_as_message { a: 6 }")),
        // The group's first field first, the message's second field first.
        (&[0x0b, 0x08, 0x07, 0x12, 0x01, 0x78, 0x0c], Ok("Grp { a: 7 s: \"x\" }")),
        // A group that the input ends inside: its function's end check.
        (&[0x0b, 0x08, 0x05], Err("UnterminatedGroup at 0")),
        // An empty group, and an empty message of the same type.
        (&[0x0b, 0x0c, 0x12, 0x00], Ok("Grp { } grp_as_message { }")),
        // A message of the group's type whose bytes hold an end-group tag: not its end.
        (&[0x12, 0x01, 0x0c], Err("UnmatchedEndGroup at 2")),
        // The empty type, as a field.
        (&[0x3a, 0x00], Ok("e { }")),
    ];
    for (input, want) in cases {
        let got = outcome(&jit, input);
        assert_eq!(got, outcome(&interp, input), "{input:02x?}");
        match want {
            Ok(text) => assert_eq!(got.unwrap().split_whitespace().collect::<Vec<_>>().join(" "), text, "{input:02x?}"),
            Err(e) => assert_eq!(got.unwrap_err(), e, "{input:02x?}"),
        }
    }
}
