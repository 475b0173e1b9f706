//! Leaf columns: scalars, strings and bytes (offsets or views), enum dictionaries, the typed slot reads that fill them, and what a row append carries (`RowCx`).

use std::sync::Arc;

use arrow_array::builder::make_view;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray, PrimitiveArray, StringArray, StringViewArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;
use prost_reflect::EnumDescriptor;
use protojit::Value;
use protojit_arena::field::Bytes;
use protojit_arena::stream::WireValue;
use protojit_arena::{Access, BlockRef, MessageLayout, SlotIndex};

/// Counters a batch reports besides its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Timestamps and durations whose seconds and nanos do not fit 64-bit nanoseconds
    /// (beyond the years 1677-2262), written as nulls.
    pub time_out_of_range: u64,
    /// Records the direct path handed to the tree (see
    /// [`ConvertPath::DirectInterpreted`](crate::ConvertPath::DirectInterpreted)).
    pub tree_records: u64,
    /// Messages to be written as JSON text
    /// ([`RecursionColumns::Json`](crate::RecursionColumns::Json)) that have no proto3 JSON
    /// form (a non-finite number in a `google.protobuf.Value`, a Timestamp out of range, an
    /// `Any` of a type the schema lacks), written as nulls.
    pub json_unprintable: u64,
}

/// What appending a row needs besides the message: the batch's counters, and the shared
/// input block the record lies in (view columns point into it instead of copying).
#[derive(Default)]
pub(crate) struct RowCx {
    pub(crate) stats: BatchStats,
    pub(crate) source: Option<Source>,
    /// Where JSON text is written before it is appended.
    pub(crate) scratch: Vec<u8>,
}

/// A block of input the batch shares (an Arrow buffer): its index among the batch's shared
/// blocks, and its address range. At most `u32::MAX` bytes, so view offsets fit.
#[derive(Clone, Copy)]
pub(crate) struct Source {
    pub(crate) id: u32,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// A typed access to a singular scalar slot (see [`Column::read`]).
#[derive(Clone, Copy)]
pub(crate) enum Read {
    Bool(Access<bool>),
    I32(Access<i32>),
    I64(Access<i64>),
    U32(Access<u32>),
    U64(Access<u64>),
    F32(Access<f32>),
    F64(Access<f64>),
    Str(Access<Bytes>),
}

impl Read {
    /// The access for singular scalar slot `si` of `layout` read into `values`, if the
    /// slot is one.
    pub(crate) fn new(layout: &MessageLayout, si: SlotIndex, values: &Values) -> Option<Read> {
        Some(match &values.data {
            Data::Bool(..) => Read::Bool(layout.access(si).ok()?),
            Data::I32(..) | Data::Enum(..) => Read::I32(layout.access(si).ok()?),
            Data::I64(..) => Read::I64(layout.access(si).ok()?),
            Data::U32(..) => Read::U32(layout.access(si).ok()?),
            Data::U64(..) => Read::U64(layout.access(si).ok()?),
            Data::F32(..) => Read::F32(layout.access(si).ok()?),
            Data::F64(..) => Read::F64(layout.access(si).ok()?),
            Data::Text { .. } | Data::View(_) => Read::Str(layout.access(si).ok()?),
        })
    }
}

/// An enum type's names as a dictionary: the declared numbers in order (an alias shares
/// its number's entry), then any undeclared numbers a batch met, as decimal text.
#[derive(Clone)]
pub(crate) struct EnumDict {
    /// Sorted and distinct.
    numbers: Vec<i32>,
    names: Vec<String>,
    extra: Vec<i32>,
}

impl EnumDict {
    pub(crate) fn new(e: &EnumDescriptor) -> EnumDict {
        let mut numbers: Vec<i32> = e.values().map(|v| v.number()).collect();
        numbers.sort_unstable();
        numbers.dedup();
        let names = numbers.iter().map(|&n| e.get_value(n).map(|v| v.name().to_owned()).unwrap_or_default()).collect();
        EnumDict { numbers, names, extra: Vec::new() }
    }

