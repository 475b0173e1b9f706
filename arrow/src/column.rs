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
use protojit::layers::arena::{MessageLayout, SlotIndex};
use protojit::{MapKey, MessageRef, Value};

use crate::values::{Read, RowCx, Values};

/// One selected field of a message: its slot and its builder.
pub(crate) struct Column {
    pub(crate) si: SlotIndex,
    pub(crate) field: FieldRef,
    pub(crate) cell: Cell,
    /// For a singular scalar: a typed access to its slot, checked once, so each row is
    /// one presence test and one load instead of a [`Value`] built and matched.
    pub(crate) read: Option<Read>,
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
}

impl Cell {
    /// Appends field `si` of `m` (this cell's field).
    #[inline]
    fn push_field(&mut self, m: &MessageRef<'_>, si: SlotIndex, cx: &mut RowCx) {
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
            Cell::Struct(_) | Cell::Time(_) | Cell::Wrapper(..) | Cell::Marker(_) => {
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
    fn push_absent(&mut self) {
        match self {
            // Under a null struct: a non-nullable child holds its default there.
            Cell::Values(v) if !v.is_nullable() => v.push_default(),
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) => v.push_null(),
            Cell::Struct(s) => s.push_absent(),
            Cell::Time(t) => t.push_null(),
            Cell::List(l) => l.push_empty(),
            Cell::Map(m) => m.push_empty(),
        }
    }

    /// Makes room for `rows` more rows (lists and maps: for their offsets only).
    fn reserve(&mut self, rows: usize) {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) => v.reserve(rows),
            Cell::Struct(s) => s.reserve(rows),
            Cell::Time(t) => t.values.reserve(rows),
            Cell::List(l) => l.offsets.reserve(rows),
            Cell::Map(m) => m.offsets.reserve(rows),
        }
    }

    fn finish(&mut self, shared: &[Buffer]) -> ArrayRef {
        match self {
            Cell::Values(v) | Cell::Wrapper(v, _) | Cell::Marker(v) => v.finish(shared),
            Cell::Struct(s) => Arc::new(s.finish(shared)),
            Cell::Time(t) => t.finish(),
            Cell::List(l) => l.finish(shared),
            Cell::Map(m) => m.finish(shared),
        }
    }
}

/// A message as a struct of its selected fields (the root is one too, never null).
pub(crate) struct StructCol {
    columns: Vec<Column>,
    nulls: Option<NullBufferBuilder>,
    len: usize,
}

impl StructCol {
    pub(crate) fn new(columns: Vec<Column>, nullable: bool) -> StructCol {
        StructCol { columns, nulls: nullable.then(|| NullBufferBuilder::new(0)), len: 0 }
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

    fn push_absent(&mut self) {
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
        self.len = 0;
        self.columns.iter_mut().map(|c| c.cell.finish(shared)).collect()
    }
}

/// A repeated field as a list.
pub(crate) struct ListCol {
    item_field: FieldRef,
    offsets: Vec<i32>,
    item: Cell,
}

impl ListCol {
    pub(crate) fn new(item_field: FieldRef, item: Cell) -> ListCol {
        ListCol { item_field, offsets: vec![0], item }
    }

    #[inline]
    fn push(&mut self, v: Value<'_>, cx: &mut RowCx) {
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

    fn push_empty(&mut self) {
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
    offsets: Vec<i32>,
    key: Values,
    value: Cell,
}

impl MapCol {
    pub(crate) fn new(entries_field: FieldRef, entries: Fields, key: Values, value: Cell) -> MapCol {
        MapCol { entries_field, entries, offsets: vec![0], key, value }
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
    seconds: SlotIndex,
    nanos: SlotIndex,
    values: Vec<i64>,
    nulls: NullBufferBuilder,
    data_type: DataType,
}

impl TimeCol {
    pub(crate) fn new(layout: &MessageLayout, data_type: DataType) -> TimeCol {
        TimeCol {
            seconds: layout.slot_by_number(1).expect("Timestamp and Duration have seconds"),
            nanos: layout.slot_by_number(2).expect("Timestamp and Duration have nanos"),
            values: Vec::new(),
            nulls: NullBufferBuilder::new(0),
            data_type,
        }
    }

    fn push_message(&mut self, m: &MessageRef<'_>, cx: &mut RowCx) {
        let seconds = m.value(self.seconds).as_i64().unwrap_or(0);
        let nanos = m.value(self.nanos).as_i32().unwrap_or(0);
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

    fn push_null(&mut self) {
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
