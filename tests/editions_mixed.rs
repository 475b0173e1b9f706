//! A set protoc 35.1 wrote (fixtures-src/gen.sh): edition 2024 and 2023 files, proto2 and proto3 files importing each other and extending each other's messages, language and custom feature extensions.

mod editions_support;

use editions_support::{fixture, load, message};
use prost::Message as _;
use prost_reflect::{Cardinality, DynamicMessage, Value};
use protojit_arena::{Edition, FieldPresence, JsonFormat};

#[test]
fn mixed_set_resolves_per_element() {
    let (pool, pf) = load(&fixture("mixed_2024.fds"));
    let get = |m: &str, f: &str| *pf.field(&message(&pool, m).get_field_by_name(f).unwrap()).unwrap();
    let editions = |m: &str| pf.file(&message(&pool, m).parent_file()).0;
    assert_eq!(editions("fx.ed2024.Implicit"), Edition::Edition2024);
    assert_eq!(editions("fx.ed2024.MyFeatures"), Edition::Edition2023);
    assert_eq!(editions("fx.p3.UsesEditions"), Edition::Proto3);
    assert_eq!(editions("fx.p2.UsesClosed"), Edition::Proto2);
    assert_eq!(editions("google.protobuf.FeatureSet"), Edition::Proto2);

    let m = "fx.ed2024.Implicit";
    assert_eq!(
        (get(m, "a").presence, get(m, "a").json_format),
        (FieldPresence::Implicit, JsonFormat::LegacyBestEffort)
    );
    assert_eq!((get(m, "s").presence, get(m, "s").validate_utf8), (FieldPresence::Implicit, true));
    assert_eq!(get(m, "b").presence, FieldPresence::Explicit);
    assert!(get(m, "c").closed_enum && !get(m, "o").closed_enum);
    assert_eq!(get(m, "o").presence, FieldPresence::Implicit);
    assert_eq!((get(m, "inner").presence, get(m, "inner").delimited), (FieldPresence::Explicit, false));
    assert!(get(m, "packed").packed && !get(m, "expanded").packed);
    assert!(get(m, "delimited").delimited, "with a custom feature beside it");
    assert_eq!(get(m, "req").presence, FieldPresence::LegacyRequired);
    assert_eq!(message(&pool, m).get_field_by_name("req").unwrap().cardinality(), Cardinality::Required);
    assert_eq!(get(m, "x").presence, FieldPresence::Explicit);
    assert!(!get(m, "y").validate_utf8, "file-level NONE");
    assert!(!get(m, "by_name").delimited);
    assert!(!get("fx.ed2024.Implicit.ByNameEntry", "key").validate_utf8);
    assert!(!get("fx.ed2024.Implicit.ByNameEntry", "value").delimited);

    let m = "fx.ed2024.Expanded";
    assert!(!get(m, "e").packed && get(m, "p").packed);
    assert!(get(m, "group_like").delimited && get(m, "groups").delimited);
    assert!(!get(m, "map_not_delimited").delimited);
    assert!(get(m, "legacy_enum").closed_enum, "a proto2 enum is closed in an editions message");
    assert!(!get(m, "legacy_msg").delimited);

    let ext = |n: &str| *pf.extension(&pool.get_extension_by_name(n).unwrap()).unwrap();
    assert!(!ext("fx.ed2024.ext_string").validate_utf8);
    assert!(ext("fx.ed2024.ext_msg").delimited);
    assert!(!ext("fx.ed2024.on_p2").validate_utf8, "an editions extension of a proto2 message");
    assert!(ext("fx.ed2024.on_p2_packed").packed);
    assert!(
        !ext("fx.p2.from_p2").validate_utf8 && !ext("fx.p2.from_p2_list").packed,
        "proto2 extensions of an editions message"
    );

    // proto2 and proto3 files using editions types: the enum's own features decide.
    assert!(get("fx.p2.UsesClosed", "closed").closed_enum);
    assert!(!get("fx.p2.UsesClosed", "open").closed_enum);
    assert!(!get("fx.p2.UsesClosed", "p").packed);
    let m = "fx.p3.UsesEditions";
    assert!(!get(m, "open").closed_enum && get(m, "s").validate_utf8 && get(m, "p").packed);
    assert_eq!((get(m, "s").presence, get(m, "o").presence), (FieldPresence::Implicit, FieldPresence::Explicit));
}

/// Payloads protoc 35.1 encoded from text decode with nothing unknown and re-encode to the same bytes.
#[test]
fn protoc_2024_payloads_roundtrip() {
    let (pool, _) = load(&fixture("mixed_2024.fds"));
    for (name, ty) in
        [("implicit_2024.payload.bin", "fx.ed2024.Implicit"), ("expanded_2024.payload.bin", "fx.ed2024.Expanded")]
    {
        let bytes = fixture(name);
        let m = DynamicMessage::decode(message(&pool, ty), bytes.as_slice()).unwrap();
        assert_eq!(m.unknown_fields().count(), 0, "{name}");
        assert_eq!(m.encode_to_vec(), bytes, "{name}");
    }
    let bytes = fixture("implicit_2024.payload.bin");
    let m = DynamicMessage::decode(message(&pool, "fx.ed2024.Implicit"), bytes.as_slice()).unwrap();
    assert!(m.has_field_by_name("b") && !m.has_field_by_name("a"), "explicit zero kept, implicit zero not on the wire");
    assert_eq!(m.get_field_by_name("c").unwrap().as_ref(), &Value::EnumNumber(1));
    let d = m.get_field_by_name("delimited").unwrap();
    assert_eq!(d.as_message().unwrap().get_field_by_name("v").unwrap().as_ref(), &Value::I32(2));
}

/// A map field's features reach its entry's key and value (protoc copies them there).
#[test]
fn map_field_features_reach_the_entry() {
    let (pool, pf) = load(&fixture("map_utf8_none.fds"));
    let entry = message(&pool, "mc.M.MEntry");
    for f in entry.fields() {
        assert!(!pf.field(&f).unwrap().validate_utf8, "{}", f.full_name());
    }
    assert!(!pf.field(&message(&pool, "mc.M").get_field_by_name("m").unwrap()).unwrap().validate_utf8);
}
