//! The contract between compiled code and the rest of the crate: the context compiled code
//! runs with ([`JitCtx`] and its field offsets), the signature of every message function
//! ([`MessageFn`]), the one list of helpers compiled code calls ([`foreach_helper!`]) and the
//! tiering link the helpers reach through the context ([`TierGate`]).
//!
//! A leaf: the lowering (which emits code against this contract), the helper bodies (which
//! implement it) and the tiers (which hand it compiled code) all import it, and it imports
//! none of them.

use std::ptr::NonNull;

use protojit_arena::interp::ChildDecoder;
use protojit_arena::{Arena, BlockMut, DecodeError, DecodeErrorKind, DecodeOptions, LayoutIndex, Layouts};

/// Per-decode state shared by compiled functions and helpers. `repr(C)`: compiled code
/// reads and writes the fields at the offsets of [`ctx_offset`].
#[repr(C)]
pub(crate) struct JitCtx {
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
    /// Set by `pj_slow_field` when it consumed the end-group tag of the group being decoded.
    pub group_done: u32,
    /// Error offset from `input_start`.
    pub error_offset: usize,
    /// The decode's wire limits, as the engine was given them: compiled code reads
    /// `max_depth` and the UTF-8 policy's code from here, the helpers hand the whole to the
    /// interpreter.
    pub options: DecodeOptions,
    /// Next free byte of the region of the arena lent to compiled code
    /// ([`Arena::lend`]), which carves child blocks and first vector buffers from it
    /// (null while it holds none: before the first lend and while a helper runs).
    pub chunk_ptr: *mut u8,
    /// End of that region.
    pub chunk_end: *mut u8,
    /// The tiers of a tiered decode (`None` otherwise): the interpreter offers child
    /// messages to their compiled code, and counts the types it decodes.
    pub tiers: Option<NonNull<dyn TierGate>>,
    /// `Tiering::after_decodes` of the engine.
    pub tier_decodes: u64,
    /// `Tiering::after_bytes` of the engine.
    pub tier_bytes: u64,
}

/// Byte offsets of [`JitCtx`] fields, for the lowering.
pub(crate) mod ctx_offset {
    use super::JitCtx;
    use protojit_arena::DecodeOptions;
    use std::mem::offset_of;
    pub const INPUT_START: i32 = offset_of!(JitCtx, input_start) as i32;
    pub const INPUT_LEN: i32 = offset_of!(JitCtx, input_len) as i32;
    pub const ERROR_KIND: i32 = offset_of!(JitCtx, error_kind) as i32;
    pub const GROUP_DONE: i32 = offset_of!(JitCtx, group_done) as i32;
    pub const ERROR_OFFSET: i32 = offset_of!(JitCtx, error_offset) as i32;
    /// A `u32`.
    pub const MAX_DEPTH: i32 = (offset_of!(JitCtx, options) + DecodeOptions::MAX_DEPTH_OFFSET) as i32;
    /// A `u32`: the UTF-8 policy's code (0 off, 1 the strings whose features say VERIFY,
    /// 2 every string).
    pub const UTF8: i32 = (offset_of!(JitCtx, options) + DecodeOptions::UTF8_OFFSET) as i32;
    /// A `u32`: the unknown-field policy's code (0 keep, 1 discard).
    pub const UNKNOWN: i32 = (offset_of!(JitCtx, options) + DecodeOptions::UNKNOWN_OFFSET) as i32;
    pub const CHUNK_PTR: i32 = offset_of!(JitCtx, chunk_ptr) as i32;
    pub const CHUNK_END: i32 = offset_of!(JitCtx, chunk_end) as i32;
}

impl JitCtx {
    /// A context for decoding `input` into `arena` over `layouts`; an engine's tiering
    /// thresholds go in with [`JitCtx::tiered`].
    #[inline]
    pub(crate) fn new(input: &[u8], arena: &Arena, layouts: &Layouts, options: &DecodeOptions) -> JitCtx {
        JitCtx {
            input_start: input.as_ptr(),
            input_len: input.len(),
            arena,
            layouts,
            error_kind: 0,
            group_done: 0,
            error_offset: 0,
            options: *options,
            chunk_ptr: std::ptr::null_mut(),
            chunk_end: std::ptr::null_mut(),
            tiers: None,
            tier_decodes: 0,
            tier_bytes: 0,
        }
    }

