//! Lowering one message of a column plan to a function that appends its fields to column buffers, its wire reads the core's (`crate::wire`).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use protojit_arena::{DecodeErrorKind, FieldKind, Layouts, NO_INDEX};

use super::buffers::{
    self, foreach_append_helper, AppendCtx, COL_SIZE, CTX_COLS, CTX_END, CTX_SPACES, CTX_START, ITEMS, ITEMS_CAP,
    ITEMS_LEN, SPACE_CAPACITY, SPACE_ROWS, SPACE_SIZE, VALID, VALUES,
};
use super::plan::{ColumnPlan, PlanCell, PlanMessage, Shape};
use crate::wire::{helper_table, input_flags, Helper, Wire};

foreach_append_helper!(helper_table AppendHelpers, buffers;);

fn buffers() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Lowers one message of a plan, in the decoder's shape (`lower`): `next(p)`: at the end,
/// return `p`, else `table(p, byte)`, which sends the tag to its field's label (the core's
/// jump table over one-byte tags' field numbers, a `Switch` over longer tags); a label
/// reads the value, writes the cell, then *threads*: compares the next byte with the tag
/// expected next and jumps straight to its label, or on a miss to the table. Tags the
/// plan does not read are skipped by their wire type (groups to their end tags; wire
/// types 4, 6, 7 decline).
pub(super) struct Lower<'a, 'b, 'f> {
    b: &'f mut FunctionBuilder<'b>,
    ptr: Type,
    layouts: &'a Layouts,
    msg: &'a PlanMessage,
    shape: &'a Shape,
    /// The message's index in the plan.
    index: usize,
    children: Vec<FuncRef>,
    helpers: AppendHelpers,
    varint_out: StackSlot,
    /// The plan's depth limit, which the groups it skips count toward.
    max_depth: u32,
    /// Every label: its tag, its block (the value's position as parameter), what it does.
    tags: Vec<(u32, Block, Target)>,
    ctx: Value,
    /// The context's column pointers (`AppendCtx::cols`), loaded once; its row spaces,
    /// where the message has a list of messages.
    cols: Value,
    spaces: Option<Value>,
    /// The record's first byte and its end (`AppendCtx::start`, `end`), where the
    /// message's fields read them; else loaded where they are.
    input: Option<[Value; 2]>,
    end: Value,
    row: Value,
    /// `next(p)`: the loop head.
    next: Block,
    /// `done(p)`: the message's end: its lists' cells, then return `p`.
    done: Block,
    /// `ended(p)`: the input ends at `p`: for a message, `done(p)`; for a group, decline
    /// (its end tag is missing).
    ended: Block,
    /// `table(p, b0)`: dispatch the tag at `p`, whose first byte is `b0` (an i32).
    table: Block,
    /// Return null: decline the record.
    decline: Block,
}

/// What a label does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Reads plan field `k`'s value (its packed form when the flag is set).
    Field(usize, bool),
    /// A member of oneof `o` the plan does not read: it clears the members the plan reads
    /// from the row, then is skipped (a `string` checked for UTF-8 first, when the flag is
    /// set: the tree decodes it).
    Clear(u32, bool),
    /// The end tag of the group this message is read as.
    GroupEnd,
}

impl Target {
    fn packed(self) -> bool {
        matches!(self, Target::Field(_, true))
    }
}

/// The appenders' side of the wire core: failing declines the record.
impl<'b> Wire<'b> for Lower<'_, 'b, '_> {
    fn b(&mut self) -> &mut FunctionBuilder<'b> {
        self.b
    }

    fn ptr(&self) -> Type {
        self.ptr
    }

    fn ctx(&mut self) -> Value {
        self.ctx
    }

    fn input_start(&mut self) -> Value {
        match self.input {
            Some([start, _]) => start,
            None => self.b.ins().load(self.ptr, buffers(), self.ctx, CTX_START),
        }
    }

    fn input_end(&mut self) -> Value {
        match self.input {
            Some([_, end]) => end,
            None => self.b.ins().load(self.ptr, buffers(), self.ctx, CTX_END),
        }
    }

    fn core(&self) -> (Helper, Helper, StackSlot) {
        (self.helpers.varint, self.helpers.utf8, self.varint_out)
    }

    fn failed(&mut self) -> Block {
        self.decline
    }

    fn fail_if(&mut self, cond: Value, _: DecodeErrorKind, _: Value) {
        let ok = self.b.create_block();
        self.b.ins().brif(cond, self.decline, &[], ok, &[]);
        self.b.switch_to_block(ok);
    }
}

