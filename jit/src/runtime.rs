//! The context compiled code runs with, and the `extern "C"` slow-path helpers it calls.
//!
//! Compiled code does the common cases inline (one-byte tags, short varints, fixed-width
//! values, string views, vector pushes with spare capacity) and calls these helpers for
//! the rest. The helpers delegate to the interpreter and to [`BlockMut`], so both engines
//! share one implementation of every slow path.

use std::ptr::NonNull;

use protojit_arena::wire::read_varint;
use protojit_arena::{runtime, Arena, BlockMut, DecodeError, DecodeErrorKind, LayoutIndex, Layouts, SlotIndex};

use crate::interp::{Interp, Step};
use crate::DecodeOptions;

/// Per-decode state shared by compiled functions and helpers. `repr(C)`: compiled code
/// reads and writes the fields at the offsets below.
#[repr(C)]
pub struct JitCtx {
    /// First byte of the input (error offsets are relative to it).
    pub input_start: *const u8,
    /// Input length in bytes.
    pub input_len: usize,
    /// The arena the tree is built in.
    pub arena: *const Arena,
    /// The schema's layouts.
    pub layouts: *const Layouts,
    /// Error kind code (`DecodeErrorKind as u32`), 0 = none.
    pub error_kind: u32,
    /// Set by [`pj_slow_field`] when it consumed the end-group tag of the group being decoded.
    pub group_done: u32,
    /// Error offset from `input_start`.
    pub error_offset: usize,
    /// `DecodeOptions::max_depth`.
    pub max_depth: u32,
    /// `DecodeOptions::validate_utf8` as 0/1.
    pub validate_utf8: u32,
}

/// Byte offsets of [`JitCtx`] fields, for the lowering.
pub(crate) mod ctx_offset {
    use super::JitCtx;
    use std::mem::offset_of;
    pub const INPUT_START: i32 = offset_of!(JitCtx, input_start) as i32;
    pub const ERROR_KIND: i32 = offset_of!(JitCtx, error_kind) as i32;
    pub const GROUP_DONE: i32 = offset_of!(JitCtx, group_done) as i32;
    pub const ERROR_OFFSET: i32 = offset_of!(JitCtx, error_offset) as i32;
    pub const MAX_DEPTH: i32 = offset_of!(JitCtx, max_depth) as i32;
    pub const VALIDATE_UTF8: i32 = offset_of!(JitCtx, validate_utf8) as i32;
}

impl JitCtx {
    /// A context for decoding `input` into `arena`.
    pub fn new(input: &[u8], arena: &Arena, layouts: &Layouts, options: &DecodeOptions) -> JitCtx {
        JitCtx {
            input_start: input.as_ptr(),
            input_len: input.len(),
            arena,
            layouts,
            error_kind: 0,
            group_done: 0,
            error_offset: 0,
            max_depth: options.max_depth,
            validate_utf8: options.validate_utf8 as u32,
        }
    }

    /// The error recorded by compiled code or a helper, if any.
    pub fn error(&self) -> Option<DecodeError> {
        DecodeErrorKind::from_code(self.error_kind).map(|k| DecodeError::new(k, self.error_offset))
    }

    /// The pieces of the run, rebuilt from raw pointers.
    ///
    /// # Safety
    /// The context was made by [`JitCtx::new`] and its input, arena and layouts are alive
    /// (they are: compiled code only runs inside `Engine::decode`, which borrows all three).
    unsafe fn parts<'x>(&self) -> (&'x [u8], &'x Arena, &'x Layouts) {
        // SAFETY: the caller's contract.
        unsafe { (std::slice::from_raw_parts(self.input_start, self.input_len), &*self.arena, &*self.layouts) }
    }

    fn fail(&mut self, e: DecodeError) -> *const u8 {
        self.error_kind = e.kind as u32;
        self.error_offset = e.offset;
        std::ptr::null()
    }

    fn offset(&self, p: *const u8) -> usize {
        p as usize - self.input_start as usize
    }

    fn options(&self) -> DecodeOptions {
        DecodeOptions { max_depth: self.max_depth, validate_utf8: self.validate_utf8 != 0 }
    }
}

