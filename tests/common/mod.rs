//! Shared test support: finding the shared corpus, the engines under test, and a deep
//! equality for `DynamicMessage` that treats "absent" and "default" alike where protobuf does.
#![allow(dead_code)]

use std::path::PathBuf;

use std::cell::RefCell;

use prost_reflect::{DynamicMessage, EnumDescriptor, Kind, MapKey, ReflectMessage, Value};
use protojit::EngineKind;
use protojit_arena::{DeclaredFeatures, PoolFeatures};

mod payloads;
pub mod read_api;

/// Every engine a differential test must run against.
pub const ENGINES: [EngineKind; 2] = [EngineKind::Interpreter, EngineKind::Jit];

/// The shared corpus (`../shared/corpus` beside the repository), if present; when absent,
/// the calling test fails under `CI=true` and is skipped (saying so) otherwise. See
/// [`protojit_corpus::require_shared_corpus`].
pub fn corpus_dir(test: &str) -> Option<PathBuf> {
    protojit_corpus::require_shared_corpus(test)
}

#[allow(unused_imports)]
pub use payloads::PAYLOADS;

/// A count a slow run (valgrind) sets in the environment to shorten a test: `None` when
/// `name` is unset; a value that is not a count fails the test rather than being ignored.
pub fn env_count(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    Some(v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a count")))
}

/// Whether a corpus-walking test walks this payload: every payload, unless
/// `PROTOJIT_CORPUS_MAX_BYTES` caps their size (the valgrind subset sets it, where the large
/// OSM blocks and tiles would take minutes each); a payload left out is named on stderr.
pub fn within_corpus_cap(test: &str, file: &str, bytes: &[u8]) -> bool {
    match env_count("PROTOJIT_CORPUS_MAX_BYTES") {
        Some(cap) if bytes.len() > cap => {
            eprintln!("{test}: {file} ({} bytes) left out: PROTOJIT_CORPUS_MAX_BYTES={cap}", bytes.len());
            false
        }
        _ => true,
    }
}

/// The schema for a corpus `.proto` file. `descriptor.proto` (2026 syntax that protox
/// 0.10 rejects) is read from the descriptor set it describes, so tests do not need protoc.
pub fn corpus_schema(dir: &std::path::Path, proto: &str) -> protojit::Schema {
    if proto == "descriptor.proto" {
        let bytes = std::fs::read(dir.join("descriptor.fds.bin")).unwrap();
        return protojit::Schema::from_descriptor_set(&bytes).unwrap();
    }
    protojit::Schema::from_proto_files(&[dir.join(proto)], &[dir]).unwrap()
}

/// Deep equality of two messages as protobuf defines it: a field without presence that
/// holds its default equals an absent one; floats compare by bits (NaN equals NaN); maps
/// compare as maps; unknown fields compare in order. Returns the path of the first
/// difference.
pub fn dyn_diff(a: &DynamicMessage, b: &DynamicMessage) -> Option<String> {
    diff_message(a, b, &mut String::from(a.descriptor().full_name()))
}

/// Panics with the path of the first difference.
#[track_caller]
pub fn assert_dyn_eq(a: &DynamicMessage, b: &DynamicMessage) {
    if let Some(path) = dyn_diff(a, b) {
        panic!("messages differ at {path}");
    }
}

fn diff_message(a: &DynamicMessage, b: &DynamicMessage, path: &mut String) -> Option<String> {
    if a.descriptor() != b.descriptor() {
        return Some(format!("{path}: types {} vs {}", a.descriptor().full_name(), b.descriptor().full_name()));
    }
    for field in a.descriptor().fields() {
        let (ha, hb) = (a.has_field(&field), b.has_field(&field));
        let len = path.len();
        path.push('.');
        path.push_str(field.name());
        if ha != hb {
            return Some(format!("{path}: present {ha} vs {hb}"));
        }
        if ha {
            if let Some(d) = diff_value(&a.get_field(&field), &b.get_field(&field), &field.kind(), path) {
                return Some(d);
            }
        }
        path.truncate(len);
    }
    let ea: Vec<_> = a.extensions().collect();
    let eb: Vec<_> = b.extensions().collect();
    if ea.len() != eb.len() {
        return Some(format!("{path}: {} vs {} extensions", ea.len(), eb.len()));
    }
    for ((da, va), (db, vb)) in ea.iter().zip(&eb) {
        if da.full_name() != db.full_name() {
            return Some(format!("{path}: extension {} vs {}", da.full_name(), db.full_name()));
        }
        if let Some(d) = diff_value(va, vb, &da.kind(), &mut format!("{path}.[{}]", da.full_name())) {
            return Some(d);
        }
    }
    let ua: Vec<_> = a.unknown_fields().collect();
    let ub: Vec<_> = b.unknown_fields().collect();
    if ua != ub {
        return Some(format!("{path}: unknown fields {ua:?} vs {ub:?}"));
    }
    None
}

fn diff_value(a: &Value, b: &Value, kind: &Kind, path: &mut String) -> Option<String> {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) => None,
        (Value::F64(x), Value::F64(y)) if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) => None,
        (Value::F32(_), Value::F32(_)) | (Value::F64(_), Value::F64(_)) => Some(format!("{path}: {a:?} vs {b:?}")),
        (Value::Message(x), Value::Message(y)) => diff_message(x, y, path),
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} vs {} elements", x.len(), y.len()));
            }
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                if let Some(d) = diff_value(u, v, kind, path) {
                    return Some(d);
                }
                path.truncate(len);
            }
            None
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} vs {} map entries", x.len(), y.len()));
            }
            let value_kind = match kind {
                Kind::Message(m) => m.map_entry_value_field().kind(),
                _ => kind.clone(),
            };
            let mut keys: Vec<&MapKey> = x.keys().collect();
            keys.sort();
            for k in keys {
                let len = path.len();
                path.push_str(&format!("[{k:?}]"));
                match y.get(k) {
                    None => return Some(format!("{path}: key missing on the right")),
                    Some(v) => {
                        if let Some(d) = diff_value(&x[k], v, &value_kind, path) {
                            return Some(d);
                        }
                    }
                }
                path.truncate(len);
            }
            None
        }
        _ if a == b => None,
        _ => Some(format!("{path}: {a:?} vs {b:?}")),
    }
}

