//! Test support: descriptor pools compiled from `.proto` text with protox, and a tree decoded by the interpreter.

#![allow(dead_code)]

use prost_reflect::DescriptorPool;
use protojit_arena::interp::Interp;
use protojit_arena::{Arena, BlockMut, BlockRef, DecodeError, DecodeOptions, Layouts, Utf8Check};

/// The pool of one `.proto` file given as text (written to a fresh temporary directory:
/// protox compiles files).
pub fn pool(name: &str, source: &str) -> DescriptorPool {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "protojit-arena-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), source).unwrap();
    let mut compiler = protox::Compiler::new([&dir]).unwrap();
    compiler.include_imports(true);
    compiler.open_file(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Through the encoded set: protox's own pool does not carry options such as `packed`.
    let bytes = compiler.encode_file_descriptor_set();
    std::fs::remove_dir_all(&dir).ok();
    DescriptorPool::decode(bytes.as_slice()).unwrap()
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
