//! The read API's differential check: `fields()`, the visitor, typed handles and typed slices each dump a tree to the same lines.

use protojit::{field, Descend, EnumValue, Field, FieldInfo, MessageRef, Value, Visitor};
use protojit_arena::{FieldKind, Repetition, SlotIndex};

fn line(n: u32, v: String) -> String {
    format!("{n}={v}")
}

fn scalar(v: &Value<'_>) -> String {
    match v {
        Value::Bool(x) => format!("b:{x}"),
        Value::I32(x) => format!("i32:{x}"),
        Value::I64(x) => format!("i64:{x}"),
        Value::U32(x) => format!("u32:{x}"),
        Value::U64(x) => format!("u64:{x}"),
        Value::F32(x) => format!("f32:{:#x}", x.to_bits()),
        Value::F64(x) => format!("f64:{:#x}", x.to_bits()),
        Value::String(s) => format!("s:{s:?}"),
        Value::Bytes(b) => format!("y:{b:?}"),
        Value::Enum(e) => enum_text(e),
        Value::Message(_) | Value::List(_) | Value::Map(_) => unreachable!("not a scalar"),
    }
}

fn enum_text(e: &EnumValue<'_>) -> String {
    format!("e:{}:{:?}", e.number, e.name())
}

/// The dump through `fields()` and `Value`s.
pub fn dump_fields(m: &MessageRef<'_>, out: &mut Vec<String>) {
    for (d, v) in m.fields() {
        let n = d.number();
        match v {
            Value::List(l) => {
                for v in l.iter() {
                    value_line(n, &v, out);
                }
            }
            Value::Map(map) => {
                for e in map.index().entries() {
                    out.push(format!("{n}{{"));
                    dump_entry(&e, out);
                    out.push("}".into());
                }
            }
            v => value_line(n, &v, out),
        }
    }
    for u in m.unknown_fields() {
        out.push(format!("?{u:?}"));
    }
}

/// A map entry: its key and value always (defaults when absent), as the visitor walks it.
fn dump_entry(e: &MessageRef<'_>, out: &mut Vec<String>) {
    for (i, slot) in e.layout().slots().iter().enumerate() {
        value_line(slot.number, &e.value(SlotIndex::new(i as u32)), out);
    }
    for u in e.unknown_fields() {
        out.push(format!("?{u:?}"));
    }
}

fn value_line(n: u32, v: &Value<'_>, out: &mut Vec<String>) {
    match v {
        Value::Message(c) => {
            out.push(format!("{n}{{"));
            dump_fields(c, out);
            out.push("}".into());
        }
        v => out.push(line(n, scalar(v))),
    }
}

/// The dump through the visitor (default map walk: one entry message per key).
pub struct Dump(pub Vec<String>);

impl<'a> Visitor<'a> for Dump {
    fn bool(&mut self, f: FieldInfo<'a>, v: bool) {
        self.0.push(line(f.number(), format!("b:{v}")))
    }
    fn i32(&mut self, f: FieldInfo<'a>, v: i32) {
        self.0.push(line(f.number(), format!("i32:{v}")))
    }
    fn i64(&mut self, f: FieldInfo<'a>, v: i64) {
        self.0.push(line(f.number(), format!("i64:{v}")))
    }
    fn u32(&mut self, f: FieldInfo<'a>, v: u32) {
        self.0.push(line(f.number(), format!("u32:{v}")))
    }
    fn u64(&mut self, f: FieldInfo<'a>, v: u64) {
        self.0.push(line(f.number(), format!("u64:{v}")))
    }
    fn f32(&mut self, f: FieldInfo<'a>, v: f32) {
        self.0.push(line(f.number(), format!("f32:{:#x}", v.to_bits())))
    }
    fn f64(&mut self, f: FieldInfo<'a>, v: f64) {
        self.0.push(line(f.number(), format!("f64:{:#x}", v.to_bits())))
    }
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) {
        self.0.push(line(f.number(), format!("s:{v:?}")))
    }
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) {
        self.0.push(line(f.number(), format!("y:{v:?}")))
    }
    fn enum_value(&mut self, f: FieldInfo<'a>, v: EnumValue<'a>) {
        self.0.push(line(f.number(), enum_text(&v)))
    }
    fn message(&mut self, f: FieldInfo<'a>, _: MessageRef<'a>) -> Descend {
        self.0.push(format!("{}{{", f.number()));
        Descend::Yes
    }
    fn end_message(&mut self, _: FieldInfo<'a>, _: MessageRef<'a>) {
        self.0.push("}".into());
    }
    fn unknown(&mut self, span: &'a [u8]) {
        self.0.push(format!("?{span:?}"));
    }
}

