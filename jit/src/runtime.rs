//! The context compiled code runs with, and the `extern "C"` slow-path helpers it calls.
//!
//! Compiled code does the common cases inline (one-byte tags, short varints, fixed-width
//! values, string views, vector pushes with spare capacity) and calls these helpers for
//! the rest. The helpers delegate to the interpreter and to [`BlockMut`], so both engines
//! share one implementation of every slow path.

use std::ptr::NonNull;

use protojit_arena::wire::read_varint;
use protojit_arena::{
    runtime, Arena, BlockMut, DecodeError, DecodeErrorKind, LayoutIndex, Layouts, SlotIndex, Utf8Check,
};

use crate::tier::Tiers;
use crate::DecodeOptions;
use protojit_arena::interp::{ChildDecoder, Interp, Step};

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
    /// `DecodeOptions::utf8`: 0 off, 1 proto3 strings, 2 every string.
    pub utf8: u32,
    /// Next free byte of the region of the arena lent to compiled code
    /// ([`Arena::lend`]), which carves child blocks and first vector buffers from it
    /// (null while it holds none: before the first lend and while a helper runs).
    pub chunk_ptr: *mut u8,
    /// End of that region.
    pub chunk_end: *mut u8,
    /// The tiers of a tiered decode (null otherwise): the interpreter offers child
    /// messages to their compiled code, and counts the types it decodes.
    pub tiers: *const Tiers,
    /// `Tiering::after_decodes` of the decode's options.
    pub tier_decodes: u64,
    /// `Tiering::after_bytes` of the decode's options.
    pub tier_bytes: u64,
}

/// Byte offsets of [`JitCtx`] fields, for the lowering.
pub(crate) mod ctx_offset {
    use super::JitCtx;
    use std::mem::offset_of;
    pub const INPUT_START: i32 = offset_of!(JitCtx, input_start) as i32;
    pub const INPUT_LEN: i32 = offset_of!(JitCtx, input_len) as i32;
    pub const ERROR_KIND: i32 = offset_of!(JitCtx, error_kind) as i32;
    pub const GROUP_DONE: i32 = offset_of!(JitCtx, group_done) as i32;
    pub const ERROR_OFFSET: i32 = offset_of!(JitCtx, error_offset) as i32;
    pub const MAX_DEPTH: i32 = offset_of!(JitCtx, max_depth) as i32;
    pub const UTF8: i32 = offset_of!(JitCtx, utf8) as i32;
    pub const CHUNK_PTR: i32 = offset_of!(JitCtx, chunk_ptr) as i32;
    pub const CHUNK_END: i32 = offset_of!(JitCtx, chunk_end) as i32;
}

impl JitCtx {
    /// A context for decoding `input` into `arena`.
    #[inline]
    pub fn new(input: &[u8], arena: &Arena, layouts: &Layouts, options: &DecodeOptions) -> JitCtx {
        let options = DecodeOptions { max_depth: options.max_depth.min(crate::MAX_DEPTH_LIMIT), ..*options };
        JitCtx::for_engine(input, arena, layouts, &options)
    }

    /// [`JitCtx::new`] for an engine, whose options have `max_depth` within
    /// [`crate::MAX_DEPTH_LIMIT`] already (clamped when it was made): a 10-byte decode
    /// is a few hundred instructions, and the clamp and the policy's code were ~6 of them.
    #[inline]
    pub(crate) fn for_engine(input: &[u8], arena: &Arena, layouts: &Layouts, options: &DecodeOptions) -> JitCtx {
        debug_assert!(options.max_depth <= crate::MAX_DEPTH_LIMIT);
        JitCtx {
            input_start: input.as_ptr(),
            input_len: input.len(),
            arena,
            layouts,
            error_kind: 0,
            group_done: 0,
            error_offset: 0,
            max_depth: options.max_depth,
            // The enum's discriminants are the codes (see `utf8`).
            utf8: options.utf8 as u32,
            chunk_ptr: std::ptr::null_mut(),
            chunk_end: std::ptr::null_mut(),
            tiers: std::ptr::null(),
            tier_decodes: options.tiering.after_decodes,
            tier_bytes: options.tiering.after_bytes,
        }
    }

