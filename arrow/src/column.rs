//! Column builders: one per selected field, filled from decoded messages and finished into Arrow arrays.
//!
//! Every builder appends exactly one row per call (a value, a default or a null), so the
//! children of a struct always have the struct's length, also under null parents: Arrow
//! wants a value slot under every null, and a non-nullable child must hold a valid value
//! there (its default).

use std::sync::Arc;

use arrow_array::types::{DurationNanosecondType, TimestampNanosecondType};
use arrow_array::{ArrayRef, ListArray, MapArray, PrimitiveArray, StructArray};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, Fields, TimeUnit};
use protojit::{MapKey, MessageRef, Value};
use protojit_arena::{MessageLayout, SlotIndex};

use crate::values::{Pending, Read, RowCx, Values};

/// One selected field of a message: its slot and its builder.
pub(crate) struct Column {
    pub(crate) si: SlotIndex,
    pub(crate) field: FieldRef,
    pub(crate) cell: Cell,
    /// For a singular scalar: a typed access to its slot, checked once, so each row is
    /// one presence test and one load instead of a [`Value`] built and matched.
    pub(crate) read: Option<Read>,
    /// The direct path: whether this singular message field was met in the current row.
    pub(crate) present: bool,
}

/// How one field (or list item, or map value) is built.
pub(crate) enum Cell {
    /// A scalar.
    Values(Values),
    /// A message, as a struct.
    Struct(StructCol),
    /// `google.protobuf.Timestamp` / `Duration`, as nanoseconds.
    Time(TimeCol),
    /// `google.protobuf.*Value`: the wrapped scalar (its slot in the wrapper), null when absent.
    Wrapper(Values, SlotIndex),
    /// A message without columns: `true` when present, null when absent.
    Marker(Values),
    /// A repeated field.
    List(Box<ListCol>),
    /// A map field.
    Map(Box<MapCol>),
    /// A message as proto3 JSON text ([`RecursionColumns::Json`](crate::RecursionColumns::Json)).
    Json(Values),
}

impl Cell {
    /// Appends field `si` of `m` (this cell's field).
    #[inline]
    pub(crate) fn push_field(&mut self, m: &MessageRef<'_>, si: SlotIndex, cx: &mut RowCx) {
        match self {
            Cell::Values(v) => {
                if v.is_nullable() && !m.is_present(si) {
                    v.push_null();
                } else {
                    v.push_value(&m.value(si), cx);
                }
            }
            Cell::List(l) => l.push(m.value(si), cx),
            Cell::Map(map) => map.push(m.value(si), cx),
            Cell::Struct(_) | Cell::Time(_) | Cell::Wrapper(..) | Cell::Marker(_) | Cell::Json(_) => {
                if m.is_present(si) {
                    match m.value(si) {
                        Value::Message(child) => self.push_message(&child, cx),
                        _ => unreachable!("message slot"),
                    }
                } else {
                    self.push_absent();
                }
            }
        }
    }

    /// Appends a present message (for message-typed cells).
    #[inline]
    fn push_message(&mut self, m: &MessageRef<'_>, cx: &mut RowCx) {
        match self {
            Cell::Struct(s) => s.push_message(m, cx),
            Cell::Time(t) => t.push_message(m, cx),
            Cell::Wrapper(v, si) => v.push_value(&m.value(*si), cx),
            Cell::Marker(v) => v.push_value(&Value::Bool(true), cx),
            Cell::Json(v) => {
                // (A JSON column is nullable: a message without a JSON form is null.)
                let mut json = std::mem::take(&mut cx.scratch);
                json.clear();
                match m
                    .write_json(&mut json, &protojit::JsonOptions::default())
                    .ok()
                    .and(std::str::from_utf8(&json).ok())
                {
                    Some(text) => v.push_value(&Value::String(text), cx),
                    None => {
                        v.push_null();
                        cx.stats.json_unprintable += 1;
                    }
                }
                cx.scratch = json;
            }
            Cell::Values(_) | Cell::List(_) | Cell::Map(_) => unreachable!("not a message cell"),
        }
    }

