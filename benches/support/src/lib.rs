//! Benchmark-only support for protojit: the payload cases, the `prost` structs generated at
//! build time from the same `.proto` files, and one checksum every decode arm computes over
//! its own representation, so that no arm can be fast by doing less work.
//!
//! # The checksum
//!
//! Over the *present* fields of a message (fields with presence: set on the wire; proto3
//! fields without presence: not the default value, compared bitwise for floats; repeated
//! and map fields: each element), unknown fields excluded:
//!
//! ```text
//! checksum(message) = Σ contrib(field number, v)   (wrapping u64 sum)
//! v = integer / enum number  → the value as u64 (signed values sign-extended)
//!     bool                   → 0 or 1
//!     float / double         → the IEEE bits
//!     string / bytes         → content_hash(the bytes): length and contents
//!     message / group        → checksum(child)
//!     map entry              → contrib(1, key) + contrib(2, value)
//! contrib(n, v) = splitmix64_finalizer(v ^ n·0x9E3779B97F4A7C15)
//! ```
//!
//! A sum is order-free, so maps (kept in hash order by prost and prost-reflect) and the
//! tree's wire order agree; the mixing makes a wrong value, number or nesting show.
//!
//! The `scan` arm stores nothing, so it cannot compute this; it counts the messages it
//! walks into (nested messages, groups and map entries), which is checked against the
//! same count over the interpreter's tree.

use std::any::Any;
use std::collections::HashMap;
use std::path::PathBuf;

use protojit::{Descend, EnumType, EnumValue, FieldInfo, MapRef, MapWalk, MessageRef, Schema, Value, Visitor};

/// The prost structs generated from the benchmark schemas (module per protobuf package).
#[allow(clippy::all, missing_docs, deprecated, non_camel_case_types)]
/// The number callbacks of a checksum [`Visitor`](protojit::Visitor), single values and
/// packed slices: each value folded by the visitor's own `add(field, u64)` /
/// `add_all(field, values, to_u64)` as the same `u64` (integers sign-extended, floats as
/// their bits), so that every checksum reads numbers alike.
macro_rules! checksum_numbers {
    () => {
        fn bool(&mut self, f: FieldInfo<'a>, v: bool) {
            self.add(f, v as u64)
        }
        fn i32(&mut self, f: FieldInfo<'a>, v: i32) {
            self.add(f, v as i64 as u64)
        }
        fn i64(&mut self, f: FieldInfo<'a>, v: i64) {
            self.add(f, v as u64)
        }
        fn u32(&mut self, f: FieldInfo<'a>, v: u32) {
            self.add(f, v as u64)
        }
        fn u64(&mut self, f: FieldInfo<'a>, v: u64) {
            self.add(f, v)
        }
        fn f32(&mut self, f: FieldInfo<'a>, v: f32) {
            self.add(f, v.to_bits() as u64)
        }
        fn f64(&mut self, f: FieldInfo<'a>, v: f64) {
            self.add(f, v.to_bits())
        }
        fn bools(&mut self, f: FieldInfo<'a>, v: &'a [bool]) {
            self.add_all(f, v, |x| x as u64)
        }
        fn i32s(&mut self, f: FieldInfo<'a>, v: &'a [i32]) {
            self.add_all(f, v, |x| x as i64 as u64)
        }
        fn i64s(&mut self, f: FieldInfo<'a>, v: &'a [i64]) {
            self.add_all(f, v, |x| x as u64)
        }
        fn u32s(&mut self, f: FieldInfo<'a>, v: &'a [u32]) {
            self.add_all(f, v, |x| x as u64)
        }
        fn u64s(&mut self, f: FieldInfo<'a>, v: &'a [u64]) {
            self.add_all(f, v, |x| x)
        }
        fn f32s(&mut self, f: FieldInfo<'a>, v: &'a [f32]) {
            self.add_all(f, v, |x| x.to_bits() as u64)
        }
        fn f64s(&mut self, f: FieldInfo<'a>, v: &'a [f64]) {
            self.add_all(f, v, |x| x.to_bits())
        }
        fn enums(&mut self, f: FieldInfo<'a>, v: &'a [i32], _: &'a EnumType) {
            self.add_all(f, v, |x| x as i64 as u64)
        }
    };
}

