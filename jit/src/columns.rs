//! Compiled column appenders: a record read from the wire straight into column buffers, one row per record, with no tree.
//!
//! A [`ColumnPlan`] names the fields to read (a message type's fields, and those of the
//! messages, groups, list elements and map entries among them, each a column);
//! [`Appender::compile`] lowers it to one Cranelift function per message of the plan, and
//! [`Appender::append`] runs that code on a record, writing row `n` of a [`ChunkColumns`]:
//! a cell of eight bytes per column and row (the value's bits; for strings and bytes, where
//! they lie in the record), a presence byte per column and row, and the items of repeated
//! fields (numbers, and where strings and bytes lie). The elements of a list of messages
//! (or a map's entries) are rows of a row space of their own, which grows as they come.
//!
//! The code handles the shapes records usually have, and **declines** the rest: a
//! closed enum's undeclared value, a `string` that is not UTF-8, a known number with
//! another wire type inside a packed run's end, and anything malformed (unknown groups
//! are walked to their end tags by a helper, as the tree skips them). A declined record
//! leaves the buffers as they were; the caller reads it some other way (the tree), which also says
//! what is wrong with it. So the compiled code needs no error paths of its own, and its
//! semantics are checked against the tree's on every record it accepts.
//!
//! What accepted records mean, as the tree has it: a singular value met twice keeps the
//! last (the cell is written again); a message met twice is merged (its fields write the
//! same row); list items are appended in wire order, packed or not; a oneof member
//! clears the other members of its oneof from the row (a message member already there
//! declines the record: its fields would have to leave the row too); fields the plan does
//! not name (and numbers the message does not declare) are skipped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, InstBuilder, JumpTableData, MemFlagsData, SigRef, Signature, UserFuncName, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Switch};
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module};
use protojit_arena::wire::{skip_value, SGROUP};
use protojit_arena::{FieldKind, LayoutIndex, Layouts, Repetition, SlotIndex, MAX_DEPTH_LIMIT, NO_INDEX};

use crate::compile::{new_module, JitError};
use crate::options::CompileOptions;
use crate::reads::{input, WireReads};

/// Which fields of which messages an [`Appender`] reads. `messages[0]` is the record's
/// type; a [`PlanCell::Message`] field names a later entry (so a plan never recurses).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ColumnPlan {
    /// The messages, the root first.
    pub messages: Vec<PlanMessage>,
    /// The depth limit the records are read under (the decoder's
    /// [`max_depth`](protojit_arena::DecodeOptions::max_depth)): a group the code skips
    /// (unknown, or a [`PlanCell::Spans`] group) counts toward it as in the tree, so with 0
    /// every such group declines its record (above
    /// [`MAX_DEPTH_LIMIT`](protojit_arena::MAX_DEPTH_LIMIT), as that).
    pub max_depth: u32,
}

impl ColumnPlan {
    /// Whether [`Appender::compile`] reads every field of the plan (else why not), without
    /// compiling it: what a caller decides a path by before it starts a compiler.
    pub fn check(&self, layouts: &Layouts) -> Result<(), PlanError> {
        check_plan(layouts, self).map(|_| ())
    }
}

/// One message of a [`ColumnPlan`]: its layout and the fields read, each a column.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanMessage {
    /// The message type.
    pub layout: LayoutIndex,
    /// The fields read.
    pub fields: Vec<PlanField>,
}

/// A field of a [`PlanMessage`]: its slot and what its column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanField {
    /// The field's slot in the message's layout.
    pub slot: SlotIndex,
    /// What the column holds.
    pub cell: PlanCell,
}

/// What a column's cells hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlanCell {
    /// A singular number, bool or enum: the value's bits (zigzag decoded; a varint as read,
    /// so an `int32` is its low 32 bits, a `bool` is set when not 0).
    Number,
    /// A singular string or bytes field: `offset | len << 32` in the record. A `string`
    /// (every occurrence, also one a later one replaces) that is not UTF-8 declines the
    /// record.
    Bytes,
    /// A singular message: its presence; its fields are those of `messages[index]`.
    Message(usize),
    /// A repeated number, bool or enum: the items, as [`PlanCell::Number`]'s cells.
    List,
    /// A repeated string or bytes field: the items, as [`PlanCell::Bytes`]'s cells.
    BytesList,
    /// A repeated message, or a map (its entries, messages of a key and a value, in wire
    /// order, keys repeated as the wire repeats them): its elements are the rows of
    /// `messages[index]`'s columns, a row space of their own (growing as elements come);
    /// the column's cell at a row is where that row's elements end.
    Messages(usize),
    /// A message, group, map or `string` field the caller reads another way (a field
    /// without a column, which it must still check as the tree would): where each
    /// occurrence lies in the record, as [`PlanCell::BytesList`]'s items (a singular field
    /// met twice has two); a `string`'s checked for UTF-8 by the code, a message's unread;
    /// a group's from after its start tag to after its end tag, found by walking its tags
    /// (nested groups counted toward [`ColumnPlan::max_depth`]), its fields unread. A
    /// oneof member clears the others as any member does.
    Spans,
}

/// Why a plan cannot be compiled.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    /// The plan asks for a shape the compiled appenders do not read (the caller converts
    /// another way).
    #[error("{0}")]
    Unsupported(String),
    /// Code generation failed.
    #[error(transparent)]
    Jit(#[from] JitError),
}

/// Where one column's buffers are, as compiled code reads them. `repr(C)`: the code reads
/// the fields at their offsets.
#[repr(C)]
#[derive(Clone, Copy)]
struct ColPtrs {
    values: *mut u64,
    valid: *mut u8,
    items: *mut u64,
    items_len: u64,
}
const VALUES: i32 = std::mem::offset_of!(ColPtrs, values) as i32;
const VALID: i32 = std::mem::offset_of!(ColPtrs, valid) as i32;
const ITEMS: i32 = std::mem::offset_of!(ColPtrs, items) as i32;
const ITEMS_LEN: i32 = std::mem::offset_of!(ColPtrs, items_len) as i32;
const COL_SIZE: i64 = std::mem::size_of::<ColPtrs>() as i64;

/// A row space's rows so far and how many its columns hold. Space 0 is the records' (its
/// row comes with each call); the others are the elements of a list of messages.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SpaceRows {
    rows: u64,
    capacity: u64,
}
const SPACE_ROWS: i32 = std::mem::offset_of!(SpaceRows, rows) as i32;
const SPACE_CAPACITY: i32 = std::mem::offset_of!(SpaceRows, capacity) as i32;
const SPACE_SIZE: i64 = std::mem::size_of::<SpaceRows>() as i64;

/// What a compiled appender function runs with.
#[repr(C)]
struct AppendCtx {
    /// The columns, in plan order (every field of every message, messages in order).
    cols: *mut ColPtrs,
    /// The record's first byte (string cells are offsets from it).
    start: *const u8,
    /// The row spaces, by index.
    spaces: *mut SpaceRows,
    /// The columns being written, for `pa_grow`.
    chunk: *mut ChunkColumns,
}
const CTX_COLS: i32 = std::mem::offset_of!(AppendCtx, cols) as i32;
const CTX_START: i32 = std::mem::offset_of!(AppendCtx, start) as i32;
const CTX_SPACES: i32 = std::mem::offset_of!(AppendCtx, spaces) as i32;

/// Every message function: `(ctx, ptr, end, row) -> the position after the message`, or
/// null when the record is declined.
type AppendFn = unsafe extern "C" fn(*mut AppendCtx, *const u8, *const u8, u64) -> *const u8;

/// Whether `p..end` is UTF-8: 1, else 0. Called by compiled code for a `string` value with
/// a byte of 0x80 or more. Never panics.
///
/// # Safety
/// `p..end` is readable.
unsafe extern "C" fn pa_utf8(p: *const u8, end: *const u8) -> u64 {
    // SAFETY: the caller passes a range of the record it reads.
    let text = unsafe { std::slice::from_raw_parts(p, end.offset_from(p) as usize) };
    std::str::from_utf8(text).is_ok() as u64
}

