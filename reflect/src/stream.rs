//! The streaming visitor: typed callbacks straight from the wire, in wire order, with no tree and no arena.

use std::ops::ControlFlow;

use protojit_arena::stream::{walk, MessageSink, WireValue};
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
/// - **elements one by one**: a repeated field's elements, packed or not, are one call
///   each, in wire order; a map is its entries, each a message with `key` (1) and
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
    /// An enum value.
    fn enum_value(&mut self, field: FieldInfo<'a>, v: EnumValue<'a>) -> ControlFlow<()> {
        ControlFlow::Continue(())
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
    let mut visit = Walk { visitor, layouts, current: layouts.get(root), stack: Vec::new() };
    walk(layouts, root, input, options, &mut visit, &mut ())
}

/// The visitor with the layouts of the messages being walked: the innermost one apart (read
/// per value), its parents on a stack.
struct Walk<'a, 'v, V> {
    visitor: &'v mut V,
    layouts: &'a Layouts,
    current: &'a MessageLayout,
    stack: Vec<&'a MessageLayout>,
}

impl<'a, V> Walk<'a, '_, V> {
    #[inline(always)]
    fn field(&self, si: SlotIndex) -> FieldInfo<'a> {
        FieldInfo::new(self.current, si)
    }

    fn enum_type(&self, si: SlotIndex) -> Option<&'a EnumType> {
        self.current.slot_enum(si).map(|e| self.layouts.enum_type(e))
    }
}

impl<'a, V: StreamVisitor<'a>> MessageSink<'a> for Walk<'a, '_, V> {
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
            // A string the decode options leave unchecked: text if it is text.
            WireValue::Bytes(b) if field.kind() == FieldKind::String => match std::str::from_utf8(b) {
                Ok(s) => self.visitor.string(field, s),
                Err(_) => self.visitor.bytes(field, b),
            },
            WireValue::Bytes(b) => self.visitor.bytes(field, b),
        }
    }

    #[inline]
    fn begin(&mut self, _: &mut (), si: SlotIndex) -> ControlFlow<(), Option<&mut Self>> {
        let field = self.field(si);
        match self.visitor.message(field)? {
            Descend::Yes => {
                self.stack.push(self.current);
                self.current = self.layouts.get(LayoutIndex::new(field.slot().child));
                ControlFlow::Continue(Some(self))
            }
            Descend::No => ControlFlow::Continue(None),
        }
    }

    #[inline]
    fn end(&mut self, _: &mut (), si: SlotIndex) -> ControlFlow<()> {
        self.current = self.stack.pop().expect("end follows its begin");
        self.visitor.end_message(self.field(si))
    }
}
