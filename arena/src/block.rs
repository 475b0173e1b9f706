//! Typed access to message blocks: the one place that reads and writes tree memory.
//!
//! [`BlockMut`] (for the decoders) and [`BlockRef`] (for the views) pair a block pointer with
//! its layout. Constructing one from a raw pointer is `unsafe` (the caller vouches for crate
//! invariant 1); every method after that is safe because it only touches slots of that
//! layout, which [`Layouts::new`](crate::Layouts::new) checked lie inside the block.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::arena::Arena;
use crate::layout::{FieldKind, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition, SlotIndex, NO_INDEX};
use crate::raw::{RawStr, RawVec};

/// A number stored inline in a block or vector: `bool`, 32/64-bit integers and floats.
/// Sealed. Strings, bytes and child blocks have their own methods, because their slots
/// hold pointers that readers follow: nothing but the decoder may put an address there.
pub trait Scalar: Copy + sealed::Sealed {
    /// The value an absent field (or an inactive oneof member) reads as.
    const ZERO: Self;
    /// Whether a slot of `kind` holds values of this type's width and representation:
    /// any number kind of the same width (`u32` reads a `float`'s bits, `i64` a `uint64`),
    /// `bool` only `bool`, and never a kind whose slot holds a pointer.
    fn fits(kind: FieldKind) -> bool;
}
mod sealed {
    pub trait Sealed {}
}
macro_rules! scalar {
    ($($t:ty => $zero:expr, [$($k:ident)|*];)*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const ZERO: Self = $zero;
            #[inline]
            fn fits(kind: FieldKind) -> bool {
                matches!(kind, $(FieldKind::$k)|*)
            }
        }
    )*};
}
scalar! {
    bool => false, [Bool];
    u32 => 0, [Uint32 | Fixed32 | Int32 | Sint32 | Sfixed32 | Enum | Float];
    i32 => 0, [Uint32 | Fixed32 | Int32 | Sint32 | Sfixed32 | Enum | Float];
    f32 => 0.0, [Uint32 | Fixed32 | Int32 | Sint32 | Sfixed32 | Enum | Float];
    u64 => 0, [Uint64 | Fixed64 | Int64 | Sint64 | Sfixed64 | Double];
    i64 => 0, [Uint64 | Fixed64 | Int64 | Sint64 | Sfixed64 | Double];
    f64 => 0.0, [Uint64 | Fixed64 | Int64 | Sint64 | Sfixed64 | Double];
}

/// Why a [`BlockMut`] refused a write: the slot is not of the kind or cardinality the
/// method writes. A decoder never hits this (it writes what the layout says); it stops
/// a caller from storing, say, an integer where a reader expects an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("slot {slot} (field {number}) is a {repetition:?} {kind:?} field: {wanted}")]
pub struct SlotMismatch {
    /// The slot written.
    pub slot: u32,
    /// Its field number.
    pub number: u32,
    /// Its kind.
    pub kind: FieldKind,
    /// Its cardinality.
    pub repetition: Repetition,
    /// What the write needed.
    pub wanted: &'static str,
}

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