    /// The same context for a tiered decode over `tiers` (whose layouts it was made for),
    /// counting interpreted types toward `after_decodes` / `after_bytes`.
    pub(crate) fn tiered(self, tiers: &(dyn TierGate + 'static), after_decodes: u64, after_bytes: u64) -> JitCtx {
        JitCtx { tiers: Some(NonNull::from(tiers)), tier_decodes: after_decodes, tier_bytes: after_bytes, ..self }
    }

    /// Lends compiled code the arena's free space, at least `min` bytes, unless it holds
    /// a region already. Compiled code and the arena thus share one allocation point:
    /// compiled code bumps through the region while it runs, and every call out of it
    /// that may allocate returns the region's unused end first (the helpers' guard).
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
            // before the arena allocates again: the helpers' guard, the engine's `run`,
            // the tiers' `decode_child`); compiled code carves from its front only, so
            // `chunk_ptr..chunk_end` is its unused end.
            unsafe { arena.take_back(self.chunk_ptr, self.chunk_end) };
            (self.chunk_ptr, self.chunk_end) = (std::ptr::null_mut(), std::ptr::null_mut());
        }
    }

    /// The error recorded by compiled code or a helper, if any.
    pub(crate) fn error(&self) -> Option<DecodeError> {
        DecodeErrorKind::from_code(self.error_kind).map(|k| DecodeError::new(k, self.error_offset))
    }

    /// Records `e` and returns null, what a failing helper returns to compiled code.
    pub(crate) fn fail(&mut self, e: DecodeError) -> *const u8 {
        self.error_kind = e.kind as u32;
        self.error_offset = e.offset;
        std::ptr::null()
    }

    /// The input offset of position `p`.
    pub(crate) fn offset(&self, p: *const u8) -> usize {
        p as usize - self.input_start as usize
    }

    /// The input position `pos` bytes from the start, as compiled code addresses it.
    pub(crate) fn at(&self, pos: usize) -> *const u8 {
        debug_assert!(pos <= self.input_len);
        self.input_start.wrapping_add(pos)
    }
}

/// Every helper the tree decoder's code calls, in one list: the field of the lowering's
/// helper table, the function (in the private `helpers` module), and its Rust parameter and
/// result types. `foreach_helper!(m args)` calls `m! { args list }`; the lowering expands it
/// with `wire::helper_table!` (`lower::Helpers`) into both a typed function pointer — so a
/// helper whose declaration drifts from this list does not compile — and the Cranelift
/// signature, derived from the same Rust types. Nothing else declares a helper's signature.
macro_rules! foreach_helper {
    ($m:ident $($args:tt)*) => {
        $m! { $($args)*
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
pub(crate) type MessageFn = unsafe extern "C" fn(
    ctx: *mut JitCtx,
    block: *mut u8,
    ptr: *const u8,
    end: *const u8,
    meta: u64,
    gtag: *const u8,
) -> *const u8;

/// What a tiered decode's helpers and interpreter reach through the context: the tiers,
/// which count interpreted decodes toward the compile thresholds and run a child
/// message's compiled code once it has some. Implemented by `Tiers`; seen by the
/// interpreter as a [`ChildDecoder`] through [`TierHook`].
pub(crate) trait TierGate: Sync {
    /// Counts one interpreted decode of `layout` over `bytes` bytes, if the type is still
    /// cold, with the thresholds of the decode `ctx`.
    fn note(&self, ctx: *const JitCtx, layout: LayoutIndex, bytes: usize);

    /// [`ChildDecoder::decode_child`] for the decode whose live context is `ctx`: the
    /// child type's compiled code, or `None` (counted if cold) while it has none.
    #[allow(clippy::too_many_arguments)]
    fn decode_child(
        &self,
        ctx: *mut JitCtx,
        child: &mut BlockMut<'_>,
        layout: LayoutIndex,
        pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Option<Result<usize, DecodeError>>;
}

/// The interpreter's [`ChildDecoder`] in a tiered decode: the tiers, for the decode whose
/// live context is `ctx` (compiled code writes the context through this pointer).
pub(crate) struct TierHook<'t> {
    pub ctx: *mut JitCtx,
    pub tiers: &'t dyn TierGate,
}

impl TierHook<'_> {
    /// Counts one interpreted decode of `layout` over `bytes` bytes, if it is cold.
    pub(crate) fn note(&self, layout: LayoutIndex, bytes: usize) {
        self.tiers.note(self.ctx, layout, bytes);
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
        self.tiers.decode_child(self.ctx, child, layout, pos, end, depth, group)
    }
}
