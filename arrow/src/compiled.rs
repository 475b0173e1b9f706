//! The compiled direct path: a converter's columns as a plan for compiled column appenders, and each chunk of their buffers moved into the column builders.
//!
//! The plan names every column the converter builds (`ColumnPlan`, in the builders'
//! order: a struct's columns, depth first), so a chunk is moved by walking the builders
//! and the plan side by side. The machine code writes one row per record; here a chunk's
//! cells become each column's values and validity in one pass per column, and list offsets
//! come from the items' ends. A string or bytes column outside a oneof takes its values
//! from the code itself: its builder's data is lent to the chunk, the code writes each
//! value there, and only the offsets are made here; other strings (oneof members, map
//! entries, wrappers, lists) are copied from their records.

use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, NullBufferBuilder};
use protojit::DecodeOptions;
use protojit_arena::stream::WireValue;
use protojit_arena::stream::{check_fields, check_message};
use protojit_arena::{FieldKind, LayoutIndex, Layouts, Repetition, SlotIndex, NO_INDEX};
use protojit_jit::{Appender, ChunkColumns, ColumnPlan, PlanCell, PlanField, PlanMessage};

use crate::column::{Cell, MapCol, StructCol, TimeCol};
use crate::values::{Data, Pending, RowCx, Values};

/// A converter's compiled appender and its plan.
pub(crate) struct Compiled<'c> {
    pub(crate) appender: &'c Appender,
    pub(crate) planned: &'c Planned,
}

/// A converter's columns as a plan for compiled appenders.
pub(crate) struct Planned {
    plan: ColumnPlan,
    /// The first column of each message of the plan.
    first: Vec<usize>,
    /// The maps: a record whose map holds a key twice goes to the tree (the mapping keeps
    /// one entry per distinct key; the code appends every entry).
    maps: Vec<MapKeys>,
    /// The message and group fields without columns (cut at `max_recursion`, or
    /// extensions), whose spans the tree's check reads.
    unread: Vec<Unread>,
    /// By plan message: whether its columns (or those of a message under it in the same
    /// row space) read strings or bytes from the records, so that moving a chunk needs
    /// each of its rows' record. A list of messages without any (a tile's features, a
    /// batch's samples) is moved without listing them.
    needs_rows: Vec<bool>,
    /// Whether any column is [`PlanCell::Text`] (whose data the chunks borrow).
    texts: bool,
}

/// A message or group field without a column.
struct Unread {
    /// Its column of spans.
    col: usize,
    /// Its type.
    li: LayoutIndex,
    /// The depth of the message holding it (0: the record).
    depth: u32,
    /// For a group, its field number (its spans run past its end tag).
    group: Option<u32>,
}

/// A map's column and its entries' key column.
struct MapKeys {
    map: usize,
    key: usize,
    kind: KeyKind,
}

/// How a map key's cell compares (the code's cells of one key may differ in the bits the
/// key's type ignores: an `int32` written in 5 or 10 bytes).
#[derive(Clone, Copy)]
enum KeyKind {
    Bool,
    Bits32,
    Bits64,
    Bytes,
}

impl Planned {
    /// The plan of the columns under `root` (of type `li`), or why compiled appenders
    /// cannot read them.
    pub(crate) fn new(layouts: &Layouts, li: LayoutIndex, root: &StructCol, max_depth: u32) -> Result<Planned, String> {
        let mut plan = ColumnPlan { max_depth, ..ColumnPlan::default() };
        add(layouts, li, root, &mut plan)?;
        let first: Vec<usize> = (plan.messages.iter())
            .scan(0, |n, m| {
                *n += m.fields.len();
                Some(*n - m.fields.len())
            })
            .collect();
        let (mut maps, mut unread) = (Vec::new(), Vec::new());
        // Each message's depth: one below the field naming it (which comes earlier).
        let mut depth = vec![0u32; plan.messages.len()];
        for (i, (m, &n)) in plan.messages.iter().zip(&first).enumerate() {
            let layout = layouts.get(m.layout);
            for (k, f) in m.fields.iter().enumerate() {
                let slot = layout.slot(f.slot);
                if let PlanCell::Message(j) | PlanCell::Messages(j) = f.cell {
                    if j > i && j < depth.len() {
                        depth[j] = depth[i] + 1;
                    }
                }
                match f.cell {
                    PlanCell::Spans if slot.kind.is_message() => unread.push(Unread {
                        col: n + k,
                        li: LayoutIndex::new(slot.child),
                        depth: depth[i],
                        group: (slot.kind == FieldKind::Group).then_some(slot.number),
                    }),
                    PlanCell::Messages(j) if slot.repetition == Repetition::Map => {
                        let kind = match layouts.get(plan.messages[j].layout).slot(SlotIndex::new(0)).kind {
                            FieldKind::Bool => KeyKind::Bool,
                            FieldKind::String | FieldKind::Bytes => KeyKind::Bytes,
                            FieldKind::Int64
                            | FieldKind::Uint64
                            | FieldKind::Fixed64
                            | FieldKind::Sfixed64
                            | FieldKind::Sint64 => KeyKind::Bits64,
                            _ => KeyKind::Bits32,
                        };
                        maps.push(MapKeys { map: n + k, key: first[j], kind });
                    }
                    _ => {}
                }
            }
        }
        // The code reads messages as deep as the plan's deepest; the tree fails a record
        // nested past `max_depth`, so no deeper plan (a shallower one leaves the rest to the
        // spans' checks, which count the depth).
        if let Some(&deepest) = depth.iter().max().filter(|&&d| d > max_depth) {
            return Err(format!("messages {deepest} deep in the columns exceed the depth limit ({max_depth})"));
        }
        plan.check(layouts).map_err(|e| e.to_string())?;
        // A message comes after the field naming it: from the last, its children are known.
        let mut needs_rows = vec![false; plan.messages.len()];
        for i in (0..plan.messages.len()).rev() {
            needs_rows[i] = plan.messages[i].fields.iter().any(|f| match f.cell {
                PlanCell::Bytes | PlanCell::BytesList => true,
                PlanCell::Message(j) => needs_rows.get(j).copied().unwrap_or(true),
                _ => false,
            });
        }
        let texts = plan.messages.iter().any(|m| m.fields.iter().any(|f| f.cell == PlanCell::Text));
        Ok(Planned { plan, first, maps, unread, needs_rows, texts })
    }

