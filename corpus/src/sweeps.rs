//! The sweep payloads: one packed or repeated field per scalar kind, filled to fixed sizes.

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, ReflectMessage, Value};

use crate::payload::*;

/// Sizes of the sweep payloads, with their name suffixes.
pub const SWEEP_SIZES: [(usize, &str); 2] = [(1 << 10, "1k"), (1 << 20, "1m")];

/// Values from `gen` until their packed encoding reaches `target` bytes.
fn fill(target: usize, mut gen: impl FnMut() -> (Value, usize)) -> Vec<Value> {
    let mut total = 0;
    let mut out = Vec::new();
    while total < target {
        let (v, len) = gen();
        total += len;
        out.push(v);
    }
    out
}

fn zigzag_len(v: i64) -> usize {
    varint_len(((v << 1) ^ (v >> 63)) as u64)
}

/// The sweep payloads.
pub fn sweeps(pool: &DescriptorPool) -> Vec<Payload> {
    let mut out = Vec::new();
    let d = |n: &str| desc(pool, &format!("protojit.bench.sweeps.{n}"));
    for (size, suffix) in SWEEP_SIZES {
        let mut rng = Rng::new(0x5EE9 + size as u64);
        let mut p = |name: &str, m: DynamicMessage| {
            out.push(Payload {
                family: "sweeps",
                name: format!("sw_{name}_{suffix}"),
                proto: "sweeps.proto",
                message: m.descriptor().full_name().into(),
                bytes: m.encode_to_vec(),
            })
        };
        // Leave room for the tag and length of the packed field.
        let body = size - 1 - varint_len(size as u64);
        let widths = |rng: &mut Rng, w: Option<u32>| {
            fill(body, || {
                let width = w.unwrap_or_else(|| rng.range(1, 10) as u32);
                let v = rng.varint_of_width(width);
                (Value::U64(v), width as usize)
            })
        };
        let v1 = widths(&mut rng, Some(1));
        p("varint1b", msg(&d("Varints"), vec![("values", list(v1))]));
        let v10 = widths(&mut rng, Some(10));
        p("varint10b", msg(&d("Varints"), vec![("values", list(v10))]));
        let vm = widths(&mut rng, None);
        p("varintmixed", msg(&d("Varints"), vec![("values", list(vm))]));
        let zz = fill(body, || {
            let bits = rng.range(0, 24);
            let v = rng.below(1 << bits) as i64 * if rng.chance(0.5) { -1 } else { 1 };
            (Value::I64(v), zigzag_len(v))
        });
        p("zigzag", msg(&d("Zigzags"), vec![("values", list(zz))]));
        let en = fill(body, || (Value::EnumNumber(rng.below(8) as i32), 1));
        p("enum", msg(&d("Levels"), vec![("values", list(en))]));

        // Many messages with tiny arrays: each item is ~6-10 bytes.
        let mut items = Vec::new();
        let mut total = 0;
        let mut id = 0u32;
        while total + 12 < size {
            let vals: Vec<Value> = (0..rng.below(4)).map(|_| Value::U32(rng.below(300) as u32)).collect();
            let m = msg(&d("Tiny"), vec![("id", Value::U32(id)), ("values", list(vals))]);
            let len = m.encoded_len();
            total += len + 1 + varint_len(len as u64);
            items.push(Value::Message(m));
            id += 1;
        }
        p("manytiny", msg(&d("ManyTiny"), vec![("items", list(items))]));

        // Few messages with big arrays: 4 items, each a quarter of the size.
        let quarter = size / 4;
        let items = (0..4u32)
            .map(|k| {
                let per = quarter / 3;
                let a = fill(per.saturating_sub(8), || {
                    let w = rng.range(1, 9) as u32;
                    (Value::U64(rng.varint_of_width(w)), w as usize)
                });
                let b = fill(per.saturating_sub(8), || {
                    let v = rng.below(1 << 20) as i32 - (1 << 19);
                    (Value::I32(v), zigzag_len(v as i64))
                });
                let c = fill(per.saturating_sub(16), || (Value::F64(rng.unit() * 1e6), 8));
                Value::Message(msg(
                    &d("Big"),
                    vec![("id", Value::U32(k)), ("a", list(a)), ("b", list(b)), ("c", list(c))],
                ))
            })
            .collect();
        p("fewbig", msg(&d("FewBig"), vec![("items", list(items))]));
    }
    out
}
