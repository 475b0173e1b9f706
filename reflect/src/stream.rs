//! The streaming visitor: typed callbacks straight from the wire, in wire order, with no tree and no arena.

use std::ops::ControlFlow;

use protojit_arena::stream::{walk, MessageSink, PackedRun, RunKind, WireValue};
use protojit_arena::{DecodeError, DecodeOptions, EnumType, FieldKind, LayoutIndex, Layouts, MessageLayout, SlotIndex};

use crate::{Descend, EnumValue, FieldInfo};

/// Typed callbacks for [`stream_message`]: each value as the decoder reads it off the wire.
/// Every method has a default (do nothing, walk into messages), and every callback may
/// return `ControlFlow::Break(())` to stop the walk early.
///
/// Unlike the tree [`Visitor`](crate::Visitor), which sees a decoded message in
/// field-number order with protobuf's merge rules applied, a streaming visitor sees the
/// wire as it is:
///
/// - **wire order**: fields come in the order they were written (usually number order,
///   but any order is valid protobuf);
/// - **every occurrence**: a singular field written twice is reported twice (the last
///   one is the field's value: "last one wins" is the visitor's to apply), a message
///   field written twice is begun twice (protobuf merges the two), and a oneof member
///   written after another replaces it;
/// - **elements in wire order**: an unpacked repeated field's elements are one call each;
///   a packed run of numbers is one call of the plural method ([`i64s`](Self::i64s),
///   [`bools`](Self::bools), ...) with an iterator that decodes the elements as it is
///   advanced (no buffer; what the visitor leaves unread is still checked), whose default
///   makes one call of the singular method per element; a closed enum's run comes
///   element by element (its undeclared values are left out); a map is its entries, each a message with `key` (1) and
///   `value` (2) as far as they are on the wire (an encoder may leave out a default key
///   or value; the tree visitor shows both always), duplicates included;
/// - **no unknown fields**: unknown fields, a known number in another wire type and a
///   closed enum's undeclared values are checked and passed over, as the tree keeps them
///   aside.
///
/// Malformed input is the same [`DecodeError`] (kind and offset) the decoders give; the
/// callbacks made before the error have seen the values before it.
#[allow(unused_variables)]
pub trait StreamVisitor<'a> {
    /// A `bool`.
    fn bool(&mut self, field: FieldInfo<'a>, v: bool) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// An `int32`, `sint32` or `sfixed32`.
    fn i32(&mut self, field: FieldInfo<'a>, v: i32) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// An `int64`, `sint64` or `sfixed64`.
    fn i64(&mut self, field: FieldInfo<'a>, v: i64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `uint32` or `fixed32`.
    fn u32(&mut self, field: FieldInfo<'a>, v: u32) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `uint64` or `fixed64`.
    fn u64(&mut self, field: FieldInfo<'a>, v: u64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `float`.
    fn f32(&mut self, field: FieldInfo<'a>, v: f32) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `double`.
    fn f64(&mut self, field: FieldInfo<'a>, v: f64) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `string` (checked UTF-8 where the decode options say so).
    fn string(&mut self, field: FieldInfo<'a>, v: &'a str) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `bytes` (or a `string` that is not UTF-8, possible only without validation).
    fn bytes(&mut self, field: FieldInfo<'a>, v: &'a [u8]) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A `string` the decode options leave unchecked (a field whose features say
    /// `utf8_validation = NONE`, as every proto2 string's do, under the default
    /// [`Utf8Check`](protojit_arena::Utf8Check); every string under `Off`): its bytes as the
    /// wire has them. By default [`string`](Self::string) when they are UTF-8, else
    /// [`bytes`](Self::bytes); override it to take the bytes without that check.
    fn unchecked_string(&mut self, field: FieldInfo<'a>, v: &'a [u8]) -> ControlFlow<()> {
        match std::str::from_utf8(v) {
            Ok(s) => self.string(field, s),
            Err(_) => self.bytes(field, v),
        }
    }
    /// An enum value.
    fn enum_value(&mut self, field: FieldInfo<'a>, v: EnumValue<'a>) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    /// A packed run of `bool`s (by default, one [`bool`](Self::bool) call per element).
    fn bools<I: Iterator<Item = bool>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.bool(field, v))
    }
    /// A packed run of `int32`, `sint32` or `sfixed32` values (by default, one
    /// [`i32`](Self::i32) call per element).
    fn i32s<I: Iterator<Item = i32>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.i32(field, v))
    }
    /// A packed run of `int64`, `sint64` or `sfixed64` values (by default, one
    /// [`i64`](Self::i64) call per element).
    fn i64s<I: Iterator<Item = i64>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.i64(field, v))
    }
    /// A packed run of `uint32` or `fixed32` values (by default, one [`u32`](Self::u32)
    /// call per element).
    fn u32s<I: Iterator<Item = u32>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.u32(field, v))
    }
    /// A packed run of `uint64` or `fixed64` values (by default, one [`u64`](Self::u64)
    /// call per element).
    fn u64s<I: Iterator<Item = u64>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.u64(field, v))
    }
    /// A packed run of `float`s (by default, one [`f32`](Self::f32) call per element).
    fn f32s<I: Iterator<Item = f32>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.f32(field, v))
    }
    /// A packed run of `double`s (by default, one [`f64`](Self::f64) call per element).
    fn f64s<I: Iterator<Item = f64>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
        values.into_iter().try_for_each(|v| self.f64(field, v))
    }
    /// A packed run of an open enum's numbers, of type `ty` (by default, one
    /// [`enum_value`](Self::enum_value) call per element).
    fn enums<I: Iterator<Item = i32>>(
        &mut self,
        field: FieldInfo<'a>,
        numbers: I,
        ty: &'a EnumType,
    ) -> ControlFlow<()> {
        numbers.into_iter().try_for_each(|n| self.enum_value(field, EnumValue::new(n, ty)))
    }
    /// A message or group begins (singular, an element, or a map entry): whether to walk
    /// its fields (then [`end_message`](Self::end_message) is called) or pass over it
    /// (it is still checked).
    fn message(&mut self, field: FieldInfo<'a>) -> ControlFlow<(), Descend> {
        ControlFlow::Continue(Descend::Yes)
    }
    /// The end of a message walked after [`message`](Self::message) returned `Yes`.
    fn end_message(&mut self, field: FieldInfo<'a>) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Walks `input` as a message of layout `root`, calling `visitor` per value in wire order
/// (see [`StreamVisitor`]). Returns `Break` if a callback stopped the walk.
pub fn stream_message<'a, V: StreamVisitor<'a>>(
    layouts: &'a Layouts,
    root: LayoutIndex,
    input: &'a [u8],
    options: &DecodeOptions,
    visitor: &mut V,
) -> Result<ControlFlow<()>, DecodeError> {
    walk(layouts, root, input, options, &mut VisitorSink::new(layouts, root, visitor), &mut ())
}

/// A [`StreamVisitor`] as the [`MessageSink`] a walk calls (the interpreter's
/// [`walk`], or compiled code's over the same layouts): it keeps the layouts of the messages
/// being walked, the innermost one apart (read per value), its parents on a stack.
pub struct VisitorSink<'a, 'v, V> {
    visitor: &'v mut V,
    layouts: &'a Layouts,
    current: &'a MessageLayout,
    /// The parents of `current`, outermost first: the first [`INLINE_PARENTS`] in place,
    /// deeper ones in `deep`, so that a walk of a message nested less than that allocates
    /// nothing (a small message's walk is mostly its set-up).
    parents: [&'a MessageLayout; INLINE_PARENTS],
    depth: usize,
    deep: Vec<&'a MessageLayout>,
}

/// How many parents a [`VisitorSink`] keeps without allocating.
const INLINE_PARENTS: usize = 8;

impl<'a, 'v, V> VisitorSink<'a, 'v, V> {
    /// `visitor` as the sink of a walk of a message of layout `root` (of `layouts`).
    pub fn new(layouts: &'a Layouts, root: LayoutIndex, visitor: &'v mut V) -> Self {
        let current = layouts.get(root);
        VisitorSink { visitor, layouts, current, parents: [current; INLINE_PARENTS], depth: 0, deep: Vec::new() }
    }

    #[inline(always)]
    fn field(&self, si: SlotIndex) -> FieldInfo<'a> {
        FieldInfo::new(self.current, si)
    }

    fn enum_type(&self, si: SlotIndex) -> Option<&'a EnumType> {
        self.current.slot_enum(si).map(|e| self.layouts.enum_type(e))
    }
}