    /// The plan the appenders are compiled from.
    pub(crate) fn plan(&self) -> &ColumnPlan {
        &self.plan
    }
}

impl Compiled<'_> {
    /// Whether the row just appended is the mapping's (else the tree takes the record, and
    /// says what is wrong with it, if anything is): no map of it holds a key twice, and the messages without columns in it are well formed (checked
    /// as the tree checks them, with `options`).
    #[inline]
    pub(crate) fn row_ok(
        &self,
        cols: &ChunkColumns,
        record: &[u8],
        layouts: &Layouts,
        options: &DecodeOptions,
    ) -> bool {
        // Most plans have neither (a call per record saved).
        (self.planned.maps.is_empty() && self.planned.unread.is_empty())
            || self.row_checks_ok(cols, record, layouts, options)
    }

    /// [`row_ok`](Self::row_ok)'s checks of the maps' keys and the unread messages.
    fn row_checks_ok(&self, cols: &ChunkColumns, record: &[u8], layouts: &Layouts, options: &DecodeOptions) -> bool {
        self.planned.maps.iter().all(|m| keys_distinct(m, cols, record))
            && self.planned.unread.iter().all(|u| {
                cols.items(u.col)[cols.last_items(u.col)].iter().all(|&cell| {
                    let (at, len) = ((cell & 0xffff_ffff) as usize, (cell >> 32) as usize);
                    match u.group {
                        None => record
                            .get(at..at + len)
                            .is_some_and(|m| check_message(layouts, u.li, m, options, u.depth).is_ok()),
                        // A group's fields, from after its start tag to past its end tag,
                        // as the tree reads a group at this depth.
                        Some(number) => {
                            u.depth < options.max_depth()
                                && at + len <= record.len()
                                && check_fields(
                                    layouts,
                                    u.li,
                                    record,
                                    at,
                                    at + len,
                                    u.depth + 1,
                                    Some((number, at)),
                                    options,
                                ) == Ok(at + len)
                        }
                    }
                })
            })
    }

    /// Lends each text column's data (its builder's bytes) to `cols`, whose code appends
    /// the chunk's values to it ([`PlanCell::Text`]); [`take_text`](Self::take_text) gives
    /// it back. Between the two, the builders' text columns are not written.
    pub(crate) fn lend_text(&self, root: &mut StructCol, cols: &mut ChunkColumns) {
        if self.planned.texts {
            self.text_columns(root, 0, &mut |col, v| {
                if let Data::Text { data, .. } = &mut v.data {
                    cols.lend_text(col, std::mem::take(data));
                }
            });
        }
    }

    /// Gives each text column's data back to its builder, with the values the chunk's
    /// code appended (a column not lent keeps its own).
    pub(crate) fn take_text(&self, root: &mut StructCol, cols: &mut ChunkColumns) {
        if self.planned.texts {
            self.text_columns(root, 0, &mut |col, v| {
                if let (Data::Text { data, .. }, Some(bytes)) = (&mut v.data, cols.take_text(col)) {
                    *data = bytes;
                }
            });
        }
    }

    /// Calls `f` with each [`PlanCell::Text`] column under `s` (plan message `i`) and its
    /// builder.
    fn text_columns(&self, s: &mut StructCol, i: usize, f: &mut impl FnMut(usize, &mut Values)) {
        let first = self.planned.first[i];
        for (k, c) in s.columns.iter_mut().enumerate() {
            match (self.planned.plan.messages[i].fields[k].cell, &mut c.cell) {
                (PlanCell::Text, Cell::Values(v)) => f(first + k, v),
                (PlanCell::Message(j), Cell::Struct(child)) => self.text_columns(child, j, f),
                (PlanCell::Messages(j), Cell::List(l)) => {
                    if let Cell::Struct(child) = &mut l.item {
                        self.text_columns(child, j, f);
                    }
                }
                (PlanCell::Messages(j), Cell::Map(m)) => {
                    if let (PlanCell::Message(v), Cell::Struct(child)) =
                        (self.planned.plan.messages[j].fields[1].cell, &mut m.value)
                    {
                        self.text_columns(child, v, f);
                    }
                }
                _ => {}
            }
        }
    }

    /// Moves the rows of `cols` (records `records`, in order) into the builders under `root`.
    pub(crate) fn flush(&self, root: &mut StructCol, cols: &ChunkColumns, records: &[&[u8]], cx: &mut RowCx) {
        debug_assert_eq!(cols.rows(), records.len());
        self.flush_struct(root, 0, cols, records.len(), records, records, cx);
    }

    /// Moves the `n` rows of plan message `i` (its space's rows, each in the record `rows`
    /// says when it [needs them](Planned::needs_rows), else `rows` is empty; `records` are
    /// the chunk's) into the builders under `s`.
    #[allow(clippy::too_many_arguments)]
    fn flush_struct(
        &self,
        s: &mut StructCol,
        i: usize,
        cols: &ChunkColumns,
        n: usize,
        rows: &[&[u8]],
        records: &[&[u8]],
        cx: &mut RowCx,
    ) {
        let first = self.planned.first[i];
        for (k, c) in s.columns.iter_mut().enumerate() {
            let col = first + k;
            match (self.planned.plan.messages[i].fields[k].cell, &mut c.cell) {
                (cell @ (PlanCell::Number | PlanCell::Bytes), Cell::Values(v)) => extend(v, cell, col, cols, rows, cx),
                (PlanCell::Text, Cell::Values(v)) => v.extend_text(cols.values(col), cols.valid(col)),
                (PlanCell::Message(j), Cell::Struct(child)) => {
                    if let Some(nulls) = &mut child.nulls {
                        append_validity(nulls, cols.valid(col));
                    }
                    self.flush_struct(child, j, cols, n, rows, records, cx);
                }
                (PlanCell::Message(j), Cell::Time(t)) => self.flush_time(t, j, cols, Some(cols.valid(col)), cx),
                (PlanCell::Message(j), Cell::Wrapper(v, _)) => {
                    self.flush_wrapper(v, j, cols, Some(cols.valid(col)), rows, cx)
                }
                (PlanCell::Message(_), Cell::Marker(v)) => {
                    v.extend_cells(&vec![1; n], Some(cols.valid(col)));
                }
                (
                    cell @ (PlanCell::List | PlanCell::List32 | PlanCell::BytesList | PlanCell::Messages(_)),
                    Cell::List(l),
                ) => {
                    let base = *l.offsets.last().expect("offsets start with 0");
                    let ends = cols.ends(col);
                    // A batch's items are bounded by its input (`MAX_BATCH_INPUT`), so they fit.
                    l.offsets.extend(ends.iter().map(|&e| base + e as i32));
                    match (cell, &mut l.item) {
                        (PlanCell::List, Cell::Values(items)) => items.extend_cells(cols.items(col), None),
                        (PlanCell::List32, Cell::Values(items)) => items.extend_items32(cols.items32(col)),
                        (PlanCell::BytesList, Cell::Values(items)) => {
                            items.extend_item_spans(cols.items(col), &ends, rows, cx)
                        }
                        (PlanCell::Messages(j), Cell::Struct(child)) => {
                            let (n, element_rows) = self.element_rows(j, cols, records);
                            if let Some(nulls) = &mut child.nulls {
                                nulls.append_n_non_nulls(n);
                            }
                            self.flush_struct(child, j, cols, n, &element_rows, records, cx);
                        }
                        (PlanCell::Messages(j), Cell::Time(t)) => self.flush_time(t, j, cols, None, cx),
                        (PlanCell::Messages(j), Cell::Wrapper(v, _)) => {
                            let (_, element_rows) = self.element_rows(j, cols, records);
                            self.flush_wrapper(v, j, cols, None, &element_rows, cx)
                        }
                        _ => unreachable!("the plan was made from these columns"),
                    }
                }
                (PlanCell::Messages(j), Cell::Map(m)) => {
                    let base = *m.offsets.last().expect("offsets start with 0");
                    m.offsets.extend(cols.ends(col).iter().map(|&e| base + e as i32));
                    let (n, element_rows) = self.element_rows(j, cols, records);
                    let [key, value] = &self.planned.plan.messages[j].fields[..] else {
                        unreachable!("a map entry's plan is its key and value")
                    };
                    let first = self.planned.first[j];
                    extend(&mut m.key, key.cell, first, cols, &element_rows, cx);
                    // Every entry has its value (the default where the wire has none).
                    let present = vec![1u8; n];
                    match (value.cell, &mut m.value) {
                        (PlanCell::Number | PlanCell::Bytes, Cell::Values(values)) => {
                            extend(values, value.cell, first + 1, cols, &element_rows, cx)
                        }
                        (PlanCell::Message(k), Cell::Struct(child)) => {
                            if let Some(nulls) = &mut child.nulls {
                                nulls.append_n_non_nulls(n);
                            }
                            self.flush_struct(child, k, cols, n, &element_rows, records, cx);
                        }
                        (PlanCell::Message(k), Cell::Time(t)) => self.flush_time(t, k, cols, None, cx),
                        (PlanCell::Message(k), Cell::Wrapper(v, _)) => {
                            self.flush_wrapper(v, k, cols, None, &element_rows, cx)
                        }
                        (PlanCell::Message(_), Cell::Marker(v)) => v.extend_cells(&vec![1; n], Some(&present)),
                        _ => unreachable!("planned by `add_entry`"),
                    }
                }
                _ => unreachable!("the plan was made from these columns"),
            }
        }
        s.len += n;
    }

    /// Appends plan message `j`'s rows (a Timestamp's or Duration's seconds and nanos) to
    /// `t`: null where `valid` (the message's presence; `None`: all present) says absent,
    /// or where the nanoseconds overflow 64 bits (counted).
    fn flush_time(&self, t: &mut TimeCol, j: usize, cols: &ChunkColumns, valid: Option<&[u8]>, cx: &mut RowCx) {
        let first = self.planned.first[j];
        for r in 0..cols.space_rows(first) {
            if valid.is_none_or(|v| v[r] != 0) {
                t.push(cols.cell(first, r) as i64, cols.cell(first + 1, r) as i32, cx);
            } else {
                t.push_null();
            }
        }
    }

    /// Appends plan message `j`'s rows (a wrapper's value, rows in `rows`' records) to `v`:
    /// null where `valid` (the wrapper's presence; `None`: all present) says absent, the
    /// default where the wrapper is present without its value.
    fn flush_wrapper(
        &self,
        v: &mut Values,
        j: usize,
        cols: &ChunkColumns,
        valid: Option<&[u8]>,
        rows: &[&[u8]],
        cx: &RowCx,
    ) {
        let first = self.planned.first[j];
        // The value's cells, 0 where it is absent (the default; for a string, no bytes).
        let cells: Vec<u64> = (0..cols.space_rows(first)).map(|r| cols.cell(first, r)).collect();
        let present;
        let valid = match valid {
            Some(valid) => valid,
            None => {
                present = vec![1; cells.len()];
                &present
            }
        };
        match self.planned.plan.messages[j].fields[0].cell {
            PlanCell::Bytes => v.extend_spans(&cells, valid, rows, cx),
            _ => v.extend_cells(&cells, Some(valid)),
        }
    }

    /// How many rows plan message `j` (under a list of messages or a map: a space of its
    /// own) has in the chunk, and, when it [needs them](Planned::needs_rows), the record
    /// each lies in (of `records`, the chunk's); else none.
    fn element_rows<'r>(&self, j: usize, cols: &ChunkColumns, records: &[&'r [u8]]) -> (usize, Vec<&'r [u8]>) {
        let bounds = cols.record_bounds(self.planned.first[j]).unwrap_or(&[]);
        let n = bounds.last().copied().unwrap_or(0) as usize;
        if !self.planned.needs_rows[j] {
            return (n, Vec::new());
        }
        let mut from = 0;
        let mut rows = Vec::with_capacity(n);
        for (record, &end) in records.iter().zip(bounds) {
            rows.extend(std::iter::repeat_n(*record, end as usize - from));
            from = end as usize;
        }
        debug_assert_eq!(rows.len(), n, "a space's bounds end at its rows");
        (n, rows)
    }
}