pub mod gen {
    include!(concat!(env!("OUT_DIR"), "/_all.rs"));
}

pub mod parse;
pub mod records;
pub mod rounds;
mod rust_protobuf;
pub mod stream_sum;
pub use rust_protobuf::{rp_checksum, RustProtobuf};

#[allow(clippy::all, deprecated, unused_parens)]
mod arms {
    include!(concat!(env!("OUT_DIR"), "/_arms.rs"));
}
pub use arms::prost_arm;

/// Whether the shared corpus was found when the prost code was generated.
pub const SHARED_CORPUS_AT_BUILD: bool = include!(concat!(env!("OUT_DIR"), "/_shared_found.rs"));

/// splitmix64's finalizer.
#[inline(always)]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The contribution of one value `v` of field `number` to its message's checksum.
#[inline(always)]
pub fn contrib(number: u32, v: u64) -> u64 {
    mix(v ^ u64::from(number).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A cheap hash of a string's or bytes' contents (and length), so that an arm that kept
/// the right lengths but wrong bytes, or skipped copying/reading them, shows. FxHash-style:
/// one rotate, xor and multiply per 8 bytes, about as fast as the copy prost makes.
#[inline]
pub fn content_hash(b: impl AsRef<[u8]>) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let b = b.as_ref();
    let mut h = b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    mix(h ^ u64::from_le_bytes(tail))
}

/// The checksum of a decoded message (see the crate docs).
pub trait Checksum {
    /// The checksum.
    fn checksum(&self) -> u64;
}

// ---------------------------------------------------------------------------------------
// prost (generated code).

/// One generated message type, as a decoder arm.
pub trait ProstArm {
    /// Decodes into a fresh struct and returns its checksum.
    fn decode_checksum(&self, bytes: &[u8]) -> Result<u64, String>;
    /// Decodes into a fresh struct and drops it.
    fn decode_only(&self, bytes: &[u8]);
    /// Clears the arm's reused struct, merges `bytes` into it, returns its checksum.
    fn reuse_checksum(&mut self, bytes: &[u8]) -> u64;
    /// Clears the arm's reused struct and merges `bytes` into it.
    fn reuse_only(&mut self, bytes: &[u8]);
    /// Decodes into a fresh struct and hands it over (to measure its heap memory).
    fn decode_hold(&self, bytes: &[u8]) -> Box<dyn Any>;
}

/// The arm of generated message type `T`.
#[derive(Default)]
pub struct Arm<T> {
    reused: T,
}

impl<T: prost::Message + Default + Checksum + 'static> ProstArm for Arm<T> {
    fn decode_checksum(&self, bytes: &[u8]) -> Result<u64, String> {
        T::decode(bytes).map(|m| m.checksum()).map_err(|e| e.to_string())
    }
    #[inline(never)]
    fn decode_only(&self, bytes: &[u8]) {
        let m = T::decode(bytes).unwrap();
        std::hint::black_box(&m);
    }
    #[inline(never)]
    fn reuse_checksum(&mut self, bytes: &[u8]) -> u64 {
        self.reused.clear();
        self.reused.merge(bytes).unwrap();
        self.reused.checksum()
    }
    #[inline(never)]
    fn reuse_only(&mut self, bytes: &[u8]) {
        self.reused.clear();
        self.reused.merge(bytes).unwrap();
        std::hint::black_box(&self.reused);
    }
    fn decode_hold(&self, bytes: &[u8]) -> Box<dyn Any> {
        Box::new(T::decode(bytes).unwrap())
    }
}

