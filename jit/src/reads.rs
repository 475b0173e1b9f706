//! IR that reads the wire for the column appenders: varints, length prefixes and number values.
//!
//! Each read takes a `fail` block to jump to when the input is malformed (cut short, a
//! varint longer than ten bytes, a length past `end`); what failing means is the caller's
//! (the appender declines the record).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, InstBuilder, MemFlagsData, SigRef, Signature, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use protojit_arena::FieldKind;

/// Reads the varint at `p` (before `end`) into `*out`; the position after it, or null if
/// it is malformed. Called by compiled code for varints its inline reads leave.
///
/// # Safety
/// `p..end` is readable and `out` writable.
pub(crate) unsafe extern "C" fn pa_varint(p: *const u8, end: *const u8, out: *mut u64) -> *const u8 {
    // SAFETY: the caller passes a range of the input it reads.
    let buf = unsafe { std::slice::from_raw_parts(p, end.offset_from(p) as usize) };
    match protojit_arena::wire::read_varint(buf, 0) {
        Ok((v, n)) => {
            // SAFETY: the caller passes a writable cell.
            unsafe { out.write(v) };
            // SAFETY: `n <= buf.len()`.
            unsafe { p.add(n) }
        }
        Err(_) => std::ptr::null(),
    }
}

/// Loads from the input: never traps (every read is bounds-checked first), never written.
pub(crate) fn input() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_readonly()
}

/// What a function's wire reads share: the `pa_varint` signature and the stack cell it
/// writes its value to.
#[derive(Clone, Copy)]
pub(crate) struct WireReads {
    ptr: Type,
    varint_sig: SigRef,
    varint_out: StackSlot,
}

impl WireReads {
    /// The reads of the function `b` builds.
    pub(crate) fn new(b: &mut FunctionBuilder<'_>, ptr: Type, cc: cranelift_codegen::isa::CallConv) -> WireReads {
        let mut s = Signature::new(cc);
        s.params.extend([AbiParam::new(ptr), AbiParam::new(ptr), AbiParam::new(ptr)]);
        s.returns.push(AbiParam::new(ptr));
        let varint_sig = b.import_signature(s);
        let varint_out = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        WireReads { ptr, varint_sig, varint_out }
    }

    /// Calls `pa_varint` at `p`: the value and the position after it (`fail` when null).
    pub(crate) fn varint_call(&self, b: &mut FunctionBuilder<'_>, p: Value, end: Value, fail: Block) -> (Value, Value) {
        let out = b.ins().stack_addr(self.ptr, self.varint_out, 0);
        let f = b.ins().iconst(self.ptr, pa_varint as *const () as usize as i64);
        let call = b.ins().call_indirect(self.varint_sig, f, &[p, end, out]);
        let after = b.inst_results(call)[0];
        let ok = b.create_block();
        b.ins().brif(after, ok, &[], fail, &[]);
        b.switch_to_block(ok);
        let v = b.ins().stack_load(types::I64, self.ptr, self.varint_out, 0);
        (v, after)
    }

    /// A varint at `p` (before `end`): one and two bytes inline, then a compact loop over
    /// the next bytes (all ten read as the interpreter reads them: a tenth byte's bits past
    /// 64 are dropped); varints cut short or longer than ten bytes through `pa_varint`,
    /// which says they are malformed. Continues in a new block with the value and the
    /// position after it. Unrolling all ten bytes would make every field's code several
    /// times longer for values that are rarely more than two bytes.
    pub(crate) fn varint(&self, b: &mut FunctionBuilder<'_>, p: Value, end: Value, fail: Block) -> (Value, Value) {
        let there = b.ins().icmp(IntCC::UnsignedLessThan, p, end);
        let read = b.create_block();
        b.ins().brif(there, read, &[], fail, &[]);
        b.switch_to_block(read);
        let b0 = b.ins().uload8(types::I64, input(), p, 0);
        let got = b.create_block();
        b.append_block_param(got, types::I64);
        b.append_block_param(got, self.ptr);
        let second = b.create_block();
        let p1 = b.ins().iadd_imm_s(p, 1);
        let short = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b0, 0x80);
        b.ins().brif(short, got, &[BlockArg::Value(b0), BlockArg::Value(p1)], second, &[]);

