//! `OwnedMessage`: a decoded tree bundled with its input, arena and layouts, movable across threads.

use std::ptr::NonNull;
use std::sync::Arc;

use bytes::Bytes;
use protojit_arena::{Arena, DecodeError, LayoutIndex, Layouts};
use protojit_reflect::MessageRef;

use crate::Decoder;

/// A decoded message that owns everything its tree points into: the input bytes (shared,
/// never copied), the arena and the schema's layouts. It is `Send` and `Sync`, has no
/// lifetime, and reads through [`message`](Self::message).
///
/// ```
/// use protojit::Schema;
///
/// let schema = Schema::from_proto_source("p.proto", "syntax = \"proto3\"; message P { string s = 1; }")?;
/// let decoder = schema.decoder("P")?;
/// let owned = decoder.decode_owned(vec![0x0a, 0x02, b'h', b'i'])?;
/// let handle = std::thread::spawn(move || owned.message().get("s").unwrap().as_str().unwrap().to_owned());
/// assert_eq!(handle.join().unwrap(), "hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OwnedMessage {
    root: NonNull<u8>,
    layout: LayoutIndex,
    utf8_validated: bool,
    // The tree points into these three; none of them moves its contents when moved
    // (`Bytes` on the heap, the arena boxed because its first block is inside it,
    // `Layouts` behind an `Arc`).
    arena: Box<Arena>,
    input: Bytes,
    layouts: Arc<Layouts>,
}

// SAFETY: the tree is immutable once decoded and reachable only through `&self`, which
// reads it; its memory is owned by `input`, `arena` and `layouts`, which move with it.
// The arena (a bump allocator, not `Sync`) is never used through `&self`: nothing
// allocates after decoding, and `into_arena` takes `self` by value.
unsafe impl Send for OwnedMessage {}
// SAFETY: as above: shared references only ever read the finished tree.
unsafe impl Sync for OwnedMessage {}

impl std::fmt::Debug for OwnedMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedMessage")
            .field("type", &self.message().descriptor().full_name())
            .field("input_bytes", &self.input.len())
            .field("arena", &self.arena)
            .finish()
    }
}

impl OwnedMessage {
    /// A view of the message, borrowed from this handle.
    pub fn message(&self) -> MessageRef<'_> {
        // SAFETY: `root` is the finished root block of `layout` decoded from `input` into
        // `arena` with `layouts`, all owned by `self` and unchanged since, so they live
        // as long as the borrow of `self`.
        unsafe { MessageRef::from_raw(&self.layouts, self.layout, self.root, self.utf8_validated) }
    }

    /// The input the tree borrows its strings and bytes from.
    pub fn input(&self) -> &Bytes {
        &self.input
    }

    /// The layouts of the schema.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// Bytes the tree's arena holds from the system.
    pub fn arena_bytes(&self) -> usize {
        self.arena.allocated_bytes()
    }

    /// Drops the tree and returns its arena, reset, to decode the next message into
    /// (see [`Decoder::decode_owned_in`]).
    pub fn into_arena(self) -> Arena {
        let mut arena = *self.arena;
        arena.reset();
        arena
    }
}

impl Decoder {
    /// Decodes `input` into a new arena and returns a self-contained [`OwnedMessage`].
    /// `input` is anything that converts to [`Bytes`] (`Vec<u8>`, `&'static [u8]`,
    /// `Bytes` itself, ...) and is not copied.
    pub fn decode_owned(&self, input: impl Into<Bytes>) -> Result<OwnedMessage, DecodeError> {
        self.decode_owned_in(input, Arena::new())
    }

    /// Like [`decode_owned`](Self::decode_owned), decoding into `arena` (which should be
    /// empty, as [`OwnedMessage::into_arena`] returns it), so a loop of owned decodes can
    /// reuse one arena's memory.
    pub fn decode_owned_in(&self, input: impl Into<Bytes>, arena: Arena) -> Result<OwnedMessage, DecodeError> {
        let input: Bytes = input.into();
        // Boxed before decoding: the tree may point into the arena's inline first block,
        // which must not move with the `OwnedMessage`.
        let arena = Box::new(arena);
        let engine = self.engine();
        let root = engine.decode(&input, &arena)?;
        Ok(OwnedMessage {
            root,
            layout: engine.root(),
            utf8_validated: engine.options().utf8.proto3_checked(),
            arena,
            input,
            layouts: engine.layouts().clone(),
        })
    }
}
