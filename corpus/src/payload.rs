//! What the generators make (`Payload`), the random numbers they draw (`Rng`), and the encoding helpers they share.

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value};

/// One generated payload.
#[derive(Clone, Debug)]
pub struct Payload {
    /// Family: `dataset`, `embedded`, `sweeps` or `growth`.
    pub family: &'static str,
    /// Short unique name (used as a file stem and a benchmark id).
    pub name: String,
    /// Schema file in [`schemas_dir`].
    pub proto: &'static str,
    /// Full name of the root message type.
    pub message: String,
    /// The encoded message.
    pub bytes: Vec<u8>,
}

/// A splitmix64 generator: tiny, fast, and the same everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
    /// A varint of exactly `width` bytes (1..=10).
    pub fn varint_of_width(&mut self, width: u32) -> u64 {
        match width {
            10 => self.next_u64() | (1 << 63),
            w => {
                let lo = if w == 1 { 0 } else { 1u64 << (7 * (w - 1)) };
                let hi = (1u64 << (7 * w)) - 1;
                self.range(lo, hi)
            }
        }
    }
}

pub(crate) fn desc(pool: &DescriptorPool, name: &str) -> MessageDescriptor {
    pool.get_message_by_name(name).unwrap_or_else(|| panic!("no message type {name} in the corpus schemas"))
}

pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// `value`'s low `7 * len` bits as a varint of exactly `len` bytes (padded with
/// continuation bytes when the value is shorter; ten bytes carry bit 63 in the last):
/// varints of every length, for tests of the readers of each.
pub fn varint_of_len(value: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let bits = if i < 10 { (value >> (7 * i)) & 0x7f } else { 0 } as u8;
            if i + 1 < len {
                bits | 0x80
            } else {
                bits
            }
        })
        .collect()
}

/// The value that fills a varint of `len` bytes: every group's bits set, so that a wrong
/// shift shows (`u64::MAX` from ten bytes on).
pub fn full_varint_value(len: usize) -> u64 {
    if len >= 10 {
        u64::MAX
    } else {
        (1u64 << (7 * len)) - 1
    }
}

pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends field `number` as a length-delimited record holding `bytes`.
pub(crate) fn put_len_delimited(buf: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(buf, (u64::from(number) << 3) | 2);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends the entries of map field `field` of `parent`, in the given order.
pub(crate) fn put_map(buf: &mut Vec<u8>, parent: &MessageDescriptor, field: &str, entries: Vec<(Value, Value)>) {
    let f = parent.get_field_by_name(field).expect("map field");
    let entry_desc = f.kind().as_message().expect("map entry type").clone();
    for (k, v) in entries {
        let mut e = DynamicMessage::new(entry_desc.clone());
        e.set_field_by_name("key", k);
        e.set_field_by_name("value", v);
        put_len_delimited(buf, f.number(), &e.encode_to_vec());
    }
}

pub(crate) fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

pub(crate) fn list(v: Vec<Value>) -> Value {
    Value::List(v)
}

pub(crate) fn msg(d: &MessageDescriptor, fields: Vec<(&str, Value)>) -> DynamicMessage {
    let mut m = DynamicMessage::new(d.clone());
    for (name, v) in fields {
        assert!(d.get_field_by_name(name).is_some(), "{} has no field {name}", d.full_name());
        m.set_field_by_name(name, v);
    }
    m
}