// ---------------------------------------------------------------------------------------
// protojit (arena tree).

#[inline]
fn tree_scalar(v: &Value<'_>) -> u64 {
    match *v {
        Value::Bool(b) => b as u64,
        Value::I32(x) => x as i64 as u64,
        Value::I64(x) => x as u64,
        Value::U32(x) => x as u64,
        Value::U64(x) => x,
        Value::F32(x) => x.to_bits() as u64,
        Value::F64(x) => x.to_bits(),
        Value::String(s) => content_hash(s),
        Value::Bytes(b) => content_hash(b),
        Value::Enum(ref e) => e.number as i64 as u64,
        Value::Message(m) => tree_checksum(&m),
        Value::List(_) | Value::Map(_) => unreachable!("not a scalar"),
    }
}

/// The checksum of a protojit tree, read through the public reflection API.
pub fn tree_checksum(m: &MessageRef<'_>) -> u64 {
    let mut acc = 0u64;
    for (field, value) in m.fields() {
        let n = field.number();
        match value {
            Value::List(list) => {
                for v in list.iter() {
                    acc = acc.wrapping_add(contrib(n, tree_scalar(&v)));
                }
            }
            Value::Map(map) => {
                for (k, v) in map.iter() {
                    let e = contrib(1, tree_scalar(&k.to_value())).wrapping_add(contrib(2, tree_scalar(&v)));
                    acc = acc.wrapping_add(contrib(n, e));
                }
            }
            v => acc = acc.wrapping_add(contrib(n, tree_scalar(&v))),
        }
    }
    acc
}

/// The checksum of a protojit tree, read with [`MessageRef::visit`]: typed callbacks,
/// repeated numbers as slices, no `Value` per field. Equal to [`tree_checksum`].
pub fn tree_checksum_visit(m: &MessageRef<'_>) -> u64 {
    let mut v = VisitSum(0);
    m.visit(&mut v);
    v.0
}

struct VisitSum(u64);

impl VisitSum {
    #[inline(always)]
    fn add(&mut self, f: FieldInfo<'_>, v: u64) {
        self.0 = self.0.wrapping_add(contrib(f.number(), v));
    }
    #[inline(always)]
    fn add_all<T: Copy>(&mut self, f: FieldInfo<'_>, v: &[T], to: impl Fn(T) -> u64) {
        let n = f.number();
        let mut acc = self.0;
        for &x in v {
            acc = acc.wrapping_add(contrib(n, to(x)));
        }
        self.0 = acc;
    }
}

fn map_scalar(v: &Value<'_>) -> u64 {
    match *v {
        Value::Message(m) => tree_checksum_visit(&m),
        ref v => tree_scalar(v),
    }
}

impl<'a> Visitor<'a> for VisitSum {
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) {
        self.add(f, content_hash(v))
    }
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) {
        self.add(f, content_hash(v))
    }
    fn enum_value(&mut self, f: FieldInfo<'a>, v: EnumValue<'a>) {
        self.add(f, v.number as i64 as u64)
    }
    fn message(&mut self, f: FieldInfo<'a>, m: MessageRef<'a>) -> Descend {
        let c = tree_checksum_visit(&m);
        self.add(f, c);
        Descend::No
    }
    fn map(&mut self, f: FieldInfo<'a>, map: MapRef<'a>) -> MapWalk {
        let index = map.index();
        for (k, v) in index.iter() {
            let e = contrib(1, tree_scalar(&k.to_value())).wrapping_add(contrib(2, map_scalar(&v)));
            self.add(f, e);
        }
        MapWalk::Skip
    }
    checksum_numbers!();
}

