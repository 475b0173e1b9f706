//! Property tests: random messages over the `everything` schemas, re-encoded in equivalent wire forms, decode to the same tree in every engine and in prost-reflect.

mod common;

use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use prost::Message as _;
use prost_reflect::{
    Cardinality, DynamicMessage, ExtensionDescriptor, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value,
};
use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema};
use protojit_arena::wire::{self, read_tag, read_varint, write_varint};
use protojit_arena::PoolFeatures;

// ---------------------------------------------------------------------------------------
// Fixture

const PROTO2_ROOT: &str = "everything.Everything";
const PROTO3_ROOT: &str = "everything3.Everything3";

/// Nesting levels below the root a generated message may have.
const DEPTH: u32 = 3;

fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas")
}

fn load_schema() -> Schema {
    let dir = schemas_dir();
    Schema::from_proto_files(&[dir.join("everything.proto"), dir.join("everything3.proto")], &[&dir])
        .expect("the test schemas compile")
}

struct Fixture {
    desc: MessageDescriptor,
    /// The schema's resolved features (which enums are closed).
    features: PoolFeatures,
    decoders: Vec<(EngineKind, Decoder)>,
}

fn fixture(root: &str) -> Fixture {
    let schema = load_schema();
    let desc = schema.pool().get_message_by_name(root).expect("root type exists");
    let decoders: Vec<(EngineKind, Decoder)> = common::ENGINES
        .iter()
        .map(|&engine| {
            (engine, schema.decoder_with_options(root, &EngineOptions::default().with_kind(engine)).unwrap())
        })
        .collect();
    for (engine, decoder) in &decoders {
        // A silent fallback to the interpreter would leave the JIT untested.
        if *engine == EngineKind::Jit && cfg!(target_arch = "x86_64") {
            let stats = decoder.stats();
            assert_eq!(stats.interpreted(), 0, "{root}: types not compiled: {:?}", stats.types);
        }
    }
    Fixture { desc, features: schema.layouts().features().clone(), decoders }
}

/// Cases per property; `PROPTEST_CASES` overrides.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Runs `property` on random messages of `root` (with a random seed for the property's own
/// choices) and panics with the minimal failing case.
fn run_property(
    root: &str,
    default_cases: u32,
    property: impl Fn(&Fixture, &DynamicMessage, u64) -> Result<(), TestCaseError>,
) {
    let fx = fixture(root);
    let strategy = (MessageGen::new(fx.features.clone()).message(&fx.desc, DEPTH), any::<u64>());
    let config = Config { cases: cases(default_cases), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |(msg, seed)| property(&fx, &msg, seed));
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, (msg, seed))) => {
            // (DynamicMessage's Debug recurses forever through recursive descriptors.)
            let bytes = msg.encode_to_vec();
            let arena = Arena::new();
            let text = match fx.decoders[0].1.decode(&bytes, &arena) {
                Ok(m) => m.to_text_format(),
                Err(e) => format!("(undecodable: {e})"),
            };
            panic!(
                "{root}: {reason}\nminimal failing input (seed {seed}), as encoded by prost-reflect: {}\n{text}",
                hex(&bytes)
            )
        }
        Err(e) => panic!("{root}: {e}"),
    }
}

// ---------------------------------------------------------------------------------------
// Strategies: random DynamicMessages over a descriptor

/// Where a generated value goes.
#[derive(Clone, Debug)]
enum Target {
    Field(FieldDescriptor),
    Extension(ExtensionDescriptor),
}

type Entry = Option<(Target, Value)>;

/// Builds message strategies, one per (type, remaining depth), shared between fields.
struct MessageGen {
    cache: HashMap<(String, u32), BoxedStrategy<DynamicMessage>>,
    features: PoolFeatures,
}

impl MessageGen {
    fn new(features: PoolFeatures) -> MessageGen {
        MessageGen { cache: HashMap::new(), features }
    }