/// Appends column `col`'s rows (each in its record of `rows`) to `v`: a number's cells, or
/// a string's or bytes' spans.
fn extend(v: &mut Values, cell: PlanCell, col: usize, cols: &ChunkColumns, rows: &[&[u8]], cx: &RowCx) {
    match cell {
        PlanCell::Bytes => v.extend_spans(cols.values(col), cols.valid(col), rows, cx),
        _ => v.extend_cells(cols.values(col), Some(cols.valid(col))),
    }
}

/// Whether no map of map column `m` in the row just appended holds a key twice.
fn keys_distinct(m: &MapKeys, cols: &ChunkColumns, record: &[u8]) -> bool {
    let (cells, valid) = (cols.values(m.map), cols.valid(m.map));
    let mut from = cols.last_rows(m.key).start;
    for row in cols.last_rows(m.map) {
        if valid[row] == 0 {
            continue; // no entries
        }
        let entries = from..cells[row] as usize;
        from = entries.end;
        let n = entries.len();
        if n < 2 {
            continue;
        }
        let bits = |e: usize| {
            let c = cols.cell(m.key, entries.start + e);
            match m.kind {
                KeyKind::Bool => (c != 0) as u64,
                KeyKind::Bits32 => c as u32 as u64,
                KeyKind::Bits64 | KeyKind::Bytes => c,
            }
        };
        let distinct = match m.kind {
            KeyKind::Bytes => {
                // An absent key's cell is 0: the empty string.
                let text = |e: usize| {
                    let c = bits(e);
                    let (at, len) = ((c & 0xffff_ffff) as usize, (c >> 32) as usize);
                    &record[at..at + len]
                };
                distinct(n, text)
            }
            _ => distinct(n, bits),
        };
        if !distinct {
            return false;
        }
    }
    true
}