    #[inline]
    pub(crate) fn key(&mut self, number: i32) -> i32 {
        // Sorted and distinct numbers are one run (most enums) iff their span is their
        // count: a declared number's key is then its distance from the first, no search.
        if let (Some(&lo), Some(&hi)) = (self.numbers.first(), self.numbers.last()) {
            let (len, k) = (self.numbers.len() as i64, i64::from(number) - i64::from(lo));
            if i64::from(hi) - i64::from(lo) + 1 == len && (0..len).contains(&k) {
                return k as i32;
            }
        }
        match self.numbers.binary_search(&number) {
            Ok(i) => i as i32,
            Err(_) => {
                let i = match self.extra.iter().position(|&n| n == number) {
                    Some(i) => i,
                    None => {
                        self.extra.push(number);
                        self.extra.len() - 1
                    }
                };
                (self.numbers.len() + i) as i32
            }
        }
    }

    /// The key of a row without a value: any key (0) under a null, the enum's 0 in a
    /// column without nulls (a field without presence).
    pub(crate) fn fill(&mut self, nullable: bool) -> i32 {
        if nullable {
            0
        } else {
            self.key(0)
        }
    }

    pub(crate) fn values(&mut self) -> ArrayRef {
        let extra = std::mem::take(&mut self.extra);
        let names = self.names.iter().cloned().chain(extra.iter().map(|n| n.to_string()));
        Arc::new(StringArray::from_iter_values(names))
    }
}

/// Leaf values (scalars, strings, bytes, enums), with a validity bitmap when nullable.
pub(crate) struct Values {
    pub(crate) data: Data,
    pub(crate) nulls: Option<NullBufferBuilder>,
    /// The direct path's value of a singular field in the row being read: the last one on
    /// the wire wins, so it is appended when the row ends.
    pub(crate) pending: Pending,
}

/// A singular value met in the current row and not yet appended (the direct path).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum Pending {
    /// Absent so far.
    #[default]
    None,
    /// A number, bool or enum.
    Number(WireValue<'static>),
    /// A string or bytes value: its range in the record.
    Span(usize, usize),
}

/// The values themselves, by type.
pub(crate) enum Data {
    Bool(BooleanBufferBuilder),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// `string` (`utf8`) or `bytes`: offsets and data.
    Text {
        utf8: bool,
        offsets: Vec<i32>,
        data: Vec<u8>,
        /// The rows this batch is expected to reach ([`Values::reserve`]'s hint, 0 when
        /// unknown): after a chunk, `data` is sized for them at the chunk's bytes per row,
        /// instead of doubling (and copying) its way there.
        expect: usize,
    },
    /// `string` or `bytes` as views ([`StringColumns::Views`](crate::StringColumns)).
    View(Views),
    /// Enum keys into the dictionary.
    Enum(Vec<i32>, EnumDict),
}

/// A `Utf8View` / `BinaryView` column. Values of at most 12 bytes live in their view;
/// longer ones point into a shared input block when the record lies in one ([`Source`]),
/// else into the column's own block (index 0), where they are copied.
pub(crate) struct Views {
    utf8: bool,
    views: Vec<u128>,
    own: Vec<u8>,
    /// The shared blocks this column points into, by shared id; block `i + 1` is `used[i]`.
    used: Vec<u32>,
}

impl Views {
    /// Whether views `i` and `j` are equal, or (long values in different places, whose
    /// bytes this column cannot see) may be.
    fn maybe_same(&self, i: usize, j: usize) -> bool {
        let (a, b) = (self.views[i], self.views[j]);
        let len = |v: u128| v as u32;
        if a == b {
            return true;
        }
        // Different lengths, or short values (held whole in the view): surely different.
        // Long values with different 4-byte prefixes: surely different.
        let surely_different = len(a) != len(b) || len(a) <= 12 || (a >> 32) as u32 != (b >> 32) as u32;
        !surely_different
    }