/// [`tree_checksum`] computed by a streaming visitor (`Decoder::stream`, no tree): a
/// message's sum is kept on a stack while its fields come and added to its parent's at its
/// end, and a default value of a field without presence is passed over (a tree does not
/// show it), so the result is [`tree_checksum`]'s wherever the wire holds each singular
/// field once and every map entry's key and value (the corpus's payloads).
pub fn stream_checksum(decoder: &protojit::Decoder, bytes: &[u8]) -> Result<u64, protojit::DecodeError> {
    let mut v = StreamTreeSum { acc: 0, stack: Vec::new() };
    let _flow = decoder.stream(bytes, &mut v)?; // the visitor never stops it
    Ok(v.acc)
}

struct StreamTreeSum {
    acc: u64,
    /// The enclosing messages' field numbers and sums so far.
    stack: Vec<(u32, u64)>,
}

/// Whether `f` is a singular field without presence (proto3 implicit presence), whose
/// default value a tree does not show.
#[inline(always)]
fn implicit(f: FieldInfo<'_>) -> bool {
    let slot = f.slot();
    slot.repetition == protojit_arena::Repetition::Singular
        && slot.hasbit == protojit_arena::NO_INDEX
        && slot.oneof == protojit_arena::NO_INDEX
        && !slot.kind.is_message()
}

impl StreamTreeSum {
    /// A number's term (`v`: its bits, 0 for the default).
    #[inline(always)]
    fn add(&mut self, f: FieldInfo<'_>, v: u64) -> std::ops::ControlFlow<()> {
        if v != 0 || !implicit(f) {
            self.acc = self.acc.wrapping_add(contrib(f.number(), v));
        }
        std::ops::ControlFlow::Continue(())
    }
    /// A string's or bytes' term.
    #[inline(always)]
    fn add_text(&mut self, f: FieldInfo<'_>, v: &[u8]) -> std::ops::ControlFlow<()> {
        if !v.is_empty() || !implicit(f) {
            self.acc = self.acc.wrapping_add(contrib(f.number(), content_hash(v)));
        }
        std::ops::ControlFlow::Continue(())
    }
    #[inline(always)]
    fn add_all<T>(
        &mut self,
        f: FieldInfo<'_>,
        v: impl Iterator<Item = T>,
        to: impl Fn(T) -> u64,
    ) -> std::ops::ControlFlow<()> {
        let n = f.number();
        let mut acc = self.acc;
        for x in v {
            acc = acc.wrapping_add(contrib(n, to(x)));
        }
        self.acc = acc;
        std::ops::ControlFlow::Continue(())
    }
}