    /// Lends compiled code the arena's free space, at least `min` bytes, unless it holds
    /// a region already. Compiled code and the arena thus share one allocation point:
    /// compiled code bumps through the region while it runs, and every call out of it
    /// that may allocate returns the region's unused end first ([`guard_alloc`]).
    #[inline]
    pub(crate) fn borrow_chunk(&mut self, arena: &Arena, min: usize) {
        if self.chunk_ptr.is_null() {
            let (start, end) = arena.lend(min);
            (self.chunk_ptr, self.chunk_end) = (start, end);
        }
    }

    /// A zeroed block of `size` bytes from the front of the arena's free space, and the
    /// rest of it (at least `min` bytes) lent to compiled code, as [`JitCtx::borrow_chunk`]
    /// does; for a context that holds no region yet.
    #[inline]
    pub(crate) fn borrow_chunk_with_block(&mut self, arena: &Arena, size: usize, min: usize) -> NonNull<u8> {
        debug_assert!(self.chunk_ptr.is_null(), "the context holds a region already");
        let (block, start, end) = arena.lend_with_block(size, min);
        (self.chunk_ptr, self.chunk_end) = (start, end);
        block
    }

    /// Gives the arena back the unused end of the region compiled code holds, if any.
    #[inline]
    pub(crate) fn return_chunk(&mut self, arena: &Arena) {
        if !self.chunk_ptr.is_null() {
            // SAFETY: the region came from `arena`'s last lend (every lend is returned
            // before the arena allocates again: `guard_alloc`, `run`, `decode_child`); compiled
            // code carves from its front only, so `chunk_ptr..chunk_end` is its unused end.
            unsafe { arena.take_back(self.chunk_ptr, self.chunk_end) };
            (self.chunk_ptr, self.chunk_end) = (std::ptr::null_mut(), std::ptr::null_mut());
        }
    }

    /// The same context for a tiered decode over `tiers` (whose layouts it was made for).
    pub(crate) fn tiered(self, tiers: &Tiers) -> JitCtx {
        JitCtx { tiers, ..self }
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

    /// The input position `pos` bytes from the start, as compiled code addresses it.
    fn at(&self, pos: usize) -> *const u8 {
        debug_assert!(pos <= self.input_len);
        self.input_start.wrapping_add(pos)
    }

    fn options(&self) -> DecodeOptions {
        let utf8 = match self.utf8 {
            0 => Utf8Check::Off,
            1 => Utf8Check::Proto3,
            _ => Utf8Check::All,
        };
        DecodeOptions { max_depth: self.max_depth, utf8, ..DecodeOptions::default() }
    }
}

/// Every helper compiled code calls, in one list: the field of the lowering's helper
/// table, the function, and its Rust parameter and result types. The lowering expands it
/// (`lower::Helpers`) into both a typed function pointer — so a declaration below that
/// drifts from this list does not compile — and the Cranelift signature, derived from the
/// same Rust types. Nothing else declares a helper's signature.
macro_rules! foreach_helper {
    ($m:ident) => {
        $m! {
            slow_field: pj_slow_field(*mut JitCtx, u32, *mut u8, *const u8, *const u8, u64) -> *const u8;
            varint: pj_varint(*mut JitCtx, *const u8, *const u8, *mut u64) -> *const u8;
            utf8: pj_utf8(*mut JitCtx, *const u8, usize, *const u8) -> u32;
            reserve: pj_reserve(*mut JitCtx, u32, u32, *mut u8, u32) -> u32;
            child: pj_child(*mut JitCtx, u32, u32, *mut u8) -> *mut u8;
            push_child: pj_push_child(*mut JitCtx, u32, u32, *mut u8) -> *mut u8;
            alloc_block: pj_alloc_block(*mut JitCtx, u32) -> *mut u8;
            packed_run: pj_packed_run(*mut JitCtx, u32, u32, *mut u8, *const u8, *const u8) -> *const u8;
            interp_message: pj_interp_message(*mut JitCtx, u32, *mut u8, *const u8, *const u8, u64, *const u8) -> *const u8;
        }
    };
}
pub(crate) use foreach_helper;

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
/// The returned references have an unbounded lifetime `'x`: they are valid only for the
/// duration of the helper call that made them, and that holds because helpers never
/// keep them past their return. The `&mut JitCtx` is unique while it lives: compiled
/// code is suspended in the call, no other helper runs at the same time on this context
/// (one decode, one thread), and the helpers that may re-enter compiled code (through
/// the interpreter's [`TierHook`]) drop it first (see [`with_interp`]).
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
/// `block` is a block of layout `layout` in the tree of the decode whose `arena` and
/// `layouts` these are (compiled code passes only its own `block` parameter with its own
/// layout index), and the input lives for `'x`.
unsafe fn block_mut<'x>(arena: &'x Arena, layouts: &'x Layouts, layout: u32, block: *mut u8) -> BlockMut<'x> {
    // SAFETY: the caller's contract; blocks are never null.
    unsafe { BlockMut::from_raw(NonNull::new_unchecked(block), arena, layouts, LayoutIndex::new(layout)) }
}

/// Runs a helper's body so that nothing unwinds into compiled code (which would abort the
/// process): a panic, which would be a protojit bug, becomes a recorded
/// [`DecodeErrorKind::Internal`] error and the helper returns `failed`.
///
/// # Safety
/// `ctx` is the live context of the running decode, and `body` holds no reference made
/// from it when it panics (it is gone: the panic unwound it).
unsafe fn guard<R>(ctx: *mut JitCtx, failed: R, body: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(_) => {
            // SAFETY: the caller's contract; the body's borrows of the context ended.
            let ctx = unsafe { &mut *ctx };
            ctx.fail(DecodeError::new(DecodeErrorKind::Internal, 0));
            failed
        }
    }
}

