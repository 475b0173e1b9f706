//! Wire primitives inline: varints, length prefixes, zigzag and the short-ASCII UTF-8 fast path.

use super::*;

impl<'a> Translator<'a, '_> {
    /// Reads a varint at `p` (< or = `end`): `(value as i64, position after)`.
    pub(super) fn varint(&mut self, p: Value) -> (Value, Value) {
        self.varint_in(p, self.end)
    }

    /// Reads a varint at `p` that must end by `end` (the message's end, or a packed run's):
    /// one- and two-byte varints inline, up to eight bytes from one 8-byte load (SWAR),
    /// longer ones and errors in `pj_varint`. Within eight bytes of `end` (a message's last
    /// field) the word is the eight bytes *ending* at `end`, shifted down to start at `p`,
    /// when the input has eight bytes before `end`; a byte loop otherwise (inputs under
    /// eight bytes).
    pub(super) fn varint_in(&mut self, p: Value, end: Value) -> (Value, Value) {
        let load = self.b.create_block();
        let word = self.b.create_block();
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, p, end);
        self.b.ins().brif(inside, load, &[], slow, &[]);
        self.b.switch_to_block(load);
        let (join, v, np) = self.short_varint(p, end, word);

        // Three to eight bytes (timestamps, ids, hashes): no helper call. The terminator
        // is the lowest byte with its top bit clear. Block params of `swar`: the word whose
        // low byte is the one at `p`, and how many of its bytes lie before `end`.
        self.b.switch_to_block(word);
        let swar = self.b.create_block();
        let w = self.b.append_block_param(swar, types::I64);
        let avail_w = self.b.append_block_param(swar, types::I64);
        let loaded = self.b.create_block();
        let near_end = self.b.create_block();
        let tail = self.b.create_block();
        let avail = self.b.ins().isub(end, p);
        let room = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, avail, 8);
        self.b.ins().brif(room, loaded, &[], near_end, &[]);

        self.b.switch_to_block(loaded);
        let w8 = self.b.ins().load(types::I64, input_flags(), p, 0);
        self.b.ins().jump(swar, &[BlockArg::Value(w8), BlockArg::Value(avail)]);

        // Fewer than eight bytes left: the eight bytes ending at `end` are all input when
        // `end - 8` is not before the input's start. Shifted right by the bytes before `p`,
        // the word's high bytes are zero, which read as terminators: a varint cut by `end`
        // shows as one longer than `avail` and goes to the helper, which reports it.
        self.b.switch_to_block(near_end);
        let ctx = self.ctx();
        let start = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_START);
        let before = self.b.ins().isub(end, start);
        let whole = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, before, 8);
        let shifted = self.b.create_block();
        self.b.ins().brif(whole, shifted, &[], tail, &[]);
        self.b.switch_to_block(shifted);
        let w_end = self.b.ins().load(types::I64, input_flags(), end, -8);
        let eight = self.b.ins().iconst(types::I64, 8);
        let skip = self.b.ins().isub(eight, avail);
        let skip = self.b.ins().ishl_imm_u(skip, 3);
        let w_end = self.b.ins().ushr(w_end, skip);
        self.b.ins().jump(swar, &[BlockArg::Value(w_end), BlockArg::Value(avail)]);

        // Inputs under eight bytes: a byte loop, still no call.
        // Block params: position, shift, value so far. Ten bytes at most (shift 0..=63);
        // an eleventh, or the end, goes to the helper, which reports the error.
        self.b.switch_to_block(tail);
        let step = self.b.create_block();
        let byte = self.b.create_block();
        let more = self.b.create_block();
        let q = self.b.append_block_param(step, self.ptr);
        let shift = self.b.append_block_param(step, types::I64);
        let acc = self.b.append_block_param(step, types::I64);
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.ins().jump(step, &[BlockArg::Value(p), BlockArg::Value(zero), BlockArg::Value(zero)]);
        self.b.switch_to_block(step);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, q, end);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, shift, 64);
        let go = self.b.ins().band(inside, short);
        self.b.ins().brif(go, byte, &[], slow, &[]);
        self.b.switch_to_block(byte);
        let b = self.b.ins().uload8(types::I64, input_flags(), q, 0);
        let bits = self.b.ins().band_imm_u(b, 0x7f);
        let bits = self.b.ins().ishl(bits, shift);
        let acc2 = self.b.ins().bor(acc, bits);
        let q1 = self.b.ins().iadd_imm_s(q, 1);
        let last = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b, 0x80);
        self.b.ins().brif(last, join, &[BlockArg::Value(acc2), BlockArg::Value(q1)], more, &[]);
        self.b.switch_to_block(more);
        let shift7 = self.b.ins().iadd_imm_s(shift, 7);
        self.b.ins().jump(step, &[BlockArg::Value(q1), BlockArg::Value(shift7), BlockArg::Value(acc2)]);

        self.b.switch_to_block(swar);
        let found = self.b.create_block();
        let fits = self.b.create_block();
        let not = self.b.ins().bnot(w);
        let stops = self.b.ins().band_imm_u(not, 0x8080_8080_8080_8080u64 as i64);
        self.b.ins().brif(stops, found, &[], slow, &[]);
        self.b.switch_to_block(found);
        let tz = self.b.ins().ctz(stops);
        let len = self.b.ins().ushr_imm_u(tz, 3);
        let len = self.b.ins().iadd_imm_s(len, 1);
        let cut = self.b.ins().icmp(IntCC::UnsignedGreaterThan, len, avail_w);
        self.b.ins().brif(cut, slow, &[], fits, &[]);
        self.b.switch_to_block(fits);
        let below = self.b.ins().iadd_imm_s(stops, -1);
        let upto = self.b.ins().bxor(stops, below);
        let x = self.b.ins().band(w, upto);
        let x = self.b.ins().band_imm_u(x, 0x7f7f_7f7f_7f7f_7f7f);
        // Pack the 7-bit groups: pairs, then quads, then the two halves.
        let mut x = x;
        for (hi, lo, shift) in [
            (0x7f00_7f00_7f00_7f00u64, 0x007f_007f_007f_007fu64, 1),
            (0x3fff_0000_3fff_0000, 0x0000_3fff_0000_3fff, 2),
            (0x0fff_ffff_0000_0000, 0x0000_0000_0fff_ffff, 4),
        ] {
            let h = self.b.ins().band_imm_u(x, hi as i64);
            let h = self.b.ins().ushr_imm_u(h, shift);
            let l = self.b.ins().band_imm_u(x, lo as i64);
            x = self.b.ins().bor(h, l);
        }
        let after = self.b.ins().iadd(p, len);
        self.b.ins().jump(join, &[BlockArg::Value(x), BlockArg::Value(after)]);

        self.b.switch_to_block(slow);
        let out = self.b.ins().stack_addr(self.ptr, self.varint_out, 0);
        let ctx = self.ctx();
        let call = self.call_helper(self.helpers.varint, &[ctx, p, end, out]);
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
    pub(super) fn short_varint(&mut self, p: Value, end: Value, other: Block) -> (Block, Value, Value) {
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
    /// with 16 readable bytes before the end of the *input*, not just of this message, so
    /// a short string at the end of a submessage stays inline: two loads, masked to the
    /// string); otherwise continues in a new block, where the caller runs the full
    /// validator.
    pub(super) fn ascii_check(&mut self, start: Value, len: Value, ok: Block) {
        let inline = self.b.create_block();
        let full = self.b.create_block();
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 16);
        let ctx = self.ctx();
        let input = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_START);
        let input_len = self.b.ins().load(self.ptr, tree_flags(), ctx, ctx_offset::INPUT_LEN);
        let input_end = self.b.ins().iadd(input, input_len);
        let avail = self.b.ins().isub(input_end, start);
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