// ---------------------------------------------------------------------------------------
// Reflection tests (JSON, re-encoding, paths): a schema with the well-known types, and a
// seeded generator of random messages over any descriptor.

/// The `everything` schemas (proto2 with extensions, proto3) and `reflect_wkt.proto` (the
/// well-known types), in one pool, so that an `Any` can name any of their types.
pub fn reflect_schema() -> protojit::Schema {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas");
    protojit::Schema::from_proto_files(
        &[dir.join("everything.proto"), dir.join("everything3.proto"), dir.join("reflect_wkt.proto")],
        &[&dir],
    )
    .expect("the reflection test schemas compile")
}

/// The root types of [`reflect_schema`] the reflection tests generate messages of.
pub const REFLECT_ROOTS: [&str; 3] = ["everything.Everything", "everything3.Everything3", "reflectwkt.Wkt"];

/// A small deterministic random generator (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number below `n` (> 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// An index below `n` (> 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

thread_local! {
    /// The resolved features of the pool random messages are being made for.
    static FEATURES: RefCell<Option<PoolFeatures>> = const { RefCell::new(None) };
}

/// Whether enum `e` is closed, by the resolved features of its pool: those given to
/// [`random_message_with`], else its files' as proto2 and proto3 define them (a pool the
/// editions loader lowered needs the former: its files read as proto2 otherwise).
fn is_closed(e: &EnumDescriptor) -> bool {
    FEATURES.with(|cell| {
        let mut features = cell.borrow_mut();
        if features.as_ref().is_none_or(|f| f.pool() != e.parent_pool()) {
            let resolved = PoolFeatures::new(e.parent_pool(), &DeclaredFeatures::default());
            *features = Some(resolved.unwrap_or_else(|err| panic!("{}: {err}", e.full_name())));
        }
        features.as_ref().is_some_and(|f| f.is_closed(e))
    })
}