    /// Random messages of `desc` nesting at most `depth` levels further down.
    fn message(&mut self, desc: &MessageDescriptor, depth: u32) -> BoxedStrategy<DynamicMessage> {
        let key = (desc.full_name().to_owned(), depth);
        if let Some(s) = self.cache.get(&key) {
            return s.clone();
        }
        let mut parts: Vec<BoxedStrategy<Entry>> = Vec::new();
        for field in desc.fields() {
            if field.containing_oneof().is_some_and(|o| !o.is_synthetic()) {
                continue;
            }
            let Some(values) = self.field_values(&field.kind(), field.is_list(), field.is_map(), depth) else {
                if field.cardinality() == Cardinality::Required {
                    panic!("required field {} cannot be generated at depth 0", field.full_name());
                }
                continue;
            };
            let target = Target::Field(field.clone());
            if field.cardinality() == Cardinality::Required {
                parts.push(values.prop_map(move |v| Some((target.clone(), v))).boxed());
            } else {
                let p = if matches!(field.kind(), Kind::Message(_)) { 0.25 } else { 0.35 };
                parts.push(prop::option::weighted(p, values).prop_map(move |v| v.map(|v| (target.clone(), v))).boxed());
            }
        }
        for oneof in desc.oneofs().filter(|o| !o.is_synthetic()) {
            // None or exactly one member, each equally likely.
            let mut members: Vec<(u32, BoxedStrategy<Entry>)> = vec![(2, Just(None).boxed())];
            for field in oneof.fields() {
                if let Some(values) = self.field_values(&field.kind(), false, false, depth) {
                    let target = Target::Field(field.clone());
                    members.push((1, values.prop_map(move |v| Some((target.clone(), v))).boxed()));
                }
            }
            parts.push(Union::new_weighted(members).boxed());
        }
        for ext in desc.extensions() {
            let Some(values) = self.field_values(&ext.kind(), ext.is_list(), ext.is_map(), depth) else { continue };
            let target = Target::Extension(ext.clone());
            parts.push(prop::option::weighted(0.3, values).prop_map(move |v| v.map(|v| (target.clone(), v))).boxed());
        }
        let desc = desc.clone();
        let strategy = parts
            .prop_map(move |entries| {
                let mut msg = DynamicMessage::new(desc.clone());
                for (target, value) in entries.into_iter().flatten() {
                    match target {
                        Target::Field(f) => msg.set_field(&f, value),
                        Target::Extension(e) => msg.set_extension(&e, value),
                    }
                }
                msg
            })
            .boxed();
        self.cache.insert(key, strategy.clone());
        strategy
    }

    /// Values of a field (a list or map as a whole); `None` for messages at depth 0.
    fn field_values(&mut self, kind: &Kind, list: bool, map: bool, depth: u32) -> Option<BoxedStrategy<Value>> {
        if map {
            let Kind::Message(entry) = kind else { unreachable!("map fields are entry messages") };
            let keys = scalar_values(&entry.map_entry_key_field().kind(), &self.features).prop_map(to_map_key);
            // prost-reflect's encoder omits a map value equal to the default by `==`, so a
            // -0.0 value would not survive its encoding: generate +0.0 there instead.
            let values =
                self.field_values(&entry.map_entry_value_field().kind(), false, false, depth)?.prop_map(|v| match v {
                    Value::F32(x) => Value::F32(if x == 0.0 { 0.0 } else { x }),
                    Value::F64(x) => Value::F64(if x == 0.0 { 0.0 } else { x }),
                    v => v,
                });
            return Some(
                prop::collection::vec((keys, values), 0..4)
                    .prop_map(|entries| Value::Map(entries.into_iter().collect()))
                    .boxed(),
            );
        }
        let one = match kind {
            Kind::Message(m) => {
                if depth == 0 {
                    return None;
                }
                self.message(m, depth - 1).prop_map(Value::Message).boxed()
            }
            k => scalar_values(k, &self.features),
        };
        if list {
            let max = if matches!(kind, Kind::Message(_)) { 3 } else { 5 };
            Some(prop::collection::vec(one, 0..max).prop_map(Value::List).boxed())
        } else {
            Some(one)
        }
    }
}