impl<'a> protojit::StreamVisitor<'a> for StreamTreeSum {
    fn bool(&mut self, f: FieldInfo<'a>, v: bool) -> std::ops::ControlFlow<()> {
        self.add(f, v as u64)
    }
    fn i32(&mut self, f: FieldInfo<'a>, v: i32) -> std::ops::ControlFlow<()> {
        self.add(f, v as i64 as u64)
    }
    fn i64(&mut self, f: FieldInfo<'a>, v: i64) -> std::ops::ControlFlow<()> {
        self.add(f, v as u64)
    }
    fn u32(&mut self, f: FieldInfo<'a>, v: u32) -> std::ops::ControlFlow<()> {
        self.add(f, v as u64)
    }
    fn u64(&mut self, f: FieldInfo<'a>, v: u64) -> std::ops::ControlFlow<()> {
        self.add(f, v)
    }
    fn f32(&mut self, f: FieldInfo<'a>, v: f32) -> std::ops::ControlFlow<()> {
        self.add(f, v.to_bits() as u64)
    }
    fn f64(&mut self, f: FieldInfo<'a>, v: f64) -> std::ops::ControlFlow<()> {
        self.add(f, v.to_bits())
    }
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) -> std::ops::ControlFlow<()> {
        self.add_text(f, v.as_bytes())
    }
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) -> std::ops::ControlFlow<()> {
        self.add_text(f, v)
    }
    fn enum_value(&mut self, f: FieldInfo<'a>, v: EnumValue<'a>) -> std::ops::ControlFlow<()> {
        self.add(f, v.number as i64 as u64)
    }
    fn bools<I: Iterator<Item = bool>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x as u64)
    }
    fn i32s<I: Iterator<Item = i32>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x as i64 as u64)
    }
    fn i64s<I: Iterator<Item = i64>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x as u64)
    }
    fn u32s<I: Iterator<Item = u32>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x as u64)
    }
    fn u64s<I: Iterator<Item = u64>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x)
    }
    fn f32s<I: Iterator<Item = f32>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x.to_bits() as u64)
    }
    fn f64s<I: Iterator<Item = f64>>(&mut self, f: FieldInfo<'a>, v: I) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x.to_bits())
    }
    fn enums<I: Iterator<Item = i32>>(&mut self, f: FieldInfo<'a>, v: I, _: &'a EnumType) -> std::ops::ControlFlow<()> {
        self.add_all(f, v, |x| x as i64 as u64)
    }
    fn message(&mut self, f: FieldInfo<'a>) -> std::ops::ControlFlow<(), Descend> {
        self.stack.push((f.number(), self.acc));
        self.acc = 0;
        std::ops::ControlFlow::Continue(Descend::Yes)
    }
    fn end_message(&mut self, _: FieldInfo<'a>) -> std::ops::ControlFlow<()> {
        if let Some((n, parent)) = self.stack.pop() {
            self.acc = parent.wrapping_add(contrib(n, self.acc));
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// Number of nested messages (groups and map entries included) in a protojit tree: the
/// `scan` arm's cross-check.
pub fn tree_message_count(m: &MessageRef<'_>) -> u64 {
    let mut n = 0;
    for (_, value) in m.fields() {
        match value {
            Value::Message(c) => n += 1 + tree_message_count(&c),
            Value::List(list) => {
                for v in list.iter() {
                    if let Value::Message(c) = v {
                        n += 1 + tree_message_count(&c);
                    }
                }
            }
            Value::Map(map) => {
                for (_, v) in map.iter() {
                    n += 1;
                    if let Value::Message(c) = v {
                        n += 1 + tree_message_count(&c);
                    }
                }
            }
            _ => {}
        }
    }
    n
}

// ---------------------------------------------------------------------------------------
// prost-reflect (DynamicMessage).

fn reflect_key(k: &prost_reflect::MapKey) -> u64 {
    use prost_reflect::MapKey as K;
    match k {
        K::Bool(b) => *b as u64,
        K::I32(x) => *x as i64 as u64,
        K::I64(x) => *x as u64,
        K::U32(x) => *x as u64,
        K::U64(x) => *x,
        K::String(s) => content_hash(s),
    }
}

fn reflect_scalar(v: &prost_reflect::Value) -> u64 {
    use prost_reflect::Value as V;
    match v {
        V::Bool(b) => *b as u64,
        V::I32(x) => *x as i64 as u64,
        V::I64(x) => *x as u64,
        V::U32(x) => *x as u64,
        V::U64(x) => *x,
        V::F32(x) => x.to_bits() as u64,
        V::F64(x) => x.to_bits(),
        V::String(s) => content_hash(s),
        V::Bytes(b) => content_hash(b),
        V::EnumNumber(x) => *x as i64 as u64,
        V::Message(m) => reflect_checksum(m),
        V::List(_) | V::Map(_) => unreachable!("not a scalar"),
    }
}

fn reflect_field(n: u32, value: &prost_reflect::Value) -> u64 {
    use prost_reflect::Value as V;
    match value {
        V::List(list) => list.iter().fold(0u64, |acc, v| acc.wrapping_add(contrib(n, reflect_scalar(v)))),
        V::Map(map) => map.iter().fold(0u64, |acc, (k, v)| {
            let e = contrib(1, reflect_key(k)).wrapping_add(contrib(2, reflect_scalar(v)));
            acc.wrapping_add(contrib(n, e))
        }),
        v => contrib(n, reflect_scalar(v)),
    }
}

/// The checksum of a prost-reflect `DynamicMessage`.
pub fn reflect_checksum(m: &prost_reflect::DynamicMessage) -> u64 {
    let mut acc = 0u64;
    for (f, v) in m.fields() {
        acc = acc.wrapping_add(reflect_field(f.number(), v));
    }
    for (e, v) in m.extensions() {
        acc = acc.wrapping_add(reflect_field(e.number(), v));
    }
    acc
}

// ---------------------------------------------------------------------------------------
// scan: the floor.

const NOT_MESSAGE: u32 = u32::MAX;
/// A repeated varint field: a packed run is walked element by element.
const PACKED_VARINT: u32 = u32::MAX - 1;
const DENSE: usize = 64;

struct ScanType {
    /// Child type per field number below `DENSE` (`NOT_MESSAGE` if not a message).
    dense: [u32; DENSE],
    /// Sorted (field number, child type) for larger numbers.
    sparse: Vec<(u32, u32)>,
}

impl ScanType {
    #[inline(always)]
    fn child(&self, number: u64) -> u32 {
        if (number as usize) < DENSE {
            self.dense[number as usize]
        } else {
            match self.sparse.binary_search_by_key(&(number as u32), |e| e.0) {
                Ok(i) => self.sparse[i].1,
                Err(_) => NOT_MESSAGE,
            }
        }
    }
}

/// A tight wire walk that reads every tag and skips every value, storing nothing; it
/// descends into nested messages and walks packed varint arrays element by element
/// (which fields are messages and which are repeated varints is all the schema it has),
/// and counts the messages. Strings, bytes and packed fixed-width arrays are skipped by
/// their length.
pub struct Scanner {
    types: Vec<ScanType>,
}

/// The input is not valid protobuf wire format.
#[derive(Debug)]
pub struct ScanError;

#[inline(always)]
fn read_varint(b: &[u8], pos: &mut usize) -> Result<u64, ScanError> {
    let mut result = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos).ok_or(ScanError)?;
        *pos += 1;
        result |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(result);
        }
        shift += 7;
        if shift >= 70 {
            return Err(ScanError);
        }
    }
}