/// The bytes of `data` below 0x80: the number of varints that end in it. Eight bytes a
/// step (the high bits, gathered by a multiply), as the runs are mostly short: the
/// iterator count it replaces widened every byte to a 64-bit lane.
#[inline]
fn count_terminators(data: &[u8]) -> usize {
    let mut chunks = data.chunks_exact(8);
    let mut n = 0usize;
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        // One bit per terminator at bit 0 of its byte; the multiply sums the bytes into
        // the top one (at most 8: no carry between bytes).
        let t = (!w >> 7) & 0x0101_0101_0101_0101;
        n += (t.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize;
    }
    n + chunks.remainder().iter().filter(|&&b| b < 0x80).count()
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
        let terminators = count_terminators(data);
        reserve_vec(v, slot.elem_size, terminators, arena);
        let base = v.ptr.cast::<T>();
        if data.len() < 8 {
            // Too short for a word: the byte loop, inline (a tag list, a short geometry).
            // SAFETY: as below.
            let (n, result) = unsafe { fill_varints_from(base, v.len as usize, data, 0, convert) };
            v.len = n as u32;
            return result;
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("bmi2") {
            // SAFETY: the CPU has BMI2; `base` holds `v.len` elements and room for
            // `terminators` more (reserved above), which is what `fill_varints` writes at most.
            let (n, result) = unsafe { fill_varints_bmi2(base, v.len as usize, data, convert) };
            v.len = n as u32;
            return result;
        }
        // SAFETY: as above.
        let (n, result) = unsafe { fill_varints(base, v.len as usize, data, convert, crate::wire::pack_groups) };
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

/// The loop of [`BlockMut::extend_varints`]: decodes every varint of `data`, converted
/// by `convert`, into `base[n..]`, packing each varint's 7-bit groups with `pack`; returns
/// the new element count and, on a malformed varint, its error (offset relative to
/// `data`), the elements before it kept.
///
/// # Safety
/// `base` holds `n` elements and room for as many more as `data` has bytes below 0x80.
#[inline(always)]
unsafe fn fill_varints<T: Scalar>(
    base: *mut T,
    mut n: usize,
    data: &[u8],
    convert: impl Fn(u64) -> T,
    pack: impl Fn(u64) -> u64 + Copy,
) -> (usize, Result<(), crate::DecodeError>) {
    let mut p = 0;
    // Eight bytes at a time while eight remain: one load, no loop over bytes. A word
    // without continuation bits is eight one-byte varints (small numbers, enums,
    // bools: the common packed run), stored without decoding each.
    while let Some(w) = crate::wire::load_word(data, p) {
        if w & 0x8080_8080_8080_8080 == 0 {
            for i in 0..8 {
                // SAFETY: each of the eight bytes is its own varint's terminator (below
                // 0x80), so these are 8 of the elements the caller made room for.
                unsafe { base.add(n + i).write(convert((w >> (8 * i)) & 0x7f)) };
            }
            n += 8;
            p += 8;
            continue;
        }
        // Every varint that ends in the word, from the one load.
        let used = crate::wire::varints_in_word(w, pack, |x| {
            // SAFETY: as below: each varint ended at its own byte below 0x80.
            unsafe { base.add(n).write(convert(x)) };
            n += 1;
        });
        if used != 0 {
            p += used;
            continue;
        }
        // No terminator in the word: nine or ten bytes; longer or cut off: `read_varint`
        // reports it below.
        let Some((x, len)) = crate::wire::varint_past_word_by(data, p, w, pack) else { break };
        // SAFETY: as below: the varint ended at its own byte below 0x80.
        unsafe { base.add(n).write(convert(x)) };
        n += 1;
        p += len;
    }
    // SAFETY: the caller's contract; `n` counts what was written so far.
    unsafe { fill_varints_from(base, n, data, p, convert) }
}

/// The rest of [`fill_varints`] from `p`, one varint at a time: the tail of a long run
/// (fewer than eight bytes left, or a malformed varint) and the whole of a short one.
///
/// # Safety
/// As [`fill_varints`].
#[inline(always)]
unsafe fn fill_varints_from<T: Scalar>(
    base: *mut T,
    mut n: usize,
    data: &[u8],
    mut p: usize,
    convert: impl Fn(u64) -> T,
) -> (usize, Result<(), crate::DecodeError>) {
    let result = loop {
        if p >= data.len() {
            break Ok(());
        }
        match crate::wire::read_varint(data, p) {
            Ok((x, next)) => {
                // SAFETY: each element decoded ended at its own byte below 0x80
                // (`read_varint` returns only then), so at most as many elements as the
                // caller made room for are written after the first `n`.
                unsafe { base.add(n).write(convert(x)) };
                n += 1;
                p = next;
            }
            Err(e) => break Err(e),
        }
    };
    (n, result)
}

/// [`fill_varints`] compiled for BMI2, packing a varint's 7-bit groups with one `pext`
/// (12 dependent shift-and-mask operations otherwise).
///
/// # Safety
/// As [`fill_varints`], and the CPU has BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn fill_varints_bmi2<T: Scalar>(
    base: *mut T,
    n: usize,
    data: &[u8],
    convert: impl Fn(u64) -> T,
) -> (usize, Result<(), crate::DecodeError>) {
    // SAFETY: the caller's contract (BMI2 present, room in `base`).
    unsafe { fill_varints(base, n, data, convert, |x| std::arch::x86_64::_pext_u64(x, 0x7f7f_7f7f_7f7f_7f7f)) }
}

fn is_bytes(kind: FieldKind) -> bool {
    matches!(kind, FieldKind::String | FieldKind::Bytes)
}

/// Grows `v` (elements of `elem_size` bytes) to hold `additional` more elements: at least
/// doubling, so pushes are amortised O(1); a vector never holds more than twice the
/// elements its input justified.
#[inline]
fn reserve_vec(v: &mut RawVec, elem_size: u32, additional: usize, arena: &Arena) {
    let need = v.len as usize + additional;
    if need > v.cap as usize {
        grow_vec(v, elem_size, need, arena);
    }
}

/// [`reserve_vec`] when the vector is full: to `need` elements at least.
#[inline(never)]
fn grow_vec(v: &mut RawVec, elem_size: u32, need: usize, arena: &Arena) {
    let new_cap = need.max(2 * v.cap as usize).max(4).min(u32::MAX as usize);
    assert!(need <= new_cap, "repeated field longer than 2^32 elements");
    let bytes = new_cap.checked_mul(elem_size as usize).expect("vector size overflows");
    if v.cap > 0 {
        // SAFETY: a vector with capacity has an arena buffer of `cap` elements (`RawVec`).
        let old = unsafe { NonNull::new_unchecked(v.ptr) };
        if arena.grow_in_place(old, v.cap as usize * elem_size as usize, bytes) {
            v.cap = new_cap as u32;
            return;
        }
    }
    let ptr = arena.alloc_uninit(bytes).as_ptr();
    if v.len > 0 {
        // SAFETY: both buffers hold at least `len` elements; they do not overlap (fresh).
        unsafe { std::ptr::copy_nonoverlapping(v.ptr, ptr, v.len as usize * elem_size as usize) };
    }
    v.ptr = ptr;
    v.cap = new_cap as u32;
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
    _tree: PhantomData<&'a [u8]>,
}

impl<'a> BlockRef<'a> {
    /// Wraps a block of a finished tree.
    ///
    /// # Safety
    /// `ptr` is a block of layout `index` of `layouts` (invariants 1-5), nothing writes to
    /// the tree any more, and the input and arena it points into live for `'a`.
    pub unsafe fn from_raw(ptr: NonNull<u8>, layouts: &'a Layouts, index: LayoutIndex) -> BlockRef<'a> {
        BlockRef { ptr, layout: layouts.get(index), layouts, _tree: PhantomData }
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
    pub(crate) fn child_of(ptr: NonNull<u8>, layout: &'a MessageLayout, layouts: &'a Layouts) -> BlockRef<'a> {
        BlockRef { ptr, layout, layouts, _tree: PhantomData }
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
        Some(BlockRef {
            ptr: p,
            layout: self.layouts.get(LayoutIndex::new(slot.child)),
            layouts: self.layouts,
            _tree: PhantomData,
        })
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
        BlockRef {
            ptr,
            layout: self.layouts.get(LayoutIndex::new(slot.child)),
            layouts: self.layouts,
            _tree: PhantomData,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{pack_groups, read_varint, write_varint};

    /// The run decoder's loop gives what a byte-at-a-time loop gives, with the portable
    /// packing and (where the CPU has it) the BMI2 one: values, element count, and the
    /// error and its offset on a malformed tail. Runs of every length class, so words hold
    /// one to eight varints or none (9- and 10-byte varints).
    #[test]
    fn fill_varints_agrees_with_read_varint_for_both_packings() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..400 {
            let mut data = Vec::new();
            for _ in 0..(next() % 40) {
                let bits = next() % 65;
                let v = if bits == 64 { next() } else { next() & ((1u64 << bits) - 1) };
                write_varint(&mut data, v);
            }
            if round % 5 == 0 {
                // A malformed or cut-off tail: continuation bytes to the end.
                data.extend((0..next() % 12).map(|_| 0x80 | next() as u8));
            }
            let mut want = Vec::new();
            let mut p = 0;
            let want_result = loop {
                if p >= data.len() {
                    break Ok(());
                }
                match read_varint(&data, p) {
                    Ok((x, q)) => {
                        want.push(x);
                        p = q;
                    }
                    Err(e) => break Err(e),
                }
            };
            let room = data.iter().filter(|&&b| b < 0x80).count();
            // The count that sizes the reservation the decoders write into: exact, for
            // every length and alignment of the tail.
            for cut in 0..data.len().min(20) {
                let part = &data[cut..];
                assert_eq!(count_terminators(part), part.iter().filter(|&&b| b < 0x80).count(), "from {cut}");
            }
            let run = |bmi2: bool| {
                let mut out = vec![0u64; room + 1];
                out[0] = 7;
                // SAFETY: `out` holds 1 element and room for `room` more; `run(true)` is
                // called only where the CPU has BMI2.
                let (n, result) = unsafe {
                    if bmi2 {
                        #[cfg(target_arch = "x86_64")]
                        {
                            fill_varints_bmi2(out.as_mut_ptr(), 1, &data, |x| x)
                        }
                        #[cfg(not(target_arch = "x86_64"))]
                        unreachable!()
                    } else {
                        fill_varints(out.as_mut_ptr(), 1, &data, |x| x, pack_groups)
                    }
                };
                out.truncate(n);
                (out, result)
            };
            let mut expected = vec![7];
            expected.extend(&want);
            let portable = run(false);
            assert_eq!(portable, (expected.clone(), want_result.clone()), "round {round}: {data:02x?}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("bmi2") {
                assert_eq!(run(true), portable, "round {round}: {data:02x?}");
            }
        }
    }
}
