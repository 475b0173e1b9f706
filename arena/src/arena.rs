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
    pub fn alloc_zeroed(&self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size.max(8), 8).expect("block size overflows");
        let ptr = self.bump.alloc_layout(layout);
        // SAFETY: `ptr` is a fresh allocation of `layout.size()` writable bytes.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, layout.size()) };
        ptr
    }

    /// Allocates `size` uninitialised bytes aligned to 8.
    pub fn alloc_uninit(&self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size.max(8), 8).expect("allocation size overflows");
        self.bump.alloc_layout(layout)
    }

    /// Copies `bytes` into the arena.
    pub fn alloc_bytes(&self, bytes: &[u8]) -> &[u8] {
        self.bump.alloc_slice_copy(bytes)
    }
}
