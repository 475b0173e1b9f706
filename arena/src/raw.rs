//! Raw field representations stored inside message blocks.

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

const _: () = assert!(std::mem::size_of::<RawStr>() == 16);
const _: () = assert!(std::mem::size_of::<RawVec>() == 16);
