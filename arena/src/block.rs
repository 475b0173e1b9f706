//! Typed access to message blocks: the one place that reads and writes tree memory.
//!
//! [`BlockMut`] (for the decoders) and [`BlockRef`] (for the views) pair a block pointer with
//! its layout. Constructing one from a raw pointer is `unsafe` (the caller vouches for crate
//! invariant 1); every method after that is safe because it only touches slots of that
//! layout, which [`Layouts::new`](crate::Layouts::new) checked lie inside the block.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::arena::Arena;
use crate::layout::{FieldSlot, Layouts, MessageLayout, Repetition, SlotIndex, NO_INDEX};
use crate::raw::{RawStr, RawVec};

/// A plain value stored inline in a block or vector: `bool`, 32/64-bit integers, floats,
/// [`RawStr`] and child pointers. Sealed.
pub trait Inline: Copy + sealed::Sealed {}
mod sealed {
    pub trait Sealed {}
}
macro_rules! inline {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Inline for $t {})* };
}
inline!(bool, u32, i32, u64, i64, f32, f64, RawStr, usize);

/// Writer for one block of a tree being decoded.
pub struct BlockMut<'l> {
    ptr: NonNull<u8>,
    layout: &'l MessageLayout,
}

impl<'l> BlockMut<'l> {
    /// A fresh zeroed block of `layout` in `arena`.
    pub fn alloc(arena: &Arena, layout: &'l MessageLayout) -> BlockMut<'l> {
        BlockMut { ptr: arena.alloc_zeroed(layout.size() as usize), layout }
    }

    /// Wraps an existing block.
    ///
    /// # Safety
    /// `ptr` is a block of `layout` (crate invariants 1-5), no other `BlockMut` or
    /// `BlockRef` to it is in use, and its arena outlives every use of the result.
    pub unsafe fn from_raw(ptr: NonNull<u8>, layout: &'l MessageLayout) -> BlockMut<'l> {
        BlockMut { ptr, layout }
    }

    /// The block's address.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's layout.
    pub fn layout(&self) -> &'l MessageLayout {
        self.layout
    }

    #[inline]
    fn at<T>(&self, offset: u32) -> *mut T {
        // SAFETY (of every caller): offsets come from this block's layout, whose slots lie
        // inside the block and are naturally aligned (invariant 2); blocks are 8-aligned.
        unsafe { self.ptr.as_ptr().add(offset as usize).cast::<T>() }
    }

    #[inline]
    fn slot_checked<T: Inline>(&self, si: SlotIndex, rep: Repetition) -> &'l FieldSlot {
        let slot = self.layout.slot(si);
        let size = match rep {
            Repetition::Singular => slot.kind.value_size(),
            _ => slot.elem_size,
        };
        // Ties the write width to the slot width: a mismatch would write out of bounds.
        assert!(size as usize == std::mem::size_of::<T>() && (slot.repetition == rep || rep != Repetition::Singular));
        slot
    }