#[inline(always)]
fn skip_varint(b: &[u8], pos: &mut usize) -> Result<(), ScanError> {
    for _ in 0..10 {
        let byte = *b.get(*pos).ok_or(ScanError)?;
        *pos += 1;
        if byte < 0x80 {
            return Ok(());
        }
    }
    Err(ScanError)
}

impl Scanner {
    /// A scanner for message type `root` (and every type reachable from it).
    pub fn new(root: &prost_reflect::MessageDescriptor) -> Scanner {
        let mut index: HashMap<String, u32> = HashMap::new();
        let mut order: Vec<prost_reflect::MessageDescriptor> = Vec::new();
        let mut stack = vec![root.clone()];
        index.insert(root.full_name().to_owned(), 0);
        order.push(root.clone());
        while let Some(m) = stack.pop() {
            for f in m.fields() {
                if let Some(c) = f.kind().as_message() {
                    if !index.contains_key(c.full_name()) {
                        index.insert(c.full_name().to_owned(), order.len() as u32);
                        order.push(c.clone());
                        stack.push(c.clone());
                    }
                }
            }
        }
        let types = order
            .iter()
            .map(|m| {
                let mut t = ScanType { dense: [NOT_MESSAGE; DENSE], sparse: Vec::new() };
                for f in m.fields() {
                    use prost_reflect::Kind as K;
                    let entry = match f.kind() {
                        K::Message(c) => index[c.full_name()],
                        K::Int32 | K::Int64 | K::Uint32 | K::Uint64 | K::Sint32 | K::Sint64 | K::Bool | K::Enum(_)
                            if f.is_list() =>
                        {
                            PACKED_VARINT
                        }
                        _ => continue,
                    };
                    if (f.number() as usize) < DENSE {
                        t.dense[f.number() as usize] = entry;
                    } else {
                        t.sparse.push((f.number(), entry));
                    }
                }
                t.sparse.sort_unstable();
                t
            })
            .chain(std::iter::once(ScanType { dense: [NOT_MESSAGE; DENSE], sparse: Vec::new() }))
            .collect();
        Scanner { types }
    }

