//! Typed slot accesses: a slot's kind checked once, then reads that check only the layout.
//!
//! [`BlockRef`]'s per-slot readers look the slot up and check its kind on every call. An
//! [`Access`] is made once from a [`MessageLayout`] (the kind checked against what the
//! access reads, [`AccessKind`]) and carries what a read needs: the offset, how presence
//! is stored, the child layout. A read through it compares the block's layout id with the
//! one the access was made for; on a match every fact the access recorded holds for the
//! block (layout ids are unique per process, and clones of a [`Layouts`](crate::Layouts) are the same
//! layouts), so the load is sound; on a mismatch the read returns `None`.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::block::{as_text, BlockRef};
use crate::field::{Bytes, List, Message};
use crate::layout::{FieldKind, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition, SlotIndex, NO_INDEX};
use crate::raw::{RawStr, RawVec};
use crate::scalar::Scalar;
use crate::SlotMismatch;

/// What an [`Access`] reads. Sealed; the implementations are a number type (`Access<i64>`:
/// a singular number of that width) and the [`field`](crate::field) markers
/// [`Bytes`](crate::field::Bytes) (a singular string or bytes field), [`Message`](crate::field::Message)
/// (a singular message or group), [`List`](crate::field::List)`<T>` of a number type, of `Bytes`
/// and of `Message` (a repeated message or group field, or a map field: its entries).
pub trait AccessKind: sealed::Sealed {
    /// Whether `slot` holds what this access reads.
    fn accepts(slot: &FieldSlot) -> bool;
    /// What [`SlotMismatch::wanted`] says when it does not.
    const WANTED: &'static str;
}
mod sealed {
    pub trait Sealed {}
}

fn is_bytes(kind: FieldKind) -> bool {
    matches!(kind, FieldKind::String | FieldKind::Bytes)
}

// Numbers, singular and repeated: every `Scalar` (sealed, so no other type gets in).
impl<T: Scalar> sealed::Sealed for T {}
impl<T: Scalar> AccessKind for T {
    fn accepts(slot: &FieldSlot) -> bool {
        slot.repetition == Repetition::Singular && T::fits(slot.kind)
    }
    const WANTED: &'static str = "a singular number of this width";
}
impl<T: Scalar> sealed::Sealed for List<T> {}
impl<T: Scalar> AccessKind for List<T> {
    fn accepts(slot: &FieldSlot) -> bool {
        slot.repetition == Repetition::Repeated && T::fits(slot.kind)
    }
    const WANTED: &'static str = "a repeated number of this width";
}

impl sealed::Sealed for Bytes {}
impl AccessKind for Bytes {
    fn accepts(slot: &FieldSlot) -> bool {
        slot.repetition == Repetition::Singular && is_bytes(slot.kind)
    }
    const WANTED: &'static str = "a singular string or bytes field";
}
impl sealed::Sealed for Message {}
impl AccessKind for Message {
    fn accepts(slot: &FieldSlot) -> bool {
        slot.repetition == Repetition::Singular && slot.kind.is_message()
    }
    const WANTED: &'static str = "a singular message field";
}
impl sealed::Sealed for List<Bytes> {}
impl AccessKind for List<Bytes> {
    fn accepts(slot: &FieldSlot) -> bool {
        slot.repetition == Repetition::Repeated && is_bytes(slot.kind)
    }
    const WANTED: &'static str = "a repeated string or bytes field";
}
impl sealed::Sealed for List<Message> {}
impl AccessKind for List<Message> {
    fn accepts(slot: &FieldSlot) -> bool {
        slot.repetition != Repetition::Singular && slot.kind.is_message()
    }
    const WANTED: &'static str = "a repeated message or map field";
}

