//! The column appenders' buffers and the contract their code runs under: [`ChunkColumns`], the context `AppendCtx`, and the helpers the code calls, listed once in `foreach_append_helper!`.

use protojit_arena::wire::{skip_value, SGROUP};
use protojit_arena::{runtime, MAX_DEPTH_LIMIT};

use super::plan::{ColKind, Shape};

/// Where one column's buffers are, as compiled code reads them. `repr(C)`: the code reads
/// the fields at their offsets.
#[repr(C)]
#[derive(Clone, Copy)]
struct ColPtrs {
    values: *mut u64,
    valid: *mut u8,
    /// 8-byte items, or 4-byte ones ([`ColKind::Items32`]), or a text column's bytes.
    items: *mut u8,
    items_len: u64,
    /// A text column's bytes it has room for (the code asks `pa_text_room` for more).
    items_cap: u64,
}
pub(super) const VALUES: i32 = std::mem::offset_of!(ColPtrs, values) as i32;
pub(super) const VALID: i32 = std::mem::offset_of!(ColPtrs, valid) as i32;
pub(super) const ITEMS: i32 = std::mem::offset_of!(ColPtrs, items) as i32;
pub(super) const ITEMS_LEN: i32 = std::mem::offset_of!(ColPtrs, items_len) as i32;
pub(super) const ITEMS_CAP: i32 = std::mem::offset_of!(ColPtrs, items_cap) as i32;
pub(super) const COL_SIZE: i64 = std::mem::size_of::<ColPtrs>() as i64;

/// A row space's rows so far and how many its columns hold. Space 0 is the records' (its
/// row comes with each call); the others are the elements of a list of messages.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SpaceRows {
    rows: u64,
    capacity: u64,
}
pub(super) const SPACE_ROWS: i32 = std::mem::offset_of!(SpaceRows, rows) as i32;
pub(super) const SPACE_CAPACITY: i32 = std::mem::offset_of!(SpaceRows, capacity) as i32;
pub(super) const SPACE_SIZE: i64 = std::mem::size_of::<SpaceRows>() as i64;

/// What a compiled appender function runs with.
#[repr(C)]
pub(super) struct AppendCtx {
    /// The columns, in plan order (every field of every message, messages in order).
    cols: *mut ColPtrs,
    /// The record's first byte (string cells are offsets from it) and its end.
    start: *const u8,
    end: *const u8,
    /// The row spaces, by index.
    spaces: *mut SpaceRows,
    /// The columns being written, for `pa_grow`.
    chunk: *mut ChunkColumns,
}
pub(super) const CTX_COLS: i32 = std::mem::offset_of!(AppendCtx, cols) as i32;
pub(super) const CTX_START: i32 = std::mem::offset_of!(AppendCtx, start) as i32;
pub(super) const CTX_END: i32 = std::mem::offset_of!(AppendCtx, end) as i32;
pub(super) const CTX_SPACES: i32 = std::mem::offset_of!(AppendCtx, spaces) as i32;

/// Every message function: `(ctx, ptr, end, row) -> the position after the message`, or
/// null when the record is declined.
pub(super) type AppendFn = unsafe extern "C" fn(*mut AppendCtx, *const u8, *const u8, u64) -> *const u8;

/// Every helper the appenders' code calls, in one list (as `abi::foreach_helper!` is the
/// tree decoder's): `foreach_append_helper!(m args)` calls `m! { args list }`; the lowering
/// expands it with `wire::helper_table!` into typed function pointers and the Cranelift
/// signatures, from the same Rust types.
macro_rules! foreach_append_helper {
    ($m:ident $($args:tt)*) => {
        $m! { $($args)*
            varint: pa_varint(*mut AppendCtx, *const u8, *const u8, *mut u64) -> *const u8;
            utf8: pa_utf8(*mut AppendCtx, *const u8, usize, *const u8) -> u32;
            skip_group: pa_skip_group(*const u8, *const u8, u64, u64, u64) -> *const u8;
            grow: pa_grow(*mut AppendCtx, u64) -> u64;
            copy: pa_copy(*mut u8, *const u8, usize) -> u64;
            text_room: pa_text_room(*mut AppendCtx, u64, u64, u64) -> u64;
        }
    };
}
pub(super) use foreach_append_helper;