    /// Walks `bytes` as the root type; returns the number of nested messages walked.
    pub fn scan(&self, bytes: &[u8]) -> Result<u64, ScanError> {
        let mut pos = 0;
        let n = self.walk(0, bytes, &mut pos, bytes.len(), None, 0)?;
        if pos != bytes.len() {
            return Err(ScanError);
        }
        Ok(n)
    }

    fn walk(
        &self,
        ty: u32,
        b: &[u8],
        pos: &mut usize,
        end: usize,
        group: Option<u64>,
        depth: u32,
    ) -> Result<u64, ScanError> {
        if depth > 100 {
            return Err(ScanError);
        }
        let t = &self.types[ty as usize];
        let mut count = 0;
        while *pos < end {
            let tag = read_varint(b, pos)?;
            let number = tag >> 3;
            match tag & 7 {
                0 => skip_varint(b, pos)?,
                1 => *pos += 8,
                2 => {
                    let len = read_varint(b, pos)? as usize;
                    let stop = pos.checked_add(len).filter(|&s| s <= end).ok_or(ScanError)?;
                    let child = t.child(number);
                    if child == PACKED_VARINT {
                        while *pos < stop {
                            skip_varint(b, pos)?;
                        }
                        if *pos != stop {
                            return Err(ScanError);
                        }
                    } else if child != NOT_MESSAGE {
                        count += 1 + self.walk(child, b, pos, stop, None, depth + 1)?;
                        if *pos != stop {
                            return Err(ScanError);
                        }
                    }
                    *pos = stop;
                }
                3 => {
                    let child = t.child(number);
                    if child == NOT_MESSAGE || child == PACKED_VARINT {
                        // An unknown group: walk it with the last, empty type; not counted.
                        let unknown = self.types.len() as u32 - 1;
                        self.walk(unknown, b, pos, end, Some(number), depth + 1)?;
                    } else {
                        count += 1 + self.walk(child, b, pos, end, Some(number), depth + 1)?;
                    }
                }
                4 => {
                    return if group == Some(number) { Ok(count) } else { Err(ScanError) };
                }
                5 => *pos += 4,
                _ => return Err(ScanError),
            }
        }
        if group.is_some() || *pos > end {
            return Err(ScanError);
        }
        Ok(count)
    }
}

// ---------------------------------------------------------------------------------------
// The cases.

/// One payload with its schema.
pub struct Case {
    /// Short name (a benchmark id).
    pub name: String,
    /// Where it comes from: `shared` (the public corpus) or a generated family.
    pub family: String,
    /// Full name of the root message type.
    pub message: String,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The schema, loaded the way protojit users load it.
    pub schema: Schema,
}

/// The shared public corpus directory (`<workspace>/../shared/corpus`), whether it is there
/// or not (`protojit_corpus::shared_corpus_path`).
pub fn shared_corpus() -> PathBuf {
    protojit_corpus::shared_corpus_path()
}