/// [`random_message`] over a schema's own resolved features (`schema.layouts().features()`),
/// which an editions schema needs.
pub fn random_message_with(
    features: &PoolFeatures,
    desc: &prost_reflect::MessageDescriptor,
    depth: u32,
    rng: &mut Rng,
) -> DynamicMessage {
    FEATURES.with(|cell| *cell.borrow_mut() = Some(features.clone()));
    random_message(desc, depth, rng)
}

/// A random message of `desc`: each field set with some probability (oneofs with at most
/// one member, extensions too), nesting at most `depth` more levels; well-known types get
/// values of their own shape, now and then out of range or otherwise without a JSON form
/// (so that error cases are exercised too). Closed enums get declared values only
/// (prost-reflect, the oracle, has open enums only).
pub fn random_message(desc: &prost_reflect::MessageDescriptor, depth: u32, rng: &mut Rng) -> DynamicMessage {
    let mut msg = DynamicMessage::new(desc.clone());
    if let Some(wkt) = desc.full_name().strip_prefix("google.protobuf.") {
        if random_well_known(wkt, &mut msg, depth, rng) {
            return msg;
        }
    }
    let mut oneofs_done: Vec<String> = Vec::new();
    for field in desc.fields() {
        if let Some(o) = field.containing_oneof().filter(|o| !o.is_synthetic()) {
            if oneofs_done.contains(&o.name().to_owned()) {
                continue;
            }
            oneofs_done.push(o.name().to_owned());
            let members: Vec<_> = o.fields().collect();
            let pick = rng.below(members.len() as u64 + 2) as usize;
            if let Some(f) = members.get(pick) {
                if let Some(v) = random_value(&f.kind(), depth, rng) {
                    msg.set_field(f, v);
                }
            }
            continue;
        }
        let required = field.cardinality() == prost_reflect::Cardinality::Required;
        if !required && !rng.one_in(3) {
            continue;
        }
        if let Some(v) = random_field(&field.kind(), field.is_list(), field.is_map(), depth, rng) {
            msg.set_field(&field, v);
        }
    }
    for ext in desc.extensions() {
        if rng.one_in(3) {
            if let Some(v) = random_field(&ext.kind(), ext.is_list(), ext.is_map(), depth, rng) {
                msg.set_extension(&ext, v);
            }
        }
    }
    msg
}

fn random_field(kind: &Kind, list: bool, map: bool, depth: u32, rng: &mut Rng) -> Option<Value> {
    if map {
        let Kind::Message(entry) = kind else { unreachable!("map fields are entry messages") };
        let mut out = std::collections::HashMap::new();
        for _ in 0..rng.below(4) {
            let key = match random_value(&entry.map_entry_key_field().kind(), 0, rng)? {
                Value::Bool(v) => MapKey::Bool(v),
                Value::I32(v) => MapKey::I32(v),
                Value::I64(v) => MapKey::I64(v),
                Value::U32(v) => MapKey::U32(v),
                Value::U64(v) => MapKey::U64(v),
                Value::String(v) => MapKey::String(v),
                other => unreachable!("not a map key: {other:?}"),
            };
            out.insert(key, random_value(&entry.map_entry_value_field().kind(), depth, rng)?);
        }
        return Some(Value::Map(out));
    }
    if list {
        let n = rng.below(if matches!(kind, Kind::Message(_)) { 3 } else { 5 });
        return (0..n).map(|_| random_value(kind, depth, rng)).collect::<Option<Vec<_>>>().map(Value::List);
    }
    random_value(kind, depth, rng)
}

