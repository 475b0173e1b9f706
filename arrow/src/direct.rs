//! The direct path: records read by the streaming decoder straight into the column builders, with no tree in between.
//!
//! Each [`Cell`] is a [`MessageSink`]: the walk hands it the fields of the message it
//! builds, in wire order, and the cell applies protobuf's rules as the tree would have:
//!
//! - a singular scalar is written at its row as it comes; a second value replaces it (the
//!   last on the wire wins);
//! - list items are appended as they come (order is wire order, as in the tree);
//! - a singular message met twice is merged: both visits write into the same open row;
//! - a repeated message's element is one row of the item column, closed at its end;
//! - setting a oneof member removes the other members' values from the row.
//!
//! Columns are filled lazily: a row a field is absent from costs nothing until a later
//! row of that column gets a value, or the batch finishes; then the rows in between get
//! the column's fill (null where nullable, else the default), in one `resize`. A row's end
//! touches only the lists, maps and messages met in it. Records have few of their fields
//! set, so this is most of what the direct path saves over walking a tree.
//!
//! Two cases the builders cannot undo cheaply make the sink stop (`Break`), and the
//! converter then rolls the row back and converts the record through the tree, counting
//! it ([`crate::BatchStats::tree_records`]): a oneof member replacing a message member
//! already met in the row, and a map whose row holds a key twice (or more than
//! [`MAP_DIRECT_ENTRIES`] entries). A record that fails to decode is rolled back the same
//! way, so no half row is ever left in the builders.

use std::ops::ControlFlow;

use protojit_arena::stream::{MessageSink, PackedRun, WireValue};
use protojit_arena::{SlotIndex, NO_INDEX};

use crate::column::{Cell, MapCol, StructCol, NO_COLUMN};
use crate::values::RowCx;

/// Entries of one map in one row beyond which the row takes the tree (the duplicate-key
/// check is quadratic, as the tree's own scan for small maps is).
pub(crate) const MAP_DIRECT_ENTRIES: usize = 64;

/// What a direct walk shares: the batch's row context and the record its values lie in.
pub(crate) struct DirectCx<'a> {
    pub(crate) row: RowCx,
    pub(crate) record: &'a [u8],
}

const GO: ControlFlow<()> = ControlFlow::Continue(());

impl<'a> MessageSink<'a> for Cell {
    type Cx = DirectCx<'a>;

    #[inline]
    fn value(&mut self, cx: &mut DirectCx<'a>, si: SlotIndex, value: WireValue<'a>) -> ControlFlow<()> {
        match self {
            Cell::Struct(s) => s.value(cx, si, value),
            // JSON text is written from a tree: the tree takes the record.
            Cell::Json(_) => ControlFlow::Break(()),
            Cell::Time(t) => {
                match value {
                    WireValue::I64(x) if si == t.seconds => t.pending.0 = x,
                    WireValue::I32(x) if si == t.nanos => t.pending.1 = x,
                    _ => {}
                }
                GO
            }
            Cell::Wrapper(v, wsi) => {
                if si == *wsi {
                    v.set_pending(value, cx.record);
                }
                GO
            }
            Cell::Map(m) => {
                // An entry's fields: the key (slot 0) and a scalar value (slot 1).
                match si.index() {
                    0 => m.key.set_pending(value, cx.record),
                    1 => {
                        if let Cell::Values(v) = &mut m.value {
                            v.set_pending(value, cx.record);
                            m.has_value = true;
                        }
                    }
                    _ => {}
                }
                GO
            }
            Cell::Marker(_) | Cell::Values(_) | Cell::List(_) => GO,
        }
    }

    #[inline]
    fn begin(&mut self, _: &mut DirectCx<'a>, si: SlotIndex) -> ControlFlow<(), Option<&mut Cell>> {
        match self {
            Cell::Struct(s) => s.begin(si),
            Cell::Json(_) => ControlFlow::Break(()),
            // A message-valued map entry's value: merged like a singular field.
            Cell::Map(m) if si.index() == 1 && !matches!(m.value, Cell::Values(_)) => {
                m.has_value = true;
                ControlFlow::Continue(Some(&mut m.value))
            }
            _ => ControlFlow::Continue(None),
        }
    }