/// Skips a group whose start tag (field `number`) ended at `p`, in a message at nesting
/// depth `depth` of records read under `max_depth`, as the tree skips an unknown group
/// (`wire::skip_value`): the position after its end tag, or null when it is malformed (the
/// record is declined). Called by compiled code. Never panics.
///
/// # Safety
/// `p..end` is readable (`p <= end`).
unsafe extern "C" fn pa_skip_group(p: *const u8, end: *const u8, number: u64, depth: u64, max_depth: u64) -> *const u8 {
    // SAFETY: the caller passes the rest of the input it reads.
    let rest = unsafe { std::slice::from_raw_parts(p, end.offset_from(p) as usize) };
    let (Ok(number), Ok(depth), Ok(max_depth)) =
        (u32::try_from(number), u32::try_from(depth), u32::try_from(max_depth))
    else {
        return std::ptr::null();
    };
    // The decoders' own ceiling: a plan's limit past it must not recurse deeper (the stack).
    let max_depth = max_depth.min(MAX_DEPTH_LIMIT);
    match skip_value(rest, 0, 0, rest.len(), number, SGROUP, depth, max_depth) {
        // SAFETY: `after <= rest.len()`: within the input.
        Ok(after) => unsafe { p.add(after) },
        Err(_) => std::ptr::null(),
    }
}

/// The most rows a space holds (its cells' offsets and ends are 32-bit); more declines.
const MAX_SPACE_ROWS: usize = 1 << 30;

/// Doubles the capacity of row space `space` (every column in it), re-pointing the code's
/// column pointers: 1, or 0 (the record is declined) past [`MAX_SPACE_ROWS`]. Called by
/// compiled code when a list of messages's next element would not fit. Never panics.
///
/// # Safety
/// `ctx` is the context of a running [`Appender::append`]: its `chunk`, `cols` and
/// `spaces` point to that call's buffers, which nothing else touches while the code runs.
unsafe extern "C" fn pa_grow(ctx: *mut AppendCtx, space: u64) -> u64 {
    // SAFETY: the caller's context (above); the raw pointers are the ones `append` derived
    // from its `&mut ChunkColumns`, and only the fields named below are borrowed.
    unsafe {
        let chunk = (*ctx).chunk;
        let space_cols = &(*chunk).space_cols;
        let Some(members) = space_cols.get(space as usize) else { return 0 };
        let rows = &mut *(*ctx).spaces.add(space as usize);
        let capacity = (rows.capacity as usize).saturating_mul(2).max(64);
        if capacity > MAX_SPACE_ROWS {
            return 0;
        }
        let cols = &mut (*chunk).cols;
        for &c in members {
            let Some(col) = cols.get_mut(c) else { return 0 };
            col.values.resize(capacity, 0);
            col.valid.resize(capacity, 0);
            let p = &mut *(*ctx).cols.add(c);
            p.values = col.values.as_mut_ptr();
            p.valid = col.valid.as_mut_ptr();
        }
        rows.capacity = capacity as u64;
        1
    }
}

/// The columns of one chunk of rows: what [`Appender::append`] writes and its caller
/// reads. Made by [`Appender::columns`] for that appender only.
///
/// Columns lie in row spaces: space 0 holds one row per record; the columns under a list
/// of messages hold one row per element, in a space of their own (see
/// [`PlanCell::Messages`]), which grows as elements come.
pub struct ChunkColumns {
    appender: u64,
    capacity: usize,
    rows: usize,
    cols: Vec<ChunkColumn>,
    /// Where each column's buffers are, for the code: re-pointed when a space grows (by
    /// `pa_grow`), list items before each record.
    ptrs: Vec<ColPtrs>,
    /// The columns with items (lists of numbers, strings, bytes).
    item_cols: Vec<usize>,
    /// Per row space: its rows so far (space 0's `rows` is unused: `self.rows` counts), the
    /// columns in it, and (spaces past 0) its rows at the end of each record so far.
    spaces: Vec<SpaceRows>,
    space_cols: Vec<Vec<usize>>,
    bounds: Vec<Vec<u32>>,
    /// The spaces' rows and the item columns' lengths before the last record appended.
    before: Before,
}

/// Where a chunk stood before a record: what a declined or dropped record is undone to.
#[derive(Default)]
struct Before {
    rows: Vec<u64>,
    items: Vec<usize>,
    /// Whether the last record was appended and not dropped since.
    undoable: bool,
}

/// One column of a [`ChunkColumns`].
struct ChunkColumn {
    /// One cell per row of its space. A cell means something only where the row's
    /// presence byte is set: cells are not cleared between chunks (that would cost a
    /// store per column and row for the rows where the field is absent).
    values: Vec<u64>,
    /// One presence byte per row (1 where the field was met).
    valid: Vec<u8>,
    /// Lists of numbers, strings and bytes: the items of every row so far.
    items: Vec<u64>,
    /// The row space it lies in.
    space: usize,
}

// SAFETY: the raw pointers in `ptrs` point into `cols`' own buffers, which move with them.
unsafe impl Send for ChunkColumns {}

impl ChunkColumns {
    /// Records appended (rows of space 0).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Records it can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether it holds `capacity` records.
    pub fn is_full(&self) -> bool {
        self.rows == self.capacity
    }

    /// Rows of column `col`'s space: the records for a column of the record's message and
    /// of singular messages under it, elements for one under a list of messages.
    pub fn space_rows(&self, col: usize) -> usize {
        match self.cols[col].space {
            0 => self.rows,
            s => self.spaces[s].rows as usize,
        }
    }

    /// For a column under a list of messages: its space's rows at the end of each record
    /// (record `r`'s elements are rows `bounds[r - 1]..bounds[r]`, from 0 for the first);
    /// for one in space 0, `None` (row `r` is record `r`).
    pub fn record_bounds(&self, col: usize) -> Option<&[u32]> {
        match self.cols[col].space {
            0 => None,
            s => Some(&self.bounds[s]),
        }
    }

    /// Column `col`'s cells, one per row of its space. Where the row's presence byte
    /// ([`valid`](Self::valid)) is 0 the cell holds no value (whatever an earlier chunk
    /// left there): read it as absent.
    pub fn values(&self, col: usize) -> &[u64] {
        &self.cols[col].values[..self.space_rows(col)]
    }

    /// Column `col`'s cell at row `row` of its space: 0 where the field is absent.
    #[inline]
    pub fn cell(&self, col: usize, row: usize) -> u64 {
        assert!(row < self.space_rows(col), "row {row} not written");
        let c = &self.cols[col];
        if c.valid[row] == 0 {
            0
        } else {
            c.values[row]
        }
    }

    /// Column `col`'s presence bytes, one per row of its space.
    pub fn valid(&self, col: usize) -> &[u8] {
        &self.cols[col].valid[..self.space_rows(col)]
    }

    /// A list column's items (lists of numbers, strings, bytes), all rows'.
    pub fn items(&self, col: usize) -> &[u64] {
        &self.cols[col].items
    }

    /// A list column's item ends, one per row of its space: row `r`'s items (or, for a
    /// list of messages, its elements' rows) are `ends[r - 1]..ends[r]`, from 0 for the
    /// first row.
    pub fn ends(&self, col: usize) -> Vec<u32> {
        let mut end = 0;
        (self.values(col).iter().zip(self.valid(col)))
            .map(|(&cell, &valid)| {
                if valid != 0 {
                    end = cell as u32;
                }
                end
            })
            .collect()
    }

    /// The rows of column `col`'s space the last record appended wrote.
    pub fn last_rows(&self, col: usize) -> std::ops::Range<usize> {
        match self.cols[col].space {
            0 => self.rows.saturating_sub(1)..self.rows,
            s => self.before.rows[s] as usize..self.spaces[s].rows as usize,
        }
    }

    /// The items of list column `col` the last record appended.
    pub fn last_items(&self, col: usize) -> std::ops::Range<usize> {
        let from = self.item_cols.iter().position(|&c| c == col).map_or(0, |i| self.before.items[i]);
        from.min(self.cols[col].items.len())..self.cols[col].items.len()
    }