    /// Appends a present value (a list item or map value).
    #[inline]
    fn push_value(&mut self, v: &Value<'_>, cx: &mut RowCx) {
        match (self, v) {
            (Cell::Values(values), v) => values.push_value(v, cx),
            (cell, Value::Message(m)) => cell.push_message(m, cx),
            _ => unreachable!("value of another kind than its column"),
        }
    }

    /// Appends a row for an absent field (null where nullable, else the default).
    pub(crate) fn push_absent(&mut self) {
        match self {
            // Under a null struct: a non-nullable child holds its default there.
            Cell::Values(v) | Cell::Json(v) if !v.is_nullable() => v.push_default(),
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) | Cell::Json(v) => v.push_null(),
            Cell::Struct(s) => s.push_absent(),
            Cell::Time(t) => t.push_null(),
            Cell::List(l) => l.push_empty(),
            Cell::Map(m) => m.push_empty(),
        }
    }

    /// Makes room for `rows` more rows (lists and maps: for their offsets only).
    fn reserve(&mut self, rows: usize) {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) | Cell::Json(v) => v.reserve(rows),
            Cell::Struct(s) => s.reserve(rows),
            Cell::Time(t) => t.values.reserve(rows),
            Cell::List(l) => l.offsets.reserve(rows),
            Cell::Map(m) => m.offsets.reserve(rows),
        }
    }

    fn finish(&mut self, shared: &[Buffer]) -> ArrayRef {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) | Cell::Json(v) => v.finish(shared),
            Cell::Struct(s) => Arc::new(s.finish(shared)),
            Cell::Time(t) => t.finish(),
            Cell::List(l) => l.finish(shared),
            Cell::Map(m) => m.finish(shared),
        }
    }
}

/// A message as a struct of its selected fields (the root is one too, never null).
pub(crate) struct StructCol {
    pub(crate) columns: Vec<Column>,
    pub(crate) nulls: Option<NullBufferBuilder>,
    pub(crate) len: usize,
    /// The direct path's tables, by slot index of the message's layout: the slot's column
    /// ([`NO_COLUMN`] for none), and its oneof ([`NO_INDEX`] for none).
    pub(crate) column_of: Vec<u32>,
    pub(crate) oneof_of: Vec<u32>,
    /// The direct path: the columns met in the open row that its end must close (lists,
    /// maps, messages), each once.
    pub(crate) touched: Vec<u32>,
}

/// No column for this slot (an extension, or a field the recursion cut left out).
pub(crate) const NO_COLUMN: u32 = u32::MAX;

impl StructCol {
    pub(crate) fn new(columns: Vec<Column>, nullable: bool, layout: &MessageLayout) -> StructCol {
        let mut column_of = vec![NO_COLUMN; layout.slots().len()];
        for (ci, c) in columns.iter().enumerate() {
            column_of[c.si.index()] = ci as u32;
        }
        let oneof_of = layout.slots().iter().map(|s| s.oneof).collect();
        StructCol {
            columns,
            nulls: nullable.then(|| NullBufferBuilder::new(0)),
            len: 0,
            column_of,
            oneof_of,
            touched: Vec::new(),
        }
    }