/// Whether `key(0..n)` are distinct: by a scan for few (the common case, no allocation),
/// else sorted.
fn distinct<T: Ord>(n: usize, key: impl Fn(usize) -> T) -> bool {
    if n <= 16 {
        return (0..n).all(|a| (a + 1..n).all(|b| key(a) != key(b)));
    }
    let mut keys: Vec<T> = (0..n).map(key).collect();
    keys.sort_unstable();
    keys.windows(2).all(|w| w[0] != w[1])
}

/// Adds the message of `s` (type `li`) and the messages under it to `plan`; its index.
fn add(layouts: &Layouts, li: LayoutIndex, s: &StructCol, plan: &mut ColumnPlan) -> Result<usize, String> {
    let i = plan.messages.len();
    plan.messages.push(PlanMessage { layout: li, fields: Vec::new() });
    let layout = layouts.get(li);
    let unread = unread_fields(layouts, li, |si| s.columns.iter().any(|c| c.si.index() == si));
    if s.columns.is_empty() {
        return Err(format!("{} has no columns", layout.descriptor().full_name()));
    }
    let mut fields = Vec::with_capacity(s.columns.len());
    for c in &s.columns {
        let slot = layout.slot(c.si);
        let what = |kind: &str| format!("{}: {kind}", c.field.name());
        let cell = match &c.cell {
            Cell::Values(v) if c.read.is_some() => match v.data {
                // Offsets and data: the code writes the bytes straight into the builder's
                // data, lent to each chunk (a oneof member's cell is moved from its record:
                // the code may clear it from the row after writing it).
                Data::Text { .. } if slot.oneof == NO_INDEX => PlanCell::Text,
                Data::Text { .. } | Data::View(_) => PlanCell::Bytes,
                _ => PlanCell::Number,
            },
            Cell::Struct(child) => PlanCell::Message(add(layouts, LayoutIndex::new(slot.child), child, plan)?),
            Cell::Time(t) => PlanCell::Message(add_time(LayoutIndex::new(slot.child), t, plan)),
            Cell::Wrapper(v, si) => PlanCell::Message(add_wrapper(LayoutIndex::new(slot.child), v, *si, plan)),
            Cell::Marker(_) => PlanCell::Message(add_marker(layouts, LayoutIndex::new(slot.child), plan)),
            Cell::List(l) => match &l.item {
                Cell::Values(v) if !v.is_nullable() => match v.data {
                    Data::Text { .. } | Data::View(_) => PlanCell::BytesList,
                    // Items of 4 bytes where the column takes 32 bits (as every 32-bit
                    // number's and enum's does).
                    Data::I32(_) | Data::U32(_) | Data::F32(_) | Data::Enum(..) => PlanCell::list_of(slot.kind),
                    _ => PlanCell::List,
                },
                Cell::Struct(child) => PlanCell::Messages(add(layouts, LayoutIndex::new(slot.child), child, plan)?),
                Cell::Time(t) => PlanCell::Messages(add_time(LayoutIndex::new(slot.child), t, plan)),
                Cell::Wrapper(v, si) => PlanCell::Messages(add_wrapper(LayoutIndex::new(slot.child), v, *si, plan)),
                _ => return Err(what("a list of values read another way")),
            },
            Cell::Values(_) => return Err(what("a value read another way")),
            Cell::Json(_) => return Err(what("a message as JSON text, written from a tree")),
            Cell::Map(m) => PlanCell::Messages(add_entry(layouts, LayoutIndex::new(slot.child), m, plan)?),
        };
        fields.push(PlanField { slot: c.si, cell });
    }
    fields.extend(unread);
    plan.messages[i].fields = fields;
    Ok(i)
}