fn to_map_key(v: Value) -> MapKey {
    match v {
        Value::Bool(v) => MapKey::Bool(v),
        Value::I32(v) => MapKey::I32(v),
        Value::I64(v) => MapKey::I64(v),
        Value::U32(v) => MapKey::U32(v),
        Value::U64(v) => MapKey::U64(v),
        Value::String(v) => MapKey::String(v),
        other => unreachable!("not a map key: {other:?}"),
    }
}

/// Values of one scalar kind (`features`: whether an enum is closed): edge cases (negative
/// ints, NaN, -0.0, infinities, non-ASCII text) well represented.
fn scalar_values(kind: &Kind, features: &PoolFeatures) -> BoxedStrategy<Value> {
    match kind {
        Kind::Double => prop_oneof![
            3 => any::<f64>(),
            1 => prop::sample::select(vec![f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, -1.5]),
        ]
        .prop_map(Value::F64)
        .boxed(),
        Kind::Float => prop_oneof![
            3 => any::<f32>(),
            1 => prop::sample::select(vec![f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -1.5]),
        ]
        .prop_map(Value::F32)
        .boxed(),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => prop_oneof![
            any::<i32>(),
            -200..200i32,
            prop::sample::select(vec![i32::MIN, i32::MAX, -1, 0]),
        ]
        .prop_map(Value::I32)
        .boxed(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => prop_oneof![
            any::<i64>(),
            -200..200i64,
            prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0]),
        ]
        .prop_map(Value::I64)
        .boxed(),
        Kind::Uint32 | Kind::Fixed32 => prop_oneof![any::<u32>(), 0..300u32, Just(u32::MAX)].prop_map(Value::U32).boxed(),
        Kind::Uint64 | Kind::Fixed64 => prop_oneof![any::<u64>(), 0..300u64, Just(u64::MAX)].prop_map(Value::U64).boxed(),
        Kind::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Kind::String => prop_oneof![
            "[a-z]{0,6}",
            "\\PC{0,6}",
            prop::sample::select(vec!["é", "日本語", "😀x", "\u{0}", "a\u{10FFFF}"]).prop_map(str::to_owned),
        ]
        .prop_map(Value::String)
        .boxed(),
        Kind::Bytes => prop::collection::vec(any::<u8>(), 0..8).prop_map(|b| Value::Bytes(b.into())).boxed(),
        Kind::Enum(e) => {
            let declared: Vec<i32> = e.values().map(|v| v.number()).collect();
            if features.is_closed(e) {
                // Closed enum: protojit keeps undeclared values as unknown fields, which
                // prost-reflect (open enums only) does not, so generate declared ones only.
                prop::sample::select(declared).prop_map(Value::EnumNumber).boxed()
            } else {
                prop_oneof![prop::sample::select(declared), any::<i32>(), -5..5i32].prop_map(Value::EnumNumber).boxed()
            }
        }
        Kind::Message(_) => unreachable!("messages are not scalars"),
    }
}

// ---------------------------------------------------------------------------------------
// Wire records

/// One field record of an encoding: `buf[start..end]`, the value starting at `value`
/// (for groups, `end` is after the end-group tag).
#[derive(Clone, Copy, Debug)]
struct Record {
    number: u32,
    wire_type: u8,
    start: usize,
    value: usize,
    end: usize,
}

impl Record {
    /// The bytes of the record.
    fn bytes<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.start..self.end]
    }
    /// The contents of a LEN record (after the length prefix) or of a group (between the tags).
    fn contents<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        match self.wire_type {
            wire::LEN => {
                let (len, start) = read_varint(buf, self.value).unwrap();
                &buf[start..start + len as usize]
            }
            wire::SGROUP => &buf[self.value..self.end - wire::varint_len(tag(self.number, wire::EGROUP))],
            _ => panic!("record of wire type {} has no contents", self.wire_type),
        }
    }
}

fn tag(number: u32, wire_type: u8) -> u64 {
    ((number as u64) << 3) | wire_type as u64
}

fn write_tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    write_varint(out, tag(number, wire_type));
}

fn write_len(out: &mut Vec<u8>, number: u32, contents: &[u8]) {
    write_tag(out, number, wire::LEN);
    write_varint(out, contents.len() as u64);
    out.extend_from_slice(contents);
}

