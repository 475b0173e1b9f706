//! Wire primitives inline: varints, length prefixes, zigzag and the short-ASCII UTF-8 fast path.

use super::*;

impl<'a> Translator<'a, '_> {
    /// Reads a varint at `p` (< or = `end`): `(value as i64, position after)`.
    pub(super) fn varint(&mut self, p: Value) -> (Value, Value) {
        self.varint_in(p, self.end)
    }

    /// Reads a varint at `p` that must end by `end` (the message's end, or a packed run's):
    /// one- and two-byte varints inline, longer ones (and errors) in `pj_varint`.
    pub(super) fn varint_in(&mut self, p: Value, end: Value) -> (Value, Value) {
        let load = self.b.create_block();
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, p, end);
        self.b.ins().brif(inside, load, &[], slow, &[]);
        self.b.switch_to_block(load);
        let (join, v, np) = self.short_varint(p, end, slow);

        self.b.switch_to_block(slow);
        let out = self.b.ins().stack_addr(self.ptr, self.varint_out, 0);
        let call = self.call_helper(self.helpers.varint, &[self.ctx, p, end, out]);
        let r = self.b.inst_results(call)[0];
        self.null_check(r);
        let val = self.b.ins().stack_load(self.ptr, types::I64, self.varint_out, 0);
        self.b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(r)]);

        self.b.switch_to_block(join);
        (v, np)
    }

    /// A varint of a packed run at `p < stop`, one or two bytes inline: `(value, next)`.
    /// Anything longer (or running past `stop`) jumps to a new block left in
    /// `self.packed_long`, where the caller hands the rest of the run to the interpreter.
    pub(super) fn packed_varint(&mut self, p: Value, stop: Value) -> (Value, Value) {
        let long = self.b.create_block();
        self.b.set_cold_block(long);
        let (join, v, np) = self.short_varint(p, stop, long);
        self.packed_long = Some(long);
        self.b.switch_to_block(join);
        (v, np)
    }

    /// The one- and two-byte cases of a varint at `p < end` (checked by the caller), in
    /// the current block: they jump to the returned join block with `(value, next)`; a
    /// longer varint, or one cut by `end`, jumps to `other` (no arguments).
    fn short_varint(&mut self, p: Value, end: Value, other: Block) -> (Block, Value, Value) {
        let join = self.b.create_block();
        let v = self.b.append_block_param(join, types::I64);
        let np = self.b.append_block_param(join, self.ptr);
        let second = self.b.create_block();
        let second_load = self.b.create_block();
        let two = self.b.create_block();

        let v0 = self.b.ins().uload8(types::I64, input_flags(), p, 0);
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v0, 0x80);
        self.b.ins().brif(short, join, &[BlockArg::Value(v0), BlockArg::Value(p1)], second, &[]);

        self.b.switch_to_block(second);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, p1, end);
        self.b.ins().brif(inside, second_load, &[], other, &[]);

        self.b.switch_to_block(second_load);
        let v1 = self.b.ins().uload8(types::I64, input_flags(), p, 1);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v1, 0x80);
        self.b.ins().brif(short, two, &[], other, &[]);

        self.b.switch_to_block(two);
        let lo = self.b.ins().band_imm_u(v0, 0x7f);
        let hi = self.b.ins().ishl_imm_u(v1, 7);
        let val = self.b.ins().bor(lo, hi);
        let p2 = self.b.ins().iadd_imm_s(p, 2);
        self.b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(p2)]);
        (join, v, np)
    }

    /// Reads a length prefix at `p`: `(start, end)` of the value, checked against `end`.
    pub(super) fn length(&mut self, p: Value) -> (Value, Value) {
        let (len, start) = self.varint(p);
        let avail = self.b.ins().isub(self.end, start);
        let over = self.b.ins().icmp(IntCC::UnsignedGreaterThan, len, avail);
        self.fail_if(over, DecodeErrorKind::LengthOutOfBounds, p);
        let stop = self.b.ins().iadd(start, len);
        (start, stop)
    }

    /// Jumps to `ok` when the `len` bytes at `start` are short ASCII (at most 16 bytes,
    /// with 16 readable bytes before `end`: two loads, masked to the string); otherwise
    /// continues in a new block, where the caller runs the full validator.
    pub(super) fn ascii_check(&mut self, start: Value, len: Value, ok: Block) {
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

    pub(super) fn zigzag(&mut self, v: Value) -> Value {
        let half = self.b.ins().ushr_imm_u(v, 1);
        let low = self.b.ins().band_imm_u(v, 1);
        let mask = self.b.ins().ineg(low);
        self.b.ins().bxor(half, mask)
    }
}