    #[inline]
    fn end(&mut self, cx: &mut DirectCx<'a>, si: SlotIndex) -> ControlFlow<()> {
        match self {
            Cell::Struct(s) => s.end(cx, si),
            Cell::Json(_) => ControlFlow::Break(()),
            _ => GO,
        }
    }

    const WANTS_RUNS: bool = true;

    #[inline]
    fn packed<R: PackedRun<'a>>(&mut self, cx: &mut DirectCx<'a>, si: SlotIndex, values: R) -> ControlFlow<()> {
        match self {
            Cell::Struct(s) => s.packed(cx, si, values),
            _ => {
                for v in values {
                    self.value(cx, si, v)?;
                }
                GO
            }
        }
    }
}

impl StructCol {
    /// A packed run of slot `si`: into its list column's values in one pass (the column
    /// found, its row touched, its buffer matched once per run, not per element).
    #[inline]
    fn packed<'a>(
        &mut self,
        cx: &mut DirectCx<'a>,
        si: SlotIndex,
        values: impl Iterator<Item = WireValue<'a>>,
    ) -> ControlFlow<()> {
        self.set_oneof(si)?;
        let ci = self.column_of[si.index()];
        if ci == NO_COLUMN {
            // Not selected: the walk checks the run.
            return GO;
        }
        if matches!(self.columns[ci as usize].cell, Cell::List(_)) {
            self.touch(ci as usize);
        }
        match &mut self.columns[ci as usize].cell {
            Cell::List(l) => {
                if let Cell::Values(v) = &mut l.item {
                    v.extend_wire(values, &cx.row);
                }
            }
            // A packed run of a singular field (protobuf accepts one): the last element wins.
            Cell::Values(v) => {
                if let Some(last) = values.last() {
                    v.set_at(self.len, last, &cx.row);
                }
            }
            _ => {}
        }
        GO
    }

    /// Marks column `ci` as met in the open row (its row end then needs closing); a list's
    /// or map's offsets are brought up to the open row first.
    #[inline]
    fn touch(&mut self, ci: usize) {
        let row = self.len;
        let column = &mut self.columns[ci];
        if column.present {
            return;
        }
        column.present = true;
        self.touched.push(ci as u32);
        match &mut column.cell {
            Cell::List(l) => pad_offsets(&mut l.offsets, row),
            Cell::Map(m) => pad_offsets(&mut m.offsets, row),
            _ => {}
        }
    }

    #[inline]
    fn value(&mut self, cx: &mut DirectCx<'_>, si: SlotIndex, value: WireValue<'_>) -> ControlFlow<()> {
        self.set_oneof(si)?;
        let ci = self.column_of[si.index()];
        if ci == NO_COLUMN {
            return GO;
        }
        let row = self.len;
        match &mut self.columns[ci as usize].cell {
            Cell::Values(v) => v.set_at(row, value, &cx.row),
            Cell::List(_) => {
                self.touch(ci as usize);
                if let Cell::List(l) = &mut self.columns[ci as usize].cell {
                    if let Cell::Values(v) = &mut l.item {
                        v.push_wire(value, &cx.row);
                    }
                }
            }
            _ => {}
        }
        GO
    }

    #[inline]
    fn begin(&mut self, si: SlotIndex) -> ControlFlow<(), Option<&mut Cell>> {
        self.set_oneof(si)?;
        let ci = self.column_of[si.index()];
        if ci == NO_COLUMN {
            return ControlFlow::Continue(None);
        }
        // JSON text is written from a tree: the tree takes the record.
        let json = |c: &Cell| matches!(c, Cell::Json(_));
        match &self.columns[ci as usize].cell {
            Cell::Json(_) => return ControlFlow::Break(()),
            Cell::List(l) if json(&l.item) => return ControlFlow::Break(()),
            Cell::Map(m) if json(&m.value) => return ControlFlow::Break(()),
            _ => {}
        }
        let row = self.len;
        self.touch(ci as usize);
        let column = &mut self.columns[ci as usize];
        if let Cell::Map(m) = &mut column.cell {
            let entries = m.key.len() - *m.offsets.last().expect("offsets start with 0") as usize;
            if entries >= MAP_DIRECT_ENTRIES {
                return ControlFlow::Break(());
            }
            m.has_value = false;
            // The map cell itself reads the entry (key and value).
            return ControlFlow::Continue(Some(&mut column.cell));
        }
        match &mut column.cell {
            Cell::List(l) => ControlFlow::Continue(Some(&mut l.item)),
            cell => {
                // A singular message: its row is this struct's open row.
                if let Cell::Struct(child) = cell {
                    child.pad_to(row);
                }
                ControlFlow::Continue(Some(cell))
            }
        }
    }

    #[inline]
    fn end(&mut self, cx: &mut DirectCx<'_>, si: SlotIndex) -> ControlFlow<()> {
        let ci = self.column_of[si.index()];
        match &mut self.columns[ci as usize].cell {
            // An element is complete: its row is closed now.
            Cell::List(l) => {
                let row = l.item.len();
                l.item.close_present(row, cx);
                GO
            }
            Cell::Map(m) => m.end_entry(cx),
            _ => GO,
        }
    }

    /// Slot `si` is being set: if it is a oneof member, the other members are removed.
    #[inline]
    fn set_oneof(&mut self, si: SlotIndex) -> ControlFlow<()> {
        let oneof = self.oneof_of[si.index()];
        if oneof == NO_INDEX {
            return GO;
        }
        self.clear_oneof(si, oneof)
    }

    #[cold]
    fn clear_oneof(&mut self, si: SlotIndex, oneof: u32) -> ControlFlow<()> {
        let row = self.len;
        for (i, &o) in self.oneof_of.iter().enumerate() {
            let ci = self.column_of[i];
            if o != oneof || i == si.index() || ci == NO_COLUMN {
                continue;
            }
            let other = &mut self.columns[ci as usize];
            match &mut other.cell {
                Cell::Values(v) => v.clear_at(row),
                // A message member met in this row may have appended list items below it:
                // the tree takes the record.
                _ if other.present => return ControlFlow::Break(()),
                _ => {}
            }
        }
        GO
    }

    /// Closes the open row: the lists, maps and messages met in it get their row, and the
    /// struct's validity bit is set. Columns not met are filled later ([`Self::pad_deep`]).
    pub(crate) fn close_row(&mut self, cx: &mut DirectCx<'_>) {
        let row = self.len;
        for ci in self.touched.drain(..) {
            let c = &mut self.columns[ci as usize];
            c.present = false;
            match &mut c.cell {
                Cell::List(l) => {
                    let end = l.item.len() as i32;
                    l.offsets.push(end);
                }
                Cell::Map(m) => {
                    let end = m.key.len() as i32;
                    m.offsets.push(end);
                }
                cell => cell.close_present(row, cx),
            }
        }
        if let Some(n) = &mut self.nulls {
            n.append_non_null();
        }
        self.len += 1;
    }

    /// Rows up to `rows` (exclusive) this struct is absent from: null (its columns are
    /// filled lazily).
    pub(crate) fn pad_to(&mut self, rows: usize) {
        if self.len < rows {
            if let Some(n) = &mut self.nulls {
                n.append_n_nulls(rows - self.len);
            }
            self.len = rows;
        }
    }

    /// Fills every column, here and in nested structs, up to its struct's rows: before a
    /// batch is finished, and before the tree appends a row (it appends to every column).
    pub(crate) fn pad_deep(&mut self) {
        let rows = self.len;
        for c in &mut self.columns {
            c.cell.pad_to(rows);
            c.cell.pad_inner();
        }
    }

    /// Drops rows from `rows` on, and every pending value and open row below (a record
    /// that failed, or that the tree takes instead).
    pub(crate) fn truncate(&mut self, rows: usize) {
        self.touched.clear();
        for c in &mut self.columns {
            c.present = false;
            c.cell.truncate(rows);
        }
        if let Some(n) = &mut self.nulls {
            if n.len() > rows {
                n.truncate(rows);
            }
        }
        self.len = self.len.min(rows);
    }
}

