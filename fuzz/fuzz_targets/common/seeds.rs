//! Hostile but valid (or nearly valid) `FileDescriptorSet`s: the seeds `schema_load` mutates.
#![allow(dead_code)]

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    FileDescriptorSet, MessageOptions, OneofDescriptorProto,
};

/// The largest field number protobuf allows (2^29 - 1).
pub const MAX_FIELD: i32 = (1 << 29) - 1;

pub fn field(name: &str, number: i32, label: Label, ty: Type, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(Into::into),
        json_name: None,
        ..Default::default()
    }
}

pub fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto { name: Some(name.into()), field: fields, ..Default::default() }
}

pub fn file(name: &str, package: &str, syntax: &str, messages: Vec<DescriptorProto>) -> FileDescriptorProto {
    FileDescriptorProto {
        name: Some(name.into()),
        package: Some(package.into()),
        syntax: Some(syntax.into()),
        message_type: messages,
        ..Default::default()
    }
}

fn set(files: Vec<FileDescriptorProto>) -> Vec<u8> {
    FileDescriptorSet { file: files }.encode_to_vec()
}

/// Every scalar type, for fields that cycle through them.
pub const SCALARS: [Type; 15] = [
    Type::Double,
    Type::Float,
    Type::Int64,
    Type::Uint64,
    Type::Int32,
    Type::Fixed64,
    Type::Fixed32,
    Type::Bool,
    Type::String,
    Type::Bytes,
    Type::Uint32,
    Type::Sfixed32,
    Type::Sfixed64,
    Type::Sint32,
    Type::Sint64,
];

/// Self-recursive and mutually recursive types, through singular, repeated, map, oneof and
/// group fields (proto2).
fn recursive() -> Vec<u8> {
    use Label::*;
    let mut a = message(
        "A",
        vec![
            field("a", 1, Optional, Type::Message, Some(".rec.A")),
            field("r", 2, Repeated, Type::Message, Some(".rec.A")),
            field("b", 3, Optional, Type::Message, Some(".rec.B")),
            field("x", 4, Optional, Type::Int32, None),
            field("m", 5, Repeated, Type::Message, Some(".rec.A.MEntry")),
            field("g", 6, Optional, Type::Group, Some(".rec.A.G")),
            field("oa", 7, Optional, Type::Message, Some(".rec.A")),
            field("os", 8, Optional, Type::String, None),
        ],
    );
    a.field[6].oneof_index = Some(0);
    a.field[7].oneof_index = Some(0);
    a.oneof_decl.push(OneofDescriptorProto { name: Some("o".into()), options: None });
    let mut entry = message(
        "MEntry",
        vec![field("key", 1, Optional, Type::String, None), field("value", 2, Optional, Type::Message, Some(".rec.B"))],
    );
    entry.options = Some(MessageOptions { map_entry: Some(true), ..Default::default() });
    a.nested_type.push(entry);
    a.nested_type.push(message("G", vec![field("back", 1, Optional, Type::Message, Some(".rec.A"))]));
    let b = message(
        "B",
        vec![field("c", 1, Optional, Type::Message, Some(".rec.C")), field("y", 2, Repeated, Type::Sint64, None)],
    );
    let c = message(
        "C",
        vec![
            field("b", 1, Optional, Type::Message, Some(".rec.B")),
            field("a", 2, Repeated, Type::Message, Some(".rec.A")),
        ],
    );
    set(vec![file("rec.proto", "rec", "proto2", vec![a, b, c])])
}

/// Field numbers at every tag-length boundary up to 2^29 - 1, every scalar type, packed
/// and not (proto3).
fn big_numbers() -> Vec<u8> {
    let numbers =
        [1, 15, 16, 2047, 2048, 262_143, 262_144, 18_999, 20_000, 33_554_431, 33_554_432, MAX_FIELD - 1, MAX_FIELD];
    let mut fields = Vec::new();
    for (i, &n) in numbers.iter().enumerate() {
        let ty = SCALARS[i % SCALARS.len()];
        let label = if i % 2 == 0 { Label::Optional } else { Label::Repeated };
        fields.push(field(&format!("f{n}"), n, label, ty, None));
    }
    set(vec![file("big.proto", "big", "proto3", vec![message("Big", fields)])])
}

/// 5,000 fields in one message, cycling through the scalar types, every third repeated.
fn wide() -> Vec<u8> {
    let fields = (1..=5000)
        .map(|n| {
            let label = if n % 3 == 0 { Label::Repeated } else { Label::Optional };
            field(&format!("f{n}"), n, label, SCALARS[n as usize % SCALARS.len()], None)
        })
        .collect();
    set(vec![file("wide.proto", "wide", "proto2", vec![message("Wide", fields)])])
}

