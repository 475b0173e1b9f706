//! Hand-made editions descriptor sets: every feature at file, message, oneof, field, enum and value level, overrides both ways, 2024, and every refusal with its exact error.

mod editions_support;

use editions_support::*;
use protojit::{lower_descriptor_set, EditionsError};
use protojit_arena::{DefaultSymbolVisibility, Edition, EnforceNamingStyle, FieldPresence, JsonFormat, Utf8Validation};

/// File: every feature away from the 2023 default. Message `Back`: every field-level
/// feature back to the default (set on the message, inherited by its fields and nested
/// messages); its fields flip them again. Oneof and enum levels too.
fn every_level() -> File {
    let file_features = FeatureSet {
        field_presence: Some(2),          // IMPLICIT
        enum_type: Some(2),               // CLOSED
        repeated_field_encoding: Some(2), // EXPANDED
        utf8_validation: Some(3),         // NONE
        message_encoding: Some(2),        // DELIMITED
        json_format: Some(2),             // LEGACY_BEST_EFFORT
        cpp: Some(vec![0x10, 0x02]),      // pb.cpp.string_type = VIEW: ignored
        custom: Some(7),                  // a custom feature: ignored
        ..fs()
    };
    let back = FeatureSet {
        field_presence: Some(1),
        repeated_field_encoding: Some(1),
        utf8_validation: Some(2),
        message_encoding: Some(1),
        json_format: Some(1),
        ..fs()
    };
    let mut f = editions_file("every.proto", "hm", 1000, Some(file_features));
    f.enum_type.push(Enum {
        name: Some("Closed".into()),
        value: vec![EnumValue { name: Some("C0".into()), number: Some(0), ..Default::default() }],
        ..Default::default()
    });
    f.enum_type.push(Enum {
        name: Some("Open".into()),
        value: vec![EnumValue {
            name: Some("O0".into()),
            number: Some(0),
            options: Some(EnumValueOptions { features: Some(FeatureSet { enforce_naming_style: Some(2), ..fs() }) }),
        }],
        options: Some(EnumOptions { features: Some(FeatureSet { enum_type: Some(1), ..fs() }) }),
    });
    let file_level = Msg {
        name: Some("FileLevel".into()),
        field: vec![
            field("i", 1, OPTIONAL, INT32, None, None),
            field("s", 2, OPTIONAL, STRING, None, None),
            field("r", 3, REPEATED, SINT64, None, None),
            field("m", 4, OPTIONAL, MESSAGE, Some(".hm.Back"), None),
            field("c", 5, OPTIONAL, ENUM, Some(".hm.Closed"), Some(FeatureSet { field_presence: Some(1), ..fs() })),
            field("o", 6, OPTIONAL, ENUM, Some(".hm.Open"), None),
            field("req", 7, OPTIONAL, INT32, None, Some(FeatureSet { field_presence: Some(3), ..fs() })),
        ],
        extension_range: vec![ExtensionRange {
            start: Some(100),
            end: Some(200),
            options: Some(ExtensionRangeOptions {
                features: Some(FeatureSet { enforce_naming_style: Some(2), ..fs() }),
            }),
        }],
        ..Default::default()
    };
    let mut back_msg = Msg {
        name: Some("Back".into()),
        field: vec![
            field("i", 1, OPTIONAL, INT32, None, None),
            field("s", 2, OPTIONAL, STRING, None, None),
            field("r", 3, REPEATED, SINT64, None, None),
            field("m", 4, OPTIONAL, MESSAGE, Some(".hm.FileLevel"), None),
            // Field level: away again.
            Field {
                options: Some(FieldOptions {
                    custom_option: Some(77),
                    features: Some(FeatureSet { field_presence: Some(2), ..fs() }),
                    ..Default::default()
                }),
                ..field("i2", 5, OPTIONAL, INT32, None, None)
            },
            field("s2", 6, OPTIONAL, STRING, None, Some(FeatureSet { utf8_validation: Some(3), ..fs() })),
            field("r2", 7, REPEATED, SINT64, None, Some(FeatureSet { repeated_field_encoding: Some(2), ..fs() })),
            field(
                "m2",
                8,
                OPTIONAL,
                MESSAGE,
                Some(".hm.FileLevel"),
                Some(FeatureSet { message_encoding: Some(2), ..fs() }),
            ),
            // Oneof level: the oneof says IMPLICIT-free (members are explicit anyway) and NONE.
            Field { oneof_index: Some(0), ..field("os", 9, OPTIONAL, STRING, None, None) },
        ],
        oneof_decl: vec![Oneof {
            name: Some("choice".into()),
            options: Some(OneofOptions { features: Some(FeatureSet { utf8_validation: Some(3), ..fs() }) }),
        }],
        options: Some(MessageOptions { map_entry: None, features: Some(back) }),
        // An extension declared here follows this scope (VERIFY), not the extendee's file.
        extension: vec![Field {
            extendee: Some(".hm.FileLevel".into()),
            ..field("in_back", 101, OPTIONAL, STRING, None, None)
        }],
        ..Default::default()
    };
    back_msg.nested_type.push(Msg {
        name: Some("Nested".into()),
        field: vec![field("s", 1, OPTIONAL, STRING, None, None), field("r", 2, REPEATED, INT32, None, None)],
        ..Default::default()
    });
    f.message_type = vec![file_level, back_msg];
    f.extension
        .push(Field { extendee: Some(".hm.FileLevel".into()), ..field("at_file", 100, OPTIONAL, STRING, None, None) });
    f
}