impl<'a, 'b, 'f> Lower<'a, 'b, 'f> {
    /// Starts the function of message `index` of `plan` in `b` (whose signature is the
    /// appenders'), calling the plan's other messages through `children`.
    pub(super) fn new(
        b: &'f mut FunctionBuilder<'b>,
        ptr: Type,
        layouts: &'a Layouts,
        plan: &'a ColumnPlan,
        shape: &'a Shape,
        index: usize,
        children: Vec<FuncRef>,
    ) -> Self {
        let helpers = AppendHelpers::import(b, ptr);
        let varint_out = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let [next, done, table, decline] = [(); 4].map(|_| b.create_block());
        b.append_block_param(next, ptr);
        b.append_block_param(done, ptr);
        b.append_block_param(table, ptr); // at the tag
        b.append_block_param(table, types::I32); // its first byte
        b.set_cold_block(decline);
        let ended = match shape.group_of_message[index] {
            None => done,
            Some(_) => {
                let truncated = b.create_block();
                b.append_block_param(truncated, ptr);
                b.set_cold_block(truncated);
                truncated
            }
        };
        // The column pointers' and row spaces' tables do not move while the code runs, nor
        // does the record: loaded once, those the message's fields use (a value kept in a
        // register or a stack slot through the function costs where it is not used).
        let msg = &plan.messages[index];
        let layout = layouts.get(msg.layout);
        let uses = |f: fn(PlanCell, FieldKind) -> bool| msg.fields.iter().any(|g| f(g.cell, layout.slot(g.slot).kind));
        let cols = b.ins().load(ptr, buffers(), params[0], CTX_COLS);
        let spaces = uses(|c, _| matches!(c, PlanCell::Messages(_)))
            .then(|| b.ins().load(ptr, buffers(), params[0], CTX_SPACES));
        // Strings and bytes (their spans, the UTF-8 check's reach) and 64-bit varints near
        // the input's end read the record's bounds.
        let input = uses(|c, k| {
            matches!(c, PlanCell::Bytes | PlanCell::Text | PlanCell::BytesList | PlanCell::Spans)
                || matches!(k, FieldKind::String | FieldKind::Int64 | FieldKind::Uint64 | FieldKind::Sint64)
        })
        .then(|| [CTX_START, CTX_END].map(|at| b.ins().load(ptr, buffers(), params[0], at)));
        b.ins().jump(next, &[BlockArg::Value(params[1])]);
        Lower {
            cols,
            spaces,
            input,
            b,
            ptr,
            layouts,
            msg,
            shape,
            index,
            children,
            helpers,
            varint_out,
            max_depth: plan.max_depth,
            tags: Vec::new(),
            ctx: params[0],
            end: params[2],
            row: params[3],
            next,
            done,
            ended,
            table,
            decline,
        }
    }