    /// Undoes the last record appended (at most once after it). Panics if there is none.
    pub fn pop_row(&mut self) {
        assert!(self.before.undoable, "no record to drop");
        self.before.undoable = false;
        self.rows -= 1;
        let row = self.rows;
        self.rewind(row);
        for s in 1..self.spaces.len() {
            self.bounds[s].pop();
        }
        for (i, &c) in self.item_cols.iter().enumerate() {
            self.cols[c].items.truncate(self.before.items[i]);
        }
    }

    /// Every row written since `before` absent again: record row `row` and the other
    /// spaces' rows past their `before` (cells keep what was written: presence decides).
    fn rewind(&mut self, row: usize) {
        for (s, members) in self.space_cols.iter().enumerate() {
            let rows = if s == 0 { row..row + 1 } else { self.before.rows[s] as usize..self.spaces[s].rows as usize };
            for &c in members {
                self.cols[c].valid[rows.clone()].fill(0);
            }
            if s > 0 {
                self.spaces[s].rows = self.before.rows[s];
            }
        }
    }

    /// Empties it for the next chunk.
    pub fn clear(&mut self) {
        for (s, members) in self.space_cols.iter().enumerate() {
            let rows = if s == 0 { self.rows } else { self.spaces[s].rows as usize };
            for &c in members {
                self.cols[c].valid[..rows].fill(0);
            }
            self.spaces[s].rows = 0;
            self.bounds[s].clear();
        }
        for c in &mut self.cols {
            c.items.clear();
        }
        self.rows = 0;
        self.before.undoable = false;
    }
}

/// Compiled code that appends records of one [`ColumnPlan`] to [`ChunkColumns`].
pub struct Appender {
    /// Owns the code; freed on drop (behind a mutex only so that `Appender` is `Sync`).
    module: Mutex<Option<JITModule>>,
    root: AppendFn,
    id: u64,
    shape: Shape,
    code_bytes: u32,
    compile_time: std::time::Duration,
}

impl Drop for Appender {
    fn drop(&mut self) {
        let module = self.module.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(module) = module {
            // SAFETY: `&mut self` proves no append is running; the function pointers die
            // with `self`.
            unsafe { module.free_memory() };
        }
    }
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("columns", &self.shape.space_of_col.len())
            .field("code_bytes", &self.code_bytes)
            .finish()
    }
}

/// Appender ids, so that buffers are only ever handed to the code they were made for.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The most messages a plan compiled has: each is a function of its own (a type appears
/// once per path to it, so recursive types multiply), and compiling takes time and code
/// in proportion. (A plan's depth, the code's stack depth, is at most this too.)
const MAX_PLAN_MESSAGES: usize = 256;

impl Appender {
    /// Compiles `plan` over `layouts`, or says why it cannot be: a plan that is not a tree
    /// of the layouts' fields, a cell that does not fit its field's kind, more than 256
    /// messages, a closed enum of more than 1024 values, a oneof of which some message or
    /// closed-enum member is not in the plan.
    pub fn compile(layouts: &Layouts, plan: &ColumnPlan, options: &CompileOptions) -> Result<Appender, PlanError> {
        let started = std::time::Instant::now();
        let shape = check_plan(layouts, plan)?;
        let mut module = new_module(options, plan.messages.len())?;
        let frontend = module.isa().frontend_config();
        let ptr = frontend.pointer_type();
        let sig = append_signature(ptr, frontend.default_call_conv);
        let mut ids = Vec::with_capacity(plan.messages.len());
        for (i, m) in plan.messages.iter().enumerate() {
            let name = format!("protojit:columns:{}:{i}", layouts.get(m.layout).descriptor().full_name());
            let id = module.declare_function(&name, Linkage::Local, &sig).map_err(|e| codegen(layouts, m, e))?;
            ids.push(id);
        }
        let mut ctx = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        // As for decoders (`compile::define`): the machine code, for reading a profile.
        let dump_vcode = std::env::var_os("PROTOJIT_DUMP_VCODE").is_some();
        ctx.set_disasm(dump_vcode);
        let mut code_bytes = 0;
        // The first column of each message, in plan order.
        let mut first = Vec::with_capacity(plan.messages.len());
        let mut n = 0;
        for m in &plan.messages {
            first.push(n);
            n += m.fields.len();
        }
        for (i, m) in plan.messages.iter().enumerate() {
            ctx.func.signature = sig.clone();
            ctx.func.name = UserFuncName::user(0, ids[i].as_u32());
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let children: Vec<_> = ids.iter().map(|&id| module.declare_func_in_func(id, b.func)).collect();
            let reads = WireReads::new(&mut b, ptr, frontend.default_call_conv);
            let grow_sig = {
                let mut s = Signature::new(frontend.default_call_conv);
                s.params.extend([AbiParam::new(ptr), AbiParam::new(types::I64)]);
                s.returns.push(AbiParam::new(types::I64));
                b.import_signature(s)
            };
            let utf8_sig = {
                let mut s = Signature::new(frontend.default_call_conv);
                s.params.extend([AbiParam::new(ptr), AbiParam::new(ptr)]);
                s.returns.push(AbiParam::new(types::I64));
                b.import_signature(s)
            };
            let skip_group_sig = {
                let mut s = Signature::new(frontend.default_call_conv);
                s.params.extend([AbiParam::new(ptr), AbiParam::new(ptr)]);
                s.params.extend([AbiParam::new(types::I64), AbiParam::new(types::I64), AbiParam::new(types::I64)]);
                s.returns.push(AbiParam::new(ptr));
                b.import_signature(s)
            };
            let t = Lower {
                b: &mut b,
                ptr,
                layouts,
                msg: m,
                first: first[i],
                children,
                reads,
                grow_sig,
                utf8_sig,
                skip_group_sig,
                depth: shape.depth_of_message[i],
                max_depth: plan.max_depth,
                space_of_message: &shape.space_of_message,
                group_of_message: &shape.group_of_message,
                group: shape.group_of_message[i],
                tags: Vec::new(),
            };
            t.emit();
            b.seal_all_blocks();
            b.finalize(frontend);
            module.define_function(ids[i], &mut ctx).map_err(|e| codegen(layouts, m, e))?;
            code_bytes += ctx.compiled_code().map_or(0, |c| c.code_info().total_size);
            if let Some(vcode) = ctx.compiled_code().and_then(|c| c.vcode.as_deref()).filter(|_| dump_vcode) {
                let name = layouts.get(m.layout).descriptor().full_name();
                eprintln!("; protojit: column appender of {name} (machine code)\n{vcode}");
            }
            module.clear_context(&mut ctx);
            ctx.set_disasm(dump_vcode);
        }
        module.finalize_definitions().map_err(|e| {
            PlanError::Jit(JitError::Codegen { message_type: "column appender".into(), reason: e.to_string() })
        })?;
        let code = module.get_finalized_function(ids[0]);
        // SAFETY: every function was defined with `append_signature`, `AppendFn`'s ABI.
        let root = unsafe { std::mem::transmute::<*const u8, AppendFn>(code) };
        Ok(Appender {
            module: Mutex::new(Some(module)),
            root,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape,
            code_bytes,
            compile_time: started.elapsed(),
        })
    }

    /// Machine-code bytes of all its functions.
    pub fn code_bytes(&self) -> u32 {
        self.code_bytes
    }

    /// Time spent lowering and compiling it.
    pub fn compile_time(&self) -> std::time::Duration {
        self.compile_time
    }

    /// Buffers for `capacity` records of this appender's columns (the spaces of lists of
    /// messages start as large and grow as needed).
    pub fn columns(&self, capacity: usize) -> ChunkColumns {
        let shape = &self.shape;
        let mut cols: Vec<ChunkColumn> = (shape.space_of_col.iter())
            .map(|&space| ChunkColumn {
                values: vec![0; capacity],
                valid: vec![0; capacity],
                items: Vec::new(),
                space: space as usize,
            })
            .collect();
        let ptrs = cols
            .iter_mut()
            .map(|c| ColPtrs {
                values: c.values.as_mut_ptr(),
                valid: c.valid.as_mut_ptr(),
                items: c.items.as_mut_ptr(),
                items_len: 0,
            })
            .collect();
        let item_cols: Vec<usize> =
            (shape.kinds.iter().enumerate()).filter(|(_, &k)| k == ColKind::Items).map(|(i, _)| i).collect();
        let mut space_cols = vec![Vec::new(); shape.spaces];
        for (c, &s) in shape.space_of_col.iter().enumerate() {
            space_cols[s as usize].push(c);
        }
        let spaces = vec![SpaceRows { rows: 0, capacity: capacity as u64 }; shape.spaces];
        let before = Before { rows: vec![0; shape.spaces], items: vec![0; item_cols.len()], undoable: false };
        ChunkColumns {
            appender: self.id,
            capacity,
            rows: 0,
            ptrs,
            cols,
            item_cols,
            bounds: vec![Vec::new(); shape.spaces],
            spaces,
            space_cols,
            before,
        }
    }

