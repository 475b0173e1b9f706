//! The read API (issue 10): typed handles (resolution errors, wrong-type reads, defaults, nested paths, joins), map indexes with duplicate keys, the visitor's walks; both engines.

mod common;

use protojit::{
    field, Arena, Descend, EngineOptions, Field, FieldInfo, HandleError, MapKey, MapWalk, MessageRef, Schema, Visitor,
};

const PROTO: &str = r#"
    syntax = "proto2";
    package t;
    message Root {
      optional int64 id = 1 [default = 42];
      optional string name = 2 [default = "none"];
      optional Inner inner = 3;
      repeated sint32 deltas = 4 [packed = true];
      repeated Inner items = 5;
      map<string, int64> counts = 6;
      repeated Color colors = 7;
      optional Color color = 8 [default = GREEN];
      repeated string tags = 9;
      oneof pick { int32 a = 10; string b = 11; }
      optional bytes blob = 12;
    }
    message Inner { optional int32 x = 1; optional Leaf leaf = 2; }
    message Leaf { optional double v = 1; }
    enum Color { RED = 0; GREEN = 1; BLUE = 2; }
"#;

fn schema() -> Schema {
    Schema::from_proto_source("t.proto", PROTO).unwrap()
}

/// Root { id: 7, inner: { x: 3, leaf: { v: 1.5 } }, deltas: [1, -2, 3], items: [{x: 1}, {x: 2}],
/// counts: {a: 1, b: 2, a: 3}, colors: [BLUE, RED], tags: [p, q], b: "s" }
fn bytes() -> Vec<u8> {
    let mut b = vec![0x08, 0x07]; // id
    b.extend_from_slice(&[0x1a, 0x0d, 0x08, 0x03, 0x12, 0x09, 0x09]); // inner { x: 3, leaf { v } }
    b.extend_from_slice(&1.5f64.to_le_bytes());
    b.extend_from_slice(&[0x22, 0x03, 0x02, 0x03, 0x06]); // deltas (zigzag)
    b.extend_from_slice(&[0x2a, 0x02, 0x08, 0x01, 0x2a, 0x02, 0x08, 0x02]); // items
    for (k, v) in [(b'a', 1u8), (b'b', 2), (b'a', 3)] {
        b.extend_from_slice(&[0x32, 0x05, 0x0a, 0x01, k, 0x10, v]); // counts entry
    }
    b.extend_from_slice(&[0x38, 0x02, 0x38, 0x00]); // colors
    b.extend_from_slice(&[0x4a, 0x01, b'p', 0x4a, 0x01, b'q']); // tags
    b.extend_from_slice(&[0x5a, 0x01, b's']); // b
    b
}

