//! The `extern "C"` slow-path helpers compiled code calls (listed in
//! [`foreach_helper!`](crate::abi::foreach_helper)), and what they share.
//!
//! Compiled code does the common cases inline (one-byte tags, short varints, fixed-width
//! values, string views, vector pushes with spare capacity) and calls these helpers for
//! the rest. The helpers delegate to the interpreter and to [`BlockMut`], so both engines
//! share one implementation of every slow path.

use std::ptr::NonNull;

use protojit_arena::interp::{Interp, Step};
use protojit_arena::wire::read_varint;
use protojit_arena::{runtime, Arena, BlockMut, DecodeError, DecodeErrorKind, LayoutIndex, Layouts, SlotIndex};

use crate::abi::{JitCtx, TierHook};

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
/// `ctx` is the live context of the running decode, made by `JitCtx::new` (compiled
/// code passes only that), so its input, arena and layouts are alive.
unsafe fn enter<'x>(ctx: *mut JitCtx) -> (&'x mut JitCtx, &'x [u8], &'x Arena, &'x Layouts) {
    // SAFETY: the caller's contract: the context was made for an input, arena and layouts
    // that outlive the decode, which outlives this call; the three are separate memory
    // from `ctx`.
    unsafe {
        let ctx = &mut *ctx;
        let (input, arena, layouts) =
            (std::slice::from_raw_parts(ctx.input_start, ctx.input_len), &*ctx.arena, &*ctx.layouts);
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
                (c.options, input, arena, layouts, c.tiers)
            };
            let (pos, stop) = (ptr as usize - input.as_ptr() as usize, end as usize - input.as_ptr() as usize);
            // SAFETY: the caller's contract.
            let mut block = block_mut(arena, layouts, layout, block);
            let r = match tiers {
                None => body(&Interp::new(input, &options), &mut block, pos, stop),
                Some(tiers) => {
                    // SAFETY: a tiered context's tiers outlive the decode (the engine holds them).
                    let hook = TierHook { ctx, tiers: tiers.as_ref() };
                    if stop >= pos {
                        hook.note(LayoutIndex::new(layout), stop - pos);
                    }
                    body(&Interp::new(input, &options).with_children(&hook), &mut block, pos, stop)
                }
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
pub(crate) unsafe extern "C" fn pj_slow_field(
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

/// Reads a varint at `ptr` (any length) into `*out`: [`crate::wire::varint_long`]; returns
/// the position after it, or null with the error recorded (as the interpreter reports it).
///
/// # Safety
/// `input_start <= ptr <= end <= input_start + input_len`; `out` is writable.
pub(crate) unsafe extern "C" fn pj_varint(
    ctx: *mut JitCtx,
    ptr: *const u8,
    end: *const u8,
    out: *mut u64,
) -> *const u8 {
    // SAFETY: the caller's contract.
    match unsafe { crate::wire::varint_long(ptr, end, out) } {
        after if !after.is_null() => after,
        // SAFETY: the caller's contract.
        _ => unsafe { varint_error(ctx, ptr, end) },
    }
}

/// Records why the varint at `ptr` (before `end`) is malformed; returns null.
///
/// # Safety
/// As [`pj_varint`].
#[cold]
unsafe fn varint_error(ctx: *mut JitCtx, ptr: *const u8, end: *const u8) -> *const u8 {
    // SAFETY: the body makes its references inside the guard.
    unsafe {
        guard(ctx, std::ptr::null(), || {
            // SAFETY: compiled code passes the live context of this decode (see `enter`).
            let (ctx, input, _, _) = enter(ctx);
            let (pos, end) = (ctx.offset(ptr), ctx.offset(end));
            let e = match read_varint(&input[..end], pos) {
                Err(e) => e,
                // `varint_long` and `read_varint` accept the same varints.
                Ok(_) => DecodeError::new(DecodeErrorKind::Internal, pos),
            };
            ctx.fail(e)
        })
    }
}

/// Whether `len` bytes at `ptr` are UTF-8; records `InvalidUtf8` at `at` if not.
///
/// # Safety
/// `ptr..ptr+len` and `at` lie inside the input of the decode `ctx` describes.
pub(crate) unsafe extern "C" fn pj_utf8(ctx: *mut JitCtx, ptr: *const u8, len: usize, at: *const u8) -> u32 {
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
pub(crate) unsafe extern "C" fn pj_reserve(
    ctx: *mut JitCtx,
    layout: u32,
    slot: u32,
    block: *mut u8,
    additional: u32,
) -> u32 {
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
pub(crate) unsafe extern "C" fn pj_child(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8) -> *mut u8 {
    // SAFETY: the caller's contract.
    unsafe { child_helper(ctx, layout, slot, block, |b, si| b.child(si)) }
}

/// Appends a zeroed child block to repeated message slot `slot` and returns it, or null
/// with an internal error recorded if the slot is not one.
///
/// # Safety
/// As [`pj_reserve`].
pub(crate) unsafe extern "C" fn pj_push_child(ctx: *mut JitCtx, layout: u32, slot: u32, block: *mut u8) -> *mut u8 {
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
pub(crate) unsafe extern "C" fn pj_alloc_block(ctx: *mut JitCtx, size: u32) -> *mut u8 {
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
pub(crate) unsafe extern "C" fn pj_packed_run(
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
/// the lowering does not compile. Same contract as [`MessageFn`](crate::abi::MessageFn), plus the layout index.
///
/// # Safety
/// As [`pj_slow_field`], with `ptr <= end`.
pub(crate) unsafe extern "C" fn pj_interp_message(
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
