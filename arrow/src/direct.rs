//! The direct path: records read by the streaming decoder straight into the column builders, with no tree in between.
//!
//! Each [`Cell`] is a [`MessageSink`]: the walk hands it the fields of the message it
//! builds, in wire order, and the cell applies protobuf's rules as the tree would have:
//!
//! - a singular scalar keeps its last value ([`Values::pending`]) and is appended when its
//!   row ends (a null or the default if none came);
//! - list items are appended as they come (order is wire order, as in the tree);
//! - a singular message met twice is merged: both visits go to the same pending row;
//! - a repeated message's element is one row of the item column, closed at its end;
//! - setting a oneof member clears the other members' pending values.
//!
//! Two cases the builders cannot undo cheaply make the sink stop (`Break`), and the
//! converter then rolls the row back and converts the record through the tree, counting
//! it ([`crate::BatchStats::tree_records`]): a oneof member replacing a message member
//! already met in the row, and a map whose row holds a key twice (or more than
//! [`MAP_DIRECT_ENTRIES`] entries). A record that fails to decode is rolled back the same
//! way, so no half row is ever left in the builders.

use std::ops::ControlFlow;

use protojit::layers::arena::{MessageSink, SlotIndex, WireValue, NO_INDEX};

use crate::column::{Cell, ListCol, MapCol, StructCol, NO_COLUMN};
use crate::values::{Pending, RowCx};

/// Entries of one map in one row beyond which the row takes the tree (the duplicate-key
/// check is quadratic, as the tree's own scan for small maps is).
pub(crate) const MAP_DIRECT_ENTRIES: i32 = 64;

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
            _ => GO,
        }
    }
}

