//! Fuzz target: arbitrary bytes against corpus types; the streaming visitor must accept and
//! reject exactly what the interpreter's decode does, with the same error, and on a decoded
//! message's canonical encoding see the same values as the tree visitor (as a multiset: the
//! stream is in wire order); and reject what the JIT decoder rejects, with its error.
//!
//! Run from `fuzz/`: `RUSTC_BOOTSTRAP=1 cargo fuzz run stream_visit` (needs
//! `../shared/corpus` beside the repository). The first input byte picks the type (one of
//! `common::TARGETS`).
#![no_main]

mod common;

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use protojit::{Arena, Descend, FieldInfo, MessageRef, StreamVisitor, Visitor};

/// Every value as (field number, nesting depth, value bits), sorted.
#[derive(Default)]
struct Collect {
    depth: u32,
    seen: Vec<(u32, u32, u64)>,
}

impl Collect {
    fn push(&mut self, field: FieldInfo<'_>, bits: u64) {
        self.seen.push((field.number(), self.depth, bits));
    }
}

fn hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
}

impl<'a> Visitor<'a> for Collect {
    fn bool(&mut self, f: FieldInfo<'a>, v: bool) {
        self.push(f, v as u64)
    }
    fn i32(&mut self, f: FieldInfo<'a>, v: i32) {
        self.push(f, v as u64)
    }
    fn i64(&mut self, f: FieldInfo<'a>, v: i64) {
        self.push(f, v as u64)
    }
    fn u32(&mut self, f: FieldInfo<'a>, v: u32) {
        self.push(f, v as u64)
    }
    fn u64(&mut self, f: FieldInfo<'a>, v: u64) {
        self.push(f, v)
    }
    fn f32(&mut self, f: FieldInfo<'a>, v: f32) {
        self.push(f, v.to_bits() as u64)
    }
    fn f64(&mut self, f: FieldInfo<'a>, v: f64) {
        self.push(f, v.to_bits())
    }
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) {
        self.push(f, hash(v.as_bytes()))
    }
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) {
        self.push(f, hash(v))
    }
    fn enum_value(&mut self, f: FieldInfo<'a>, v: protojit::EnumValue<'a>) {
        self.push(f, v.number as u64)
    }
    fn message(&mut self, f: FieldInfo<'a>, _: MessageRef<'a>) -> Descend {
        self.push(f, u64::MAX);
        self.depth += 1;
        Descend::Yes
    }
    fn end_message(&mut self, _: FieldInfo<'a>, _: MessageRef<'a>) {
        self.depth -= 1
    }
}

macro_rules! go {
    ($e:expr) => {{
        $e;
        ControlFlow::Continue(())
    }};
}

impl<'a> StreamVisitor<'a> for Collect {
    fn bool(&mut self, f: FieldInfo<'a>, v: bool) -> ControlFlow<()> {
        go!(self.push(f, v as u64))
    }
    fn i32(&mut self, f: FieldInfo<'a>, v: i32) -> ControlFlow<()> {
        go!(self.push(f, v as u64))
    }
    fn i64(&mut self, f: FieldInfo<'a>, v: i64) -> ControlFlow<()> {
        go!(self.push(f, v as u64))
    }
    fn u32(&mut self, f: FieldInfo<'a>, v: u32) -> ControlFlow<()> {
        go!(self.push(f, v as u64))
    }
    fn u64(&mut self, f: FieldInfo<'a>, v: u64) -> ControlFlow<()> {
        go!(self.push(f, v))
    }
    fn f32(&mut self, f: FieldInfo<'a>, v: f32) -> ControlFlow<()> {
        go!(self.push(f, v.to_bits() as u64))
    }
    fn f64(&mut self, f: FieldInfo<'a>, v: f64) -> ControlFlow<()> {
        go!(self.push(f, v.to_bits()))
    }
    fn string(&mut self, f: FieldInfo<'a>, v: &'a str) -> ControlFlow<()> {
        go!(self.push(f, hash(v.as_bytes())))
    }
    fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) -> ControlFlow<()> {
        go!(self.push(f, hash(v)))
    }
    fn enum_value(&mut self, f: FieldInfo<'a>, v: protojit::EnumValue<'a>) -> ControlFlow<()> {
        go!(self.push(f, v.number as u64))
    }
    fn message(&mut self, f: FieldInfo<'a>) -> ControlFlow<(), Descend> {
        self.push(f, u64::MAX);
        self.depth += 1;
        ControlFlow::Continue(Descend::Yes)
    }
    fn end_message(&mut self, _: FieldInfo<'a>) -> ControlFlow<()> {
        go!(self.depth -= 1)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else { return };
    // The interpreter of each pair, and its JIT twin.
    let decoders = common::decoders();
    let (jit, decoder) = &decoders[pick as usize % decoders.len()];
    let arena = Arena::new();
    let decoded = decoder.decode(input, &arena);
    let mut interpreted = Collect::default();
    let streamed = decoder.stream(input, &mut interpreted);
    assert_eq!(streamed.map(|_| ()), decoded.map(|_| ()), "accept/reject or error differs");
    let jit_arena = Arena::new();
    let jit_decoded = jit.decode(input, &jit_arena).map(|_| ());
    assert_eq!(streamed.map(|_| ()), jit_decoded, "accept/reject or error differs from the JIT's decode");
    if let Ok(m) = decoded {
        let canonical = m.encode_to_vec();
        let mut tree = Collect::default();
        decoder.decode(&canonical, &arena).unwrap().visit(&mut tree);
        let mut stream = Collect::default();
        assert!(decoder.stream(&canonical, &mut stream).unwrap().is_continue());
        tree.seen.sort_unstable();
        stream.seen.sort_unstable();
        assert!(tree.seen == stream.seen, "the stream saw other values than the tree visitor");
    }
});
