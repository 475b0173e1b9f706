//! `OwnedMessage`: a decoded tree bundled with its input, arena and layouts, movable across threads.

use std::sync::Arc;

use bytes::Bytes;
use protojit_arena::{Arena, DecodeError, Layouts, OwnedTree};
use protojit_reflect::MessageRef;

use crate::Decoder;

/// A decoded message that owns everything its tree points into: the input bytes (shared,
/// never copied), the arena and the schema's layouts. It is `Send` and `Sync`, has no
/// lifetime, and reads through [`message`](Self::message), which borrows it:
///
/// ```compile_fail,E0505
/// # let schema = protojit::Schema::from_proto_source("p.proto", "syntax = \"proto3\"; message P { string s = 1; }").unwrap();
/// # let decoder = schema.decoder("P").unwrap();
/// let owned = decoder.decode_owned(vec![0x0a, 0x02, b'h', b'i']).unwrap();
/// let message = owned.message();
/// drop(owned); // error[E0505]: the message borrows its owner
/// assert_eq!(message.get("s").unwrap().as_str(), Some("hi"));
/// ```
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
    tree: OwnedTree<Bytes>,
}

impl std::fmt::Debug for OwnedMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedMessage")
            .field("type", &self.message().descriptor().full_name())
            .field("input_bytes", &self.tree.input().len())
            .field("arena_bytes", &self.tree.arena_bytes())
            .finish()
    }
}

impl OwnedMessage {
    /// A view of the message, borrowed from this handle.
    pub fn message(&self) -> MessageRef<'_> {
        MessageRef::new(self.tree.tree())
    }

    /// The input the tree borrows its strings and bytes from.
    pub fn input(&self) -> &Bytes {
        self.tree.input()
    }

    /// The layouts of the schema.
    pub fn layouts(&self) -> &Arc<Layouts> {
        self.tree.layouts()
    }

    /// Bytes the tree's arena holds from the system.
    pub fn arena_bytes(&self) -> usize {
        self.tree.arena_bytes()
    }

    /// Drops the tree and returns its arena, reset, to decode the next message into
    /// (see [`Decoder::decode_owned_in`]).
    pub fn into_arena(self) -> Arena {
        self.tree.into_arena()
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
        Ok(OwnedMessage { tree: self.engine().decode_owned(input.into(), arena)? })
    }
}
