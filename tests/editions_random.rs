//! Generated editions schemas (random features at file, message, enum and field level: presence, closed enums, packed and expanded, UTF-8, delimited) and generated wire records: the JIT and the interpreter agree on every tree and every error, and a tree re-encodes to bytes that decode to the same tree.

mod editions_support;

use editions_support::{editions_file, encode, fs, Enum, EnumOptions, EnumValue, FeatureSet, Field, FieldOptions, Msg};
use editions_support::{MessageOptions, OPTIONAL, REPEATED};
use protojit::{Arena, EngineKind, EngineOptions, Schema};

/// splitmix64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

// FieldDescriptorProto.Type
const SCALARS: [i32; 15] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 15, 16, 17, 18];
const STRING: i32 = 9;
const BYTES: i32 = 12;
const MESSAGE: i32 = 11;
const ENUM: i32 = 14;
const MESSAGES: usize = 3;

/// What the payload generator needs to know of a field.
#[derive(Clone, Copy)]
struct Shape {
    number: u32,
    ty: i32,
    repeated: bool,
    /// The message type's index, for message fields.
    child: usize,
    delimited: bool,
}

fn packable(ty: i32) -> bool {
    !matches!(ty, STRING | BYTES | MESSAGE)
}

/// A random edition 2023/2024 file: enum `g.E` (open or closed), messages `g.M0..M2` whose
/// fields set random features; returns the serialized set and every message's field shapes.
fn gen_schema(rng: &mut Rng) -> (Vec<u8>, Vec<Vec<Shape>>) {
    let edition = if rng.one_in(2) { 1000 } else { 1001 };
    let file_features = FeatureSet {
        field_presence: rng.one_in(3).then_some(2),          // IMPLICIT
        repeated_field_encoding: rng.one_in(3).then_some(2), // EXPANDED
        utf8_validation: rng.one_in(3).then_some(3),         // NONE
        message_encoding: rng.one_in(3).then_some(2),        // DELIMITED
        ..fs()
    };
    let mut file = editions_file("g.proto", "g", edition, Some(file_features.clone()));
    let closed = rng.one_in(2);
    file.enum_type.push(Enum {
        name: Some("E".into()),
        value: (0..3).map(|n| EnumValue { name: Some(format!("E{n}")), number: Some(n), options: None }).collect(),
        options: closed.then(|| EnumOptions { features: Some(FeatureSet { enum_type: Some(2), ..fs() }) }),
    });
    let mut shapes = Vec::new();
    for m in 0..MESSAGES {
        let mut fields = Vec::new();
        let mut own = Vec::new();
        let message_features = FeatureSet {
            field_presence: rng.one_in(4).then(|| 1 + rng.below(2)),
            repeated_field_encoding: rng.one_in(4).then(|| 1 + rng.below(2)),
            ..fs()
        };
        for number in 1..=(2 + rng.below(9) as u32) {
            let repeated = rng.one_in(3);
            let (ty, child) = match rng.below(10) {
                0 | 1 => (MESSAGE, rng.below(MESSAGES as u64) as usize),
                2 => (ENUM, 0),
                _ => (SCALARS[rng.below(SCALARS.len() as u64) as usize], 0),
            };
            let mut f = FeatureSet::default();
            let mut delimited = ty == MESSAGE && file_features.message_encoding.is_some();
            if ty == MESSAGE && rng.one_in(3) {
                delimited = rng.one_in(2);
                f.message_encoding = Some(if delimited { 2 } else { 1 });
            }
            if !repeated && ty != MESSAGE && rng.one_in(3) {
                // IMPLICIT is refused by protoc for closed enums: EXPLICIT or required there.
                let choices: &[u64] = if ty == ENUM && closed { &[1, 3] } else { &[1, 2, 3] };
                f.field_presence = Some(choices[rng.below(choices.len() as u64) as usize]);
            }
            if !repeated && ty == ENUM && closed && f.field_presence.is_none() {
                f.field_presence = Some(1);
            }
            if repeated && packable(ty) && rng.one_in(2) {
                f.repeated_field_encoding = Some(1 + rng.below(2));
            }
            if ty == STRING && rng.one_in(2) {
                f.utf8_validation = Some(if rng.one_in(2) { 2 } else { 3 });
            }
            let type_name = match ty {
                MESSAGE => Some(format!(".g.M{child}")),
                ENUM => Some(".g.E".to_owned()),
                _ => None,
            };
            fields.push(Field {
                name: Some(format!("f{number}")),
                number: Some(number as i32),
                label: Some(if repeated { REPEATED } else { OPTIONAL }),
                r#type: Some(ty),
                type_name,
                options: (f != FeatureSet::default()).then(|| FieldOptions { features: Some(f), ..Default::default() }),
                ..Default::default()
            });
            own.push(Shape { number, ty, repeated, child, delimited });
        }
        file.message_type.push(Msg {
            name: Some(format!("M{m}")),
            field: fields,
            options: (message_features != FeatureSet::default())
                .then_some(MessageOptions { map_entry: None, features: Some(message_features) }),
            ..Default::default()
        });
        shapes.push(own);
    }
    (encode(vec![file]), shapes)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, number: u32, wt: u64) {
    put_varint(out, (u64::from(number) << 3) | wt);
}

