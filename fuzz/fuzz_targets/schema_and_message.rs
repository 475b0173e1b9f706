//! Fuzz target, structure-aware: a random schema (proto2 or proto3: scalars of every kind,
//! enums, nested and recursive messages, groups, maps, oneofs, repeated packed and not),
//! random valid messages of it (encoded by prost-reflect) and mutated ones; JIT,
//! interpreter and prost-reflect must agree.
//!
//! - JIT and interpreter: the same tree (text format) or the same error, always.
//! - prost-reflect: the same accept/reject, and on accept the same message (`to_dynamic`),
//!   except where protojit documents a difference: a known field with the wrong wire type
//!   (protojit keeps it as an unknown field, prost-reflect rejects), invalid UTF-8 in a
//!   proto2 string (accepted by protojit), a 10-byte varint whose last byte is over 1
//!   (accepted by protojit); trees are not compared when a closed enum got an undeclared
//!   value (protojit moves it to the unknown fields, so repeated values reorder).
#![no_main]

mod common;

use std::collections::{BTreeSet, HashMap};

use arbitrary::{Result, Unstructured};
use common::seeds::{field, message, MAX_FIELD, SCALARS};
use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MapKey, MessageDescriptor, ReflectMessage as _, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldOptions, FileDescriptorProto,
    FileDescriptorSet, MessageOptions, OneofDescriptorProto,
};
use protojit::{Arena, EngineKind, EngineOptions, Schema};

/// Enum values a generated enum may declare (0 always comes first: proto3 needs it, and a
/// proto2 enum used as a map value too).
const ENUM_VALUES: [i32; 6] = [1, 2, -1, 1000, i32::MAX, i32::MIN];
/// Field numbers beyond the small ones, at tag-length boundaries.
const BIG_NUMBERS: [i32; 7] = [2047, 2048, 16_383, 16_384, 100_000, 1 << 21, MAX_FIELD];
/// Map key types protobuf allows.
const KEY_TYPES: [Type; 12] = [
    Type::Int32,
    Type::Int64,
    Type::Uint32,
    Type::Uint64,
    Type::Sint32,
    Type::Sint64,
    Type::Fixed32,
    Type::Fixed64,
    Type::Sfixed32,
    Type::Sfixed64,
    Type::Bool,
    Type::String,
];

fn is_packable(t: Type) -> bool {
    !matches!(t, Type::String | Type::Bytes | Type::Message | Type::Group)
}

/// A random field type: a scalar, the enum, or a message of the file.
fn value_type(u: &mut Unstructured<'_>, messages: usize) -> Result<(Type, Option<String>)> {
    Ok(match u.int_in_range(0..=9)? {
        0..=5 => (*u.choose(&SCALARS)?, None),
        6 | 7 => (Type::Enum, Some(".g.E".into())),
        _ => (Type::Message, Some(format!(".g.M{}", u.int_in_range(0..=messages - 1)?))),
    })
}