impl<'a, V: StreamVisitor<'a>> MessageSink<'a> for VisitorSink<'a, '_, V> {
    type Cx = ();

    // Always inlined: the walk calls it from a loop per kind, where the match below folds
    // to the one callback of that kind.
    #[inline(always)]
    fn value(&mut self, _: &mut (), si: SlotIndex, value: WireValue<'a>) -> ControlFlow<()> {
        let field = self.field(si);
        match value {
            WireValue::Bool(v) => self.visitor.bool(field, v),
            WireValue::I32(v) => self.visitor.i32(field, v),
            WireValue::I64(v) => self.visitor.i64(field, v),
            WireValue::U32(v) => self.visitor.u32(field, v),
            WireValue::U64(v) => self.visitor.u64(field, v),
            WireValue::F32(v) => self.visitor.f32(field, v),
            WireValue::F64(v) => self.visitor.f64(field, v),
            WireValue::Enum(n) => match self.enum_type(si) {
                Some(ty) => self.visitor.enum_value(field, EnumValue::new(n, ty)),
                None => self.visitor.i32(field, n),
            },
            // Checked by the walk.
            WireValue::Str(s) => self.visitor.string(field, s),
            // A string the decode options leave unchecked.
            WireValue::Bytes(b) if field.kind() == FieldKind::String => self.visitor.unchecked_string(field, b),
            WireValue::Bytes(b) => self.visitor.bytes(field, b),
        }
    }

    // Packed runs of numbers go to the visitor's plural methods, with iterators that decode
    // as they are advanced; the walk makes one instance per kind's conversion, in which
    // the kind's arm below is the one taken and the element's variant is known.
    const WANTS_RUNS: bool = true;

    #[inline(always)]
    fn packed<R: PackedRun<'a>>(&mut self, _: &mut (), si: SlotIndex, values: R) -> ControlFlow<()> {
        let field = self.field(si);
        // `R::KIND` is a constant: each instance keeps one arm.
        match R::KIND {
            RunKind::Bool => self.visitor.bools(field, values.map(|x| bits(x) != 0)),
            RunKind::I32 => self.visitor.i32s(field, values.map(|x| bits(x) as i32)),
            RunKind::I64 => self.visitor.i64s(field, values.map(|x| bits(x) as i64)),
            RunKind::U32 => self.visitor.u32s(field, values.map(|x| bits(x) as u32)),
            RunKind::U64 => self.visitor.u64s(field, values.map(bits)),
            RunKind::F32 => self.visitor.f32s(field, values.map(|x| f32::from_bits(bits(x) as u32))),
            RunKind::F64 => self.visitor.f64s(field, values.map(|x| f64::from_bits(bits(x)))),
            RunKind::Enum => match self.enum_type(si) {
                Some(ty) => self.visitor.enums(field, values.map(|x| bits(x) as i32), ty),
                None => self.visitor.i32s(field, values.map(|x| bits(x) as i32)),
            },
        }
    }

    #[inline(always)]
    fn begin(&mut self, _: &mut (), si: SlotIndex) -> ControlFlow<(), Option<&mut Self>> {
        let field = self.field(si);
        match self.visitor.message(field)? {
            Descend::Yes => {
                match self.parents.get_mut(self.depth) {
                    Some(parent) => *parent = self.current,
                    None => self.deep.push(self.current),
                }
                self.depth += 1;
                self.current = self.layouts.get(LayoutIndex::new(field.slot().child));
                ControlFlow::Continue(Some(self))
            }
            Descend::No => ControlFlow::Continue(None),
        }
    }

    #[inline]
    fn end(&mut self, _: &mut (), si: SlotIndex) -> ControlFlow<()> {
        // The walk calls `end` once per `begin` that descended: `depth` is not 0 here.
        self.depth = self.depth.saturating_sub(1);
        self.current = match self.parents.get(self.depth) {
            Some(&parent) => parent,
            None => self.deep.pop().unwrap_or(self.current),
        };
        self.visitor.end_message(self.field(si))
    }
}

/// A packed element's bits: its integer (sign-extended), or its float's bits. A run's
/// elements are all of its `KIND`'s variant, so this folds to that arm.
#[inline(always)]
fn bits(v: WireValue<'_>) -> u64 {
    match v {
        WireValue::Bool(b) => b as u64,
        WireValue::I32(x) | WireValue::Enum(x) => x as i64 as u64,
        WireValue::I64(x) => x as u64,
        WireValue::U32(x) => x as u64,
        WireValue::U64(x) => x,
        WireValue::F32(x) => x.to_bits() as u64,
        WireValue::F64(x) => x.to_bits(),
        WireValue::Str(_) | WireValue::Bytes(_) => 0, // never packed
    }
}
