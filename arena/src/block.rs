//! The block writer (`BlockMut`) and reader (`BlockRef`): the one place that writes and reads tree memory.
//!
//! [`BlockMut`] (for the decoders) and [`BlockRef`] (for the views) pair a block pointer with
//! its layout. Constructing one from a raw pointer is `unsafe` (the caller vouches for crate
//! invariant 1); every method after that is safe because it only touches slots of that
//! layout, which [`Layouts::new`](crate::Layouts::new) checked lie inside the block.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::arena::Arena;
use crate::layout::{FieldKind, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition, SlotIndex, NO_INDEX};
use crate::raw::{reserve_vec, RawStr, RawVec};
use crate::scalar::{Scalar, SlotMismatch};
use crate::varint;

/// Writer for one block of a tree being decoded.
///
/// `'a` is the tree's lifetime: the arena its blocks live in, the layouts they follow and
/// the input its strings borrow, all at once, as `bumpalo::Bump::alloc` returns
/// `&'bump mut T`. A block therefore cannot outlive its arena, and string views stored
/// in it cannot outlive the bytes they point at. `'a` is invariant, so a writer cannot be
/// shortened to accept shorter-lived bytes.
///
/// A writer cannot outlive its arena:
///
/// ```compile_fail,E0716
/// use protojit_arena::{Arena, BlockMut, Layouts};
/// let layouts = Layouts::new(&prost_reflect::DescriptorPool::global()).unwrap();
/// let timestamp = layouts.index_of("google.protobuf.Timestamp").unwrap();
/// let mut block = BlockMut::alloc(&Arena::new(), &layouts, timestamp); // arena dropped here
/// block.set(protojit_arena::SlotIndex::new(0), 7i64).unwrap();
/// ```
///
/// nor store a view of bytes that die before the tree:
///
/// ```compile_fail,E0597
/// use protojit_arena::{Arena, BlockMut, Layouts};
/// let layouts = Layouts::new(&prost_reflect::DescriptorPool::global()).unwrap();
/// let any = layouts.index_of("google.protobuf.Any").unwrap();
/// let arena = Arena::new();
/// let mut block = BlockMut::alloc(&arena, &layouts, any);
/// {
///     let url = String::from("type.googleapis.com/x");
///     block.set_bytes(protojit_arena::SlotIndex::new(0), url.as_bytes()).unwrap();
/// }
/// block.set(protojit_arena::SlotIndex::new(0), 1i64).ok();
/// ```
///
/// while the same code with everything alive compiles and runs:
///
/// ```
/// use protojit_arena::{Arena, BlockMut, Layouts, SlotIndex};
/// let layouts = Layouts::new(&prost_reflect::DescriptorPool::global()).unwrap();
/// let any = layouts.index_of("google.protobuf.Any").unwrap();
/// let arena = Arena::new();
/// let url = String::from("type.googleapis.com/x");
/// let mut block = BlockMut::alloc(&arena, &layouts, any);
/// block.set_bytes(SlotIndex::new(0), url.as_bytes()).unwrap();
/// // A number cannot go where a reader expects a string's address:
/// assert!(block.set(SlotIndex::new(0), 0x1000u64).is_err());
/// ```
pub struct BlockMut<'a> {
    ptr: NonNull<u8>,
    layout: &'a MessageLayout,
    layouts: &'a Layouts,
    arena: &'a Arena,
    _invariant: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl<'a> BlockMut<'a> {
    /// A fresh zeroed block of layout `index` in `arena`.
    #[inline]
    pub fn alloc(arena: &'a Arena, layouts: &'a Layouts, index: LayoutIndex) -> BlockMut<'a> {
        let layout = layouts.get(index);
        BlockMut { ptr: arena.alloc_zeroed(layout.size() as usize), layout, layouts, arena, _invariant: PhantomData }
    }

    /// Wraps an existing block.
    ///
    /// # Safety
    /// `ptr` is a block of layout `index` of `layouts` allocated in `arena` (crate
    /// invariants 1-5), nothing reads the tree while the result writes, and every byte
    /// the tree's string views point at lives for `'a`.
    pub unsafe fn from_raw(
        ptr: NonNull<u8>,
        arena: &'a Arena,
        layouts: &'a Layouts,
        index: LayoutIndex,
    ) -> BlockMut<'a> {
        BlockMut { ptr, layout: layouts.get(index), layouts, arena, _invariant: PhantomData }
    }

    /// The block's address.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's layout.
    pub fn layout(&self) -> &'a MessageLayout {
        self.layout
    }

    /// The arena the tree lives in.
    pub fn arena(&self) -> &'a Arena {
        self.arena
    }

    /// A reader of this block for the tree's lifetime `'a`, whose strings are checked when
    /// read as text (a writer cannot vouch for what a decoder checked). Writers of the same
    /// tree that remain (from [`child`](Self::child)) only append past initialised elements
    /// or overwrite slots readers copy out by value: nothing a reader borrowed changes.
    pub fn into_ref(self) -> BlockRef<'a> {
        // SAFETY: the block is of `self.layout` in `self.arena` (this writer's own
        // invariant); the strings it points at live for 'a (`set_bytes` takes `&'a [u8]`);
        // remaining writers only append or overwrite by-value slots (see above).
        unsafe { BlockRef::from_raw(self.ptr, self.layouts, self.layout.index()) }
    }

    #[inline]
    fn at<T>(&self, offset: u32) -> *mut T {
        // SAFETY: every caller passes an offset from this block's layout, whose slots lie
        // inside the block and are naturally aligned (invariant 2); blocks are 8-aligned.
        unsafe { self.ptr.as_ptr().add(offset as usize).cast::<T>() }
    }

    /// The slot at `si`, if it has cardinality `rep` and a kind `ok` accepts.
    #[inline]
    fn slot_of(
        &self,
        si: SlotIndex,
        rep: Repetition,
        ok: impl Fn(FieldKind) -> bool,
        wanted: &'static str,
    ) -> Result<FieldSlot, SlotMismatch> {
        let slot = *self.layout.slot(si);
        let rep_ok = match rep {
            Repetition::Singular => slot.repetition == Repetition::Singular,
            _ => slot.repetition != Repetition::Singular,
        };
        if rep_ok && ok(slot.kind) {
            Ok(slot)
        } else {
            Err(SlotMismatch {
                slot: si.index() as u32,
                number: slot.number,
                kind: slot.kind,
                repetition: slot.repetition,
                wanted,
            })
        }
    }

    /// Sets a singular number field: stores the value, its presence bit and its oneof case.
    #[inline]
    pub fn set<T: Scalar>(&mut self, si: SlotIndex, value: T) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Singular, T::fits, "a singular number of this width")?;
        // SAFETY: `slot_of` checked it.
        unsafe { self.put_unchecked(&slot, value) };
        Ok(())
    }

    /// Sets a singular string or bytes field to a view of `bytes` (not copied).
    #[inline]
    pub fn set_bytes(&mut self, si: SlotIndex, bytes: &'a [u8]) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Singular, is_bytes, "a singular string or bytes field")?;
        // SAFETY: `slot_of` checked it.
        unsafe { self.put_bytes_unchecked(&slot, bytes) };
        Ok(())
    }

    /// [`set`](Self::set) or [`push`](Self::push) (by the slot's cardinality) without the
    /// slot check: the interpreter's store, whose match on the slot's kind already chose
    /// `T`. Checked in debug builds.
    ///
    /// # Safety
    /// `slot` is a slot of this block's layout, of a kind `T` fits.
    #[inline]
    pub(crate) unsafe fn put_unchecked<T: Scalar>(&mut self, slot: &FieldSlot, value: T) {
        debug_assert!(T::fits(slot.kind), "slot {} does not hold this number type", slot.number);
        if slot.repetition == Repetition::Singular {
            // SAFETY: see `at`; the slot holds a number of `T`'s width (the contract).
            unsafe { self.at::<T>(slot.offset).write(value) };
            self.mark_present(slot);
        } else {
            // SAFETY: a repeated slot of `T`s (the contract).
            unsafe { self.push_elem(slot, value) };
        }
    }

    /// [`set_bytes`](Self::set_bytes) or [`push_bytes`](Self::push_bytes) without the
    /// slot check, as [`put_unchecked`](Self::put_unchecked).
    ///
    /// # Safety
    /// `slot` is a string or bytes slot of this block's layout.
    #[inline]
    pub(crate) unsafe fn put_bytes_unchecked(&mut self, slot: &FieldSlot, bytes: &'a [u8]) {
        debug_assert!(is_bytes(slot.kind), "slot {} is not a string or bytes field", slot.number);
        if slot.repetition == Repetition::Singular {
            // SAFETY: see `at`; the slot holds a RawStr; `bytes` lives for the tree ('a).
            unsafe { self.at::<RawStr>(slot.offset).write(RawStr::from_slice(bytes)) };
            self.mark_present(slot);
        } else {
            // SAFETY: a repeated slot of RawStr elements (the contract); `bytes` lives for 'a.
            unsafe { self.push_elem(slot, RawStr::from_slice(bytes)) };
        }
    }

    #[inline]
    fn mark_present(&mut self, slot: &FieldSlot) {
        if slot.hasbit != NO_INDEX {
            let word = self.at::<u32>(4 * (slot.hasbit / 32));
            // SAFETY: hasbit < 32 * hasbit_words (invariant 2), words start at offset 0.
            unsafe { *word |= 1 << (slot.hasbit % 32) };
        }
        if slot.oneof != NO_INDEX {
            let case = self.at::<u32>(self.layout.oneof_case_offset(slot.oneof));
            // SAFETY: case words lie inside the block header (invariant 2).
            unsafe { *case = slot.number };
        }
    }

    /// The child block of a singular message or group field, allocated (zeroed) if
    /// absent. A message seen twice merges into the same child; a oneof member whose case
    /// is not active gets a fresh child (the shared slot may hold another member's bytes).
    pub fn child(&mut self, si: SlotIndex) -> Result<BlockMut<'a>, SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Singular, FieldKind::is_message, "a singular message field")?;
        // SAFETY: `slot_of` checked it.
        Ok(unsafe { self.child_unchecked(&slot) })
    }

    /// [`child`](Self::child) without the slot check (the interpreter, whose match on the
    /// slot's kind and cardinality chose it). Checked in debug builds.
    ///
    /// # Safety
    /// `slot` is a singular message or group slot of this block's layout.
    #[inline]
    pub(crate) unsafe fn child_unchecked(&mut self, slot: &FieldSlot) -> BlockMut<'a> {
        debug_assert!(slot.repetition == Repetition::Singular && slot.kind.is_message());
        let child_layout = self.layouts.get(LayoutIndex::new(slot.child));
        let active = slot.oneof == NO_INDEX
            // SAFETY: case words lie inside the block header (invariant 2).
            || unsafe { *self.at::<u32>(self.layout.oneof_case_offset(slot.oneof)) } == slot.number;
        let p = self.at::<*mut u8>(slot.offset);
        // SAFETY: the slot holds null or a child block of `slot.child` (invariant 3) when active.
        let existing = if active { NonNull::new(unsafe { *p }) } else { None };
        let child = match existing {
            Some(ptr) => ptr,
            None => {
                let ptr = self.arena.alloc_zeroed(child_layout.size() as usize);
                // SAFETY: pointer-sized slot inside the block.
                unsafe { *p = ptr.as_ptr() };
                ptr
            }
        };
        self.mark_present(slot);
        self.sibling(child, child_layout)
    }

    fn sibling(&self, ptr: NonNull<u8>, layout: &'a MessageLayout) -> BlockMut<'a> {
        BlockMut { ptr, layout, layouts: self.layouts, arena: self.arena, _invariant: PhantomData }
    }

    /// The vector of repeated slot `slot`.
    ///
    /// # Safety
    /// `slot` is a repeated or map slot of this block's layout.
    unsafe fn vec(&mut self, slot: &FieldSlot) -> &mut RawVec {
        // SAFETY: a repeated slot holds a RawVec (invariant 4), inside the block
        // (invariant 2); `&mut self` makes this the only reference to it.
        unsafe { &mut *self.at::<RawVec>(slot.offset) }
    }

    /// Makes room for `additional` more elements of a repeated field (packed pre-sizing).
    /// Callers size `additional` from bytes that are present, never from a claimed length.
    pub fn reserve(&mut self, si: SlotIndex, additional: usize) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Repeated, |_| true, "a repeated field")?;
        let arena = self.arena;
        // SAFETY: `slot` is repeated.
        reserve_vec(unsafe { self.vec(&slot) }, slot.elem_size, additional, arena);
        Ok(())
    }

    /// Appends a value to a repeated number field.
    #[inline]
    pub fn push<T: Scalar>(&mut self, si: SlotIndex, value: T) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Repeated, T::fits, "a repeated number of this width")?;
        // SAFETY: `slot_of` checked it.
        unsafe { self.put_unchecked(&slot, value) };
        Ok(())
    }

    /// Appends a view of `bytes` (not copied) to a repeated string or bytes field.
    #[inline]
    pub fn push_bytes(&mut self, si: SlotIndex, bytes: &'a [u8]) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Repeated, is_bytes, "a repeated string or bytes field")?;
        // SAFETY: `slot_of` checked it.
        unsafe { self.put_bytes_unchecked(&slot, bytes) };
        Ok(())
    }

    /// # Safety
    /// `slot` is a repeated slot whose elements are `T`s.
    #[inline]
    unsafe fn push_elem<T: Copy>(&mut self, slot: &FieldSlot, value: T) {
        let arena = self.arena;
        // SAFETY: the caller's contract.
        let v = unsafe { self.vec(slot) };
        if v.len == v.cap {
            reserve_vec(v, slot.elem_size, 1, arena);
        }
        // SAFETY: len < cap after reserve; elements are `elem_size == size_of::<T>()` bytes.
        unsafe { v.ptr.cast::<T>().add(v.len as usize).write(value) };
        v.len += 1;
    }

    /// Appends raw little-endian fixed-width elements (packed fixed32/64, float, double);
    /// a trailing partial element is ignored (the caller reports it as truncated).
    pub fn extend_fixed(&mut self, si: SlotIndex, bytes: &[u8]) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Repeated, |k| k.fixed_width() != 0, "a repeated fixed-width field")?;
        let width = slot.elem_size as usize;
        debug_assert_eq!(width, slot.kind.fixed_width() as usize);
        let n = bytes.len() / width;
        let arena = self.arena;
        // SAFETY: `slot` is repeated.
        let v = unsafe { self.vec(&slot) };
        reserve_vec(v, slot.elem_size, n, arena);
        if cfg!(target_endian = "little") {
            // SAFETY: reserved room for `n` more elements of `width` bytes; all bit
            // patterns are valid for fixed-width number kinds.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.ptr.add(v.len as usize * width), n * width) };
        } else {
            for (i, chunk) in bytes.chunks_exact(width).enumerate() {
                let dst = v.ptr.wrapping_add((v.len as usize + i) * width);
                for (j, b) in chunk.iter().rev().enumerate() {
                    // SAFETY: as above, byte-reversed on big-endian hosts.
                    unsafe { dst.add(j).write(*b) };
                }
            }
        }
        v.len += n as u32;
        Ok(())
    }

    /// Appends every varint of a packed run (`data` holds exactly the run), converted by
    /// `convert`, to repeated slot `slot`: one reservation, then stores without per-element
    /// checks. On a malformed varint the elements before it are kept and its error is
    /// returned with the offset relative to `data`.
    ///
    /// Crate-private: `convert` runs while the vector is borrowed, and a caller's closure
    /// could reach another writer of the same block (two `child()` calls give two) and
    /// grow the vector under the stores. The interpreter passes only plain conversions.
    ///
    /// # Safety
    /// `slot` is a repeated slot of this block's layout, of a kind `T` fits (the
    /// interpreter's packed runs, whose match on the kind chose `T`; checked in debug
    /// builds).
    #[inline]
    pub(crate) unsafe fn extend_varints<T: Scalar>(
        &mut self,
        slot: &FieldSlot,
        data: &[u8],
        convert: impl Fn(u64) -> T,
    ) -> Result<(), crate::DecodeError> {
        debug_assert!(slot.repetition != Repetition::Singular && T::fits(slot.kind));
        let arena = self.arena;
        // SAFETY: `slot` is repeated (the contract).
        let v = unsafe { self.vec(slot) };
        // Every varint that decodes ends in its own byte below 0x80, so counting those
        // bytes bounds the element count, exactly for a run that decodes whole: the vector
        // holds no more than the run decodes to. (The count is one pass, eight bytes a
        // step, cheap next to the decode. Reserving one element per input byte instead
        // held up to 8x the decoded size for runs of 10-byte varints.)
        let terminators = varint::count_terminators(data);
        reserve_vec(v, slot.elem_size, terminators, arena);
        // SAFETY: `v.ptr` holds `v.len` elements of `T` (the contract: the slot's elements
        // are `T`s) and room for `terminators` more (reserved just above).
        let (n, result) = unsafe { varint::decode_run(v.ptr.cast::<T>(), v.len as usize, data, convert) };
        v.len = n as u32;
        result
    }

    /// Appends a zeroed child block to a repeated message, group or map field: the block
    /// is allocated on its own and the vector holds its address, so growing the vector
    /// copies 8 bytes per element, never whole blocks.
    pub fn push_child(&mut self, si: SlotIndex) -> Result<BlockMut<'a>, SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Repeated, FieldKind::is_message, "a repeated message field")?;
        // SAFETY: `slot_of` checked it.
        Ok(unsafe { self.push_child_unchecked(&slot) })
    }

    /// The block a message or group value of `slot` is decoded into: the child of a
    /// singular slot ([`child_unchecked`](Self::child_unchecked)), a new element of a
    /// repeated one ([`push_child_unchecked`](Self::push_child_unchecked)).
    ///
    /// # Safety
    /// `slot` is a message or group slot of this block's layout.
    #[inline]
    pub(crate) unsafe fn value_child_unchecked(&mut self, slot: &FieldSlot) -> BlockMut<'a> {
        // SAFETY: the caller's contract, by the slot's cardinality.
        unsafe {
            if slot.repetition == Repetition::Singular {
                self.child_unchecked(slot)
            } else {
                self.push_child_unchecked(slot)
            }
        }
    }

    /// [`push_child`](Self::push_child) without the slot check, as
    /// [`child_unchecked`](Self::child_unchecked).
    ///
    /// # Safety
    /// `slot` is a repeated (or map) message or group slot of this block's layout.
    #[inline]
    pub(crate) unsafe fn push_child_unchecked(&mut self, slot: &FieldSlot) -> BlockMut<'a> {
        debug_assert!(slot.repetition != Repetition::Singular && slot.kind.is_message());
        let child_layout = self.layouts.get(LayoutIndex::new(slot.child));
        let child = self.arena.alloc_zeroed(child_layout.size() as usize);
        // SAFETY: `slot` is repeated and its elements are block pointers (invariant 4).
        unsafe { self.push_elem(slot, child.as_ptr()) };
        self.sibling(child, child_layout)
    }

    /// Appends an empty element to a repeated message or map field: the address of the
    /// layouts' shared zero block of the child type ([`Layouts::empty_block`]), so an
    /// element whose encoding is empty costs 8 bytes, not a block. Nothing writes to it
    /// later (repeated elements never merge), which is why no writer is returned.
    pub fn push_empty_child(&mut self, si: SlotIndex) -> Result<(), SlotMismatch> {
        let slot = self.slot_of(si, Repetition::Repeated, |k| k == FieldKind::Message, "a repeated message field")?;
        let empty = self.layouts.empty_block(LayoutIndex::new(slot.child)).as_ptr();
        // SAFETY: `slot` is repeated and its elements are block pointers (invariant 4).
        unsafe { self.push_elem(&slot, empty.as_ptr()) };
        Ok(())
    }

    /// Records an unknown field: its complete wire bytes (tag and value), not copied.
    pub fn push_unknown(&mut self, span: &'a [u8]) {
        let arena = self.arena;
        // SAFETY: the unknown-field vector lies inside the block (invariant 2).
        let v = unsafe { &mut *self.at::<RawVec>(self.layout.unknown_offset()) };
        if v.len == v.cap {
            reserve_vec(v, 16, 1, arena);
        }
        // SAFETY: len < cap; elements are RawStr.
        unsafe { v.ptr.cast::<RawStr>().add(v.len as usize).write(RawStr::from_slice(span)) };
        v.len += 1;
    }
}