    pub(crate) fn fields(&self) -> Fields {
        self.columns.iter().map(|c| c.field.clone()).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `rows` more rows in every column, so that filling a batch whose size
    /// is known does not grow (and copy) each column's buffers step by step.
    pub(crate) fn reserve(&mut self, rows: usize) {
        for c in &mut self.columns {
            c.cell.reserve(rows);
        }
    }

    #[inline]
    pub(crate) fn push_message(&mut self, m: &MessageRef<'_>, cx: &mut RowCx) {
        let block = m.block();
        for c in &mut self.columns {
            match (&c.read, &mut c.cell) {
                (Some(read), Cell::Values(values)) => values.push_read(&block, read, cx),
                _ => c.cell.push_field(m, c.si, cx),
            }
        }
        if let Some(n) = &mut self.nulls {
            n.append_non_null();
        }
        self.len += 1;
    }

    pub(crate) fn push_absent(&mut self) {
        for c in &mut self.columns {
            c.cell.push_absent();
        }
        match &mut self.nulls {
            Some(n) => n.append_null(),
            None => unreachable!("only nullable structs are absent"),
        }
        self.len += 1;
    }

    /// The struct of the rows so far (view columns point into `shared`, the batch's shared
    /// input blocks); the builder starts again empty.
    pub(crate) fn finish(&mut self, shared: &[Buffer]) -> StructArray {
        let nulls = self.nulls.as_mut().and_then(|n| n.finish());
        let len = std::mem::take(&mut self.len);
        if self.columns.is_empty() {
            return StructArray::new_empty_fields(len, nulls);
        }
        let arrays = self.columns.iter_mut().map(|c| c.cell.finish(shared)).collect();
        StructArray::new(self.fields(), arrays, nulls)
    }

    /// The finished columns, for a record batch.
    pub(crate) fn finish_columns(&mut self, shared: &[Buffer]) -> Vec<ArrayRef> {
        // The direct path fills absent rows lazily: every column gets its rows now.
        self.pad_deep();
        self.len = 0;
        self.columns.iter_mut().map(|c| c.cell.finish(shared)).collect()
    }
}

/// A repeated field as a list.
pub(crate) struct ListCol {
    item_field: FieldRef,
    pub(crate) offsets: Vec<i32>,
    pub(crate) item: Cell,
}

impl ListCol {
    pub(crate) fn new(item_field: FieldRef, item: Cell) -> ListCol {
        ListCol { item_field, offsets: vec![0], item }
    }

    #[inline]
    pub(crate) fn push(&mut self, v: Value<'_>, cx: &mut RowCx) {
        let Value::List(list) = v else { unreachable!("repeated slot") };
        let n = list.len();
        if n > 0 {
            // Numbers and enums come as slices; strings, bytes and messages one by one.
            let done = match &mut self.item {
                Cell::Values(values) => values.extend_list(&list, cx),
                _ => false,
            };
            if !done {
                for item in list.iter() {
                    self.item.push_value(&item, cx);
                }
            }
        }
        let last = *self.offsets.last().expect("offsets start with 0");
        self.offsets.push(last + n as i32);
    }

    pub(crate) fn push_empty(&mut self) {
        let last = *self.offsets.last().expect("offsets start with 0");
        self.offsets.push(last);
    }

    fn finish(&mut self, shared: &[Buffer]) -> ArrayRef {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let values = self.item.finish(shared);
        Arc::new(ListArray::new(self.item_field.clone(), OffsetBuffer::new(ScalarBuffer::from(offsets)), values, None))
    }
}

/// A map field as a map (one entry per distinct key, the last on the wire).
pub(crate) struct MapCol {
    entries_field: FieldRef,
    entries: Fields,
    pub(crate) offsets: Vec<i32>,
    pub(crate) key: Values,
    pub(crate) value: Cell,
    /// The direct path: whether the entry being read has met its value, and the value an
    /// entry without one takes (the value field's default: zero, or a closed enum's first
    /// value).
    pub(crate) has_value: bool,
    pub(crate) value_default: Pending,
}

impl MapCol {
    pub(crate) fn new(
        entries_field: FieldRef,
        entries: Fields,
        key: Values,
        value: Cell,
        value_default: Pending,
    ) -> MapCol {
        MapCol { entries_field, entries, offsets: vec![0], key, value, has_value: false, value_default }
    }

