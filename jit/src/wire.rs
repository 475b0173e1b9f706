//! The wire-reading core both compiled products lower through: varints, lengths, fixed values, zigzag, UTF-8, closed enums and tag dispatch, written once in Cranelift IR.
//!
//! A product's lowering (the tree decoder's `lower::Translator`, the appenders'
//! `columns::lower::Lower`) implements [`Wire`]: its builder, the input's bounds, its
//! context and helpers, and what failing means (the tree records the error in `JitCtx` and
//! returns null; an appender declines the record). The reads are [`Wire`]'s provided
//! methods; what a value then *does* (a store into a block, an append to a column) is the
//! product's. Each product's helpers come from one list, expanded by [`helper_table!`].

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, InstBuilder, JumpTableData, MemFlagsData, SigRef, Signature, StackSlot, Type,
    Value,
};
use cranelift_frontend::{FunctionBuilder, Switch};
use protojit_arena::{DecodeErrorKind, MessageLayout, SlotIndex};

/// Reads the varint at `p`, which must end by `end`, into `*out`: the position after it,
/// or null when it is malformed (cut by `end`, or longer than ten bytes; `p == end` too).
/// Each product's `varint_long` helper wraps it and reports a malformed varint its own
/// way. Compiled code of both products calls it for the varints longer than three bytes
/// (two for lengths, tags, enums and bools: [`Wire::read_varint`]; those of 64-bit fields
/// longer than eight, [`Wire::read_varint_wide`]): one routine, out of line, in place of
/// the word read every varint field once inlined. Never panics.
///
/// # Safety
/// `p <= end`, and `p..end` is readable; `out` is writable.
pub(crate) unsafe fn varint_long(p: *const u8, end: *const u8, out: *mut u64) -> *const u8 {
    // SAFETY: the caller's contract: `p..end` is one readable range, `out` writable; every
    // read below is of a byte before `end` (`avail` is checked first).
    unsafe {
        let avail = end.offset_from(p) as usize;
        let done = |value: u64, len: usize| {
            out.write(value);
            p.add(len)
        };
        if avail >= 8 {
            let w = u64::from_le(p.cast::<u64>().read_unaligned());
            let stops = !w & 0x8080_8080_8080_8080;
            if stops != 0 {
                let x = protojit_arena::wire::pack_groups(w & (stops ^ (stops - 1)) & 0x7f7f_7f7f_7f7f_7f7f);
                return done(x, stops.trailing_zeros() as usize / 8 + 1);
            }
            // Nine or ten bytes (a negative `int32`/`int64`, a hash); bits past 64 dropped.
            let low = protojit_arena::wire::pack_groups(w & 0x7f7f_7f7f_7f7f_7f7f);
            if avail > 8 {
                let b8 = *p.add(8);
                if b8 < 0x80 {
                    return done(low | (b8 as u64) << 56, 9);
                }
                if avail > 9 && *p.add(9) < 0x80 {
                    return done(low | ((b8 & 0x7f) as u64) << 56 | (*p.add(9) as u64) << 63, 10);
                }
            }
            return std::ptr::null();
        }
        // Fewer than eight bytes before `end`.
        let mut value = 0u64;
        for i in 0..avail {
            let b = *p.add(i);
            value |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                return done(value, i + 1);
            }
        }
        std::ptr::null()
    }
}

/// Loads from the input: never traps (every read is bounds-checked first), never written.
pub(crate) fn input_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_readonly()
}

/// One runtime helper as the function being built sees it: its imported signature and
/// its address (helpers live in the protojit binary, not in the JIT module).
#[derive(Clone, Copy)]
pub(crate) struct Helper {
    pub sig: SigRef,
    pub addr: *const u8,
}

impl Helper {
    /// Imports a helper of these Cranelift parameter and result types into `b`'s function.
    pub(crate) fn import(b: &mut FunctionBuilder<'_>, params: &[Type], ret: Type, addr: *const u8) -> Helper {
        let mut s = Signature::new(b.func.signature.call_conv);
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.push(AbiParam::new(ret));
        Helper { sig: b.import_signature(s), addr }
    }
}