/// How a singular slot's presence is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Presence {
    /// No explicit presence (proto3 implicit fields): always "set"; callers compare with
    /// the default. Repeated slots use this too (their length is their presence).
    Always,
    /// A presence bit: the word's byte offset and the bit's mask.
    Bit { word: u32, mask: u32 },
    /// A oneof member: the case word's byte offset and the member's field number.
    Case { word: u32, number: u32 },
    /// A singular message outside a oneof: a non-null child pointer.
    Pointer,
}

/// A slot of one layout, checked once to hold what `K` reads. Made by
/// [`MessageLayout::access`]; read with [`BlockRef`]'s `*_at` methods.
pub struct Access<K: AccessKind> {
    layout: u64,
    offset: u32,
    presence: Presence,
    child: u32,
    slot: SlotIndex,
    /// The slot's [`FieldSlot::validate_utf8`]: a decoder that checks proto3 strings
    /// checked this one.
    validate_utf8: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K: AccessKind> Clone for Access<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K: AccessKind> Copy for Access<K> {}
impl<K: AccessKind> std::fmt::Debug for Access<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("layout", &format_args!("{:#x}", self.layout))
            .field("slot", &self.slot)
            .field("offset", &self.offset)
            .field("presence", &self.presence)
            .finish()
    }
}

impl<K: AccessKind> Access<K> {
    /// The id of the layout this access reads ([`MessageLayout::id`]).
    pub fn layout_id(&self) -> u64 {
        self.layout
    }
    /// The slot it reads.
    pub fn slot(&self) -> SlotIndex {
        self.slot
    }
    /// The child layout (messages, groups, map entries), if any.
    pub fn child(&self) -> Option<LayoutIndex> {
        (self.child != NO_INDEX).then_some(LayoutIndex::new(self.child))
    }
}

impl MessageLayout {
    /// A typed access to slot `si`, if the slot holds what `K` reads. Panics if `si` is not
    /// a slot of this layout.
    pub fn access<K: AccessKind>(&self, si: SlotIndex) -> Result<Access<K>, SlotMismatch> {
        let slot = self.slot(si);
        if !K::accepts(slot) {
            return Err(SlotMismatch {
                slot: si.index() as u32,
                number: slot.number,
                kind: slot.kind,
                repetition: slot.repetition,
                wanted: K::WANTED,
            });
        }
        let presence = if slot.repetition != Repetition::Singular {
            Presence::Always
        } else if slot.oneof != NO_INDEX {
            Presence::Case { word: self.oneof_case_offset(slot.oneof), number: slot.number }
        } else if slot.kind.is_message() {
            Presence::Pointer
        } else if slot.hasbit != NO_INDEX {
            Presence::Bit { word: 4 * (slot.hasbit / 32), mask: 1 << (slot.hasbit % 32) }
        } else {
            Presence::Always
        };
        Ok(Access {
            layout: self.id(),
            offset: slot.offset,
            presence,
            child: slot.child,
            slot: si,
            validate_utf8: slot.validate_utf8,
            _kind: PhantomData,
        })
    }
}

impl Layouts {
    /// The default instance of layout `index`: a zeroed block (every field absent).
    pub fn empty_block(&self, index: LayoutIndex) -> BlockRef<'_> {
        // SAFETY: a zeroed, 8-aligned block of the layout's size is a valid empty message
        // (invariant 1); it is never written and lives as long as `self`.
        unsafe { BlockRef::from_raw(self.empty_block_ptr(index), self, index) }
    }
}

/// The strings or bytes of a repeated `string`/`bytes` field, in order, as bytes;
/// [`texts`](Self::texts) and [`strs`](Self::strs) read them as text.
#[derive(Clone, Debug)]
pub struct StrIter<'a> {
    elems: std::slice::Iter<'a, RawStr>,
    /// The decoder checked every element for UTF-8 ([`BlockRef::from_decoded`]).
    checked: bool,
}