#[test]
fn every_feature_at_every_level() {
    let (pool, pf) = load(&encode(vec![every_level()]));
    let get = |m: &str, f: &str| *pf.field(&message(&pool, m).get_field_by_name(f).unwrap()).unwrap();
    // File level, inherited.
    let i = get("hm.FileLevel", "i");
    assert_eq!((i.presence, i.json_format), (FieldPresence::Implicit, JsonFormat::LegacyBestEffort));
    assert!(!get("hm.FileLevel", "s").validate_utf8);
    assert!(!get("hm.FileLevel", "r").packed);
    assert!(get("hm.FileLevel", "m").delimited);
    assert_eq!(get("hm.FileLevel", "m").presence, FieldPresence::Explicit, "message fields always have presence");
    assert!(get("hm.FileLevel", "c").closed_enum);
    assert_eq!(get("hm.FileLevel", "c").presence, FieldPresence::Explicit);
    assert!(!get("hm.FileLevel", "o").closed_enum, "the enum's own OPEN wins over the file's CLOSED");
    assert_eq!(get("hm.FileLevel", "req").presence, FieldPresence::LegacyRequired);
    let fl = message(&pool, "hm.FileLevel");
    assert!(fl.get_field_by_name("m").unwrap().is_group());
    assert_eq!(fl.get_field_by_name("req").unwrap().cardinality(), prost_reflect::Cardinality::Required);
    // Message level: back to the defaults.
    let b = get("hm.Back", "i");
    assert_eq!((b.presence, b.json_format), (FieldPresence::Explicit, JsonFormat::Allow));
    assert!(get("hm.Back", "s").validate_utf8);
    assert!(get("hm.Back", "r").packed);
    assert!(!get("hm.Back", "m").delimited);
    // Field level: away again.
    assert_eq!(get("hm.Back", "i2").presence, FieldPresence::Implicit);
    assert!(!get("hm.Back", "s2").validate_utf8);
    assert!(!get("hm.Back", "r2").packed);
    assert!(get("hm.Back", "m2").delimited);
    // Oneof level.
    let os = get("hm.Back", "os");
    assert_eq!((os.presence, os.validate_utf8), (FieldPresence::Explicit, false));
    // Nested messages inherit from their parent message.
    assert!(get("hm.Back.Nested", "s").validate_utf8);
    assert!(get("hm.Back.Nested", "r").packed);
    assert_eq!(get("hm.Back.Nested", "s").set.utf8_validation, Utf8Validation::Verify);
    // Extensions follow the scope they are declared in.
    let ext = |n: &str| *pf.extension(&pool.get_extension_by_name(n).unwrap()).unwrap();
    assert!(!ext("hm.at_file").validate_utf8);
    assert!(ext("hm.Back.in_back").validate_utf8);
    // The file's resolved set and edition.
    let (edition, set) = pf.file(&fl.parent_file());
    assert_eq!((edition, set.json_format), (Edition::Edition2023, JsonFormat::LegacyBestEffort));
    assert_eq!(set.enforce_naming_style, EnforceNamingStyle::StyleLegacy);
}