/// Adds a `google.protobuf.Timestamp` or `Duration` (type `li`) to `plan`: its seconds and
/// nanos, as numbers; its index.
fn add_time(li: LayoutIndex, t: &TimeCol, plan: &mut ColumnPlan) -> usize {
    let fields = vec![
        PlanField { slot: t.seconds, cell: PlanCell::Number },
        PlanField { slot: t.nanos, cell: PlanCell::Number },
    ];
    plan.messages.push(PlanMessage { layout: li, fields });
    plan.messages.len() - 1
}

/// Adds a `google.protobuf.*Value` wrapper (type `li`, its value in slot `si`) to `plan`;
/// its index.
fn add_wrapper(li: LayoutIndex, v: &Values, si: SlotIndex, plan: &mut ColumnPlan) -> usize {
    let cell = match v.data {
        Data::Text { .. } | Data::View(_) => PlanCell::Bytes,
        _ => PlanCell::Number,
    };
    plan.messages.push(PlanMessage { layout: li, fields: vec![PlanField { slot: si, cell }] });
    plan.messages.len() - 1
}

/// Adds a message without columns (a `Boolean` column: whether it is present; type `li`)
/// to `plan`: its fields (cut at `max_recursion`, or none, as in `google.protobuf.Empty`)
/// checked as [`unread_fields`] says; its index.
fn add_marker(layouts: &Layouts, li: LayoutIndex, plan: &mut ColumnPlan) -> usize {
    let fields = unread_fields(layouts, li, |_| false);
    plan.messages.push(PlanMessage { layout: li, fields });
    plan.messages.len() - 1
}