/// The dump through typed handles (resolved per slot as `#number`) and typed slices;
/// checks on the way that `get` agrees with `MessageRef::value` (defaults included) and
/// that `ListRef::as_slice` agrees with the handle's slice.
pub fn dump_handles(m: &MessageRef<'_>, out: &mut Vec<String>) {
    let layout = m.layout();
    for (i, slot) in layout.slots().iter().enumerate() {
        let si = SlotIndex::new(i as u32);
        let n = slot.number;
        let path = format!("#{n}");
        let value = m.value(si);
        macro_rules! single {
            ($t:ty, $wrap:ident) => {{
                let h = Field::<$t>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                assert_eq!(scalar(&Value::$wrap(h.get(m).unwrap())), scalar(&value), "get #{n}");
                if let Some(v) = h.present(m) {
                    out.push(line(n, scalar(&Value::$wrap(v))));
                }
                assert_eq!(h.has(m), m.is_present(si), "has #{n}");
            }};
        }
        macro_rules! list {
            ($t:ty, $wrap:ident) => {{
                let h = Field::<field::List<$t>>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                let s = h.get(m).unwrap();
                // The same memory (values may be NaN, which no comparison would accept).
                let via_list = value.as_list().unwrap().as_slice::<$t>().unwrap();
                assert!(std::ptr::eq(s, via_list), "slice #{n}");
                for &v in s {
                    out.push(line(n, scalar(&Value::$wrap(v))));
                }
            }};
        }
        match (slot.repetition, slot.kind) {
            (Repetition::Singular, FieldKind::Bool) => single!(bool, Bool),
            (Repetition::Singular, FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32) => single!(i32, I32),
            (Repetition::Singular, FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64) => single!(i64, I64),
            (Repetition::Singular, FieldKind::Uint32 | FieldKind::Fixed32) => single!(u32, U32),
            (Repetition::Singular, FieldKind::Uint64 | FieldKind::Fixed64) => single!(u64, U64),
            (Repetition::Singular, FieldKind::Float) => single!(f32, F32),
            (Repetition::Singular, FieldKind::Double) => single!(f64, F64),
            (Repetition::Singular, FieldKind::Enum) => {
                let h = Field::<field::Enum>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                assert_eq!(enum_text(&h.get_value(m).unwrap()), scalar(&value), "get #{n}");
                if let Some(v) = h.present(m) {
                    assert_eq!(h.get_value(m).unwrap().number, v);
                    out.push(line(n, enum_text(&h.get_value(m).unwrap())));
                }
            }
            (Repetition::Singular, FieldKind::String | FieldKind::Bytes) => {
                let h = Field::<field::Bytes>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                let text = |b: &[u8]| match (slot.kind, std::str::from_utf8(b)) {
                    (FieldKind::String, Ok(s)) => format!("s:{s:?}"),
                    _ => format!("y:{b:?}"),
                };
                assert_eq!(text(h.get(m).unwrap()), scalar(&value), "get #{n}");
                if slot.kind == FieldKind::String {
                    let s = Field::<field::Str>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                    assert_eq!(s.get(m), value.as_str(), "str #{n}");
                }
                if let Some(b) = h.present(m) {
                    out.push(line(n, text(b)));
                }
            }
            (Repetition::Singular, _) => {
                let h = Field::<field::Message>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                assert_eq!(h.get(m).unwrap().block().as_ptr(), value.as_message().unwrap().block().as_ptr());
                if let Some(c) = h.present(m) {
                    out.push(format!("{n}{{"));
                    dump_handles(&c, out);
                    out.push("}".into());
                }
            }
            (Repetition::Repeated, FieldKind::Bool) => list!(bool, Bool),
            (Repetition::Repeated, FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32) => list!(i32, I32),
            (Repetition::Repeated, FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64) => list!(i64, I64),
            (Repetition::Repeated, FieldKind::Uint32 | FieldKind::Fixed32) => list!(u32, U32),
            (Repetition::Repeated, FieldKind::Uint64 | FieldKind::Fixed64) => list!(u64, U64),
            (Repetition::Repeated, FieldKind::Float) => list!(f32, F32),
            (Repetition::Repeated, FieldKind::Double) => list!(f64, F64),
            (Repetition::Repeated, FieldKind::Enum) => {
                let h =
                    Field::<field::List<field::Enum>>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                let (numbers, ty) = value.as_list().unwrap().enum_numbers().unwrap();
                assert_eq!(h.get(m).unwrap(), numbers);
                assert_eq!(h.enum_type(), ty.descriptor());
                for &v in numbers {
                    out.push(line(n, enum_text(&EnumValue::new(v, ty.enum_type()))));
                }
            }
            (Repetition::Repeated, FieldKind::String | FieldKind::Bytes) => {
                let h = Field::<field::List<field::Bytes>>::resolve(m.layouts(), m.descriptor().full_name(), &path)
                    .unwrap();
                for b in h.get(m).unwrap() {
                    out.push(line(
                        n,
                        match (slot.kind, std::str::from_utf8(b)) {
                            (FieldKind::String, Ok(s)) => format!("s:{s:?}"),
                            _ => format!("y:{b:?}"),
                        },
                    ));
                }
                if slot.kind == FieldKind::String {
                    if let Some(strs) =
                        Field::<field::List<field::Str>>::resolve(m.layouts(), m.descriptor().full_name(), &path)
                            .unwrap()
                            .get(m)
                    {
                        let via_values: Vec<_> = value.as_list().unwrap().iter().map(|v| v.as_str()).collect();
                        assert_eq!(strs.map(Some).collect::<Vec<_>>(), via_values, "strs #{n}");
                    }
                }
            }
            (Repetition::Repeated, _) => {
                let h = Field::<field::List<field::Message>>::resolve(m.layouts(), m.descriptor().full_name(), &path)
                    .unwrap();
                assert_eq!(h.get(m).unwrap().len(), value.as_list().unwrap().len());
                for c in h.get(m).unwrap() {
                    out.push(format!("{n}{{"));
                    dump_handles(&c, out);
                    out.push("}".into());
                }
            }
            (Repetition::Map, _) => {
                let h = Field::<field::Map>::resolve(m.layouts(), m.descriptor().full_name(), &path).unwrap();
                let map = h.get(m).unwrap();
                let index = map.index();
                assert_eq!(index.len(), map.len(), "map len #{n}");
                for e in index.entries() {
                    // The entry's handles are checked (their asserts), and it is dumped as
                    // the other readers show an entry: key and value always.
                    dump_handles(&e, &mut Vec::new());
                    out.push(format!("{n}{{"));
                    dump_entry(&e, out);
                    out.push("}".into());
                }
            }
        }
    }
    for u in m.unknown_fields() {
        out.push(format!("?{u:?}"));
    }
}

/// Every reader's dump of `m`; panics (naming `what`) if two disagree. Returns the dump.
#[track_caller]
pub fn check_readers_agree(m: &MessageRef<'_>, what: &str) -> Vec<String> {
    let mut by_fields = Vec::new();
    dump_fields(m, &mut by_fields);
    let mut visitor = Dump(Vec::new());
    m.visit(&mut visitor);
    let mut by_handles = Vec::new();
    dump_handles(m, &mut by_handles);
    assert!(by_fields == visitor.0, "{what}: visitor and fields() differ:\n{:?}\nvs\n{:?}", visitor.0, by_fields);
    assert!(by_fields == by_handles, "{what}: handles and fields() differ:\n{:?}\nvs\n{:?}", by_handles, by_fields);
    by_fields
}
