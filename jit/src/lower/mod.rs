//! Lowering: one message layout becomes one Cranelift function with a peek hub and
//! field-order threading.
//!
//! Shape of every function (`MessageFn`: `ctx, block, ptr, end, meta, gtag`):
//!
//! ```text
//! entry(p): p == end ? finish(p) : *p == the first field's tag ? label[first](p + 1) : table(p, *p)
//! dispatch(p): p == end ? finish(p) : table(p, byte *p)
//! finish(p): return p (a group's function: an error unless its end tag came first)
//! table(p, b): b >= 0x80 ? two_byte(p) (tags of fields 16..2047, by Switch)
//!            : br_table over the field number b >> 3 ─► field n: compare the wire type b & 7
//!                                                         ─► label[slot, form](p + 1, p)
//!                                                         └► slow(p) (the interpreter's field step)
//! label: decode one value inline, then thread: p == end ? finish(p) : compare the next
//!        byte with the tags the next fields are expected to have and jump straight there;
//!        on a miss, table(p, b).
//! child: a direct call (eager), or through the per-type entry table (tiering).
//! ```
//!
//! By job: [`hub`] (dispatch, the table, the slow path, threading), [`fields`] (one label
//! per slot and form, child messages and groups); the wire reads (varints, lengths, zigzag,
//! UTF-8) are the core's (`crate::wire`), shared with the column appenders.
//!
//! Only bytes of the input between `ptr` and `end` are ever loaded: every load is preceded
//! by a bounds check, and every slow case calls a helper (`helpers`), which shares the
//! interpreter's code.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, SigRef, Signature, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::FunctionBuilder;
use protojit_arena::{
    DecodeErrorKind, FieldKind, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition, SlotIndex, NO_INDEX,
};

use crate::abi::{ctx_offset, foreach_helper, JitCtx};
use crate::helpers;
use crate::wire::{helper_table, input_flags, Helper, Wire};

mod fields;
mod hub;

/// Message functions callable from the function being built, by layout index.
pub(crate) trait ChildFns {
    /// The function reference for the message function of `layout`.
    fn child_fn(&mut self, b: &mut FunctionBuilder<'_>, layout: LayoutIndex) -> FuncRef;
}

/// How the function being built calls the functions of its child message types.
pub(crate) enum ChildCalls<'c> {
    /// Direct calls into functions of the same module (eager compilation of a root and
    /// everything it reaches).
    Direct(&'c mut dyn ChildFns),
    /// Through a per-type entry table (tiering): an atomic load of the child type's entry,
    /// then its compiled function, or `pj_interp_message` while the entry is null. The
    /// table outlives the code (both belong to one `Tiers`).
    Table(*const std::sync::atomic::AtomicPtr<u8>),
}

/// Signature of every message function.
pub(crate) fn message_signature(ptr: Type, call_conv: cranelift_codegen::isa::CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for t in [ptr, ptr, ptr, ptr, types::I64, ptr] {
        sig.params.push(AbiParam::new(t));
    }
    sig.returns.push(AbiParam::new(ptr));
    sig
}

foreach_helper!(helper_table Helpers, helpers;);

/// The wire type a label decodes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Form {
    /// One value in the slot kind's own wire type.
    Single,
    /// A packed run (wire type 2 on a packable repeated field).
    Packed,
}