/// Signature shared by every compiled message function: decode the fields in
/// `ptr..end` into `block`; `meta` = depth | group number << 32 (0 = not a group);
/// `gtag` = the group's start tag (for errors). Returns the position after the message
/// (after the end-group tag for groups), or null with the error in `ctx`.
pub type MessageFn = unsafe extern "C" fn(
    ctx: *mut JitCtx,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
    meta: u64,
    gtag: *const u8,
) -> *const u8;

/// The context and the run's input, arena and layouts, as every helper starts.
///
/// # Safety
/// `ctx` is the live context of the running decode, made by [`JitCtx::new`] (compiled
/// code passes only that), so its input, arena and layouts are alive.
unsafe fn enter<'x>(ctx: *mut JitCtx) -> (&'x mut JitCtx, &'x [u8], &'x Arena, &'x Layouts) {
    // SAFETY: the caller's contract; the three parts are separate memory from `ctx`.
    unsafe {
        let ctx = &mut *ctx;
        let (input, arena, layouts) = ctx.parts();
        (ctx, input, arena, layouts)
    }
}

/// Wraps a block for a helper.
///
/// # Safety
/// `block` is a block of layout `layout` in `ctx`'s tree (compiled code passes only its own
/// `block` parameter with its own layout index).
unsafe fn block_mut<'l>(layouts: &'l Layouts, layout: u32, block: *mut u8) -> BlockMut<'l> {
    // SAFETY: the caller's contract; blocks are never null.
    unsafe { BlockMut::from_raw(NonNull::new_unchecked(block), layouts.get(LayoutIndex::new(layout))) }
}

/// Decodes one field at `ptr` with the interpreter: the general path for multi-byte tags,
/// unknown fields, end-group tags and closed enums.
///
/// # Safety
/// Called by compiled code with its own context, layout index and block, and
/// `input_start <= ptr < end <= input_start + input_len`.
pub unsafe extern "C" fn pj_slow_field(
    ctx: *mut JitCtx,
    layout: u32,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
    meta: u64,
) -> *const u8 {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (ctx, input, arena, layouts) = unsafe { enter(ctx) };
    // SAFETY: the caller's contract.
    let mut block = unsafe { block_mut(layouts, layout, block) };
    let interp = Interp::new(layouts, arena, input, &ctx.options());
    let group = (meta >> 32) as u32;
    let (pos, end) = (ctx.offset(ptr), ctx.offset(end));
    match interp.field(&mut block, pos, end, meta as u32, (group != 0).then_some(group)) {
        Ok(Step::Next(next)) => input[next..].as_ptr(),
        Ok(Step::GroupEnd(next)) => {
            ctx.group_done = 1;
            input[next..].as_ptr()
        }
        Err(e) => ctx.fail(e),
    }
}

/// Reads a varint at `ptr` (any length) into `*out`; returns the position after it, or
/// null with the error recorded.
///
/// # Safety
/// `input_start <= ptr <= end <= input_start + input_len`; `out` is writable.
pub unsafe extern "C" fn pj_varint(ctx: *mut JitCtx, ptr: *const u8, end: *const u8, out: *mut u64) -> *const u8 {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (ctx, input, _, _) = unsafe { enter(ctx) };
    let (pos, end) = (ctx.offset(ptr), ctx.offset(end));
    // With ten bytes in range no per-byte bounds check is needed (compiled code already
    // handled one- and two-byte varints inline).
    if let Some(window) = input[..end].get(pos..pos + 10) {
        let mut v = 0u64;
        for (i, &b) in window.iter().enumerate() {
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                // SAFETY: the caller's contract.
                unsafe { out.write(v) };
                return window[i + 1..].as_ptr();
            }
        }
        return ctx.fail(DecodeError::new(DecodeErrorKind::VarintTooLong, pos));
    }
    match read_varint(&input[..end], pos) {
        Ok((v, next)) => {
            // SAFETY: the caller's contract.
            unsafe { out.write(v) };
            input[next..].as_ptr()
        }
        Err(e) => ctx.fail(e),
    }
}