    #[inline]
    pub(crate) fn push(&mut self, b: &[u8], source: Option<Source>) {
        if b.len() <= 12 {
            self.views.push(make_view(b, 0, 0));
            return;
        }
        let addr = b.as_ptr() as usize;
        if let Some(s) = source {
            if addr >= s.start && addr + b.len() <= s.start + s.len {
                let block = match self.used.iter().rposition(|&u| u == s.id) {
                    Some(i) => i,
                    None => {
                        self.used.push(s.id);
                        self.used.len() - 1
                    }
                };
                // A source is at most u32::MAX bytes long.
                self.views.push(make_view(b, block as u32 + 1, (addr - s.start) as u32));
                return;
            }
        }
        // The own block holds at most a batch's input (`MAX_BATCH_INPUT`), so offsets fit.
        self.views.push(make_view(b, 0, self.own.len() as u32));
        self.own.extend_from_slice(b);
    }

    pub(crate) fn finish(&mut self, shared: &[Buffer], nulls: Option<arrow_buffer::NullBuffer>) -> ArrayRef {
        let views = ScalarBuffer::from(std::mem::take(&mut self.views));
        let mut blocks = vec![Buffer::from_vec(std::mem::take(&mut self.own))];
        blocks.extend(self.used.drain(..).map(|id| shared[id as usize].clone()));
        if self.utf8 {
            Arc::new(StringViewArray::new(views, blocks, nulls))
        } else {
            Arc::new(BinaryViewArray::new(views, blocks, nulls))
        }
    }
}

impl Values {
    pub(crate) fn new(data: Data) -> Values {
        Values { data, nulls: None, pending: Pending::None }
    }

    pub(crate) fn bool() -> Values {
        Values::new(Data::Bool(BooleanBufferBuilder::new(0)))
    }

    /// A `string` (`utf8`) or `bytes` column: offsets and data, or views.
    pub(crate) fn text(utf8: bool, views: bool) -> Values {
        Values::new(if views {
            Data::View(Views { utf8, views: Vec::new(), own: Vec::new(), used: Vec::new() })
        } else {
            Data::Text { utf8, offsets: vec![0], data: Vec::new(), expect: 0 }
        })
    }

    /// The same builder with a validity bitmap.
    pub(crate) fn nullable(mut self) -> Values {
        self.nulls = Some(NullBufferBuilder::new(0));
        self
    }

    pub(crate) fn is_nullable(&self) -> bool {
        self.nulls.is_some()
    }

    pub(crate) fn data_type(&self) -> DataType {
        match &self.data {
            Data::Bool(..) => DataType::Boolean,
            Data::I32(..) => DataType::Int32,
            Data::I64(..) => DataType::Int64,
            Data::U32(..) => DataType::UInt32,
            Data::U64(..) => DataType::UInt64,
            Data::F32(..) => DataType::Float32,
            Data::F64(..) => DataType::Float64,
            Data::Text { utf8: true, .. } => DataType::Utf8,
            Data::Text { utf8: false, .. } => DataType::Binary,
            Data::View(v) if v.utf8 => DataType::Utf8View,
            Data::View(_) => DataType::BinaryView,
            Data::Enum(..) => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        }
    }

    /// Appends a null (with a zero value under it).
    pub(crate) fn push_null(&mut self) {
        self.push_zero();
        match &mut self.nulls {
            Some(n) => n.append_null(),
            None => unreachable!("null appended to a non-nullable column"),
        }
    }

    /// Appends the default of a field without presence (zero, empty, the enum's 0).
    pub(crate) fn push_default(&mut self) {
        match &mut self.data {
            Data::Enum(v, dict) => v.push(dict.key(0)),
            _ => self.push_zero(),
        }
        if let Some(n) = &mut self.nulls {
            n.append_non_null();
        }
    }

    /// Appends a zero value (or key 0, or an empty string), without touching validity.
    pub(crate) fn push_zero(&mut self) {
        match &mut self.data {
            Data::Bool(b) => b.append(false),
            Data::I32(v) => v.push(0),
            Data::I64(v) => v.push(0),
            Data::U32(v) => v.push(0),
            Data::U64(v) => v.push(0),
            Data::F32(v) => v.push(0.0),
            Data::F64(v) => v.push(0.0),
            Data::Enum(v, _) => v.push(0),
            Data::Text { offsets, data, .. } => offsets.push(data.len() as i32),
            Data::View(v) => v.views.push(0),
        }
    }

