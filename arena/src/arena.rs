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

/// The smallest chunk an arena asks the system for.
const CHUNK_MIN: usize = 256;

/// A new chunk adds `1 / CHUNK_GROWTH` of what the arena already bumps through (its
/// inline block and chunks, not the chunks of single large allocations), or what one
/// allocation needs, if more. Chunks grow with the tree, so allocation stays amortised
/// O(1), while the unused end of the last chunk stays under a fifth of what the arena
/// holds. (Doubling chunks, counted whole, held up to twice the tree: the arena held a
/// median 1.34× prost's heap for the same messages.)
const CHUNK_GROWTH: usize = 4;

/// Memory for decoded trees. Allocation is a pointer bump; nothing is freed until the
/// arena is [`reset`](Arena::reset) or dropped, which frees every tree decoded into it at
/// once. Reusing one arena across decodes (`reset` between them) allocates nothing after
/// the first few messages.
///
/// The first 512 bytes come from the arena value itself, so trees may point into
/// it: no tree outlives a borrow of the arena, and nothing can move an arena while it is
/// borrowed (code that keeps raw pointers into an arena it owns, as `OwnedMessage` does,
/// keeps the arena boxed). The rest comes from chunks taken from the system, each a
/// quarter of what the arena bumped through before it, or one large allocation's own
/// (see [`allocated_bytes`](Arena::allocated_bytes)).
pub struct Arena {
    /// The inline first block; bytes `..inline_used` are handed out.
    inline: UnsafeCell<[MaybeUninit<u64>; INLINE_BYTES / 8]>,
    inline_used: Cell<usize>,
    chunks: Chunks,
}