/// Builds the function for one message layout. Owns the `FunctionBuilder`.
pub(crate) struct Translator<'a, 'b> {
    b: FunctionBuilder<'b>,
    ptr: Type,
    cc: cranelift_codegen::isa::CallConv,
    frontend: TargetFrontendConfig,
    layouts: &'a Layouts,
    li: LayoutIndex,
    layout: &'a MessageLayout,
    helpers: Helpers,
    // Entry parameters and values computed once.
    blk: Value,
    end: Value,
    /// The entry's `ptr` argument: where the message's first field starts.
    start: Value,
    /// The entry's `meta`, `gtag` and `ctx` arguments, stored at offsets 0, 8 (group
    /// types only: no other function reads it) and 16,
    /// and loaded where they are used: at child calls and helper calls, where a block is
    /// carved from the lent region, on errors and at the end. As SSA values they were live
    /// across the whole body and, with the block, the end and the position, outnumbered
    /// the callee-saved registers: the register allocator spilled the position, the
    /// hottest value of all, and reloaded it per field. (Keeping `ctx` in a register
    /// for types with child messages measured no better over the corpus.)
    frame: StackSlot,
    // Shared blocks.
    dispatch: Block,
    /// The end of the message's bytes, reached at `finish(p)`: return `p` (a group's
    /// function first checks that its end tag came; reaching the end is an error there).
    finish: Block,
    table: Block,
    slow: Block,
    ret_null: Block,
    fail: HashMap<u32, Block>,
    labels: HashMap<(u32, Form), Block>,
    pending: Vec<(u32, Form)>,
    varint_out: StackSlot,
    /// The message signature, imported on the first call through the entry table.
    msg_sig: Option<SigRef>,
    /// Where `packed_varint` jumps for a long varint (taken by `packed_varints`).
    packed_long: Option<Block>,
}

/// Child blocks up to this size are allocated and zeroed by compiled code; larger ones by
/// a helper (the zeroing stores would outweigh the call).
const INLINE_BLOCK_MAX: u32 = 256;

fn tree_flags() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Whether the lowering compiles this slot's values inline (else the label defers to the
/// interpreter's field step).
fn inline_single(layout: &MessageLayout, si: u32, slot: &FieldSlot) -> bool {
    !(slot.kind == FieldKind::Enum && slot.closed_enum) || closed_enum_range(layout, si).is_some()
}

/// The declared values of the closed enum in slot `si` as `(lowest, highest)` when they
/// are consecutive (`MessageLayout::closed_enum_range`): compiled code checks a value with
/// two compares, and leaves any other value to the interpreter (an undeclared value of a
/// closed enum is an unknown field). `None` for other enums, which the interpreter decodes.
fn closed_enum_range(layout: &MessageLayout, si: u32) -> Option<(i32, i32)> {
    layout.closed_enum_range(SlotIndex::new(si))
}

/// The wire-format tag a label of `slot` in `form` expects.
fn tag_of(slot: &FieldSlot, form: Form) -> u32 {
    match form {
        Form::Single => slot.tag(),
        Form::Packed => (slot.number << 3) | 2,
    }
}

/// The form the next occurrence of `slot` most likely has on the wire.
fn expected_form(slot: &FieldSlot) -> Form {
    if slot.repetition == Repetition::Repeated && slot.kind.is_packable() && slot.packed {
        Form::Packed
    } else {
        Form::Single
    }
}