/// `bytes` as text: unchecked when `checked`, else checked (`Err(bytes)` if not UTF-8).
///
/// # Safety
/// `checked` only if `bytes` are valid UTF-8.
#[inline(always)]
pub(crate) unsafe fn as_text(bytes: &[u8], checked: bool) -> Result<&str, &[u8]> {
    if checked {
        // SAFETY: the caller's contract.
        Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).map_err(|_| bytes)
    }
}

fn is_bytes(kind: FieldKind) -> bool {
    matches!(kind, FieldKind::String | FieldKind::Bytes)
}

/// Reader for one block of a decoded tree, valid for `'a` (the tree's input and arena).
///
/// It carries the layouts of its tree, so [`child`](BlockRef::child) and
/// [`vec_child`](BlockRef::vec_child) always interpret a child with the layout it was
/// written with. Reads check the slot's kind: strings and bytes come only from string or
/// bytes slots, numbers only from number slots of their width, and an inactive oneof
/// member reads as absent (its shared slot may hold another member's bytes).
#[derive(Clone, Copy)]
pub struct BlockRef<'a> {
    ptr: NonNull<u8>,
    layout: &'a MessageLayout,
    layouts: &'a Layouts,
    /// The decoder checked that every `string` slot marked
    /// [`validate_utf8`](FieldSlot::validate_utf8) holds UTF-8 ([`from_decoded`](Self::from_decoded)):
    /// those read as text without a second check. Children inherit it.
    utf8_checked: bool,
    _tree: PhantomData<&'a [u8]>,
}

