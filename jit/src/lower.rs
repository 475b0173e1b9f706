//! Lowering: one message layout becomes one Cranelift function with a peek hub and
//! field-order threading.
//!
//! Shape of every function (`MessageFn`: `ctx, block, ptr, end, meta, gtag`):
//!
//! ```text
//! entry ─► dispatch(p): p == end ? at_end : table(p, byte *p)
//! table(p, b): br_table over 256 tag bytes ─► label[slot, wire type](p + 1, p)
//!                                           ├► two_byte(p)   (b >= 0x80: tags of fields 16..2047, by Switch)
//!                                           └► slow(p)       (anything else: the interpreter's field step)
//! label: decode one value inline, then thread: compare the next byte with the tags the
//!        next fields are expected to have and jump straight there; on a miss, table(p, b).
//! ```
//!
//! Only bytes of the input between `ptr` and `end` are ever loaded: every load is preceded
//! by a bounds check, and every slow case calls a helper in `runtime`, which shares the
//! interpreter's code.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, FuncRef, InstBuilder, JumpTableData, MemFlagsData, SigRef, Signature, StackSlot,
    StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::FunctionBuilder;
use protojit_arena::{
    DecodeErrorKind, FieldKind, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition, SlotIndex, NO_INDEX,
};

use crate::runtime::{self, ctx_offset, JitCtx};

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

/// One runtime helper as the function being built sees it: its imported signature and
/// its address.
#[derive(Clone, Copy)]
struct Helper {
    sig: SigRef,
    addr: *const u8,
}

/// The Cranelift type of a helper parameter or result, from its Rust type.
trait AbiType {
    fn clif(ptr: Type) -> Type;
}
impl<T> AbiType for *const T {
    fn clif(ptr: Type) -> Type {
        ptr
    }
}
impl<T> AbiType for *mut T {
    fn clif(ptr: Type) -> Type {
        ptr
    }
}
impl AbiType for usize {
    fn clif(ptr: Type) -> Type {
        ptr
    }
}
impl AbiType for u32 {
    fn clif(_: Type) -> Type {
        types::I32
    }
}
impl AbiType for u64 {
    fn clif(_: Type) -> Type {
        types::I64
    }
}

/// Expands `runtime::foreach_helper!` into the helper table of one function.
macro_rules! helper_table {
    ($($field:ident: $name:ident($($arg:ty),*) -> $ret:ty;)*) => {
        /// The runtime helpers, imported into one function.
        struct Helpers {
            $($field: Helper,)*
        }

        impl Helpers {
            fn import(b: &mut FunctionBuilder<'_>, cc: cranelift_codegen::isa::CallConv, ptr: Type) -> Helpers {
                Helpers {
                    $($field: {
                        // The declaration in `runtime` must have exactly the listed type.
                        let f: unsafe extern "C" fn($($arg),*) -> $ret = runtime::$name;
                        let mut s = Signature::new(cc);
                        s.params.extend([$(AbiParam::new(<$arg as AbiType>::clif(ptr))),*]);
                        s.returns.push(AbiParam::new(<$ret as AbiType>::clif(ptr)));
                        Helper { sig: b.import_signature(s), addr: f as *const u8 }
                    },)*
                }
            }
        }
    };
}
runtime::foreach_helper!(helper_table);

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
    ctx: Value,
    blk: Value,
    end: Value,
    meta: Value,
    gtag: Value,
    depth: Value,
    max_depth: Value,
    // Shared blocks.
    dispatch: Block,
    table: Block,
    slow: Block,
    ret_null: Block,
    fail: HashMap<u32, Block>,
    labels: HashMap<(u32, Form), Block>,
    pending: Vec<(u32, Form)>,
    varint_out: StackSlot,
    /// The message signature, imported on the first call through the entry table.
    msg_sig: Option<SigRef>,
}

/// Child blocks up to this size are allocated and zeroed by compiled code; larger ones by
/// a helper (the zeroing stores would outweigh the call).
const INLINE_BLOCK_MAX: u32 = 256;

fn input_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_readonly()
}