// SAFETY: an arena owns its chunks (heap memory, freed on drop) and its inline block;
// nothing in it refers to thread-local state, so it may move to another thread. It is not
// `Sync`: allocation goes through `&self` with `Cell`s.
unsafe impl Send for Arena {}

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
        Arena {
            inline: UnsafeCell::new([const { MaybeUninit::uninit() }; INLINE_BYTES / 8]),
            inline_used: Cell::new(0),
            chunks: Chunks::new(),
        }
    }

    /// An empty arena with room for `bytes` before it asks the system for more.
    pub fn with_capacity(bytes: usize) -> Arena {
        let arena = Arena::new();
        if bytes > INLINE_BYTES {
            arena.chunks.add_chunk((bytes - INLINE_BYTES).next_multiple_of(8));
        }
        arena
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

    /// `size` bytes, 8-aligned: from the inline block, else from the chunks.
    #[inline]
    fn take(&self, size: usize) -> NonNull<u8> {
        match self.take_inline(size) {
            Some(ptr) => ptr,
            None => self.chunks.take(size, INLINE_BYTES),
        }
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
        self.chunks.reset();
    }

    /// Bytes currently held: the inline first block and the chunks taken from the system,
    /// unused space included.
    pub fn allocated_bytes(&self) -> usize {
        INLINE_BYTES + self.chunks.held.get()
    }

    /// Whether the arena has taken any chunk from the system (beyond its inline block).
    #[inline]
    pub fn has_chunks(&self) -> bool {
        self.chunks.held.get() > 0
    }

    /// Bytes held that are not free for the next allocation: what trees took, with the
    /// unused ends of chunks other than the current one (alignment, an allocation that
    /// did not fit). [`allocated_bytes`](Arena::allocated_bytes) less the free space of
    /// the inline block and of the current chunk.
    pub fn used_bytes(&self) -> usize {
        let inline_free = INLINE_BYTES - self.inline_used.get();
        let chunk_free = self.chunks.end.get() as usize - self.chunks.ptr.get() as usize;
        self.allocated_bytes() - inline_free - chunk_free
    }

    /// Allocates `size` zeroed bytes aligned to 8 (a message block, crate invariant 1).
    ///
    /// Panics only when the system is out of memory (like `Vec`).
    #[inline]
    pub fn alloc_zeroed(&self, size: usize) -> NonNull<u8> {
        let size = size.max(8);
        let ptr = self.take(size);
        // SAFETY: `ptr` is a fresh allocation of `size` writable bytes.
        unsafe { zero(ptr, size) };
        ptr
    }

    /// Lends out the free space at the arena's allocation point, at least `min` bytes
    /// (taking a new chunk when there is less), as `start..end`, both 8-aligned (both
    /// null, or equal, when `min` is 0 and nothing is free). Code that bump-allocates by
    /// itself (compiled decoders) carves blocks from it without a call per block; the
    /// arena hands none of it out again until [`take_back`](Arena::take_back) returns
    /// the unused end. Allocating from the arena in between is allowed (it comes from
    /// elsewhere); a later `take_back` of this region then keeps what it would return.
    ///
    /// Panics only when the system is out of memory (like `Vec`).
    #[inline]
    pub fn lend(&self, min: usize) -> (*mut u8, *mut u8) {
        let used = self.inline_used.get();
        let free = INLINE_BYTES - used;
        // The inline block is lent only until the first chunk: its last few free bytes
        // would send the borrower back for more at once, again after every take-back.
        if free >= min && free > 0 && !self.chunks.has_current() {
            self.inline_used.set(INLINE_BYTES);
            let base = self.inline.get().cast::<u8>();
            // `used <= INLINE_BYTES`: both addresses lie in (or one past) the block.
            return (base.wrapping_add(used), base.wrapping_add(INLINE_BYTES));
        }
        self.chunks.lend(min, INLINE_BYTES)
    }

    /// [`lend`](Arena::lend) with a zeroed block of `size` bytes (rounded up to a multiple
    /// of 8, at least 8) handed out from the region's front: returns the block and the
    /// rest of the region, at least `min` bytes. A decode by compiled code takes its root
    /// block and the region for the root's children in one step.
    ///
    /// Panics only when the system is out of memory (like `Vec`).
    #[inline]
    pub fn lend_with_block(&self, size: usize, min: usize) -> (NonNull<u8>, *mut u8, *mut u8) {
        let size = (size.max(8).saturating_add(7)) & !7;
        let (start, end) = self.lend(size.saturating_add(min));
        // SAFETY: the region `start..end` holds at least `size > 0` bytes (what `lend`
        // was asked for), 8-aligned, handed out to nobody else: `start` is not null, and
        // the block and the rest of the region are disjoint parts of it.
        unsafe {
            let block = NonNull::new_unchecked(start);
            zero(block, size);
            (block, start.add(size), end)
        }
    }

    /// Takes back `start..end`, the unused end of the region the last [`lend`](Arena::lend)
    /// (or [`lend_with_block`](Arena::lend_with_block)) returned, to hand out again. Does
    /// nothing if the arena has allocated past that region since (its end is no longer the
    /// allocation point).
    ///
    /// # Safety
    /// `start..end` is the end of the region the arena's last `lend` returned (`start` at
    /// or after that region's start), and nothing uses any byte of it, now or later.
    #[inline]
    pub unsafe fn take_back(&self, start: *mut u8, end: *mut u8) {
        let base = self.inline.get().cast::<u8>();
        let inline_end = base.wrapping_add(INLINE_BYTES);
        if end == inline_end && self.inline_used.get() == INLINE_BYTES {
            // The region was the inline block's end, and the block has been full since.
            let at = (start as usize).wrapping_sub(base as usize);
            if at <= INLINE_BYTES {
                // Rounded up to 8, `at` stays at or before the block's end (a multiple of 8).
                self.inline_used.set((at + 7) & !7);
            }
            return;
        }
        self.chunks.take_back(start as usize, end as usize);
    }

    /// Allocates `size` uninitialised bytes aligned to 8.
    #[inline]
    pub fn alloc_uninit(&self, size: usize) -> NonNull<u8> {
        self.take(size.max(8))
    }

    /// Grows the allocation of `old` bytes at `ptr` to `new` bytes where it lies, if it is
    /// the last one handed out and there is room after it; returns whether it did. A
    /// vector that grows while nothing else is allocated keeps one buffer instead of
    /// leaving its old ones behind.
    #[inline]
    pub fn grow_in_place(&self, ptr: NonNull<u8>, old: usize, new: usize) -> bool {
        // Checked: any sizes may come in, and a wrapped sum would hand out used bytes.
        let (Some(old), Some(new)) = (old.max(8).checked_next_multiple_of(8), new.checked_next_multiple_of(8)) else {
            return false;
        };
        if new < old {
            return false;
        }
        let addr = ptr.as_ptr() as usize;
        let inline = self.inline.get() as usize;
        let used = self.inline_used.get();
        if addr.wrapping_add(old) == inline + used && inline <= addr {
            // The allocation ends where the inline block's free space starts.
            return match (addr - inline).checked_add(new) {
                Some(end) if end <= INLINE_BYTES => {
                    self.inline_used.set(end);
                    true
                }
                _ => false,
            };
        }
        self.chunks.grow_last(addr, old, new)
    }

    /// Copies `bytes` into the arena.
    pub fn alloc_bytes(&self, bytes: &[u8]) -> &[u8] {
        let dst = self.take(bytes.len());
        // SAFETY: `dst` is `bytes.len()` fresh writable bytes, disjoint from `bytes`
        // (which the caller borrows), and initialised by the copy before the slice is
        // made; it lives as long as the borrow of the arena.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.as_ptr(), bytes.len());
            std::slice::from_raw_parts(dst.as_ptr(), bytes.len())
        }
    }
}