    /// Appends the bytes of a `string` or `bytes` value.
    #[inline]
    pub(crate) fn push_bytes(&mut self, b: &[u8], cx: &RowCx) {
        match &mut self.data {
            Data::Text { offsets, data, .. } => {
                data.extend_from_slice(b);
                offsets.push(data.len() as i32);
            }
            Data::View(v) => v.push(b, cx.source),
            _ => unreachable!("bytes appended to a column of numbers"),
        }
    }

    /// Appends a value of this column's kind.
    #[inline]
    pub(crate) fn push_value(&mut self, value: &Value<'_>, cx: &RowCx) {
        match (&mut self.data, value) {
            (Data::Bool(b), Value::Bool(x)) => b.append(*x),
            (Data::I32(v), Value::I32(x)) => v.push(*x),
            (Data::I32(v), Value::Enum(e)) => v.push(e.number),
            (Data::I64(v), Value::I64(x)) => v.push(*x),
            (Data::U32(v), Value::U32(x)) => v.push(*x),
            (Data::U64(v), Value::U64(x)) => v.push(*x),
            (Data::F32(v), Value::F32(x)) => v.push(*x),
            (Data::F64(v), Value::F64(x)) => v.push(*x),
            (Data::Enum(v, dict), Value::Enum(e)) => v.push(dict.key(e.number)),
            (Data::Text { utf8, .. } | Data::View(Views { utf8, .. }), v) => {
                let utf8 = *utf8;
                match v {
                    Value::String(s) => self.push_bytes(s.as_bytes(), cx),
                    // A `string` read as bytes is not UTF-8; converters decode with UTF-8
                    // checked on every string, so this is a `bytes` field.
                    Value::Bytes(b) if !utf8 => self.push_bytes(b, cx),
                    Value::Bytes(b) => self.push_bytes(String::from_utf8_lossy(b).as_bytes(), cx),
                    _ => unreachable!("text column given {v:?}"),
                }
            }
            (_, v) => unreachable!("value {v:?} of another kind than its column"),
        }
        if let Some(n) = &mut self.nulls {
            n.append_non_null();
        }
    }

    /// Appends a singular slot through its typed access: the stored value, and (when
    /// nullable) whether it is set. Unset slots hold zeros (blocks start zeroed; an
    /// inactive oneof member reads as zero), which is every proto3 implicit default.
    #[inline]
    pub(crate) fn push_read(&mut self, block: &BlockRef<'_>, read: &Read, cx: &RowCx) {
        // A column reads messages of its own type only (the struct it belongs to).
        const SAME: &str = "a column reads messages of its own type";
        fn number<T>(v: &mut Vec<T>, (set, x): (bool, T)) -> bool {
            v.push(x);
            set
        }
        let set = match (read, &mut self.data) {
            (Read::Bool(a), Data::Bool(b)) => {
                let (set, x) = block.get_at(a).expect(SAME);
                b.append(x);
                set
            }
            (Read::I32(a), Data::I32(v)) => number(v, block.get_at(a).expect(SAME)),
            (Read::I32(a), Data::Enum(v, dict)) => {
                let (set, x) = block.get_at(a).expect(SAME);
                v.push(dict.key(x));
                set
            }
            (Read::I64(a), Data::I64(v)) => number(v, block.get_at(a).expect(SAME)),
            (Read::U32(a), Data::U32(v)) => number(v, block.get_at(a).expect(SAME)),
            (Read::U64(a), Data::U64(v)) => number(v, block.get_at(a).expect(SAME)),
            (Read::F32(a), Data::F32(v)) => number(v, block.get_at(a).expect(SAME)),
            (Read::F64(a), Data::F64(v)) => number(v, block.get_at(a).expect(SAME)),
            (Read::Str(a), Data::Text { .. } | Data::View(_)) => {
                // Converters decode with UTF-8 checked on every string, so `string`
                // bytes are text.
                let (set, b) = block.get_bytes_at(a).expect(SAME);
                self.push_bytes(b, cx);
                set
            }
            _ => unreachable!("a read of another kind than its column"),
        };
        if let Some(n) = &mut self.nulls {
            n.append(set);
        }
    }

