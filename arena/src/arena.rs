//! The arena: a bump allocator holding every block and vector of decoded trees.

use std::alloc::Layout;
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// Bytes every arena holds inside itself, handed out before any chunk is asked of the
/// system: a small message decoded into a fresh arena costs no `malloc`/`free` (the
/// initial block of upb's and libprotobuf's arenas). Blocks are carved from it upwards,
/// 8-aligned.
const INLINE_BYTES: usize = 512;

/// Memory for decoded trees. Allocation is a pointer bump; nothing is freed until the
/// arena is [`reset`](Arena::reset) or dropped, which frees every tree decoded into it at
/// once. Reusing one arena across decodes (`reset` between them) allocates nothing after
/// the first few messages.
///
/// The first 512 bytes come from the arena value itself, so trees may point into
/// it: no tree outlives a borrow of the arena, and nothing can move an arena while it is
/// borrowed (code that keeps raw pointers into an arena it owns, as `OwnedMessage` does,
/// keeps the arena boxed).
pub struct Arena {
    /// The inline first block; bytes `..inline_used` are handed out.
    inline: UnsafeCell<[MaybeUninit<u64>; INLINE_BYTES / 8]>,
    inline_used: Cell<usize>,
    bump: bumpalo::Bump,
}

impl Default for Arena {
    fn default() -> Arena {
        Arena::new()
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena").field("allocated_bytes", &self.allocated_bytes()).finish()
    }
}

impl Arena {
    /// An empty arena.
    #[inline]
    pub fn new() -> Arena {
        Arena::with_bump(bumpalo::Bump::new())
    }

    /// An empty arena with room for `bytes` before it asks the system for more.
    pub fn with_capacity(bytes: usize) -> Arena {
        Arena::with_bump(bumpalo::Bump::with_capacity(bytes.saturating_sub(INLINE_BYTES)))
    }

    #[inline]
    fn with_bump(bump: bumpalo::Bump) -> Arena {
        Arena {
            inline: UnsafeCell::new([const { MaybeUninit::uninit() }; INLINE_BYTES / 8]),
            inline_used: Cell::new(0),
            bump,
        }
    }

    /// `size` bytes, 8-aligned, from the inline block if they fit there.
    #[inline]
    fn take_inline(&self, size: usize) -> Option<NonNull<u8>> {
        let used = self.inline_used.get();
        if size > INLINE_BYTES - used {
            return None;
        }
        // `used` is a multiple of 8 and `used + size <= INLINE_BYTES`, itself a multiple
        // of 8, so the rounded end stays inside the block.
        self.inline_used.set((used + size).next_multiple_of(8));
        // SAFETY: `used < INLINE_BYTES` or `size == 0` with `used <= INLINE_BYTES`: an
        // address inside (or one past) the inline block, never null; the bytes
        // `used..used + size` were handed out to nobody before (`reset` takes `&mut`).
        Some(unsafe { NonNull::new_unchecked(self.inline.get().cast::<u8>().add(used)) })
    }

    /// Frees every tree decoded into this arena and keeps the memory for reuse. Taking
    /// `&mut self` proves no `MessageRef` into the arena is still alive.
    ///
    /// When the trees took several chunks, they are replaced by one chunk as large as all
    /// of them together, so a loop that decodes messages of similar size and resets in
    /// between asks the system for memory only during its first decode (and this reset).
    #[inline]
    pub fn reset(&mut self) {
        self.inline_used.set(0);
        let held = self.bump.allocated_bytes();
        self.bump.reset();
        if self.bump.allocated_bytes() < held {
            self.bump = bumpalo::Bump::with_capacity(held);
        }
    }

    /// Bytes currently held: the inline first block and the chunks taken from the system,
    /// unused space included.
    pub fn allocated_bytes(&self) -> usize {
        INLINE_BYTES + self.bump.allocated_bytes()
    }

