//! Test support: descriptor pools compiled from `.proto` text (the corpus crate's `pool_from_source`), and a tree decoded by the interpreter.

#![allow(dead_code)]

use prost_reflect::DescriptorPool;
use protojit_arena::interp::Interp;
use protojit_arena::{Arena, BlockMut, BlockRef, DecodeError, DecodeOptions, Layouts, Utf8Check};

/// The pool of one `.proto` file given as text.
pub fn pool(name: &str, source: &str) -> DescriptorPool {
    protojit_corpus::pool_from_source(name, source)
}

/// `input` decoded as `message` by the interpreter under UTF-8 policy `utf8`, read back
/// as a tree whose strings the decoder checked as `utf8` says.
pub fn decode<'a>(
    layouts: &'a Layouts,
    message: &str,
    input: &'a [u8],
    arena: &'a Arena,
    utf8: Utf8Check,
) -> Result<BlockRef<'a>, DecodeError> {
    let index = layouts.index_of(message).unwrap_or_else(|| panic!("no type {message}"));
    let mut root = BlockMut::alloc(arena, layouts, index);
    Interp::new(input, &DecodeOptions::default().with_utf8(utf8)).message(&mut root, 0, input.len(), 0, None)?;
    let ptr = root.as_ptr();
    // SAFETY: the interpreter finished a root block of `index` in `arena`, pointing into
    // `input` and `arena` only, and checked the strings `utf8` names.
    Ok(unsafe { BlockRef::from_decoded(ptr, layouts, index, utf8.verify_checked()) })
}

/// A deterministic generator (xorshift), so failures repeat.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