/// The Cranelift type of a helper parameter or result, from its Rust type.
pub(crate) trait AbiType {
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

/// Expands a product's helper list (`abi::foreach_helper!`, `columns::foreach_append_helper!`,
/// in wasmtime's `foreach_builtin_function!` style) into `$table`, its helpers imported into
/// one function: each a typed function pointer — so a helper whose declaration drifts from
/// its list does not compile — and the Cranelift signature derived from the same Rust types.
/// Nothing else declares a helper's signature.
macro_rules! helper_table {
    ($table:ident, $module:ident; $($field:ident: $name:ident($($arg:ty),*) -> $ret:ty;)*) => {
        /// The runtime helpers, imported into one function.
        pub(crate) struct $table {
            $(pub $field: $crate::wire::Helper,)*
        }

        impl $table {
            pub(crate) fn import(b: &mut cranelift_frontend::FunctionBuilder<'_>, ptr: cranelift_codegen::ir::Type) -> $table {
                use $crate::wire::AbiType;
                $table {
                    $($field: {
                        // The declaration must have exactly the listed type.
                        let f: unsafe extern "C" fn($($arg),*) -> $ret = $module::$name;
                        let params = [$(<$arg as AbiType>::clif(ptr)),*];
                        $crate::wire::Helper::import(b, &params, <$ret as AbiType>::clif(ptr), f as *const u8)
                    },)*
                }
            }
        }
    };
}
pub(crate) use helper_table;

/// What the core needs of a product's function, and the reads it lowers for it.
pub(crate) trait Wire<'b> {
    /// The function's builder.
    fn b(&mut self) -> &mut FunctionBuilder<'b>;
    /// The pointer type.
    fn ptr(&self) -> Type;
    /// The context the product's helpers take first.
    fn ctx(&mut self) -> Value;
    /// The input's first byte (an appender's: the record's).
    fn input_start(&mut self) -> Value;
    /// The input's end.
    fn input_end(&mut self) -> Value;
    /// The product's varint helper (`(ctx, p, end, out) -> after | null`: [`varint_long`],
    /// a malformed varint reported), its UTF-8 helper (`(ctx, start, len, at) -> 1 | 0`) and
    /// the stack cell the varint helper writes.
    fn core(&self) -> (Helper, Helper, StackSlot);
    /// Where code goes once a helper has said the input fails (no parameters).
    fn failed(&mut self) -> Block;
    /// Fails with `kind` at `at` when `cond` holds, else continues in a new block.
    fn fail_if(&mut self, cond: Value, kind: DecodeErrorKind, at: Value);

    /// Calls helper `h`.
    fn call(&mut self, h: Helper, args: &[Value]) -> cranelift_codegen::ir::Inst {
        let ptr = self.ptr();
        let f = self.b().ins().iconst(ptr, h.addr as usize as i64);
        self.b().ins().call_indirect(h.sig, f, args)
    }

    /// Continues in a new block when `r` is not 0, else fails.
    fn check(&mut self, r: Value) {
        let failed = self.failed();
        let ok = self.b().create_block();
        self.b().ins().brif(r, ok, &[], failed, &[]);
        self.b().switch_to_block(ok);
    }