/// 200 levels of nested type declarations, each level holding a field of the next and one
/// of the outermost type (recursion across all 200 levels).
fn deep_nesting() -> Vec<u8> {
    const LEVELS: usize = 200;
    let mut path = String::from(".deep");
    let mut names = Vec::new();
    for i in 0..LEVELS {
        path.push_str(&format!(".N{i}"));
        names.push(path.clone());
    }
    let mut inner: Option<DescriptorProto> = None;
    for i in (0..LEVELS).rev() {
        let mut fields = vec![field("v", 1, Label::Optional, Type::Int32, None)];
        fields.push(field("top", 2, Label::Optional, Type::Message, Some(&names[0])));
        if i + 1 < LEVELS {
            fields.push(field("next", 3, Label::Optional, Type::Message, Some(&names[i + 1])));
        }
        let mut m = message(&format!("N{i}"), fields);
        if let Some(child) = inner.take() {
            m.nested_type.push(child);
        }
        inner = Some(m);
    }
    set(vec![file("deep.proto", "deep", "proto3", vec![inner.unwrap()])])
}

/// Names that collide: a message named like a package, a nested type named like its
/// parent, field names whose JSON names collide, an enum value named like a message, and
/// two files declaring the same package. Some of these a valid set may hold, some not.
fn collisions() -> Vec<u8> {
    use Label::*;
    let mut outer = message(
        "x",
        vec![field("foo_bar", 1, Optional, Type::Int32, None), field("x", 2, Optional, Type::Message, Some(".p.x.x"))],
    );
    outer.nested_type.push(message("x", vec![field("x", 1, Optional, Type::Message, Some(".p.x"))]));
    let mut f1 = file("a.proto", "p", "proto2", vec![outer]);
    f1.enum_type.push(EnumDescriptorProto {
        name: Some("E".into()),
        value: vec![
            EnumValueDescriptorProto { name: Some("y".into()), number: Some(0), options: None },
            EnumValueDescriptorProto { name: Some("Z".into()), number: Some(0), options: None },
        ],
        ..Default::default()
    });
    let f2 =
        file("b.proto", "p.y", "proto2", vec![message("y", vec![field("e", 1, Optional, Type::Enum, Some(".p.E"))])]);
    let mut f2 = f2;
    f2.dependency.push("a.proto".into());
    set(vec![f1, f2])
}

/// A message whose JSON names collide (`foo_bar` and `fooBar`) and a proto3 enum
/// without zero first: both rejected by protoc; either way, no panic.
fn json_collision() -> Vec<u8> {
    let m = message(
        "J",
        vec![
            field("foo_bar", 1, Label::Optional, Type::Int32, None),
            field("fooBar", 2, Label::Optional, Type::String, None),
        ],
    );
    let mut f = file("j.proto", "j", "proto3", vec![m]);
    f.enum_type.push(EnumDescriptorProto {
        name: Some("E".into()),
        value: vec![EnumValueDescriptorProto { name: Some("E_ONE".into()), number: Some(1), options: None }],
        ..Default::default()
    });
    set(vec![f])
}

/// Every kind of field in proto3, maps and oneofs of each, for mutations to reshape.
fn kinds() -> Vec<u8> {
    use Label::*;
    let mut fields: Vec<_> =
        SCALARS.iter().enumerate().map(|(i, &t)| field(&format!("s{i}"), i as i32 + 1, Optional, t, None)).collect();
    fields.extend(SCALARS.iter().enumerate().map(|(i, &t)| field(&format!("r{i}"), i as i32 + 20, Repeated, t, None)));
    let mut oneof: Vec<_> =
        SCALARS.iter().enumerate().map(|(i, &t)| field(&format!("o{i}"), i as i32 + 40, Optional, t, None)).collect();
    for f in &mut oneof {
        f.oneof_index = Some(0);
    }
    fields.extend(oneof);
    fields.push(field("child", 60, Optional, Type::Message, Some(".k.K")));
    fields.push(field("e", 61, Optional, Type::Enum, Some(".k.E")));
    fields.push(field("m", 62, Repeated, Type::Message, Some(".k.K.MEntry")));
    let mut k = message("K", fields);
    k.oneof_decl.push(OneofDescriptorProto { name: Some("o".into()), options: None });
    let mut entry = message(
        "MEntry",
        vec![field("key", 1, Optional, Type::Int64, None), field("value", 2, Optional, Type::Message, Some(".k.K"))],
    );
    entry.options = Some(MessageOptions { map_entry: Some(true), ..Default::default() });
    k.nested_type.push(entry);
    let mut f = file("k.proto", "k", "proto3", vec![k]);
    f.enum_type.push(EnumDescriptorProto {
        name: Some("E".into()),
        value: vec![
            EnumValueDescriptorProto { name: Some("E_ZERO".into()), number: Some(0), options: None },
            EnumValueDescriptorProto { name: Some("E_NEG".into()), number: Some(-1), options: None },
        ],
        ..Default::default()
    });
    set(vec![f])
}

/// The seed sets, by name.
pub fn seed_sets() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("recursive", recursive()),
        ("big_numbers", big_numbers()),
        ("wide_5000", wide()),
        ("nested_200", deep_nesting()),
        ("collisions", collisions()),
        ("json_collision", json_collision()),
        ("kinds", kinds()),
    ]
}