/// [`guard`] for a helper whose body may allocate from the arena: compiled code's region
/// goes back to the arena first, and compiled code gets the arena's free space again
/// afterwards (unless the body lent it a region itself, as `pj_alloc_block` does).
///
/// # Safety
/// As [`guard`].
unsafe fn guard_alloc<R>(ctx: *mut JitCtx, failed: R, body: impl FnOnce() -> R) -> R {
    // SAFETY: the caller's contract: the live context, whose arena outlives the decode;
    // no other reference to the context is alive here.
    unsafe {
        let c = &mut *ctx;
        c.return_chunk(&*c.arena);
    }
    // SAFETY: the caller's contract.
    let r = unsafe { guard(ctx, failed, body) };
    // SAFETY: as above; the body's borrows of the context ended.
    unsafe {
        let c = &mut *ctx;
        c.borrow_chunk(&*c.arena, 0);
    }
    r
}

/// Where a helper's interpreter run left the input.
pub(crate) enum Done {
    /// At this position (an offset into the input).
    At(usize),
    /// After the end-group tag of the group being decoded, at this position.
    GroupEnd(usize),
}

/// The body shared by the helpers that hand a field, a packed run or a whole message to
/// the interpreter: the guard, the block as a writer and an interpreter over the input
/// (offering child messages to compiled code in a tiered decode); `body` gets the input
/// offsets of `ptr` and `end` and returns where it stopped.
///
/// No `&mut JitCtx` lives while `body` runs: the interpreter may call compiled code of a
/// child type (tiering), which writes the context through its own pointer.
///
/// # Safety
/// As [`pj_slow_field`] for `ctx`, `layout`, `block`, `ptr` and `end`.
unsafe fn with_interp(
    ctx: *mut JitCtx,
    layout: u32,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
    body: impl for<'x> FnOnce(&Interp<'x>, &mut BlockMut<'x>, usize, usize) -> Result<Done, DecodeError>,
) -> *const u8 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard_alloc(ctx, std::ptr::null(), || {
            // SAFETY: compiled code passes the live context of this decode (see `enter`);
            // the `&mut` ends with this statement.
            let (options, input, arena, layouts, tiers) = {
                let (c, input, arena, layouts) = enter(ctx);
                (c.options(), input, arena, layouts, c.tiers)
            };
            let (pos, stop) = (ptr as usize - input.as_ptr() as usize, end as usize - input.as_ptr() as usize);
            // SAFETY: the caller's contract.
            let mut block = block_mut(arena, layouts, layout, block);
            let r = if tiers.is_null() {
                body(&Interp::new(input, &options), &mut block, pos, stop)
            } else {
                // SAFETY: a tiered context's `tiers` outlives the decode (the engine holds it).
                let hook = TierHook { ctx, tiers: &*tiers };
                if hook.tiers.is_cold(LayoutIndex::new(layout)) && stop >= pos {
                    hook.note(LayoutIndex::new(layout), stop - pos);
                }
                body(&Interp::new(input, &options).with_children(&hook), &mut block, pos, stop)
            };
            // SAFETY: as above; no other reference to the context is alive now.
            let ctx = &mut *ctx;
            match r {
                Ok(Done::At(next)) => ctx.at(next),
                Ok(Done::GroupEnd(next)) => {
                    ctx.group_done = 1;
                    ctx.at(next)
                }
                Err(e) => ctx.fail(e),
            }
        })
    }
}