/// Reads the varint at `p` (at or before `end`) into `*out`; the position after it, or null
/// if it is malformed (the record is declined): [`crate::wire::varint_long`]. Called by
/// compiled code for the varints its inline reads leave. Never panics.
///
/// # Safety
/// `p <= end`, `p..end` is readable and `out` writable.
pub(super) unsafe extern "C" fn pa_varint(_: *mut AppendCtx, p: *const u8, end: *const u8, out: *mut u64) -> *const u8 {
    // SAFETY: the caller's contract.
    unsafe { crate::wire::varint_long(p, end, out) }
}

/// Whether the `len` bytes at `p` are UTF-8: 1, else 0 (the record is declined). Called by
/// compiled code for a `string` its inline check leaves. Never panics.
///
/// # Safety
/// `p..p + len` is readable.
pub(super) unsafe extern "C" fn pa_utf8(_: *mut AppendCtx, p: *const u8, len: usize, _: *const u8) -> u32 {
    // SAFETY: the caller passes a range of the record it reads.
    runtime::is_utf8(unsafe { std::slice::from_raw_parts(p, len) }) as u32
}

/// Copies the `len` bytes at `src` to `dst`: a [`PlanCell::Text`](super::PlanCell::Text) value
/// its inline copy leaves. Called by compiled code. Never panics.
///
/// # Safety
/// `src..src + len` is readable, `dst..dst + len` writable, and they do not overlap.
pub(super) unsafe extern "C" fn pa_copy(dst: *mut u8, src: *const u8, len: usize) -> u64 {
    // SAFETY: the caller's contract: the value lies in the record, `dst` in the column's
    // lent bytes, within the room `pa_text_room` made.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    0
}

/// Bytes past a text column's value that the code may write: a short value is copied as
/// [`COPY_SLACK`] bytes, whatever its length, so it asks for room for that many more.
pub(super) const COPY_SLACK: usize = 16;

/// Makes room for `need` bytes in text column `col`, whose code has written `written`
/// (its values before the record, and the record's so far), re-pointing the code's
/// pointer: 1, or 0 (the record is declined) where `need` passes the 32-bit positions its
/// cells hold. Called by compiled code when a value would not fit. Never panics.
///
/// # Safety
/// As [`pa_grow`]'s; `written` is the column's `items_len`, within its capacity, every
/// byte below it written.
pub(super) unsafe extern "C" fn pa_text_room(ctx: *mut AppendCtx, col: u64, written: u64, need: u64) -> u64 {
    if need > u64::from(u32::MAX) || written > need {
        return 0;
    }
    // SAFETY: the caller's context (as `pa_grow`'s); only the fields named are borrowed.
    unsafe {
        let chunk = (*ctx).chunk;
        let cols = &mut (*chunk).cols;
        let Some(c) = cols.get_mut(col as usize) else { return 0 };
        let Some(v) = &mut c.text else { return 0 };
        if written as usize > v.capacity() {
            return 0;
        }
        // The bytes written are kept by the move: the vector holds them for it (its
        // length is otherwise 0: `items_len` says how many bytes it holds).
        v.set_len(written as usize);
        v.reserve(need as usize - written as usize);
        v.set_len(0);
        let p = &mut *(*ctx).cols.add(col as usize);
        p.items = v.as_mut_ptr();
        p.items_cap = (v.capacity() as u64).min(u64::from(u32::MAX));
        1
    }
}