/// The fields of message type `li` without columns (those `has_column` does not name:
/// extensions, and fields cut at `max_recursion`) that the tree checks beyond their wire
/// form, which the code must then check too: a message, group or map, whose every
/// occurrence's span `Compiled::row_ok` checks as the tree does; a `string` (a type shared
/// by a projection's selected and unselected paths keeps its strings), whose every
/// occurrence the code checks for UTF-8; a repeated number, whose packed runs the tree
/// decodes (so the code reads their items, which no column takes); a closed enum in a
/// oneof, whose declared values clear the other members (the code checks the value, and
/// the cell is no column's). They come after a message's columns in its plan (those are
/// in the builders' order); a oneof member clears the others as any does. Other numbers are
/// skipped (their wire form is all the tree checks).
fn unread_fields(layouts: &Layouts, li: LayoutIndex, has_column: impl Fn(usize) -> bool) -> Vec<PlanField> {
    let layout = layouts.get(li);
    let mut fields = Vec::new();
    for (si, slot) in layout.slots().iter().enumerate() {
        if has_column(si) {
            continue;
        }
        let cell = match slot.kind {
            FieldKind::Message | FieldKind::Group | FieldKind::String => PlanCell::Spans,
            FieldKind::Bytes => continue,
            _ if slot.repetition == Repetition::Repeated => PlanCell::List,
            FieldKind::Enum if slot.closed_enum && slot.oneof != NO_INDEX => PlanCell::Number,
            _ => continue,
        };
        fields.push(PlanField { slot: SlotIndex::new(si as u32), cell });
    }
    fields
}

/// Adds a map's entry message (type `li`: the key, slot 0, and the value, slot 1) to `plan`,
/// and the value's message where it is one; the entry's index. An entry without its value
/// reads as the value's default: 0, an empty string, an empty message (every field
/// absent), a zero timestamp, a wrapper of the default.
fn add_entry(layouts: &Layouts, li: LayoutIndex, m: &MapCol, plan: &mut ColumnPlan) -> Result<usize, String> {
    let cell = |v: &Values| match v.data {
        _ if v.is_nullable() => Err("a map with nullable keys or values".to_owned()),
        Data::Text { .. } | Data::View(_) => Ok(PlanCell::Bytes),
        _ => Ok(PlanCell::Number),
    };
    // The entry first: the value's message comes after it in the plan.
    let j = plan.messages.len();
    plan.messages.push(PlanMessage { layout: li, fields: Vec::new() });
    let key = cell(&m.key)?;
    let child = LayoutIndex::new(layouts.get(li).slot(SlotIndex::new(1)).child);
    let value = match &m.value {
        Cell::Values(v) => {
            if matches!(m.value_default, Pending::Number(WireValue::Enum(n)) if n != 0) {
                // An entry without a value takes the enum's first value; an absent cell
                // reads as 0.
                return Err("a map whose values are a closed enum without 0".to_owned());
            }
            cell(v)?
        }
        Cell::Struct(s) => PlanCell::Message(add(layouts, child, s, plan)?),
        Cell::Time(t) => PlanCell::Message(add_time(child, t, plan)),
        Cell::Wrapper(v, si) => PlanCell::Message(add_wrapper(child, v, *si, plan)),
        Cell::Marker(_) => PlanCell::Message(add_marker(layouts, child, plan)),
        Cell::Json(_) => return Err("a map's message values as JSON text, written from a tree".to_owned()),
        Cell::List(_) | Cell::Map(_) => unreachable!("a map's value is not repeated"),
    };
    plan.messages[j].fields =
        vec![PlanField { slot: SlotIndex::new(0), cell: key }, PlanField { slot: SlotIndex::new(1), cell: value }];
    Ok(j)
}