    /// Appends `record` as the next row of `cols`: `true`, or `false` when the code
    /// declines it (malformed, or of a shape it leaves to the tree), and `cols` is as it
    /// was. Panics if `cols` was made by another appender or is full.
    pub fn append(&self, cols: &mut ChunkColumns, record: &[u8]) -> bool {
        assert_eq!(cols.appender, self.id, "columns of another appender");
        assert!(cols.rows < cols.capacity, "the chunk is full");
        if u32::try_from(record.len()).is_err() {
            return false; // string cells hold 32-bit offsets
        }
        let row = cols.rows;
        for (i, &l) in cols.item_cols.iter().enumerate() {
            let (c, p) = (&mut cols.cols[l], &mut cols.ptrs[l]);
            // Every item takes at least one byte of the record: the code never grows a
            // list's items.
            c.items.reserve(record.len());
            p.items = c.items.as_mut_ptr();
            p.items_len = c.items.len() as u64;
            cols.before.items[i] = c.items.len();
        }
        for (s, rows) in cols.spaces.iter().enumerate() {
            cols.before.rows[s] = rows.rows;
        }
        let end = record.as_ptr_range().end;
        let ok = {
            // Every pointer the code and `pa_grow` use comes from this one.
            let chunk: *mut ChunkColumns = cols;
            // SAFETY: `chunk` is `cols`, borrowed mutably for this block; the fields are
            // reached by place, without a reference to the whole.
            let (ptrs, spaces) = unsafe { ((*chunk).ptrs.as_mut_ptr(), (*chunk).spaces.as_mut_ptr()) };
            let mut ctx = AppendCtx { cols: ptrs, start: record.as_ptr(), spaces, chunk };
            // SAFETY: the code was compiled for these columns (the id matched): it writes
            // cell and presence byte `row` (< capacity, the length of every space-0
            // column's `values` and `valid`) of the record's columns, rows below their
            // space's capacity of the others (growing a space through `pa_grow` first),
            // and list items at `items_len` (fewer than the capacity reserved above: each
            // takes a byte of the record); it reads only `record`.
            let r = unsafe { (self.root)(&mut ctx, record.as_ptr(), end, row as u64) };
            r == end
        };
        if ok {
            for &l in &cols.item_cols {
                let (c, p) = (&mut cols.cols[l], &cols.ptrs[l]);
                // SAFETY: the code wrote items `len..items_len`, within the capacity
                // reserved above.
                unsafe { c.items.set_len(p.items_len as usize) };
            }
            for s in 1..cols.spaces.len() {
                cols.bounds[s].push(cols.spaces[s].rows as u32);
            }
            cols.rows += 1;
            cols.before.undoable = true;
            return true;
        }
        // Declined: the rows it wrote absent again (list items past `len` were never
        // taken into the vectors).
        cols.rewind(row);
        cols.before.undoable = false;
        false
    }
}

fn codegen(layouts: &Layouts, m: &PlanMessage, e: cranelift_module::ModuleError) -> PlanError {
    let message_type = layouts.get(m.layout).descriptor().full_name().to_owned();
    PlanError::Jit(JitError::Codegen { message_type, reason: e.to_string() })
}

fn append_signature(ptr: cranelift_codegen::ir::Type, cc: cranelift_codegen::isa::CallConv) -> Signature {
    let mut sig = Signature::new(cc);
    sig.params.extend([AbiParam::new(ptr), AbiParam::new(ptr), AbiParam::new(ptr), AbiParam::new(types::I64)]);
    sig.returns.push(AbiParam::new(ptr));
    sig
}

/// What a column holds besides its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColKind {
    /// Cells only.
    Cells,
    /// Items (a list of numbers, strings or bytes); its cells are its rows' item ends.
    Items,
    /// A list of messages: its cells are its rows' ends in the elements' space.
    Rows,
}

/// A checked plan's columns and row spaces.
struct Shape {
    kinds: Vec<ColKind>,
    space_of_col: Vec<u32>,
    space_of_message: Vec<u32>,
    /// Per message: the field number of the group it is read as (it ends at that group's
    /// end tag), or `None` for a length-delimited message.
    group_of_message: Vec<Option<u32>>,
    /// Per message: its nesting depth, as the tree counts it (0: the record).
    depth_of_message: Vec<u32>,
    spaces: usize,
}

/// Checks that every field of the plan is of a shape the code reads, and lays its
/// columns out in row spaces.
fn check_plan(layouts: &Layouts, plan: &ColumnPlan) -> Result<Shape, PlanError> {
    let no = |s: String| Err(PlanError::Unsupported(s));
    if plan.messages.is_empty() {
        return no("an empty plan".into());
    }
    if plan.messages.len() > MAX_PLAN_MESSAGES {
        return no(format!("{} messages (at most {MAX_PLAN_MESSAGES})", plan.messages.len()));
    }
    let mut kinds = Vec::new();
    let mut space_of_col = Vec::new();
    // Every message but the root is named by exactly one field of an earlier one.
    let mut space_of_message: Vec<Option<u32>> = vec![None; plan.messages.len()];
    space_of_message[0] = Some(0);
    let mut group_of_message: Vec<Option<u32>> = vec![None; plan.messages.len()];
    let mut depth_of_message = vec![0u32; plan.messages.len()];
    let mut spaces = 1;
    for (i, m) in plan.messages.iter().enumerate() {
        if m.layout.index() >= layouts.len() {
            return no(format!("no layout #{}", m.layout.index()));
        }
        let Some(space) = space_of_message[i] else {
            return no(format!("message #{i} of the plan is under no field"));
        };
        let layout = layouts.get(m.layout);
        let name = layout.descriptor().full_name();
        for f in &m.fields {
            if f.slot.index() >= layout.slots().len() {
                return no(format!("{name} has no slot #{}", f.slot.index()));
            }
            let slot = layout.slot(f.slot);
            let field = format!("{name}.{}", layout.slot_descriptor(f.slot).name());
            if slot.oneof != NO_INDEX {
                // Setting a member clears the others from the row; one the plan does not
                // read is skipped after that, so it must be a value the tree would take
                // without a check the skip does not make (not a message; not a closed
                // enum, whose undeclared values are unknown fields and clear nothing).
                let unread = layout.slots().iter().enumerate().find(|(si, s)| {
                    s.oneof == slot.oneof
                        && !m.fields.iter().any(|g| g.slot.index() == *si)
                        && (s.kind.is_message() || (s.kind == FieldKind::Enum && s.closed_enum))
                });
                if let Some((si, _)) = unread {
                    let other = layout.slot_descriptor(SlotIndex::new(si as u32)).name().to_owned();
                    return no(format!("{field} is a member of a oneof whose member {other} is not read"));
                }
            }
            if slot.kind == FieldKind::Enum && slot.closed_enum && layout.closed_enum_values(f.slot).len() > 1024 {
                return no(format!("{field}: a closed enum of more than 1024 values"));
            }
            let number =
                !matches!(slot.kind, FieldKind::String | FieldKind::Bytes | FieldKind::Message | FieldKind::Group);
            let child = |j: usize| j > i && j < plan.messages.len() && plan.messages[j].layout.as_u32() == slot.child;
            let ok = match f.cell {
                PlanCell::Number => slot.repetition == Repetition::Singular && number,
                PlanCell::Bytes => {
                    slot.repetition == Repetition::Singular && matches!(slot.kind, FieldKind::String | FieldKind::Bytes)
                }
                PlanCell::List => slot.repetition == Repetition::Repeated && number,
                PlanCell::BytesList => {
                    slot.repetition == Repetition::Repeated && matches!(slot.kind, FieldKind::String | FieldKind::Bytes)
                }
                PlanCell::Message(j) => slot.repetition == Repetition::Singular && slot.kind.is_message() && child(j),
                PlanCell::Messages(j) => {
                    (slot.repetition == Repetition::Repeated && slot.kind.is_message()
                        || slot.repetition == Repetition::Map && slot.kind == FieldKind::Message)
                        && child(j)
                }
                PlanCell::Spans => matches!(slot.kind, FieldKind::Message | FieldKind::Group | FieldKind::String),
            };
            if !ok {
                return no(format!("{field} cannot be read as {:?}", f.cell));
            }
            if let PlanCell::Message(j) | PlanCell::Messages(j) = f.cell {
                if space_of_message[j].is_some() {
                    return no(format!("message #{j} of the plan is under two fields"));
                }
                if slot.kind == FieldKind::Group {
                    group_of_message[j] = Some(slot.number);
                }
                depth_of_message[j] = depth_of_message[i] + 1;
                space_of_message[j] = Some(match f.cell {
                    PlanCell::Messages(_) => {
                        spaces += 1;
                        spaces as u32 - 1
                    }
                    _ => space,
                });
            }
            kinds.push(match f.cell {
                PlanCell::List | PlanCell::BytesList | PlanCell::Spans => ColKind::Items,
                PlanCell::Messages(_) => ColKind::Rows,
                _ => ColKind::Cells,
            });
            space_of_col.push(space);
        }
    }
    let space_of_message = space_of_message.into_iter().map(|s| s.unwrap_or(0)).collect();
    Ok(Shape { kinds, space_of_col, space_of_message, group_of_message, depth_of_message, spaces })
}