/// (name, file, schema, message type) of the shared corpus payloads. A schema ending in
/// `.fds.bin` is a serialized `FileDescriptorSet`.
pub const SHARED_CASES: &[(&str, &str, &str, &str)] = &[
    (
        "gm1_proto2",
        "google_message1_proto2.payload0.bin",
        "benchmark_message1_proto2.proto",
        "benchmarks.proto2.GoogleMessage1",
    ),
    (
        "gm1_proto3",
        "google_message1_proto3.payload0.bin",
        "benchmark_message1_proto3.proto",
        "benchmarks.proto3.GoogleMessage1",
    ),
    ("gm2", "google_message2.payload0.bin", "benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
    ("dataset_gm1_proto2", "dataset.google_message1_proto2.pb", "benchmarks.proto", "benchmarks.BenchmarkDataset"),
    ("dataset_gm1_proto3", "dataset.google_message1_proto3.pb", "benchmarks.proto", "benchmarks.BenchmarkDataset"),
    ("dataset_gm2", "dataset.google_message2.pb", "benchmarks.proto", "benchmarks.BenchmarkDataset"),
    ("osm_header", "liechtenstein.block0.headerblock.bin", "osmformat.proto", "OSMPBF.HeaderBlock"),
    ("osm_dense", "liechtenstein.block1.primitiveblock-dense.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("osm_ways", "liechtenstein.block40.primitiveblock-ways.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("osm_relations", "liechtenstein.block45.primitiveblock-relations.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("mvt_chicago", "mvt-chicago-13-2101-3044.mvt", "vector_tile.proto", "vector_tile.Tile"),
    ("mvt_sanfrancisco", "mvt-sanfrancisco-15-5238-12666.mvt", "vector_tile.proto", "vector_tile.Tile"),
    ("mvt_astana", "mvt-osmqa-astana-12-2860-1368.mvt", "vector_tile.proto", "vector_tile.Tile"),
    ("mvt_vtjs", "vector-tile-js-14-8801-5371.vector.pbf", "vector_tile.proto", "vector_tile.Tile"),
    ("descriptor_fds", "descriptor.fds.bin", "descriptor.fds.bin", "google.protobuf.FileDescriptorSet"),
    (
        "descriptor_fds_srcinfo",
        "descriptor_with_source_info.fds.bin",
        "descriptor.fds.bin",
        "google.protobuf.FileDescriptorSet",
    ),
];

/// Loads a shared-corpus schema (a `.proto` file, or a `.fds.bin` descriptor set).
pub fn shared_schema(schema: &str) -> Schema {
    let dir = shared_corpus();
    if schema.ends_with(".fds.bin") {
        Schema::from_descriptor_set_files(&[dir.join(schema)]).expect("shared descriptor set")
    } else {
        Schema::from_proto_files(&[dir.join(schema)], &[&dir]).expect("shared schema")
    }
}

/// The shared-corpus cases: empty when the corpus is absent (saying so), except under
/// `CI=true`, where that panics (`protojit_corpus::require_shared_corpus`).
pub fn shared_cases() -> Vec<Case> {
    let Some(dir) = protojit_corpus::require_shared_corpus("the shared-corpus benchmark cases") else {
        return Vec::new();
    };
    if !SHARED_CORPUS_AT_BUILD {
        panic!(
            "the shared corpus at {} was not there when protojit-bench-support was built, so its prost arm lacks the \
             corpus types; rebuild it (touch benches/support/build.rs)",
            dir.display()
        );
    }
    let mut schemas: HashMap<&str, Schema> = HashMap::new();
    SHARED_CASES
        .iter()
        .map(|&(name, file, schema, message)| {
            let schema = schemas.entry(schema).or_insert_with(|| shared_schema(schema)).clone();
            Case {
                name: name.into(),
                family: "shared".into(),
                message: message.into(),
                bytes: std::fs::read(dir.join(file)).expect("shared payload"),
                schema,
            }
        })
        .collect()
}

/// The generated corpus cases (`protojit-corpus`).
pub fn generated_cases() -> Vec<Case> {
    let schema = Schema::from_pool(&protojit_corpus::pool()).expect("corpus schema");
    protojit_corpus::payloads()
        .into_iter()
        .map(|p| Case {
            name: p.name,
            family: p.family.into(),
            message: p.message,
            bytes: p.bytes,
            schema: schema.clone(),
        })
        .collect()
}

/// Every case: the shared corpus, then the generated one.
pub fn all_cases() -> Vec<Case> {
    let mut v = shared_cases();
    v.extend(generated_cases());
    v
}