fn random_value(kind: &Kind, depth: u32, rng: &mut Rng) -> Option<Value> {
    Some(match kind {
        Kind::Double => Value::F64(match rng.below(6) {
            0 => *rng.pick(&[f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, 1e300]),
            1 => f64::from_bits(rng.next()),
            _ => (rng.below(2000) as f64 - 1000.0) / 8.0,
        }),
        Kind::Float => Value::F32(match rng.below(6) {
            0 => *rng.pick(&[f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, 0.1]),
            1 => f32::from_bits(rng.next() as u32),
            _ => (rng.below(2000) as f32 - 1000.0) / 8.0,
        }),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(match rng.below(3) {
            0 => rng.next() as i32,
            1 => *rng.pick(&[i32::MIN, i32::MAX, -1, 0]),
            _ => rng.below(400) as i32 - 200,
        }),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(match rng.below(3) {
            0 => rng.next() as i64,
            1 => *rng.pick(&[i64::MIN, i64::MAX, -1, 0]),
            _ => rng.below(400) as i64 - 200,
        }),
        Kind::Uint32 | Kind::Fixed32 => {
            Value::U32(if rng.one_in(2) { rng.next() as u32 } else { rng.below(300) as u32 })
        }
        Kind::Uint64 | Kind::Fixed64 => Value::U64(if rng.one_in(2) { rng.next() } else { rng.below(300) }),
        Kind::Bool => Value::Bool(rng.one_in(2)),
        Kind::String => Value::String(
            rng.pick(&[
                "",
                "a",
                "hello",
                "snake_case",
                "é",
                "日本語",
                "😀x",
                "\u{0}",
                "q\"uo\\te",
                "a\u{10FFFF}",
                "line\nbreak",
                // Longer than 12 bytes: not inline in an Arrow string view.
                "a string of more than twelve bytes",
            ])
            .to_string(),
        ),
        Kind::Bytes => {
            let len = if rng.one_in(4) { 13 + rng.below(20) } else { rng.below(8) };
            Value::Bytes((0..len).map(|_| rng.next() as u8).collect::<Vec<u8>>().into())
        }
        Kind::Enum(e) => {
            let declared: Vec<i32> = e.values().map(|v| v.number()).collect();
            if is_closed(e) || !rng.one_in(4) {
                Value::EnumNumber(*rng.pick(&declared))
            } else {
                Value::EnumNumber(rng.next() as i32 % 5)
            }
        }
        Kind::Message(m) => {
            if depth == 0 {
                return None;
            }
            Value::Message(random_message(m, depth - 1, rng))
        }
    })
}

