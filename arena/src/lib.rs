//! protojit's memory model: how a decoded message lives in memory.
//!
//! Data flows one way through protojit: schema → **layout** → engine → tree → views.
//! This crate owns the first link and the shape of the tree:
//!
//! - [`Layouts`] / [`MessageLayout`] / [`FieldSlot`]: one layout per message type of a
//!   [`prost_reflect::DescriptorPool`], computed once, telling where every field lives
//!   inside a message block.
//! - [`PoolFeatures`] / [`FieldFeatures`]: every element's resolved protobuf features
//!   (editions, with proto2 and proto3 as fixed sets), which layouts and writers read
//!   instead of a file's syntax.
//! - [`Arena`]: the bump allocator every block and vector of one decoded tree lives in.
//! - [`RawStr`] / [`RawVec`]: the raw field representations inside blocks.
//! - [`BlockMut`]: the only writer of blocks, used by both decode engines; it borrows its
//!   arena, layouts and input for the tree's lifetime, so no block outlives them.
//! - [`BlockRef`]: the reader the views use; every read checks the slot's kind.
//! - [`Access`]: a slot of one layout with its kind checked once, so that reads through
//!   it check only that the block is of that layout (one compare).
//! - [`runtime`]: `extern "C"` slow-path helpers shared by the interpreter and compiled code.
//! - [`OwnedTree`]: a decoded tree bundled with its input and arena, free of lifetimes.
//! - [`DecodeError`]: what a decoder reports for malformed input (kind + byte offset).
//! - [`interp`]: the table interpreter over layouts, under [`DecodeOptions`] (the wire
//!   limits: depth and UTF-8), the correctness
//!   oracle of the compiled decoder and its fallback; it needs no code generator, so
//!   everything that only reads or re-decodes trees depends on this crate alone.
//! - [`stream`]: the same checks without a tree, each value handed to a
//!   [`MessageSink`](stream::MessageSink) in wire order (the direct path to Arrow columns
//!   and the streaming visitor read records through it).
//!
//! # Invariants
//!
//! These hold for every block reachable from a decoded root; everything `unsafe` in
//! protojit relies on them and nothing else:
//!
//! 1. A block of layout `L` is `L.size()` bytes, 8-byte aligned, zero-initialised at
//!    allocation, and lives in the [`Arena`] of its tree.
//! 2. Every [`FieldSlot`] of `L` lies inside `L.size()` and is naturally aligned
//!    ([`Layouts::new`] checks this once per layout).
//! 3. A singular message slot holds null or a pointer to a block of the slot's child layout;
//!    for a oneof member this holds only while the oneof's case word names that member.
//! 4. A [`RawVec`] holds `cap` elements of the slot's element size, the first `len`
//!    initialised. Message elements are addresses (never null) of child blocks of the
//!    slot's child layout, each allocated on its own in the same arena, or, for an
//!    element whose encoding was empty, of the layouts' shared zero block of that layout
//!    ([`Layouts::empty_block`]), which nothing ever writes.
//! 5. A [`RawStr`] points at `len` bytes inside the input or the arena of its tree.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod access;
mod arena;
mod block;
mod error;
mod features;
pub mod field;
pub mod interp;
mod layout;
mod owned;
mod raw;
pub mod runtime;
mod scalar;
pub mod stream;
mod varint;
pub mod wire;

pub use arena::Arena;

pub use access::{Access, AccessKind, ChildIter, StrIter, StrList, Texts};
pub use block::{BlockMut, BlockRef};
pub use error::{DecodeError, DecodeErrorKind};
pub use features::{
    DeclaredFeatures, DefaultSymbolVisibility, Edition, EnforceNamingStyle, EnumTypeFeature, FeatureError, FeatureSet,
    FieldFeatures, FieldPresence, JsonFormat, MessageEncoding, MessageFeatures, PoolFeatures, RepeatedFieldEncoding,
    Utf8Validation,
};
pub use layout::{
    EnumType, FieldKind, FieldSlot, LayoutError, LayoutIndex, Layouts, MessageLayout, Repetition, SlotDescriptor,
    SlotIndex, NO_INDEX,
};
pub use owned::OwnedTree;
pub use raw::{RawStr, RawVec};
pub use scalar::{Scalar, SlotMismatch};

/// The largest effective [`DecodeOptions::max_depth`].
pub const MAX_DEPTH_LIMIT: u32 = 1000;

/// Which `string` fields a decoder checks for valid UTF-8.
///
/// The discriminants are the codes compiled code reads from its context (0 none, 1 the
/// strings whose features say VERIFY, 2 every string).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Utf8Check {
    /// The `string` fields whose resolved `utf8_validation` feature is `VERIFY`
    /// ([`FieldSlot::validate_utf8`]), as protobuf asks: every proto3 string, editions
    /// strings unless a feature says `NONE`, and no proto2 string (proto2 strings may hold
    /// any bytes). Called `Proto3` before editions loaded.
    #[default]
    Features = 1,
    /// Every `string` field, proto2 included: the work generated Rust (prost) does, for
    /// comparisons on equal terms and for callers who want `&str` everywhere.
    All = 2,
    /// None: the caller's risk; string views then check UTF-8 when read, and show
    /// invalid text as bytes.
    Off = 0,
}

