//! protobuf's editions test schemas: they load, resolve as their proto2/proto3 twins do, and decode the twins' payloads alike.

mod editions_support;

use editions_support::{corpus, corpus_dir, fixture, load, load_legacy, message};
use prost::Message as _;
use prost_reflect::{
    Cardinality, DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value,
};
use protojit::lower_descriptor_set;
use protojit_arena::*;

const E2023: &str = "editions/test_messages_edition2023.fds";
const P2E: &str = "editions/test_messages_proto2_editions.fds";
const P3E: &str = "editions/test_messages_proto3_editions.fds";

/// Checks, for every field of every editions file, that the lowered descriptor says what
/// the resolved features say (the lowering and the resolution agree).
fn check_lowering(pool: &DescriptorPool, pf: &PoolFeatures) -> usize {
    let mut checked = 0;
    for msg in pool.all_messages() {
        if !matches!(pf.file(&msg.parent_file()).0, Edition::Edition2023 | Edition::Edition2024) {
            continue;
        }
        let entry = msg.is_map_entry();
        for f in msg.fields() {
            let ff = pf.field(&f).unwrap();
            let map_typed = matches!(f.kind(), Kind::Message(m) if m.is_map_entry());
            if matches!(f.kind(), Kind::Message(_)) && !entry && !map_typed {
                assert_eq!(ff.delimited, ff.set.message_encoding == MessageEncoding::Delimited, "{}", f.full_name());
            } else {
                assert!(!ff.delimited, "{}", f.full_name());
            }
            if f.cardinality() == Cardinality::Repeated
                && !f.is_map()
                && !matches!(f.kind(), Kind::Message(_) | Kind::String | Kind::Bytes)
            {
                assert_eq!(
                    ff.packed,
                    ff.set.repeated_field_encoding == RepeatedFieldEncoding::Packed,
                    "{}",
                    f.full_name()
                );
            }
            assert_eq!(
                f.cardinality() == Cardinality::Required,
                ff.set.field_presence == FieldPresence::LegacyRequired && f.cardinality() != Cardinality::Repeated,
                "{}",
                f.full_name()
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn editions_corpus_sets_load() {
    for (set, root) in [
        (E2023, "protobuf_test_messages.editions.TestAllTypesEdition2023"),
        (P2E, "protobuf_test_messages.editions.proto2.TestAllTypesProto2"),
        (P3E, "protobuf_test_messages.editions.proto3.TestAllTypesProto3"),
    ] {
        let Some(bytes) = corpus(set) else { return };
        let lowered = lower_descriptor_set(&bytes).unwrap();
        assert!(lowered.has_editions);
        // The prost-types view has the same files, every one proto2 or proto3 now.
        let fds = lowered.file_descriptor_set().unwrap();
        assert!(fds.file.iter().all(|f| matches!(f.syntax(), "proto2" | "proto3")));
        let (pool, pf) = load(&bytes);
        let root = message(&pool, root);
        assert_eq!(pf.file(&root.parent_file()).0, Edition::Edition2023);
        assert!(check_lowering(&pool, &pf) > 100, "{set}");
        // Without the lowering the descriptor library refuses the set (it panics on 0.16.5).
        let raw = std::panic::catch_unwind(|| DescriptorPool::decode(bytes.as_slice()));
        assert!(!matches!(raw, Ok(Ok(_))), "{set} loaded without lowering");
    }
}

/// Compares the features of every field of every message of `legacy_pkg` with its editions twin.
fn compare_twins(legacy_set: &[u8], editions_set: &str, legacy_pkg: &str, editions_pkg: &str, json: JsonFormat) {
    let (lpool, lpf) = load_legacy(legacy_set);
    let Some(editions) = corpus(editions_set) else { return };
    let (epool, epf) = load(&editions);
    let mut fields = 0;
    for lm in lpool.all_messages().filter(|m| m.full_name().starts_with(legacy_pkg)) {
        let ename = format!("{editions_pkg}{}", &lm.full_name()[legacy_pkg.len()..]);
        let em = message(&epool, &ename);
        for lf in lm.fields() {
            let ef = em.get_field(lf.number()).unwrap_or_else(|| panic!("{ename} lacks {}", lf.number()));
            let (l, e) = (lpf.field(&lf).unwrap(), epf.field(&ef).unwrap());
            let what = lf.full_name();
            assert_eq!(l.presence, e.presence, "presence of {what}");
            assert_eq!(l.closed_enum, e.closed_enum, "closed enum of {what}");
            assert_eq!(l.validate_utf8, e.validate_utf8, "utf8 of {what}");
            assert_eq!(l.delimited, e.delimited, "delimited of {what}");
            assert_eq!(l.packed, e.packed, "packed of {what}");
            assert_eq!(l.group_like, e.group_like, "group-likeness of {what}");
            assert_eq!(l.group_like, lf.is_group(), "{what}: every proto2 group is group-like");
            assert_eq!((lf.cardinality(), lf.is_map(), lf.is_group()), (ef.cardinality(), ef.is_map(), ef.is_group()));
            assert_eq!(e.json_format, JsonFormat::Allow, "{what}: the editions twins keep 2023's ALLOW");
            assert_eq!(l.json_format, json);
            fields += 1;
        }
    }
    assert!(fields > 150, "{fields}");
}

#[test]
fn proto2_twin_resolves_like_proto2() {
    compare_twins(
        &fixture("test_messages_proto2.fds"),
        P2E,
        "protobuf_test_messages.proto2.",
        "protobuf_test_messages.editions.proto2.",
        JsonFormat::LegacyBestEffort,
    );
}

#[test]
fn proto3_twin_resolves_like_proto3() {
    compare_twins(
        &fixture("test_messages_proto3.fds"),
        P3E,
        "protobuf_test_messages.proto3.",
        "protobuf_test_messages.editions.proto3.",
        JsonFormat::Allow,
    );
}

/// The twins compiled by protox (the project's own parser) resolve the same as protoc's.
#[test]
fn protox_compiled_twins_match() {
    for (file, pkg, set) in [
        ("test_messages_proto2.proto", "protobuf_test_messages.proto2.", P2E),
        ("test_messages_proto3.proto", "protobuf_test_messages.proto3.", P3E),
    ] {
        let Some(dir) = corpus_dir("protox_compiled_twins_match") else { return };
        let fds = protox::compile([file], [dir.join("conformance")]).unwrap();
        let editions_pkg = pkg.replace("protobuf_test_messages.", "protobuf_test_messages.editions.");
        let json = if pkg.contains("proto2") { JsonFormat::LegacyBestEffort } else { JsonFormat::Allow };
        compare_twins(&fds.encode_to_vec(), set, pkg, &editions_pkg, json);
    }
}

#[test]
fn edition2023_chosen_fields() {
    let Some(set) = corpus(E2023) else { return };
    let (pool, pf) = load(&set);
    let m = message(&pool, "protobuf_test_messages.editions.TestAllTypesEdition2023");
    let f = |name: &str| *pf.field(&m.get_field_by_name(name).unwrap()).unwrap();
    let x = f("optional_int32");
    assert_eq!(
        (x.presence, x.packed, x.delimited, x.json_format),
        (FieldPresence::Explicit, false, false, JsonFormat::Allow)
    );
    assert!(f("optional_string").validate_utf8);
    assert!(!f("optional_bytes").validate_utf8);
    assert!(!f("optional_nested_enum").closed_enum, "2023 enums are open");
    assert!(f("groupliketype").delimited && f("delimited_field").delimited, "file-level DELIMITED");
    // Text names as protoc 35.1 prints them (`GroupLikeType {` and `delimited_field {`).
    assert!(f("groupliketype").group_like && !f("delimited_field").group_like);
    assert!(!f("optional_nested_message").delimited, "field-level LENGTH_PREFIXED");
    assert!(!f("recursive_message").delimited);
    assert!(!f("map_string_nested_message").delimited, "maps stay length-prefixed");
    assert_eq!(f("map_string_nested_message").presence, FieldPresence::Implicit);
    assert!(f("repeated_int32").packed && f("packed_int32").packed && !f("unpacked_int32").packed);
    assert!(!f("oneof_nested_message").delimited);
    assert_eq!(f("oneof_uint32").presence, FieldPresence::Explicit);
    // The map entry's value message field: never delimited, whatever the file says.
    let entry = match m.get_field_by_name("map_string_nested_message").unwrap().kind() {
        Kind::Message(e) => e,
        _ => unreachable!(),
    };
    assert!(!pf.field(&entry.map_entry_value_field()).unwrap().delimited);
    assert!(pf.field(&entry.map_entry_key_field()).unwrap().validate_utf8);
    // A nested message inherits the file's DELIMITED; its own override wins.
    let nested = message(&pool, "protobuf_test_messages.editions.TestAllTypesEdition2023.NestedMessage");
    assert!(!pf.field(&nested.get_field_by_name("corecursive").unwrap()).unwrap().delimited);
    // Extensions resolve in the file's scope.
    let ext = |n: &str| {
        *pf.extension(&pool.get_extension_by_name(&format!("protobuf_test_messages.editions.{n}")).unwrap()).unwrap()
    };
    assert!(ext("groupliketype").delimited && ext("delimited_ext").delimited);
    assert_eq!(ext("extension_int32").presence, FieldPresence::Explicit);
    assert!(ext("extension_string").validate_utf8);
    let enum_ = pool.get_enum_by_name("protobuf_test_messages.editions.ForeignEnumEdition2023").unwrap();
    assert!(!pf.is_closed(&enum_));
}

// ---- payloads ----------------------------------------------------------------------------

/// A value of every field (one level of nested messages), as the conformance tests' "all types" do.
fn fill(desc: &MessageDescriptor, depth: u32) -> DynamicMessage {
    let mut msg = DynamicMessage::new(desc.clone());
    for (i, f) in desc.fields().enumerate() {
        if f.containing_oneof().is_some_and(|o| o.fields().next().map(|x| x.number()) != Some(f.number())) {
            continue; // one member per oneof
        }
        let Some(v) = sample(&f, depth, i as i64) else { continue };
        msg.set_field(&f, v);
    }
    msg
}

fn scalar(kind: &Kind, depth: u32, i: i64) -> Option<Value> {
    Some(match kind {
        Kind::Double => Value::F64(-2.25 * i as f64),
        Kind::Float => Value::F32(1.5 * i as f32),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(-3 - i as i32),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(-1 << 40 | i),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(300 + i as u32),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(1 << 50 | i as u64),
        Kind::Bool => Value::Bool(true),
        Kind::String => Value::String(format!("héllo {i}")),
        Kind::Bytes => Value::Bytes(vec![0, 0xff, i as u8].into()),
        Kind::Enum(e) => Value::EnumNumber(e.values().last().unwrap().number()),
        Kind::Message(m) if depth < 1 && !m.full_name().starts_with("google.protobuf.") => {
            Value::Message(fill(m, depth + 1))
        }
        Kind::Message(_) => return None,
    })
}

fn sample(f: &FieldDescriptor, depth: u32, i: i64) -> Option<Value> {
    if f.is_map() {
        let Kind::Message(entry) = f.kind() else { unreachable!() };
        let key = match scalar(&entry.map_entry_key_field().kind(), depth, i)? {
            Value::I32(v) => MapKey::I32(v),
            Value::I64(v) => MapKey::I64(v),
            Value::U32(v) => MapKey::U32(v),
            Value::U64(v) => MapKey::U64(v),
            Value::Bool(v) => MapKey::Bool(v),
            Value::String(v) => MapKey::String(v),
            _ => unreachable!(),
        };
        let value = scalar(&entry.map_entry_value_field().kind(), depth, i)?;
        return Some(Value::Map([(key, value)].into_iter().collect()));
    }
    if f.is_list() {
        return Some(Value::List(vec![scalar(&f.kind(), depth, i)?, scalar(&f.kind(), depth, i + 1)?]));
    }
    scalar(&f.kind(), depth, i)
}

/// Field by field (by number, across the two pools), recursively.
fn same(a: &DynamicMessage, b: &DynamicMessage, path: &str) -> usize {
    assert_eq!(b.unknown_fields().count(), 0, "{path}: unknown fields after decoding");
    let mut n = 0;
    for fa in prost_reflect::ReflectMessage::descriptor(a).fields() {
        let fb = prost_reflect::ReflectMessage::descriptor(b).get_field(fa.number()).unwrap();
        let p = format!("{path}.{}", fa.name());
        assert_eq!(a.has_field(&fa), b.has_field(&fb), "{p}: presence");
        if a.has_field(&fa) {
            n += same_value(&a.get_field(&fa), &b.get_field(&fb), &p);
        }
    }
    n
}

fn same_value(a: &Value, b: &Value, p: &str) -> usize {
    match (a, b) {
        (Value::Message(x), Value::Message(y)) => same(x, y, p),
        (Value::List(x), Value::List(y)) => {
            assert_eq!(x.len(), y.len(), "{p}");
            x.iter().zip(y).map(|(x, y)| same_value(x, y, p)).sum()
        }
        (Value::Map(x), Value::Map(y)) => {
            assert_eq!(x.len(), y.len(), "{p}");
            x.iter().map(|(k, v)| same_value(v, &y[k], p)).sum()
        }
        _ => {
            assert_eq!(a, b, "{p}");
            1
        }
    }
}

fn decode_through_twin(legacy_set: &[u8], editions_set: &str, legacy: &str, editions: &str) {
    let (lpool, _) = load_legacy(legacy_set);
    let Some(set) = corpus(editions_set) else { return };
    let (epool, _) = load(&set);
    let original = fill(&message(&lpool, legacy), 0);
    let bytes = original.encode_to_vec();
    let decoded = DynamicMessage::decode(message(&epool, editions), bytes.as_slice()).unwrap();
    assert!(same(&original, &decoded, legacy) > 200);
    // Re-encoding through the lowered pool gives the same bytes (same packing, same groups).
    assert_eq!(decoded.encode_to_vec(), bytes, "{editions}: re-encoding differs");
}

#[test]
fn proto2_payload_decodes_alike_through_the_editions_twin() {
    decode_through_twin(
        &fixture("test_messages_proto2.fds"),
        P2E,
        "protobuf_test_messages.proto2.TestAllTypesProto2",
        "protobuf_test_messages.editions.proto2.TestAllTypesProto2",
    );
}

#[test]
fn proto3_payload_decodes_alike_through_the_editions_twin() {
    decode_through_twin(
        &fixture("test_messages_proto3.fds"),
        P3E,
        "protobuf_test_messages.proto3.TestAllTypesProto3",
        "protobuf_test_messages.editions.proto3.TestAllTypesProto3",
    );
}

/// A payload protoc 35.1 encoded from text (fixtures-src/edition2023.payload.txt): groups,
/// delimited fields and delimited extensions decode as such, nothing is left unknown.
#[test]
fn protoc_edition2023_payload_decodes() {
    let Some(set) = corpus(E2023) else { return };
    let (pool, _) = load(&set);
    let bytes = fixture("edition2023.payload.bin");
    let m = DynamicMessage::decode(
        message(&pool, "protobuf_test_messages.editions.TestAllTypesEdition2023"),
        bytes.as_slice(),
    )
    .unwrap();
    assert_eq!(m.unknown_fields().count(), 0);
    let get = |path: &[&str]| {
        let mut cur = m.clone();
        for (i, name) in path.iter().enumerate() {
            let v = cur.get_field_by_name(name).unwrap().into_owned();
            if i + 1 == path.len() {
                return v;
            }
            cur = v.as_message().unwrap().clone();
        }
        unreachable!()
    };
    assert_eq!(get(&["groupliketype", "group_int32"]), Value::I32(1));
    assert_eq!(get(&["groupliketype", "group_uint32"]), Value::U32(2));
    assert_eq!(get(&["delimited_field", "group_int32"]), Value::I32(3));
    assert_eq!(get(&["optional_nested_message", "a"]), Value::I32(5));
    assert_eq!(get(&["unpacked_int32"]), Value::List(vec![Value::I32(4), Value::I32(5)]));
    let ext = |n: &str| pool.get_extension_by_name(&format!("protobuf_test_messages.editions.{n}")).unwrap();
    assert_eq!(m.get_extension(&ext("extension_int32")).as_ref(), &Value::I32(12));
    let g = m.get_extension(&ext("delimited_ext"));
    assert_eq!(g.as_message().unwrap().get_field_by_name("c").unwrap().as_ref(), &Value::I32(5));
    // The same bytes come back out (protoc and the lowered pool agree on every encoding).
    assert_eq!(m.encode_to_vec().len(), bytes.len());
}

/// The defaults compiled into protoc 35.1 (`--edition_defaults_out`, read with the
/// descriptor.proto of the same protoc) equal [`FeatureSet::defaults`].
#[test]
fn defaults_match_protoc_35_1() {
    let (pool, _) = load(&fixture("mixed_2024.fds"));
    let defaults = message(&pool, "google.protobuf.FeatureSetDefaults");
    let d = DynamicMessage::decode(defaults, fixture("feature_set_defaults_protoc35.1.bin").as_slice()).unwrap();
    let mut seen = 0;
    for entry in d.get_field_by_name("defaults").unwrap().as_list().unwrap() {
        let e = entry.as_message().unwrap();
        let edition = match e.get_field_by_name("edition").unwrap().as_enum_number().unwrap() {
            900 => Edition::Proto2,
            999 => Edition::Proto3,
            1000 => Edition::Edition2023,
            1001 => Edition::Edition2024,
            9999 => continue, // EDITION_UNSTABLE: not loadable
            n => panic!("edition {n}"),
        };
        let mut merged = std::collections::HashMap::new();
        for part in ["fixed_features", "overridable_features"] {
            let fs = e.get_field_by_name(part).unwrap().as_message().unwrap().clone();
            for (f, v) in fs.fields() {
                merged.insert(f.number(), v.as_enum_number().unwrap() as u64);
            }
        }
        let s = FeatureSet::defaults(edition);
        let want = [
            (1, s.field_presence as u64, FieldPresence::from_number(merged[&1]).map(|x| x as u64)),
            (2, s.enum_type as u64, EnumTypeFeature::from_number(merged[&2]).map(|x| x as u64)),
        ];
        for (n, mine, theirs) in want {
            assert_eq!(Some(mine), theirs, "feature {n} of {edition:?}");
        }
        assert_eq!(Some(s.repeated_field_encoding), RepeatedFieldEncoding::from_number(merged[&3]));
        assert_eq!(Some(s.utf8_validation), Utf8Validation::from_number(merged[&4]));
        assert_eq!(Some(s.message_encoding), MessageEncoding::from_number(merged[&5]));
        assert_eq!(Some(s.json_format), JsonFormat::from_number(merged[&6]));
        assert_eq!(Some(s.enforce_naming_style), EnforceNamingStyle::from_number(merged[&7]));
        assert_eq!(Some(s.default_symbol_visibility), DefaultSymbolVisibility::from_number(merged[&8]));
        seen += 1;
    }
    assert_eq!(seen, 4, "LEGACY, PROTO3, 2023, 2024");
}
