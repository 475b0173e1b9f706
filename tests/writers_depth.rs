//! Writers at the deepest nesting a decoder accepts: whatever decodes prints (text, JSON, serde, binary), on a 2 MiB thread stack.

use protojit::MAX_DEPTH_LIMIT;
use protojit::{Arena, EngineKind, EngineOptions, JsonOptions, Schema};
use protojit_arena::wire::write_varint;

const SCHEMA: &str = r#"
    syntax = "proto3";
    package deep;
    import "google/protobuf/any.proto";
    import "google/protobuf/struct.proto";
    message Node {
      Node child = 1;
      int32 value = 2;
      repeated Node kids = 3;
      map<string, Node> by_name = 4;
      google.protobuf.Any any = 5;
      google.protobuf.Value json = 6;
      double weight = 7;
    }
"#;

fn schema() -> Schema {
    Schema::from_proto_source("deep.proto", SCHEMA).unwrap()
}

/// `inner` wrapped `levels` times as field `number` (length-delimited).
fn wrap(inner: Vec<u8>, levels: usize, number: u32) -> Vec<u8> {
    let mut msg = inner;
    for _ in 0..levels {
        let mut outer = Vec::with_capacity(msg.len() + 8);
        write_varint(&mut outer, u64::from(number) << 3 | 2);
        write_varint(&mut outer, msg.len() as u64);
        outer.extend_from_slice(&msg);
        msg = outer;
    }
    msg
}

/// The deepest nesting a decoder accepts.
const DEPTH: usize = MAX_DEPTH_LIMIT as usize;

/// Runs `f` on a thread with a 2 MiB stack, the default for spawned threads (tests run at
/// opt-level 1, see the root Cargo.toml; release builds use less stack per level).
fn on_small_stack(f: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        std::thread::Builder::new().stack_size(2 << 20).spawn_scoped(s, f).unwrap().join().unwrap();
    });
}

fn options() -> EngineOptions {
    EngineOptions::default().with_max_depth(MAX_DEPTH_LIMIT)
}

/// Decodes `input` as `deep.Node` at the depth limit with every engine and checks that every
/// writer handles it: text format, JSON (compact, pretty, through the `Serialize` impl),
/// binary re-encoding. Returns the compact JSON.
fn write_all(input: &[u8], text_lines: usize) -> String {
    let schema = schema();
    let mut json = Vec::new();
    for engine in [EngineKind::Interpreter, EngineKind::Jit] {
        let decoder = schema.decoder_with_options("deep.Node", &options().with_kind(engine)).unwrap();
        on_small_stack(|| {
            let arena = Arena::new();
            let msg = decoder.decode(input, &arena).unwrap_or_else(|e| panic!("{engine:?}: {e}"));
            let text = msg.to_text_format();
            assert_eq!(text.lines().count(), text_lines, "{engine:?}: text format lines");
            let compact = msg.to_json_string(&JsonOptions::default()).unwrap_or_else(|e| panic!("{engine:?}: {e}"));
            let pretty = msg.to_json_string_pretty(&JsonOptions::default()).unwrap();
            assert!(pretty.len() >= compact.len());
            assert_eq!(serde_json::to_string(&msg).unwrap(), compact, "{engine:?}: Serialize impl");
            let tree = protojit::Value::Message(msg).to_json(&JsonOptions::default());
            let tree = tree.unwrap_or_else(|e| panic!("{engine:?}: to_json: {e}"));
            assert_eq!(serde_json::to_string(&tree).unwrap(), compact, "{engine:?}: to_json");
            assert_eq!(msg.encode_to_vec(), input, "{engine:?}: canonical input re-encodes to itself");
            assert_eq!(msg.encoded_len(), input.len());
            json.push(compact);
        });
    }
    assert_eq!(json[0], json[1], "engines");
    json.pop().unwrap()
}