    /// Emits the whole function.
    pub(super) fn emit(mut self) {
        // One label per field and form, its value's position as parameter.
        let layout = self.layouts.get(self.msg.layout);
        for (k, f) in self.msg.fields.iter().enumerate() {
            let slot = layout.slot(f.slot);
            let single = self.b.create_block();
            self.b.append_block_param(single, self.ptr);
            self.tags.push((slot.tag(), single, Target::Field(k, false)));
            if matches!(f.cell, PlanCell::List | PlanCell::List32) && slot.kind.is_packable() {
                let packed = self.b.create_block();
                self.b.append_block_param(packed, self.ptr);
                self.tags.push((slot.number << 3 | 2, packed, Target::Field(k, true)));
            }
        }
        // A group's end tag: the message ends after it (another group's end tag is
        // malformed: the skip declines it).
        if let Some(number) = self.shape.group_of_message[self.index] {
            let end_tag = self.b.create_block();
            self.b.append_block_param(end_tag, self.ptr);
            self.tags.push((number << 3 | 4, end_tag, Target::GroupEnd));
        }
        // The members of the plan's oneofs that the plan does not read (a projection's).
        for (si, slot) in layout.slots().iter().enumerate() {
            let read = self.msg.fields.iter().any(|f| f.slot.index() == si);
            let oneof_read =
                self.msg.fields.iter().any(|f| slot.oneof != NO_INDEX && layout.slot(f.slot).oneof == slot.oneof);
            if !read && oneof_read {
                let clear = self.b.create_block();
                self.b.append_block_param(clear, self.ptr);
                let target = Target::Clear(slot.oneof, slot.kind == FieldKind::String);
                self.tags.push((slot.tag(), clear, target));
            }
        }

        self.emit_head(self.next, self.end, self.ended, self.table);
        self.b.switch_to_block(self.done);
        let p = self.b.block_params(self.done)[0];
        self.end_cells();
        self.b.ins().return_(&[p]);
        if self.ended != self.done {
            self.b.switch_to_block(self.ended);
            self.b.ins().jump(self.decline, &[]);
        }
        self.emit_table();
        for (tag, label, target) in self.tags.clone() {
            self.b.switch_to_block(label);
            let q = self.b.block_params(label)[0];
            match target {
                Target::Field(k, packed) => self.field(k, packed, q),
                Target::GroupEnd => {
                    self.b.ins().jump(self.done, &[BlockArg::Value(q)]);
                }
                Target::Clear(oneof, text) => {
                    self.clear_oneof(None, oneof);
                    if text {
                        let (start, stop) = self.read_length(q, self.end);
                        let len = self.b.ins().isub(stop, start);
                        self.utf8(start, len, q);
                        self.b.ins().jump(self.next, &[BlockArg::Value(stop)]);
                    } else {
                        let tag = self.b.ins().iconst(types::I64, tag as i64);
                        self.skip(tag, q);
                    }
                }
            }
        }
        self.b.switch_to_block(self.decline);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b.ins().return_(&[null]);
    }