/// Skips a group whose start tag (field `number`) ended at `p`, in a message at nesting
/// depth `depth` of records read under `max_depth`, as the tree skips an unknown group
/// (`wire::skip_value`): the position after its end tag, or null when it is malformed (the
/// record is declined). Called by compiled code. Never panics.
///
/// # Safety
/// `p..end` is readable (`p <= end`).
pub(super) unsafe extern "C" fn pa_skip_group(
    p: *const u8,
    end: *const u8,
    number: u64,
    depth: u64,
    max_depth: u64,
) -> *const u8 {
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
/// `ctx` is the context of a running [`Appender::append`](super::Appender::append): its `chunk`, `cols` and
/// `spaces` point to that call's buffers, which nothing else touches while the code runs.
pub(super) unsafe extern "C" fn pa_grow(ctx: *mut AppendCtx, space: u64) -> u64 {
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

/// The columns of one chunk of rows: what [`Appender::append`](super::Appender::append) writes and its caller
/// reads. Made by [`Appender::columns`](super::Appender::columns) for that appender only.
///
/// Columns lie in row spaces: space 0 holds one row per record; the columns under a list
/// of messages hold one row per element, in a space of their own (see
/// [`PlanCell::Messages`](super::PlanCell::Messages)), which grows as elements come.
pub struct ChunkColumns {
    pub(super) appender: u64,
    capacity: usize,
    rows: usize,
    cols: Vec<ChunkColumn>,
    /// Where each column's buffers are, for the code: re-pointed when a space grows (by
    /// `pa_grow`), list items before each record.
    ptrs: Vec<ColPtrs>,
    /// The columns with items (lists of numbers, strings, bytes).
    item_cols: Vec<usize>,
    /// The text columns ([`ColKind::Text`]): while lent bytes (`lend_text`), their first
    /// `items_len` bytes are the column's (their vectors hold them with a length of 0; the
    /// code writes them).
    text_cols: Vec<usize>,
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
    items: Items,
    /// The row space it lies in.
    space: usize,
    /// A text column's lent bytes (`ChunkColumns::lend_text`), with a length of 0: the
    /// code's `items_len` counts them.
    text: Option<Vec<u8>>,
}

/// A column's list items: 8 bytes each, or 4 ([`ColKind::Items32`]).
enum Items {
    Wide(Vec<u64>),
    Narrow(Vec<u32>),
}

impl Items {
    fn len(&self) -> usize {
        match self {
            Items::Wide(v) => v.len(),
            Items::Narrow(v) => v.len(),
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            Items::Wide(v) => v.truncate(len),
            Items::Narrow(v) => v.truncate(len),
        }
    }

    /// Makes room for `more` items; where the items start.
    fn reserve(&mut self, more: usize) -> *mut u8 {
        match self {
            Items::Wide(v) => {
                v.reserve(more);
                v.as_mut_ptr().cast()
            }
            Items::Narrow(v) => {
                v.reserve(more);
                v.as_mut_ptr().cast()
            }
        }
    }

    /// # Safety
    /// Items `len()..len` are written, within the capacity.
    unsafe fn set_len(&mut self, len: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            match self {
                Items::Wide(v) => v.set_len(len),
                Items::Narrow(v) => v.set_len(len),
            }
        }
    }
}

// SAFETY: the raw pointers in `ptrs` point into `cols`' own buffers, which move with them.
unsafe impl Send for ChunkColumns {}

impl ChunkColumns {
    /// Records appended (rows of space 0).
    #[inline]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Records it can hold.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether it holds `capacity` records.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.rows == self.capacity
    }

    /// Rows of column `col`'s space: the records for a column of the record's message and
    /// of singular messages under it, elements for one under a list of messages.
    #[inline]
    pub fn space_rows(&self, col: usize) -> usize {
        match self.cols[col].space {
            0 => self.rows,
            s => self.spaces[s].rows as usize,
        }
    }

    /// For a column under a list of messages: its space's rows at the end of each record
    /// (record `r`'s elements are rows `bounds[r - 1]..bounds[r]`, from 0 for the first);
    /// for one in space 0, `None` (row `r` is record `r`).
    #[inline]
    pub fn record_bounds(&self, col: usize) -> Option<&[u32]> {
        match self.cols[col].space {
            0 => None,
            s => Some(&self.bounds[s]),
        }
    }

    /// Column `col`'s cells, one per row of its space. Where the row's presence byte
    /// ([`valid`](Self::valid)) is 0 the cell holds no value (whatever an earlier chunk
    /// left there): read it as absent.
    #[inline]
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
    #[inline]
    pub fn valid(&self, col: usize) -> &[u8] {
        &self.cols[col].valid[..self.space_rows(col)]
    }

    /// A list column's items (lists of numbers, strings, bytes), all rows'; none for one
    /// of [`PlanCell::List32`](super::PlanCell::List32) (its items are
    /// [`items32`](Self::items32)).
    #[inline]
    pub fn items(&self, col: usize) -> &[u64] {
        match &self.cols[col].items {
            Items::Wide(v) => v,
            Items::Narrow(_) => &[],
        }
    }

    /// A [`PlanCell::List32`](super::PlanCell::List32) column's items, all rows'; none for
    /// another.
    #[inline]
    pub fn items32(&self, col: usize) -> &[u32] {
        match &self.cols[col].items {
            Items::Narrow(v) => v,
            Items::Wide(_) => &[],
        }
    }

    /// Lends [`PlanCell::Text`](super::PlanCell::Text) column `col` the bytes its values
    /// are appended to (a column builder's data): the code writes each value after them
    /// (its cell `start | len << 32` there), and [`take_text`](Self::take_text) gives them
    /// back with the values. Panics if `col` is not a text column or holds lent bytes.
    pub fn lend_text(&mut self, col: usize, bytes: Vec<u8>) {
        assert!(self.text_cols.contains(&col), "column {col} is not a text column");
        let (c, p) = (&mut self.cols[col], &mut self.ptrs[col]);
        assert!(c.text.is_none(), "column {col} holds lent bytes");
        let v = c.text.insert(bytes);
        p.items_len = v.len() as u64;
        // Its length is 0 while lent (`items_len` counts): the code writes past it.
        v.truncate(0);
        p.items = v.as_mut_ptr();
        // Cells hold 32-bit positions: past them the code asks for room, which declines.
        p.items_cap = (v.capacity() as u64).min(u64::from(u32::MAX));
    }

    /// The bytes lent to text column `col`, with the values of the rows appended since
    /// after them; `None` when it holds none (or is not a text column).
    pub fn take_text(&mut self, col: usize) -> Option<Vec<u8>> {
        let (c, p) = (self.cols.get_mut(col)?, &mut self.ptrs[col]);
        let mut bytes = c.text.take()?;
        // SAFETY: the first `items_len` bytes are the ones lent (their length then) and
        // those the code wrote after them, one value after another (a declined or
        // dropped record's cut off by `rewind`), within the capacity `pa_text_room`
        // made; `min` keeps it within the capacity whatever `items_len` says.
        unsafe { bytes.set_len((p.items_len as usize).min(bytes.capacity())) };
        p.items = std::ptr::NonNull::dangling().as_ptr();
        p.items_len = 0;
        p.items_cap = 0;
        Some(bytes)
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
    #[inline]
    pub fn last_rows(&self, col: usize) -> std::ops::Range<usize> {
        match self.cols[col].space {
            0 => self.rows.saturating_sub(1)..self.rows,
            s => self.before.rows[s] as usize..self.spaces[s].rows as usize,
        }
    }

    /// The items of list column `col` the last record appended.
    #[inline]
    pub fn last_items(&self, col: usize) -> std::ops::Range<usize> {
        let from = self.item_cols.iter().position(|&c| c == col).map_or(0, |i| self.before.items[i]);
        let len = self.cols[col].items.len();
        from.min(len)..len
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
    /// A text column's bytes are cut back to where the first of those rows' values starts
    /// (the rows' values are its last bytes; a column the record did not write keeps its
    /// own).
    fn rewind(&mut self, row: usize) {
        for &t in &self.text_cols {
            let s = self.cols[t].space;
            let rows = if s == 0 { row..row + 1 } else { self.before.rows[s] as usize..self.spaces[s].rows as usize };
            let c = &self.cols[t];
            if let Some(r) = rows.clone().find(|&r| c.valid[r] != 0) {
                // Never past what it holds (the cell is the code's; `take_text` trusts
                // `items_len` to count written bytes, whatever was lent in between).
                let p = &mut self.ptrs[t];
                p.items_len = p.items_len.min(c.values[r] & 0xffff_ffff);
            }
        }
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
        // (A text column's bytes stay: they are lent, and given back by `take_text`.)
        for c in &mut self.cols {
            c.items.truncate(0);
        }
        self.rows = 0;
        self.before.undoable = false;
    }

    /// Buffers for `capacity` records of the columns of `shape`, for appender `id` (the
    /// spaces of lists of messages start as large and grow as needed).
    pub(super) fn new(id: u64, shape: &Shape, capacity: usize) -> ChunkColumns {
        let mut cols: Vec<ChunkColumn> = (shape.space_of_col.iter().zip(&shape.kinds))
            .map(|(&space, &kind)| ChunkColumn {
                values: vec![0; capacity],
                valid: vec![0; capacity],
                items: if kind == ColKind::Items32 { Items::Narrow(Vec::new()) } else { Items::Wide(Vec::new()) },
                space: space as usize,
                text: None,
            })
            .collect();
        let ptrs = (cols.iter_mut())
            .map(|c| ColPtrs {
                values: c.values.as_mut_ptr(),
                valid: c.valid.as_mut_ptr(),
                items: c.items.reserve(0),
                items_len: 0,
                items_cap: 0,
            })
            .collect();
        let item_cols: Vec<usize> = (shape.kinds.iter().enumerate())
            .filter(|(_, &k)| matches!(k, ColKind::Items | ColKind::Items32))
            .map(|(i, _)| i)
            .collect();
        let text_cols: Vec<usize> =
            (shape.kinds.iter().enumerate()).filter(|(_, &k)| k == ColKind::Text).map(|(i, _)| i).collect();
        let mut space_cols = vec![Vec::new(); shape.spaces];
        for (c, &s) in shape.space_of_col.iter().enumerate() {
            space_cols[s as usize].push(c);
        }
        let spaces = vec![SpaceRows { rows: 0, capacity: capacity as u64 }; shape.spaces];
        let before = Before { rows: vec![0; shape.spaces], items: vec![0; item_cols.len()], undoable: false };
        let bounds = vec![Vec::new(); shape.spaces];
        ChunkColumns {
            appender: id,
            capacity,
            rows: 0,
            ptrs,
            cols,
            item_cols,
            text_cols,
            bounds,
            spaces,
            space_cols,
            before,
        }
    }

    /// Runs `root` on `record` as the next row: `true`, or `false` when the code declines
    /// it, and the columns are as they were.
    ///
    /// # Safety
    /// `root` is the root function of the appender these columns were made for, and they
    /// are not full.
    pub(super) unsafe fn append(&mut self, root: AppendFn, record: &[u8]) -> bool {
        if u32::try_from(record.len()).is_err() {
            return false; // string cells hold 32-bit offsets
        }
        let row = self.rows;
        for (i, &l) in self.item_cols.iter().enumerate() {
            let (c, p) = (&mut self.cols[l], &mut self.ptrs[l]);
            // Every item takes at least one byte of the record: the code never grows a
            // list's items.
            p.items = c.items.reserve(record.len());
            p.items_len = c.items.len() as u64;
            self.before.items[i] = c.items.len();
        }
        for (s, rows) in self.spaces.iter().enumerate() {
            self.before.rows[s] = rows.rows;
        }
        let end = record.as_ptr_range().end;
        let ok = {
            // Every pointer the code and `pa_grow` use comes from this one.
            let chunk: *mut ChunkColumns = self;
            // SAFETY: `chunk` is `self`, borrowed mutably for this block; the fields are
            // reached by place, without a reference to the whole.
            let (cols, spaces) = unsafe { ((*chunk).ptrs.as_mut_ptr(), (*chunk).spaces.as_mut_ptr()) };
            let mut ctx = AppendCtx { cols, start: record.as_ptr(), end, spaces, chunk };
            // SAFETY: the caller's contract: the code was compiled for these columns; it
            // writes cell and presence byte `row` (< capacity, the length of every
            // space-0 column's `values` and `valid`) of the record's columns, rows below
            // their space's capacity of the others (growing a space through `pa_grow`
            // first), list items at `items_len` (fewer than the capacity reserved
            // above: each takes a byte of the record), and a text column's bytes from
            // below its `items_len` (where a row's value is replaced) up to `items_cap`
            // (asking `pa_text_room` for more first); it reads only `record`.
            let r = unsafe { root(&mut ctx, record.as_ptr(), end, row as u64) };
            r == end
        };
        if ok {
            for &l in &self.item_cols {
                let (c, p) = (&mut self.cols[l], &self.ptrs[l]);
                // SAFETY: the code wrote items `len..items_len` (of the column's width),
                // within the capacity reserved above.
                unsafe { c.items.set_len(p.items_len as usize) };
            }
            for s in 1..self.spaces.len() {
                self.bounds[s].push(self.spaces[s].rows as u32);
            }
            self.rows += 1;
            self.before.undoable = true;
            return true;
        }
        // Declined: the rows it wrote absent again (list items past `len` were never taken
        // into the vectors; a text column's bytes are cut back by `rewind`).
        self.rewind(row);
        self.before.undoable = false;
        false
    }
}