    fn push(&mut self, v: Value<'_>, cx: &mut RowCx) {
        let Value::Map(map) = v else { unreachable!("map slot") };
        let entries = map.entries_on_wire();
        let n = entries.len();
        let mut pushed = 0;
        if n <= 16 {
            // Few entries (the common case): the winners by a scan, without hashing.
            // Map entries have exactly the key (slot 0) and the value (slot 1).
            let key = |i: usize| {
                let entry = entries.get(i).expect("i < n");
                (MapKey::from_value(&entry.value(SlotIndex::new(0))).expect("map keys are scalars"), entry)
            };
            for i in 0..n {
                let (k, entry) = key(i);
                if (i + 1..n).any(|j| key(j).0 == k) {
                    continue; // a later entry has this key: it wins
                }
                self.key.push_value(&k.to_value(), cx);
                self.value.push_value(&entry.value(SlotIndex::new(1)), cx);
                pushed += 1;
            }
        } else {
            for (k, v) in map.iter() {
                self.key.push_value(&k.to_value(), cx);
                self.value.push_value(&v, cx);
                pushed += 1;
            }
        }
        let last = *self.offsets.last().expect("offsets start with 0");
        self.offsets.push(last + pushed);
    }

    fn push_empty(&mut self) {
        let last = *self.offsets.last().expect("offsets start with 0");
        self.offsets.push(last);
    }

    fn finish(&mut self, shared: &[Buffer]) -> ArrayRef {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let entries =
            StructArray::new(self.entries.clone(), vec![self.key.finish(shared), self.value.finish(shared)], None);
        Arc::new(MapArray::new(
            self.entries_field.clone(),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            entries,
            None,
            false,
        ))
    }
}

/// Timestamp or Duration as 64-bit nanoseconds.
pub(crate) struct TimeCol {
    pub(crate) seconds: SlotIndex,
    pub(crate) nanos: SlotIndex,
    pub(crate) values: Vec<i64>,
    pub(crate) nulls: NullBufferBuilder,
    data_type: DataType,
    /// The direct path: the current row's seconds and nanos (the last on the wire win).
    pub(crate) pending: (i64, i32),
}

impl TimeCol {
    pub(crate) fn new(layout: &MessageLayout, data_type: DataType) -> TimeCol {
        TimeCol {
            seconds: layout.slot_by_number(1).expect("Timestamp and Duration have seconds"),
            nanos: layout.slot_by_number(2).expect("Timestamp and Duration have nanos"),
            values: Vec::new(),
            nulls: NullBufferBuilder::new(0),
            data_type,
            pending: (0, 0),
        }
    }

    fn push_message(&mut self, m: &MessageRef<'_>, cx: &mut RowCx) {
        let seconds = m.value(self.seconds).as_i64().unwrap_or(0);
        let nanos = m.value(self.nanos).as_i32().unwrap_or(0);
        self.push(seconds, nanos, cx);
    }

    /// Appends a present value of `seconds` and `nanos`.
    pub(crate) fn push(&mut self, seconds: i64, nanos: i32, cx: &mut RowCx) {
        match seconds.checked_mul(1_000_000_000).and_then(|s| s.checked_add(i64::from(nanos))) {
            Some(v) => {
                self.values.push(v);
                self.nulls.append_non_null();
            }
            None => {
                cx.stats.time_out_of_range += 1;
                self.push_null();
            }
        }
    }

    pub(crate) fn push_null(&mut self) {
        self.values.push(0);
        self.nulls.append_null();
    }

    fn finish(&mut self) -> ArrayRef {
        let values = ScalarBuffer::from(std::mem::take(&mut self.values));
        let nulls = self.nulls.finish();
        match &self.data_type {
            DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
                Arc::new(PrimitiveArray::<TimestampNanosecondType>::new(values, nulls).with_timezone_opt(tz.clone()))
            }
            _ => Arc::new(PrimitiveArray::<DurationNanosecondType>::new(values, nulls)),
        }
    }
}