/// One chunk taken from the system.
struct Chunk {
    start: NonNull<u8>,
    size: usize,
}

impl Chunk {
    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).expect("arena chunk size overflows")
    }
}

/// The chunks of an arena: the current one is bumped upwards from `ptr` to `end`; the
/// others are full, or hold one large allocation each.
///
/// Invariants: `start`, `ptr` and `end` are 8-aligned, `start <= ptr <= end`, and they
/// bound the current chunk (the last of `list`), or are all null while there is none.
/// `held` is the sum of the sizes in `list`; `bumped` the sum of those that were (or are)
/// the current chunk.
struct Chunks {
    start: Cell<*mut u8>,
    ptr: Cell<*mut u8>,
    end: Cell<*mut u8>,
    /// Every chunk held, the current one last. Only the slow path takes it out.
    list: Cell<Vec<Chunk>>,
    held: Cell<usize>,
    bumped: Cell<usize>,
}

impl Chunks {
    #[inline]
    fn new() -> Chunks {
        Chunks {
            start: Cell::new(std::ptr::null_mut()),
            ptr: Cell::new(std::ptr::null_mut()),
            end: Cell::new(std::ptr::null_mut()),
            list: Cell::new(Vec::new()),
            held: Cell::new(0),
            bumped: Cell::new(0),
        }
    }

    /// `size` bytes (a multiple of 8) bumped from the current chunk, else from a new one.
    /// `before` is what the arena holds besides its chunks (the inline block), which
    /// counts toward the next chunk's size.
    #[inline]
    fn take(&self, size: usize, before: usize) -> NonNull<u8> {
        let ptr = self.ptr.get();
        // `end - ptr` is the current chunk's free space (0 without a chunk).
        if size <= (self.end.get() as usize) - (ptr as usize) {
            self.ptr.set(ptr.wrapping_add(size.next_multiple_of(8)));
            // SAFETY: `size > 0` (the inline block serves every empty allocation), so
            // there is a current chunk and `ptr..ptr + size` lies inside it: non-null.
            return unsafe { NonNull::new_unchecked(ptr) };
        }
        self.take_slow(size, before)
    }

    #[cold]
    #[inline(never)]
    fn take_slow(&self, size: usize, before: usize) -> NonNull<u8> {
        let size = size.checked_next_multiple_of(8).expect("allocation size overflows");
        let grown = self.next_size(0, before);
        if size > grown / 2 {
            // A large allocation takes a chunk of its own; the current chunk stays
            // current, so its free space is not given up.
            let chunk = alloc_chunk(size);
            let mut list = self.list.take();
            let at = list.len().saturating_sub(1);
            list.insert(at, Chunk { start: chunk, size });
            self.list.set(list);
            self.held.set(self.held.get() + size);
            return chunk;
        }
        self.add_chunk(grown);
        let ptr = self.ptr.get();
        self.ptr.set(ptr.wrapping_add(size));
        // SAFETY: the new chunk's start, not null, with `size <= grown` bytes.
        unsafe { NonNull::new_unchecked(ptr) }
    }

    /// Takes a chunk of `size` bytes (a multiple of 8) and makes it the current one.
    fn add_chunk(&self, size: usize) {
        let start = alloc_chunk(size);
        let mut list = self.list.take();
        list.push(Chunk { start, size });
        self.list.set(list);
        self.held.set(self.held.get() + size);
        self.bumped.set(self.bumped.get() + size);
        self.start.set(start.as_ptr());
        self.ptr.set(start.as_ptr());
        self.end.set(start.as_ptr().wrapping_add(size));
    }

