//! The compiled direct path: a converter's columns as a plan for compiled column appenders, and each chunk of their buffers moved into the column builders.
//!
//! The plan names every column the converter builds (`ColumnPlan`, in the builders'
//! order: a struct's columns, depth first), so a chunk is moved by walking the builders
//! and the plan side by side. The machine code writes one row per record; here a chunk's
//! cells become each column's values and validity in one pass per column, strings are
//! copied from their records, and list offsets come from the items' ends.

use arrow_buffer::{BooleanBuffer, NullBuffer, NullBufferBuilder};
use protojit::layers::arena::{FieldKind, LayoutIndex, Layouts};
use protojit::layers::jit::{Appender, ChunkColumns, ColumnPlan, PlanCell, PlanField, PlanMessage};

use crate::column::{Cell, StructCol};
use crate::values::{Data, RowCx, Values};

/// A converter's compiled appender and its plan.
pub(crate) struct Compiled {
    pub(crate) appender: Appender,
    planned: Planned,
}

/// A converter's columns as a plan for compiled appenders.
pub(crate) struct Planned {
    plan: ColumnPlan,
    /// The first column of each message of the plan.
    first: Vec<usize>,
    /// The `string` columns (their bytes must be UTF-8: the code checks ASCII only).
    texts: Vec<usize>,
    /// The lists of `string`s, likewise.
    text_lists: Vec<usize>,
}

impl Planned {
    /// The plan of the columns under `root` (of type `li`), or why compiled appenders
    /// cannot read them.
    pub(crate) fn new(layouts: &Layouts, li: LayoutIndex, root: &StructCol, max_depth: u32) -> Result<Planned, String> {
        let mut plan = ColumnPlan::default();
        add(layouts, li, root, &mut plan)?;
        if plan.messages.len() > max_depth as usize {
            return Err(format!("{} nested messages in the columns exceed the depth limit", plan.messages.len()));
        }
        let mut first = Vec::with_capacity(plan.messages.len());
        let mut texts = Vec::new();
        let mut text_lists = Vec::new();
        let mut n = 0;
        for m in &plan.messages {
            first.push(n);
            let layout = layouts.get(m.layout);
            for (k, f) in m.fields.iter().enumerate() {
                if layout.slot(f.slot).kind == FieldKind::String {
                    match f.cell {
                        PlanCell::Bytes => texts.push(n + k),
                        PlanCell::BytesList => text_lists.push(n + k),
                        _ => {}
                    }
                }
            }
            n += m.fields.len();
        }
        plan.check(layouts).map_err(|e| e.to_string())?;
        Ok(Planned { plan, first, texts, text_lists })
    }

    /// Compiles the appender (what fails is a code generation error, as text).
    pub(crate) fn compile(self, layouts: &Layouts) -> Result<Compiled, String> {
        let appender = Appender::compile(layouts, &self.plan, &Default::default())
            .map_err(|e| format!("compiling the column appenders failed: {e}"))?;
        Ok(Compiled { appender, planned: self })
    }
}

impl Compiled {
    /// Whether the strings of the row just appended are UTF-8 (else the tree takes the
    /// record, and says where): checked in full only where the code saw a byte that is
    /// not ASCII.
    pub(crate) fn texts_ok(&self, cols: &ChunkColumns, record: &[u8]) -> bool {
        if !cols.last_row_non_ascii() {
            return true; // the code saw ASCII only
        }
        let row = cols.rows() - 1;
        let utf8 = |cell: u64| {
            let (at, len) = ((cell & 0xffff_ffff) as usize, (cell >> 32) as usize);
            record.get(at..at + len).is_some_and(|text| std::str::from_utf8(text).is_ok())
        };
        self.planned.texts.iter().all(|&c| utf8(cols.cell(c, row)))
            && self.planned.text_lists.iter().all(|&c| {
                let ends = cols.ends(c);
                let from = if row == 0 { 0 } else { ends[row - 1] as usize };
                cols.items(c)[from..ends[row] as usize].iter().all(|&cell| utf8(cell))
            })
    }

    /// Moves the rows of `cols` (records `records`, in order) into the builders under `root`.
    pub(crate) fn flush(&self, root: &mut StructCol, cols: &ChunkColumns, records: &[&[u8]], cx: &RowCx) {
        debug_assert_eq!(cols.rows(), records.len());
        self.flush_struct(root, 0, cols, records, cx);
    }