/// A random message type `M{index}` of a file with `messages` top-level types.
fn gen_message(u: &mut Unstructured<'_>, index: usize, messages: usize, proto2: bool) -> Result<DescriptorProto> {
    let mut m = message(&format!("M{index}"), vec![]);
    let mut numbers = BTreeSet::new();
    let mut has_oneof = false;
    for j in 0..u.int_in_range(0..=10)? {
        let number = if u.ratio(1, 8)? { *u.choose(&BIG_NUMBERS)? } else { u.int_in_range(1..=24)? };
        if !numbers.insert(number) {
            continue;
        }
        let name = format!("f{j}");
        let repeated = u.ratio(1, 3)?;
        let label = if repeated { Label::Repeated } else { Label::Optional };
        let mut f = match u.int_in_range(0..=9)? {
            // A group (proto2): its type is nested, named like the field capitalised.
            0 if proto2 => {
                let group_name = format!("G{j}");
                let mut g = message(&group_name, vec![]);
                for k in 0..u.int_in_range(0..=3)? {
                    let (t, tn) = value_type(u, messages)?;
                    let l = if u.ratio(1, 3)? { Label::Repeated } else { Label::Optional };
                    g.field.push(field(&format!("x{k}"), k + 1, l, t, tn.as_deref()));
                }
                m.nested_type.push(g);
                field(&format!("g{j}"), number, label, Type::Group, Some(&format!(".g.M{index}.{group_name}")))
            }
            // A map: a nested entry type named after the field.
            1 => {
                let entry_name = format!("F{j}Entry");
                let key = *u.choose(&KEY_TYPES)?;
                let (vt, vtn) = value_type(u, messages)?;
                let mut entry = message(
                    &entry_name,
                    vec![
                        field("key", 1, Label::Optional, key, None),
                        field("value", 2, Label::Optional, vt, vtn.as_deref()),
                    ],
                );
                entry.options = Some(MessageOptions { map_entry: Some(true), ..Default::default() });
                m.nested_type.push(entry);
                field(&name, number, Label::Repeated, Type::Message, Some(&format!(".g.M{index}.{entry_name}")))
            }
            _ => {
                let (t, tn) = value_type(u, messages)?;
                let mut f = field(&name, number, label, t, tn.as_deref());
                if repeated && is_packable(t) && u.arbitrary()? {
                    // proto2 packs on request; proto3 packs by default and unpacks on request.
                    f.options = Some(FieldOptions { packed: Some(proto2), ..Default::default() });
                }
                if !repeated && u.ratio(1, 4)? {
                    f.oneof_index = Some(0);
                    has_oneof = true;
                }
                f
            }
        };
        f.json_name = None;
        m.field.push(f);
    }
    if has_oneof {
        m.oneof_decl.push(OneofDescriptorProto { name: Some("o".into()), options: None });
    }
    Ok(m)
}

fn gen_file(u: &mut Unstructured<'_>) -> Result<(FileDescriptorProto, bool)> {
    let proto2 = u.arbitrary()?;
    let messages = u.int_in_range(1..=4)?;
    let mut types = Vec::new();
    for i in 0..messages {
        types.push(gen_message(u, i, messages, proto2)?);
    }
    let mut file = common::seeds::file("g.proto", "g", if proto2 { "proto2" } else { "proto3" }, types);
    let mut values = vec![EnumValueDescriptorProto { name: Some("E0".into()), number: Some(0), options: None }];
    for (i, &v) in ENUM_VALUES.iter().enumerate() {
        if u.arbitrary()? {
            values.push(EnumValueDescriptorProto { name: Some(format!("E{}", i + 1)), number: Some(v), options: None });
        }
    }
    file.enum_type.push(EnumDescriptorProto { name: Some("E".into()), value: values, ..Default::default() });
    Ok((file, proto2))
}