fn write_group(out: &mut Vec<u8>, number: u32, contents: &[u8]) {
    write_tag(out, number, wire::SGROUP);
    out.extend_from_slice(contents);
    write_tag(out, number, wire::EGROUP);
}

/// The field records of a well-formed encoding, in order.
fn records(buf: &[u8]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let (number, wire_type, value) = read_tag(buf, pos).unwrap();
        let end = common::value_end(buf, value, number, wire_type);
        out.push(Record { number, wire_type, start: pos, value, end });
        pos = end;
    }
    out
}

/// What the schema says about field `number` of `desc` (a field or an extension).
struct FieldInfo {
    kind: Kind,
    list: bool,
    map: bool,
    /// Records that must keep their relative order share a key: the oneof, else the number.
    order_key: String,
}

fn field_info(desc: &MessageDescriptor, number: u32) -> Option<FieldInfo> {
    if let Some(f) = desc.get_field(number) {
        let order_key = match f.containing_oneof() {
            Some(o) if !o.is_synthetic() => format!("oneof {}", o.name()),
            _ => format!("field {number}"),
        };
        return Some(FieldInfo { kind: f.kind(), list: f.is_list(), map: f.is_map(), order_key });
    }
    desc.get_extension(number).map(|e| FieldInfo {
        kind: e.kind(),
        list: e.is_list(),
        map: e.is_map(),
        order_key: format!("field {number}"),
    })
}

fn packable(kind: &Kind) -> bool {
    !matches!(kind, Kind::String | Kind::Bytes | Kind::Message(_))
}

/// The wire type of one unpacked value of a packable kind.
fn scalar_wire_type(kind: &Kind) -> u8 {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => wire::FIXED64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => wire::FIXED32,
        _ => wire::VARINT,
    }
}

/// (b) The top-level records in a random order that keeps the relative order of records
/// of the same field (and of the same oneof).
fn shuffle_records(desc: &MessageDescriptor, buf: &[u8], seed: u64) -> Vec<u8> {
    let recs = records(buf);
    let keys: Vec<String> = recs
        .iter()
        .map(|r| field_info(desc, r.number).map_or_else(|| format!("field {}", r.number), |f| f.order_key))
        .collect();
    let mut queues: HashMap<&str, std::collections::VecDeque<&Record>> = HashMap::new();
    for (r, k) in recs.iter().zip(&keys) {
        queues.entry(k.as_str()).or_default().push_back(r);
    }
    // A random permutation of the keys' multiset, filled with each key's records in order.
    let mut order: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut rng = common::Rng(seed);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.index(i + 1));
    }
    let mut out = Vec::with_capacity(buf.len());
    for k in order {
        let r = queues.get_mut(k).unwrap().pop_front().unwrap();
        out.extend_from_slice(r.bytes(buf));
    }
    out
}

/// (c) Every repeated scalar in the other form, at every nesting level: packed runs
/// become one record per element, runs of unpacked records become one packed record.
/// Counts the records converted in `changed`.
fn flip_packing(desc: &MessageDescriptor, buf: &[u8], changed: &mut usize) -> Vec<u8> {
    let recs = records(buf);
    let mut out = Vec::with_capacity(buf.len() + 16);
    let mut i = 0;
    while i < recs.len() {
        let r = recs[i];
        let info = field_info(desc, r.number);
        match info {
            Some(FieldInfo { kind, list: true, .. }) if packable(&kind) && r.wire_type == wire::LEN => {
                let wt = scalar_wire_type(&kind);
                let data = r.contents(buf);
                let mut p = 0;
                while p < data.len() {
                    let next = common::value_end(data, p, r.number, wt);
                    write_tag(&mut out, r.number, wt);
                    out.extend_from_slice(&data[p..next]);
                    p = next;
                }
                *changed += 1;
                i += 1;
            }
            Some(FieldInfo { kind, list: true, .. }) if packable(&kind) => {
                let mut data = Vec::new();
                while i < recs.len() && recs[i].number == r.number && recs[i].wire_type != wire::LEN {
                    data.extend_from_slice(&buf[recs[i].value..recs[i].end]);
                    i += 1;
                }
                write_len(&mut out, r.number, &data);
                *changed += 1;
            }
            Some(FieldInfo { kind: Kind::Message(m), .. }) if r.wire_type == wire::LEN => {
                let inner = flip_packing(&m, r.contents(buf), changed);
                write_len(&mut out, r.number, &inner);
                i += 1;
            }
            Some(FieldInfo { kind: Kind::Message(m), .. }) if r.wire_type == wire::SGROUP => {
                let inner = flip_packing(&m, r.contents(buf), changed);
                write_group(&mut out, r.number, &inner);
                i += 1;
            }
            _ => {
                out.extend_from_slice(r.bytes(buf));
                i += 1;
            }
        }
    }
    out
}