    /// At the message's end: each list's cell at the row is where its items (or its
    /// elements' rows) end now, so a row's items are those between the previous row's end
    /// and its own. (A row the message is absent from has no cell: it ends where the row
    /// before it does.)
    fn end_cells(&mut self) {
        for (k, f) in self.msg.fields.iter().enumerate() {
            let end = match f.cell {
                PlanCell::List | PlanCell::List32 | PlanCell::BytesList | PlanCell::Spans => {
                    let col = self.col(k);
                    self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN)
                }
                PlanCell::Messages(j) => {
                    let space = self.space(j);
                    self.b.ins().load(types::I64, buffers(), space, SPACE_ROWS)
                }
                _ => continue,
            };
            self.put(k, end);
        }
    }

    /// `offset | len << 32` of the bytes `start..stop`, the offset from the record's start.
    fn span_cell(&mut self, start: Value, stop: Value) -> Value {
        let origin = self.input_start();
        let offset = self.b.ins().isub(start, origin);
        let len = self.b.ins().isub(stop, start);
        let len = self.b.ins().ishl_imm_u(len, 32);
        self.b.ins().bor(offset, len)
    }

    /// The length-delimited value at `q` as a cell (`span_cell`), checked for UTF-8 when
    /// it is a `string`; and the position after it.
    fn text(&mut self, kind: FieldKind, q: Value) -> (Value, Value) {
        let (start, stop) = self.read_length(q, self.end);
        let cell = self.span_cell(start, stop);
        if kind == FieldKind::String {
            let len = self.b.ins().isub(stop, start);
            self.utf8(start, len, q);
        }
        (cell, stop)
    }

    /// Where plan message `j`'s value at `q` lies: a length-delimited message's span, or
    /// for a group, from `q` to the end of the input (it ends at its end tag).
    fn child_span(&mut self, j: usize, q: Value) -> (Value, Value) {
        match self.shape.group_of_message[j] {
            None => self.read_length(q, self.end),
            Some(_) => (q, self.end),
        }
    }

    /// The position after plan message `j`, whose function returned `r` for input ending
    /// at `stop`: a message must have read to `stop`, a group past its end tag (not
    /// null); else the record is declined.
    fn child_end(&mut self, j: usize, r: Value, stop: Value) -> Value {
        match self.shape.group_of_message[j] {
            None => {
                let whole = self.b.ins().icmp(IntCC::Equal, r, stop);
                self.check(whole);
                stop
            }
            Some(_) => {
                self.check(r);
                r
            }
        }
    }

    /// The address of the row space of plan message `j`.
    fn space(&mut self, j: usize) -> Value {
        let spaces = match self.spaces {
            Some(spaces) => spaces,
            None => self.b.ins().load(self.ptr, buffers(), self.ctx, CTX_SPACES),
        };
        self.b.ins().iadd_imm_s(spaces, self.shape.space_of_message[j] as i64 * SPACE_SIZE)
    }

    /// `table(p, b0)`: where the tag at `p` (first byte `b0`) goes. A one-byte tag (fields
    /// 1..15) through the core's jump table; a longer one read whole and looked up by a
    /// `Switch` (which also finds a one-byte tag written in more bytes than it needs).
    /// Tags of no label go to the skip.
    fn emit_table(&mut self) {
        self.b.switch_to_block(self.table);
        let p = self.b.block_params(self.table)[0];
        let b0 = self.b.block_params(self.table)[1];
        let unknown = self.b.create_block();
        self.b.append_block_param(unknown, types::I64); // the tag
        self.b.append_block_param(unknown, self.ptr); // after it
        let [one, long, miss, long_miss] = [(); 4].map(|_| self.b.create_block());
        let high = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, b0, 0x80);
        self.b.ins().brif(high, long, &[], one, &[]);

        self.b.switch_to_block(one);
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let labels: Vec<(u32, Block)> = self.tags.iter().map(|t| (t.0, t.1)).collect();
        self.tag_table(b0, p1, &labels, miss);
        self.b.switch_to_block(miss);
        let tag = self.b.ins().uextend(types::I64, b0);
        self.b.ins().jump(unknown, &[BlockArg::Value(tag), BlockArg::Value(p1)]);

        self.b.switch_to_block(long);
        // Three-byte tags (fields past 2047) are rare: out of line.
        let (tag, after) = self.read_varint(p, self.end, false);
        // Tags are 32-bit, and of five bytes at most (as protobuf's parsers read them: a
        // padded one-byte tag too): a longer one is malformed.
        let big = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, tag, u32::MAX as i64);
        let len = self.b.ins().isub(after, p);
        let long_tag = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, len, 5);
        let bad = self.b.ins().bor(big, long_tag);
        self.fail_if(bad, DecodeErrorKind::TagTooLong, p);
        self.switch_tags(tag, &labels, after, long_miss);
        self.b.switch_to_block(long_miss);
        self.b.ins().jump(unknown, &[BlockArg::Value(tag), BlockArg::Value(after)]);

        self.b.switch_to_block(unknown);
        let tag = self.b.block_params(unknown)[0];
        let q = self.b.block_params(unknown)[1];
        self.skip(tag, q);
    }

    /// After field `k`'s value, at `p`: fields are mostly written in number order, so the
    /// tags expected next (the same field again for an unpacked list, then the plan's next
    /// three fields by number) are compared first (`Wire::expect_tags`).
    fn thread(&mut self, k: usize, p: Value) {
        let layout = self.layouts.get(self.msg.layout);
        let number = layout.slot(self.msg.fields[k].slot).number;
        let mut expected: Vec<(u32, Block)> = Vec::new();
        let own = self.tags.iter().filter(|t| matches!(t.2, Target::Field(j, _) if j == k));
        if matches!(
            self.msg.fields[k].cell,
            PlanCell::List | PlanCell::List32 | PlanCell::BytesList | PlanCell::Messages(_) | PlanCell::Spans
        ) {
            // The same list again: its unpacked tag (a packed run is usually whole).
            expected.extend(own.filter(|t| !t.2.packed()).map(|t| (t.0, t.1)));
        }
        // The next three numbers of the plan (fields are often absent: the next present
        // one is one of the next few), packed first: what proto3 encoders write for a
        // packable list.
        let mut after: Vec<_> = self.tags.iter().filter(|t| t.0 >> 3 > number).collect();
        after.sort_by_key(|t| (t.0 >> 3, !t.2.packed()));
        let mut numbers = 0;
        for (i, t) in after.iter().enumerate() {
            if i == 0 || t.0 >> 3 != after[i - 1].0 >> 3 {
                numbers += 1;
                if numbers > 3 {
                    break;
                }
            }
            expected.push((t.0, t.1));
        }
        let byte = self.peek(p, self.end, self.ended);
        self.expect_tags(p, self.end, byte, &expected, self.table);
    }

    /// One value of `kind` at `p` (before `end`) of field `k`: its cell (a fixed-width
    /// value's bits, a varint as read, zigzag decoded for `sint32`/`sint64`, a closed
    /// enum's undeclared value declined: it is an unknown field, the tree's) and the
    /// position after it.
    fn number(&mut self, kind: FieldKind, k: usize, p: Value, end: Value, packed: bool) -> (Value, Value) {
        let (v, next) = match kind.fixed_width() {
            // In a packed run's loop, the loop's values keep their registers (the loop's
            // head has checked that `p` is before `end`, the run's end).
            0 if packed => self.read_varint_compact(p, end),
            0 if matches!(kind, FieldKind::Int64 | FieldKind::Uint64 | FieldKind::Sint64) => {
                self.read_varint_wide(p, end)
            }
            // Enums and bools rarely take three bytes: those go out of line.
            0 => self.read_varint(p, end, !matches!(kind, FieldKind::Enum | FieldKind::Bool)),
            4 => {
                let (v, next) = self.read_fixed(4, p, end);
                (self.b.ins().uextend(types::I64, v), next)
            }
            w => self.read_fixed(w, p, end),
        };
        let layout = self.layouts.get(self.msg.layout);
        let si = self.msg.fields[k].slot;
        let v = match kind {
            FieldKind::Sint32 => {
                let x = self.b.ins().ireduce(types::I32, v);
                let z = self.zigzag(x);
                self.b.ins().uextend(types::I64, z)
            }
            FieldKind::Sint64 => self.zigzag(v),
            FieldKind::Enum if layout.slot(si).closed_enum => {
                let x = self.b.ins().ireduce(types::I32, v);
                self.declared(layout, si, x, self.decline, &[]);
                v
            }
            _ => v,
        };
        (v, next)
    }

    /// The block of field `k` (its tag read; the value at `q`), ending with a jump to the
    /// loop head.
    fn field(&mut self, k: usize, packed: bool, q: Value) {
        let f = self.msg.fields[k];
        let slot = self.layouts.get(self.msg.layout).slot(f.slot);
        let kind = slot.kind;
        if slot.oneof != NO_INDEX {
            self.clear_oneof(Some(k), slot.oneof);
        }
        let after = match f.cell {
            PlanCell::Number => {
                let (v, next) = self.number(kind, k, q, self.end, false);
                self.put(k, v);
                next
            }
            PlanCell::Bytes => {
                let (cell, stop) = self.text(kind, q);
                self.put(k, cell);
                stop
            }
            PlanCell::Text => {
                let (start, stop) = self.read_length(q, self.end);
                let len = self.b.ins().isub(stop, start);
                if kind == FieldKind::String {
                    self.utf8(start, len, q);
                }
                self.copy_text(k, start, len);
                stop
            }
            PlanCell::Message(j) => {
                let (start, stop) = self.child_span(j, q);
                let col = self.col(k);
                self.present(col);
                let call = self.b.ins().call(self.children[j], &[self.ctx, start, stop, self.row]);
                let r = self.b.inst_results(call)[0];
                self.child_end(j, r, stop)
            }
            PlanCell::Messages(j) => {
                // The element is the next row of its space: room for it first (doubling
                // the space's columns through `pa_grow`), the row counted, then its
                // fields.
                let (start, stop) = self.child_span(j, q);
                let space = self.space(j);
                let row = self.b.ins().load(types::I64, buffers(), space, SPACE_ROWS);
                let capacity = self.b.ins().load(types::I64, buffers(), space, SPACE_CAPACITY);
                let full = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, row, capacity);
                self.make_room(full, |l| {
                    let index = l.b.ins().iconst(types::I64, l.shape.space_of_message[j] as i64);
                    l.call(l.helpers.grow, &[l.ctx, index])
                });
                // Counted before its fields are read: a record declined inside the
                // element must find the row among those it wrote (and rewind it).
                let next = self.b.ins().iadd_imm_s(row, 1);
                self.b.ins().store(buffers(), next, space, SPACE_ROWS);
                let call = self.b.ins().call(self.children[j], &[self.ctx, start, stop, row]);
                let r = self.b.inst_results(call)[0];
                self.child_end(j, r, stop)
            }
            PlanCell::Spans if kind == FieldKind::Group => {
                let number = self.b.ins().iconst(types::I64, slot.number as i64);
                let after = self.skip_group(number, q);
                let cell = self.span_cell(q, after);
                self.push(k, cell);
                after
            }
            PlanCell::BytesList | PlanCell::Spans => {
                let (cell, stop) = self.text(kind, q);
                self.push(k, cell);
                stop
            }
            PlanCell::List | PlanCell::List32 if !packed => {
                let (v, next) = self.number(kind, k, q, self.end, false);
                self.push(k, v);
                next
            }
            PlanCell::List | PlanCell::List32 => {
                // A packed run: the items' address and count in registers for the run,
                // the count stored back once at its end.
                let (start, stop) = self.read_length(q, self.end);
                let col = self.col(k);
                let items = self.b.ins().load(self.ptr, buffers(), col, ITEMS);
                let len0 = self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN);
                let run = self.b.create_block();
                let p = self.b.append_block_param(run, self.ptr);
                let len = self.b.append_block_param(run, types::I64);
                self.b.ins().jump(run, &[BlockArg::Value(start), BlockArg::Value(len0)]);
                self.b.switch_to_block(run);
                let over = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, stop);
                let item = self.b.create_block();
                let after = self.b.create_block();
                self.b.ins().brif(over, after, &[], item, &[]);
                self.b.switch_to_block(item);
                let (v, next) = self.number(kind, k, p, stop, true);
                self.store_item(f.cell, items, len, v);
                let len1 = self.b.ins().iadd_imm_s(len, 1);
                self.b.ins().jump(run, &[BlockArg::Value(next), BlockArg::Value(len1)]);
                self.b.switch_to_block(after);
                // (A declined record leaves `items_len` as it was: the run's items are
                // past the vector's length, never taken.)
                self.b.ins().store(buffers(), len, col, ITEMS_LEN);
                // A run's last value must end exactly at its end (`number` never reads
                // past `stop`, so `p == stop` here).
                stop
            }
        };
        self.thread(k, after);
    }

    /// A member of oneof `oneof` is being set (plan field `k`, or one the plan does not
    /// read): the other members leave the row (their presence bytes cleared). A message
    /// member already in the row declines the record instead: its fields' columns would
    /// have to leave the row too, which the tree does.
    fn clear_oneof(&mut self, k: Option<usize>, oneof: u32) {
        let layout = self.layouts.get(self.msg.layout);
        let siblings: Vec<(usize, bool)> = (self.msg.fields.iter().enumerate())
            .filter(|&(j, g)| Some(j) != k && layout.slot(g.slot).oneof == oneof)
            .map(|(j, g)| (j, matches!(g.cell, PlanCell::Message(_))))
            .collect();
        for (j, message) in siblings {
            let col = self.col(j);
            let valid = self.b.ins().load(self.ptr, buffers(), col, VALID);
            let at = self.b.ins().iadd(valid, self.row);
            if message {
                let set = self.b.ins().uload8(types::I32, buffers(), at, 0);
                self.fail_if(set, DecodeErrorKind::Internal, at);
            } else {
                let zero = self.b.ins().iconst(types::I8, 0);
                self.b.ins().store(buffers(), zero, at, 0);
            }
        }
    }

    /// The position after the group (field `number`) whose start tag ended at `q`, past
    /// its end tag, as `pa_skip_group` finds it; a malformed one declines.
    fn skip_group(&mut self, number: Value, q: Value) -> Value {
        let depth = self.b.ins().iconst(types::I64, self.shape.depth_of_message[self.index] as i64);
        let max_depth = self.b.ins().iconst(types::I64, self.max_depth as i64);
        let call = self.call(self.helpers.skip_group, &[q, self.end, number, depth, max_depth]);
        let after = self.b.inst_results(call)[0];
        self.check(after);
        after
    }

    /// Skips a field the plan does not read (tag `tag`, an i64, value at `q`) by its wire
    /// type (`Wire::skip_value`), a group to its end tag (`skip_group`); wire types 4, 6
    /// and 7 and anything malformed decline.
    fn skip(&mut self, tag: Value, q: Value) {
        // Field number 0 is malformed.
        let number = self.b.ins().ushr_imm_u(tag, 3);
        let zero = self.b.ins().icmp_imm_u(IntCC::Equal, number, 0);
        self.fail_if(zero, DecodeErrorKind::FieldNumberZero, q);
        let wt = self.b.ins().band_imm_u(tag, 7);
        let group = self.b.create_block();
        self.b.set_cold_block(group);
        self.skip_value(wt, q, self.end, self.next, group, self.decline);
        self.b.switch_to_block(group);
        let after = self.skip_group(number, q);
        self.b.ins().jump(self.next, &[BlockArg::Value(after)]);
    }

    /// The column pointers of field `k` of this message.
    fn col(&mut self, k: usize) -> Value {
        let first = self.shape.first_col[self.index];
        self.b.ins().iadd_imm_s(self.cols, (first + k) as i64 * COL_SIZE)
    }

    /// Writes item `len` of a list whose items are at `items`: 8 bytes, or its low 4 for a
    /// [`PlanCell::List32`].
    fn store_item(&mut self, cell: PlanCell, items: Value, len: Value, v: Value) {
        if cell == PlanCell::List32 {
            let at = self.b.ins().ishl_imm_u(len, 2);
            let item = self.b.ins().iadd(items, at);
            let v = self.b.ins().ireduce(types::I32, v);
            self.b.ins().store(buffers(), v, item, 0);
        } else {
            let at = self.b.ins().ishl_imm_u(len, 3);
            let item = self.b.ins().iadd(items, at);
            self.b.ins().store(buffers(), v, item, 0);
        }
    }

    /// Writes cell `v` and the presence byte of field `k` at the row.
    fn put(&mut self, k: usize, v: Value) {
        let col = self.col(k);
        let values = self.b.ins().load(self.ptr, buffers(), col, VALUES);
        let at = self.b.ins().ishl_imm_u(self.row, 3);
        let cell = self.b.ins().iadd(values, at);
        self.b.ins().store(buffers(), v, cell, 0);
        self.present(col);
    }

    fn present(&mut self, col: Value) {
        let valid = self.b.ins().load(self.ptr, buffers(), col, VALID);
        let at = self.b.ins().iadd(valid, self.row);
        let one = self.b.ins().iconst(types::I8, 1);
        self.b.ins().store(buffers(), one, at, 0);
    }

    /// Writes the `len` bytes at `start` (in the record) as field `k`'s value at the row
    /// ([`PlanCell::Text`]): copied to the end of the column's text, or, where the row has
    /// a value already (met again), over it (the row's are the text's last bytes: rows are
    /// written in order, and a space's current row is its last); its cell is where they lie.
    fn copy_text(&mut self, k: usize, start: Value, len: Value) {
        let col = self.col(k);
        let valid = self.b.ins().load(self.ptr, buffers(), col, VALID);
        let at = self.b.ins().iadd(valid, self.row);
        let set = self.b.ins().uload8(types::I32, buffers(), at, 0);
        let again = self.b.create_block();
        self.b.set_cold_block(again);
        let fresh = self.b.create_block();
        let body = self.b.create_block();
        let from = self.b.append_block_param(body, types::I64);
        self.b.ins().brif(set, again, &[], fresh, &[]);
        // A first value: after the column's bytes.
        self.b.switch_to_block(fresh);
        let n = self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN);
        self.b.ins().jump(body, &[BlockArg::Value(n)]);
        // Met again: over the row's value, where its cell says.
        self.b.switch_to_block(again);
        let values = self.b.ins().load(self.ptr, buffers(), col, VALUES);
        let offset = self.b.ins().ishl_imm_u(self.row, 3);
        let cell_at = self.b.ins().iadd(values, offset);
        let cell = self.b.ins().load(types::I64, buffers(), cell_at, 0);
        let before = self.b.ins().band_imm_u(cell, 0xffff_ffff);
        self.b.ins().jump(body, &[BlockArg::Value(before)]);
        self.b.switch_to_block(body);
        // Room for the value and `COPY_SLACK` bytes past it (a short value is copied as
        // 16 bytes).
        const _: () = assert!(buffers::COPY_SLACK == 16);
        let need = self.b.ins().iadd(from, len);
        let need = self.b.ins().iadd_imm_s(need, 16);
        let cap = self.b.ins().load(types::I64, buffers(), col, ITEMS_CAP);
        let over = self.b.ins().icmp(IntCC::UnsignedGreaterThan, need, cap);
        self.make_room(over, |l| {
            let index = l.b.ins().iconst(types::I64, (l.shape.first_col[l.index] + k) as i64);
            let written = l.b.ins().load(types::I64, buffers(), col, ITEMS_LEN);
            l.call(l.helpers.text_room, &[l.ctx, index, written, need])
        });
        let text = self.b.ins().load(self.ptr, buffers(), col, ITEMS);
        let dst = self.b.ins().iadd(text, from);
        // A short value with 16 readable bytes before the input's end: two words copied.
        let input_end = self.input_end();
        let avail = self.b.ins().isub(input_end, start);
        let readable = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, avail, 16);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThanOrEqual, len, 16);
        let both = self.b.ins().band(short, readable);
        let inline = self.b.create_block();
        let long = self.b.create_block();
        let copied = self.b.create_block();
        self.b.ins().brif(both, inline, &[], long, &[]);
        self.b.switch_to_block(inline);
        let w0 = self.b.ins().load(types::I64, input_flags(), start, 0);
        let w1 = self.b.ins().load(types::I64, input_flags(), start, 8);
        self.b.ins().store(buffers(), w0, dst, 0);
        self.b.ins().store(buffers(), w1, dst, 8);
        self.b.ins().jump(copied, &[]);
        self.b.switch_to_block(long);
        self.call(self.helpers.copy, &[dst, start, len]);
        self.b.ins().jump(copied, &[]);
        self.b.switch_to_block(copied);
        let end = self.b.ins().iadd(from, len);
        self.b.ins().store(buffers(), end, col, ITEMS_LEN);
        let span = self.b.ins().ishl_imm_u(len, 32);
        let cell = self.b.ins().bor(from, span);
        let values = self.b.ins().load(self.ptr, buffers(), col, VALUES);
        let offset = self.b.ins().ishl_imm_u(self.row, 3);
        let cell_at = self.b.ins().iadd(values, offset);
        self.b.ins().store(buffers(), cell, cell_at, 0);
        let one = self.b.ins().iconst(types::I8, 1);
        self.b.ins().store(buffers(), one, at, 0);
    }

    /// Continues in a new block; where `short` is set, first through a cold block where
    /// `grow` calls a helper that makes room: 1, or 0 to decline the record.
    fn make_room(&mut self, short: Value, grow: impl FnOnce(&mut Self) -> cranelift_codegen::ir::Inst) {
        let cold = self.b.create_block();
        self.b.set_cold_block(cold);
        let room = self.b.create_block();
        self.b.ins().brif(short, cold, &[], room, &[]);
        self.b.switch_to_block(cold);
        let call = grow(self);
        let grown = self.b.inst_results(call)[0];
        self.b.ins().brif(grown, room, &[], self.decline, &[]);
        self.b.switch_to_block(room);
    }

    /// Appends item `v` to list field `k`.
    fn push(&mut self, k: usize, v: Value) {
        let col = self.col(k);
        let items = self.b.ins().load(self.ptr, buffers(), col, ITEMS);
        let len = self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN);
        self.store_item(self.msg.fields[k].cell, items, len, v);
        let len = self.b.ins().iadd_imm_s(len, 1);
        self.b.ins().store(buffers(), len, col, ITEMS_LEN);
    }
}
