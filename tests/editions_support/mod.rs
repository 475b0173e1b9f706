//! Helpers of the editions tests: fixtures, the shared corpus, loading through the lowering, and a hand-made descriptor model with `features`.
#![allow(dead_code)]

use prost::Message;
use prost_reflect::{DescriptorPool, MessageDescriptor};
use protojit::lower_descriptor_set;
use protojit_arena::{DeclaredFeatures, PoolFeatures};

/// A file of the shared corpus (`../shared/corpus`), or `None` (the test then returns early,
/// as `require_shared_corpus` says; under CI it panics instead).
pub fn corpus(path: &str) -> Option<Vec<u8>> {
    let dir = protojit_corpus::require_shared_corpus(path)?;
    Some(std::fs::read(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}")))
}

/// The shared corpus directory, or `None` (as [`corpus`]).
pub fn corpus_dir(user: &str) -> Option<std::path::PathBuf> {
    protojit_corpus::require_shared_corpus(user)
}

/// A file of `tests/fixtures/editions/` (made by `scripts/editions_fixtures.sh`).
pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/editions").join(name)
}

/// Lowers, loads and resolves a serialized set.
pub fn load(bytes: &[u8]) -> (DescriptorPool, PoolFeatures) {
    let lowered = lower_descriptor_set(bytes).unwrap_or_else(|e| panic!("{e}"));
    let mut pool = DescriptorPool::new();
    pool.decode_file_descriptor_set(lowered.bytes.as_slice()).unwrap_or_else(|e| panic!("{e:?}"));
    let features = PoolFeatures::new(&pool, &lowered.declared).unwrap();
    (pool, features)
}

/// A proto2/proto3 set, straight into the descriptor library.
pub fn load_legacy(bytes: &[u8]) -> (DescriptorPool, PoolFeatures) {
    let pool = DescriptorPool::decode(bytes).unwrap();
    let features = PoolFeatures::new(&pool, &DeclaredFeatures::default()).unwrap();
    (pool, features)
}

pub fn message(pool: &DescriptorPool, name: &str) -> MessageDescriptor {
    pool.get_message_by_name(name).unwrap_or_else(|| panic!("no message {name}"))
}

// ---- a hand-made descriptor model: the parts of descriptor.proto prost-types lacks ------

