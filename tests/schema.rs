//! Loading schemas: descriptor sets (bytes and files), `.proto` files with include paths,
//! well-known types, type-name resolution, error messages, and the protox → protoc fallback.

mod common;

use std::path::{Path, PathBuf};

use protojit::{Arena, Schema, SchemaError};

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("protojit-schema-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The error of a result that must have failed.
#[track_caller]
fn err<T>(r: Result<T, SchemaError>) -> SchemaError {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

const BASE_PROTO: &str = r#"
syntax = "proto3";
package common;
message Id { string value = 1; }
"#;

const USER_PROTO: &str = r#"
syntax = "proto3";
package app;
import "common/base.proto";
message User {
  common.Id id = 1;
  string name = 2;
  message Address { string city = 1; }
  Address address = 3;
  map<string, int32> scores = 4;
}
message Users { repeated User users = 1; }
"#;

/// `id { value: "u1" } name: "Ann" address { city: "Oslo" }`.
const USER_BYTES: &[u8] =
    &[0x0a, 0x04, 0x0a, 0x02, b'u', b'1', 0x12, 0x03, b'A', b'n', b'n', 0x1a, 0x06, 0x0a, 0x04, b'O', b's', b'l', b'o'];
const USER_TEXT: &str = "id {\n  value: \"u1\"\n}\nname: \"Ann\"\naddress {\n  city: \"Oslo\"\n}\n";

/// `inc/common/base.proto` and `src/user.proto` (which imports the former).
fn two_dirs(tag: &str) -> TempDir {
    let tmp = TempDir::new(tag);
    tmp.write("inc/common/base.proto", BASE_PROTO);
    tmp.write("src/user.proto", USER_PROTO);
    tmp
}

#[track_caller]
fn assert_decodes_user(schema: &Schema) {
    let decoder = schema.decoder("app.User").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(USER_BYTES, &arena).unwrap();
    assert_eq!(msg.to_text_format(), USER_TEXT);
}

#[test]
fn descriptor_set_from_bytes_and_from_file() {
    let Some(dir) = common::corpus_dir("descriptor_set_from_bytes_and_from_file") else { return };
    let path = dir.join("descriptor.fds.bin");
    let bytes = std::fs::read(&path).unwrap();
    let from_bytes = Schema::from_descriptor_set(&bytes).unwrap();
    let from_file = Schema::from_descriptor_set_files(&[&path]).unwrap();
    for schema in [&from_bytes, &from_file] {
        let names = schema.message_names();
        assert!(names.iter().any(|n| n == "google.protobuf.FileDescriptorSet"), "{names:?}");
        assert!(names.iter().any(|n| n == "google.protobuf.DescriptorProto.ExtensionRange"), "{names:?}");
        // The set describes itself: it decodes as a FileDescriptorSet with one file.
        let decoder = schema.decoder("google.protobuf.FileDescriptorSet").unwrap();
        let arena = Arena::new();
        let msg = decoder.decode(&bytes, &arena).unwrap();
        let files = msg.get("file").unwrap();
        let files = files.as_list().unwrap();
        assert_eq!(files.len(), 1);
        let file = files.get(0).unwrap().as_message().unwrap();
        assert_eq!(file.get("name").unwrap().as_str(), Some("google/protobuf/descriptor.proto"));
    }
    assert_eq!(from_bytes.message_names(), from_file.message_names());
}

#[test]
fn descriptor_set_files_later_ones_may_depend_on_earlier_ones() {
    let tmp = two_dirs("fds-files");
    let includes = [tmp.path("src"), tmp.path("inc")];
    // One set with base.proto alone, one with user.proto alone (no imports included).
    let base = protox::Compiler::new(&includes)
        .unwrap()
        .open_files(["common/base.proto"])
        .unwrap()
        .encode_file_descriptor_set();
    let user =
        protox::Compiler::new(&includes).unwrap().open_files(["user.proto"]).unwrap().encode_file_descriptor_set();
    std::fs::write(tmp.path("base.pb"), &base).unwrap();
    std::fs::write(tmp.path("user.pb"), &user).unwrap();

    let schema = Schema::from_descriptor_set_files(&[tmp.path("base.pb"), tmp.path("user.pb")]).unwrap();
    assert_decodes_user(&schema);

    // user.pb alone lacks its import; the error names the file that failed.
    let e = err(Schema::from_descriptor_set_files(&[tmp.path("user.pb")]));
    assert!(matches!(e, SchemaError::DescriptorSet { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{} is not a valid FileDescriptorSet (", tmp.path("user.pb").display())), "{msg}");
    assert!(msg.contains("common/base.proto"), "{msg}");
}

#[test]
fn proto_files_with_include_paths() {
    let tmp = two_dirs("includes");
    let schema = Schema::from_proto_files(&[tmp.path("src/user.proto")], &[tmp.path("src"), tmp.path("inc")]).unwrap();
    assert_decodes_user(&schema);
    let mut names = schema.message_names();
    names.sort();
    assert_eq!(names, ["app.User", "app.User.Address", "app.Users", "common.Id"]);
}

#[test]
fn proto_files_default_to_their_own_directory() {
    let tmp = TempDir::new("own-dir");
    tmp.write("p/common/base.proto", BASE_PROTO);
    let user = tmp.write("p/user.proto", USER_PROTO);
    let no_includes: [&Path; 0] = [];
    let schema = Schema::from_proto_files(&[user], &no_includes).unwrap();
    assert_decodes_user(&schema);
}

#[test]
fn well_known_types_resolve_without_files() {
    let tmp = TempDir::new("wkt");
    let proto = tmp.write(
        "event.proto",
        r#"
        syntax = "proto3";
        package ev;
        import "google/protobuf/any.proto";
        import "google/protobuf/duration.proto";
        import "google/protobuf/empty.proto";
        import "google/protobuf/field_mask.proto";
        import "google/protobuf/struct.proto";
        import "google/protobuf/timestamp.proto";
        import "google/protobuf/wrappers.proto";
        message Event {
          google.protobuf.Timestamp at = 1;
          google.protobuf.Duration took = 2;
          google.protobuf.Any detail = 3;
          google.protobuf.Struct attrs = 4;
          google.protobuf.StringValue note = 5;
          google.protobuf.FieldMask mask = 6;
          google.protobuf.Empty nothing = 7;
        }
        "#,
    );
    let schema = Schema::from_proto_files(&[&proto], &[&tmp.0]).unwrap();
    let names = schema.message_names();
    for wkt in [
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.Any",
        "google.protobuf.Value",
        "google.protobuf.StringValue",
    ] {
        assert!(names.iter().any(|n| n == wkt), "{wkt} missing from {names:?}");
    }
    // at { seconds: 1700000000 nanos: 5 } note { value: "n" }
    let bytes = [0x0a, 0x08, 0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06, 0x10, 0x05, 0x2a, 0x03, 0x0a, 0x01, b'n'];
    let decoder = schema.decoder("Event").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    assert_eq!(msg.to_text_format(), "at {\n  seconds: 1700000000\n  nanos: 5\n}\nnote {\n  value: \"n\"\n}\n");

    // The same through in-memory source.
    let schema = Schema::from_proto_source(
        "t.proto",
        "syntax = \"proto3\"; import \"google/protobuf/timestamp.proto\"; message T { google.protobuf.Timestamp t = 1; }",
    )
    .unwrap();
    assert_eq!(schema.resolve_type("Timestamp").unwrap(), "google.protobuf.Timestamp");
}

#[test]
fn missing_import_is_named() {
    let tmp = TempDir::new("missing-import");
    let proto =
        tmp.write("a.proto", "syntax = \"proto3\";\nimport \"nope/missing.proto\";\nmessage A { int32 x = 1; }\n");
    let e = err(Schema::from_proto_files(&[&proto], &[&tmp.0]));
    assert!(matches!(e, SchemaError::Compile { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("cannot compile the schema: "), "{msg}");
    // protox ("import '...' not found") or, when it is on PATH, protoc ("... not found").
    assert!(msg.contains("nope/missing.proto") && msg.contains("not found"), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg:?}");
}

#[test]
fn unknown_field_type_is_named() {
    let tmp = TempDir::new("unknown-field-type");
    let proto = tmp.write("a.proto", "syntax = \"proto3\";\npackage p;\nmessage A { Missing m = 1; int32 x = 2; }\n");
    let e = err(Schema::from_proto_files(&[&proto], &[&tmp.0]));
    assert!(matches!(e, SchemaError::Compile { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("cannot compile the schema: "), "{msg}");
    // protox ("name 'Missing' is not defined") or protoc ("\"Missing\" is not defined").
    assert!(msg.contains("Missing") && msg.contains("is not defined"), "{msg}");
}

#[test]
fn missing_proto_file() {
    let tmp = TempDir::new("missing-file");
    let path = tmp.path("absent.proto");
    let e = err(Schema::from_proto_files(&[&path], &[&tmp.0]));
    assert!(matches!(e, SchemaError::Io { .. }), "{e:?}");
    assert_eq!(e.to_string(), format!("cannot read {}: no such file", path.display()));
}

#[test]
fn not_a_descriptor_set() {
    // Field 1 (`file`) announces 5 bytes; 1 follows.
    let e = err(Schema::from_descriptor_set(&[0x0a, 0x05, 0x01]));
    assert!(matches!(e, SchemaError::DescriptorSet { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("input is not a valid FileDescriptorSet ("), "{msg}");
    assert!(
        msg.ends_with(
            "); pass a file written by `protoc --descriptor_set_out` / `protoc -o`, or use .proto files instead"
        ),
        "{msg}"
    );

    let tmp = TempDir::new("not-fds");
    let path = tmp.path("text.pb");
    std::fs::write(&path, [0x0a, 0x05, 0x01]).unwrap();
    let msg = err(Schema::from_descriptor_set_files(&[&path])).to_string();
    assert!(msg.starts_with(&format!("{} is not a valid FileDescriptorSet (", path.display())), "{msg}");

    let missing = tmp.path("absent.pb");
    let e = err(Schema::from_descriptor_set_files(&[&missing]));
    assert!(matches!(e, SchemaError::Io { .. }), "{e:?}");
    assert!(e.to_string().starts_with(&format!("cannot read {}: ", missing.display())), "{e}");
}

const NAMES_PROTO: &str = r#"
syntax = "proto3";
package shop.v1;
message Order {
  message Line { int32 qty = 1; }
  repeated Line lines = 1;
  map<string, string> tags = 2;
}
message Customer { string name = 1; }
message Thing { int32 a = 1; }
"#;

const OTHER_PROTO: &str = r#"
syntax = "proto3";
package warehouse;
message Thing { int32 b = 1; }
message Line { int32 c = 1; }
"#;

fn names_schema(tag: &str) -> (TempDir, Schema) {
    let tmp = TempDir::new(tag);
    let a = tmp.write("shop.proto", NAMES_PROTO);
    let b = tmp.write("warehouse.proto", OTHER_PROTO);
    let schema = Schema::from_proto_files(&[a, b], &[&tmp.0]).unwrap();
    (tmp, schema)
}

#[test]
fn short_names_resolve() {
    let (_tmp, schema) = names_schema("short-names");
    assert_eq!(schema.resolve_type("shop.v1.Order").unwrap(), "shop.v1.Order");
    assert_eq!(schema.resolve_type(".shop.v1.Order").unwrap(), "shop.v1.Order");
    assert_eq!(schema.resolve_type("Order").unwrap(), "shop.v1.Order");
    assert_eq!(schema.resolve_type("v1.Order").unwrap(), "shop.v1.Order");
    assert_eq!(schema.resolve_type("Customer").unwrap(), "shop.v1.Customer");
    assert_eq!(schema.resolve_type("Order.Line").unwrap(), "shop.v1.Order.Line");
    assert_eq!(schema.resolve_type("warehouse.Line").unwrap(), "warehouse.Line");
    // A suffix matches only at a name boundary.
    assert!(matches!(schema.resolve_type("rder"), Err(SchemaError::UnknownType { .. })));
    assert_eq!(schema.decoder("Customer").unwrap().descriptor().full_name(), "shop.v1.Customer");
}

#[test]
fn ambiguous_short_names_list_the_candidates() {
    let (_tmp, schema) = names_schema("ambiguous");
    let e = err(schema.resolve_type("Thing"));
    assert!(matches!(e, SchemaError::AmbiguousType { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg == "message type name `Thing` is ambiguous: `shop.v1.Thing`, `warehouse.Thing`; use the full name"
            || msg == "message type name `Thing` is ambiguous: `warehouse.Thing`, `shop.v1.Thing`; use the full name",
        "{msg}"
    );
    // `Line` is both warehouse.Line and shop.v1.Order.Line.
    let msg = err(schema.decoder("Line")).to_string();
    assert!(msg.contains("`warehouse.Line`") && msg.contains("`shop.v1.Order.Line`"), "{msg}");
}

#[test]
fn unknown_types_suggest_close_names() {
    let (_tmp, schema) = names_schema("unknown");
    let e = err(schema.resolve_type("Custmer"));
    assert!(matches!(e, SchemaError::UnknownType { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("no message type `Custmer` in the schema; did you mean `shop.v1.Customer`"), "{msg}");
    assert!(msg.ends_with('?'), "{msg}");

    let msg = err(schema.resolve_type("shop.v1.Ordr")).to_string();
    assert!(msg.starts_with("no message type `shop.v1.Ordr` in the schema; did you mean `shop.v1.Order`"), "{msg}");

    // Nothing close: no suggestion at all.
    let msg = err(schema.resolve_type("Xylophonequartet")).to_string();
    assert_eq!(msg, "no message type `Xylophonequartet` in the schema");

    let msg = err(schema.decoder("Custmer")).to_string();
    assert!(msg.contains("did you mean `shop.v1.Customer`"), "{msg}");
}

fn protoc_runnable() -> Result<(), String> {
    let protoc = std::env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    match std::process::Command::new(&protoc).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{protoc:?} --version exited with {}", o.status)),
        Err(e) => Err(format!("{protoc:?} cannot run: {e}")),
    }
}

/// protox 0.10 rejects the 2026 descriptor.proto; with a protoc on PATH (or `$PROTOC`) the
/// loader compiles it with protoc instead. (The case without protoc runs in the CLI tests,
/// as a child process with `PROTOC` set, since the environment is process-global.)
#[test]
fn protoc_fallback_when_protox_rejects_the_file() {
    let Some(dir) = common::corpus_dir("protoc_fallback_when_protox_rejects_the_file") else { return };
    let file = dir.join("descriptor.proto");
    assert!(
        protox::compile([&file], [&dir]).is_err(),
        "protox now accepts descriptor.proto: this test no longer exercises the protoc fallback; pick a file protox rejects"
    );
    if let Err(why) = protoc_runnable() {
        println!("SKIPPED protoc_fallback_when_protox_rejects_the_file: {why}");
        return;
    }
    let schema = Schema::from_proto_files(&[&file], &[&dir]).unwrap();
    let bytes = std::fs::read(dir.join("descriptor.fds.bin")).unwrap();
    let expected = Schema::from_descriptor_set(&bytes).unwrap();
    let mut a = schema.message_names();
    let mut b = expected.message_names();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let decoder = schema.decoder("google.protobuf.FileDescriptorSet").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&bytes, &arena).unwrap();
    assert_eq!(msg.get("file").unwrap().as_list().unwrap().len(), 1);
}