fn gen_scalar(u: &mut Unstructured<'_>, kind: &Kind, depth: u32) -> Result<Option<Value>> {
    Ok(Some(match kind {
        // NaN never equals itself; the comparison would fail for no fault.
        Kind::Double => Value::F64(Some(u.arbitrary::<f64>()?).filter(|v| !v.is_nan()).unwrap_or(0.5)),
        Kind::Float => Value::F32(Some(u.arbitrary::<f32>()?).filter(|v| !v.is_nan()).unwrap_or(0.5)),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(u.arbitrary()?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(u.arbitrary()?),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(u.arbitrary()?),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(u.arbitrary()?),
        Kind::Bool => Value::Bool(u.arbitrary()?),
        Kind::String => Value::String(u.arbitrary()?),
        Kind::Bytes => Value::Bytes(u.arbitrary::<Vec<u8>>()?.into()),
        Kind::Enum(e) => {
            let declared: Vec<i32> = e.values().map(|v| v.number()).collect();
            Value::EnumNumber(*u.choose(&declared)?)
        }
        Kind::Message(m) => {
            if depth >= 4 {
                return Ok(None);
            }
            Value::Message(gen_dynamic(u, m, depth + 1)?)
        }
    }))
}

fn gen_key(u: &mut Unstructured<'_>, kind: &Kind) -> Result<MapKey> {
    Ok(match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => MapKey::I32(u.arbitrary()?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => MapKey::I64(u.arbitrary()?),
        Kind::Uint32 | Kind::Fixed32 => MapKey::U32(u.arbitrary()?),
        Kind::Uint64 | Kind::Fixed64 => MapKey::U64(u.arbitrary()?),
        Kind::Bool => MapKey::Bool(u.arbitrary()?),
        _ => MapKey::String(u.arbitrary()?),
    })
}

/// A random message of type `desc`, at most 4 levels deep.
fn gen_dynamic(u: &mut Unstructured<'_>, desc: &MessageDescriptor, depth: u32) -> Result<DynamicMessage> {
    let mut dm = DynamicMessage::new(desc.clone());
    for f in desc.fields() {
        if !u.ratio(1, 2)? {
            continue;
        }
        let value = if f.is_map() {
            let Kind::Message(entry) = f.kind() else { unreachable!() };
            let mut map = HashMap::new();
            for _ in 0..u.int_in_range(0..=3)? {
                let key = gen_key(u, &entry.map_entry_key_field().kind())?;
                if let Some(v) = gen_scalar(u, &entry.map_entry_value_field().kind(), depth)? {
                    map.insert(key, v);
                }
            }
            Value::Map(map)
        } else if f.is_list() {
            let mut list = Vec::new();
            for _ in 0..u.int_in_range(0..=4)? {
                if let Some(v) = gen_scalar(u, &f.kind(), depth)? {
                    list.push(v);
                }
            }
            Value::List(list)
        } else {
            match gen_scalar(u, &f.kind(), depth)? {
                Some(v) => v,
                None => continue,
            }
        };
        dm.set_field(&f, value);
    }
    Ok(dm)
}

/// Constructs in an input where protojit and prost-reflect are documented to differ.
#[derive(Default, Debug)]
struct Differences {
    /// A known field with a wire type its kind does not take.
    wrong_wire_type: bool,
    /// A proto2 `string` that is not UTF-8.
    proto2_bad_utf8: bool,
    /// A 10-byte varint whose last byte is over 1.
    overlong_varint: bool,
    /// An undeclared value of a closed (proto2) enum.
    closed_enum_unknown: bool,
}

impl Differences {
    /// Accept/reject may differ.
    fn acceptance(&self) -> bool {
        self.wrong_wire_type || self.proto2_bad_utf8 || self.overlong_varint
    }
}

fn varint(b: &[u8], pos: usize, d: &mut Differences) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(pos + i)?;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            if i == 9 && byte > 1 {
                d.overlong_varint = true;
            }
            return Some((v, pos + i + 1));
        }
    }
    None
}