    /// Sets a singular field: stores the value, its presence bit and its oneof case.
    #[inline]
    pub fn set<T: Inline>(&mut self, si: SlotIndex, value: T) {
        let slot = self.slot_checked::<T>(si, Repetition::Singular);
        // SAFETY: see `at`; the width was checked against the slot.
        unsafe { self.at::<T>(slot.offset).write(value) };
        self.mark_present(slot);
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

    /// The child block of a singular message field, allocated (zeroed) if absent. A
    /// message seen twice merges into the same child; a oneof member whose case is not
    /// active gets a fresh child (the shared slot may hold another member's bytes).
    pub fn child<'b>(&mut self, si: SlotIndex, arena: &Arena, layouts: &'b Layouts) -> BlockMut<'b> {
        let slot = *self.slot_checked::<usize>(si, Repetition::Singular);
        let child_layout = layouts.get(crate::LayoutIndex::new(slot.child));
        let active = slot.oneof == NO_INDEX
            // SAFETY: case words lie inside the block header (invariant 2).
            || unsafe { *self.at::<u32>(self.layout.oneof_case_offset(slot.oneof)) } == slot.number;
        let p = self.at::<*mut u8>(slot.offset);
        // SAFETY: the slot holds null or a child block of `slot.child` (invariant 3) when active.
        let existing = if active { NonNull::new(unsafe { *p }) } else { None };
        let child = match existing {
            Some(ptr) => ptr,
            None => {
                let ptr = arena.alloc_zeroed(child_layout.size() as usize);
                // SAFETY: pointer-sized slot inside the block.
                unsafe { *p = ptr.as_ptr() };
                ptr
            }
        };
        self.mark_present(&slot);
        BlockMut { ptr: child, layout: child_layout }
    }

    fn vec(&self, slot: &FieldSlot) -> *mut RawVec {
        self.at::<RawVec>(slot.offset)
    }

    /// Makes room for `additional` more elements of a repeated field (packed pre-sizing).
    pub fn reserve(&mut self, si: SlotIndex, additional: usize, arena: &Arena) {
        let slot = *self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular);
        // SAFETY: a repeated slot holds a RawVec (invariant 4).
        let v = unsafe { &mut *self.vec(&slot) };
        reserve_vec(v, slot.elem_size, additional, arena);
    }

    /// Appends a value to a repeated scalar field.
    #[inline]
    pub fn push<T: Inline>(&mut self, si: SlotIndex, value: T, arena: &Arena) {
        let slot = *self.slot_checked::<T>(si, Repetition::Repeated);
        assert!(slot.repetition == Repetition::Repeated);
        // SAFETY: a repeated slot holds a RawVec (invariant 4).
        let v = unsafe { &mut *self.vec(&slot) };
        if v.len == v.cap {
            reserve_vec(v, slot.elem_size, 1, arena);
        }
        // SAFETY: len < cap after reserve; elements are `elem_size == size_of::<T>()` bytes.
        unsafe { v.ptr.cast::<T>().add(v.len as usize).write(value) };
        v.len += 1;
    }

    /// Appends raw little-endian fixed-width elements (packed fixed32/64, float, double).
    pub fn extend_fixed(&mut self, si: SlotIndex, bytes: &[u8], arena: &Arena) {
        let slot = *self.layout.slot(si);
        assert!(slot.repetition == Repetition::Repeated && slot.kind.fixed_width() == slot.elem_size);
        assert!(bytes.len() % slot.elem_size as usize == 0);
        let n = bytes.len() / slot.elem_size as usize;
        // SAFETY: a repeated slot holds a RawVec (invariant 4).
        let v = unsafe { &mut *self.vec(&slot) };
        reserve_vec(v, slot.elem_size, n, arena);
        if cfg!(target_endian = "little") {
            // SAFETY: reserved room for `n` more elements of `elem_size` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    v.ptr.add(v.len as usize * slot.elem_size as usize),
                    bytes.len(),
                )
            };
        } else {
            for (i, chunk) in bytes.chunks_exact(slot.elem_size as usize).enumerate() {
                let dst = v.ptr.wrapping_add((v.len as usize + i) * slot.elem_size as usize);
                for (j, b) in chunk.iter().rev().enumerate() {
                    // SAFETY: as above, byte-reversed on big-endian hosts.
                    unsafe { dst.add(j).write(*b) };
                }
            }
        }
        v.len += n as u32;
    }

    /// Appends every varint of a packed run (`data` holds exactly the run), converted by
    /// `convert`, to repeated slot `si`: one reservation, then stores without per-element
    /// checks. On a malformed varint the elements before it are kept and its error is
    /// returned with the offset relative to `data`.
    #[inline]
    pub fn extend_varints<T: Inline>(
        &mut self,
        si: SlotIndex,
        data: &[u8],
        arena: &Arena,
        convert: impl Fn(u64) -> T,
    ) -> Result<(), crate::DecodeError> {
        let slot = *self.slot_checked::<T>(si, Repetition::Repeated);
        assert!(slot.repetition == Repetition::Repeated);
        // SAFETY: a repeated slot holds a RawVec (invariant 4).
        let v = unsafe { &mut *self.vec(&slot) };
        // Every varint takes at least one byte: `data.len()` bounds the element count.
        reserve_vec(v, slot.elem_size, data.len(), arena);
        let base = v.ptr.cast::<T>();
        let mut n = v.len as usize;
        let mut p = 0;
        let result = loop {
            if p >= data.len() {
                break Ok(());
            }
            match crate::wire::read_varint(data, p) {
                Ok((x, next)) => {
                    // SAFETY: at most one element per byte of `data` is written after the
                    // `len` old ones, and `data.len()` more were reserved.
                    unsafe { base.add(n).write(convert(x)) };
                    n += 1;
                    p = next;
                }
                Err(e) => break Err(e),
            }
        };
        v.len = n as u32;
        result
    }

    /// Appends a zeroed child block to a repeated message, group or map field.
    pub fn push_child<'b>(&mut self, si: SlotIndex, arena: &Arena, layouts: &'b Layouts) -> BlockMut<'b> {
        let slot = *self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular && slot.kind.is_message());
        let child_layout = layouts.get(crate::LayoutIndex::new(slot.child));
        assert!(child_layout.size() == slot.elem_size);
        // SAFETY: a repeated slot holds a RawVec (invariant 4).
        let v = unsafe { &mut *self.vec(&slot) };
        if v.len == v.cap {
            reserve_vec(v, slot.elem_size, 1, arena);
        }
        // SAFETY: len < cap; the element is `elem_size` bytes inside the vector buffer.
        let elem = unsafe { v.ptr.add(v.len as usize * slot.elem_size as usize) };
        // SAFETY: as above; zeroing makes it a valid empty block (invariant 1).
        unsafe { std::ptr::write_bytes(elem, 0, slot.elem_size as usize) };
        v.len += 1;
        // SAFETY: `elem` is non-null (inside a live allocation).
        BlockMut { ptr: unsafe { NonNull::new_unchecked(elem) }, layout: child_layout }
    }

    /// Records an unknown field: its complete wire bytes (tag and value).
    pub fn push_unknown(&mut self, span: RawStr, arena: &Arena) {
        // SAFETY: the unknown-field vector lies inside the block (invariant 2).
        let v = unsafe { &mut *self.at::<RawVec>(self.layout.unknown_offset()) };
        if v.len == v.cap {
            reserve_vec(v, 16, 1, arena);
        }
        // SAFETY: len < cap; elements are RawStr.
        unsafe { v.ptr.cast::<RawStr>().add(v.len as usize).write(span) };
        v.len += 1;
    }
}