#[test]
fn lowered_file_has_no_features_left() {
    let lowered = lower_descriptor_set(&encode(vec![every_level()])).unwrap();
    let fds = lowered.file_descriptor_set().unwrap();
    let f = &fds.file[0];
    assert_eq!(f.syntax(), "proto2");
    let mine = <Set as prost::Message>::decode(lowered.bytes.as_slice()).unwrap();
    assert_eq!(mine.file[0].edition, None, "no `edition` left");
    // prost-types keeps no `features`, so check the bytes: no FileOptions field 50 and no
    // FieldOptions field 21 remain (the encoded FeatureSet of `back` is gone).
    let back = FeatureSet {
        field_presence: Some(1),
        repeated_field_encoding: Some(1),
        utf8_validation: Some(2),
        message_encoding: Some(1),
        json_format: Some(1),
        ..fs()
    };
    let needle = prost::Message::encode_to_vec(&back);
    assert!(!lowered.bytes.windows(needle.len()).any(|w| w == needle));
    // Nor the extension range's (FeatureSet { enforce_naming_style: STYLE_LEGACY } = 38 02).
    let range = &mine.file[0].message_type[0].extension_range[0];
    assert_eq!(range.options.as_ref().map(|o| o.features.is_some()), Some(false));
    // Other options survive, custom ones byte for byte (prost-types would drop those).
    assert_eq!(f.options.as_ref().unwrap().java_package(), "x");
    let i2 = &mine.file[0].message_type[1].field[4];
    assert_eq!(i2.name.as_deref(), Some("i2"));
    let opts = i2.options.as_ref().unwrap();
    assert_eq!((opts.custom_option, opts.features.is_some()), (Some(77), false));
}

#[test]
fn edition_2024_defaults() {
    let mut f = editions_file("e24.proto", "e24", 1001, None);
    f.message_type.push(Msg {
        name: Some("M".into()),
        field: vec![field("s", 1, OPTIONAL, STRING, None, None), field("r", 2, REPEATED, INT32, None, None)],
        ..Default::default()
    });
    let (pool, pf) = load(&encode(vec![f]));
    let m = message(&pool, "e24.M");
    let (edition, set) = pf.file(&m.parent_file());
    assert_eq!(edition, Edition::Edition2024);
    assert_eq!(set.enforce_naming_style, EnforceNamingStyle::Style2024);
    assert_eq!(set.default_symbol_visibility, DefaultSymbolVisibility::ExportTopLevel);
    let s = pf.field(&m.get_field_by_name("s").unwrap()).unwrap();
    assert_eq!((s.presence, s.validate_utf8), (FieldPresence::Explicit, true));
    assert!(pf.field(&m.get_field_by_name("r").unwrap()).unwrap().packed);
}

fn err(file: File) -> String {
    lower_descriptor_set(&encode(vec![file])).unwrap_err().to_string()
}

#[test]
fn unknown_editions_fail() {
    assert_eq!(
        err(editions_file("new.proto", "p", 1002, None)),
        "file `new.proto`: edition EDITION_2026 is not supported (protojit loads proto2, proto3 and editions 2023 \
         and 2024); write the file in edition 2024 or older, or use a protojit that supports EDITION_2026"
    );
    assert!(err(editions_file("t.proto", "p", 99997, None))
        .starts_with("file `t.proto`: edition EDITION_99997_TEST_ONLY is not supported"));
    assert!(err(editions_file("t.proto", "p", 12345, None))
        .starts_with("file `t.proto`: edition number 12345 is not supported"));
    let mut no_edition = editions_file("n.proto", "p", 0, None);
    no_edition.edition = None;
    assert!(err(no_edition).starts_with("file `n.proto`: edition EDITION_UNKNOWN (no edition given) is not supported"));
    let mut bad = editions_file("s.proto", "p", 1000, None);
    bad.syntax = Some("proto4".into());
    assert_eq!(
        err(bad),
        "file `s.proto`: syntax \"proto4\" is unknown; only \"proto2\", \"proto3\" and \"editions\" load"
    );
}