#[derive(Clone, PartialEq, Message)]
pub struct FeatureSet {
    #[prost(uint64, optional, tag = "1")]
    pub field_presence: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub enum_type: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub repeated_field_encoding: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub utf8_validation: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub message_encoding: Option<u64>,
    #[prost(uint64, optional, tag = "6")]
    pub json_format: Option<u64>,
    #[prost(uint64, optional, tag = "7")]
    pub enforce_naming_style: Option<u64>,
    #[prost(uint64, optional, tag = "8")]
    pub default_symbol_visibility: Option<u64>,
    /// A field number this build does not know (set to test the error).
    #[prost(uint64, optional, tag = "10")]
    pub unknown_core: Option<u64>,
    /// `pb.cpp` (a message: `string_type = 2`), as a language feature extension.
    #[prost(bytes = "vec", optional, tag = "1000")]
    pub cpp: Option<Vec<u8>>,
    /// A custom feature extension in the test range.
    #[prost(uint64, optional, tag = "9995")]
    pub custom: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FileOptions {
    #[prost(string, optional, tag = "1")]
    pub java_package: Option<String>,
    #[prost(message, optional, tag = "50")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MessageOptions {
    #[prost(bool, optional, tag = "7")]
    pub map_entry: Option<bool>,
    #[prost(message, optional, tag = "12")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FieldOptions {
    #[prost(bool, optional, tag = "3")]
    pub deprecated: Option<bool>,
    /// A custom option (an extension of FieldOptions in a user's schema).
    #[prost(uint64, optional, tag = "50000")]
    pub custom_option: Option<u64>,
    #[prost(message, optional, tag = "21")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OneofOptions {
    #[prost(message, optional, tag = "1")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct EnumOptions {
    #[prost(message, optional, tag = "7")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct EnumValueOptions {
    #[prost(message, optional, tag = "2")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Field {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub extendee: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub number: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub label: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub r#type: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub type_name: Option<String>,
    #[prost(message, optional, tag = "8")]
    pub options: Option<FieldOptions>,
    #[prost(int32, optional, tag = "9")]
    pub oneof_index: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Oneof {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub options: Option<OneofOptions>,
}

#[derive(Clone, PartialEq, Message)]
pub struct EnumValue {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub number: Option<i32>,
    #[prost(message, optional, tag = "3")]
    pub options: Option<EnumValueOptions>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Enum {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub value: Vec<EnumValue>,
    #[prost(message, optional, tag = "3")]
    pub options: Option<EnumOptions>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ExtensionRangeOptions {
    #[prost(message, optional, tag = "50")]
    pub features: Option<FeatureSet>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ExtensionRange {
    #[prost(int32, optional, tag = "1")]
    pub start: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub end: Option<i32>,
    #[prost(message, optional, tag = "3")]
    pub options: Option<ExtensionRangeOptions>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Msg {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub field: Vec<Field>,
    #[prost(message, repeated, tag = "3")]
    pub nested_type: Vec<Msg>,
    #[prost(message, repeated, tag = "4")]
    pub enum_type: Vec<Enum>,
    #[prost(message, repeated, tag = "5")]
    pub extension_range: Vec<ExtensionRange>,
    #[prost(message, repeated, tag = "6")]
    pub extension: Vec<Field>,
    #[prost(message, optional, tag = "7")]
    pub options: Option<MessageOptions>,
    #[prost(message, repeated, tag = "8")]
    pub oneof_decl: Vec<Oneof>,
}

#[derive(Clone, PartialEq, Message)]
pub struct File {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub package: Option<String>,
    #[prost(string, repeated, tag = "3")]
    pub dependency: Vec<String>,
    #[prost(message, repeated, tag = "4")]
    pub message_type: Vec<Msg>,
    #[prost(message, repeated, tag = "5")]
    pub enum_type: Vec<Enum>,
    #[prost(message, repeated, tag = "7")]
    pub extension: Vec<Field>,
    #[prost(message, optional, tag = "8")]
    pub options: Option<FileOptions>,
    #[prost(string, optional, tag = "12")]
    pub syntax: Option<String>,
    #[prost(int32, optional, tag = "14")]
    pub edition: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Set {
    #[prost(message, repeated, tag = "1")]
    pub file: Vec<File>,
}

// FieldDescriptorProto.Type and .Label
pub const INT32: i32 = 5;
pub const STRING: i32 = 9;
pub const MESSAGE: i32 = 11;
pub const ENUM: i32 = 14;
pub const SINT64: i32 = 18;
pub const OPTIONAL: i32 = 1;
pub const REPEATED: i32 = 3;

pub fn field(name: &str, number: i32, label: i32, ty: i32, type_name: Option<&str>, f: Option<FeatureSet>) -> Field {
    Field {
        name: Some(name.into()),
        number: Some(number),
        label: Some(label),
        r#type: Some(ty),
        type_name: type_name.map(Into::into),
        options: f.map(|f| FieldOptions { features: Some(f), ..Default::default() }),
        ..Default::default()
    }
}

pub fn fs() -> FeatureSet {
    FeatureSet::default()
}

pub fn editions_file(name: &str, package: &str, edition: i32, features: Option<FeatureSet>) -> File {
    File {
        name: Some(name.into()),
        package: Some(package.into()),
        syntax: Some("editions".into()),
        edition: Some(edition),
        options: features.map(|f| FileOptions { java_package: Some("x".into()), features: Some(f) }),
        ..Default::default()
    }
}

pub fn encode(files: Vec<File>) -> Vec<u8> {
    Set { file: files }.encode_to_vec()
}

/// One line of `tests/fixtures/editions/CASES` (written by `scripts/editions_fixtures.sh`).
pub struct Case {
    pub payload: String,
    /// The descriptor set: a fixture, or a path into the shared corpus.
    pub set: String,
    pub type_name: String,
}

pub fn cases() -> Vec<Case> {
    let text = String::from_utf8(fixture("CASES")).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Case { payload: f[0].to_owned(), set: f[1].to_owned(), type_name: f[3].to_owned() }
        })
        .collect()
}

/// The schema of `case`, or `None` when it is a corpus set and the corpus is absent.
pub fn schema(case: &Case) -> Option<protojit::Schema> {
    let path = match case.set.strip_prefix("../../../../shared/corpus/") {
        Some(rel) => corpus_dir(&case.set)?.join(rel),
        None => fixture_path(&case.set),
    };
    Some(protojit::Schema::from_descriptor_set_files(&[path]).unwrap_or_else(|e| panic!("{}: {e}", case.set)))
}

pub fn expected(case: &Case, ext: &str) -> Vec<u8> {
    fixture(&format!("expected/{}.{}.{ext}", case.payload, case.type_name))
}

/// A varint at `pos` (test inputs are well-formed).
pub fn varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0;
    for shift in (0..64).step_by(7) {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            break;
        }
    }
    v
}

/// Skips one value of wire type `wt` at `pos` (a group up to its end tag).
pub fn skip(b: &[u8], pos: &mut usize, wt: u64) {
    match wt {
        0 => {
            varint(b, pos);
        }
        1 => *pos += 8,
        2 => {
            let n = varint(b, pos) as usize;
            *pos += n;
        }
        3 => loop {
            let tag = varint(b, pos);
            if tag & 7 == 4 {
                break;
            }
            skip(b, pos, tag & 7);
        },
        5 => *pos += 4,
        _ => panic!("wire type {wt}"),
    }
}

/// The top-level records of `bytes` (tag and value).
pub fn records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let (mut pos, mut out) = (0, Vec::new());
    while pos < bytes.len() {
        let start = pos;
        let tag = varint(bytes, &mut pos);
        skip(bytes, &mut pos, tag & 7);
        out.push(bytes[start..pos].to_vec());
    }
    out
}