    /// Appends a whole repeated field of numbers or enums from its slice; `false` for
    /// strings and bytes (appended one by one by the caller).
    #[inline]
    pub(crate) fn extend_list(&mut self, list: &protojit::ListRef<'_>, cx: &RowCx) -> bool {
        match &mut self.data {
            Data::Bool(b) => b.append_slice(list.as_slice::<bool>().expect("bool list")),
            Data::I32(v) => match list.as_slice::<i32>() {
                Some(s) => v.extend_from_slice(s),
                None => v.extend_from_slice(list.enum_numbers().expect("int32 or enum list").0),
            },
            Data::I64(v) => v.extend_from_slice(list.as_slice::<i64>().expect("int64 list")),
            Data::U32(v) => v.extend_from_slice(list.as_slice::<u32>().expect("uint32 list")),
            Data::U64(v) => v.extend_from_slice(list.as_slice::<u64>().expect("uint64 list")),
            Data::F32(v) => v.extend_from_slice(list.as_slice::<f32>().expect("float list")),
            Data::F64(v) => v.extend_from_slice(list.as_slice::<f64>().expect("double list")),
            Data::Enum(v, dict) => {
                let (numbers, _) = list.enum_numbers().expect("enum list");
                v.extend(numbers.iter().map(|&n| dict.key(n)));
            }
            Data::Text { .. } | Data::View(_) => {
                let Some(items) = list.bytes_iter() else { return false };
                for b in items {
                    self.push_bytes(b, cx);
                }
            }
        }
        true
    }

    /// Appends a value off the wire, of this column's kind (the direct path).
    #[inline]
    pub(crate) fn push_wire(&mut self, value: WireValue<'_>, cx: &RowCx) {
        match (&mut self.data, value) {
            (Data::Bool(b), WireValue::Bool(x)) => b.append(x),
            (Data::I32(v), WireValue::I32(x) | WireValue::Enum(x)) => v.push(x),
            (Data::I64(v), WireValue::I64(x)) => v.push(x),
            (Data::U32(v), WireValue::U32(x)) => v.push(x),
            (Data::U64(v), WireValue::U64(x)) => v.push(x),
            (Data::F32(v), WireValue::F32(x)) => v.push(x),
            (Data::F64(v), WireValue::F64(x)) => v.push(x),
            (Data::Enum(v, dict), WireValue::Enum(x)) => v.push(dict.key(x)),
            // `string`s come checked (converters check every one), `bytes` as they are.
            (Data::Text { .. } | Data::View(_), WireValue::Str(s)) => self.push_bytes(s.as_bytes(), cx),
            (Data::Text { .. } | Data::View(_), WireValue::Bytes(b)) => self.push_bytes(b, cx),
            (_, v) => unreachable!("value {v:?} of another kind than its column"),
        }
        if let Some(n) = &mut self.nulls {
            n.append_non_null();
        }
    }

    /// Appends every value of a packed run (each of the column's kind), matching the
    /// column's buffer once for the run rather than once per element as
    /// [`push_wire`](Self::push_wire) does.
    pub(crate) fn extend_wire<'v>(&mut self, values: impl Iterator<Item = WireValue<'v>>, cx: &RowCx) {
        let other = |v: WireValue<'_>| -> ! { unreachable!("value {v:?} of another kind than its column") };
        let before = self.len();
        match &mut self.data {
            Data::I32(out) => out.extend(values.map(|v| match v {
                WireValue::I32(x) | WireValue::Enum(x) => x,
                v => other(v),
            })),
            Data::I64(out) => out.extend(values.map(|v| if let WireValue::I64(x) = v { x } else { other(v) })),
            Data::U32(out) => out.extend(values.map(|v| if let WireValue::U32(x) = v { x } else { other(v) })),
            Data::U64(out) => out.extend(values.map(|v| if let WireValue::U64(x) = v { x } else { other(v) })),
            Data::F32(out) => out.extend(values.map(|v| if let WireValue::F32(x) = v { x } else { other(v) })),
            Data::F64(out) => out.extend(values.map(|v| if let WireValue::F64(x) = v { x } else { other(v) })),
            // Bools and enum keys: one at a time (strings never come packed).
            _ => return values.for_each(|v| self.push_wire(v, cx)),
        }
        let n = self.len() - before;
        if let Some(nulls) = &mut self.nulls {
            nulls.append_n_non_nulls(n);
        }
    }