impl<'a> BlockRef<'a> {
    /// Wraps a block of a finished tree.
    ///
    /// # Safety
    /// `ptr` is a block of layout `index` of `layouts` (invariants 1-5), nothing writes to
    /// the tree any more, and the input and arena it points into live for `'a`.
    ///
    /// Its strings are checked for UTF-8 when read as text; a tree a decoder wrote
    /// under a UTF-8 policy is wrapped with [`from_decoded`](Self::from_decoded) instead.
    pub unsafe fn from_raw(ptr: NonNull<u8>, layouts: &'a Layouts, index: LayoutIndex) -> BlockRef<'a> {
        BlockRef { ptr, layout: layouts.get(index), layouts, utf8_checked: false, _tree: PhantomData }
    }

    /// Wraps the root of a tree a decoder wrote; `verify_utf8_checked`: its UTF-8 policy
    /// checked the strings whose features say VERIFY ([`Utf8Check::verify_checked`](crate::Utf8Check::verify_checked)),
    /// so the text reads ([`get_str`](Self::get_str) and the like) return them unchecked.
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw), and if `verify_utf8_checked`, every `string` slot
    /// with [`FieldSlot::validate_utf8`] holds valid UTF-8.
    pub unsafe fn from_decoded(
        ptr: NonNull<u8>,
        layouts: &'a Layouts,
        index: LayoutIndex,
        verify_utf8_checked: bool,
    ) -> BlockRef<'a> {
        BlockRef { ptr, layout: layouts.get(index), layouts, utf8_checked: verify_utf8_checked, _tree: PhantomData }
    }

    /// The block's address.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's layout.
    pub fn layout(&self) -> &'a MessageLayout {
        self.layout
    }

    /// The layouts of the tree.
    pub fn layouts(&self) -> &'a Layouts {
        self.layouts
    }

    #[inline(always)]
    pub(crate) fn read<T: Copy>(&self, offset: u32) -> T {
        // SAFETY: offsets come from this block's layout (invariant 2); callers read a `T`
        // only where the slot holds one.
        unsafe { self.ptr.as_ptr().add(offset as usize).cast::<T>().read() }
    }

    /// A reader for child block `ptr` of `layout`, in this reader's tree: `ptr` must come
    /// from a message slot or element whose child layout is `layout` (invariants 3, 4).
    #[inline]
    pub(crate) fn child_of(&self, ptr: NonNull<u8>, layout: &'a MessageLayout) -> BlockRef<'a> {
        BlockRef { ptr, layout, layouts: self.layouts, utf8_checked: self.utf8_checked, _tree: PhantomData }
    }

    /// Whether the decoder checked the bytes of a string slot with this
    /// [`validate_utf8`](FieldSlot::validate_utf8) flag.
    #[inline(always)]
    pub(crate) fn utf8_checked(&self, validate_utf8: bool) -> bool {
        self.utf8_checked && validate_utf8
    }

    /// Whether the decoder checked the text of `string` slot `si` (every element of a
    /// repeated one) for UTF-8: [`get_str`](Self::get_str) then reads it without another
    /// check; else the bytes are as the wire had them. Panics if `si` is out of range.
    #[inline]
    pub fn text_checked(&self, si: SlotIndex) -> bool {
        self.utf8_checked(self.layout.slot(si).validate_utf8)
    }

    /// The text of a singular `string` (or `bytes`) field, as [`get_bytes`](Self::get_bytes)
    /// reads it: `Ok` if it is UTF-8 (not checked again where the decoder checked it),
    /// else `Err` with the bytes. Panics if the slot is not a string or bytes field.
    #[inline]
    pub fn get_str(&self, si: SlotIndex) -> Result<&'a str, &'a [u8]> {
        let bytes = self.get_bytes(si);
        // SAFETY: `utf8_checked` is true only for a slot of this tree the decoder checked
        // (`from_decoded`'s contract), and `bytes` are that slot's.
        unsafe { as_text(bytes, self.utf8_checked(self.layout.slot(si).validate_utf8)) }
    }

    /// Element `i` of a repeated `string` (or `bytes`) field as text, like
    /// [`get_str`](Self::get_str). Panics as [`vec_get_bytes`](Self::vec_get_bytes).
    #[inline]
    pub fn vec_get_str(&self, si: SlotIndex, i: usize) -> Result<&'a str, &'a [u8]> {
        let bytes = self.vec_get_bytes(si, i);
        // SAFETY: as in `get_str`: the bytes are an element of slot `si`.
        unsafe { as_text(bytes, self.utf8_checked(self.layout.slot(si).validate_utf8)) }
    }

    /// The case word of oneof `oneof`: the active member's field number, 0 for none.
    #[inline]
    pub fn oneof_case(&self, oneof: u32) -> u32 {
        assert!((oneof as usize) < self.layout.oneofs().len(), "no oneof {oneof} in this message");
        self.read::<u32>(self.layout.oneof_case_offset(oneof))
    }

    /// Whether the singular slot is not an inactive oneof member.
    #[inline]
    fn active(&self, slot: &FieldSlot) -> bool {
        slot.oneof == NO_INDEX || self.read::<u32>(self.layout.oneof_case_offset(slot.oneof)) == slot.number
    }

    /// Whether a singular field was set on the wire (presence bit, oneof case, non-null
    /// child). Fields without explicit presence report `true` here; callers compare with
    /// the default.
    #[inline]
    pub fn is_set(&self, si: SlotIndex) -> bool {
        let slot = self.layout.slot(si);
        if slot.repetition != Repetition::Singular {
            return self.vec_len(si) > 0;
        }
        if slot.oneof != NO_INDEX {
            return self.oneof_case(slot.oneof) == slot.number;
        }
        if slot.kind.is_message() {
            return !self.read::<*const u8>(slot.offset).is_null();
        }
        if slot.hasbit != NO_INDEX {
            return self.read::<u32>(4 * (slot.hasbit / 32)) & (1 << (slot.hasbit % 32)) != 0;
        }
        true
    }

    /// The inline value of a singular number field (zero if never set, or if it is a
    /// oneof member that is not active). Panics if the slot does not hold `T`s.
    #[inline]
    pub fn get<T: Scalar>(&self, si: SlotIndex) -> T {
        let slot = self.layout.slot(si);
        assert!(slot.repetition == Repetition::Singular && T::fits(slot.kind), "slot {si:?} does not hold this type");
        if !self.active(slot) {
            return T::ZERO;
        }
        self.read::<T>(slot.offset)
    }

    /// The bytes of a singular string/bytes field (empty if never set, or if it is a oneof
    /// member that is not active). Panics if the slot is not a string or bytes field.
    #[inline]
    pub fn get_bytes(&self, si: SlotIndex) -> &'a [u8] {
        let slot = self.layout.slot(si);
        assert!(slot.repetition == Repetition::Singular && is_bytes(slot.kind), "slot {si:?} is not string or bytes");
        if !self.active(slot) {
            return &[];
        }
        let s: RawStr = self.read(slot.offset);
        // SAFETY: the slot holds a RawStr (checked kind, active); invariant 5; the tree
        // lives for 'a.
        unsafe { s.as_slice() }
    }

    /// The child block of a singular message field, if present. Panics if the slot is
    /// not a singular message or group field.
    #[inline]
    pub fn child(&self, si: SlotIndex) -> Option<BlockRef<'a>> {
        let slot = self.layout.slot(si);
        assert!(slot.repetition == Repetition::Singular && slot.kind.is_message(), "slot {si:?} is not a message");
        if !self.is_set(si) {
            return None;
        }
        let p = NonNull::new(self.read::<*mut u8>(slot.offset))?;
        Some(self.child_of(p, self.layouts.get(LayoutIndex::new(slot.child))))
    }

    /// Number of elements of a repeated or map field. Panics on a singular slot.
    #[inline]
    pub fn vec_len(&self, si: SlotIndex) -> usize {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular, "slot {si:?} is not repeated");
        self.read::<RawVec>(slot.offset).len as usize
    }

    /// Element `i` of a repeated number field. Panics if the slot does not hold `T`s or
    /// `i` is out of range.
    pub fn vec_get<T: Scalar>(&self, si: SlotIndex, i: usize) -> T {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular && T::fits(slot.kind), "slot {si:?} does not hold this type");
        let v = self.read::<RawVec>(slot.offset);
        assert!(i < v.len as usize, "index {i} out of range");
        // SAFETY: i < len; elements are initialised values of T's width (invariant 4).
        unsafe { v.ptr.cast::<T>().add(i).read() }
    }

    /// Element `i` of a repeated string/bytes field. Panics if the slot is not one or `i`
    /// is out of range.
    pub fn vec_get_bytes(&self, si: SlotIndex, i: usize) -> &'a [u8] {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular && is_bytes(slot.kind), "slot {si:?} is not string or bytes");
        let v = self.read::<RawVec>(slot.offset);
        assert!(i < v.len as usize, "index {i} out of range");
        // SAFETY: i < len; elements are RawStr views (invariants 4, 5).
        unsafe { v.ptr.cast::<RawStr>().add(i).read().as_slice() }
    }

    /// Element `i` of a repeated message, group or map field. Panics if the slot is not
    /// one or `i` is out of range.
    #[inline]
    pub fn vec_child(&self, si: SlotIndex, i: usize) -> BlockRef<'a> {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular && slot.kind.is_message(), "slot {si:?} is not a message");
        let v = self.read::<RawVec>(slot.offset);
        assert!(i < v.len as usize, "index {i} out of range");
        // SAFETY: i < len; element i is the address of a child block (invariant 4).
        let ptr = unsafe { v.ptr.cast::<*mut u8>().add(i).read() };
        // SAFETY: element addresses are never null (invariant 4).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        self.child_of(ptr, self.layouts.get(LayoutIndex::new(slot.child)))
    }

    /// The unknown fields, each its complete wire bytes, in wire order.
    pub fn unknown_fields(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let v = self.read::<RawVec>(self.layout.unknown_offset());
        (0..v.len as usize).map(move |i| {
            // SAFETY: i < len; elements are RawStr views (invariants 4, 5).
            unsafe { v.ptr.cast::<RawStr>().add(i).read().as_slice() }
        })
    }
}