/// Brings a list's or map's offsets up to row `row` (absent rows: empty): `row + 1`
/// entries, the last the start of row `row`.
#[inline]
fn pad_offsets(offsets: &mut Vec<i32>, row: usize) {
    if offsets.len() < row + 1 {
        let last = *offsets.last().expect("offsets start with 0");
        offsets.resize(row + 1, last);
    }
}

impl Cell {
    /// Rows (or items) appended so far.
    fn len(&self) -> usize {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) | Cell::Json(v) => v.len(),
            Cell::Struct(s) => s.len,
            Cell::Time(t) => t.values.len(),
            Cell::List(l) => l.offsets.len() - 1,
            Cell::Map(m) => m.offsets.len() - 1,
        }
    }

    /// Closes row `row` of a present message cell (a singular field met in its parent's
    /// row, or a list element or map value at its end).
    fn close_present(&mut self, row: usize, cx: &mut DirectCx<'_>) {
        match self {
            Cell::Struct(s) => {
                s.pad_to(row);
                s.close_row(cx);
            }
            Cell::Time(t) => {
                let (seconds, nanos) = std::mem::take(&mut t.pending);
                if t.values.len() < row {
                    let n = row - t.values.len();
                    t.values.resize(row, 0);
                    t.nulls.append_n_nulls(n);
                }
                t.push(seconds, nanos, &mut cx.row);
            }
            // A wrapper without its value holds the default.
            Cell::Wrapper(v, _) => v.set_pending_at(row, cx.record, &cx.row),
            Cell::Marker(v) => v.set_at(row, WireValue::Bool(true), &cx.row),
            // (A JSON cell hands its record to the tree before it is entered.)
            Cell::Values(_) | Cell::List(_) | Cell::Map(_) | Cell::Json(_) => unreachable!("not a message cell"),
        }
    }

    /// Fills this column up to `rows` rows.
    fn pad_to(&mut self, rows: usize) {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) | Cell::Json(v) => v.pad_to(rows),
            Cell::Struct(s) => s.pad_to(rows),
            Cell::Time(t) => {
                if t.values.len() < rows {
                    let n = rows - t.values.len();
                    t.values.resize(rows, 0);
                    t.nulls.append_n_nulls(n);
                }
            }
            Cell::List(l) => pad_offsets(&mut l.offsets, rows),
            Cell::Map(m) => pad_offsets(&mut m.offsets, rows),
        }
    }

    /// Fills the columns of the structs inside this one (nested, list items, map values).
    fn pad_inner(&mut self) {
        match self {
            Cell::Struct(s) => s.pad_deep(),
            Cell::List(l) => l.item.pad_inner(),
            Cell::Map(m) => m.value.pad_inner(),
            _ => {}
        }
    }

    /// Drops rows from `rows` on, and every pending value.
    fn truncate(&mut self, rows: usize) {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) | Cell::Json(v) => v.truncate(rows),
            Cell::Struct(s) => s.truncate(rows),
            Cell::Time(t) => {
                t.pending = (0, 0);
                if t.values.len() > rows {
                    t.values.truncate(rows);
                    t.nulls.truncate(rows);
                }
            }
            Cell::List(l) => {
                l.offsets.truncate(rows + 1);
                let items = *l.offsets.last().expect("offsets start with 0") as usize;
                l.item.truncate(items);
            }
            Cell::Map(m) => {
                m.has_value = false;
                m.offsets.truncate(rows + 1);
                let entries = *m.offsets.last().expect("offsets start with 0") as usize;
                m.key.truncate(entries);
                m.value.truncate(entries);
            }
        }
    }
}

impl MapCol {
    /// An entry ended: its key and value are appended (defaults for what it lacked); a key
    /// already in this row's entries makes the tree take the record (the last one wins,
    /// in the order of the winners, which appending cannot express).
    fn end_entry(&mut self, cx: &mut DirectCx<'_>) -> ControlFlow<()> {
        let new = self.key.len();
        self.key.set_pending_at(new, cx.record, &cx.row);
        let has_value = std::mem::take(&mut self.has_value);
        match &mut self.value {
            Cell::Values(v) => {
                if !has_value {
                    v.pending = self.value_default;
                }
                v.set_pending_at(new, cx.record, &cx.row);
            }
            // A message value met or not: present (an entry's message value is its default
            // message when missing).
            cell => cell.close_present(new, cx),
        }
        let row_start = *self.offsets.last().expect("offsets start with 0") as usize;
        if (row_start..new).any(|i| self.key.same(i, new)) {
            return ControlFlow::Break(());
        }
        GO
    }
}