/// Fills a well-known type; `false` for types without a special form (generated as plain
/// messages).
fn random_well_known(name: &str, msg: &mut DynamicMessage, depth: u32, rng: &mut Rng) -> bool {
    let desc = msg.descriptor();
    let pool = desc.parent_pool().clone();
    match name {
        "Timestamp" | "Duration" => {
            let seconds: i64 = match rng.below(8) {
                0 => rng.next() as i64,
                1 => *rng.pick(&[-62_135_596_800, 253_402_300_799, 315_576_000_000, -315_576_000_000, 0]),
                _ => rng.below(4_000_000_000) as i64 - if name == "Duration" { 2_000_000_000 } else { 0 },
            };
            let nanos: i32 = match rng.below(6) {
                0 => 0,
                1 => rng.next() as i32,
                2 => *rng.pick(&[1_000_000, 10_000, 5, 999_999_999]),
                _ => rng.below(1_000_000_000) as i32,
            };
            let nanos = if name == "Duration" && seconds < 0 && nanos > 0 && !rng.one_in(5) { -nanos } else { nanos };
            if seconds != 0 || rng.one_in(2) {
                msg.set_field_by_number(1, Value::I64(seconds));
            }
            if nanos != 0 {
                msg.set_field_by_number(2, Value::I32(nanos));
            }
        }
        "FieldMask" => {
            let paths = ["foo_bar", "a.b_c.d", "x", "fooBar", "foo__bar", "with_3"];
            let n = rng.below(4);
            let bad = rng.one_in(4);
            let list: Vec<Value> = (0..n)
                .map(|_| Value::String(rng.pick(if bad { &paths[..] } else { &paths[..3] }).to_string()))
                .collect();
            msg.set_field_by_number(1, Value::List(list));
        }
        "Struct" => {
            let mut fields = std::collections::HashMap::new();
            if depth > 0 {
                let value = pool.get_message_by_name("google.protobuf.Value").unwrap();
                for _ in 0..rng.below(4) {
                    let key = rng.pick(&["a", "b", "zeta", "", "é", "A"]).to_string();
                    fields.insert(MapKey::String(key), Value::Message(random_message(&value, depth - 1, rng)));
                }
            }
            msg.set_field_by_number(1, Value::Map(fields));
        }
        "ListValue" => {
            if depth > 0 {
                let value = pool.get_message_by_name("google.protobuf.Value").unwrap();
                let list = (0..rng.below(4)).map(|_| Value::Message(random_message(&value, depth - 1, rng))).collect();
                msg.set_field_by_number(1, Value::List(list));
            }
        }
        "Value" => {
            let choice = if depth == 0 { rng.below(5) } else { rng.below(7) };
            match choice {
                0 => {}
                1 => msg.set_field_by_number(1, Value::EnumNumber(0)),
                2 => {
                    let x = if rng.one_in(8) { f64::NAN } else { (rng.below(1000) as f64 - 500.0) / 4.0 };
                    msg.set_field_by_number(2, Value::F64(x))
                }
                3 => msg.set_field_by_number(3, Value::String(rng.pick(&["", "s", "é\"x"]).to_string())),
                4 => msg.set_field_by_number(4, Value::Bool(rng.one_in(2))),
                5 => {
                    let st = pool.get_message_by_name("google.protobuf.Struct").unwrap();
                    msg.set_field_by_number(5, Value::Message(random_message(&st, depth - 1, rng)))
                }
                _ => {
                    let lv = pool.get_message_by_name("google.protobuf.ListValue").unwrap();
                    msg.set_field_by_number(6, Value::Message(random_message(&lv, depth - 1, rng)))
                }
            }
        }
        "Any" => {
            let targets = [
                "reflectwkt.Wkt",
                "everything3.Child",
                "everything.Nested",
                "google.protobuf.Timestamp",
                "google.protobuf.Duration",
                "google.protobuf.Struct",
                "google.protobuf.Value",
                "google.protobuf.Empty",
                "google.protobuf.Int64Value",
                "google.protobuf.FieldMask",
                "google.protobuf.Any",
            ];
            let target = *rng.pick(&targets);
            let url = match rng.below(12) {
                0 => "no.slash.Type".to_owned(),
                1 => "type.googleapis.com/not.in.Schema".to_owned(),
                2 => format!("/{target}"),
                _ => format!("type.googleapis.com/{target}"),
            };
            msg.set_field_by_number(1, Value::String(url));
            if depth > 0 {
                let payload = random_message(&pool.get_message_by_name(target).unwrap(), depth - 1, rng);
                msg.set_field_by_number(2, Value::Bytes(prost::Message::encode_to_vec(&payload).into()));
            }
        }
        "Empty" => {}
        "DoubleValue" | "FloatValue" | "Int64Value" | "UInt64Value" | "Int32Value" | "UInt32Value" | "BoolValue"
        | "StringValue" | "BytesValue" => {
            let field = desc.get_field(1).unwrap();
            if !rng.one_in(4) {
                if let Some(v) = random_value(&field.kind(), depth, rng) {
                    msg.set_field(&field, v);
                }
            }
        }
        _ => return false,
    }
    true
}

/// Position after the value of a field of `wire_type` whose value starts at `pos`, in
/// well-formed input (groups up to their matching end tag).
pub fn value_end(buf: &[u8], pos: usize, number: u32, wire_type: u8) -> usize {
    protojit_arena::wire::skip_value(buf, pos, pos, buf.len(), number, wire_type, 0, u32::MAX)
        .expect("well-formed input")
}