/// Offers a tiered decode's child messages to their types' compiled code, and counts the
/// types the interpreter decodes toward their compile thresholds.
pub(crate) struct TierHook<'t> {
    /// The decode's context; compiled code writes it through this pointer.
    pub(crate) ctx: *mut JitCtx,
    pub(crate) tiers: &'t Tiers,
}

impl TierHook<'_> {
    /// Counts one interpreted decode of `layout` over `bytes` bytes.
    pub(crate) fn note(&self, layout: LayoutIndex, bytes: usize) {
        // SAFETY: the hook's context is live for the whole decode; plain reads of two
        // fields nothing writes during a decode.
        let (decodes, limit) = unsafe { ((*self.ctx).tier_decodes, (*self.ctx).tier_bytes) };
        self.tiers.note(layout, bytes as u64, decodes, limit);
    }
}

impl ChildDecoder for TierHook<'_> {
    fn decode_child(
        &self,
        child: &mut BlockMut<'_>,
        layout: LayoutIndex,
        pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Option<Result<usize, DecodeError>> {
        let Some(f) = self.tiers.entry(layout) else {
            if self.tiers.is_cold(layout) {
                self.note(layout, if group.is_some() { 0 } else { end - pos });
            }
            return None;
        };
        // SAFETY: a plain read of the live context (see `note`).
        let (start, input_len, arena) = unsafe { ((*self.ctx).input_start, (*self.ctx).input_len, (*self.ctx).arena) };
        // The interpreter hands over its own child blocks, which are in this decode's arena
        // and of `layout`; checked anyway, since compiled code trusts both.
        if !std::ptr::eq(child.layout(), self.tiers.layouts().get(layout))
            || !std::ptr::eq(child.arena(), arena)
            || pos > end
            || end > input_len
        {
            return Some(Err(DecodeError::new(DecodeErrorKind::Internal, pos)));
        }
        let meta = depth as u64 | group.map_or(0, |g| (g.0 as u64) << 32);
        let gtag = group.map_or(std::ptr::null(), |g| start.wrapping_add(g.1));
        // SAFETY: `f` is the compiled function of `layout` over the tiers' layouts, which
        // are this decode's; `child` is a block of that layout in this decode's arena
        // (checked above); `pos..end` lies inside the input; `ctx` is this decode's live
        // context, and no reference to it is held across the call.
        let r = unsafe {
            // Compiled code gets the arena's free space for the call, and the interpreter
            // the unused rest after it (see `JitCtx::borrow_chunk`).
            (*self.ctx).borrow_chunk(&*arena, 0);
            let r = f(self.ctx, child.as_ptr().as_ptr(), start.wrapping_add(pos), start.wrapping_add(end), meta, gtag);
            (*self.ctx).return_chunk(&*arena);
            r
        };
        if r.is_null() {
            // SAFETY: as in `note`; compiled code has returned.
            let e = unsafe { (*self.ctx).error() };
            return Some(Err(e.unwrap_or(DecodeError::new(DecodeErrorKind::Internal, pos))));
        }
        Some(Ok(r as usize - start as usize))
    }
}