#[test]
fn unknown_feature_values_fail() {
    let mut f = editions_file("v.proto", "pkg", 1000, None);
    f.message_type.push(Msg {
        name: Some("M".into()),
        field: vec![field("x", 1, OPTIONAL, INT32, None, Some(FeatureSet { field_presence: Some(9), ..fs() }))],
        ..Default::default()
    });
    assert_eq!(
        err(f.clone()),
        "file `v.proto`: field `pkg.M.x`: feature `field_presence` has value 9, which edition 2023 does not define; \
         set one of EXPLICIT, IMPLICIT, LEGACY_REQUIRED, or use a protojit that knows the value"
    );
    // UNKNOWN (0) is no value either, at the file level.
    let g = editions_file("w.proto", "pkg", 1001, Some(FeatureSet { utf8_validation: Some(0), ..fs() }));
    assert_eq!(
        err(g),
        "file `w.proto`: file options: feature `utf8_validation` has value 0, which edition 2024 does not define; \
         set one of VERIFY, NONE, or use a protojit that knows the value"
    );
    // A FeatureSet field this build does not know, on an enum value.
    let mut h = editions_file("u.proto", "pkg", 1000, None);
    h.enum_type.push(Enum {
        name: Some("E".into()),
        value: vec![EnumValue {
            name: Some("Z".into()),
            number: Some(0),
            options: Some(EnumValueOptions { features: Some(FeatureSet { unknown_core: Some(1), ..fs() }) }),
        }],
        ..Default::default()
    });
    assert_eq!(
        err(h),
        "file `u.proto`: enum value `pkg.Z`: `google.protobuf.FeatureSet` field 10 is unknown to this build \
         (edition 2023); it may change decoding, so the file does not load: use a protojit that knows it"
    );
    // An extension range's features are checked too.
    let mut r = editions_file("r.proto", "pkg", 1000, None);
    r.message_type.push(Msg {
        name: Some("R".into()),
        extension_range: vec![ExtensionRange {
            start: Some(1),
            end: Some(5),
            options: Some(ExtensionRangeOptions {
                features: Some(FeatureSet { enforce_naming_style: Some(5), ..fs() }),
            }),
        }],
        ..Default::default()
    });
    assert!(
        err(r).starts_with("file `r.proto`: extension range of `pkg.R`: feature `enforce_naming_style` has value 5")
    );
    // Message and enum levels name their element.
    let mut m = editions_file("m.proto", "pkg", 1000, None);
    m.message_type.push(Msg {
        name: Some("Q".into()),
        options: Some(MessageOptions {
            map_entry: None,
            features: Some(FeatureSet { message_encoding: Some(3), ..fs() }),
        }),
        ..Default::default()
    });
    assert!(err(m).starts_with("file `m.proto`: message `pkg.Q`: feature `message_encoding` has value 3"));
}

#[test]
fn proto2_and_proto3_files_pass_through_byte_for_byte() {
    let Some(dir) = corpus_dir("proto2_and_proto3_files_pass_through_byte_for_byte") else { return };
    let fds = protox::compile(["test_messages_proto3.proto"], [dir.join("conformance")]).unwrap();
    let bytes = prost::Message::encode_to_vec(&fds);
    let lowered = lower_descriptor_set(&bytes).unwrap();
    assert!(!lowered.has_editions);
    assert_eq!(lowered.bytes, bytes);
}

#[test]
fn malformed_sets_fail_without_panicking() {
    let Some(bytes) = corpus("editions/test_messages_edition2023.fds") else { return };
    for cut in (0..bytes.len()).step_by(7) {
        let _ = lower_descriptor_set(&bytes[..cut]);
    }
    let mut flipped = bytes.clone();
    for i in (0..bytes.len()).step_by(13) {
        flipped[i] ^= 0x80;
        let _ = lower_descriptor_set(&flipped);
        flipped[i] = bytes[i];
    }
    assert!(matches!(lower_descriptor_set(&[0x0a, 0x05, 0x0a]), Err(EditionsError::Malformed { .. })));
    assert_eq!(
        lower_descriptor_set(&[0x0a, 0x05, 0x0a]).unwrap_err().to_string(),
        "not a FileDescriptorSet (a length past the end at byte 0); give the output of `protoc --include_imports \
         --descriptor_set_out=…` or `buf build -o …`"
    );
}
