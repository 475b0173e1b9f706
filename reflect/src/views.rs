//! The view types of a decoded tree (a message, a repeated field, a map field), declared in a
//! leaf: their methods (message.rs, list.rs) and [`Value`](crate::Value) (value.rs) name one
//! another's types, and declaring the types here lets each of those files import this one
//! instead of each other.

use protojit_arena::{BlockRef, SlotIndex};

/// A decoded message, borrowed from its tree (which borrows the input and the arena).
///
/// Made from a block reader ([`MessageRef::new`]); whether its strings whose features say VERIFY read as
/// text without a check is the reader's to know ([`BlockRef::from_decoded`](protojit_arena::BlockRef::from_decoded)).
#[derive(Clone, Copy)]
pub struct MessageRef<'a> {
    pub(crate) block: BlockRef<'a>,
}

/// A repeated field of a decoded message.
#[derive(Clone, Copy)]
pub struct ListRef<'a> {
    pub(crate) msg: MessageRef<'a>,
    pub(crate) slot: SlotIndex,
}

/// A map field of a decoded message. Entries are kept in wire order; where a key occurs
/// more than once the last entry wins, as protobuf specifies.
#[derive(Clone, Copy)]
pub struct MapRef<'a> {
    pub(crate) msg: MessageRef<'a>,
    pub(crate) slot: SlotIndex,
}