/// A block method's refusal, which compiled code never provokes (it passes its own slot
/// indices with their own kinds), as an internal error.
fn internal(_: protojit_arena::SlotMismatch) -> DecodeError {
    DecodeError::new(DecodeErrorKind::Internal, 0)
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
    // SAFETY: the caller's contract.
    unsafe {
        with_interp(ctx, layout, block, ptr, end, |interp, block, pos, end| {
            let group = (meta >> 32) as u32;
            Ok(match interp.field(block, pos, end, meta as u32, (group != 0).then_some(group))? {
                Step::Next(next) => Done::At(next),
                Step::GroupEnd(next) => Done::GroupEnd(next),
            })
        })
    }
}

/// Reads a varint at `ptr` (any length) into `*out`; returns the position after it, or
/// null with the error recorded.
///
/// # Safety
/// `input_start <= ptr <= end <= input_start + input_len`; `out` is writable.
pub unsafe extern "C" fn pj_varint(ctx: *mut JitCtx, ptr: *const u8, end: *const u8, out: *mut u64) -> *const u8 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard(ctx, std::ptr::null(), || {
            // SAFETY: compiled code passes the live context of this decode (see `enter`).
            let (ctx, input, _, _) = enter(ctx);
            let (pos, end) = (ctx.offset(ptr), ctx.offset(end));
            // With ten bytes in range no per-byte bounds check is needed (compiled code
            // already handled one- and two-byte varints inline).
            if let Some(window) = input[..end].get(pos..pos + 10) {
                let mut v = 0u64;
                for (i, &b) in window.iter().enumerate() {
                    v |= ((b & 0x7f) as u64) << (7 * i);
                    if b < 0x80 {
                        // SAFETY: the caller's contract.
                        out.write(v);
                        return ctx.at(pos + i + 1);
                    }
                }
                return ctx.fail(DecodeError::new(DecodeErrorKind::VarintTooLong, pos));
            }
            match read_varint(&input[..end], pos) {
                Ok((v, next)) => {
                    // SAFETY: the caller's contract.
                    out.write(v);
                    ctx.at(next)
                }
                Err(e) => ctx.fail(e),
            }
        })
    }
}

/// Whether `len` bytes at `ptr` are UTF-8; records `InvalidUtf8` at `at` if not.
///
/// # Safety
/// `ptr..ptr+len` and `at` lie inside the input of the decode `ctx` describes.
pub unsafe extern "C" fn pj_utf8(ctx: *mut JitCtx, ptr: *const u8, len: usize, at: *const u8) -> u32 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard(ctx, 0, || {
            // SAFETY: the caller's contract.
            let bytes = std::slice::from_raw_parts(ptr, len);
            if runtime::is_utf8(bytes) {
                return 1;
            }
            // SAFETY: compiled code passes the live context of this decode.
            let ctx = &mut *ctx;
            let offset = ctx.offset(at);
            ctx.fail(DecodeError::new(DecodeErrorKind::InvalidUtf8, offset));
            0
        })
    }
}

/// Makes room for `additional` elements in repeated slot `slot` of `block`. Returns 1, or
/// 0 with an internal error recorded if the slot is not repeated.
///
/// # Safety
/// As [`pj_slow_field`] for `ctx`, `layout`, `block`.
pub unsafe extern "C" fn pj_reserve(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8, additional: u32) -> u32 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard_alloc(ctx, 0, || {
            // SAFETY: compiled code passes the live context of this decode (see `enter`).
            let (ctx, _, arena, layouts) = enter(ctx);
            // SAFETY: the caller's contract.
            let mut block = block_mut(arena, layouts, layout, block);
            match block.reserve(SlotIndex::new(slot), additional as usize) {
                Ok(()) => 1,
                Err(e) => {
                    ctx.fail(internal(e));
                    0
                }
            }
        })
    }
}

/// The child block of singular message slot `slot` (allocated if absent; merges), or
/// null with an internal error recorded if the slot is not one.
///
/// # Safety
/// As [`pj_reserve`].
pub unsafe extern "C" fn pj_child(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8) -> *mut u8 {
    // SAFETY: the caller's contract.
    unsafe { child_helper(ctx, layout, slot, block, |b, si| b.child(si)) }
}