impl StructCol {
    #[inline]
    fn value(&mut self, cx: &mut DirectCx<'_>, si: SlotIndex, value: WireValue<'_>) -> ControlFlow<()> {
        self.set_oneof(si)?;
        let ci = self.column_of[si.index()];
        if ci == NO_COLUMN {
            return GO;
        }
        match &mut self.columns[ci as usize].cell {
            Cell::Values(v) => v.set_pending(value, cx.record),
            Cell::List(l) => {
                if let Cell::Values(v) = &mut l.item {
                    v.push_wire(value, &cx.row);
                    l.count += 1;
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
        let column = &mut self.columns[ci as usize];
        if let Cell::Map(m) = &mut column.cell {
            if m.count >= MAP_DIRECT_ENTRIES {
                return ControlFlow::Break(());
            }
            m.has_value = false;
            // The map cell itself reads the entry (key and value).
            return ControlFlow::Continue(Some(&mut column.cell));
        }
        match &mut column.cell {
            Cell::List(l) => {
                l.count += 1;
                ControlFlow::Continue(Some(&mut l.item))
            }
            cell => {
                column.present = true;
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
                l.item.flush_present(cx);
                GO
            }
            Cell::Map(m) => m.end_entry(cx),
            _ => GO,
        }
    }

    /// Slot `si` is being set: if it is a oneof member, the other members are cleared.
    #[inline]
    fn set_oneof(&mut self, si: SlotIndex) -> ControlFlow<()> {
        let oneof = self.oneof_of[si.index()];
        if oneof == NO_INDEX {
            return GO;
        }
        for (i, &o) in self.oneof_of.iter().enumerate() {
            let ci = self.column_of[i];
            if o != oneof || i == si.index() || ci == NO_COLUMN {
                continue;
            }
            let other = &mut self.columns[ci as usize];
            match &mut other.cell {
                Cell::Values(v) => v.pending = Pending::None,
                // A message member met in this row may have appended list items below it:
                // the tree takes the record.
                _ if other.present => return ControlFlow::Break(()),
                _ => {}
            }
        }
        GO
    }

    /// Closes the current row: every column gets its row (pending values, list and map
    /// ends, nested rows present or absent), and the struct's validity bit is set.
    pub(crate) fn flush_row(&mut self, cx: &mut DirectCx<'_>) {
        for c in &mut self.columns {
            match &mut c.cell {
                Cell::Values(v) => v.flush_pending(cx.record, &cx.row),
                Cell::List(l) => l.close_row(),
                Cell::Map(m) => m.close_row(),
                cell if std::mem::take(&mut c.present) => cell.flush_present(cx),
                cell => cell.push_absent(),
            }
        }
        if let Some(n) = &mut self.nulls {
            n.append_non_null();
        }
        self.len += 1;
    }

    /// Drops rows from `rows` on, and every pending value below (a record that failed or
    /// that the tree takes instead).
    pub(crate) fn truncate(&mut self, rows: usize) {
        for c in &mut self.columns {
            c.present = false;
            c.cell.truncate(rows);
        }
        if let Some(n) = &mut self.nulls {
            n.truncate(rows);
        }
        self.len = rows;
    }
}

impl Cell {
    /// Closes the row of a present message cell (a singular field met in its parent's row,
    /// or a list element at its end).
    fn flush_present(&mut self, cx: &mut DirectCx<'_>) {
        match self {
            Cell::Struct(s) => s.flush_row(cx),
            Cell::Time(t) => {
                let (seconds, nanos) = std::mem::take(&mut t.pending);
                t.push(seconds, nanos, &mut cx.row);
            }
            // A wrapper without its value holds the default.
            Cell::Wrapper(v, _) => match v.pending {
                Pending::None => v.push_default(),
                _ => v.flush_pending(cx.record, &cx.row),
            },
            Cell::Marker(v) => v.push_wire(WireValue::Bool(true), &cx.row),
            Cell::Values(_) | Cell::List(_) | Cell::Map(_) => unreachable!("not a message cell"),
        }
    }

    /// Drops rows from `rows` on, and every pending value.
    fn truncate(&mut self, rows: usize) {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) => v.truncate(rows),
            Cell::Struct(s) => s.truncate(rows),
            Cell::Time(t) => {
                t.pending = (0, 0);
                t.values.truncate(rows);
                t.nulls.truncate(rows);
            }
            Cell::List(l) => {
                l.count = 0;
                l.offsets.truncate(rows + 1);
                let items = l.offsets[rows] as usize;
                l.item.truncate(items);
            }
            Cell::Map(m) => {
                m.count = 0;
                m.has_value = false;
                m.offsets.truncate(rows + 1);
                let entries = m.offsets[rows] as usize;
                m.key.truncate(entries);
                m.value.truncate(entries);
            }
        }
    }
}

impl ListCol {
    fn close_row(&mut self) {
        let last = *self.offsets.last().expect("offsets start with 0");
        self.offsets.push(last + std::mem::take(&mut self.count));
    }
}

impl MapCol {
    /// An entry ended: its key and value are appended (defaults for what it lacked); a key
    /// already in this row's entries makes the tree take the record (the last one wins,
    /// in the order of the winners, which appending cannot express).
    fn end_entry(&mut self, cx: &mut DirectCx<'_>) -> ControlFlow<()> {
        self.key.flush_pending(cx.record, &cx.row);
        if !std::mem::take(&mut self.has_value) {
            if let Cell::Values(v) = &mut self.value {
                v.pending = self.value_default;
            }
        }
        match &mut self.value {
            Cell::Values(v) => v.flush_pending(cx.record, &cx.row),
            // A message value met or not: present (an entry's message value is its default
            // message when missing).
            cell => cell.flush_present(cx),
        }
        let row_start = *self.offsets.last().expect("offsets start with 0") as usize;
        let new = row_start + self.count as usize;
        self.count += 1;
        if (row_start..new).any(|i| self.key.same(i, new)) {
            return ControlFlow::Break(());
        }
        GO
    }

    fn close_row(&mut self) {
        let last = *self.offsets.last().expect("offsets start with 0");
        self.offsets.push(last + std::mem::take(&mut self.count));
    }
}