/// Walks `b[pos..end]` as fields of `desc` (`None`: unknown fields only), noting
/// [`Differences`]. Returns where it stopped and, if it stopped at an end-group tag, that
/// tag's field number. `None` when the input is malformed (both decoders must then reject,
/// up to the differences noted before the fault).
fn scan(
    desc: Option<&MessageDescriptor>,
    b: &[u8],
    mut pos: usize,
    end: usize,
    depth: u32,
    d: &mut Differences,
    features: &protojit_arena::PoolFeatures,
) -> Option<(usize, Option<u64>)> {
    if depth > 64 {
        return None;
    }
    while pos < end {
        let (key, next) = varint(&b[..end], pos, d)?;
        pos = next;
        let (number, wt) = (key >> 3, key & 7);
        let f = desc.and_then(|m| u32::try_from(number).ok().and_then(|n| m.get_field(n)));
        let kind = f.as_ref().map(|f| f.kind());
        let closed_enum = |v: u64, kind: &Kind, d: &mut Differences| {
            if let Kind::Enum(e) = kind {
                // Closedness is the enum's resolved `enum_type` feature, not a file's syntax.
                if features.is_closed(e) && e.get_value(v as i32).is_none() {
                    d.closed_enum_unknown = true;
                }
            }
        };
        match wt {
            0 => {
                let (v, next) = varint(&b[..end], pos, d)?;
                pos = next;
                match &kind {
                    Some(
                        k @ (Kind::Int32
                        | Kind::Int64
                        | Kind::Uint32
                        | Kind::Uint64
                        | Kind::Sint32
                        | Kind::Sint64
                        | Kind::Bool
                        | Kind::Enum(_)),
                    ) => closed_enum(v, k, d),
                    Some(_) => d.wrong_wire_type = true,
                    None => {}
                }
            }
            1 | 5 => {
                let width = if wt == 1 { 8 } else { 4 };
                if end - pos < width {
                    return None;
                }
                pos += width;
                let ok = match &kind {
                    Some(Kind::Double | Kind::Fixed64 | Kind::Sfixed64) => wt == 1,
                    Some(Kind::Float | Kind::Fixed32 | Kind::Sfixed32) => wt == 5,
                    Some(_) => false,
                    None => true,
                };
                d.wrong_wire_type |= !ok;
            }
            2 => {
                let (len, next) = varint(&b[..end], pos, d)?;
                if len > (end - next) as u64 {
                    return None;
                }
                let (start, stop) = (next, next + len as usize);
                pos = stop;
                let Some(f) = &f else { continue };
                match f.kind() {
                    Kind::String => {
                        // A string its features do not VERIFY (proto2's) may hold any bytes.
                        let unchecked = features.field(f).is_some_and(|ff| !ff.validate_utf8);
                        if unchecked && std::str::from_utf8(&b[start..stop]).is_err() {
                            d.proto2_bad_utf8 = true;
                        }
                    }
                    Kind::Bytes => {}
                    Kind::Message(m) if !f.is_group() => {
                        let (_, end_group) = scan(Some(&m), b, start, stop, depth + 1, d, features)?;
                        if end_group.is_some() {
                            return None;
                        }
                    }
                    k if f.is_list() && !f.is_group() => {
                        // A packed run.
                        let mut p = start;
                        while p < stop {
                            p = match k {
                                Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => p + 8,
                                Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => p + 4,
                                _ => {
                                    let (v, next) = varint(&b[..stop], p, d)?;
                                    closed_enum(v, &k, d);
                                    next
                                }
                            };
                        }
                        if p != stop {
                            return None;
                        }
                    }
                    _ => d.wrong_wire_type = true,
                }
            }
            3 => {
                let child = match &f {
                    Some(f) if f.is_group() => match f.kind() {
                        Kind::Message(m) => Some(m),
                        _ => None,
                    },
                    Some(_) => {
                        d.wrong_wire_type = true;
                        None
                    }
                    None => None,
                };
                let (next, end_group) = scan(child.as_ref(), b, pos, end, depth + 1, d, features)?;
                if end_group != Some(number) {
                    return None;
                }
                pos = next;
            }
            4 => return Some((pos, Some(number))),
            _ => return None,
        }
    }
    Some((pos, None))
}

/// `dm` with every NaN replaced by one fixed number, so that messages compare with `==`
/// (NaN never equals itself; mutated inputs make them).
fn without_nan(mut dm: DynamicMessage) -> DynamicMessage {
    fn fix(v: &mut Value) {
        match v {
            Value::F32(x) if x.is_nan() => *x = 1234.5,
            Value::F64(x) if x.is_nan() => *x = 1234.5,
            Value::List(items) => items.iter_mut().for_each(fix),
            Value::Map(map) => map.values_mut().for_each(fix),
            Value::Message(m) => *m = without_nan(std::mem::replace(m, DynamicMessage::new(m.descriptor()))),
            _ => {}
        }
    }
    for (_, v) in dm.fields_mut() {
        fix(v);
    }
    dm
}