/// Grows `v` (elements of `elem_size` bytes) to hold `additional` more elements: at least
/// doubling, so pushes are amortised O(1); a vector never holds more than twice the
/// elements its input justified.
fn reserve_vec(v: &mut RawVec, elem_size: u32, additional: usize, arena: &Arena) {
    let need = v.len as usize + additional;
    if need <= v.cap as usize {
        return;
    }
    let new_cap = need.max(2 * v.cap as usize).max(4).min(u32::MAX as usize);
    assert!(need <= new_cap, "repeated field longer than 2^32 elements");
    let bytes = new_cap.checked_mul(elem_size as usize).expect("vector size overflows");
    let ptr = arena.alloc_uninit(bytes).as_ptr();
    if v.len > 0 {
        // SAFETY: both buffers hold at least `len` elements; they do not overlap (fresh).
        unsafe { std::ptr::copy_nonoverlapping(v.ptr, ptr, v.len as usize * elem_size as usize) };
    }
    v.ptr = ptr;
    v.cap = new_cap as u32;
}

/// Reader for one block of a decoded tree, valid for `'a` (the tree's input and arena).
#[derive(Clone, Copy)]
pub struct BlockRef<'a> {
    ptr: NonNull<u8>,
    layout: &'a MessageLayout,
    _tree: PhantomData<&'a [u8]>,
}