/// Whether `len` bytes at `ptr` are UTF-8; records `InvalidUtf8` at `at` if not.
///
/// # Safety
/// `ptr..ptr+len` and `at` lie inside the input.
pub unsafe extern "C" fn pj_utf8(ctx: *mut JitCtx, ptr: *const u8, len: usize, at: *const u8) -> u32 {
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    if runtime::is_utf8(bytes) {
        return 1;
    }
    // SAFETY: compiled code passes the live context of this decode.
    let ctx = unsafe { &mut *ctx };
    let offset = ctx.offset(at);
    ctx.fail(DecodeError::new(DecodeErrorKind::InvalidUtf8, offset));
    0
}

/// Makes room for `additional` elements in repeated slot `slot` of `block`.
///
/// # Safety
/// As [`pj_slow_field`] for `ctx`, `layout`, `block`; `slot` is a repeated slot of it.
pub unsafe extern "C" fn pj_reserve(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8, additional: u32) {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (_, _, arena, layouts) = unsafe { enter(ctx) };
    // SAFETY: the caller's contract.
    let mut block = unsafe { block_mut(layouts, layout, block) };
    block.reserve(SlotIndex::new(slot), additional as usize, arena);
}

/// The child block of singular message slot `slot` (allocated if absent; merges).
///
/// # Safety
/// As [`pj_reserve`], with `slot` a singular message or group slot.
pub unsafe extern "C" fn pj_child(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8) -> *mut u8 {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (_, _, arena, layouts) = unsafe { enter(ctx) };
    // SAFETY: the caller's contract.
    let mut block = unsafe { block_mut(layouts, layout, block) };
    block.child(SlotIndex::new(slot), arena, layouts).as_ptr().as_ptr()
}

/// Appends a zeroed child block to repeated message slot `slot` and returns it.
///
/// # Safety
/// As [`pj_reserve`], with `slot` a repeated message, group or map slot.
pub unsafe extern "C" fn pj_push_child(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8) -> *mut u8 {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (_, _, arena, layouts) = unsafe { enter(ctx) };
    // SAFETY: the caller's contract.
    let mut block = unsafe { block_mut(layouts, layout, block) };
    block.push_child(SlotIndex::new(slot), arena, layouts).as_ptr().as_ptr()
}

/// Decodes a packed run of repeated slot `slot` whose length prefix is at `ptr`.
///
/// # Safety
/// As [`pj_slow_field`]; `slot` is a repeated packable slot.
pub unsafe extern "C" fn pj_packed(
    ctx: *mut JitCtx,
    layout: u32,
    slot: u32,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
) -> *const u8 {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (ctx, input, arena, layouts) = unsafe { enter(ctx) };
    // SAFETY: the caller's contract.
    let mut block = unsafe { block_mut(layouts, layout, block) };
    let interp = Interp::new(layouts, arena, input, &ctx.options());
    let si = SlotIndex::new(slot);
    let field = *block.layout().slot(si);
    let (pos, end) = (ctx.offset(ptr), ctx.offset(end));
    match interp.packed(&mut block, si, &field, pos, end) {
        Ok(next) => input[next..].as_ptr(),
        Err(e) => ctx.fail(e),
    }
}

/// Decodes a whole message with the interpreter: the explicit fallback for message types
/// the lowering does not compile. Same contract as [`MessageFn`], plus the layout index.
///
/// # Safety
/// As [`pj_slow_field`], with `ptr <= end`.
pub unsafe extern "C" fn pj_interp_message(
    ctx: *mut JitCtx,
    layout: u32,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
    meta: u64,
    gtag: *const u8,
) -> *const u8 {
    // SAFETY: compiled code passes the live context of this decode (see `enter`).
    let (ctx, input, arena, layouts) = unsafe { enter(ctx) };
    // SAFETY: the caller's contract.
    let mut block = unsafe { block_mut(layouts, layout, block) };
    let interp = Interp::new(layouts, arena, input, &ctx.options());
    let group = (meta >> 32) as u32;
    let group = (group != 0).then(|| (group, ctx.offset(gtag)));
    let (pos, end) = (ctx.offset(ptr), ctx.offset(end));
    match interp.message(&mut block, pos, end, meta as u32, group) {
        Ok(next) => input[next..].as_ptr(),
        Err(e) => ctx.fail(e),
    }
}