impl<'a, 'b> Translator<'a, 'b> {
    /// Starts the function for layout `li` in `b` (whose signature is the message signature).
    pub(crate) fn new(
        mut b: FunctionBuilder<'b>,
        frontend: TargetFrontendConfig,
        layouts: &'a Layouts,
        li: LayoutIndex,
    ) -> Self {
        let ptr = frontend.pointer_type();
        let cc = frontend.default_call_conv;
        let helpers = Helpers::import(&mut b, ptr);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let (ctx, blk, p0, end, meta, gtag) = (params[0], params[1], params[2], params[3], params[4], params[5]);
        let layout = layouts.get(li);
        let frame = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 24, 3));
        b.ins().stack_store(ptr, meta, frame, 0);
        if layout.decoded_as_group() {
            // Only a group's function reads its `gtag` (see `gtag`).
            b.ins().stack_store(ptr, gtag, frame, 8);
        }
        b.ins().stack_store(ptr, ctx, frame, 16);
        let dispatch = b.create_block();
        b.append_block_param(dispatch, ptr);
        let finish = b.create_block();
        b.append_block_param(finish, ptr);
        let table = b.create_block();
        b.append_block_param(table, ptr);
        b.append_block_param(table, types::I32);
        let slow = b.create_block();
        b.append_block_param(slow, ptr);
        let ret_null = b.create_block();
        b.set_cold_block(ret_null);
        let varint_out = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        // The entry block stays open: `translate` ends it with the first field's check,
        // `translate_fallback` with a jump to `dispatch`.
        Translator {
            b,
            ptr,
            cc,
            frontend,
            layouts,
            li,
            layout,
            helpers,
            blk,
            end,
            start: p0,
            frame,
            dispatch,
            finish,
            table,
            slow,
            ret_null,
            fail: HashMap::new(),
            labels: HashMap::new(),
            pending: Vec::new(),
            varint_out,
            msg_sig: None,
            packed_long: None,
        }
    }

    /// Emits the whole function and finalizes the builder.
    pub(crate) fn translate(mut self, mut children: ChildCalls<'_>) {
        self.emit_entry();
        self.emit_dispatch();
        self.emit_table();
        self.emit_slow();
        while let Some((si, form)) = self.pending.pop() {
            self.emit_label(si, form, &mut children);
        }
        self.emit_fail_blocks();
        self.b.switch_to_block(self.ret_null);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b.ins().return_(&[null]);
        self.b.seal_all_blocks();
        self.b.finalize(self.frontend);
    }

    /// A function body that hands the whole message to the interpreter (the explicit
    /// fallback; see `Compiled::stats`).
    pub(crate) fn translate_fallback(mut self) {
        // The entry block (still current) jumps to `dispatch`, which calls the interpreter.
        self.b.ins().jump(self.dispatch, &[BlockArg::Value(self.start)]);
        self.b.switch_to_block(self.dispatch);
        let p = self.b.block_params(self.dispatch)[0];
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let meta = self.meta();
        let gtag = if self.layout.decoded_as_group() { self.gtag() } else { self.b.ins().iconst(self.ptr, 0) };
        let ctx = self.ctx();
        let args = [ctx, li, self.blk, p, self.end, meta, gtag];
        let call = self.call(self.helpers.interp_message, &args);
        let r = self.b.inst_results(call)[0];
        self.b.ins().return_(&[r]);
        for blk in [self.table, self.slow, self.ret_null, self.finish] {
            self.b.switch_to_block(blk);
            let null = self.b.ins().iconst(self.ptr, 0);
            self.b.ins().return_(&[null]);
        }
        self.b.seal_all_blocks();
        self.b.finalize(self.frontend);
    }

    /// The entry's `meta` argument: nesting depth (low 32 bits) and, for a group, its
    /// field number (high 32), loaded where it is used (see `frame`).
    fn meta(&mut self) -> Value {
        self.b.ins().stack_load(self.ptr, types::I64, self.frame, 0)
    }

    /// The entry's `gtag` argument: for a group, the position of its start tag. Stored
    /// in the frame only by types some field decodes as a group.
    fn gtag(&mut self) -> Value {
        debug_assert!(self.layout.decoded_as_group(), "gtag of a type never decoded as a group");
        self.b.ins().stack_load(self.ptr, self.ptr, self.frame, 8)
    }

    /// The nesting depth of this message.
    fn depth(&mut self) -> Value {
        let meta = self.meta();
        self.b.ins().ireduce(types::I32, meta)
    }

    /// `DecodeOptions::max_depth` (from the context).
    fn max_depth(&mut self) -> Value {
        let ctx = self.ctx();
        self.b.ins().load(types::I32, tree_flags(), ctx, ctx_offset::MAX_DEPTH)
    }

    fn slot(&self, si: u32) -> &'a FieldSlot {
        self.layout.slot(SlotIndex::new(si))
    }

    /// The label for slot `si` in `form`, created (and queued for emission) on first use.
    ///
    /// Its one parameter is the position after the tag. Every jump to a label has read
    /// the tag's canonical encoding (the hub's one-byte table, the two-byte compare of
    /// tags ≥ 128, threading's exact compares), so the tag starts `tag_len` bytes before
    /// it; the label computes that where an error needs it instead of receiving it too:
    /// a second position passed to every label was one more value live across the
    /// whole function, and the register allocator spilled the position to make room.
    fn label(&mut self, si: u32, form: Form) -> Block {
        if let Some(&blk) = self.labels.get(&(si, form)) {
            return blk;
        }
        let blk = self.b.create_block();
        self.b.append_block_param(blk, self.ptr); // position after the tag
        self.labels.insert((si, form), blk);
        self.pending.push((si, form));
        blk
    }

    /// Which label decodes the field with this tag, if compiled code handles it.
    fn label_for_tag(&mut self, tag: u32) -> Option<Block> {
        let number = tag >> 3;
        let wt = (tag & 7) as u8;
        let si = self.layout.slot_by_number(number)?.index() as u32;
        let slot = self.slot(si);
        if wt == slot.kind.wire_type() && inline_single(self.layout, si, slot) {
            Some(self.label(si, Form::Single))
        } else if wt == 2 && slot.repetition == Repetition::Repeated && slot.kind.is_packable() {
            Some(self.label(si, Form::Packed))
        } else {
            None
        }
    }

    /// A cold block recording error `kind` at the position passed as its parameter
    /// (its body is emitted at the end, by `emit_fail_blocks`).
    fn fail_block(&mut self, kind: DecodeErrorKind) -> Block {
        if let Some(&blk) = self.fail.get(&(kind as u32)) {
            return blk;
        }
        let blk = self.b.create_block();
        self.b.append_block_param(blk, self.ptr);
        self.b.set_cold_block(blk);
        self.fail.insert(kind as u32, blk);
        blk
    }

    fn emit_fail_blocks(&mut self) {
        let mut blocks: Vec<(u32, Block)> = self.fail.iter().map(|(&k, &b)| (k, b)).collect();
        blocks.sort_by_key(|&(k, _)| k);
        for (kind, blk) in blocks {
            self.b.switch_to_block(blk);
            let at = self.b.block_params(blk)[0];
            let k = self.b.ins().iconst(types::I32, kind as i64);
            let ctx = self.ctx();
            self.b.ins().store(tree_flags(), k, ctx, ctx_offset::ERROR_KIND);
            let start = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_START);
            let off = self.b.ins().isub(at, start);
            self.b.ins().store(tree_flags(), off, ctx, ctx_offset::ERROR_OFFSET);
            let null = self.b.ins().iconst(self.ptr, 0);
            self.b.ins().return_(&[null]);
        }
    }
}

