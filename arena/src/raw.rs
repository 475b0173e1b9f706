//! Raw field representations stored inside message blocks, and how a vector grows.

use std::ptr::NonNull;

use crate::arena::Arena;

/// A string or bytes value: a view of `len` bytes, borrowed from the input (or, for bytes
/// the decoder had to synthesise, from the arena). Never owns its bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawStr {
    /// First byte; dangling-but-non-null is never stored: an empty value may be null.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl RawStr {
    /// The empty value, as a zeroed slot reads.
    pub const EMPTY: RawStr = RawStr { ptr: std::ptr::null(), len: 0 };

    /// A view of `bytes`.
    pub const fn from_slice(bytes: &[u8]) -> RawStr {
        RawStr { ptr: bytes.as_ptr(), len: bytes.len() }
    }

    /// The bytes behind this view.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be live, initialised memory for `'a` (crate invariant 5).
    pub unsafe fn as_slice<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            &[]
        } else {
            // SAFETY: non-empty views point at `len` live bytes (the caller's contract).
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// A repeated field: `len` initialised elements of a fixed element size in an
/// arena-allocated buffer of `cap` elements. A zeroed slot is the empty vector.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawVec {
    /// First element (null when `cap == 0`).
    pub ptr: *mut u8,
    /// Initialised elements.
    pub len: u32,
    /// Allocated elements.
    pub cap: u32,
}

impl RawVec {
    /// The empty vector.
    pub const EMPTY: RawVec = RawVec { ptr: std::ptr::null_mut(), len: 0, cap: 0 };
}

/// Grows `v` (elements of `elem_size` bytes) to hold `additional` more elements: at least
/// doubling, so pushes are amortised O(1); a vector never holds more than twice the
/// elements its input justified.
#[inline]
pub(crate) fn reserve_vec(v: &mut RawVec, elem_size: u32, additional: usize, arena: &Arena) {
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

const _: () = assert!(std::mem::size_of::<RawStr>() == 16);
const _: () = assert!(std::mem::size_of::<RawVec>() == 16);