    /// Allocates `size` zeroed bytes aligned to 8 (a message block, crate invariant 1).
    ///
    /// Panics only when the system is out of memory (like `Vec`).
    #[inline]
    pub fn alloc_zeroed(&self, size: usize) -> NonNull<u8> {
        let size = size.max(8);
        let ptr = match self.take_inline(size) {
            Some(ptr) => ptr,
            None => self.bump.alloc_layout(Layout::from_size_align(size, 8).expect("block size overflows")),
        };
        // SAFETY: `ptr` is a fresh allocation of `size` writable bytes.
        unsafe { zero(ptr, size) };
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
        let size = size.max(8).checked_next_multiple_of(8).expect("block size overflows");
        let total = size.checked_add(spare).expect("block size overflows");
        let ptr = match self.take_inline(total) {
            Some(ptr) => ptr,
            None => self.bump.alloc_layout(Layout::from_size_align(total, 8).expect("block size overflows")),
        };
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
        let size = size.max(8);
        match self.take_inline(size) {
            Some(ptr) => ptr,
            None => self.bump.alloc_layout(Layout::from_size_align(size, 8).expect("allocation size overflows")),
        }
    }

    /// Copies `bytes` into the arena.
    pub fn alloc_bytes(&self, bytes: &[u8]) -> &[u8] {
        match self.take_inline(bytes.len()) {
            // SAFETY: `dst` is `bytes.len()` fresh writable bytes, disjoint from `bytes`
            // (which the caller borrows), and initialised by the copy before the slice is
            // made; it lives as long as the borrow of the arena.
            Some(dst) => unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.as_ptr(), bytes.len());
                std::slice::from_raw_parts(dst.as_ptr(), bytes.len())
            },
            None => self.bump.alloc_slice_copy(bytes),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocations of every kind and many sizes, crossing from the inline block into
    /// chunks: each is 8-aligned (bytes copies aside), none overlaps another, zeroed
    /// blocks are zero and copies keep their contents; after `reset` the inline block is
    /// handed out again.
    #[test]
    fn inline_block_and_chunks_hand_out_disjoint_memory() {
        let mut arena = Arena::new();
        for round in 0..2 {
            let mut spans: Vec<(usize, usize)> = Vec::new();
            let mut copies = Vec::new();
            for i in 0..200usize {
                let size = (i * 37) % 97;
                let (ptr, len) = match i % 4 {
                    0 => {
                        let p = arena.alloc_zeroed(size);
                        // SAFETY: `alloc_zeroed` returned `size.max(8)` initialised bytes.
                        let block = unsafe { std::slice::from_raw_parts(p.as_ptr(), size.max(8)) };
                        assert!(block.iter().all(|&b| b == 0));
                        (p.as_ptr() as usize, size.max(8))
                    }
                    1 => {
                        let (p, rest) = arena.alloc_zeroed_with_spare(size, 24);
                        assert_eq!(rest.as_ptr() as usize, p.as_ptr() as usize + size.max(8).next_multiple_of(8));
                        (p.as_ptr() as usize, size.max(8).next_multiple_of(8) + 24)
                    }
                    2 => {
                        let p = arena.alloc_uninit(size);
                        (p.as_ptr() as usize, size.max(8))
                    }
                    _ => {
                        let bytes: Vec<u8> = (0..size).map(|b| (b + i) as u8).collect();
                        let copy = arena.alloc_bytes(&bytes);
                        assert_eq!(copy, &bytes[..]);
                        copies.push((copy, bytes));
                        (copy.as_ptr() as usize, size)
                    }
                };
                if i % 4 != 3 {
                    assert_eq!(ptr % 8, 0, "round {round}, allocation {i} of {size} bytes");
                }
                if len > 0 {
                    spans.push((ptr, ptr + len));
                }
            }
            for (copy, bytes) in &copies {
                assert_eq!(*copy, &bytes[..]);
            }
            spans.sort();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "round {round}: {:x?} overlaps {:x?}", w[0], w[1]);
            }
            let inline = arena.inline.get() as usize;
            assert!(spans.iter().any(|&(a, _)| a >= inline && a < inline + INLINE_BYTES));
            assert!(spans.iter().any(|&(a, _)| a < inline || a >= inline + INLINE_BYTES));
            drop(copies);
            arena.reset();
        }
    }
}