/// The tree decoder's side of the wire core: failing records the error in the context
/// (or the helper did) and returns null.
impl<'b> Wire<'b> for Translator<'_, 'b> {
    fn b(&mut self) -> &mut FunctionBuilder<'b> {
        &mut self.b
    }

    fn ptr(&self) -> Type {
        self.ptr
    }

    /// The context (`*mut JitCtx`), the entry's first argument: needed only where a
    /// block is carved from the lent region, at helper calls and on errors, so it is
    /// loaded there rather than kept in a register across the function (see `frame`).
    fn ctx(&mut self) -> Value {
        self.b.ins().stack_load(self.ptr, self.ptr, self.frame, 16)
    }

    fn input_start(&mut self) -> Value {
        let ctx = self.ctx();
        self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_START)
    }

    fn input_end(&mut self) -> Value {
        let ctx = self.ctx();
        let input = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_START);
        let input_len = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_LEN);
        self.b.ins().iadd(input, input_len)
    }

    fn core(&self) -> (Helper, Helper, StackSlot) {
        (self.helpers.varint, self.helpers.utf8, self.varint_out)
    }

    fn failed(&mut self) -> Block {
        self.ret_null
    }

    fn fail_if(&mut self, cond: Value, kind: DecodeErrorKind, at: Value) {
        let fail = self.fail_block(kind);
        let ok = self.b.create_block();
        self.b.ins().brif(cond, fail, &[BlockArg::Value(at)], ok, &[]);
        self.b.switch_to_block(ok);
    }
}