impl Values {
    /// Appends one row per cell: the cell's value as this column's type (an appender's
    /// cell holds a number's bits), null where `valid` says absent and the column is
    /// nullable; an absent row of a column without presence holds its default, 0 (a
    /// cell where `valid` is 0 holds no value, so it is masked). List items (`valid`
    /// `None`) are all present.
    pub(crate) fn extend_cells(&mut self, cells: &[u64], valid: Option<&[u8]>) {
        let nullable = self.nulls.is_some();
        if let Data::Enum(keys, dict) = &mut self.data {
            for (r, &c) in cells.iter().enumerate() {
                let set = valid.is_none_or(|v| v[r] != 0);
                // A null's key is 0 (as `push_null`), an absent default's the name of 0.
                keys.push(match (set, nullable) {
                    (true, _) => dict.key(c as i32),
                    (false, true) => 0,
                    (false, false) => dict.key(0),
                });
            }
            if let (Some(n), Some(valid)) = (&mut self.nulls, valid) {
                append_validity(n, valid);
            }
            return;
        }
        if let Data::Bool(b) = &mut self.data {
            // 64 rows a word; a chunk's field is mostly present in every row or in none.
            let present = valid.map_or(Presence::All, presence);
            match (present, valid) {
                (Presence::None, _) => b.append_n(cells.len(), false),
                (Presence::Mixed, Some(valid)) => b.append_buffer(&nonzero_bits(cells, Some(valid))),
                _ => b.append_buffer(&nonzero_bits(cells, None)),
            }
            if let (Some(n), Some(valid)) = (&mut self.nulls, valid) {
                append_presence(n, valid, present);
            }
            return;
        }
        match valid {
            Some(valid) => {
                // Most columns of a chunk are present in every row or in none: no mask then.
                let present = presence(valid);
                match present {
                    Presence::All => self.extend_masked(cells.iter().copied()),
                    Presence::None => self.extend_masked(std::iter::repeat_n(0, cells.len())),
                    Presence::Mixed => {
                        // 0 or all ones: a select the loops below vectorize.
                        let mask = |b: u8| 0u64.wrapping_sub((b != 0) as u64);
                        self.extend_masked(cells.iter().zip(valid).map(|(&c, &b)| c & mask(b)));
                    }
                }
                if let Some(n) = &mut self.nulls {
                    append_presence(n, valid, present);
                }
            }
            None => self.extend_masked(cells.iter().copied()),
        }
    }

    /// Appends the items of a list of 32-bit numbers or enums ([`PlanCell::List32`]: a
    /// cell's low 32 bits) as this column's type, which takes 32 bits.
    pub(crate) fn extend_items32(&mut self, items: &[u32]) {
        match &mut self.data {
            Data::I32(v) => v.extend(items.iter().map(|&c| c as i32)),
            Data::U32(v) => v.extend_from_slice(items),
            Data::F32(v) => v.extend(items.iter().map(|&c| f32::from_bits(c))),
            Data::Enum(keys, dict) => keys.extend(items.iter().map(|&c| dict.key(c as i32))),
            _ => unreachable!("a list of 32-bit items is planned for a 32-bit column only"),
        }
    }

    /// Appends cells (absent ones already 0) as this column's (numeric) type.
    fn extend_masked(&mut self, cells: impl Iterator<Item = u64>) {
        match &mut self.data {
            Data::I32(v) => v.extend(cells.map(|c| c as i32)),
            Data::I64(v) => v.extend(cells.map(|c| c as i64)),
            Data::U32(v) => v.extend(cells.map(|c| c as u32)),
            Data::U64(v) => v.extend(cells),
            Data::F32(v) => v.extend(cells.map(|c| f32::from_bits(c as u32))),
            Data::F64(v) => v.extend(cells.map(f64::from_bits)),
            Data::Bool(_) | Data::Enum(..) | Data::Text { .. } | Data::View(_) => unreachable!("taken above"),
        }
    }

    /// Appends one row per cell of a string or bytes column the code wrote
    /// ([`PlanCell::Text`]) into its data (lent, and given back: `Compiled::take_text`): a
    /// present row's bytes are where its cell (`start | len << 32`) says, one row's after
    /// another's; an absent row is null where the column is nullable, else empty (the
    /// default).
    pub(crate) fn extend_text(&mut self, cells: &[u64], valid: &[u8]) {
        let Data::Text { offsets, data, .. } = &mut self.data else {
            unreachable!("text is planned for a column of offsets and data only")
        };
        // Rows absent before the first present one end where the column's data did.
        // (A batch's text is bounded by its input, `MAX_BATCH_INPUT`, so ends fit.)
        let mut end = *offsets.last().expect("offsets start with 0") as u32;
        offsets.extend(cells.iter().zip(valid).map(|(&c, &v)| {
            if v != 0 {
                end = (c as u32).wrapping_add((c >> 32) as u32);
            }
            end as i32
        }));
        debug_assert_eq!(end as usize, data.len(), "a column's data ends with its last row's bytes");
        if let Some(n) = &mut self.nulls {
            append_validity(n, valid);
        }
    }

    /// Appends the items of a list of strings or bytes: `items[ends[r - 1]..ends[r]]` lie
    /// in record `r`.
    pub(crate) fn extend_item_spans(&mut self, items: &[u64], ends: &[u32], records: &[&[u8]], cx: &RowCx) {
        let mut from = 0;
        for (record, &end) in records.iter().zip(ends) {
            for &c in &items[from..end as usize] {
                let (at, len) = ((c & 0xffff_ffff) as usize, (c >> 32) as usize);
                self.push_bytes(&record[at..at + len], cx);
            }
            from = end as usize;
        }
    }

