//! `OwnedTree`: a decoded tree bundled with its input, arena and layouts, so that it has no
//! lifetime and can move across threads.

use std::sync::Arc;

use crate::{Arena, BlockRef, Layouts};

/// A decoded tree that owns everything it points into: its input (any owner of bytes:
/// `Vec<u8>`, `Box<[u8]>`, a shared buffer), its arena and its layouts. `Send` and `Sync`
/// when the input is; read it through [`tree`](Self::tree), which borrows `self`.
///
/// ```compile_fail,E0505
/// # use std::sync::Arc;
/// # use protojit_arena::{Arena, BlockMut, Layouts, OwnedTree};
/// # fn f(layouts: Arc<Layouts>) {
/// let owned = OwnedTree::decode(vec![1u8], Arena::new(), layouts, |_input, arena, layouts| {
///     Ok::<_, ()>(BlockMut::alloc(arena, layouts, protojit_arena::LayoutIndex::new(0)).into_ref())
/// })
/// .unwrap();
/// let root = owned.tree();
/// drop(owned); // the tree borrows the owner: error[E0505]
/// let _ = root.layout();
/// # }
/// ```
///
/// The same, reading before the owner goes:
///
/// ```no_run
/// # use std::sync::Arc;
/// # use protojit_arena::{Arena, BlockMut, Layouts, OwnedTree};
/// # fn f(layouts: Arc<Layouts>) {
/// let owned = OwnedTree::decode(vec![1u8], Arena::new(), layouts, |_input, arena, layouts| {
///     Ok::<_, ()>(BlockMut::alloc(arena, layouts, protojit_arena::LayoutIndex::new(0)).into_ref())
/// })
/// .unwrap();
/// let root = owned.tree();
/// let _ = root.layout();
/// drop(owned);
/// # }
/// ```
pub struct OwnedTree<I> {
    /// The root, its lifetime erased: it points into `parts` and `layouts` (or into data
    /// that lives for the whole program), none of which moves its contents when the
    /// `OwnedTree` moves; [`OwnedTree::tree`] lends it out for a borrow of `self` only.
    root: BlockRef<'static>,
    /// Boxed: the tree may point into the arena's inline first block and into an input
    /// that holds its bytes inline.
    parts: Box<Parts<I>>,
    layouts: Arc<Layouts>,
}

struct Parts<I> {
    arena: Arena,
    input: I,
}

// SAFETY: the tree is immutable once decoded and reachable only through `&self`, which
// reads it; its memory is owned by `parts` and `layouts`, which move with it (the arena is
// `Send`; the input is, by the bound).
unsafe impl<I: Send> Send for OwnedTree<I> {}
// SAFETY: shared references only ever read the finished tree and the input (`Sync` by the
// bound). The arena, a bump allocator that is not `Sync`, is never allocated from through
// `&self` (`arena_bytes` reads its byte count, which nothing changes after decoding), and
// `into_arena` takes `self` by value.
unsafe impl<I: Sync> Sync for OwnedTree<I> {}

impl<I: AsRef<[u8]>> OwnedTree<I> {
    /// Decodes `input` into `arena` with `decode` (which gets the input's bytes, the arena
    /// and `layouts`) and keeps the three with the tree it returns.
    pub fn decode<E>(
        input: I,
        arena: Arena,
        layouts: Arc<Layouts>,
        decode: impl for<'t> FnOnce(&'t [u8], &'t Arena, &'t Layouts) -> Result<BlockRef<'t>, E>,
    ) -> Result<OwnedTree<I>, E> {
        let parts = Box::new(Parts { arena, input });
        let root = decode(parts.input.as_ref(), &parts.arena, &layouts)?;
        // SAFETY: `decode` returned a reader for every lifetime `'t` it could be called
        // with, so what it points at lives as long as the three borrows it was given, or
        // for the whole program: the boxed input and arena and the `Arc`'d layouts, which
        // `self` owns and never moves, mutates or frees while it lives. Only `tree` hands
        // the reader out again, for a borrow of `self`.
        let root = unsafe { std::mem::transmute::<BlockRef<'_>, BlockRef<'static>>(root) };
        Ok(OwnedTree { root, parts, layouts })
    }
}

impl<I> OwnedTree<I> {
    /// The tree's root, borrowed from this owner.
    #[inline]
    pub fn tree(&self) -> BlockRef<'_> {
        self.root
    }

    /// The input the tree borrows its strings and bytes from.
    pub fn input(&self) -> &I {
        &self.parts.input
    }

    /// The layouts of the tree.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// Bytes the tree's arena holds from the system.
    pub fn arena_bytes(&self) -> usize {
        self.parts.arena.allocated_bytes()
    }

    /// Drops the tree and returns its arena, reset, to decode the next tree into.
    pub fn into_arena(self) -> Arena {
        let mut arena = self.parts.arena;
        arena.reset();
        arena
    }
}
