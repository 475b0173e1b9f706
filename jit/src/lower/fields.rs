//! Field kinds: one label per slot and wire form, storing the value into the block (scalars, strings, child messages and groups).

use super::*;

/// Packed varint runs up to this many bytes are decoded by compiled code's own loop;
/// longer ones by the interpreter's (see `packed_varints`).
const PACKED_INLINE_MAX: i64 = 64;

/// Whether a packed run of slot `si` is decoded by an inline loop (varint kinds, closed
/// enums only with consecutive declared values, checked inline; fixed-width runs are one
/// copy in the helper).
fn packed_inline(layout: &MessageLayout, si: u32, slot: &FieldSlot) -> bool {
    slot.kind.fixed_width() == 0
        && (!(slot.kind == FieldKind::Enum && slot.closed_enum) || closed_enum_range(layout, si).is_some())
}

impl<'a> Translator<'a, '_> {
    /// A varint of a packed run at `p < stop`, one or two bytes inline: `(value, next)`.
    /// Anything longer (or running past `stop`) jumps to a new block left in
    /// `self.packed_long`, where the caller hands the rest of the run to the interpreter.
    fn packed_varint(&mut self, p: Value, stop: Value) -> (Value, Value) {
        let long = self.b.create_block();
        self.b.set_cold_block(long);
        let (join, v, np) = self.short_varint(p, stop, false, long);
        self.packed_long = Some(long);
        self.b.switch_to_block(join);
        (v, np)
    }

    /// Sets the presence bit and oneof case of singular `slot`.
    pub(super) fn mark_present(&mut self, slot: &FieldSlot) {
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

    /// Makes room in repeated slot `si`'s vector for `additional` more elements (`None`:
    /// one), through `pj_reserve` when the spare capacity is short; continues in a new
    /// block where the room is there.
    fn ensure_room(&mut self, si: u32, slot: &FieldSlot, additional: Option<Value>) {
        let off = slot.offset as i32;
        let len = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 8);
        let cap = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 12);
        let short = match additional {
            None => self.b.ins().icmp(IntCC::Equal, len, cap),
            Some(n) => {
                let spare = self.b.ins().isub(cap, len);
                self.b.ins().icmp(IntCC::UnsignedLessThan, spare, n)
            }
        };
        let grow = self.b.create_block();
        let room = self.b.create_block();
        self.b.set_cold_block(grow);
        self.b.ins().brif(short, grow, &[], room, &[]);
        self.b.switch_to_block(grow);
        let n = match additional {
            Some(n) => n,
            None => self.b.ins().iconst(types::I32, 1),
        };
        // A vector's first buffer (nothing to copy) comes from the context's chunk when it
        // fits, as child blocks do: capacity `max(n, 4)`, `reserve_vec`'s policy for an
        // empty vector. Growing a full one, or a chunk too short, calls the helper.
        let first = self.b.create_block();
        let take = self.b.create_block();
        let helper = self.b.create_block();
        self.b.set_cold_block(helper);
        let empty = self.b.ins().icmp_imm_u(IntCC::Equal, cap, 0);
        self.b.ins().brif(empty, first, &[], helper, &[]);
        self.b.switch_to_block(first);
        let four = self.b.ins().iconst(types::I32, 4);
        let want = self.b.ins().umax(n, four);
        let bytes = self.b.ins().uextend(types::I64, want);
        let bytes = self.b.ins().imul_imm_u(bytes, slot.elem_size as i64);
        let bytes = self.b.ins().iadd_imm_s(bytes, 7);
        let bytes = self.b.ins().band_imm_u(bytes, -8i64 as u64 as i64);
        let ctx = self.ctx();
        let cur = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::CHUNK_PTR);
        let lim = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::CHUNK_END);
        let left = self.b.ins().isub(lim, cur);
        let fits = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, left, bytes);
        self.b.ins().brif(fits, take, &[], helper, &[]);
        self.b.switch_to_block(take);
        let next = self.b.ins().iadd(cur, bytes);
        self.b.ins().store(tree_flags(), next, ctx, ctx_offset::CHUNK_PTR);
        self.b.ins().store(tree_flags(), cur, self.blk, off);
        self.b.ins().store(tree_flags(), want, self.blk, off + 12);
        self.b.ins().jump(room, &[]);
        self.b.switch_to_block(helper);
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let s = self.b.ins().iconst(types::I32, si as i64);
        // Other paths lead here too: `ctx` above does not dominate this block.
        let ctx = self.ctx();
        let call = self.call(self.helpers.reserve, &[ctx, li, s, self.blk, n]);
        let ok = self.b.inst_results(call)[0];
        self.b.ins().brif(ok, room, &[], self.ret_null, &[]);
        self.b.switch_to_block(room);
    }

    /// Address of a new last element of repeated slot `si` (`elem_size` bytes), growing
    /// the vector through a helper when it is full.
    pub(super) fn push_addr(&mut self, si: u32, slot: &FieldSlot) -> Value {
        let off = slot.offset as i32;
        self.ensure_room(si, slot, None);
        let base = self.b.ins().load(self.ptr, tree_flags(), self.blk, off);
        let len = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 8);
        let len1 = self.b.ins().iadd_imm_s(len, 1);
        self.b.ins().store(tree_flags(), len1, self.blk, off + 8);
        let len = self.b.ins().uextend(self.ptr, len);
        let bytes = self.b.ins().imul_imm_u(len, slot.elem_size as i64);
        self.b.ins().iadd(base, bytes)
    }

    /// A packed run of varints of slot `si` whose length prefix is at `p`, decoded inline:
    /// one length check, one reservation (an element per byte of the run at most), then
    /// a loop of inline varints storing without per-element capacity checks; the vector's
    /// length is written once at the end. Same values and errors as `Interp::packed`: a
    /// varint may not run past the run's end (`read_varint` is bounded by it).
    pub(super) fn packed_varints(&mut self, si: u32, slot: &FieldSlot, p: Value) {
        let (start, stop) = self.read_length(p, self.end);
        let off = slot.offset as i32;
        let w = slot.elem_size as i64;
        let after = self.b.create_block();
        // Long runs (coordinates, ids, geometry of big features) go to the interpreter's
        // loop in one call: per value it is cheaper than this one, and the call is
        // amortised. Short runs, the common case in most messages, stay inline.
        let run = self.b.ins().isub(stop, start);
        let long_run = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, run, PACKED_INLINE_MAX);
        let bulk = self.b.create_block();
        let inline = self.b.create_block();
        self.b.ins().brif(long_run, bulk, &[], inline, &[]);
        self.b.switch_to_block(bulk);
        self.call_packed_run(si, start, stop);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(inline);
        // Room for `stop - start` more elements (each takes at least one byte).
        let bytes = self.b.ins().isub(stop, start);
        let bytes32 = self.b.ins().ireduce(types::I32, bytes);
        self.ensure_room(si, slot, Some(bytes32));

        // The loop carries the input position and the store address; the element count is
        // worked out from the address once, where the loop ends.
        let base = self.b.ins().load(self.ptr, tree_flags(), self.blk, off);
        let len = self.b.ins().load(types::I32, tree_flags(), self.blk, off + 8);
        let len_ptr = self.b.ins().uextend(self.ptr, len);
        let first = self.b.ins().imul_imm_u(len_ptr, w);
        let first = self.b.ins().iadd(base, first);
        let head = self.b.create_block();
        let hq = self.b.append_block_param(head, self.ptr);
        let hdst = self.b.append_block_param(head, self.ptr);
        // One element at `q < stop`; `until` is where the loop looks at a whole word again.
        let body = self.b.create_block();
        let q = self.b.append_block_param(body, self.ptr);
        let dst = self.b.append_block_param(body, self.ptr);
        let until = self.b.append_block_param(body, self.ptr);
        let done = self.b.create_block();
        let dst_done = self.b.append_block_param(done, self.ptr);
        self.b.ins().jump(head, &[BlockArg::Value(start), BlockArg::Value(first)]);

        self.b.switch_to_block(head);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, hq, stop);
        let closed = slot.kind == FieldKind::Enum && slot.closed_enum;
        if closed {
            // A closed enum checks every value: element by element.
            let args = [BlockArg::Value(hq), BlockArg::Value(hdst), BlockArg::Value(stop)];
            self.b.ins().brif(more, body, &args, done, &[BlockArg::Value(hdst)]);
        } else {
            // Eight one-byte varints in the next word of the run (small numbers, enums,
            // bools, short deltas): stored from the one load, without decoding each. A
            // word with a longer varint goes element by element until past it, so a run of
            // mixed lengths pays one word check per eight bytes, not per element.
            let word = self.b.create_block();
            let eight = self.b.create_block();
            let check = self.b.create_block();
            self.b.ins().brif(more, check, &[], done, &[BlockArg::Value(hdst)]);
            self.b.switch_to_block(check);
            let avail = self.b.ins().isub(stop, hq);
            let room = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, avail, 8);
            let tail = [BlockArg::Value(hq), BlockArg::Value(hdst), BlockArg::Value(stop)];
            self.b.ins().brif(room, word, &[], body, &tail);
            self.b.switch_to_block(word);
            let bits = self.b.ins().load(types::I64, input_flags(), hq, 0);
            let cont = self.b.ins().band_imm_u(bits, 0x8080_8080_8080_8080u64 as i64);
            let past = self.b.ins().iadd_imm_s(hq, 8);
            let mixed = [BlockArg::Value(hq), BlockArg::Value(hdst), BlockArg::Value(past)];
            self.b.ins().brif(cont, body, &mixed, eight, &[]);
            self.b.switch_to_block(eight);
            for i in 0..8 {
                let byte = self.b.ins().ushr_imm_u(bits, 8 * i);
                let byte = self.b.ins().band_imm_u(byte, 0x7f);
                let v = self.packed_element(slot.kind, byte);
                self.b.ins().store(tree_flags(), v, hdst, (i * w) as i32);
            }
            let dst8 = self.b.ins().iadd_imm_s(hdst, 8 * w);
            self.b.ins().jump(head, &[BlockArg::Value(past), BlockArg::Value(dst8)]);
        }

        self.b.switch_to_block(body);
        let (v, next) = self.packed_varint(q, stop);
        if closed {
            // An undeclared value: the interpreter takes the run from this element on
            // (it keeps the value as an unknown field), as it does after a long varint.
            let long = self.packed_long.expect("packed_varint made the hand-over block");
            let v32 = self.b.ins().ireduce(types::I32, v);
            self.declared(self.layout, SlotIndex::new(si), v32, long, &[]);
        }
        let v = self.packed_element(slot.kind, v);
        self.b.ins().store(tree_flags(), v, dst, 0);
        let dst1 = self.b.ins().iadd_imm_s(dst, w);
        // `until <= stop`, so an element before it is inside the run.
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, next, until);
        let again = [BlockArg::Value(next), BlockArg::Value(dst1), BlockArg::Value(until)];
        self.b.ins().brif(inside, body, &again, head, &[BlockArg::Value(next), BlockArg::Value(dst1)]);

        // The vector's length: the old one plus the elements stored up to `end`.
        let count = |t: &mut Self, end: Value| {
            let stored = t.b.ins().isub(end, first);
            let stored = t.b.ins().ushr_imm_u(stored, w.trailing_zeros() as i64);
            let stored = t.b.ins().ireduce(types::I32, stored);
            let n = t.b.ins().iadd(len, stored);
            t.b.ins().store(tree_flags(), n, t.blk, off + 8);
        };

        // A varint of three bytes or more: the rest of the run goes to the interpreter.
        let long = self.packed_long.take().expect("packed_varint made the hand-over block");
        self.b.switch_to_block(long);
        count(self, dst);
        self.call_packed_run(si, q, stop);
        self.b.ins().jump(after, &[]);

        self.b.switch_to_block(done);
        count(self, dst_done);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.thread(si, stop);
    }

    /// The element a packed varint `v` (an `i64`) of a field of `kind` stores.
    fn packed_element(&mut self, kind: FieldKind, v: Value) -> Value {
        match kind {
            FieldKind::Int32 | FieldKind::Uint32 | FieldKind::Enum => self.b.ins().ireduce(types::I32, v),
            FieldKind::Sint32 => {
                let v = self.b.ins().ireduce(types::I32, v);
                self.zigzag(v)
            }
            FieldKind::Sint64 => self.zigzag(v),
            FieldKind::Bool => self.b.ins().icmp_imm_u(IntCC::NotEqual, v, 0),
            _ => v,
        }
    }

    /// Hands the packed values in `start..stop` of slot `si` to the interpreter.
    fn call_packed_run(&mut self, si: u32, start: Value, stop: Value) {
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let s = self.b.ins().iconst(types::I32, si as i64);
        let ctx = self.ctx();
        let call = self.call(self.helpers.packed_run, &[ctx, li, s, self.blk, start, stop]);
        let r = self.b.inst_results(call)[0];
        self.check(r);
    }

    /// Stores scalar `v` into slot `si` (singular: the slot; repeated: a pushed element).
    pub(super) fn put(&mut self, si: u32, slot: &FieldSlot, v: Value) {
        if slot.repetition == Repetition::Singular {
            self.b.ins().store(tree_flags(), v, self.blk, slot.offset as i32);
            self.mark_present(slot);
        } else {
            let addr = self.push_addr(si, slot);
            self.b.ins().store(tree_flags(), v, addr, 0);
        }
    }

    /// The child block for a message or group value of slot `si`: the existing child of
    /// a singular field (merge), else a new one. Common cases inline; allocation and
    /// vector growth call helpers.
    pub(super) fn child_block(&mut self, si: u32, slot: &FieldSlot) -> Value {
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
    pub(super) fn bump_block(&mut self, size: u32) -> Value {
        let join = self.b.create_block();
        let child = self.b.append_block_param(join, self.ptr);
        let bump = self.b.create_block();
        let refill = self.b.create_block();
        self.b.set_cold_block(refill);
        let ctx = self.ctx();
        let cur = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::CHUNK_PTR);
        let lim = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::CHUNK_END);
        let room = self.b.ins().isub(lim, cur);
        let fits = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, room, size as i64);
        self.b.ins().brif(fits, bump, &[], refill, &[]);
        self.b.switch_to_block(bump);
        let next = self.b.ins().iadd_imm_s(cur, size as i64);
        self.b.ins().store(tree_flags(), next, ctx, ctx_offset::CHUNK_PTR);
        self.b.ins().jump(join, &[BlockArg::Value(cur)]);
        self.b.switch_to_block(refill);
        let n = self.b.ins().iconst(types::I32, size as i64);
        let call = self.call(self.helpers.alloc_block, &[ctx, n]);
        let fresh = self.b.inst_results(call)[0];
        self.check(fresh);
        self.b.ins().jump(join, &[BlockArg::Value(fresh)]);
        self.b.switch_to_block(join);
        self.zero_block(child, size);
        child
    }

    /// Zeroes `size` bytes (a multiple of 8) at `at`: from 32 bytes on, 16 bytes per
    /// store, the last one overlapping its predecessor when `size` is an odd multiple of 8
    /// (half the stores of 8-byte ones; blocks are 8-aligned, and vector stores need no
    /// alignment). Below that, a vector store saves nothing and measured worse.
    fn zero_block(&mut self, at: Value, size: u32) {
        if size < 32 {
            let zero = self.b.ins().iconst(types::I64, 0);
            for off in (0..size).step_by(8) {
                self.b.ins().store(tree_flags(), zero, at, off as i32);
            }
            return;
        }
        let bytes = self.b.func.dfg.constants.insert(vec![0u8; 16].into());
        let zero = self.b.ins().vconst(types::I8X16, bytes);
        // Not `tree_flags`: those say aligned, and these addresses are 8-aligned only.
        let flags = MemFlagsData::new().with_notrap();
        for i in 0..size.div_ceil(16) {
            self.b.ins().store(flags, zero, at, (16 * i).min(size - 16) as i32);
        }
    }

    pub(super) fn singular_child(&mut self, si: u32, slot: &FieldSlot) -> Value {
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

    pub(super) fn call_helper_child(&mut self, si: u32, slot: &FieldSlot) -> Value {
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let s = self.b.ins().iconst(types::I32, si as i64);
        let h = if slot.repetition == Repetition::Singular { self.helpers.child } else { self.helpers.push_child };
        let ctx = self.ctx();
        let call = self.call(h, &[ctx, li, s, self.blk]);
        let child = self.b.inst_results(call)[0];
        // Null only if the helper met a broken invariant (an internal error it recorded).
        self.check(child);
        child
    }

    pub(super) fn depth_check(&mut self, tag_pos: Value) {
        let (depth, max_depth) = (self.depth(), self.max_depth());
        let deep = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, depth, max_depth);
        self.fail_if(deep, DecodeErrorKind::DepthLimitExceeded, tag_pos);
    }

    pub(super) fn emit_label(&mut self, si: u32, form: Form, children: &mut ChildCalls<'_>) {
        let label = self.labels[&(si, form)];
        self.b.switch_to_block(label);
        let p = self.b.block_params(label)[0];
        let slot = *self.slot(si);
        // Where the tag starts (see `label`): computed at each use, so that `p` is the
        // only position live into the label.
        let tag_len = if tag_of(&slot, form) < 0x80 { 1 } else { 2 };
        if form == Form::Packed && packed_inline(self.layout, si, &slot) {
            self.packed_varints(si, &slot, p);
            return;
        }
        if form == Form::Packed {
            // Fixed-width runs (one copy) and closed enums (declared-value checks): the
            // interpreter's run decoder, after the length check here.
            let (start, stop) = self.read_length(p, self.end);
            self.call_packed_run(si, start, stop);
            self.thread(si, stop);
            return;
        }
        match slot.kind {
            FieldKind::Int32 | FieldKind::Uint32 | FieldKind::Enum | FieldKind::Sint32 => {
                // An enum's value rarely takes three bytes: those go out of line.
                let (v, np) = self.read_varint(p, self.end, slot.kind != FieldKind::Enum);
                let v = self.b.ins().ireduce(types::I32, v);
                let v = if slot.kind == FieldKind::Sint32 { self.zigzag(v) } else { v };
                if slot.kind == FieldKind::Enum && slot.closed_enum {
                    // Only closed enums of consecutive values get a label (`inline_single`);
                    // a value outside them is the interpreter's (an unknown field).
                    let slow = self.slow;
                    let tag_pos = self.b.ins().iadd_imm_s(p, -tag_len);
                    self.declared(self.layout, SlotIndex::new(si), v, slow, &[BlockArg::Value(tag_pos)]);
                }
                self.put(si, &slot, v);
                self.thread(si, np);
            }
            FieldKind::Int64 | FieldKind::Uint64 | FieldKind::Sint64 => {
                let (v, np) = self.read_varint_wide(p, self.end);
                let v = if slot.kind == FieldKind::Sint64 { self.zigzag(v) } else { v };
                self.put(si, &slot, v);
                self.thread(si, np);
            }
            FieldKind::Bool => {
                // A bool of three bytes is not canonical: out of line.
                let (v, np) = self.read_varint(p, self.end, false);
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
                let (v, np) = self.read_fixed(slot.kind.fixed_width(), p, self.end);
                self.put(si, &slot, v);
                self.thread(si, np);
            }
            FieldKind::String | FieldKind::Bytes => {
                let (start, stop) = self.read_length(p, self.end);
                let len = self.b.ins().isub(stop, start);
                if slot.kind == FieldKind::String {
                    // The policy is read at run time (compiled code is shared by decoders
                    // with different options): 0 off, 1 the strings whose features say VERIFY (the
                    // slot's `validate_utf8`), 2 every string.
                    let check = self.b.create_block();
                    let ok = self.b.create_block();
                    let ctx = self.ctx();
                    let mode = self.b.ins().load(types::I32, tree_flags(), ctx, ctx_offset::UTF8);
                    let needed = if slot.validate_utf8 { 1 } else { 2 };
                    let on = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, mode, needed);
                    self.b.ins().brif(on, check, &[], ok, &[]);
                    self.b.switch_to_block(check);
                    self.utf8(start, len, p);
                    self.b.ins().jump(ok, &[]);
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
                let (start, stop) = self.read_length(p, self.end);
                let tag_pos = self.b.ins().iadd_imm_s(p, -tag_len);
                self.depth_check(tag_pos);
                // After the child, decoding goes on from the position its function returns:
                // `stop` itself (a message function returns only at its end, never past
                // it, or null), but as the call's result it need not be kept across the
                // call, in a callee-saved register or on the stack.
                let done = self.b.create_block();
                self.b.append_block_param(done, self.ptr);
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
                    self.b.ins().jump(done, &[BlockArg::Value(stop)]);
                    self.b.switch_to_block(full);
                }
                let child = self.child_block(si, &slot);
                let depth = self.depth();
                let d = self.b.ins().iadd_imm_s(depth, 1);
                let meta = self.b.ins().uextend(types::I64, d);
                let null = self.b.ins().iconst(self.ptr, 0);
                let ctx = self.ctx();
                let r = self.call_child(children, slot.child, [ctx, child, start, stop, meta, null]);
                self.check(r);
                self.b.ins().jump(done, &[BlockArg::Value(r)]);
                self.b.switch_to_block(done);
                let next = self.b.block_params(done)[0];
                self.thread(si, next);
            }
            FieldKind::Group => {
                let tag_pos = self.b.ins().iadd_imm_s(p, -tag_len);
                self.depth_check(tag_pos);
                let child = self.child_block(si, &slot);
                let depth = self.depth();
                let d = self.b.ins().iadd_imm_s(depth, 1);
                let d = self.b.ins().uextend(types::I64, d);
                let meta = self.b.ins().bor_imm_u(d, (slot.number as i64) << 32);
                let ctx = self.ctx();
                let r = self.call_child(children, slot.child, [ctx, child, p, self.end, meta, tag_pos]);
                self.check(r);
                self.thread(si, r);
            }
        }
    }

    /// Calls the message function of child layout `child` with the message signature's
    /// arguments; returns its result (the position after the child, or null).
    pub(super) fn call_child(&mut self, children: &mut ChildCalls<'_>, child: u32, args: [Value; 6]) -> Value {
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
                let call = self.call(self.helpers.interp_message, &[ctx, li, blk, p, end, meta, gtag]);
                let r = self.b.inst_results(call)[0];
                self.b.ins().jump(done, &[BlockArg::Value(r)]);

                self.b.switch_to_block(done);
                self.b.block_params(done)[0]
            }
        }
    }
}