    /// Appends one row per cell of a string or bytes column: the bytes the cell points to
    /// in its row's record, null where absent and nullable.
    pub(crate) fn extend_spans(&mut self, cells: &[u64], valid: &[u8], records: &[&[u8]], cx: &RowCx) {
        let nullable = self.nulls.is_some();
        if let Data::Text { offsets, data, .. } = &mut self.data {
            // Offsets and data: one loop, the builder's kind matched once.
            offsets.reserve(cells.len());
            for (r, &c) in cells.iter().enumerate() {
                // Absent: null, or the empty default (the cell holds no value).
                if valid[r] != 0 {
                    let (at, len) = ((c & 0xffff_ffff) as usize, (c >> 32) as usize);
                    data.extend_from_slice(&records[r][at..at + len]);
                }
                // A batch's text is bounded by its input (`MAX_BATCH_INPUT`), so it fits.
                offsets.push(data.len() as i32);
            }
            if let Some(n) = &mut self.nulls {
                append_validity(n, valid);
            }
            return;
        }
        for (r, &c) in cells.iter().enumerate() {
            if valid[r] == 0 {
                if nullable {
                    self.push_null();
                } else {
                    self.push_bytes(&[], cx);
                }
                continue;
            }
            let (at, len) = ((c & 0xffff_ffff) as usize, (c >> 32) as usize);
            self.push_bytes(&records[r][at..at + len], cx);
            if let Some(n) = &mut self.nulls {
                n.append_non_null();
            }
        }
    }
}

/// One bit per cell, set where the cell is not 0 (and, with `valid`, its presence byte is
/// not 0 either): a word per 64 cells, without bounds checks inside the word, so that the
/// compiler vectorizes it (as `BooleanBuffer::collect_bool`'s closure per bit is not).
fn nonzero_bits(cells: &[u64], valid: Option<&[u8]>) -> BooleanBuffer {
    let word = |cells: &[u64], valid: Option<&[u8]>| {
        let mut w = 0u64;
        for (j, &c) in cells.iter().enumerate() {
            w |= u64::from(c != 0) << j;
        }
        if let Some(valid) = valid {
            let mut m = 0u64;
            for (j, &b) in valid.iter().enumerate() {
                m |= u64::from(b != 0) << j;
            }
            w &= m;
        }
        w
    };
    let mut words = Vec::with_capacity(cells.len().div_ceil(64));
    match valid {
        Some(valid) => {
            let valid = &valid[..cells.len()];
            words.extend(cells.chunks(64).zip(valid.chunks(64)).map(|(c, v)| word(c, Some(v))));
        }
        None => words.extend(cells.chunks(64).map(|c| word(c, None))),
    }
    BooleanBuffer::new(Buffer::from_vec(words), 0, cells.len())
}

/// Appends one validity bit per presence byte, a whole run at once where the chunk's
/// field is present in every row or in none (sparse records: most columns).
fn append_validity(n: &mut NullBufferBuilder, valid: &[u8]) {
    append_presence(n, valid, presence(valid));
}

/// [`append_validity`] where `present` is `presence(valid)`.
fn append_presence(n: &mut NullBufferBuilder, valid: &[u8], present: Presence) {
    match present {
        Presence::All => n.append_n_non_nulls(valid.len()),
        Presence::None => n.append_n_nulls(valid.len()),
        Presence::Mixed => {
            n.append_buffer(&NullBuffer::new(BooleanBuffer::collect_bool(valid.len(), |i| valid[i] != 0)))
        }
    }
}

/// Whether a column's presence bytes in a chunk (any nonzero byte: present) say present
/// in every row (also when there are none), in none, or in some.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Presence {
    All,
    None,
    Mixed,
}

/// [`Presence`] of `valid`, eight bytes a step (a byte at a time, counting, cost ~5
/// instructions a byte: 4% of a small-record conversion).
fn presence(valid: &[u8]) -> Presence {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (mut any, mut all) = (false, true);
    let mut words = valid.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("chunks of 8"));
        // The top bit of each nonzero byte: its low seven bits carry into it, or it is set.
        let nonzero = (((w & LOW7) + LOW7) | w) & HIGH;
        any |= nonzero != 0;
        all &= nonzero == HIGH;
        if any && !all {
            return Presence::Mixed;
        }
    }
    for &b in words.remainder() {
        any |= b != 0;
        all &= b != 0;
    }
    match (all, any) {
        (true, _) => Presence::All,
        (false, false) => Presence::None,
        (false, true) => Presence::Mixed,
    }
}

#[cfg(test)]
mod tests {
    use super::{presence, Presence};

    /// `presence` against its definition (a count of nonzero bytes) on every length to 40
    /// and bytes of every bit pattern a presence byte could hold.
    #[test]
    fn presence_is_the_count_of_nonzero_bytes() {
        let mut seed = 0x9e37_79b9_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in 0..40 {
            for round in 0..200 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| match (next() % 4, round % 3) {
                        (0, _) | (_, 0) => 0,
                        (1, _) => 1,
                        (2, _) => 0x80,
                        _ => next() as u8,
                    })
                    .collect();
                let set = bytes.iter().filter(|&&b| b != 0).count();
                let want = if set == len {
                    Presence::All
                } else if set == 0 {
                    Presence::None
                } else {
                    Presence::Mixed
                };
                assert_eq!(presence(&bytes), want, "{bytes:02x?}");
                let all: Vec<u8> = bytes.iter().map(|&b| b | 1).collect();
                assert_eq!(presence(&all), Presence::All, "{all:02x?}");
            }
        }
    }
}