/// One value of `ty` in its own wire form (not its tag).
fn put_value(rng: &mut Rng, out: &mut Vec<u8>, ty: i32) {
    match ty {
        1 | 6 | 16 => out.extend_from_slice(&rng.next().to_le_bytes()),
        2 | 7 | 15 => out.extend_from_slice(&(rng.next() as u32).to_le_bytes()),
        STRING | BYTES => {
            let len = rng.below(6) as usize;
            let mut s: Vec<u8> = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
            if rng.one_in(8) {
                s.push(0xff); // not UTF-8
            }
            put_varint(out, s.len() as u64);
            out.extend_from_slice(&s);
        }
        ENUM => put_varint(out, (rng.below(6) as i64 - 1) as u64),
        8 => put_varint(out, rng.below(3)),
        _ => put_varint(out, if rng.one_in(2) { rng.below(300) } else { rng.next() >> rng.below(64) }),
    }
}

const WIRE: [u64; 7] = [0, 1, 2, 3, 4, 5, 2];

fn wire_type(ty: i32) -> u64 {
    match ty {
        1 | 6 | 16 => 1,
        2 | 7 | 15 => 5,
        STRING | BYTES | MESSAGE => 2,
        _ => 0,
    }
}

/// Random records for message `m`: mostly its fields in their own wire form, some packed
/// runs, groups for delimited fields, unknown numbers and wrong wire types.
fn gen_message(rng: &mut Rng, shapes: &[Vec<Shape>], m: usize, depth: u32, out: &mut Vec<u8>) {
    for _ in 0..rng.below(8) {
        let fields = &shapes[m];
        if rng.one_in(12) {
            // An unknown field or a wrong wire type.
            let number = if rng.one_in(2) { 40 + rng.below(5) as u32 } else { fields[0].number };
            let wt = WIRE[rng.below(6) as usize];
            if wt == 3 || wt == 4 {
                continue;
            }
            put_tag(out, number, wt);
            match wt {
                0 => put_varint(out, rng.next() >> 40),
                1 => out.extend_from_slice(&[1; 8]),
                2 => put_value(rng, out, BYTES),
                _ => out.extend_from_slice(&[2; 4]),
            }
            continue;
        }
        let f = fields[rng.below(fields.len() as u64) as usize];
        if f.ty == MESSAGE {
            if depth > 3 {
                continue;
            }
            let mut body = Vec::new();
            gen_message(rng, shapes, f.child, depth + 1, &mut body);
            if f.delimited {
                put_tag(out, f.number, 3);
                out.extend_from_slice(&body);
                put_tag(out, f.number, 4);
            } else {
                put_tag(out, f.number, 2);
                put_varint(out, body.len() as u64);
                out.extend_from_slice(&body);
            }
        } else if f.repeated && packable(f.ty) && rng.one_in(2) {
            let mut run = Vec::new();
            for _ in 0..rng.below(4) {
                put_value(rng, &mut run, f.ty);
            }
            put_tag(out, f.number, 2);
            put_varint(out, run.len() as u64);
            out.extend_from_slice(&run);
        } else {
            put_tag(out, f.number, wire_type(f.ty));
            put_value(rng, out, f.ty);
        }
    }
}

#[test]
fn generated_editions_schemas_decode_alike_in_both_engines() {
    let mut rng = Rng(0x0ed1_7105);
    let (mut trees, mut errors) = (0, 0);
    for round in 0..60 {
        let (set, shapes) = gen_schema(&mut rng);
        let schema = Schema::from_descriptor_set(&set).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let jit = schema.decoder_with_options("g.M0", &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
        let interp =
            schema.decoder_with_options("g.M0", &EngineOptions::default().with_kind(EngineKind::Interpreter)).unwrap();
        if cfg!(target_arch = "x86_64") {
            assert_eq!(jit.stats().interpreted(), 0, "round {round}: every generated type compiles");
        }
        for case in 0..40 {
            let mut bytes = Vec::new();
            gen_message(&mut rng, &shapes, 0, 0, &mut bytes);
            let (a, b) = (Arena::new(), Arena::new());
            let what = format!("round {round} case {case}: {bytes:02x?}");
            match (jit.decode(&bytes, &a), interp.decode(&bytes, &b)) {
                (Ok(x), Ok(y)) => {
                    let text = y.to_text_format();
                    assert_eq!(x.to_text_format(), text, "{what}: the engines' trees differ");
                    let again = y.encode_to_vec();
                    let c = Arena::new();
                    let z = interp.decode(&again, &c).unwrap_or_else(|e| panic!("{what}: re-encoding fails: {e}"));
                    assert_eq!(z.to_text_format(), text, "{what}: the re-encoding decodes to another tree");
                    trees += 1;
                }
                (Err(x), Err(y)) => {
                    assert_eq!(x, y, "{what}: the engines' errors differ");
                    errors += 1;
                }
                (x, y) => panic!("{what}: jit {:?} vs interpreter {:?}", x.err(), y.err()),
            }
        }
    }
    // Both outcomes are exercised (the generator makes invalid UTF-8 and wrong wire types).
    assert!(trees > 1000 && errors > 50, "{trees} trees, {errors} errors");
}
