//! Test support: layouts compiled from `.proto` text (the corpus crate's `pool_from_source`), and messages decoded by the interpreter (the arena crate's), read through views.

#![allow(dead_code)]

use protojit_arena::interp::Interp;
use protojit_arena::{Arena, BlockMut, DecodeOptions, Layouts};
use protojit_reflect::MessageRef;

/// The layouts of one `.proto` file given as text.
pub fn layouts(name: &str, source: &str) -> Layouts {
    Layouts::new(&protojit_corpus::pool_from_source(name, source)).unwrap()
}

/// `input` decoded as `message` by the interpreter into `arena`.
pub fn decode<'a>(layouts: &'a Layouts, message: &str, input: &'a [u8], arena: &'a Arena) -> MessageRef<'a> {
    let index = layouts.index_of(message).unwrap_or_else(|| panic!("no type {message}"));
    let mut root = BlockMut::alloc(arena, layouts, index);
    Interp::new(input, &DecodeOptions::default()).message(&mut root, 0, input.len(), 0, None).unwrap();
    MessageRef::new(root.into_ref())
}

/// Appends a tag.
pub fn tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    protojit_arena::wire::write_varint(out, (number << 3 | wire_type as u32) as u64);
}

/// Appends a length-delimited field.
pub fn len_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    tag(out, number, 2);
    protojit_arena::wire::write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
pub fn varint_field(out: &mut Vec<u8>, number: u32, v: u64) {
    tag(out, number, 0);
    protojit_arena::wire::write_varint(out, v);
}