fn buffers() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Lowers one message of a plan, in the decoder's shape (`lower`): `next(p)`: at the end,
/// return `p`, else `table(p, byte)`, which sends the tag to its field's label (a jump
/// table over one-byte tags' field numbers, a `Switch` over longer tags); a label reads
/// the value, writes the cell, then *threads*: compares the next byte with the tag
/// expected next and jumps straight to its label, or on a miss to the table. Tags the
/// plan does not read are skipped by their wire type (groups to their end tags; wire
/// types 4, 6, 7 decline).
struct Lower<'a, 'b, 'f> {
    b: &'f mut FunctionBuilder<'b>,
    ptr: cranelift_codegen::ir::Type,
    layouts: &'a Layouts,
    msg: &'a PlanMessage,
    /// The column of the message's first field.
    first: usize,
    children: Vec<cranelift_codegen::ir::FuncRef>,
    reads: WireReads,
    grow_sig: SigRef,
    utf8_sig: SigRef,
    skip_group_sig: SigRef,
    /// The message's nesting depth (0: the record) and the plan's depth limit, which the
    /// groups it skips count toward.
    depth: u32,
    max_depth: u32,
    /// The row space of each message of the plan.
    space_of_message: &'a [u32],
    group_of_message: &'a [Option<u32>],
    /// The field number of the group this message is read as: it ends at that group's
    /// end tag (and the record's end before it is malformed).
    group: Option<u32>,
    /// Every label: its tag, its block (the value's position as parameter), what it does.
    tags: Vec<(u32, Block, Target)>,
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

/// The values every block of a message function uses.
#[derive(Clone, Copy)]
struct Env {
    ctx: Value,
    end: Value,
    row: Value,
    /// `next(p)`: the loop head.
    next: Block,
    /// `ended(p)`: the input ends at `p`: for a message, return `p` (its end); for a
    /// group, decline (its end tag is missing).
    ended: Block,
    /// `table(p, b0)`: dispatch the tag at `p`, whose first byte is `b0`.
    table: Block,
    /// Return null: decline the record.
    decline: Block,
}