/// (d) Every top-level singular message (or group) field split into two records: its
/// first records in the first, the rest in a second record with the same tag placed at
/// the end of the message. Returns the bytes and how many fields were split.
fn split_messages(desc: &MessageDescriptor, buf: &[u8], seed: u64) -> (Vec<u8>, usize) {
    let mut rng = common::Rng(seed);
    let mut out = Vec::with_capacity(buf.len() + 16);
    let mut tail = Vec::new();
    let mut split = 0;
    for r in records(buf) {
        let singular_message = matches!(
            field_info(desc, r.number),
            Some(FieldInfo { kind: Kind::Message(_), list: false, map: false, .. })
        );
        if !singular_message || !matches!(r.wire_type, wire::LEN | wire::SGROUP) {
            out.extend_from_slice(r.bytes(buf));
            continue;
        }
        let contents = r.contents(buf);
        let inner = records(contents);
        let k = rng.index(inner.len() + 1);
        let cut = inner.get(k).map_or(contents.len(), |x| x.start);
        let (first, second) = contents.split_at(cut);
        if r.wire_type == wire::LEN {
            write_len(&mut out, r.number, first);
            write_len(&mut tail, r.number, second);
        } else {
            write_group(&mut out, r.number, first);
            write_group(&mut tail, r.number, second);
        }
        split += 1;
    }
    out.extend_from_slice(&tail);
    (out, split)
}

// ---------------------------------------------------------------------------------------
// Checks

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// `bytes` decodes, in every engine and in prost-reflect, to a tree equal to `expected`.
fn check_decodes_to(fx: &Fixture, bytes: &[u8], expected: &DynamicMessage, what: &str) -> Result<(), TestCaseError> {
    let reference = DynamicMessage::decode(fx.desc.clone(), bytes)
        .map_err(|e| TestCaseError::fail(format!("{what}: prost-reflect rejects the bytes ({e}): {}", hex(bytes))))?;
    if let Some(path) = common::dyn_diff(&reference, expected) {
        return Err(TestCaseError::fail(format!(
            "{what}: prost-reflect's decoding differs from the original at {path} (test helper bug?); bytes {}",
            hex(bytes)
        )));
    }
    for (engine, decoder) in &fx.decoders {
        let arena = Arena::new();
        let msg = decoder
            .decode(bytes, &arena)
            .map_err(|e| TestCaseError::fail(format!("{what} ({engine:?}): {e}; bytes {}", hex(bytes))))?;
        let lost = msg.to_dynamic_lossy_count();
        prop_assert_eq!(lost, 0, "{} ({:?}): unknown fields dropped", what, engine);
        // fields(), the visitor, handles and slices read the same values.
        common::read_api::check_readers_agree(&msg, &format!("{what} ({engine:?})"));
        let got = msg.to_dynamic();
        if let Some(path) = common::dyn_diff(&got, expected) {
            return Err(TestCaseError::fail(format!(
                "{what} ({engine:?}): differs from the original at {path}; bytes {}",
                hex(bytes)
            )));
        }
        if let Some(path) = common::dyn_diff(&got, &reference) {
            return Err(TestCaseError::fail(format!(
                "{what} ({engine:?}): differs from prost-reflect at {path}; bytes {}",
                hex(bytes)
            )));
        }
    }
    Ok(())
}

// (a) prost-reflect's encoding decodes to the original message.

fn roundtrip(root: &str) {
    run_property(root, 256, |fx, msg, _| check_decodes_to(fx, &msg.encode_to_vec(), msg, "prost-reflect encoding"));
}