    /// Grows the allocation at `addr` of `old` bytes to `new` (multiples of 8, `old <=
    /// new`) if it is the current chunk's last allocation and the chunk holds the rest.
    #[inline]
    fn grow_last(&self, addr: usize, old: usize, new: usize) -> bool {
        let ptr = self.ptr.get() as usize;
        // Inside the current chunk, not merely ending where its free space starts (another
        // allocation of the system could end there).
        let inside = self.start.get() as usize <= addr;
        if ptr == 0 || !inside || addr.wrapping_add(old) != ptr || new - old > self.end.get() as usize - ptr {
            return false;
        }
        self.ptr.set(self.ptr.get().wrapping_add(new - old));
        true
    }

    /// Whether there is a current chunk.
    #[inline]
    fn has_current(&self) -> bool {
        !self.ptr.get().is_null()
    }

    /// The current chunk's free space, at least `min` bytes (a new chunk, sized by the
    /// growth rule or `min`, when short), handed out whole.
    #[inline]
    fn lend(&self, min: usize, before: usize) -> (*mut u8, *mut u8) {
        if min > (self.end.get() as usize) - (self.ptr.get() as usize) {
            self.add_chunk(self.next_size(min.checked_next_multiple_of(8).expect("allocation size overflows"), before));
        }
        let (start, end) = (self.ptr.get(), self.end.get());
        self.ptr.set(end);
        (start, end)
    }

    /// Hands `start..end` out again if `end` is the current chunk's end, everything up to
    /// it is handed out, and `start` lies in the chunk (see `Arena::take_back`).
    #[inline]
    fn take_back(&self, start: usize, end: usize) {
        let (first, ptr) = (self.start.get() as usize, self.ptr.get() as usize);
        if end != 0 && end == self.end.get() as usize && ptr == end && first <= start && start <= end {
            // `start - first` rounded up to 8 stays at or before `end` (8-aligned).
            self.ptr.set(self.start.get().wrapping_add((start - first).next_multiple_of(8)));
        }
    }

    /// The size of the next current chunk for an allocation of `size` bytes: a quarter
    /// of what the arena bumps through, at least `CHUNK_MIN` and `size`.
    #[inline]
    fn next_size(&self, size: usize, before: usize) -> usize {
        ((before + self.bumped.get()) / CHUNK_GROWTH).next_multiple_of(8).max(CHUNK_MIN).max(size)
    }

    /// Forgets every allocation; keeps one chunk as large as all held (see `Arena::reset`).
    #[inline]
    fn reset(&mut self) {
        // The common cases, a loop decoding into one arena, inline: no chunk yet, or one
        // that is current (whose size `bumped` already is).
        match self.list.get_mut().len() {
            0 => {}
            1 if self.has_current() => self.ptr.set(self.start.get()),
            _ => self.reset_slow(),
        }
    }

    #[cold]
    #[inline(never)]
    fn reset_slow(&mut self) {
        let list = self.list.get_mut();
        if list.len() > 1 {
            let held = *self.held.get_mut();
            for chunk in list.drain(..) {
                free_chunk(chunk);
            }
            *self.held.get_mut() = 0;
            *self.bumped.get_mut() = 0;
            self.add_chunk(held);
        } else if let Some(chunk) = list.first() {
            // One chunk (current, or a large allocation's): the next decode bumps through it.
            *self.bumped.get_mut() = chunk.size;
            self.start.set(chunk.start.as_ptr());
            self.ptr.set(chunk.start.as_ptr());
            self.end.set(chunk.start.as_ptr().wrapping_add(chunk.size));
        }
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        for chunk in self.list.get_mut().drain(..) {
            free_chunk(chunk);
        }
    }
}