/// Appends a zeroed child block to repeated message slot `slot` and returns it, or null
/// with an internal error recorded if the slot is not one.
///
/// # Safety
/// As [`pj_reserve`].
pub unsafe extern "C" fn pj_push_child(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8) -> *mut u8 {
    // SAFETY: the caller's contract.
    unsafe { child_helper(ctx, layout, slot, block, |b, si| b.push_child(si)) }
}

/// The body of [`pj_child`] and [`pj_push_child`]: `op` on the block, its child's address
/// or null with an internal error recorded.
///
/// # Safety
/// As [`pj_reserve`].
unsafe fn child_helper(
    ctx: *mut JitCtx,
    layout: u32,
    slot: u32,
    block: *mut u8,
    op: for<'x, 'b> fn(&'b mut BlockMut<'x>, SlotIndex) -> Result<BlockMut<'x>, protojit_arena::SlotMismatch>,
) -> *mut u8 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard_alloc(ctx, std::ptr::null_mut(), || {
            // SAFETY: compiled code passes the live context of this decode (see `enter`).
            let (ctx, _, arena, layouts) = enter(ctx);
            // SAFETY: the caller's contract.
            let mut block = block_mut(arena, layouts, layout, block);
            match op(&mut block, SlotIndex::new(slot)) {
                Ok(child) => child.as_ptr().as_ptr(),
                Err(e) => {
                    ctx.fail(internal(e));
                    std::ptr::null_mut()
                }
            }
        })
    }
}

/// Borrows a new region of at least `size` bytes from the arena and returns its first
/// `size` bytes (uninitialised; compiled code zeroes them), leaving the rest in `ctx` for
/// compiled code to bump-allocate from. Returns null with an internal error recorded if `size` is
/// not a block size (a multiple of 8).
///
/// # Safety
/// As [`pj_reserve`] for `ctx`.
pub unsafe extern "C" fn pj_alloc_block(ctx: *mut JitCtx, size: u32) -> *mut u8 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard_alloc(ctx, std::ptr::null_mut(), || {
            // SAFETY: compiled code passes the live context of this decode (see `enter`).
            let (ctx, _, arena, _) = enter(ctx);
            let size = size as usize;
            if size == 0 || !size.is_multiple_of(8) {
                ctx.fail(DecodeError::new(DecodeErrorKind::Internal, 0));
                return std::ptr::null_mut();
            }
            // `guard` returned the region (too short for `size`); a new one holds it.
            ctx.borrow_chunk(arena, size);
            let chunk = ctx.chunk_ptr;
            // SAFETY: the region just lent holds at least `size` bytes from its start.
            ctx.chunk_ptr = chunk.add(size);
            chunk
        })
    }
}

/// Decodes the values of a packed run in `ptr..end` (after its length prefix) of
/// repeated slot `slot`: whole fixed-width and closed-enum runs, long varint runs, and the
/// rest of a short varint run from its first varint longer than two bytes (such runs,
/// coordinates and ids, are better served by the interpreter's tight loop than by a
/// helper call per value).
///
/// # Safety
/// As [`pj_slow_field`], with `ptr <= end`; the vector's length counts every element
/// compiled code stored.
pub unsafe extern "C" fn pj_packed_run(
    ctx: *mut JitCtx,
    layout: u32,
    slot: u32,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
) -> *const u8 {
    // SAFETY: the caller's contract.
    unsafe {
        with_interp(ctx, layout, block, ptr, end, |interp, block, pos, end| {
            interp.packed_run(block, SlotIndex::new(slot), pos, end).map(Done::At)
        })
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
    // SAFETY: the caller's contract.
    unsafe {
        // The group's start tag lies inside the input (the caller's contract).
        let input_start = (*ctx).input_start;
        with_interp(ctx, layout, block, ptr, end, |interp, block, pos, end| {
            let group = (meta >> 32) as u32;
            let group = (group != 0).then(|| (group, gtag as usize - input_start as usize));
            interp.message(block, pos, end, meta as u32, group).map(Done::At)
        })
    }
}