    fn flush_struct(&self, s: &mut StructCol, i: usize, cols: &ChunkColumns, records: &[&[u8]], cx: &RowCx) {
        let first = self.planned.first[i];
        for (k, c) in s.columns.iter_mut().enumerate() {
            let col = first + k;
            match (self.planned.plan.messages[i].fields[k].cell, &mut c.cell) {
                (PlanCell::Number, Cell::Values(v)) => v.extend_cells(cols.values(col), Some(cols.valid(col))),
                (PlanCell::Bytes, Cell::Values(v)) => v.extend_spans(cols.values(col), cols.valid(col), records, cx),
                (PlanCell::Message(j), Cell::Struct(child)) => {
                    if let Some(nulls) = &mut child.nulls {
                        cols.valid(col).iter().for_each(|&b| nulls.append(b != 0));
                    }
                    self.flush_struct(child, j, cols, records, cx);
                }
                (cell @ (PlanCell::List | PlanCell::BytesList), Cell::List(l)) => {
                    let base = *l.offsets.last().expect("offsets start with 0");
                    // A batch's items are bounded by its input (`MAX_BATCH_INPUT`), so they fit.
                    l.offsets.extend(cols.ends(col).iter().map(|&e| base + e as i32));
                    let Cell::Values(items) = &mut l.item else { unreachable!("a planned list holds values") };
                    if cell == PlanCell::List {
                        items.extend_cells(cols.items(col), None);
                    } else {
                        items.extend_item_spans(cols.items(col), cols.ends(col), records, cx);
                    }
                }
                _ => unreachable!("the plan was made from these columns"),
            }
        }
        s.len += cols.rows();
    }
}

/// Adds the message of `s` (type `li`) and the messages under it to `plan`; its index.
fn add(layouts: &Layouts, li: LayoutIndex, s: &StructCol, plan: &mut ColumnPlan) -> Result<usize, String> {
    let i = plan.messages.len();
    plan.messages.push(PlanMessage { layout: li, fields: Vec::new() });
    let layout = layouts.get(li);
    if layout.slots().iter().any(|slot| slot.is_extension) {
        // The tree decodes extensions (and checks their strings); compiled code skips them.
        return Err(format!("{} has extensions", layout.descriptor().full_name()));
    }
    // A message field without a column (cut at `max_recursion`, or a oneof member a
    // projection keeps): the tree decodes what it holds, checks included; the code would
    // skip it.
    let uncolumned = layout
        .slots()
        .iter()
        .enumerate()
        .any(|(si, slot)| slot.kind.is_message() && !s.columns.iter().any(|c| c.si.index() == si));
    if uncolumned {
        return Err(format!("{} has message fields without columns", layout.descriptor().full_name()));
    }
    let mut fields = Vec::with_capacity(s.columns.len());
    for c in &s.columns {
        let slot = layout.slot(c.si);
        let what = |kind: &str| format!("{}: {kind}", c.field.name());
        let cell = match &c.cell {
            Cell::Values(v) if c.read.is_some() => match v.data {
                Data::Text { .. } | Data::View(_) => PlanCell::Bytes,
                _ => PlanCell::Number,
            },
            Cell::Struct(child) => PlanCell::Message(add(layouts, LayoutIndex::new(slot.child), child, plan)?),
            Cell::List(l) => match &l.item {
                Cell::Values(v) if !v.is_nullable() => match v.data {
                    Data::Text { .. } | Data::View(_) => PlanCell::BytesList,
                    _ => PlanCell::List,
                },
                _ => return Err(what("a list of messages")),
            },
            Cell::Values(_) => return Err(what("a value read another way")),
            Cell::Time(_) => return Err(what("a timestamp or duration")),
            Cell::Wrapper(..) => return Err(what("a wrapper")),
            Cell::Marker(_) => return Err(what("a message without columns")),
            Cell::Map(_) => return Err(what("a map")),
        };
        fields.push(PlanField { slot: c.si, cell });
    }
    plan.messages[i].fields = fields;
    Ok(i)
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
            // Eight rows a byte, 64 a word: not a bit at a time.
            let bits = match valid {
                Some(valid) => BooleanBuffer::collect_bool(cells.len(), |i| cells[i] != 0 && valid[i] != 0),
                None => BooleanBuffer::collect_bool(cells.len(), |i| cells[i] != 0),
            };
            b.append_buffer(&bits);
            if let (Some(n), Some(valid)) = (&mut self.nulls, valid) {
                append_validity(n, valid);
            }
            return;
        }
        match valid {
            Some(valid) => {
                // Most columns of a chunk are present in every row or in none: no mask then.
                let set = valid.iter().filter(|&&b| b != 0).count();
                if set == valid.len() {
                    self.extend_masked(cells.iter().copied());
                } else if set == 0 {
                    self.extend_masked(std::iter::repeat_n(0, cells.len()));
                } else {
                    // 0 or all ones: a select the loops below vectorize.
                    let mask = |b: u8| 0u64.wrapping_sub((b != 0) as u64);
                    self.extend_masked(cells.iter().zip(valid).map(|(&c, &b)| c & mask(b)));
                }
                if let Some(n) = &mut self.nulls {
                    append_validity(n, valid);
                }
            }
            None => self.extend_masked(cells.iter().copied()),
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

/// Appends one validity bit per presence byte, a whole run at once where the chunk's
/// field is present in every row or in none (sparse records: most columns).
fn append_validity(n: &mut NullBufferBuilder, valid: &[u8]) {
    let set = valid.iter().filter(|&&b| b != 0).count();
    if set == valid.len() {
        n.append_n_non_nulls(set);
    } else if set == 0 {
        n.append_n_nulls(valid.len());
    } else {
        n.append_buffer(&NullBuffer::new(BooleanBuffer::collect_bool(valid.len(), |i| valid[i] != 0)));
    }
}