    /// Keeps `value` as the row's value (the last on the wire wins); `record` is the input
    /// the value's bytes lie in. (Wrappers: appended when their message ends.)
    #[inline]
    pub(crate) fn set_pending(&mut self, value: WireValue<'_>, record: &[u8]) {
        let span = |b: &[u8]| Pending::Span(b.as_ptr() as usize - record.as_ptr() as usize, b.len());
        self.pending = match value {
            WireValue::Str(s) => span(s.as_bytes()),
            WireValue::Bytes(b) => span(b),
            WireValue::Bool(x) => Pending::Number(WireValue::Bool(x)),
            WireValue::I32(x) => Pending::Number(WireValue::I32(x)),
            WireValue::I64(x) => Pending::Number(WireValue::I64(x)),
            WireValue::U32(x) => Pending::Number(WireValue::U32(x)),
            WireValue::U64(x) => Pending::Number(WireValue::U64(x)),
            WireValue::F32(x) => Pending::Number(WireValue::F32(x)),
            WireValue::F64(x) => Pending::Number(WireValue::F64(x)),
            WireValue::Enum(x) => Pending::Number(WireValue::Enum(x)),
        };
    }

    /// The pending value as row `row` (none: the default, not null), cleared.
    #[inline]
    pub(crate) fn set_pending_at(&mut self, row: usize, record: &[u8], cx: &RowCx) {
        match std::mem::take(&mut self.pending) {
            Pending::None => {
                self.pad_to(row);
                self.push_default();
            }
            Pending::Number(v) => self.set_at(row, v, cx),
            Pending::Span(start, len) => self.set_at(row, WireValue::Bytes(&record[start..start + len]), cx),
        }
    }