impl<'a> StrIter<'a> {
    /// The elements as text, each `Ok` if it is UTF-8 (not checked again where the
    /// decoder checked it), else `Err` with its bytes.
    #[inline]
    pub fn texts(self) -> Texts<'a> {
        Texts { elems: self.elems, checked: self.checked }
    }

    /// The elements as `&str` if every one is UTF-8 (checked here, all at once, unless
    /// the decoder checked them); `None` if one is not.
    #[inline]
    pub fn strs(self) -> Option<StrList<'a>> {
        if !self.checked && self.clone().any(|b| std::str::from_utf8(b).is_err()) {
            return None;
        }
        Some(StrList { elems: self.elems })
    }
}

/// The elements of a repeated `string` field as text, each checked to be UTF-8
/// ([`StrIter::texts`]): `Err` holds the bytes of one that is not.
#[derive(Clone, Debug)]
pub struct Texts<'a> {
    elems: std::slice::Iter<'a, RawStr>,
    checked: bool,
}

impl<'a> Iterator for Texts<'a> {
    type Item = Result<&'a str, &'a [u8]>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: elements are views into the tree (invariant 5); `checked` only where the
        // decoder checked every element (`BlockRef::from_decoded`'s contract).
        self.elems.next().map(|s| unsafe { as_text(s.as_slice(), self.checked) })
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.elems.size_hint()
    }
}
impl ExactSizeIterator for Texts<'_> {}

/// The elements of a repeated `string` field, every one UTF-8 ([`StrIter::strs`]).
#[derive(Clone, Debug)]
pub struct StrList<'a> {
    elems: std::slice::Iter<'a, RawStr>,
}

impl<'a> Iterator for StrList<'a> {
    type Item = &'a str;
    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        // SAFETY: elements are views into the tree (invariant 5), every one UTF-8: checked
        // by the decoder or by `StrIter::strs` before this list was made.
        self.elems.next().map(|s| unsafe { std::str::from_utf8_unchecked(s.as_slice()) })
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.elems.size_hint()
    }
}
impl ExactSizeIterator for StrList<'_> {}
impl DoubleEndedIterator for StrList<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        // SAFETY: as in `next`.
        self.elems.next_back().map(|s| unsafe { std::str::from_utf8_unchecked(s.as_slice()) })
    }
}

impl<'a> Iterator for StrIter<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        // SAFETY: elements are views into the tree's input or arena (invariant 5), which
        // live for 'a.
        self.elems.next().map(|s| unsafe { s.as_slice() })
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.elems.size_hint()
    }
}
impl ExactSizeIterator for StrIter<'_> {}
impl DoubleEndedIterator for StrIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        // SAFETY: as in `next`.
        self.elems.next_back().map(|s| unsafe { s.as_slice() })
    }
}

/// The child blocks of a repeated message, group or map field, in order.
#[derive(Clone)]
pub struct ChildIter<'a> {
    elems: std::slice::Iter<'a, NonNull<u8>>,
    layout: &'a MessageLayout,
    /// The block holding the field (its tree's layouts and UTF-8 guarantee).
    parent: BlockRef<'a>,
}

impl<'a> ChildIter<'a> {
    /// Child `i`, if in range.
    #[inline]
    pub fn get(&self, i: usize) -> Option<BlockRef<'a>> {
        self.elems.as_slice().get(i).map(|&p| self.block(p))
    }

    #[inline]
    fn block(&self, ptr: NonNull<u8>) -> BlockRef<'a> {
        self.parent.child_of(ptr, self.layout)
    }
}

impl std::fmt::Debug for ChildIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildIter").field("len", &self.elems.len()).finish()
    }
}

impl<'a> Iterator for ChildIter<'a> {
    type Item = BlockRef<'a>;
    #[inline]
    fn next(&mut self) -> Option<BlockRef<'a>> {
        let p = *self.elems.next()?;
        Some(self.block(p))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.elems.size_hint()
    }
}
impl ExactSizeIterator for ChildIter<'_> {}
impl DoubleEndedIterator for ChildIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        let p = *self.elems.next_back()?;
        Some(self.block(p))
    }
}