#[test]
fn proto2_roundtrip() {
    roundtrip(PROTO2_ROOT);
}

#[test]
fn proto3_roundtrip() {
    roundtrip(PROTO3_ROOT);
}

// (b) Top-level fields in any order (same-field order kept) decode to the same tree.

fn shuffled(root: &str) {
    let reordered = Cell::new(0usize);
    run_property(root, 192, |fx, msg, seed| {
        let bytes = msg.encode_to_vec();
        let shuffled = shuffle_records(&fx.desc, &bytes, seed);
        prop_assert_eq!(shuffled.len(), bytes.len());
        reordered.set(reordered.get() + (shuffled != bytes) as usize);
        check_decodes_to(fx, &shuffled, msg, "shuffled fields")
    });
    assert!(reordered.get() > 0, "no case reordered any field: the property tested nothing");
}

#[test]
fn proto2_shuffled_fields() {
    shuffled(PROTO2_ROOT);
}

#[test]
fn proto3_shuffled_fields() {
    shuffled(PROTO3_ROOT);
}

// (c) Repeated scalars packed <-> unpacked decode to the same tree.

fn repacked(root: &str) {
    let flipped = Cell::new(0usize);
    run_property(root, 192, |fx, msg, _| {
        let bytes = msg.encode_to_vec();
        let mut changed = 0;
        let flipped_bytes = flip_packing(&fx.desc, &bytes, &mut changed);
        flipped.set(flipped.get() + changed);
        check_decodes_to(fx, &flipped_bytes, msg, "packing flipped")?;
        // And back again: the original form of every field.
        let mut again = 0;
        let back = flip_packing(&fx.desc, &flipped_bytes, &mut again);
        prop_assert_eq!(again, changed);
        check_decodes_to(fx, &back, msg, "packing flipped twice")
    });
    assert!(flipped.get() > 0, "no case had a repeated scalar: the property tested nothing");
}

#[test]
fn proto2_packed_unpacked() {
    repacked(PROTO2_ROOT);
}

#[test]
fn proto3_packed_unpacked() {
    repacked(PROTO3_ROOT);
}

// (d) A singular message field in two records merges to the same tree.

fn split(root: &str) {
    let splits = Cell::new(0usize);
    run_property(root, 192, |fx, msg, seed| {
        let bytes = msg.encode_to_vec();
        let (split_bytes, n) = split_messages(&fx.desc, &bytes, seed);
        splits.set(splits.get() + n);
        check_decodes_to(fx, &split_bytes, msg, "message fields split in two")
    });
    assert!(splits.get() > 0, "no case had a singular message field: the property tested nothing");
}

#[test]
fn proto2_split_message_merges() {
    split(PROTO2_ROOT);
}

#[test]
fn proto3_split_message_merges() {
    split(PROTO3_ROOT);
}

// The helpers themselves: each transformation really changes the bytes it should.

#[test]
fn wire_helpers_transform_as_intended() {
    let schema = load_schema();
    let desc = schema.pool().get_message_by_name(PROTO3_ROOT).unwrap();
    // r_int32 = [1, 300] packed (field 43), f_child { id: 7 } (field 17), f_int32 = 5 (field 3).
    let bytes = [0xda, 0x02, 0x03, 0x01, 0xac, 0x02, 0x8a, 0x01, 0x02, 0x08, 0x07, 0x18, 0x05];
    let mut changed = 0;
    let flipped = flip_packing(&desc, &bytes, &mut changed);
    assert_eq!(changed, 1);
    assert_eq!(hex(&flipped), "d8 02 01 d8 02 ac 02 8a 01 02 08 07 18 05");
    let (split, n) = split_messages(&desc, &bytes, 0);
    assert_eq!(n, 1);
    assert_eq!(split.len(), bytes.len() + 3, "{}", hex(&split));
    let mut any_moved = false;
    for seed in 0..16 {
        let s = shuffle_records(&desc, &bytes, seed);
        assert_eq!(records(&s).len(), 3);
        any_moved |= s != bytes;
    }
    assert!(any_moved);
}
