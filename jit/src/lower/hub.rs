//! The peek hub and field-order threading: where each field starts, and where the next one is expected.

use super::*;

impl<'a> Translator<'a, '_> {
    /// The entry: messages are mostly written in field-number order, so the first byte is
    /// compared with the first field's tag, as threading does after a field, before the
    /// hub's table is consulted.
    pub(super) fn emit_entry(&mut self) {
        let p = self.start;
        let byte = self.peek(p, self.end, self.finish);
        if let Some(first) = self.layout.slots().first().copied() {
            let form = expected_form(&first);
            let tag = tag_of(&first, form);
            if tag < 0x80 && self.has_label(0, &first, form) {
                let label = self.label(0, form);
                let p1 = self.b.ins().iadd_imm_s(p, 1);
                let hit = self.b.ins().icmp_imm_u(IntCC::Equal, byte, tag as i64);
                self.b.ins().brif(
                    hit,
                    label,
                    &[BlockArg::Value(p1)],
                    self.table,
                    &[BlockArg::Value(p), BlockArg::Value(byte)],
                );
                return;
            }
        }
        self.b.ins().jump(self.table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
    }

    pub(super) fn emit_dispatch(&mut self) {
        self.emit_head(self.dispatch, self.end, self.finish, self.table);
        // The end of the input: fine for a message, an error inside a group.
        self.b.switch_to_block(self.finish);
        let p = self.b.block_params(self.finish)[0];
        if !self.layout.decoded_as_group() {
            self.b.ins().return_(&[p]);
            return;
        }
        let meta = self.meta();
        let gnum = self.b.ins().ushr_imm_u(meta, 32);
        let unterminated = self.fail_block(DecodeErrorKind::UnterminatedGroup);
        let ret = self.b.create_block();
        let group = self.b.create_block();
        self.b.set_cold_block(group);
        self.b.ins().brif(gnum, group, &[], ret, &[]);
        self.b.switch_to_block(group);
        let gtag = self.gtag();
        self.b.ins().jump(unterminated, &[BlockArg::Value(gtag)]);
        self.b.switch_to_block(ret);
        self.b.ins().return_(&[p]);
    }

    pub(super) fn emit_table(&mut self) {
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
        let labels: Vec<(u32, Block)> =
            (8..(numbers + 1) << 3).filter_map(|tag| self.label_for_tag(tag).map(|label| (tag, label))).collect();
        self.tag_table(byte, p1, &labels, miss);
        let unknown = self.b.create_block();
        self.b.set_cold_block(unknown);
        self.b.switch_to_block(miss);
        self.b.ins().jump(unknown, &[]);
        self.emit_skip_unknown(unknown, p);

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
            self.b.ins().jump(unknown, &[]);
            return;
        }
        let p2 = self.b.ins().iadd_imm_s(p, 2);
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, p2, self.end);
        let load = self.b.create_block();
        self.b.ins().brif(fits, load, &[], unknown, &[]);
        self.b.switch_to_block(load);
        let b0 = self.b.ins().uload8(types::I32, input_flags(), p, 0);
        let b1 = self.b.ins().uload8(types::I32, input_flags(), p, 1);
        let lo = self.b.ins().band_imm_u(b0, 0x7f);
        let hi = self.b.ins().ishl_imm_u(b1, 7);
        // b1 < 0x80 makes the tag exactly two bytes; a larger b1 yields a tag >= 2^14,
        // which matches no compared tag (all < 2^14) and falls to the slow path.
        let tag = self.b.ins().bor(lo, hi);
        let miss = self.b.create_block();
        self.switch_tags(tag, &two, p2, miss);
        self.b.switch_to_block(miss);
        self.b.ins().jump(unknown, &[]);
    }

    /// The block the table sends a tag it has no label for, at `p` (< end): when the
    /// decode discards unknown fields ([`UnknownFields::Discard`]) and the tag is one or
    /// two bytes long, of a number this message does not declare and of wire type 0, 1, 2
    /// or 5, the field is skipped here (`Wire::skip_value`) and the next one dispatched;
    /// everything else (kept unknown fields, a declared number with another wire type,
    /// groups, end tags, anything malformed) goes to the slow
    /// path, which decides exactly as the interpreter does. A projection's unselected
    /// fields are unknown to its pruned schema: this is what skips them without a call.
    ///
    /// [`UnknownFields::Discard`]: protojit_arena::UnknownFields::Discard
    fn emit_skip_unknown(&mut self, unknown: Block, p: Value) {
        self.b.switch_to_block(unknown);
        let ctx = self.ctx();
        let policy = self.b.ins().load(types::I32, tree_flags(), ctx, ctx_offset::UNKNOWN);
        let discard = self.b.create_block();
        self.b.set_cold_block(discard);
        self.b.ins().brif(policy, discard, &[], self.slow, &[BlockArg::Value(p)]);
        self.b.switch_to_block(discard);
        // Everything this skip does not take goes to the slow path, at the tag.
        let to_slow = self.b.create_block();
        self.b.set_cold_block(to_slow);
        // The tag: one byte, or two (the table read the first: `p < end`).
        let (join, tag, q) = self.short_varint(p, self.end, false, to_slow);
        self.b.switch_to_block(join);
        // A number the message declares (or 0, malformed) goes to the slow path.
        let number = self.b.ins().ushr_imm_u(tag, 3);
        let undeclared = self.b.create_block();
        self.b.set_cold_block(undeclared);
        let mut switch = cranelift_frontend::Switch::new();
        switch.set_entry(0, to_slow);
        for slot in self.layout.slots() {
            if slot.number < 1 << 14 {
                switch.set_entry(slot.number as u128, to_slow);
            }
        }
        switch.emit(&mut self.b, number, undeclared);
        self.b.switch_to_block(to_slow);
        self.b.ins().jump(self.slow, &[BlockArg::Value(p)]);

        // By wire type: skip the value when it is whole, else the slow path (groups too).
        self.b.switch_to_block(undeclared);
        let wt = self.b.ins().band_imm_u(tag, 7);
        self.skip_value(wt, q, self.end, self.dispatch, to_slow, to_slow);
    }

    pub(super) fn emit_slow(&mut self) {
        self.b.switch_to_block(self.slow);
        self.b.set_cold_block(self.slow);
        let p = self.b.block_params(self.slow)[0];
        let li = self.b.ins().iconst(types::I32, self.li.as_u32() as i64);
        let meta = self.meta();
        let ctx = self.ctx();
        let args = [ctx, li, self.blk, p, self.end, meta];
        let call = self.call(self.helpers.slow_field, &args);
        let r = self.b.inst_results(call)[0];
        self.check(r);
        let ctx = self.ctx();
        let done = self.b.ins().load(types::I32, tree_flags(), ctx, ctx_offset::GROUP_DONE);
        let ended = self.b.create_block();
        self.b.ins().brif(done, ended, &[], self.dispatch, &[BlockArg::Value(r)]);
        self.b.switch_to_block(ended);
        let zero = self.b.ins().iconst(types::I32, 0);
        self.b.ins().store(tree_flags(), zero, ctx, ctx_offset::GROUP_DONE);
        self.b.ins().return_(&[r]);
    }

    /// Whether compiled code decodes slot `si` in `form` (a label may be jumped to): every
    /// packed form does, a single value only if `inline_single` says so.
    fn has_label(&self, si: u32, slot: &FieldSlot, form: Form) -> bool {
        form != Form::Single || inline_single(self.layout, si, slot)
    }

    /// Jumps to the label of the field expected after slot `si`, given position `p`.
    pub(super) fn thread(&mut self, si: u32, p: Value) {
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
        let byte = self.peek(p, self.end, self.finish);
        let mut expected = Vec::new();
        for (csi, form) in candidates {
            let cslot = *self.slot(csi);
            if self.has_label(csi, &cslot, form) {
                expected.push((tag_of(&cslot, form), self.label(csi, form)));
            }
        }
        self.expect_tags(p, self.end, byte, &expected, self.table);
    }
}