impl<'a> BlockRef<'a> {
    /// Whether this block is of the layout `access` was made for.
    #[inline(always)]
    fn is_of<K: AccessKind>(&self, access: &Access<K>) -> bool {
        self.layout().id() == access.layout
    }

    /// Presence as [`is_set`](Self::is_set) reports it, for a block of the access's layout.
    #[inline(always)]
    fn set_at<K: AccessKind>(&self, access: &Access<K>) -> bool {
        match access.presence {
            Presence::Always => true,
            Presence::Bit { word, mask } => self.read::<u32>(word) & mask != 0,
            Presence::Case { word, number } => self.read::<u32>(word) == number,
            Presence::Pointer => !self.read::<*const u8>(access.offset).is_null(),
        }
    }

    /// Whether the field is set ([`is_set`](Self::is_set): fields without explicit
    /// presence report `true`), or `None` if the block is not of the access's layout.
    #[inline]
    pub fn is_set_at<K: AccessKind>(&self, access: &Access<K>) -> Option<bool> {
        self.is_of(access).then(|| self.set_at(access))
    }

    /// A singular number: whether it is set, and the stored value (zero for an inactive
    /// oneof member, whose shared slot may hold another member's bytes); `None` if the
    /// block is not of the access's layout.
    #[inline(always)]
    pub fn get_at<T: Scalar>(&self, access: &Access<T>) -> Option<(bool, T)> {
        if !self.is_of(access) {
            return None;
        }
        Some(match access.presence {
            Presence::Case { .. } if !self.set_at(access) => (false, T::ZERO),
            // The access checked that the slot holds a `T` (`T`'s `AccessKind::accepts`).
            _ => (self.set_at(access), self.read::<T>(access.offset)),
        })
    }

    /// A singular string or bytes field, like [`get_at`](Self::get_at).
    #[inline(always)]
    pub fn get_bytes_at(&self, access: &Access<Bytes>) -> Option<(bool, &'a [u8])> {
        if !self.is_of(access) {
            return None;
        }
        let set = self.set_at(access);
        if !set && matches!(access.presence, Presence::Case { .. }) {
            return Some((false, &[]));
        }
        let s: RawStr = self.read(access.offset);
        // SAFETY: the slot holds a RawStr (`Bytes::accepts`, and an active member if a oneof
        // member); invariant 5; the tree lives for 'a.
        Some((set, unsafe { s.as_slice() }))
    }

    /// A singular string field as text, like [`get_bytes_at`](Self::get_bytes_at): `Ok`
    /// if it is UTF-8 (not checked again where the decoder checked it), else `Err` with
    /// the bytes.
    #[inline(always)]
    pub fn get_str_at(&self, access: &Access<Bytes>) -> Option<(bool, Result<&'a str, &'a [u8]>)> {
        let (set, bytes) = self.get_bytes_at(access)?;
        // SAFETY: the bytes are the slot's of this tree (the block is of the access's
        // layout); `utf8_checked` only where the decoder checked them
        // (`BlockRef::from_decoded`'s contract).
        Some((set, unsafe { as_text(bytes, self.utf8_checked(access.validate_utf8)) }))
    }