/// Applies a few random mutations to `bytes`.
fn mutate(u: &mut Unstructured<'_>, bytes: &mut Vec<u8>) -> Result<()> {
    for _ in 0..u.int_in_range(1..=4)? {
        let len = bytes.len();
        match u.int_in_range(0..=4)? {
            0 if len > 0 => {
                let i = u.int_in_range(0..=len - 1)?;
                bytes[i] = u.arbitrary()?;
            }
            1 => {
                let i = u.int_in_range(0..=len)?;
                bytes.insert(i, u.arbitrary()?);
            }
            2 if len > 0 => {
                let i = u.int_in_range(0..=len - 1)?;
                let n = u.int_in_range(1..=(len - i).min(8))?;
                bytes.drain(i..i + n);
            }
            3 => bytes.truncate(u.int_in_range(0..=len)?),
            _ if len > 0 => {
                let i = u.int_in_range(0..=len - 1)?;
                bytes[i] ^= 1 << u.int_in_range(0..=7)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let (file, _proto2) = gen_file(&mut u)?;
    let set = FileDescriptorSet { file: vec![file] };
    // Generated files are meant to be valid; any the pool rejects is the generator's slip.
    let Ok(pool) = DescriptorPool::from_file_descriptor_set(set.clone()) else { return Ok(()) };
    let schema = Schema::from_pool(&pool).expect("a valid pool loads");
    // The same set through the serialized path, as tools load it.
    Schema::from_descriptor_set(&set.encode_to_vec()).expect("a valid set loads");
    let root = pool.get_message_by_name("g.M0").unwrap();
    let options = EngineOptions::default();
    let jit = schema.decoder_with_options("g.M0", &options.clone().with_kind(EngineKind::Jit)).unwrap();
    let interp = schema.decoder_with_options("g.M0", &options.with_kind(EngineKind::Interpreter)).unwrap();
    assert_eq!(jit.stats().interpreted(), 0, "generated types must compile");

    // Several messages per schema: compiling the schema costs far more than a decode.
    for round in 0..u.int_in_range(1..=12)? {
        let dm = gen_dynamic(&mut u, &root, 0)?;
        let mut bytes = dm.encode_to_vec();
        let mutated = round > 0 || u.arbitrary()?;
        if mutated {
            mutate(&mut u, &mut bytes)?;
        }
        let (arena_a, arena_b) = (Arena::new(), Arena::new());
        let a = jit.decode(&bytes, &arena_a);
        let b = interp.decode(&bytes, &arena_b);
        match (&a, &b) {
            (Ok(a), Ok(b)) => assert_eq!(a.to_text_format(), b.to_text_format(), "jit and interpreter trees differ"),
            (Err(a), Err(b)) => assert_eq!(a, b, "jit and interpreter errors differ"),
            (a, b) => panic!("jit {:?} vs interpreter {:?}", a.as_ref().err(), b.as_ref().err()),
        }
        let reference = DynamicMessage::decode(root.clone(), bytes.as_slice());
        let mut diff = Differences::default();
        let features = schema.layouts().features();
        let well_formed = matches!(scan(Some(&root), &bytes, 0, bytes.len(), 0, &mut diff, features), Some((_, None)));
        if !mutated {
            let tree = a.as_ref().expect("prost-reflect's encoding decodes");
            assert_eq!(tree.to_dynamic(), reference.expect("prost-reflect decodes its own encoding"));
            // protojit's re-encoding reads back as the same message (its bytes may differ:
            // map entries keep a default key and value, which prost leaves out).
            let again = DynamicMessage::decode(root.clone(), tree.encode_to_vec().as_slice());
            assert_eq!(
                again.expect("protojit's encoding decodes"),
                tree.to_dynamic(),
                "re-encoding changes the message"
            );
            continue;
        }
        if diff.acceptance() {
            continue;
        }
        match (&a, &reference) {
            (Ok(tree), Ok(reference)) => {
                if !diff.closed_enum_unknown {
                    assert_eq!(
                        without_nan(tree.to_dynamic()),
                        without_nan(reference.clone()),
                        "protojit and prost-reflect decode differently"
                    );
                }
            }
            (Err(_), Err(_)) => {}
            (a, r) => panic!(
                "protojit {:?} vs prost-reflect {:?} (well formed: {well_formed}, {diff:?})",
                a.as_ref().err(),
                r.as_ref().err()
            ),
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