impl<'a> BlockRef<'a> {
    /// Wraps a block of a finished tree.
    ///
    /// # Safety
    /// `ptr` is a block of `layout` (invariants 1-5), nothing writes to the tree any more,
    /// and the input and arena it points into live for `'a`.
    pub unsafe fn from_raw(ptr: NonNull<u8>, layout: &'a MessageLayout) -> BlockRef<'a> {
        BlockRef { ptr, layout, _tree: PhantomData }
    }

    /// The block's address.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The block's layout.
    pub fn layout(&self) -> &'a MessageLayout {
        self.layout
    }

    #[inline]
    fn read<T: Copy>(&self, offset: u32) -> T {
        // SAFETY: offsets come from this block's layout (invariant 2).
        unsafe { self.ptr.as_ptr().add(offset as usize).cast::<T>().read() }
    }

    /// The case word of oneof `oneof`: the active member's field number, 0 for none.
    #[inline]
    pub fn oneof_case(&self, oneof: u32) -> u32 {
        assert!((oneof as usize) < self.layout.oneofs().len());
        self.read::<u32>(self.layout.oneof_case_offset(oneof))
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

    /// The inline value of a singular scalar field (zero if never set).
    pub fn get<T: Inline>(&self, si: SlotIndex) -> T {
        let slot = self.layout.slot(si);
        assert!(slot.repetition == Repetition::Singular && slot.kind.value_size() as usize == std::mem::size_of::<T>());
        self.read::<T>(slot.offset)
    }

    /// The bytes of a singular string/bytes field.
    #[inline]
    pub fn get_bytes(&self, si: SlotIndex) -> &'a [u8] {
        let s: RawStr = self.get(si);
        // SAFETY: invariant 5; the tree lives for 'a.
        unsafe { s.as_slice() }
    }

    /// The child block of a singular message field, if present.
    #[inline]
    pub fn child(&self, si: SlotIndex, layouts: &'a Layouts) -> Option<BlockRef<'a>> {
        let slot = self.layout.slot(si);
        assert!(slot.repetition == Repetition::Singular && slot.kind.is_message());
        if !self.is_set(si) {
            return None;
        }
        let p = NonNull::new(self.read::<*mut u8>(slot.offset))?;
        Some(BlockRef { ptr: p, layout: layouts.get(crate::LayoutIndex::new(slot.child)), _tree: PhantomData })
    }

    /// Number of elements of a repeated or map field.
    #[inline]
    pub fn vec_len(&self, si: SlotIndex) -> usize {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular);
        self.read::<RawVec>(slot.offset).len as usize
    }

    /// Element `i` of a repeated scalar field.
    pub fn vec_get<T: Inline>(&self, si: SlotIndex, i: usize) -> T {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular && slot.elem_size as usize == std::mem::size_of::<T>());
        let v = self.read::<RawVec>(slot.offset);
        assert!(i < v.len as usize);
        // SAFETY: i < len; elements are initialised values of T (invariant 4).
        unsafe { v.ptr.cast::<T>().add(i).read() }
    }

    /// Element `i` of a repeated string/bytes field.
    pub fn vec_get_bytes(&self, si: SlotIndex, i: usize) -> &'a [u8] {
        let s: RawStr = self.vec_get(si, i);
        // SAFETY: invariant 5.
        unsafe { s.as_slice() }
    }

    /// Element `i` of a repeated message, group or map field.
    #[inline]
    pub fn vec_child(&self, si: SlotIndex, i: usize, layouts: &'a Layouts) -> BlockRef<'a> {
        let slot = self.layout.slot(si);
        assert!(slot.repetition != Repetition::Singular && slot.kind.is_message());
        let v = self.read::<RawVec>(slot.offset);
        assert!(i < v.len as usize);
        // SAFETY: i < len; element i is a whole child block (invariant 4), non-null.
        let ptr = unsafe { NonNull::new_unchecked(v.ptr.add(i * slot.elem_size as usize)) };
        BlockRef { ptr, layout: layouts.get(crate::LayoutIndex::new(slot.child)), _tree: PhantomData }
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
