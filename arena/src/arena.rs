//! The arena: a bump allocator holding every block and vector of decoded trees.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Memory for decoded trees. Allocation is a pointer bump; nothing is freed until the
/// arena is [`reset`](Arena::reset) or dropped, which frees every tree decoded into it at
/// once. Reusing one arena across decodes (`reset` between them) allocates nothing after
/// the first few messages.
#[derive(Default)]
pub struct Arena {
    bump: bumpalo::Bump,
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena").field("allocated_bytes", &self.allocated_bytes()).finish()
    }
}

impl Arena {
    /// An empty arena.
    pub fn new() -> Arena {
        Arena::default()
    }

    /// An empty arena with room for `bytes` before it asks the system for more.
    pub fn with_capacity(bytes: usize) -> Arena {
        Arena { bump: bumpalo::Bump::with_capacity(bytes) }
    }

    /// Frees every tree decoded into this arena and keeps the memory for reuse. Taking
    /// `&mut self` proves no `MessageRef` into the arena is still alive.
    ///
    /// When the trees took several chunks, they are replaced by one chunk as large as all
    /// of them together, so a loop that decodes messages of similar size and resets in
    /// between asks the system for memory only during its first decode (and this reset).
    #[inline]
    pub fn reset(&mut self) {
        let held = self.bump.allocated_bytes();
        self.bump.reset();
        if self.bump.allocated_bytes() < held {
            self.bump = bumpalo::Bump::with_capacity(held);
        }
    }

    /// Bytes currently held from the system (including unused chunk space).
    pub fn allocated_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }

    /// Allocates `size` zeroed bytes aligned to 8 (a message block, crate invariant 1).
    ///
    /// Panics only when the system is out of memory (like `Vec`).
    #[inline]
    pub fn alloc_zeroed(&self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size.max(8), 8).expect("block size overflows");
        let ptr = self.bump.alloc_layout(layout);
        // SAFETY: `ptr` is a fresh allocation of `layout.size()` writable bytes.
        unsafe { zero(ptr, layout.size()) };
        ptr
    }

    /// Allocates a zeroed block of `size` bytes and, right after it in the same
    /// allocation, `spare` uninitialised bytes, both aligned to 8: one bump for a root
    /// block and the first chunk its children are carved from. Returns the block and the
    /// spare bytes' start.
    ///
    /// Panics only when the system is out of memory (like `Vec`).
    #[inline]
    pub fn alloc_zeroed_with_spare(&self, size: usize, spare: usize) -> (NonNull<u8>, NonNull<u8>) {
        let size = size.max(8).next_multiple_of(8);
        let layout = Layout::from_size_align(size.checked_add(spare).expect("block size overflows"), 8)
            .expect("block size overflows");
        let ptr = self.bump.alloc_layout(layout);
        // SAFETY: the first `size` of the allocation's `size + spare` bytes; the spare
        // bytes start one past them, inside (or one past the end of) the allocation.
        unsafe {
            zero(ptr, size);
            (ptr, ptr.add(size))
        }
    }

    /// Allocates `size` uninitialised bytes aligned to 8.
    #[inline]
    pub fn alloc_uninit(&self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size.max(8), 8).expect("allocation size overflows");
        self.bump.alloc_layout(layout)
    }

    /// Copies `bytes` into the arena.
    pub fn alloc_bytes(&self, bytes: &[u8]) -> &[u8] {
        self.bump.alloc_slice_copy(bytes)
    }
}

/// Zeroes `size` bytes at `ptr`. Blocks of up to 128 bytes (most messages) take two
/// overlapping fixed-size stores instead of a call to `memset`, which costs a tiny
/// message's decode more than its fields do.
///
/// # Safety
/// `ptr..ptr + size` is writable.
#[inline]
unsafe fn zero(ptr: NonNull<u8>, size: usize) {
    /// Zeroes `N` bytes at the start and `N` at the end of `size >= N` bytes.
    #[inline(always)]
    unsafe fn ends<const N: usize>(p: *mut u8, size: usize) {
        // SAFETY: the caller's contract; `size >= N`, so both ranges lie inside it.
        unsafe {
            p.cast::<[u8; N]>().write_unaligned([0; N]);
            p.add(size - N).cast::<[u8; N]>().write_unaligned([0; N]);
        }
    }
    let p = ptr.as_ptr();
    // SAFETY: the caller's contract; each arm's `N` is at most `size`.
    unsafe {
        match size {
            0..8 => std::ptr::write_bytes(p, 0, size),
            8..16 => ends::<8>(p, size),
            16..32 => ends::<16>(p, size),
            32..64 => ends::<32>(p, size),
            64..=128 => ends::<64>(p, size),
            _ => std::ptr::write_bytes(p, 0, size),
        }
    }
}