    /// A singular message field: `Some(None)` when absent, `None` if the block is not of
    /// the access's layout.
    #[inline(always)]
    pub fn child_at(&self, access: &Access<Message>) -> Option<Option<BlockRef<'a>>> {
        if !self.is_of(access) {
            return None;
        }
        if !self.set_at(access) {
            return Some(None);
        }
        let Some(ptr) = NonNull::new(self.read::<*mut u8>(access.offset)) else { return Some(None) };
        // The access's child index came from this layout's slot (`Layouts::new` made it).
        Some(Some(self.child_of(ptr, self.layouts().get(LayoutIndex::new(access.child)))))
    }

    /// A repeated number field as a slice, or `None` if the block is not of the access's
    /// layout.
    #[inline(always)]
    pub fn slice_at<T: Scalar>(&self, access: &Access<List<T>>) -> Option<&'a [T]> {
        if !self.is_of(access) {
            return None;
        }
        // SAFETY: the slot holds a vector of `T`-wide numbers (`List<T>::accepts`).
        Some(unsafe { self.vec_as_slice::<T>(access.offset) })
    }

    /// A repeated string or bytes field's elements, or `None` if the block is not of the
    /// access's layout.
    #[inline]
    pub fn strs_at(&self, access: &Access<List<Bytes>>) -> Option<StrIter<'a>> {
        if !self.is_of(access) {
            return None;
        }
        // SAFETY: the slot holds a vector of RawStr (`List<Bytes>::accepts`).
        let elems = unsafe { self.vec_as_slice::<RawStr>(access.offset) };
        Some(StrIter { elems: elems.iter(), checked: self.utf8_checked(access.validate_utf8) })
    }

    /// A repeated message, group or map field's child blocks, or `None` if the block is
    /// not of the access's layout.
    #[inline]
    pub fn children_at(&self, access: &Access<List<Message>>) -> Option<ChildIter<'a>> {
        if !self.is_of(access) {
            return None;
        }
        // SAFETY: the slot holds a vector of child block addresses, never null
        // (`List<Message>::accepts`, invariant 4); `NonNull<u8>` has the layout of a pointer.
        let elems = unsafe { self.vec_as_slice::<NonNull<u8>>(access.offset) };
        let layout = self.layouts().get(LayoutIndex::new(access.child));
        Some(ChildIter { elems: elems.iter(), layout, parent: *self })
    }

    /// A repeated number slot as a slice. Panics if the slot does not hold `T`s.
    #[inline]
    pub fn vec_slice<T: Scalar>(&self, si: SlotIndex) -> &'a [T] {
        let slot = self.layout().slot(si);
        assert!(List::<T>::accepts(slot), "slot {si:?} does not hold this type");
        // SAFETY: checked just above.
        unsafe { self.vec_as_slice::<T>(slot.offset) }
    }

    /// A repeated string or bytes slot's elements. Panics if the slot is not one.
    #[inline]
    pub fn vec_strs(&self, si: SlotIndex) -> StrIter<'a> {
        let slot = self.layout().slot(si);
        assert!(List::<Bytes>::accepts(slot), "slot {si:?} is not string or bytes");
        // SAFETY: checked just above.
        let elems = unsafe { self.vec_as_slice::<RawStr>(slot.offset) };
        StrIter { elems: elems.iter(), checked: self.utf8_checked(slot.validate_utf8) }
    }

    /// A repeated message, group or map slot's children. Panics if the slot is not one.
    #[inline]
    pub fn vec_children(&self, si: SlotIndex) -> ChildIter<'a> {
        let slot = self.layout().slot(si);
        assert!(List::<Message>::accepts(slot), "slot {si:?} is not a message");
        // SAFETY: checked just above (invariant 4: addresses, never null).
        let elems = unsafe { self.vec_as_slice::<NonNull<u8>>(slot.offset) };
        ChildIter { elems: elems.iter(), layout: self.layouts().get(LayoutIndex::new(slot.child)), parent: *self }
    }

    /// The initialised elements of the vector at `offset`.
    ///
    /// # Safety
    /// `offset` is a repeated slot of this block's layout whose elements are `E`s.
    #[inline]
    unsafe fn vec_as_slice<E>(&self, offset: u32) -> &'a [E] {
        let v: RawVec = self.read(offset);
        if v.len == 0 {
            return &[];
        }
        // SAFETY: the caller says the slot's elements are `E`s; a non-empty vector's buffer
        // is an arena allocation aligned to 8 (`Arena::alloc_uninit`) holding `len`
        // initialised elements (invariant 4); nothing writes the tree any more and the
        // arena lives for 'a (`BlockRef::from_raw`'s contract).
        unsafe { std::slice::from_raw_parts(v.ptr.cast::<E>(), v.len as usize) }
    }
}