fn tree_flags() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Whether the lowering compiles this slot's values inline (else the label defers to the
/// interpreter's field step).
fn inline_single(slot: &FieldSlot) -> bool {
    !(slot.kind == FieldKind::Enum && slot.closed_enum)
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
        let helpers = Helpers::import(&mut b, cc, ptr);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let (ctx, blk, p0, end, meta, gtag) = (params[0], params[1], params[2], params[3], params[4], params[5]);
        let depth = b.ins().ireduce(types::I32, meta);
        let max_depth = b.ins().load(types::I32, tree_flags(), ctx, ctx_offset::MAX_DEPTH);
        let dispatch = b.create_block();
        b.append_block_param(dispatch, ptr);
        let table = b.create_block();
        b.append_block_param(table, ptr);
        b.append_block_param(table, types::I32);
        let slow = b.create_block();
        b.append_block_param(slow, ptr);
        let ret_null = b.create_block();
        b.set_cold_block(ret_null);
        let varint_out = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        b.ins().jump(dispatch, &[BlockArg::Value(p0)]);
        let layout = layouts.get(li);
        Translator {
            b,
            ptr,
            cc,
            frontend,
            layouts,
            li,
            layout,
            helpers,
            ctx,
            blk,
            end,
            meta,
            gtag,
            depth,
            max_depth,
            dispatch,
            table,
            slow,
            ret_null,
            fail: HashMap::new(),
            labels: HashMap::new(),
            pending: Vec::new(),
            varint_out,
            msg_sig: None,
        }
    }

    /// Emits the whole function and finalizes the builder.
    pub(crate) fn translate(mut self, mut children: ChildCalls<'_>) {
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
        // The entry block already jumped to `dispatch`; make dispatch the interpreter call.
        self.b.switch_to_block(self.dispatch);
        let p = self.b.block_params(self.dispatch)[0];
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let args = [self.ctx, li, self.blk, p, self.end, self.meta, self.gtag];
        let call = self.call_helper(self.helpers.interp_message, &args);
        let r = self.b.inst_results(call)[0];
        self.b.ins().return_(&[r]);
        for blk in [self.table, self.slow, self.ret_null] {
            self.b.switch_to_block(blk);
            let null = self.b.ins().iconst(self.ptr, 0);
            self.b.ins().return_(&[null]);
        }
        self.b.seal_all_blocks();
        self.b.finalize(self.frontend);
    }

    /// Calls a runtime helper (by address: helpers live in the protojit binary, not in
    /// the JIT module).
    fn call_helper(&mut self, h: Helper, args: &[Value]) -> cranelift_codegen::ir::Inst {
        let f = self.b.ins().iconst(self.ptr, h.addr as usize as i64);
        self.b.ins().call_indirect(h.sig, f, args)
    }

    fn slot(&self, si: u32) -> &'a FieldSlot {
        self.layout.slot(SlotIndex::new(si))
    }

    /// The label for slot `si` in `form`, created (and queued for emission) on first use.
    fn label(&mut self, si: u32, form: Form) -> Block {
        if let Some(&blk) = self.labels.get(&(si, form)) {
            return blk;
        }
        let blk = self.b.create_block();
        self.b.append_block_param(blk, self.ptr); // position after the tag
        self.b.append_block_param(blk, self.ptr); // position of the tag
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
        if wt == slot.kind.wire_type() && inline_single(slot) {
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
            self.b.ins().store(tree_flags(), k, self.ctx, ctx_offset::ERROR_KIND);
            let start = self.b.ins().load(self.ptr, tree_flags(), self.ctx, ctx_offset::INPUT_START);
            let off = self.b.ins().isub(at, start);
            self.b.ins().store(tree_flags(), off, self.ctx, ctx_offset::ERROR_OFFSET);
            let null = self.b.ins().iconst(self.ptr, 0);
            self.b.ins().return_(&[null]);
        }
    }

    /// Branches to `fail(kind, at)` when `cond` holds, else continues in a new block.
    fn fail_if(&mut self, cond: Value, kind: DecodeErrorKind, at: Value) {
        let fail = self.fail_block(kind);
        let ok = self.b.create_block();
        self.b.ins().brif(cond, fail, &[BlockArg::Value(at)], ok, &[]);
        self.b.switch_to_block(ok);
    }

    /// Returns null when `r` is null (a helper or callee recorded an error).
    fn null_check(&mut self, r: Value) {
        let ok = self.b.create_block();
        self.b.ins().brif(r, ok, &[], self.ret_null, &[]);
        self.b.switch_to_block(ok);
    }

    fn emit_dispatch(&mut self) {
        self.b.switch_to_block(self.dispatch);
        let p = self.b.block_params(self.dispatch)[0];
        let at_end = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, self.end);
        let more = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(at_end, done, &[], more, &[]);
        self.b.switch_to_block(more);
        let byte = self.b.ins().uload8(types::I32, input_flags(), p, 0);
        self.b.ins().jump(self.table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
        // The end of the input: fine for a message, an error inside a group.
        self.b.switch_to_block(done);
        let gnum = self.b.ins().ushr_imm_u(self.meta, 32);
        let unterminated = self.fail_block(DecodeErrorKind::UnterminatedGroup);
        let ret = self.b.create_block();
        self.b.ins().brif(gnum, unterminated, &[BlockArg::Value(self.gtag)], ret, &[]);
        self.b.switch_to_block(ret);
        self.b.ins().return_(&[p]);
    }

    fn emit_table(&mut self) {
        self.b.switch_to_block(self.table);
        let p = self.b.block_params(self.table)[0];
        let byte = self.b.block_params(self.table)[1];
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let two_byte = self.b.create_block();
        // One-byte tags are fields 1..15: a jump table over the field number (`byte >> 3`,
        // at most 16 entries), then the wire type compared in the field's own block. A
        // table over all 256 byte values would cost far more to compile than it saves:
        // Cranelift splits every table edge into a block whose target has several
        // in-edges, and most of the 256 entries share the slow path.
        // Blocks below use `p`, `p1` and `byte` directly: the table block dominates them.
        let one_byte = self.b.create_block();
        let high = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, byte, 0x80);
        self.b.ins().brif(high, two_byte, &[], one_byte, &[]);
        self.b.switch_to_block(one_byte);
        let numbers = self.layout.slots().iter().map(|s| s.number).filter(|&n| n < 16).max().unwrap_or(0);
        let miss = self.b.create_block();
        let mut entries = Vec::with_capacity(numbers as usize + 1);
        let mut fields = Vec::new();
        for number in 0..=numbers {
            let tags: Vec<(u32, Block)> = (0..8u32)
                .filter_map(|wt| {
                    let tag = (number << 3) | wt;
                    if number == 0 {
                        return None;
                    }
                    self.label_for_tag(tag).map(|label| (wt, label))
                })
                .collect();
            if tags.is_empty() {
                entries.push(self.b.func.dfg.block_call(miss, &[]));
            } else {
                let blk = self.b.create_block();
                entries.push(self.b.func.dfg.block_call(blk, &[]));
                fields.push((blk, tags));
            }
        }
        let default = self.b.func.dfg.block_call(miss, &[]);
        let number = self.b.ins().ushr_imm_u(byte, 3);
        let jt = self.b.create_jump_table(JumpTableData::new(default, &entries));
        self.b.ins().br_table(number, jt);
        for (blk, tags) in fields {
            self.b.switch_to_block(blk);
            let wt = self.b.ins().band_imm_u(byte, 7);
            let n = tags.len();
            for (i, (t, label)) in tags.into_iter().enumerate() {
                let args = [BlockArg::Value(p1), BlockArg::Value(p)];
                if i + 1 == n {
                    let hit = self.b.ins().icmp_imm_u(IntCC::Equal, wt, t as i64);
                    self.b.ins().brif(hit, label, &args, miss, &[]);
                } else {
                    let next = self.b.create_block();
                    let hit = self.b.ins().icmp_imm_u(IntCC::Equal, wt, t as i64);
                    self.b.ins().brif(hit, label, &args, next, &[]);
                    self.b.switch_to_block(next);
                }
            }
        }
        self.b.switch_to_block(miss);
        self.b.ins().jump(self.slow, &[BlockArg::Value(p)]);

        // Two-byte tags (fields 16..2047): compare against the compiled ones.
        self.b.switch_to_block(two_byte);
        let two: Vec<(u32, Block)> = {
            let mut v = Vec::new();
            for si in 0..self.layout.slots().len() as u32 {
                let slot = *self.slot(si);
                if !(16..2048).contains(&slot.number) {
                    continue;
                }
                for wt in [slot.kind.wire_type() as u32, 2] {
                    let tag = (slot.number << 3) | wt;
                    if let Some(label) = self.label_for_tag(tag) {
                        if !v.iter().any(|(t, _)| *t == tag) {
                            v.push((tag, label));
                        }
                    }
                }
            }
            v
        };
        if two.is_empty() {
            self.b.ins().jump(self.slow, &[BlockArg::Value(p)]);
            return;
        }
        let p2 = self.b.ins().iadd_imm_s(p, 2);
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, p2, self.end);
        let load = self.b.create_block();
        self.b.ins().brif(fits, load, &[], self.slow, &[BlockArg::Value(p)]);
        self.b.switch_to_block(load);
        let b0 = self.b.ins().uload8(types::I32, input_flags(), p, 0);
        let b1 = self.b.ins().uload8(types::I32, input_flags(), p, 1);
        let lo = self.b.ins().band_imm_u(b0, 0x7f);
        let hi = self.b.ins().ishl_imm_u(b1, 7);
        // b1 < 0x80 makes the tag exactly two bytes; a larger b1 yields a tag >= 2^14,
        // which matches no compared tag (all < 2^14) and falls to the slow path.
        let tag = self.b.ins().bor(lo, hi);
        // A `Switch` makes jump tables of the dense runs of tags (fields declared in a
        // row) and a binary search between runs, instead of one compare per tag.
        let mut switch = cranelift_frontend::Switch::new();
        let miss = self.b.create_block();
        let mut hits = Vec::with_capacity(two.len());
        for (t, label) in two {
            let hit = self.b.create_block();
            switch.set_entry(t as u128, hit);
            hits.push((hit, label));
        }
        switch.emit(&mut self.b, tag, miss);
        for (hit, label) in hits {
            self.b.switch_to_block(hit);
            self.b.ins().jump(label, &[BlockArg::Value(p2), BlockArg::Value(p)]);
        }
        self.b.switch_to_block(miss);
        self.b.ins().jump(self.slow, &[BlockArg::Value(p)]);
    }

    fn emit_slow(&mut self) {
        self.b.switch_to_block(self.slow);
        self.b.set_cold_block(self.slow);
        let p = self.b.block_params(self.slow)[0];
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let args = [self.ctx, li, self.blk, p, self.end, self.meta];
        let call = self.call_helper(self.helpers.slow_field, &args);
        let r = self.b.inst_results(call)[0];
        self.null_check(r);
        let done = self.b.ins().load(types::I32, tree_flags(), self.ctx, ctx_offset::GROUP_DONE);
        let ended = self.b.create_block();
        self.b.ins().brif(done, ended, &[], self.dispatch, &[BlockArg::Value(r)]);
        self.b.switch_to_block(ended);
        let zero = self.b.ins().iconst(types::I32, 0);
        self.b.ins().store(tree_flags(), zero, self.ctx, ctx_offset::GROUP_DONE);
        self.b.ins().return_(&[r]);
    }

    /// Reads a varint at `p` (< or = `end`): `(value as i64, position after)`.
    fn varint(&mut self, p: Value) -> (Value, Value) {
        let join = self.b.create_block();
        let v = self.b.append_block_param(join, types::I64);
        let np = self.b.append_block_param(join, self.ptr);
        let load = self.b.create_block();
        let second = self.b.create_block();
        let second_load = self.b.create_block();
        let two = self.b.create_block();
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);

        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, p, self.end);
        self.b.ins().brif(inside, load, &[], slow, &[]);

        self.b.switch_to_block(load);
        let v0 = self.b.ins().uload8(types::I64, input_flags(), p, 0);
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v0, 0x80);
        self.b.ins().brif(short, join, &[BlockArg::Value(v0), BlockArg::Value(p1)], second, &[]);

        self.b.switch_to_block(second);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, p1, self.end);
        self.b.ins().brif(inside, second_load, &[], slow, &[]);

        self.b.switch_to_block(second_load);
        let v1 = self.b.ins().uload8(types::I64, input_flags(), p, 1);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v1, 0x80);
        self.b.ins().brif(short, two, &[], slow, &[]);

        self.b.switch_to_block(two);
        let lo = self.b.ins().band_imm_u(v0, 0x7f);
        let hi = self.b.ins().ishl_imm_u(v1, 7);
        let val = self.b.ins().bor(lo, hi);
        let p2 = self.b.ins().iadd_imm_s(p, 2);
        self.b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(p2)]);

        self.b.switch_to_block(slow);
        let out = self.b.ins().stack_addr(self.ptr, self.varint_out, 0);
        let call = self.call_helper(self.helpers.varint, &[self.ctx, p, self.end, out]);
        let r = self.b.inst_results(call)[0];
        self.null_check(r);
        let val = self.b.ins().stack_load(self.ptr, types::I64, self.varint_out, 0);
        self.b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(r)]);

        self.b.switch_to_block(join);
        (v, np)
    }

    /// Reads a length prefix at `p`: `(start, end)` of the value, checked against `end`.
    fn length(&mut self, p: Value) -> (Value, Value) {
        let (len, start) = self.varint(p);
        let avail = self.b.ins().isub(self.end, start);
        let over = self.b.ins().icmp(IntCC::UnsignedGreaterThan, len, avail);
        self.fail_if(over, DecodeErrorKind::LengthOutOfBounds, p);
        let stop = self.b.ins().iadd(start, len);
        (start, stop)
    }

    /// Sets the presence bit and oneof case of singular `slot`.
    fn mark_present(&mut self, slot: &FieldSlot) {
        if slot.hasbit != NO_INDEX {
            let off = (4 * (slot.hasbit / 32)) as i32;
            let w = self.b.ins().load(types::I32, tree_flags(), self.blk, off);
            let w = self.b.ins().bor_imm_u(w, 1i64 << (slot.hasbit % 32));
            self.b.ins().store(tree_flags(), w, self.blk, off);
        }
        if slot.oneof != NO_INDEX {
            let n = self.b.ins().iconst(types::I32, slot.number as i64);
            let off = self.layout.oneof_case_offset(slot.oneof) as i32;
            self.b.ins().store(tree_flags(), n, self.blk, off);
        }
    }

    /// Address of a new last element of repeated slot `si` (`elem_size` bytes), growing
    /// the vector through a helper when it is full.
    fn push_addr(&mut self, si: u32, slot: &FieldSlot) -> Value {
        let off = slot.offset as i32;
        let len = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 8);
        let cap = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 12);
        let full = self.b.ins().icmp(IntCC::Equal, len, cap);
        let grow = self.b.create_block();
        let room = self.b.create_block();
        self.b.set_cold_block(grow);
        self.b.ins().brif(full, grow, &[], room, &[]);
        self.b.switch_to_block(grow);
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let s = self.b.ins().iconst(types::I32, si as i64);
        let one = self.b.ins().iconst(types::I32, 1);
        let call = self.call_helper(self.helpers.reserve, &[self.ctx, li, s, self.blk, one]);
        let ok = self.b.inst_results(call)[0];
        self.b.ins().brif(ok, room, &[], self.ret_null, &[]);
        self.b.switch_to_block(room);
        let base = self.b.ins().load(self.ptr, tree_flags(), self.blk, off);
        let len = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 8);
        let len1 = self.b.ins().iadd_imm_s(len, 1);
        self.b.ins().store(tree_flags(), len1, self.blk, off + 8);
        let len = self.b.ins().uextend(self.ptr, len);
        let bytes = self.b.ins().imul_imm_u(len, slot.elem_size as i64);
        self.b.ins().iadd(base, bytes)
    }

    /// Stores scalar `v` into slot `si` (singular: the slot; repeated: a pushed element).
    fn put(&mut self, si: u32, slot: &FieldSlot, v: Value) {
        if slot.repetition == Repetition::Singular {
            self.b.ins().store(tree_flags(), v, self.blk, slot.offset as i32);
            self.mark_present(slot);
        } else {
            let addr = self.push_addr(si, slot);
            self.b.ins().store(tree_flags(), v, addr, 0);
        }
    }

    /// Jumps to the label of the field expected after slot `si`, given position `p`.
    fn thread(&mut self, si: u32, p: Value) {
        let slot = *self.slot(si);
        let mut candidates: Vec<(u32, Form)> = Vec::new();
        if slot.repetition != Repetition::Singular && expected_form(&slot) == Form::Single {
            candidates.push((si, Form::Single));
        }
        let mut next = si + 1;
        while candidates.len() < 3 && (next as usize) < self.layout.slots().len() {
            let n = self.slot(next);
            let sibling = slot.oneof != NO_INDEX && n.oneof == slot.oneof;
            if !sibling {
                candidates.push((next, expected_form(n)));
            }
            next += 1;
        }
        let at_end = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, self.end);
        let more = self.b.create_block();
        self.b.ins().brif(at_end, self.dispatch, &[BlockArg::Value(p)], more, &[]);
        self.b.switch_to_block(more);
        let byte = self.b.ins().uload8(types::I32, input_flags(), p, 0);
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let mut two_byte: Vec<(u32, Block)> = Vec::new();
        for (csi, form) in candidates {
            let cslot = *self.slot(csi);
            let tag = tag_of(&cslot, form);
            if tag >= 0x4000 || (form == Form::Single && !inline_single(&cslot)) {
                continue;
            }
            let label = self.label(csi, form);
            if tag >= 0x80 {
                // Two bytes on the wire: low 7 bits with the continuation bit, then the rest.
                two_byte.push(((tag & 0x7f) | 0x80 | ((tag >> 7) << 8), label));
                continue;
            }
            let hit = self.b.ins().icmp_imm_u(IntCC::Equal, byte, tag as i64);
            let miss = self.b.create_block();
            self.b.ins().brif(hit, label, &[BlockArg::Value(p1), BlockArg::Value(p)], miss, &[]);
            self.b.switch_to_block(miss);
        }
        if !two_byte.is_empty() {
            let p2 = self.b.ins().iadd_imm_s(p, 2);
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, p2, self.end);
            let load = self.b.create_block();
            self.b.ins().brif(fits, load, &[], self.table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
            self.b.switch_to_block(load);
            let word = self.b.ins().uload16(types::I32, input_flags(), p, 0);
            for (encoded, label) in two_byte {
                let hit = self.b.ins().icmp_imm_u(IntCC::Equal, word, encoded as i64);
                let miss = self.b.create_block();
                self.b.ins().brif(hit, label, &[BlockArg::Value(p2), BlockArg::Value(p)], miss, &[]);
                self.b.switch_to_block(miss);
            }
        }
        self.b.ins().jump(self.table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
    }

    /// The child block for a message or group value of slot `si`: the existing child of
    /// a singular field (merge), else a new one. Common cases inline; allocation and
    /// vector growth call helpers.
    fn child_block(&mut self, si: u32, slot: &FieldSlot) -> Value {
        if slot.repetition == Repetition::Singular {
            return self.singular_child(si, slot);
        }
        let size = self.layouts.get(LayoutIndex::new(slot.child)).size();
        if size > INLINE_BLOCK_MAX {
            return self.call_helper_child(si, slot);
        }
        // Repeated: a zeroed block from the chunk, its address pushed (as
        // `BlockMut::push_child`).
        let child = self.bump_block(size);
        let addr = self.push_addr(si, slot);
        self.b.ins().store(tree_flags(), child, addr, 0);
        child
    }

    /// A zeroed block of `size` bytes (a multiple of 8), bump-allocated from the context's
    /// chunk; a helper takes a new chunk from the arena when this one is used up.
    fn bump_block(&mut self, size: u32) -> Value {
        let join = self.b.create_block();
        let child = self.b.append_block_param(join, self.ptr);
        let bump = self.b.create_block();
        let refill = self.b.create_block();
        self.b.set_cold_block(refill);
        let cur = self.b.ins().load(self.ptr, tree_flags(), self.ctx, ctx_offset::CHUNK_PTR);
        let lim = self.b.ins().load(self.ptr, tree_flags(), self.ctx, ctx_offset::CHUNK_END);
        let room = self.b.ins().isub(lim, cur);
        let fits = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, room, size as i64);
        self.b.ins().brif(fits, bump, &[], refill, &[]);
        self.b.switch_to_block(bump);
        let next = self.b.ins().iadd_imm_s(cur, size as i64);
        self.b.ins().store(tree_flags(), next, self.ctx, ctx_offset::CHUNK_PTR);
        self.b.ins().jump(join, &[BlockArg::Value(cur)]);
        self.b.switch_to_block(refill);
        let n = self.b.ins().iconst(types::I32, size as i64);
        let call = self.call_helper(self.helpers.alloc_block, &[self.ctx, n]);
        let fresh = self.b.inst_results(call)[0];
        self.null_check(fresh);
        self.b.ins().jump(join, &[BlockArg::Value(fresh)]);
        self.b.switch_to_block(join);
        let zero = self.b.ins().iconst(types::I64, 0);
        for off in (0..size).step_by(8) {
            self.b.ins().store(tree_flags(), zero, child, off as i32);
        }
        child
    }

    fn singular_child(&mut self, si: u32, slot: &FieldSlot) -> Value {
        let join = self.b.create_block();
        let child = self.b.append_block_param(join, self.ptr);
        let alloc = self.b.create_block();
        self.b.set_cold_block(alloc);
        let existing = self.b.ins().load(self.ptr, tree_flags(), self.blk, slot.offset as i32);
        if slot.oneof != NO_INDEX {
            // The shared slot holds this member's child only while the case names it.
            let check = self.b.create_block();
            let off = self.layout.oneof_case_offset(slot.oneof) as i32;
            let case = self.b.ins().load(types::I32, tree_flags(), self.blk, off);
            let active = self.b.ins().icmp_imm_u(IntCC::Equal, case, slot.number as i64);
            self.b.ins().brif(active, check, &[], alloc, &[]);
            self.b.switch_to_block(check);
        }
        self.b.ins().brif(existing, join, &[BlockArg::Value(existing)], alloc, &[]);
        self.b.switch_to_block(alloc);
        let size = self.layouts.get(LayoutIndex::new(slot.child)).size();
        let fresh = if size > INLINE_BLOCK_MAX {
            self.call_helper_child(si, slot)
        } else {
            // As `BlockMut::child`: a fresh zeroed block, its address in the slot, and the
            // oneof case (a message's presence is its non-null address).
            let fresh = self.bump_block(size);
            self.b.ins().store(tree_flags(), fresh, self.blk, slot.offset as i32);
            self.mark_present(slot);
            fresh
        };
        self.b.ins().jump(join, &[BlockArg::Value(fresh)]);
        self.b.switch_to_block(join);
        child
    }

    fn call_helper_child(&mut self, si: u32, slot: &FieldSlot) -> Value {
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let s = self.b.ins().iconst(types::I32, si as i64);
        let h = if slot.repetition == Repetition::Singular { self.helpers.child } else { self.helpers.push_child };
        let call = self.call_helper(h, &[self.ctx, li, s, self.blk]);
        let child = self.b.inst_results(call)[0];
        // Null only if the helper met a broken invariant (an internal error it recorded).
        self.null_check(child);
        child
    }

    fn depth_check(&mut self, tag_pos: Value) {
        let deep = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, self.depth, self.max_depth);
        self.fail_if(deep, DecodeErrorKind::DepthLimitExceeded, tag_pos);
    }

    fn emit_label(&mut self, si: u32, form: Form, children: &mut ChildCalls<'_>) {
        let label = self.labels[&(si, form)];
        self.b.switch_to_block(label);
        let p = self.b.block_params(label)[0];
        let tag_pos = self.b.block_params(label)[1];
        let slot = *self.slot(si);
        if form == Form::Packed {
            let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
            let s = self.b.ins().iconst(types::I32, si as i64);
            let call = self.call_helper(self.helpers.packed, &[self.ctx, li, s, self.blk, p, self.end]);
            let r = self.b.inst_results(call)[0];
            self.null_check(r);
            self.thread(si, r);
            return;
        }
        match slot.kind {
            FieldKind::Int32 | FieldKind::Uint32 | FieldKind::Enum | FieldKind::Sint32 => {
                let (v, np) = self.varint(p);
                let v = self.b.ins().ireduce(types::I32, v);
                let v = if slot.kind == FieldKind::Sint32 { self.zigzag(v) } else { v };
                self.put(si, &slot, v);
                self.thread(si, np);
            }
            FieldKind::Int64 | FieldKind::Uint64 | FieldKind::Sint64 => {
                let (v, np) = self.varint(p);
                let v = if slot.kind == FieldKind::Sint64 { self.zigzag(v) } else { v };
                self.put(si, &slot, v);
                self.thread(si, np);
            }
            FieldKind::Bool => {
                let (v, np) = self.varint(p);
                let v = self.b.ins().icmp_imm_u(IntCC::NotEqual, v, 0);
                self.put(si, &slot, v);
                self.thread(si, np);
            }
            FieldKind::Fixed32
            | FieldKind::Sfixed32
            | FieldKind::Float
            | FieldKind::Fixed64
            | FieldKind::Sfixed64
            | FieldKind::Double => {
                let width = slot.kind.fixed_width();
                let ty = if width == 4 { types::I32 } else { types::I64 };
                let avail = self.b.ins().isub(self.end, p);
                let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, avail, width as i64);
                self.fail_if(short, DecodeErrorKind::Truncated, p);
                // Little-endian hosts only (x86_64, aarch64): the wire bytes are the value.
                let v = self.b.ins().load(ty, input_flags(), p, 0);
                self.put(si, &slot, v);
                let np = self.b.ins().iadd_imm_s(p, width as i64);
                self.thread(si, np);
            }
            FieldKind::String | FieldKind::Bytes => {
                let (start, stop) = self.length(p);
                let len = self.b.ins().isub(stop, start);
                if slot.kind == FieldKind::String {
                    // The policy is read at run time (compiled code is shared by decoders
                    // with different options): 0 off, 1 proto3 strings, 2 every string.
                    let check = self.b.create_block();
                    let ok = self.b.create_block();
                    let mode = self.b.ins().load(types::I32, tree_flags(), self.ctx, ctx_offset::UTF8);
                    let needed = if slot.validate_utf8 { 1 } else { 2 };
                    let on = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, mode, needed);
                    self.b.ins().brif(on, check, &[], ok, &[]);
                    self.b.switch_to_block(check);
                    self.ascii_check(start, len, ok);
                    let call = self.call_helper(self.helpers.utf8, &[self.ctx, start, len, p]);
                    let valid = self.b.inst_results(call)[0];
                    self.b.ins().brif(valid, ok, &[], self.ret_null, &[]);
                    self.b.switch_to_block(ok);
                }
                let addr = if slot.repetition == Repetition::Singular {
                    let off = slot.offset as i32;
                    self.b.ins().store(tree_flags(), start, self.blk, off);
                    self.b.ins().store(tree_flags(), len, self.blk, off + 8);
                    self.mark_present(&slot);
                    None
                } else {
                    Some(self.push_addr(si, &slot))
                };
                if let Some(addr) = addr {
                    self.b.ins().store(tree_flags(), start, addr, 0);
                    self.b.ins().store(tree_flags(), len, addr, 8);
                }
                self.thread(si, stop);
            }
            FieldKind::Message => {
                let (start, stop) = self.length(p);
                self.depth_check(tag_pos);
                let done = self.b.create_block();
                if slot.repetition != Repetition::Singular {
                    // An empty element points at the layouts' shared zero block (as
                    // `BlockMut::push_empty_child`); its address lives as long as the
                    // layouts this code is tied to, and their clones.
                    let empty = self.b.create_block();
                    let full = self.b.create_block();
                    let is_empty = self.b.ins().icmp(IntCC::Equal, start, stop);
                    self.b.ins().brif(is_empty, empty, &[], full, &[]);
                    self.b.switch_to_block(empty);
                    let zero_block = self.layouts.empty_block(LayoutIndex::new(slot.child)).as_ptr().as_ptr();
                    let zero_block = self.b.ins().iconst(self.ptr, zero_block as usize as i64);
                    let addr = self.push_addr(si, &slot);
                    self.b.ins().store(tree_flags(), zero_block, addr, 0);
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(full);
                }
                let child = self.child_block(si, &slot);
                let d = self.b.ins().iadd_imm_s(self.depth, 1);
                let meta = self.b.ins().uextend(types::I64, d);
                let null = self.b.ins().iconst(self.ptr, 0);
                let r = self.call_child(children, slot.child, [self.ctx, child, start, stop, meta, null]);
                self.null_check(r);
                self.b.ins().jump(done, &[]);
                self.b.switch_to_block(done);
                self.thread(si, stop);
            }
            FieldKind::Group => {
                self.depth_check(tag_pos);
                let child = self.child_block(si, &slot);
                let d = self.b.ins().iadd_imm_s(self.depth, 1);
                let d = self.b.ins().uextend(types::I64, d);
                let meta = self.b.ins().bor_imm_u(d, (slot.number as i64) << 32);
                let r = self.call_child(children, slot.child, [self.ctx, child, p, self.end, meta, tag_pos]);
                self.null_check(r);
                self.thread(si, r);
            }
        }
    }

    /// Calls the message function of child layout `child` with the message signature's
    /// arguments; returns its result (the position after the child, or null).
    fn call_child(&mut self, children: &mut ChildCalls<'_>, child: u32, args: [Value; 6]) -> Value {
        match children {
            ChildCalls::Direct(fns) => {
                let f = fns.child_fn(&mut self.b, LayoutIndex::new(child));
                let call = self.b.ins().call(f, &args);
                self.b.inst_results(call)[0]
            }
            ChildCalls::Table(entries) => {
                // Acquire pairs with the release store that publishes a compiled function,
                // so its code and data are visible before it is called.
                let entry = entries.wrapping_add(child as usize) as usize as i64;
                let entry = self.b.ins().iconst(self.ptr, entry);
                let f = self.b.ins().atomic_load(self.ptr, MemFlagsData::trusted(), entry);
                let compiled = self.b.create_block();
                let interp = self.b.create_block();
                let done = self.b.create_block();
                self.b.append_block_param(done, self.ptr);
                self.b.set_cold_block(interp);
                self.b.ins().brif(f, compiled, &[], interp, &[]);

                self.b.switch_to_block(compiled);
                let sig = match self.msg_sig {
                    Some(sig) => sig,
                    None => *self.msg_sig.insert(self.b.import_signature(message_signature(self.ptr, self.cc))),
                };
                let call = self.b.ins().call_indirect(sig, f, &args);
                let r = self.b.inst_results(call)[0];
                self.b.ins().jump(done, &[BlockArg::Value(r)]);

                self.b.switch_to_block(interp);
                let li = self.b.ins().iconst(types::I32, child as i64);
                let [ctx, blk, p, end, meta, gtag] = args;
                let call = self.call_helper(self.helpers.interp_message, &[ctx, li, blk, p, end, meta, gtag]);
                let r = self.b.inst_results(call)[0];
                self.b.ins().jump(done, &[BlockArg::Value(r)]);

                self.b.switch_to_block(done);
                self.b.block_params(done)[0]
            }
        }
    }

    /// Jumps to `ok` when the `len` bytes at `start` are short ASCII (at most 16 bytes,
    /// with 16 readable bytes before `end`: two loads, masked to the string); otherwise
    /// continues in a new block, where the caller runs the full validator.
    fn ascii_check(&mut self, start: Value, len: Value, ok: Block) {
        let inline = self.b.create_block();
        let full = self.b.create_block();
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 16);
        let avail = self.b.ins().isub(self.end, start);
        let room = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, avail, 16);
        let both = self.b.ins().band(short, room);
        self.b.ins().brif(both, inline, &[], full, &[]);

        self.b.switch_to_block(inline);
        let w0 = self.b.ins().load(types::I64, input_flags(), start, 0);
        let w1 = self.b.ins().load(types::I64, input_flags(), start, 8);
        let all = self.b.ins().iconst(types::I64, -1);
        let zero = self.b.ins().iconst(types::I64, 0);
        let one = self.b.ins().iconst(types::I64, 1);
        // Bytes past the string may be anything: keep only the first `len` bytes.
        // m0 = len >= 8 ? all : (1 << 8 len) - 1
        let bits0 = self.b.ins().ishl_imm_u(len, 3);
        let low0 = self.b.ins().ishl(one, bits0);
        let low0 = self.b.ins().iadd_imm_s(low0, -1);
        let ge8 = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, 8);
        let m0 = self.b.ins().select(ge8, all, low0);
        // m1 = len >= 16 ? all : len > 8 ? (1 << 8 (len - 8)) - 1 : 0
        let rest = self.b.ins().iadd_imm_s(len, -8);
        let bits1 = self.b.ins().ishl_imm_u(rest, 3);
        let low1 = self.b.ins().ishl(one, bits1);
        let low1 = self.b.ins().iadd_imm_s(low1, -1);
        let ge16 = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, 16);
        let gt8 = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, len, 8);
        let m1 = self.b.ins().select(gt8, low1, zero);
        let m1 = self.b.ins().select(ge16, all, m1);
        let a = self.b.ins().band(w0, m0);
        let c = self.b.ins().band(w1, m1);
        let acc = self.b.ins().bor(a, c);
        let high = self.b.ins().band_imm_u(acc, 0x8080_8080_8080_8080u64 as i64);
        self.b.ins().brif(high, full, &[], ok, &[]);

        self.b.switch_to_block(full);
    }

    fn zigzag(&mut self, v: Value) -> Value {
        let half = self.b.ins().ushr_imm_u(v, 1);
        let low = self.b.ins().band_imm_u(v, 1);
        let mask = self.b.ins().ineg(low);
        self.b.ins().bxor(half, mask)
    }

    #[allow(dead_code)]
    fn layouts(&self) -> &'a Layouts {
        self.layouts
    }
}