#[test]
fn messages_at_the_depth_limit_print() {
    // `child` 1000 deep; the innermost holds value 7 and weight -0.0.
    let innermost = [&[0x10, 0x07, 0x39][..], &(-0.0f64).to_le_bytes()].concat();
    let json = write_all(&wrap(innermost.clone(), DEPTH, 1), 2 * DEPTH + 2);
    assert_eq!(json, format!("{}{{\"value\":7,\"weight\":-0.0}}{}", "{\"child\":".repeat(DEPTH), "}".repeat(DEPTH)));
    // And one more level does not decode.
    let decoder = schema().decoder_with_options("deep.Node", &options().with_kind(EngineKind::Interpreter)).unwrap();
    assert!(decoder.decode(&wrap(innermost, DEPTH + 1, 1), &Arena::new()).is_err());
}

#[test]
fn repeated_and_map_nesting_at_the_depth_limit_print() {
    // `kids` (a repeated message) 1000 deep.
    let json = write_all(&wrap(vec![0x10, 0x01], DEPTH, 3), 2 * DEPTH + 1);
    assert!(json.starts_with("{\"kids\":[{\"kids\":[") && json.ends_with("}]}]}"), "{}", &json[..40]);
    // A map value is two levels (entry, value): 500 maps, each entry with key "k".
    let mut msg = vec![0x10, 0x02];
    for _ in 0..DEPTH / 2 {
        let entry = [&[0x0a, 0x01, b'k'][..], &wrap(msg, 1, 2)].concat();
        msg = wrap(entry, 1, 4);
    }
    let json = write_all(&msg, 5 * DEPTH / 2 + 1);
    assert!(json.starts_with("{\"byName\":{\"k\":{\"byName\":{\"k\":"), "{}", &json[..40]);
}

#[test]
fn well_known_nesting_at_the_depth_limit_prints() {
    // google.protobuf.Value 999 levels below `json` (field 6): ListValue and Value alternate,
    // the innermost is a number. Value { list_value (6) { values (1) { ... } } }.
    let mut value = [&[0x11][..], &1.5f64.to_le_bytes()].concat(); // number_value
    let mut levels = 1;
    while levels + 2 < DEPTH {
        value = wrap(wrap(value, 1, 1), 1, 6);
        levels += 2;
    }
    let json = write_all(&wrap(value, 1, 6), 2 * levels + 1);
    let arrays = (levels - 1) / 2;
    assert_eq!(json, format!("{{\"json\":{}1.5{}}}", "[".repeat(arrays), "]".repeat(arrays)));
}

#[test]
fn any_payloads_nest_up_to_the_writer_limit() {
    // An Any (depth 1) whose payload (depth 2) holds `child` nested to the depth limit: the
    // JSON writer decodes the payload itself and prints it.
    let payload = wrap(vec![0x10, 0x05], DEPTH - 2, 1);
    let url = b"type.googleapis.com/deep.Node";
    let any = [&[0x0a, url.len() as u8][..], url, &wrap(payload, 1, 2)].concat();
    let json = write_all(&wrap(any, 1, 5), 4); // text format shows the Any's bytes
    assert!(
        json.starts_with("{\"any\":{\"@type\":\"type.googleapis.com/deep.Node\",\"child\":{\"child\":"),
        "{json:.80}"
    );
    assert_eq!(json.matches("\"child\":").count(), DEPTH - 2);
    // The innermost object, then the other children's, the Any's and the root's closing braces.
    assert!(json.ends_with(&format!("{{\"value\":5}}{}", "}".repeat(DEPTH - 1))));
}

#[test]
fn unknown_groups_at_the_depth_limit_print() {
    // Field 9 (unknown) as a group nested 1000 deep around `9: 1`; the text format parses
    // and prints the unknown group tree recursively.
    let input = [vec![0x4b; DEPTH], vec![0x48, 0x01], vec![0x4c; DEPTH]].concat();
    let json = write_all(&input, 2 * DEPTH + 1);
    assert_eq!(json, "{}");
}
