//! Shared support for the parser tests: a schema covering every field kind, compiled with
//! protox from source held here, and `protoc` when it is installed.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

use prost_reflect::{DescriptorPool, MessageDescriptor};
use protojit_arena::{LayoutIndex, Layouts};

/// Every scalar kind, lists, maps, a oneof, explicit presence, a json_name, and the
/// well-known types (proto3).
pub const PROTO3: &str = r#"
syntax = "proto3";
package t;
import "google/protobuf/any.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/empty.proto";

enum E { ZERO = 0; ONE = 1; TWO = 2; }

message M {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10; float fl = 11; double db = 12;
  bool b = 13; string s = 14; bytes by = 15; E e = 16; M child = 17;
  repeated int32 ri = 18; repeated string rs = 19; repeated M rm = 20;
  map<string, int32> msi = 21; map<int64, M> mim = 22; map<bool, string> mbs = 23;
  oneof o { string os = 24; int32 oi = 25; M om = 28; }
  optional int32 opt = 26;
  int32 json_named = 27 [json_name = "custom"];
  repeated double rd = 29; repeated E re = 42; repeated sint64 rs64 = 43;
  google.protobuf.Any any = 30; google.protobuf.Timestamp ts = 31; google.protobuf.Duration du = 32;
  google.protobuf.FieldMask fm = 33; google.protobuf.Struct st = 34; google.protobuf.Value va = 35;
  google.protobuf.ListValue lv = 36; google.protobuf.Int64Value w64 = 37; google.protobuf.BytesValue wb = 38;
  google.protobuf.Empty em = 39; google.protobuf.NullValue nv = 40; repeated google.protobuf.Value rva = 41;
  int32 big_number_field_2000 = 2000;
}
"#;

/// proto2: closed enums, defaults with presence, groups, unpacked and packed lists, extensions.
pub const PROTO2: &str = r#"
syntax = "proto2";
package t2;
enum C { C0 = 0; C5 = 5; }
message P {
  optional int32 a = 1;
  optional C c = 2;
  repeated int32 ru = 3;
  repeated int32 rp = 4 [packed = true];
  optional group G = 5 { optional int32 x = 1; optional string y = 2; }
  repeated group R = 6 { optional int32 z = 1; }
  map<int32, C> mc = 7;
  optional P child = 8;
  extensions 100 to 200;
}
extend P { optional int32 e1 = 101; repeated int32 e2 = 100; optional P pe = 150; }
"#;

fn unique_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "protojit-parse-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The directory holding `t.proto` and `t2.proto`.
pub fn proto_dir() -> PathBuf {
    let dir = unique_dir();
    std::fs::write(dir.join("t.proto"), PROTO3).unwrap();
    std::fs::write(dir.join("t2.proto"), PROTO2).unwrap();
    dir
}

pub fn pool() -> DescriptorPool {
    protojit_corpus::pool_from_sources(&[("t.proto", PROTO3), ("t2.proto", PROTO2)])
}

/// A message type of the test schemas: the layouts, whose slots carry the resolved features
/// the parsers read, and the type's index in them. Derefs to its descriptor.
pub struct Ty {
    pub layouts: Layouts,
    pub root: LayoutIndex,
}

impl std::ops::Deref for Ty {
    type Target = MessageDescriptor;
    fn deref(&self) -> &MessageDescriptor {
        self.layouts.get(self.root).descriptor()
    }
}

/// The type `name` of a pool's layouts (proto2 and proto3 files read as they say).
pub fn ty(pool: &DescriptorPool, name: &str) -> Ty {
    let layouts = Layouts::new(pool).unwrap();
    let root = layouts.index_of(name).unwrap_or_else(|| panic!("no message {name}"));
    Ty { layouts, root }
}

pub fn message(name: &str) -> Ty {
    ty(&pool(), name)
}

/// `protoc --encode=TYPE FILE` on `text`: Ok(bytes), Err(protoc's message), or None when
/// protoc is not installed (the caller says so and skips; CI installs it).
pub fn protoc_encode(type_name: &str, file: &str, text: &str) -> Option<Result<Vec<u8>, String>> {
    let dir = proto_dir();
    let child = Command::new("protoc")
        .arg(format!("--encode={type_name}"))
        .arg(format!("-I{}", dir.display()))
        .arg(dir.join(file))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(_) => return None,
    };
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(if out.status.success() { Ok(out.stdout) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) })
}

/// Whether protoc runs here; prints why the protoc comparisons are skipped when not, and
/// fails under `CI=true`, where it must be installed.
pub fn have_protoc(test: &str) -> bool {
    let ok = Command::new("protoc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{test}: protoc is not installed under CI");
        eprintln!("{test}: skipped, protoc is not installed (apt-get install protobuf-compiler)");
    }
    ok
}