impl Utf8Check {
    /// The name this policy had before editions: the strings of proto3 files, which are
    /// now the strings whose features say `VERIFY` (a superset, the same for proto2/proto3).
    #[deprecated(note = "renamed `Utf8Check::Features`: the strings whose features say VERIFY")]
    #[allow(non_upper_case_globals)]
    pub const Proto3: Utf8Check = Utf8Check::Features;

    /// Whether a `string` field is checked: `verify` says whether its resolved
    /// `utf8_validation` feature is `VERIFY` ([`FieldSlot::validate_utf8`]).
    #[inline]
    pub const fn checks(self, verify: bool) -> bool {
        match self {
            Utf8Check::Features => verify,
            Utf8Check::All => true,
            Utf8Check::Off => false,
        }
    }

    /// Whether every string whose features say `VERIFY` of a tree decoded with this policy
    /// is valid UTF-8 (string views then skip the check).
    pub const fn verify_checked(self) -> bool {
        !matches!(self, Utf8Check::Off)
    }

    /// The name [`verify_checked`](Self::verify_checked) had before editions.
    #[deprecated(note = "renamed `verify_checked`: the strings whose features say VERIFY")]
    pub const fn proto3_checked(self) -> bool {
        self.verify_checked()
    }
}

/// What a tree decoder does with unknown fields (numbers the message does not declare, a
/// declared number with another wire type, an undeclared value of a closed enum).
///
/// The discriminants are the codes compiled code reads from its context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum UnknownFields {
    /// Kept as their wire bytes, in wire order ([`BlockRef::unknown_fields`]): a tree
    /// re-encodes to what it was decoded from. The default, as protobuf.
    #[default]
    Keep = 0,
    /// Checked (a malformed unknown field is an error, as when kept) and dropped: for
    /// readers that never look at them, such as a projection whose unselected fields are
    /// unknown to the pruned schema it decodes with. Compiled code then skips an unknown
    /// field inline instead of calling out to record it. Protobuf's
    /// `DiscardUnknownFields`.
    Discard = 1,
}

/// The wire limits every decoder honours: how deep messages may nest and which strings
/// must be valid UTF-8; and whether tree decoders keep unknown fields. The fields are
/// private so that the depth limit is clamped in one place
/// ([`DecodeOptions::with_max_depth`]); `repr(C)`: compiled code reads them from its
/// context at [`DecodeOptions::MAX_DEPTH_OFFSET`], [`DecodeOptions::UTF8_OFFSET`] and
/// [`DecodeOptions::UNKNOWN_OFFSET`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct DecodeOptions {
    max_depth: u32,
    utf8: Utf8Check,
    unknown: UnknownFields,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions { max_depth: 100, utf8: Utf8Check::Features, unknown: UnknownFields::Keep }
    }
}

impl DecodeOptions {
    /// Byte offset of the depth limit (a `u32`), which compiled code reads.
    pub const MAX_DEPTH_OFFSET: usize = std::mem::offset_of!(DecodeOptions, max_depth);
    /// Byte offset of the UTF-8 policy (a `u32` code, see [`Utf8Check`]), which compiled
    /// code reads.
    pub const UTF8_OFFSET: usize = std::mem::offset_of!(DecodeOptions, utf8);
    /// Byte offset of the unknown-field policy (a `u32` code, see [`UnknownFields`]),
    /// which compiled code reads.
    pub const UNKNOWN_OFFSET: usize = std::mem::offset_of!(DecodeOptions, unknown);

    /// The same options with another depth limit: the deepest nesting of messages and
    /// groups below the root (default 100, as protobuf). Values above [`MAX_DEPTH_LIMIT`]
    /// become that limit: both engines recurse once per level, and deeper nesting could
    /// overflow a thread's stack.
    pub fn with_max_depth(self, max_depth: u32) -> Self {
        DecodeOptions { max_depth: max_depth.min(MAX_DEPTH_LIMIT), ..self }
    }

    /// The same options with another UTF-8 policy (default: the fields' features,
    /// [`Utf8Check::Features`]).
    pub fn with_utf8(self, utf8: Utf8Check) -> Self {
        DecodeOptions { utf8, ..self }
    }

    /// The depth limit, at most [`MAX_DEPTH_LIMIT`].
    #[inline]
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// Which `string` fields must be valid UTF-8.
    #[inline]
    pub fn utf8(&self) -> Utf8Check {
        self.utf8
    }

    /// The same options with another unknown-field policy (default:
    /// [`UnknownFields::Keep`]). The streaming walk ([`stream`]) reports unknown fields
    /// whatever this says: it stores nothing.
    pub fn with_unknown_fields(self, unknown: UnknownFields) -> Self {
        DecodeOptions { unknown, ..self }
    }

    /// What tree decoders do with unknown fields.
    #[inline]
    pub fn unknown_fields(&self) -> UnknownFields {
        self.unknown
    }
}