impl Lower<'_, '_, '_> {
    fn emit(mut self) {
        let entry = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.b.switch_to_block(entry);
        let params = self.b.block_params(entry).to_vec();
        let (ctx, p0, end, row) = (params[0], params[1], params[2], params[3]);
        let next = self.b.create_block();
        self.b.append_block_param(next, self.ptr);
        let done = self.b.create_block();
        self.b.append_block_param(done, self.ptr);
        let table = self.b.create_block();
        self.b.append_block_param(table, self.ptr); // at the tag
        self.b.append_block_param(table, types::I64); // its first byte
        let decline = self.b.create_block();
        self.b.set_cold_block(decline);
        let ended = match self.group {
            None => done,
            Some(_) => {
                let truncated = self.b.create_block();
                self.b.append_block_param(truncated, self.ptr);
                self.b.set_cold_block(truncated);
                truncated
            }
        };
        let env = Env { ctx, end, row, next, ended, table, decline };
        // One label per field and form, its value's position as parameter.
        for (k, f) in self.msg.fields.iter().enumerate() {
            let slot = self.layouts.get(self.msg.layout).slot(f.slot);
            let single = self.b.create_block();
            self.b.append_block_param(single, self.ptr);
            self.tags.push((slot.number << 3 | slot.kind.wire_type() as u32, single, Target::Field(k, false)));
            if f.cell == PlanCell::List && slot.kind.is_packable() {
                let packed = self.b.create_block();
                self.b.append_block_param(packed, self.ptr);
                self.tags.push((slot.number << 3 | 2, packed, Target::Field(k, true)));
            }
        }
        // A group's end tag: the message ends after it (another group's end tag is
        // malformed: the skip declines it).
        if let Some(number) = self.group {
            let end_tag = self.b.create_block();
            self.b.append_block_param(end_tag, self.ptr);
            self.tags.push((number << 3 | 4, end_tag, Target::GroupEnd));
        }
        // The members of the plan's oneofs that the plan does not read (a projection's).
        let layout = self.layouts.get(self.msg.layout);
        for (si, slot) in layout.slots().iter().enumerate() {
            let read = self.msg.fields.iter().any(|f| f.slot.index() == si);
            let oneof_read =
                self.msg.fields.iter().any(|f| slot.oneof != NO_INDEX && layout.slot(f.slot).oneof == slot.oneof);
            if !read && oneof_read {
                let clear = self.b.create_block();
                self.b.append_block_param(clear, self.ptr);
                self.tags.push((
                    slot.number << 3 | slot.kind.wire_type() as u32,
                    clear,
                    Target::Clear(slot.oneof, slot.kind == FieldKind::String),
                ));
            }
        }
        self.b.ins().jump(next, &[BlockArg::Value(p0)]);

        // next(p): the end returns `p`; else the tag's first byte.
        self.b.switch_to_block(next);
        let p = self.b.block_params(next)[0];
        let at_end = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, end);
        let more = self.b.create_block();
        self.b.ins().brif(at_end, ended, &[BlockArg::Value(p)], more, &[]);
        self.b.switch_to_block(more);
        let b0 = self.b.ins().uload8(types::I64, input(), p, 0);
        self.b.ins().jump(table, &[BlockArg::Value(p), BlockArg::Value(b0)]);
        self.b.switch_to_block(done);
        let p = self.b.block_params(done)[0];
        self.end_cells(env);
        self.b.ins().return_(&[p]);

        if ended != done {
            self.b.switch_to_block(ended);
            self.b.ins().jump(decline, &[]);
        }
        self.emit_table(env);
        for (tag, label, target) in self.tags.clone() {
            self.b.switch_to_block(label);
            let q = self.b.block_params(label)[0];
            match target {
                Target::Field(k, packed) => self.field(k, packed, q, env),
                Target::GroupEnd => {
                    self.b.ins().jump(done, &[BlockArg::Value(q)]);
                }
                Target::Clear(oneof, text) => {
                    self.clear_oneof(None, oneof, env);
                    if text {
                        let (start, stop) = self.span(q, env);
                        self.utf8(start, stop, env);
                        self.b.ins().jump(env.next, &[BlockArg::Value(stop)]);
                    } else {
                        let tag = self.b.ins().iconst(types::I64, tag as i64);
                        self.skip(tag, q, env);
                    }
                }
            }
        }

        self.b.switch_to_block(decline);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b.ins().return_(&[null]);
    }

    /// At the message's end: each list's cell at the row is where its items (or its
    /// elements' rows) end now, so a row's items are those between the previous row's end
    /// and its own. (A row the message is absent from has no cell: it ends where the row
    /// before it does.)
    fn end_cells(&mut self, env: Env) {
        for (k, f) in self.msg.fields.iter().enumerate() {
            let end = match f.cell {
                PlanCell::List | PlanCell::BytesList | PlanCell::Spans => {
                    let col = self.col(k, env);
                    self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN)
                }
                PlanCell::Messages(j) => {
                    let space = self.space(j, env);
                    self.b.ins().load(types::I64, buffers(), space, SPACE_ROWS)
                }
                _ => continue,
            };
            self.put(k, end, env);
        }
    }

    /// The length-delimited value at `q` as a cell (`offset | len << 32` from the record's
    /// start), checked for UTF-8 when it is a `string`; and the position after it.
    fn text(&mut self, kind: FieldKind, q: Value, env: Env) -> (Value, Value) {
        let (start, stop) = self.span(q, env);
        let origin = self.b.ins().load(self.ptr, buffers(), env.ctx, CTX_START);
        let offset = self.b.ins().isub(start, origin);
        let len = self.b.ins().isub(stop, start);
        let len = self.b.ins().ishl_imm_u(len, 32);
        let cell = self.b.ins().bor(offset, len);
        if kind == FieldKind::String {
            self.utf8(start, stop, env);
        }
        (cell, stop)
    }

    /// Where plan message `j`'s value at `q` lies: a length-delimited message's span, or
    /// for a group, from `q` to the end of the input (it ends at its end tag).
    fn child_span(&mut self, j: usize, q: Value, env: Env) -> (Value, Value) {
        match self.group_of_message[j] {
            None => self.span(q, env),
            Some(_) => (q, env.end),
        }
    }

    /// The position after plan message `j`, whose function returned `r` for input ending
    /// at `stop`: a message must have read to `stop`, a group past its end tag (not
    /// null); else the record is declined.
    fn child_end(&mut self, j: usize, r: Value, stop: Value, env: Env) -> Value {
        let ok = self.b.create_block();
        match self.group_of_message[j] {
            None => {
                let whole = self.b.ins().icmp(IntCC::Equal, r, stop);
                self.b.ins().brif(whole, ok, &[], env.decline, &[]);
                self.b.switch_to_block(ok);
                stop
            }
            Some(_) => {
                self.b.ins().brif(r, ok, &[], env.decline, &[]);
                self.b.switch_to_block(ok);
                r
            }
        }
    }

    /// The address of the row space of plan message `j`.
    fn space(&mut self, j: usize, env: Env) -> Value {
        let spaces = self.b.ins().load(self.ptr, buffers(), env.ctx, CTX_SPACES);
        self.b.ins().iadd_imm_s(spaces, self.space_of_message[j] as i64 * SPACE_SIZE)
    }

    /// `table(p, b0)`: where the tag at `p` (first byte `b0`) goes. A one-byte tag (fields
    /// 1..15) through a jump table over its field number, then its wire type compared; a
    /// longer one read whole and looked up by a `Switch` (which also finds a one-byte tag
    /// written in more bytes than it needs). Tags of no label go to the skip.
    fn emit_table(&mut self, env: Env) {
        self.b.switch_to_block(env.table);
        let p = self.b.block_params(env.table)[0];
        let b0 = self.b.block_params(env.table)[1];
        let unknown = self.b.create_block();
        self.b.append_block_param(unknown, types::I64); // the tag
        self.b.append_block_param(unknown, self.ptr); // after it
        let one = self.b.create_block();
        let long = self.b.create_block();
        let high = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, b0, 0x80);
        self.b.ins().brif(high, long, &[], one, &[]);

        self.b.switch_to_block(one);
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let miss = self.b.create_block();
        let numbers = self.tags.iter().map(|t| t.0 >> 3).filter(|&n| n < 16).max().unwrap_or(0);
        let mut entries = Vec::with_capacity(numbers as usize + 1);
        let mut compares = Vec::new();
        for number in 0..=numbers {
            let labels: Vec<(u32, Block)> =
                self.tags.iter().filter(|t| t.0 >> 3 == number && number > 0).map(|t| (t.0 & 7, t.1)).collect();
            if labels.is_empty() {
                entries.push(self.b.func.dfg.block_call(miss, &[]));
            } else {
                let blk = self.b.create_block();
                entries.push(self.b.func.dfg.block_call(blk, &[]));
                compares.push((blk, labels));
            }
        }
        let default = self.b.func.dfg.block_call(miss, &[]);
        let number = self.b.ins().ushr_imm_u(b0, 3);
        let number = self.b.ins().ireduce(types::I32, number);
        let jt = self.b.create_jump_table(JumpTableData::new(default, &entries));
        self.b.ins().br_table(number, jt);
        for (blk, labels) in compares {
            self.b.switch_to_block(blk);
            let wt = self.b.ins().band_imm_u(b0, 7);
            for (t, label) in labels {
                let hit = self.b.ins().icmp_imm_u(IntCC::Equal, wt, t as i64);
                let other = self.b.create_block();
                self.b.ins().brif(hit, label, &[BlockArg::Value(p1)], other, &[]);
                self.b.switch_to_block(other);
            }
            self.b.ins().jump(miss, &[]);
        }
        self.b.switch_to_block(miss);
        self.b.ins().jump(unknown, &[BlockArg::Value(b0), BlockArg::Value(p1)]);

        self.b.switch_to_block(long);
        let (tag, after) = self.varint(p, env.end, env);
        // Tags are 32-bit: a longer one is malformed.
        let big = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, tag, u32::MAX as i64);
        let fits = self.b.create_block();
        self.b.ins().brif(big, env.decline, &[], fits, &[]);
        self.b.switch_to_block(fits);
        let mut switch = Switch::new();
        let mut hits = Vec::with_capacity(self.tags.len());
        for &(t, label, _) in &self.tags {
            let hit = self.b.create_block();
            switch.set_entry(t as u128, hit);
            hits.push((hit, label));
        }
        let miss = self.b.create_block();
        switch.emit(self.b, tag, miss);
        for (hit, label) in hits {
            self.b.switch_to_block(hit);
            self.b.ins().jump(label, &[BlockArg::Value(after)]);
        }
        self.b.switch_to_block(miss);
        self.b.ins().jump(unknown, &[BlockArg::Value(tag), BlockArg::Value(after)]);

        self.b.switch_to_block(unknown);
        let tag = self.b.block_params(unknown)[0];
        let q = self.b.block_params(unknown)[1];
        self.skip(tag, q, env);
    }

    /// After field `k`'s value, at `p`: fields are mostly written in number order, so the
    /// next byte (or two) is compared with the tags expected next (the same field again
    /// for an unpacked list, then the plan's next three fields by number) and a hit jumps
    /// straight to its label; a miss goes to the table.
    fn thread(&mut self, k: usize, p: Value, env: Env) {
        let layout = self.layouts.get(self.msg.layout);
        let number = layout.slot(self.msg.fields[k].slot).number;
        let mut expected: Vec<(u32, Block)> = Vec::new();
        let own = self.tags.iter().filter(|t| matches!(t.2, Target::Field(j, _) if j == k));
        if matches!(
            self.msg.fields[k].cell,
            PlanCell::List | PlanCell::BytesList | PlanCell::Messages(_) | PlanCell::Spans
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
        let at_end = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, env.end);
        let more = self.b.create_block();
        self.b.ins().brif(at_end, env.ended, &[BlockArg::Value(p)], more, &[]);
        self.b.switch_to_block(more);
        let b0 = self.b.ins().uload8(types::I64, input(), p, 0);
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        let mut two_byte = Vec::new();
        for (tag, label) in expected {
            if tag >= 0x4000 {
                continue;
            }
            if tag >= 0x80 {
                // Two bytes on the wire: low 7 bits with the continuation bit, then the rest.
                two_byte.push(((tag & 0x7f) | 0x80 | ((tag >> 7) << 8), label));
                continue;
            }
            let hit = self.b.ins().icmp_imm_u(IntCC::Equal, b0, tag as i64);
            let miss = self.b.create_block();
            self.b.ins().brif(hit, label, &[BlockArg::Value(p1)], miss, &[]);
            self.b.switch_to_block(miss);
        }
        if !two_byte.is_empty() {
            let p2 = self.b.ins().iadd_imm_s(p, 2);
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, p2, env.end);
            let load = self.b.create_block();
            self.b.ins().brif(fits, load, &[], env.table, &[BlockArg::Value(p), BlockArg::Value(b0)]);
            self.b.switch_to_block(load);
            let word = self.b.ins().uload16(types::I64, input(), p, 0);
            for (encoded, label) in two_byte {
                let hit = self.b.ins().icmp_imm_u(IntCC::Equal, word, encoded as i64);
                let miss = self.b.create_block();
                self.b.ins().brif(hit, label, &[BlockArg::Value(p2)], miss, &[]);
                self.b.switch_to_block(miss);
            }
        }
        self.b.ins().jump(env.table, &[BlockArg::Value(p), BlockArg::Value(b0)]);
    }

    /// `WireReads::varint`, declining when malformed.
    fn varint(&mut self, p: Value, end: Value, env: Env) -> (Value, Value) {
        self.reads.varint(self.b, p, end, env.decline)
    }

    /// `WireReads::span` before the message's end, declining when malformed.
    fn span(&mut self, p: Value, env: Env) -> (Value, Value) {
        self.reads.span(self.b, p, env.end, env.decline)
    }

    /// The column pointers of field `k` of this message.
    fn col(&mut self, k: usize, env: Env) -> Value {
        let cols = self.b.ins().load(self.ptr, buffers(), env.ctx, CTX_COLS);
        self.b.ins().iadd_imm_s(cols, (self.first + k) as i64 * COL_SIZE)
    }

    /// Writes cell `v` and the presence byte of field `k` at the row.
    fn put(&mut self, k: usize, v: Value, env: Env) {
        let col = self.col(k, env);
        let values = self.b.ins().load(self.ptr, buffers(), col, VALUES);
        let at = self.b.ins().ishl_imm_u(env.row, 3);
        let cell = self.b.ins().iadd(values, at);
        self.b.ins().store(buffers(), v, cell, 0);
        self.present(col, env);
    }

    fn present(&mut self, col: Value, env: Env) {
        let valid = self.b.ins().load(self.ptr, buffers(), col, VALID);
        let at = self.b.ins().iadd(valid, env.row);
        let one = self.b.ins().iconst(types::I8, 1);
        self.b.ins().store(buffers(), one, at, 0);
    }

    /// Appends item `v` to list field `k`.
    fn push(&mut self, k: usize, v: Value, env: Env) {
        let col = self.col(k, env);
        let items = self.b.ins().load(self.ptr, buffers(), col, ITEMS);
        let len = self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN);
        let at = self.b.ins().ishl_imm_u(len, 3);
        let cell = self.b.ins().iadd(items, at);
        self.b.ins().store(buffers(), v, cell, 0);
        let len = self.b.ins().iadd_imm_s(len, 1);
        self.b.ins().store(buffers(), len, col, ITEMS_LEN);
    }

    /// One value of `kind` at `p` (before `end`): its cell and the position after it.
    fn number(&mut self, kind: FieldKind, k: usize, p: Value, end: Value, env: Env) -> (Value, Value) {
        let (v, next) = self.reads.number(self.b, kind, p, end, env.decline);
        let v = match kind {
            FieldKind::Enum => {
                let layout = self.layouts.get(self.msg.layout);
                let si = self.msg.fields[k].slot;
                // An undeclared value of a closed enum is an unknown field: the tree's.
                if !layout.slot(si).closed_enum {
                } else if let Some((lo, hi)) = layout.closed_enum_range(si) {
                    let x = self.b.ins().ireduce(types::I32, v);
                    let below = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, lo as i64);
                    let above = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, x, hi as i64);
                    let out = self.b.ins().bor(below, above);
                    let ok = self.b.create_block();
                    self.b.ins().brif(out, env.decline, &[], ok, &[]);
                    self.b.switch_to_block(ok);
                } else {
                    // Declared values with gaps: a `Switch` over them (a few compares).
                    let x = self.b.ins().ireduce(types::I32, v);
                    let ok = self.b.create_block();
                    let mut switch = Switch::new();
                    let values = layout.closed_enum_values(si);
                    // Sorted; aliases repeat a number.
                    for (i, &value) in values.iter().enumerate() {
                        if i == 0 || values[i - 1] != value {
                            switch.set_entry(value as u32 as u128, ok);
                        }
                    }
                    switch.emit(self.b, x, env.decline);
                    self.b.switch_to_block(ok);
                }
                v
            }
            _ => v,
        };
        (v, next)
    }

    /// The block of field `k` (its tag read; the value at `q`), ending with a jump to the
    /// loop head.
    fn field(&mut self, k: usize, packed: bool, q: Value, env: Env) {
        let f = self.msg.fields[k];
        let slot = self.layouts.get(self.msg.layout).slot(f.slot);
        let kind = slot.kind;
        if slot.oneof != NO_INDEX {
            self.clear_oneof(Some(k), slot.oneof, env);
        }
        match f.cell {
            PlanCell::Number => {
                let (v, next) = self.number(kind, k, q, env.end, env);
                self.put(k, v, env);
                self.thread(k, next, env);
            }
            PlanCell::Bytes => {
                let (cell, stop) = self.text(kind, q, env);
                self.put(k, cell, env);
                self.thread(k, stop, env);
            }
            PlanCell::Message(j) => {
                let (start, stop) = self.child_span(j, q, env);
                let col = self.col(k, env);
                self.present(col, env);
                let call = self.b.ins().call(self.children[j], &[env.ctx, start, stop, env.row]);
                let r = self.b.inst_results(call)[0];
                let after = self.child_end(j, r, stop, env);
                self.thread(k, after, env);
            }
            PlanCell::Messages(j) => {
                // The element is the next row of its space: room for it first (doubling
                // the space's columns through `pa_grow`), the row counted, then its
                // fields.
                let (start, stop) = self.child_span(j, q, env);
                let space = self.space(j, env);
                let row = self.b.ins().load(types::I64, buffers(), space, SPACE_ROWS);
                let capacity = self.b.ins().load(types::I64, buffers(), space, SPACE_CAPACITY);
                let full = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, row, capacity);
                let grow = self.b.create_block();
                self.b.set_cold_block(grow);
                let room = self.b.create_block();
                self.b.ins().brif(full, grow, &[], room, &[]);
                self.b.switch_to_block(grow);
                let f = self.b.ins().iconst(self.ptr, pa_grow as *const () as usize as i64);
                let index = self.b.ins().iconst(types::I64, self.space_of_message[j] as i64);
                let call = self.b.ins().call_indirect(self.grow_sig, f, &[env.ctx, index]);
                let grown = self.b.inst_results(call)[0];
                self.b.ins().brif(grown, room, &[], env.decline, &[]);
                self.b.switch_to_block(room);
                // Counted before its fields are read: a record declined inside the
                // element must find the row among those it wrote (and rewind it).
                let next = self.b.ins().iadd_imm_s(row, 1);
                self.b.ins().store(buffers(), next, space, SPACE_ROWS);
                let call = self.b.ins().call(self.children[j], &[env.ctx, start, stop, row]);
                let r = self.b.inst_results(call)[0];
                let after = self.child_end(j, r, stop, env);
                self.thread(k, after, env);
            }
            PlanCell::Spans if kind == FieldKind::Group => {
                let number = self.b.ins().iconst(types::I64, slot.number as i64);
                let after = self.skip_group(number, q, env);
                let origin = self.b.ins().load(self.ptr, buffers(), env.ctx, CTX_START);
                let offset = self.b.ins().isub(q, origin);
                let len = self.b.ins().isub(after, q);
                let len = self.b.ins().ishl_imm_u(len, 32);
                let cell = self.b.ins().bor(offset, len);
                self.push(k, cell, env);
                self.thread(k, after, env);
            }
            PlanCell::BytesList | PlanCell::Spans => {
                let (cell, stop) = self.text(kind, q, env);
                self.push(k, cell, env);
                self.thread(k, stop, env);
            }
            PlanCell::List if !packed => {
                let (v, next) = self.number(kind, k, q, env.end, env);
                self.push(k, v, env);
                self.thread(k, next, env);
            }
            PlanCell::List => {
                // A packed run: the items' address and count in registers for the run,
                // the count stored back once at its end.
                let (start, stop) = self.span(q, env);
                let col = self.col(k, env);
                let items = self.b.ins().load(self.ptr, buffers(), col, ITEMS);
                let len0 = self.b.ins().load(types::I64, buffers(), col, ITEMS_LEN);
                let run = self.b.create_block();
                self.b.append_block_param(run, self.ptr);
                self.b.append_block_param(run, types::I64);
                self.b.ins().jump(run, &[BlockArg::Value(start), BlockArg::Value(len0)]);
                self.b.switch_to_block(run);
                let p = self.b.block_params(run)[0];
                let len = self.b.block_params(run)[1];
                let over = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, stop);
                let item = self.b.create_block();
                let after = self.b.create_block();
                self.b.ins().brif(over, after, &[], item, &[]);
                self.b.switch_to_block(item);
                let (v, next) = self.number(kind, k, p, stop, env);
                let at = self.b.ins().ishl_imm_u(len, 3);
                let cell = self.b.ins().iadd(items, at);
                self.b.ins().store(buffers(), v, cell, 0);
                let len1 = self.b.ins().iadd_imm_s(len, 1);
                self.b.ins().jump(run, &[BlockArg::Value(next), BlockArg::Value(len1)]);
                self.b.switch_to_block(after);
                // (A declined record leaves `items_len` as it was: the run's items are
                // past the vector's length, never taken.)
                self.b.ins().store(buffers(), len, col, ITEMS_LEN);
                // A run's last value must end exactly at its end (`number` never reads
                // past `stop`, so `p == stop` here).
                self.thread(k, stop, env);
            }
        }
    }

    /// A member of oneof `oneof` is being set (plan field `k`, or one the plan does not
    /// read): the other members leave the row (their presence bytes cleared). A message
    /// member already in the row declines the record instead: its fields' columns would
    /// have to leave the row too, which the tree does.
    fn clear_oneof(&mut self, k: Option<usize>, oneof: u32, env: Env) {
        let layout = self.layouts.get(self.msg.layout);
        let siblings: Vec<(usize, bool)> = (self.msg.fields.iter().enumerate())
            .filter(|&(j, g)| Some(j) != k && layout.slot(g.slot).oneof == oneof)
            .map(|(j, g)| (j, matches!(g.cell, PlanCell::Message(_))))
            .collect();
        for (j, message) in siblings {
            let col = self.col(j, env);
            let valid = self.b.ins().load(self.ptr, buffers(), col, VALID);
            let at = self.b.ins().iadd(valid, env.row);
            if message {
                let set = self.b.ins().uload8(types::I32, buffers(), at, 0);
                let ok = self.b.create_block();
                self.b.ins().brif(set, env.decline, &[], ok, &[]);
                self.b.switch_to_block(ok);
            } else {
                let zero = self.b.ins().iconst(types::I8, 0);
                self.b.ins().store(buffers(), zero, at, 0);
            }
        }
    }

    /// Declines the record when `start..stop` is not UTF-8: ASCII checked inline, eight
    /// bytes at a time, then the rest one by one; text with a byte of 0x80 or more whole
    /// by `pa_utf8`. Continues in a new block.
    fn utf8(&mut self, start: Value, stop: Value, env: Env) {
        let words = self.b.create_block();
        self.b.append_block_param(words, self.ptr);
        let word = self.b.create_block();
        let bytes = self.b.create_block();
        self.b.append_block_param(bytes, self.ptr);
        let byte = self.b.create_block();
        let mark = self.b.create_block();
        self.b.set_cold_block(mark);
        let done = self.b.create_block();
        self.b.ins().jump(words, &[BlockArg::Value(start)]);

        self.b.switch_to_block(words);
        let q = self.b.block_params(words)[0];
        let q8 = self.b.ins().iadd_imm_s(q, 8);
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, q8, stop);
        self.b.ins().brif(fits, word, &[], bytes, &[BlockArg::Value(q)]);
        self.b.switch_to_block(word);
        let w = self.b.ins().load(types::I64, input(), q, 0);
        let high = self.b.ins().band_imm_u(w, 0x8080_8080_8080_8080u64 as i64);
        self.b.ins().brif(high, mark, &[], words, &[BlockArg::Value(q8)]);

        self.b.switch_to_block(bytes);
        let q = self.b.block_params(bytes)[0];
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, q, stop);
        self.b.ins().brif(more, byte, &[], done, &[]);
        self.b.switch_to_block(byte);
        let b = self.b.ins().uload8(types::I64, input(), q, 0);
        let high = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, b, 0x80);
        let q1 = self.b.ins().iadd_imm_s(q, 1);
        self.b.ins().brif(high, mark, &[], bytes, &[BlockArg::Value(q1)]);

        self.b.switch_to_block(mark);
        let f = self.b.ins().iconst(self.ptr, pa_utf8 as *const () as usize as i64);
        let call = self.b.ins().call_indirect(self.utf8_sig, f, &[start, stop]);
        let valid = self.b.inst_results(call)[0];
        self.b.ins().brif(valid, done, &[], env.decline, &[]);
        self.b.switch_to_block(done);
    }

    /// The position after the group (field `number`) whose start tag ended at `q`, past
    /// its end tag, as `pa_skip_group` finds it; a malformed one declines.
    fn skip_group(&mut self, number: Value, q: Value, env: Env) -> Value {
        let f = self.b.ins().iconst(self.ptr, pa_skip_group as *const () as usize as i64);
        let depth = self.b.ins().iconst(types::I64, self.depth as i64);
        let max_depth = self.b.ins().iconst(types::I64, self.max_depth as i64);
        let call = self.b.ins().call_indirect(self.skip_group_sig, f, &[q, env.end, number, depth, max_depth]);
        let after = self.b.inst_results(call)[0];
        let ok = self.b.create_block();
        self.b.ins().brif(after, ok, &[], env.decline, &[]);
        self.b.switch_to_block(ok);
        after
    }

    /// Skips a field the plan does not read (tag `tag`, value at `q`) by its wire type, a
    /// group to its end tag (`skip_group`); wire types 4, 6 and 7 decline.
    fn skip(&mut self, tag: Value, q: Value, env: Env) {
        // Field number 0 is malformed.
        let number = self.b.ins().ushr_imm_u(tag, 3);
        let zero = self.b.ins().icmp_imm_u(IntCC::Equal, number, 0);
        let ok = self.b.create_block();
        self.b.ins().brif(zero, env.decline, &[], ok, &[]);
        self.b.switch_to_block(ok);
        let wt = self.b.ins().band_imm_u(tag, 7);
        let mut switch = Switch::new();
        let varint = self.b.create_block();
        let fixed64 = self.b.create_block();
        let len = self.b.create_block();
        let fixed32 = self.b.create_block();
        let group = self.b.create_block();
        self.b.set_cold_block(group);
        switch.set_entry(0, varint);
        switch.set_entry(1, fixed64);
        switch.set_entry(2, len);
        switch.set_entry(3, group);
        switch.set_entry(5, fixed32);
        switch.emit(self.b, wt, env.decline);
        self.b.switch_to_block(group);
        let after = self.skip_group(number, q, env);
        self.b.ins().jump(env.next, &[BlockArg::Value(after)]);
        self.b.switch_to_block(varint);
        let (_, next) = self.varint(q, env.end, env);
        self.b.ins().jump(env.next, &[BlockArg::Value(next)]);
        for (blk, width) in [(fixed64, 8), (fixed32, 4)] {
            self.b.switch_to_block(blk);
            let next = self.b.ins().iadd_imm_s(q, width);
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, next, env.end);
            self.b.ins().brif(fits, env.next, &[BlockArg::Value(next)], env.decline, &[]);
        }
        self.b.switch_to_block(len);
        let (_, stop) = self.span(q, env);
        self.b.ins().jump(env.next, &[BlockArg::Value(stop)]);
    }
}