    /// At `p`: when the message ends there (`end`), to `ended(p)`; otherwise the byte at
    /// `p` (the next tag's first, an i32), in a new block.
    fn peek(&mut self, p: Value, end: Value, ended: Block) -> Value {
        let b = self.b();
        let at_end = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, end);
        let more = b.create_block();
        b.ins().brif(at_end, ended, &[BlockArg::Value(p)], more, &[]);
        b.switch_to_block(more);
        b.ins().uload8(types::I32, input_flags(), p, 0)
    }

    /// The dispatch loop's head `head(p)`: the message's end (`end`) goes to `ended(p)`,
    /// anything else to `table(p, the byte at p)`.
    fn emit_head(&mut self, head: Block, end: Value, ended: Block, table: Block) {
        self.b().switch_to_block(head);
        let p = self.b().block_params(head)[0];
        let byte = self.peek(p, end, ended);
        self.b().ins().jump(table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
    }

    /// Reads a varint at `p` that must end by `end` (the message's end, or a packed run's):
    /// one and two bytes inline, three too when `third`, longer ones in [`varint_long`],
    /// errors in the product's varint helper. `(value as i64, position after)`. Inlined, the
    /// word read of [`read_varint_wide`](Self::read_varint_wide) costs each varint some 70
    /// IR instructions: out of line for lengths, tags, 32-bit numbers, enums and bools, whose
    /// values rarely take four bytes, it cut compile time per type by a fifth to a third
    /// (descriptor.proto's types, osmformat's) at ±2% of decode instructions (BENCHMARKS.md,
    /// "Compile cost"). `third` is for the 32-bit numbers, whose values often take three
    /// bytes (counters, ids below 2^21); lengths, tags, enums and bools take three bytes
    /// rarely, or only for a payload that dwarfs a call, and leave that case out of line: a
    /// few dozen bytes of code less per field at unchanged decode instructions.
    fn read_varint(&mut self, p: Value, end: Value, third: bool) -> (Value, Value) {
        let b = self.b();
        let load = b.create_block();
        let long = b.create_block();
        b.set_cold_block(long);
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, p, end);
        b.ins().brif(inside, load, &[], long, &[]);
        b.switch_to_block(load);
        let (join, v, np) = self.short_varint(p, end, third, long);
        self.b().switch_to_block(long);
        self.varint_call(p, end, join);
        (v, np)
    }

    /// [`read_varint`](Self::read_varint) for the fields whose values often take more than
    /// three bytes (`int64`, `uint64`, `sint64`: timestamps, ids, hashes): up to eight bytes
    /// inline from one 8-byte load (SWAR). Within eight bytes of `end` (a message's last
    /// field) the word is the eight bytes *ending* at `end`, shifted down to start at `p`,
    /// when the input has eight bytes before `end`. Nine and ten bytes, inputs under eight
    /// bytes and errors go to [`varint_long`] as in `read_varint`.
    fn read_varint_wide(&mut self, p: Value, end: Value) -> (Value, Value) {
        let b = self.b();
        let load = b.create_block();
        let word = b.create_block();
        let long = b.create_block();
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, p, end);
        b.ins().brif(inside, load, &[], long, &[]);
        b.switch_to_block(load);
        let (join, v, np) = self.short_varint(p, end, false, word);

        // Three to eight bytes (timestamps, ids, hashes): no helper call. The terminator
        // is the lowest byte with its top bit clear. Block params of `swar`: the word whose
        // low byte is the one at `p`, and how many of its bytes lie before `end`.
        let b = self.b();
        b.switch_to_block(word);
        let swar = b.create_block();
        let w = b.append_block_param(swar, types::I64);
        let avail_w = b.append_block_param(swar, types::I64);
        let loaded = b.create_block();
        let near_end = b.create_block();
        let avail = b.ins().isub(end, p);
        let room = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, avail, 8);
        b.ins().brif(room, loaded, &[], near_end, &[]);
        b.switch_to_block(loaded);
        let w8 = b.ins().load(types::I64, input_flags(), p, 0);
        b.ins().jump(swar, &[BlockArg::Value(w8), BlockArg::Value(avail)]);

        // Fewer than eight bytes left: the eight bytes ending at `end` are all input when
        // `end - 8` is not before the input's start. Shifted right by the bytes before `p`,
        // the word's high bytes are zero, which read as terminators: a varint cut by `end`
        // shows as one longer than `avail` and goes to the helper, which reports it.
        b.switch_to_block(near_end);
        let start = self.input_start();
        let b = self.b();
        let before = b.ins().isub(end, start);
        let whole = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, before, 8);
        let shifted = b.create_block();
        b.ins().brif(whole, shifted, &[], long, &[]);
        b.switch_to_block(shifted);
        let w_end = b.ins().load(types::I64, input_flags(), end, -8);
        let eight = b.ins().iconst(types::I64, 8);
        let skip = b.ins().isub(eight, avail);
        let skip = b.ins().ishl_imm_u(skip, 3);
        let w_end = b.ins().ushr(w_end, skip);
        b.ins().jump(swar, &[BlockArg::Value(w_end), BlockArg::Value(avail)]);

        b.switch_to_block(swar);
        let found = b.create_block();
        let fits = b.create_block();
        let not = b.ins().bnot(w);
        let stops = b.ins().band_imm_u(not, 0x8080_8080_8080_8080u64 as i64);
        b.ins().brif(stops, found, &[], long, &[]);
        b.switch_to_block(found);
        let tz = b.ins().ctz(stops);
        let len = b.ins().ushr_imm_u(tz, 3);
        let len = b.ins().iadd_imm_s(len, 1);
        let cut = b.ins().icmp(IntCC::UnsignedGreaterThan, len, avail_w);
        b.ins().brif(cut, long, &[], fits, &[]);
        b.switch_to_block(fits);
        let below = b.ins().iadd_imm_s(stops, -1);
        let upto = b.ins().bxor(stops, below);
        let x = b.ins().band(w, upto);
        let mut x = b.ins().band_imm_u(x, 0x7f7f_7f7f_7f7f_7f7f);
        // Pack the 7-bit groups: pairs, then quads, then the two halves.
        for (hi, lo, shift) in [
            (0x7f00_7f00_7f00_7f00u64, 0x007f_007f_007f_007fu64, 1),
            (0x3fff_0000_3fff_0000, 0x0000_3fff_0000_3fff, 2),
            (0x0fff_ffff_0000_0000, 0x0000_0000_0fff_ffff, 4),
        ] {
            let h = b.ins().band_imm_u(x, hi as i64);
            let h = b.ins().ushr_imm_u(h, shift);
            let l = b.ins().band_imm_u(x, lo as i64);
            x = b.ins().bor(h, l);
        }
        let after = b.ins().iadd(p, len);
        b.ins().jump(join, &[BlockArg::Value(x), BlockArg::Value(after)]);
        b.switch_to_block(long);
        self.varint_call(p, end, join);
        (v, np)
    }

    /// A varint at `p`, which is before `end` (the caller checked it), where registers are
    /// scarce (a packed run's items, in a loop whose head compares `p` with the run's
    /// end): two bytes inline, then a byte loop (`varint_bytes`), without the word reads
    /// of `read_varint`, whose extra values cost the loop registers.
    fn read_varint_compact(&mut self, p: Value, end: Value) -> (Value, Value) {
        let ptr = self.ptr();
        let b = self.b();
        let [second, read, long, slow, join] = [(); 5].map(|_| b.create_block());
        b.set_cold_block(slow);
        let v = b.append_block_param(join, types::I64);
        let np = b.append_block_param(join, ptr);
        let b0 = b.ins().uload8(types::I64, input_flags(), p, 0);
        let p1 = b.ins().iadd_imm_s(p, 1);
        let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b0, 0x80);
        b.ins().brif(short, join, &[BlockArg::Value(b0), BlockArg::Value(p1)], second, &[]);
        b.switch_to_block(second);
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, p1, end);
        b.ins().brif(inside, read, &[], slow, &[]);
        b.switch_to_block(read);
        let b1 = b.ins().uload8(types::I64, input_flags(), p, 1);
        let lo = b.ins().band_imm_u(b0, 0x7f);
        let hi = b.ins().band_imm_u(b1, 0x7f);
        let hi = b.ins().ishl_imm_u(hi, 7);
        let acc = b.ins().bor(lo, hi);
        let p2 = b.ins().iadd_imm_s(p, 2);
        let last = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b1, 0x80);
        b.ins().brif(last, join, &[BlockArg::Value(acc), BlockArg::Value(p2)], long, &[]);
        b.switch_to_block(long);
        let fourteen = b.ins().iconst(types::I64, 14);
        self.varint_bytes([p2, fourteen, acc], end, join, slow);
        self.b().switch_to_block(slow);
        self.varint_call(p, end, join);
        (v, np)
    }

    /// A byte loop over a varint from the current block, from `[position, shift, value so
    /// far]`: on to `join(value, position after)`; ten bytes at most (shift 0..=63), an
    /// eleventh or `end` to `slow` (the helper, which reports the error).
    fn varint_bytes(&mut self, from: [Value; 3], end: Value, join: Block, slow: Block) {
        let ptr = self.ptr();
        let b = self.b();
        let step = b.create_block();
        let byte = b.create_block();
        let more = b.create_block();
        let q = b.append_block_param(step, ptr);
        let shift = b.append_block_param(step, types::I64);
        let acc = b.append_block_param(step, types::I64);
        b.ins().jump(step, &from.map(BlockArg::Value));
        b.switch_to_block(step);
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, q, end);
        let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, shift, 64);
        let go = b.ins().band(inside, short);
        b.ins().brif(go, byte, &[], slow, &[]);
        b.switch_to_block(byte);
        let x = b.ins().uload8(types::I64, input_flags(), q, 0);
        let bits = b.ins().band_imm_u(x, 0x7f);
        let bits = b.ins().ishl(bits, shift);
        let acc2 = b.ins().bor(acc, bits);
        let q1 = b.ins().iadd_imm_s(q, 1);
        let last = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, x, 0x80);
        b.ins().brif(last, join, &[BlockArg::Value(acc2), BlockArg::Value(q1)], more, &[]);
        b.switch_to_block(more);
        let shift7 = b.ins().iadd_imm_s(shift, 7);
        b.ins().jump(step, &[BlockArg::Value(q1), BlockArg::Value(shift7), BlockArg::Value(acc2)]);
    }

    /// The product's varint helper on the varint at `p` (at or before `end`): on to
    /// `join(value, position after)`, or failing (the helper reported why); continues in
    /// `join`.
    fn varint_call(&mut self, p: Value, end: Value, join: Block) {
        let ptr = self.ptr();
        let (varint, _, out) = self.core();
        let at = self.b().ins().stack_addr(ptr, out, 0);
        let ctx = self.ctx();
        let call = self.call(varint, &[ctx, p, end, at]);
        let r = self.b().inst_results(call)[0];
        self.check(r);
        let b = self.b();
        let val = b.ins().stack_load(ptr, types::I64, out, 0);
        b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(r)]);
        b.switch_to_block(join);
    }

    /// The one- and two-byte cases of a varint at `p < end` (checked by the caller), in
    /// the current block, and the three-byte case when `third`: they jump to the returned
    /// join block with `(value, next)`; a longer varint, or one cut by `end`, jumps to
    /// `other` (no arguments).
    fn short_varint(&mut self, p: Value, end: Value, third: bool, other: Block) -> (Block, Value, Value) {
        let ptr = self.ptr();
        let b = self.b();
        let join = b.create_block();
        let v = b.append_block_param(join, types::I64);
        let np = b.append_block_param(join, ptr);
        let second = b.create_block();
        let second_load = b.create_block();
        let two = b.create_block();
        let v0 = b.ins().uload8(types::I64, input_flags(), p, 0);
        let p1 = b.ins().iadd_imm_s(p, 1);
        let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v0, 0x80);
        b.ins().brif(short, join, &[BlockArg::Value(v0), BlockArg::Value(p1)], second, &[]);
        b.switch_to_block(second);
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, p1, end);
        b.ins().brif(inside, second_load, &[], other, &[]);
        b.switch_to_block(second_load);
        let v1 = b.ins().uload8(types::I64, input_flags(), p, 1);
        let lo = b.ins().band_imm_u(v0, 0x7f);
        let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v1, 0x80);
        let (after_two, third_load) = match third {
            true => (b.create_block(), b.create_block()),
            false => (other, other),
        };
        b.ins().brif(short, two, &[], after_two, &[]);
        b.switch_to_block(two);
        let hi = b.ins().ishl_imm_u(v1, 7);
        let val = b.ins().bor(lo, hi);
        let p2 = b.ins().iadd_imm_s(p, 2);
        b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(p2)]);
        if third {
            // Three bytes (values below 2^21: lengths of big strings and blocks, counters).
            b.switch_to_block(after_two);
            let p2 = b.ins().iadd_imm_s(p, 2);
            let inside = b.ins().icmp(IntCC::UnsignedLessThan, p2, end);
            b.ins().brif(inside, third_load, &[], other, &[]);
            b.switch_to_block(third_load);
            let v2 = b.ins().uload8(types::I64, input_flags(), p, 2);
            let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v2, 0x80);
            let three = b.create_block();
            b.ins().brif(short, three, &[], other, &[]);
            b.switch_to_block(three);
            let mid = b.ins().band_imm_u(v1, 0x7f);
            let mid = b.ins().ishl_imm_u(mid, 7);
            let hi = b.ins().ishl_imm_u(v2, 14);
            let val = b.ins().bor(lo, mid);
            let val = b.ins().bor(val, hi);
            let p3 = b.ins().iadd_imm_s(p, 3);
            b.ins().jump(join, &[BlockArg::Value(val), BlockArg::Value(p3)]);
        }
        (join, v, np)
    }

    /// A length prefix at `p`: `(start, stop)` of the bytes, which must lie before `end`.
    /// A length of 16 KiB or more (three bytes) is read out of line: a call that costs
    /// little beside the bytes it announces.
    fn read_length(&mut self, p: Value, end: Value) -> (Value, Value) {
        let (len, start) = self.read_varint(p, end, false);
        let avail = self.b().ins().isub(end, start);
        let over = self.b().ins().icmp(IntCC::UnsignedGreaterThan, len, avail);
        self.fail_if(over, DecodeErrorKind::LengthOutOfBounds, p);
        let stop = self.b().ins().iadd(start, len);
        (start, stop)
    }

    /// A fixed-width value of `width` (4 or 8) bytes at `p` before `end`: an i32 or i64 as
    /// the wire has it (little-endian hosts only: x86_64, aarch64), and the position after.
    fn read_fixed(&mut self, width: u32, p: Value, end: Value) -> (Value, Value) {
        let avail = self.b().ins().isub(end, p);
        let short = self.b().ins().icmp_imm_u(IntCC::UnsignedLessThan, avail, width as i64);
        self.fail_if(short, DecodeErrorKind::Truncated, p);
        let ty = if width == 4 { types::I32 } else { types::I64 };
        let v = self.b().ins().load(ty, input_flags(), p, 0);
        (v, self.b().ins().iadd_imm_s(p, width as i64))
    }

    /// Passes over the value at `q` of a field nobody reads, by its wire type `wt` (an i32
    /// or i64 below 8), then `next(position after)`: a varint of up to ten bytes (the
    /// interpreter's rule: a tenth byte's high bits are dropped), a fixed64, a fixed32 or a
    /// length-delimited value, each ending by `end`. A group's start tag (wire type 3) goes
    /// to `group`; everything else (an end tag, wire types 6 and 7, a value cut by `end`, a
    /// longer varint) to `other`: both without arguments, for the product to decide (the
    /// tree decoder's slow path, an appender's group skip or decline). Not cold: it is how
    /// a projection passes over the fields it leaves out.
    fn skip_value(&mut self, wt: Value, q: Value, end: Value, next: Block, group: Block, other: Block) {
        let ptr = self.ptr();
        let b = self.b();
        let [varint, fixed64, len, fixed32, read, counted] = [(); 6].map(|_| b.create_block());
        let wt = if b.func.dfg.value_type(wt) == types::I32 { wt } else { b.ins().ireduce(types::I32, wt) };
        let entries: Vec<_> =
            [varint, fixed64, len, group, other, fixed32].map(|blk| b.func.dfg.block_call(blk, &[])).into();
        let default = b.func.dfg.block_call(other, &[]);
        let jt = b.create_jump_table(JumpTableData::new(default, &entries));
        b.ins().br_table(wt, jt);

        // A fixed-width value: the next field starts `width` bytes on, if they are there.
        for (blk, width) in [(fixed64, 8), (fixed32, 4)] {
            b.switch_to_block(blk);
            let after = b.ins().iadd_imm_s(q, width);
            let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, after, end);
            b.ins().brif(fits, next, &[BlockArg::Value(after)], other, &[]);
        }

        // A varint: the next field starts after it.
        b.switch_to_block(varint);
        b.append_block_param(read, types::I64); // the value, unused
        let after = b.append_block_param(read, ptr);
        self.varint_or(q, end, read, other);
        self.b().switch_to_block(read);
        self.b().ins().jump(next, &[BlockArg::Value(after)]);

        // A length, then that many bytes, if they are there.
        self.b().switch_to_block(len);
        let n = self.b().append_block_param(counted, types::I64);
        let start = self.b().append_block_param(counted, ptr);
        self.varint_or(q, end, counted, other);
        let b = self.b();
        b.switch_to_block(counted);
        // `start <= end`; compare lengths, which cannot overflow.
        let room = b.ins().isub(end, start);
        let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, n, room);
        let stop = b.ins().iadd(start, n);
        b.ins().brif(fits, next, &[BlockArg::Value(stop)], other, &[]);
    }

    /// A varint at `q` before `end`, from the current block, to `join(value, position
    /// after)`: one byte inline, longer ones by the byte loop; cut by `end` or longer than
    /// ten bytes, to `other` (no arguments).
    fn varint_or(&mut self, q: Value, end: Value, join: Block, other: Block) {
        let b = self.b();
        let [first, long] = [(); 2].map(|_| b.create_block());
        let inside = b.ins().icmp(IntCC::UnsignedLessThan, q, end);
        b.ins().brif(inside, first, &[], other, &[]);
        b.switch_to_block(first);
        let b0 = b.ins().uload8(types::I64, input_flags(), q, 0);
        let q1 = b.ins().iadd_imm_s(q, 1);
        let last = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b0, 0x80);
        b.ins().brif(last, join, &[BlockArg::Value(b0), BlockArg::Value(q1)], long, &[]);
        b.switch_to_block(long);
        let zero = b.ins().iconst(types::I64, 0);
        self.varint_bytes([q, zero, zero], end, join, other);
    }

    /// `sint32` / `sint64` decoding of `v` (of either width).
    fn zigzag(&mut self, v: Value) -> Value {
        let b = self.b();
        let half = b.ins().ushr_imm_u(v, 1);
        let low = b.ins().band_imm_u(v, 1);
        let mask = b.ins().ineg(low);
        b.ins().bxor(half, mask)
    }

    /// Continues in a new block when the i32 `v` is a declared value of the closed enum in
    /// slot `si` of `layout` (consecutive values: one compare; others: a `Switch` over
    /// them), else jumps to `other` with `args`.
    fn declared(&mut self, layout: &MessageLayout, si: SlotIndex, v: Value, other: Block, args: &[BlockArg]) {
        let b = self.b();
        let declared = b.create_block();
        if let Some((lo, hi)) = layout.closed_enum_range(si) {
            let off = b.ins().iadd_imm_s(v, -(lo as i64));
            let span = (hi as i64 - lo as i64) as u32 as i64;
            let inside = b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, off, span);
            b.ins().brif(inside, declared, &[], other, args);
        } else {
            let miss = b.create_block();
            let mut switch = Switch::new();
            let values = layout.closed_enum_values(si);
            // Sorted; aliases repeat a number.
            for (i, &value) in values.iter().enumerate() {
                if i == 0 || values[i - 1] != value {
                    switch.set_entry(value as u32 as u128, declared);
                }
            }
            switch.emit(b, v, miss);
            b.switch_to_block(miss);
            b.ins().jump(other, args);
        }
        b.switch_to_block(declared);
    }

    /// Fails (the UTF-8 helper records it at `at`) unless the `len` bytes at `start` are
    /// UTF-8: short ASCII inline (`ascii_check`), the rest by the helper. Continues in a
    /// new block.
    fn utf8(&mut self, start: Value, len: Value, at: Value) {
        let ok = self.b().create_block();
        self.ascii_check(start, len, ok);
        let (_, utf8, _) = self.core();
        let ctx = self.ctx();
        let call = self.call(utf8, &[ctx, start, len, at]);
        let valid = self.b().inst_results(call)[0];
        let failed = self.failed();
        self.b().ins().brif(valid, ok, &[], failed, &[]);
        self.b().switch_to_block(ok);
    }

    /// Jumps to `ok` when the `len` bytes at `start` are short ASCII (at most 16 bytes,
    /// with 16 readable bytes before the end of the *input*, not just of this message, so
    /// a short string at the end of a submessage stays inline: two loads, masked to the
    /// string); otherwise continues in a new block, where the caller runs the full
    /// validator.
    fn ascii_check(&mut self, start: Value, len: Value, ok: Block) {
        let input_end = self.input_end();
        let b = self.b();
        let inline = b.create_block();
        let full = b.create_block();
        let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 16);
        let avail = b.ins().isub(input_end, start);
        let room = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, avail, 16);
        let both = b.ins().band(short, room);
        b.ins().brif(both, inline, &[], full, &[]);
        b.switch_to_block(inline);
        let w0 = b.ins().load(types::I64, input_flags(), start, 0);
        let w1 = b.ins().load(types::I64, input_flags(), start, 8);
        let all = b.ins().iconst(types::I64, -1);
        let zero = b.ins().iconst(types::I64, 0);
        let one = b.ins().iconst(types::I64, 1);
        // Bytes past the string may be anything: keep only the first `len` bytes.
        // m0 = len >= 8 ? all : (1 << 8 len) - 1
        let bits0 = b.ins().ishl_imm_u(len, 3);
        let low0 = b.ins().ishl(one, bits0);
        let low0 = b.ins().iadd_imm_s(low0, -1);
        let ge8 = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, 8);
        let m0 = b.ins().select(ge8, all, low0);
        // m1 = len >= 16 ? all : len > 8 ? (1 << 8 (len - 8)) - 1 : 0
        let rest = b.ins().iadd_imm_s(len, -8);
        let bits1 = b.ins().ishl_imm_u(rest, 3);
        let low1 = b.ins().ishl(one, bits1);
        let low1 = b.ins().iadd_imm_s(low1, -1);
        let ge16 = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, 16);
        let gt8 = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, len, 8);
        let m1 = b.ins().select(gt8, low1, zero);
        let m1 = b.ins().select(ge16, all, m1);
        let a = b.ins().band(w0, m0);
        let c = b.ins().band(w1, m1);
        let acc = b.ins().bor(a, c);
        let high = b.ins().band_imm_u(acc, 0x8080_8080_8080_8080u64 as i64);
        b.ins().brif(high, full, &[], ok, &[]);
        b.switch_to_block(full);
    }

    /// The hub's one-byte table: `byte` (an i32 below 0x80: fields 1..15) through a jump
    /// table over its field number, then its wire type compared in the field's own block;
    /// a hit jumps to its label (of `labels`, by tag) with `p1`, else to `miss`. A table
    /// over all 256 byte values would cost far more to compile than it saves: Cranelift
    /// splits every table edge into a block whose target has several in-edges.
    fn tag_table(&mut self, byte: Value, p1: Value, labels: &[(u32, Block)], miss: Block) {
        let b = self.b();
        let numbers = labels.iter().map(|t| t.0 >> 3).filter(|&n| n < 16).max().unwrap_or(0);
        let mut entries = Vec::with_capacity(numbers as usize + 1);
        let mut fields = Vec::new();
        for number in 0..=numbers {
            let tags: Vec<(u32, Block)> =
                labels.iter().filter(|t| t.0 >> 3 == number && number > 0).map(|t| (t.0 & 7, t.1)).collect();
            if tags.is_empty() {
                entries.push(b.func.dfg.block_call(miss, &[]));
            } else {
                let blk = b.create_block();
                entries.push(b.func.dfg.block_call(blk, &[]));
                fields.push((blk, tags));
            }
        }
        let default = b.func.dfg.block_call(miss, &[]);
        let number = b.ins().ushr_imm_u(byte, 3);
        let jt = b.create_jump_table(JumpTableData::new(default, &entries));
        b.ins().br_table(number, jt);
        for (blk, tags) in fields {
            b.switch_to_block(blk);
            let wt = b.ins().band_imm_u(byte, 7);
            let n = tags.len();
            for (i, (t, label)) in tags.into_iter().enumerate() {
                let hit = b.ins().icmp_imm_u(IntCC::Equal, wt, t as i64);
                let next = if i + 1 == n { miss } else { b.create_block() };
                b.ins().brif(hit, label, &[BlockArg::Value(p1)], next, &[]);
                if i + 1 < n {
                    b.switch_to_block(next);
                }
            }
        }
    }

    /// A whole tag `tag` looked up among `labels` by a `Switch` (jump tables over dense
    /// runs of tags, a binary search between them): a hit jumps to its label with `after`,
    /// else to `miss`.
    fn switch_tags(&mut self, tag: Value, labels: &[(u32, Block)], after: Value, miss: Block) {
        let b = self.b();
        let mut switch = Switch::new();
        let mut hits = Vec::with_capacity(labels.len());
        for &(t, label) in labels {
            let hit = b.create_block();
            switch.set_entry(t as u128, hit);
            hits.push((hit, label));
        }
        switch.emit(b, tag, miss);
        for (hit, label) in hits {
            b.switch_to_block(hit);
            b.ins().jump(label, &[BlockArg::Value(after)]);
        }
    }

    /// Threading: the tag at `p` (`p < end`; its first byte `byte`, an i32) compared with
    /// the tags `expected` after a field, one- and two-byte ones, a hit jumping straight to
    /// its label with the position after the tag; a miss goes to `table(p, byte)`.
    fn expect_tags(&mut self, p: Value, end: Value, byte: Value, expected: &[(u32, Block)], table: Block) {
        let b = self.b();
        let p1 = b.ins().iadd_imm_s(p, 1);
        let mut two_byte = Vec::new();
        for &(tag, label) in expected {
            if tag >= 0x4000 {
                continue;
            }
            if tag >= 0x80 {
                // Two bytes on the wire: low 7 bits with the continuation bit, then the rest.
                two_byte.push(((tag & 0x7f) | 0x80 | ((tag >> 7) << 8), label));
                continue;
            }
            let hit = b.ins().icmp_imm_u(IntCC::Equal, byte, tag as i64);
            let miss = b.create_block();
            b.ins().brif(hit, label, &[BlockArg::Value(p1)], miss, &[]);
            b.switch_to_block(miss);
        }
        if !two_byte.is_empty() {
            let p2 = b.ins().iadd_imm_s(p, 2);
            let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, p2, end);
            let load = b.create_block();
            b.ins().brif(fits, load, &[], table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
            b.switch_to_block(load);
            let word = b.ins().uload16(types::I32, input_flags(), p, 0);
            for (encoded, label) in two_byte {
                let hit = b.ins().icmp_imm_u(IntCC::Equal, word, encoded as i64);
                let miss = b.create_block();
                b.ins().brif(hit, label, &[BlockArg::Value(p2)], miss, &[]);
                b.switch_to_block(miss);
            }
        }
        b.ins().jump(table, &[BlockArg::Value(p), BlockArg::Value(byte)]);
    }
}