        b.switch_to_block(second);
        let call = b.create_block();
        b.set_cold_block(call);
        let there = b.ins().icmp(IntCC::UnsignedLessThan, p1, end);
        let read = b.create_block();
        b.ins().brif(there, read, &[], call, &[]);
        b.switch_to_block(read);
        let b1 = b.ins().uload8(types::I64, input(), p, 1);
        let lo = b.ins().band_imm_u(b0, 0x7f);
        let hi = b.ins().band_imm_u(b1, 0x7f);
        let hi = b.ins().ishl_imm_u(hi, 7);
        let acc = b.ins().bor(lo, hi);
        let p2 = b.ins().iadd_imm_s(p, 2);
        let last = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b1, 0x80);
        let more = b.create_block();
        b.append_block_param(more, types::I64); // the value so far
        b.append_block_param(more, self.ptr); // the next byte
        b.append_block_param(more, types::I64); // its shift
        let fourteen = b.ins().iconst(types::I64, 14);
        b.ins().brif(
            last,
            got,
            &[BlockArg::Value(acc), BlockArg::Value(p2)],
            more,
            &[BlockArg::Value(acc), BlockArg::Value(p2), BlockArg::Value(fourteen)],
        );

        // more(acc, q, shift): bytes three to ten.
        b.switch_to_block(more);
        let (acc, q, shift) = {
            let ps = b.block_params(more);
            (ps[0], ps[1], ps[2])
        };
        let there = b.ins().icmp(IntCC::UnsignedLessThan, q, end);
        let within = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, shift, 70);
        let ok = b.ins().band(there, within);
        let byte = b.create_block();
        b.ins().brif(ok, byte, &[], call, &[]);
        b.switch_to_block(byte);
        let x = b.ins().uload8(types::I64, input(), q, 0);
        let bits = b.ins().band_imm_u(x, 0x7f);
        let bits = b.ins().ishl(bits, shift);
        let acc = b.ins().bor(acc, bits);
        let q1 = b.ins().iadd_imm_s(q, 1);
        let shift = b.ins().iadd_imm_s(shift, 7);
        let last = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, x, 0x80);
        b.ins().brif(
            last,
            got,
            &[BlockArg::Value(acc), BlockArg::Value(q1)],
            more,
            &[BlockArg::Value(acc), BlockArg::Value(q1), BlockArg::Value(shift)],
        );

        b.switch_to_block(call);
        let (v, after) = self.varint_call(b, p, end, fail);
        b.ins().jump(got, &[BlockArg::Value(v), BlockArg::Value(after)]);
        b.switch_to_block(got);
        let params = b.block_params(got);
        (params[0], params[1])
    }

    /// A length prefix at `p`: where the bytes start and end (`fail` unless they lie
    /// before `end`).
    pub(crate) fn span(&self, b: &mut FunctionBuilder<'_>, p: Value, end: Value, fail: Block) -> (Value, Value) {
        let (len, start) = self.varint(b, p, end, fail);
        let room = b.ins().isub(end, start);
        let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, len, room);
        let ok = b.create_block();
        b.ins().brif(fits, ok, &[], fail, &[]);
        b.switch_to_block(ok);
        let stop = b.ins().iadd(start, len);
        (start, stop)
    }

    /// One number of `kind` at `p` (before `end`): its bits (a fixed-width value's as
    /// loaded, a varint's as read, `sint32`/`sint64` zigzag-decoded, a `sint32`'s in the
    /// low 32 bits) and the position after it.
    pub(crate) fn number(
        &self,
        b: &mut FunctionBuilder<'_>,
        kind: FieldKind,
        p: Value,
        end: Value,
        fail: Block,
    ) -> (Value, Value) {
        let width = match kind {
            FieldKind::Fixed32 | FieldKind::Sfixed32 | FieldKind::Float => 4,
            FieldKind::Fixed64 | FieldKind::Sfixed64 | FieldKind::Double => 8,
            _ => 0,
        };
        if width > 0 {
            let next = b.ins().iadd_imm_s(p, width);
            let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, next, end);
            let ok = b.create_block();
            b.ins().brif(fits, ok, &[], fail, &[]);
            b.switch_to_block(ok);
            let v = if width == 4 { b.ins().uload32(input(), p, 0) } else { b.ins().load(types::I64, input(), p, 0) };
            return (v, next);
        }
        let (v, next) = self.varint(b, p, end, fail);
        let v = match kind {
            FieldKind::Sint32 => {
                let x = b.ins().ireduce(types::I32, v);
                let half = b.ins().ushr_imm_u(x, 1);
                let low = b.ins().band_imm_u(x, 1);
                let sign = b.ins().ineg(low);
                let z = b.ins().bxor(half, sign);
                b.ins().uextend(types::I64, z)
            }
            FieldKind::Sint64 => {
                let half = b.ins().ushr_imm_u(v, 1);
                let low = b.ins().band_imm_u(v, 1);
                let sign = b.ins().ineg(low);
                b.ins().bxor(half, sign)
            }
            _ => v,
        };
        (v, next)
    }
}