    /// Rows appended so far (the direct path appends lazily: rows a field was absent from
    /// are filled in when a later row gets a value, or when the batch finishes).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match &self.data {
            Data::Bool(b) => b.len(),
            Data::I32(v) | Data::Enum(v, _) => v.len(),
            Data::I64(v) => v.len(),
            Data::U32(v) => v.len(),
            Data::U64(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::Text { offsets, .. } => offsets.len() - 1,
            Data::View(v) => v.views.len(),
        }
    }

    /// Makes `value` row `row`: rows before it that have none get the column's fill (null
    /// where nullable, else the default), and a value already in row `row` is replaced
    /// (the last on the wire wins).
    #[inline]
    pub(crate) fn set_at(&mut self, row: usize, value: WireValue<'_>, cx: &RowCx) {
        // The common case in one match: a number for the next row of a column without
        // validity (fields without presence: most of proto3).
        if self.nulls.is_none() {
            macro_rules! next {
                ($v:expr, $x:expr) => {
                    if $v.len() == row {
                        $v.push($x);
                        return;
                    }
                };
            }
            match (&mut self.data, value) {
                (Data::I32(v), WireValue::I32(x) | WireValue::Enum(x)) => next!(v, x),
                (Data::I64(v), WireValue::I64(x)) => next!(v, x),
                (Data::U32(v), WireValue::U32(x)) => next!(v, x),
                (Data::U64(v), WireValue::U64(x)) => next!(v, x),
                (Data::F32(v), WireValue::F32(x)) => next!(v, x),
                (Data::F64(v), WireValue::F64(x)) => next!(v, x),
                _ => {}
            }
        }
        let len = self.len();
        if len > row {
            self.drop_row(row);
        } else if len < row {
            self.pad_to(row);
        }
        self.push_wire(value, cx);
    }

    /// Removes the value of row `row` if it has one (a oneof member another replaced).
    #[inline]
    pub(crate) fn clear_at(&mut self, row: usize) {
        if self.len() > row {
            self.drop_row(row);
        }
    }

    /// Drops row `row`, the last one.
    fn drop_row(&mut self, row: usize) {
        let extra = matches!(&self.data, Data::Enum(keys, dict) if keys[row] as usize >= dict.numbers.len());
        if extra {
            // An undeclared enum number the dictionary may hold for this row alone.
            self.truncate(row);
        } else {
            self.cut(row);
        }
    }

    /// Fills rows up to `rows` (exclusive) with nulls where nullable, else defaults.
    pub(crate) fn pad_to(&mut self, rows: usize) {
        let len = self.len();
        if len >= rows {
            return;
        }
        let n = rows - len;
        match &mut self.data {
            Data::Bool(b) => b.append_n(n, false),
            Data::I32(v) => v.resize(rows, 0),
            Data::I64(v) => v.resize(rows, 0),
            Data::U32(v) => v.resize(rows, 0),
            Data::U64(v) => v.resize(rows, 0),
            Data::F32(v) => v.resize(rows, 0.0),
            Data::F64(v) => v.resize(rows, 0.0),
            Data::Enum(v, dict) => {
                let fill = dict.fill(self.nulls.is_some());
                v.resize(rows, fill);
            }
            Data::Text { offsets, data, .. } => offsets.resize(rows + 1, data.len() as i32),
            Data::View(v) => v.views.resize(rows, 0),
        }
        if let Some(nulls) = &mut self.nulls {
            nulls.append_n_nulls(n);
        }
    }

    /// Drops the rows from `rows` on (a record that failed), and any pending value. An
    /// enum dictionary keeps only the undeclared numbers the remaining rows use (they were
    /// added in row order); a view column's own block keeps the dropped bytes unreferenced.
    pub(crate) fn truncate(&mut self, rows: usize) {
        self.pending = Pending::None;
        if self.len() <= rows {
            return;
        }
        self.cut(rows);
        if let Data::Enum(keys, dict) = &mut self.data {
            let used = keys.iter().map(|&k| k as usize + 1).max().unwrap_or(0);
            dict.extra.truncate(used.saturating_sub(dict.numbers.len()));
        }
    }

    /// Drops the rows from `rows` on (`rows` < len).
    fn cut(&mut self, rows: usize) {
        if let Some(n) = &mut self.nulls {
            n.truncate(rows);
        }
        match &mut self.data {
            Data::Bool(b) => b.truncate(rows),
            Data::I32(v) | Data::Enum(v, _) => v.truncate(rows),
            Data::I64(v) => v.truncate(rows),
            Data::U32(v) => v.truncate(rows),
            Data::U64(v) => v.truncate(rows),
            Data::F32(v) => v.truncate(rows),
            Data::F64(v) => v.truncate(rows),
            Data::Text { offsets, data, .. } => {
                offsets.truncate(rows + 1);
                data.truncate(offsets[rows] as usize);
            }
            Data::View(v) => v.views.truncate(rows),
        }
    }

    /// Whether rows `i` and `j` hold the same value (map keys: integers, bools, strings);
    /// for long views in other blocks, whether they may (the caller then takes the tree).
    pub(crate) fn same(&self, i: usize, j: usize) -> bool {
        match &self.data {
            Data::Bool(b) => b.get_bit(i) == b.get_bit(j),
            Data::I32(v) | Data::Enum(v, _) => v[i] == v[j],
            Data::I64(v) => v[i] == v[j],
            Data::U32(v) => v[i] == v[j],
            Data::U64(v) => v[i] == v[j],
            Data::F32(v) => v[i].to_bits() == v[j].to_bits(),
            Data::F64(v) => v[i].to_bits() == v[j].to_bits(),
            Data::Text { offsets, data, .. } => {
                let at = |k: usize| &data[offsets[k] as usize..offsets[k + 1] as usize];
                at(i) == at(j)
            }
            Data::View(v) => v.maybe_same(i, j),
        }
    }

    pub(crate) fn reserve(&mut self, rows: usize) {
        match &mut self.data {
            Data::Bool(b) => b.reserve(rows),
            Data::I32(v) | Data::Enum(v, _) => v.reserve(rows),
            Data::I64(v) => v.reserve(rows),
            Data::U32(v) => v.reserve(rows),
            Data::U64(v) => v.reserve(rows),
            Data::F32(v) => v.reserve(rows),
            Data::F64(v) => v.reserve(rows),
            Data::Text { offsets, expect, .. } => {
                offsets.reserve(rows);
                *expect = (offsets.len() - 1).saturating_add(rows);
            }
            Data::View(v) => v.views.reserve(rows),
        }
    }

    pub(crate) fn finish(&mut self, shared: &[Buffer]) -> ArrayRef {
        let nulls = self.nulls.as_mut().and_then(|n| n.finish());
        fn prim<T: arrow_array::ArrowPrimitiveType>(
            v: &mut Vec<T::Native>,
            nulls: Option<arrow_buffer::NullBuffer>,
        ) -> ArrayRef {
            Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(std::mem::take(v)), nulls))
        }
        match &mut self.data {
            Data::Bool(b) => Arc::new(BooleanArray::new(b.finish(), nulls)),
            Data::I32(v) => prim::<Int32Type>(v, nulls),
            Data::I64(v) => prim::<Int64Type>(v, nulls),
            Data::U32(v) => prim::<UInt32Type>(v, nulls),
            Data::U64(v) => prim::<UInt64Type>(v, nulls),
            Data::F32(v) => prim::<Float32Type>(v, nulls),
            Data::F64(v) => prim::<Float64Type>(v, nulls),
            Data::Enum(v, dict) => {
                let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(std::mem::take(v)), nulls);
                Arc::new(DictionaryArray::<Int32Type>::new(keys, dict.values()))
            }
            Data::Text { utf8, offsets, data, expect } => {
                *expect = 0;
                let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                let data = Buffer::from_vec(std::mem::take(data));
                if *utf8 {
                    // Every string appended came from a `&str`.
                    Arc::new(StringArray::new(offsets, data, nulls))
                } else {
                    Arc::new(BinaryArray::new(offsets, data, nulls))
                }
            }
            Data::View(v) => v.finish(shared, nulls),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EnumDict;

    /// Keys as the dictionary defines them (a declared number's place among the sorted
    /// numbers, then undeclared ones in the order met), for enums of one run of numbers
    /// (found without a search) and with gaps, aliases and negative numbers.
    #[test]
    fn enum_keys_are_places_in_the_dictionary() {
        let schema = protojit::Schema::from_proto_source(
            "e.proto",
            r#"syntax = "proto3"; package e;
               enum Run { R0 = 0; R1 = 1; R2 = 2; R3 = 3; }
               enum Low { option allow_alias = true; L0 = 0; LM2 = -2; LM1 = -1; L1 = 1; ALSO = 1; }
               enum Gap { G0 = 0; G2 = 2; G7 = 7; }
               message M { Run r = 1; Low l = 2; Gap g = 3; }"#,
        )
        .unwrap();
        for name in ["e.Run", "e.Low", "e.Gap"] {
            let e = schema.pool().get_enum_by_name(name).unwrap();
            let mut numbers: Vec<i32> = e.values().map(|v| v.number()).collect();
            numbers.sort_unstable();
            numbers.dedup();
            let mut dict = EnumDict::new(&e);
            let mut extra: Vec<i32> = Vec::new();
            for n in [-5, -2, -1, 0, 1, 2, 3, 4, 7, 9, 4, -5, i32::MIN, i32::MAX, 3, 0] {
                let want = match numbers.binary_search(&n) {
                    Ok(i) => i,
                    Err(_) => {
                        if !extra.contains(&n) {
                            extra.push(n);
                        }
                        numbers.len() + extra.iter().position(|&x| x == n).unwrap()
                    }
                };
                assert_eq!(dict.key(n), want as i32, "{name}: {n}");
            }
        }
    }
}