fn each_engine(schema: &Schema, f: impl Fn(MessageRef<'_>)) {
    let input = bytes();
    for engine in common::ENGINES {
        let decoder = schema.decoder_with_options("t.Root", &EngineOptions::default().with_kind(engine)).unwrap();
        let arena = Arena::new();
        f(decoder.decode(&input, &arena).unwrap());
    }
}

#[test]
fn handles_read_values_defaults_and_presence() {
    let s = schema();
    let l = s.layouts();
    let id = Field::<i64>::resolve(l, "t.Root", "id").unwrap();
    let name = Field::<field::Str>::resolve(l, "t.Root", "name").unwrap();
    let x = Field::<i32>::resolve(l, "t.Root", "inner.x").unwrap();
    let v = Field::<f64>::resolve(l, "Root", "inner.leaf.v").unwrap();
    let deltas = Field::<field::List<i32>>::resolve(l, "t.Root", "deltas").unwrap();
    let items = Field::<field::List<field::Message>>::resolve(l, "t.Root", "items").unwrap();
    let colors = Field::<field::List<field::Enum>>::resolve(l, "t.Root", "colors").unwrap();
    let color = Field::<field::Enum>::resolve(l, "t.Root", "color").unwrap();
    let tags = Field::<field::List<field::Str>>::resolve(l, "t.Root", "tags").unwrap();
    let a = Field::<i32>::resolve(l, "t.Root", "a").unwrap();
    let b = Field::<field::Str>::resolve(l, "t.Root", "#11").unwrap();
    let blob = Field::<field::Bytes>::resolve(l, "t.Root", "blob").unwrap();
    let item_x = Field::<i32>::resolve(l, "t.Inner", "x").unwrap();
    each_engine(&s, |m| {
        assert_eq!(id.get(&m), Some(7));
        assert_eq!(id.present(&m), Some(7));
        assert_eq!(name.get(&m), Some("none"), "declared default");
        assert_eq!(name.present(&m), None);
        assert!(!name.has(&m));
        assert_eq!(x.get(&m), Some(3));
        assert_eq!(v.get(&m), Some(1.5));
        assert_eq!(deltas.get(&m), Some(&[1, -2, 3][..]));
        let xs: Vec<i32> = items.get(&m).unwrap().map(|i| item_x.get(&i).unwrap()).collect();
        assert_eq!(xs, [1, 2]);
        assert_eq!(colors.get(&m), Some(&[2, 0][..]));
        assert_eq!(colors.enum_type().full_name(), "t.Color");
        assert_eq!(color.get(&m), Some(1), "declared default GREEN");
        assert_eq!(color.get_value(&m).unwrap().name(), Some("GREEN"));
        assert_eq!(color.present(&m), None);
        assert_eq!(tags.get(&m).unwrap().collect::<Vec<_>>(), ["p", "q"]);
        assert_eq!(a.get(&m), Some(0), "inactive oneof member reads as its default");
        assert_eq!(a.present(&m), None);
        assert_eq!(b.present(&m), Some("s"));
        assert_eq!(blob.get(&m), Some(&b""[..]));
        // Resolved from a decoded message's type, the same handle.
        let id_of_m = Field::<i64>::resolve(m.layouts(), m.descriptor().full_name(), "id").unwrap();
        assert_eq!(id_of_m.get(&m), Some(7));
    });
}

#[test]
fn absent_messages_on_a_path_read_as_defaults() {
    let s = schema();
    let v = Field::<f64>::resolve(s.layouts(), "t.Root", "inner.leaf.v").unwrap();
    let leaf = Field::<field::Message>::resolve(s.layouts(), "t.Root", "inner.leaf").unwrap();
    for engine in common::ENGINES {
        let decoder = s.decoder_with_options("t.Root", &EngineOptions::default().with_kind(engine)).unwrap();
        let arena = Arena::new();
        let m = decoder.decode(&[0x08, 0x01], &arena).unwrap();
        assert_eq!(v.get(&m), Some(0.0));
        assert_eq!(v.present(&m), None);
        assert_eq!(leaf.present(&m).map(|_| ()), None);
        assert_eq!(leaf.get(&m).unwrap().descriptor().full_name(), "t.Leaf");
    }
}

#[test]
fn handles_compose_by_join() {
    let s = schema();
    let l = s.layouts();
    let inner = Field::<field::Message>::resolve(l, "t.Root", "inner").unwrap();
    let leaf_v = Field::<f64>::resolve(l, "t.Inner", "leaf.v").unwrap();
    let joined = inner.join(&leaf_v).unwrap();
    assert_eq!(joined.path(), "inner.leaf.v");
    each_engine(&s, |m| assert_eq!(joined.get(&m), Some(1.5)));
    let err = inner.join(&Field::<i64>::resolve(l, "t.Root", "id").unwrap()).unwrap_err();
    assert_eq!(err.to_string(), "cannot join: `inner` holds `t.Inner`, but the inner handle reads `t.Root`");
}

#[test]
fn resolution_errors_are_exact() {
    let s = schema();
    let l = s.layouts();
    let cases: Vec<(HandleError, &str)> = vec![
        (Field::<i64>::resolve(l, "t.Nope", "id").unwrap_err(), "no message type `t.Nope` in the schema"),
        (Field::<i64>::resolve(l, "t.Root", "").unwrap_err(), "empty field path ``"),
        (Field::<i64>::resolve(l, "t.Root", "inner.").unwrap_err(), "empty field path `inner.`"),
        (
            Field::<i64>::resolve(l, "t.Root", "idd").unwrap_err(),
            "message type `t.Root` has no field `idd` (in `idd`)",
        ),
        (
            Field::<i32>::resolve(l, "t.Root", "id").unwrap_err(),
            "field `id` of `t.Root` is int64, but this handle reads an int32, sint32 or sfixed32 (in `id`)",
        ),
        (
            Field::<u64>::resolve(l, "t.Root", "id").unwrap_err(),
            "field `id` of `t.Root` is int64, but this handle reads a uint64 or fixed64 (in `id`)",
        ),
        (
            Field::<i32>::resolve(l, "t.Root", "deltas").unwrap_err(),
            "field `deltas` of `t.Root` is repeated sint32, but this handle reads an int32, sint32 or sfixed32 (in `deltas`)",
        ),
        (
            Field::<field::List<i64>>::resolve(l, "t.Root", "deltas").unwrap_err(),
            "field `deltas` of `t.Root` is repeated sint32, but this handle reads a repeated number of this type (in `deltas`)",
        ),
        (
            Field::<field::List<field::Message>>::resolve(l, "t.Root", "counts").unwrap_err(),
            "field `counts` of `t.Root` is map<string, int64>, but this handle reads a repeated message (in `counts`)",
        ),
        (
            Field::<i32>::resolve(l, "t.Root", "items.x").unwrap_err(),
            "field `items` of `t.Root` is repeated t.Inner, not a singular message, so `items.x` cannot go through it",
        ),
        (
            Field::<field::Str>::resolve(l, "t.Root", "blob").unwrap_err(),
            "field `blob` of `t.Root` is bytes, but this handle reads a string (in `blob`)",
        ),
        (
            Field::<field::Enum>::resolve(l, "t.Root", "a").unwrap_err(),
            "field `a` of `t.Root` is int32, but this handle reads an enum (in `a`)",
        ),
        (
            Field::<i32>::resolve(l, "t.Root", "color").unwrap_err(),
            "field `color` of `t.Root` is t.Color, but this handle reads an int32, sint32 or sfixed32 (in `color`)",
        ),
        (
            Field::<field::Map>::resolve(l, "t.Root", "inner").unwrap_err(),
            "field `inner` of `t.Root` is t.Inner, but this handle reads a map (in `inner`)",
        ),
    ];
    for (err, want) in cases {
        assert_eq!(err.to_string(), want);
    }
    assert!(matches!(
        Field::<i32>::resolve(l, "t.Root", "id"),
        Err(HandleError::KindMismatch { ref field, .. }) if field == "id"
    ));
}

#[test]
fn reads_on_another_type_or_schema_are_none() {
    let s = schema();
    let other = schema(); // same text, other layouts
    let x_on_inner = Field::<i32>::resolve(s.layouts(), "t.Inner", "x").unwrap();
    let id_other = Field::<i64>::resolve(other.layouts(), "t.Root", "id").unwrap();
    let deep_other = Field::<f64>::resolve(other.layouts(), "t.Root", "inner.leaf.v").unwrap();
    let counts_other = Field::<field::Map>::resolve(other.layouts(), "t.Root", "counts").unwrap();
    let items_inner = Field::<field::List<field::Message>>::resolve(s.layouts(), "t.Inner", "leaf.v");
    assert!(items_inner.is_err());
    each_engine(&s, |m| {
        // `m` is a t.Root of `s`: wrong type for the first, wrong layouts for the others.
        assert_eq!(x_on_inner.get(&m), None);
        assert_eq!(x_on_inner.present(&m), None);
        assert!(!x_on_inner.has(&m));
        assert_eq!(id_other.get(&m), None);
        assert_eq!(deep_other.get(&m), None);
        assert!(counts_other.get(&m).is_none());
    });
}

#[test]
fn maps_take_the_last_key_with_and_without_an_index() {
    let s = schema();
    let counts = Field::<field::Map>::resolve(s.layouts(), "t.Root", "counts").unwrap();
    each_engine(&s, |m| {
        let map = m.get("counts").unwrap().as_map().unwrap();
        assert_eq!(counts.get(&m).unwrap().len(), 2);
        assert_eq!(map.len(), 2);
        assert_eq!(map.get(&MapKey::String("a")).unwrap().as_i64(), Some(3));
        let index = map.index();
        assert_eq!(index.len(), 2);
        assert_eq!(index.get(&MapKey::String("a")).unwrap().as_i64(), Some(3));
        assert_eq!(index.get(&MapKey::String("b")).unwrap().as_i64(), Some(2));
        assert!(index.get(&MapKey::String("c")).is_none());
        assert!(!index.contains_key(&MapKey::String("c")));
        // Winners in wire order: b (entry 1) before a (entry 2).
        let order: Vec<(MapKey<'_>, i64)> = index.iter().map(|(k, v)| (k, v.as_i64().unwrap())).collect();
        assert_eq!(order, [(MapKey::String("b"), 2), (MapKey::String("a"), 3)]);
        let old: Vec<(MapKey<'_>, i64)> = map.iter().map(|(k, v)| (k, v.as_i64().unwrap())).collect();
        assert_eq!(old, order);
        assert_eq!(map.entries_on_wire().len(), 3);
        // The visitor's default walk: one entry per key; `AllEntries`: every entry.
        for (walk, want) in [(MapWalk::Entries, vec![2, 3]), (MapWalk::AllEntries, vec![1, 2, 3])] {
            struct Values(MapWalk, Vec<i64>);
            impl<'a> Visitor<'a> for Values {
                fn map(&mut self, _: FieldInfo<'a>, _: protojit::MapRef<'a>) -> MapWalk {
                    self.0
                }
                fn i64(&mut self, f: FieldInfo<'a>, v: i64) {
                    if f.number() == 2 {
                        self.1.push(v);
                    }
                }
                fn message(&mut self, f: FieldInfo<'a>, _: MessageRef<'a>) -> Descend {
                    if f.number() == 6 {
                        Descend::Yes
                    } else {
                        Descend::No
                    }
                }
            }
            let mut v = Values(walk, Vec::new());
            m.visit(&mut v);
            assert_eq!(v.1, want, "{walk:?}");
        }
        common::read_api::check_readers_agree(&m, "map message");
    });
}

#[test]
fn enum_values_are_cheap_and_named() {
    let s = schema();
    each_engine(&s, |m| {
        let colors = m.get("colors").unwrap().as_list().unwrap();
        let names: Vec<_> = colors
            .iter()
            .map(|v| match v {
                protojit::Value::Enum(e) => e.name(),
                _ => None,
            })
            .collect();
        assert_eq!(names, [Some("BLUE"), Some("RED")]);
        let (numbers, ty) = colors.enum_numbers().unwrap();
        assert_eq!(numbers, [2, 0]);
        assert_eq!(ty.descriptor().full_name(), "t.Color");
        assert_eq!(colors.as_slice::<i64>(), None, "kinds are checked");
        assert_eq!(m.get("deltas").unwrap().as_list().unwrap().as_slice::<i32>(), Some(&[1, -2, 3][..]));
    });
}

/// The visitor's presence is `fields()`'s: without explicit presence a value is present when
/// its bits are not zero (so `-0.0` is visited and `+0.0`, `0` and `false` are not); with it
/// (proto3 `optional`), a zero set on the wire is visited. Both engines.
#[test]
fn visit_sees_what_fields_sees_for_zeros_and_negative_zero() {
    let schema = common::reflect_schema();
    #[derive(Default)]
    struct Seen(Vec<(String, u64)>);
    impl<'a> Visitor<'a> for Seen {
        fn f64(&mut self, f: FieldInfo<'a>, v: f64) {
            self.0.push((f.name().to_owned(), v.to_bits()));
        }
        fn f32(&mut self, f: FieldInfo<'a>, v: f32) {
            self.0.push((f.name().to_owned(), u64::from(v.to_bits())));
        }
        fn i32(&mut self, f: FieldInfo<'a>, v: i32) {
            self.0.push((f.name().to_owned(), v as u64));
        }
        fn bool(&mut self, f: FieldInfo<'a>, v: bool) {
            self.0.push((f.name().to_owned(), u64::from(v)));
        }
    }
    let record = [
        &[0x09][..],
        &(-0.0f64).to_le_bytes(), // f_double = -0.0: visited
        &[0x15],
        &0.0f32.to_le_bytes(), // f_float = +0.0: not
        &[0x18, 0x00],         // f_int32 = 0: not
        &[0x68, 0x00],         // f_bool = false: not
        &[0xb5, 0x01],         // o_float (22, fixed32) = +0.0, explicit presence: visited
        &0.0f32.to_le_bytes(),
        &[0xb8, 0x01, 0x00], // o_int32 (23) = 0, explicit presence: visited
    ]
    .concat();
    let want = vec![("f_double".to_owned(), (-0.0f64).to_bits()), ("o_float".to_owned(), 0), ("o_int32".to_owned(), 0)];
    // The other way round for the two widths: f_double = +0.0 (not), f_float = -0.0.
    let swapped = [&[0x09][..], &0.0f64.to_le_bytes(), &[0x15], &(-0.0f32).to_le_bytes()].concat();
    let want_swapped = vec![("f_float".to_owned(), u64::from((-0.0f32).to_bits()))];
    for engine in common::ENGINES {
        let decoder = schema
            .decoder_with_options("everything3.Everything3", &EngineOptions::default().with_kind(engine))
            .unwrap();
        for (bytes, want) in [(&record, &want), (&swapped, &want_swapped)] {
            let arena = Arena::new();
            let m = decoder.decode(bytes, &arena).unwrap();
            let mut seen = Seen::default();
            m.visit(&mut seen);
            assert_eq!(&seen.0, want, "{engine:?}");
            let by_fields: Vec<String> = m.fields().map(|(d, _)| d.name().to_owned()).collect();
            let by_visit: Vec<String> = seen.0.iter().map(|(n, _)| n.clone()).collect();
            assert_eq!(by_fields, by_visit, "{engine:?}");
        }
    }
}