/// `size` (> 0, a multiple of 8) bytes from the system, 8-aligned. Out of memory aborts
/// through `handle_alloc_error`, as `Vec` does.
fn alloc_chunk(size: usize) -> NonNull<u8> {
    let layout = Chunk::layout(size);
    // SAFETY: `layout` has a non-zero size (callers pass at least `CHUNK_MIN` or an
    // allocation's size, at least 8).
    let ptr = unsafe { std::alloc::alloc(layout) };
    NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

fn free_chunk(chunk: Chunk) {
    // SAFETY: `chunk` came from `alloc_chunk(chunk.size)` and is freed once (it is moved
    // out of the list that owned it).
    unsafe { std::alloc::dealloc(chunk.start.as_ptr(), Chunk::layout(chunk.size)) }
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
            let mut grew = 0;
            for i in 0..400usize {
                // Mostly small, every 25th larger than the next chunk would be (a chunk
                // of its own), every 7th grown in place when it can be.
                let size = if i % 25 == 24 { 3000 + i * 29 } else { (i * 37) % 97 };
                let (ptr, len) = match i % 4 {
                    2 if i % 7 == 0 => {
                        let p = arena.alloc_uninit(size);
                        let grown = 2 * size + 8;
                        if arena.grow_in_place(p, size, grown) {
                            grew += 1;
                            // The grown bytes are ours: write them all.
                            // SAFETY: `grow_in_place` extended the allocation to `grown` bytes.
                            unsafe { std::ptr::write_bytes(p.as_ptr(), 0xa5, grown) };
                            (p.as_ptr() as usize, grown)
                        } else {
                            (p.as_ptr() as usize, size.max(8))
                        }
                    }
                    0 => {
                        let p = arena.alloc_zeroed(size);
                        // SAFETY: `alloc_zeroed` returned `size.max(8)` initialised bytes.
                        let block = unsafe { std::slice::from_raw_parts(p.as_ptr(), size.max(8)) };
                        assert!(block.iter().all(|&b| b == 0));
                        (p.as_ptr() as usize, size.max(8))
                    }
                    1 if i % 8 == 5 => {
                        // A dirty arena's lent space with a zeroed block at its front, then
                        // `size` bytes used after it, the rest taken back.
                        let (block, start, end) = arena.lend_with_block(size, size);
                        let block_len = size.max(8).next_multiple_of(8);
                        assert_eq!(start as usize, block.as_ptr() as usize + block_len);
                        assert!(end as usize - start as usize >= size);
                        // SAFETY: `lend_with_block` returned `block_len` zeroed bytes.
                        let bytes = unsafe { std::slice::from_raw_parts(block.as_ptr(), block_len) };
                        assert!(bytes.iter().all(|&b| b == 0));
                        let used = size.next_multiple_of(8);
                        // SAFETY: the region's bytes after the first `used` are unused; the
                        // rest is written, as a borrower would.
                        unsafe {
                            std::ptr::write_bytes(start, 0x5a, used);
                            arena.take_back(start.wrapping_add(used), end);
                        }
                        (block.as_ptr() as usize, block_len + used)
                    }
                    1 => {
                        // Lent space, `size` bytes of it used, the rest taken back.
                        let (start, end) = arena.lend(size);
                        assert!(end as usize - start as usize >= size);
                        assert_eq!(end as usize % 8, 0);
                        let used = size.next_multiple_of(8);
                        // SAFETY: the lent region's bytes after the first `used` are unused.
                        unsafe { arena.take_back(start.wrapping_add(used), end) };
                        (start as usize, used)
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
            assert!(grew > 0, "round {round}: nothing grew in place");
            // Sizes near the top of `usize` never grow anything (a wrapped sum would).
            let fresh = Arena::new();
            fresh.alloc_uninit(16);
            // Not at the block's start, so an unchecked end would wrap to a small offset.
            let (in_chunk, in_inline) = (arena.alloc_uninit(16), fresh.alloc_uninit(16));
            for huge in [usize::MAX, usize::MAX - 7, usize::MAX / 2 + 8] {
                assert!(!arena.grow_in_place(in_chunk, 16, huge), "round {round}: grew to {huge}");
                assert!(!fresh.grow_in_place(in_inline, 16, huge), "round {round}: inline grew to {huge}");
            }
            // Chunks grow with what the arena holds: what is held but unused stays below
            // the largest allocation's size plus a fifth of the whole.
            let used: usize = spans.iter().map(|&(a, b)| b - a).sum();
            let held = arena.allocated_bytes();
            assert!(held <= used + held / 5 + 8 * 1024, "round {round}: holds {held} for {used} used");
            drop(copies);
            arena.reset();
        }
    }
}
