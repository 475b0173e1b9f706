//! The visitor: one walk over every present field of a tree with typed callbacks, no `Value` per field.

use protojit_arena::{EnumType, FieldKind, FieldSlot, MessageLayout, Repetition, SlotDescriptor, SlotIndex, NO_INDEX};

use crate::{EnumValue, MapRef, MessageRef, Value};

/// A field as a [`Visitor`] sees it: a slot of its message's layout. Copy, two words.
#[derive(Clone, Copy)]
pub struct FieldInfo<'a> {
    layout: &'a MessageLayout,
    slot: SlotIndex,
}

impl std::fmt::Debug for FieldInfo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldInfo")
            .field("message", &self.layout.descriptor().full_name())
            .field("name", &self.name())
            .field("number", &self.number())
            .finish()
    }
}

impl<'a> FieldInfo<'a> {
    /// Slot `slot` of `layout`.
    #[inline]
    pub(crate) fn new(layout: &'a MessageLayout, slot: SlotIndex) -> FieldInfo<'a> {
        FieldInfo { layout, slot }
    }

    /// The field number.
    #[inline]
    pub fn number(&self) -> u32 {
        self.slot().number
    }
    /// The field's kind.
    #[inline]
    pub fn kind(&self) -> FieldKind {
        self.slot().kind
    }
    /// The slot (offset, kind, cardinality, presence) in the message's layout.
    #[inline]
    pub fn slot(&self) -> &'a FieldSlot {
        self.layout.slot(self.slot)
    }
    /// The slot's index in the message's layout.
    #[inline]
    pub fn slot_index(&self) -> SlotIndex {
        self.slot
    }
    /// The layout of the message the field belongs to.
    #[inline]
    pub fn layout(&self) -> &'a MessageLayout {
        self.layout
    }
    /// The field's (or extension's) descriptor.
    #[inline]
    pub fn descriptor(&self) -> &'a SlotDescriptor {
        self.layout.slot_descriptor(self.slot)
    }
    /// The field name (the full name, for extensions).
    #[inline]
    pub fn name(&self) -> &'a str {
        self.descriptor().name()
    }
    /// The name protobuf's text format prints (a group's type name, `[ext.name]`).
    #[inline]
    pub fn text_name(&self) -> &'a str {
        self.layout.text_name(self.slot)
    }
    /// Whether this is an extension.
    #[inline]
    pub fn is_extension(&self) -> bool {
        self.slot().is_extension
    }
}

/// What to do with a message after [`Visitor::message`]: walk its fields with the same
/// visitor (then call [`Visitor::end_message`]), or skip them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descend {
    /// Walk the message's fields, then call `end_message`.
    Yes,
    /// Do not walk it (the visitor read it itself, or does not care).
    No,
}

/// How [`MessageRef::visit`] walks a map (see [`Visitor::map`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapWalk {
    /// Each distinct key once (its last entry on the wire), in wire order, each entry as
    /// a [`Visitor::message`] call with the map field.
    Entries,
    /// Every entry on the wire, duplicates included, in wire order.
    AllEntries,
    /// Not at all (the visitor read it itself).
    Skip,
}

/// Typed callbacks for [`MessageRef::visit`], one per kind; every method has a default
/// (do nothing, or split a slice into elements), so a visitor overrides what it reads.
///
/// The walk calls, per message, in field-number order (extensions included) and for
/// present fields only (set on the wire; non-default without explicit presence;
/// non-empty when repeated): the scalar callbacks for singular fields; the slice
/// callbacks (`i64s`, `enums`, ...) once per repeated number field, whose defaults call the
/// element callback per element; `string`/`bytes`/`message` once per element of other
/// repeated fields; [`map`](Self::map) once per map (an entry it walks shows its key and
/// its value always, absent ones as their defaults, as protobuf writes and prints them);
/// then [`unknown`](Self::unknown) per unknown field, in wire order.
///
/// `string` gets text the decoder (or the walk) checked to be UTF-8; a `string` field
/// whose bytes are not UTF-8 (possible only without validation) arrives at `bytes`.
#[allow(unused_variables)]
pub trait Visitor<'a> {
    /// A `bool`.
    fn bool(&mut self, field: FieldInfo<'a>, v: bool) {}
    /// An `int32`, `sint32` or `sfixed32`.
    fn i32(&mut self, field: FieldInfo<'a>, v: i32) {}
    /// An `int64`, `sint64` or `sfixed64`.
    fn i64(&mut self, field: FieldInfo<'a>, v: i64) {}
    /// A `uint32` or `fixed32`.
    fn u32(&mut self, field: FieldInfo<'a>, v: u32) {}
    /// A `uint64` or `fixed64`.
    fn u64(&mut self, field: FieldInfo<'a>, v: u64) {}
    /// A `float`.
    fn f32(&mut self, field: FieldInfo<'a>, v: f32) {}
    /// A `double`.
    fn f64(&mut self, field: FieldInfo<'a>, v: f64) {}
    /// A `string`.
    fn string(&mut self, field: FieldInfo<'a>, v: &'a str) {}
    /// A `bytes` (or a `string` that is not UTF-8).
    fn bytes(&mut self, field: FieldInfo<'a>, v: &'a [u8]) {}
    /// A `string` the decoder left unchecked (a field whose features say
    /// `utf8_validation = NONE`, as every proto2 string's do, under the default
    /// [`Utf8Check`](protojit_arena::Utf8Check); every string under `Off`): its bytes as
    /// stored. By default [`string`](Self::string) when they are UTF-8, else
    /// [`bytes`](Self::bytes); override it to take the bytes without that check.
    fn unchecked_string(&mut self, field: FieldInfo<'a>, v: &'a [u8]) {
        match std::str::from_utf8(v) {
            Ok(s) => self.string(field, s),
            Err(_) => self.bytes(field, v),
        }
    }
    /// An enum value.
    fn enum_value(&mut self, field: FieldInfo<'a>, v: EnumValue<'a>) {}
    /// A message or group (singular, an element, or a map entry); return whether to walk it.
    fn message(&mut self, field: FieldInfo<'a>, msg: MessageRef<'a>) -> Descend {
        Descend::Yes
    }
    /// The end of a message walked after [`message`](Self::message) returned `Yes`.
    fn end_message(&mut self, field: FieldInfo<'a>, msg: MessageRef<'a>) {}
    /// A map field: how to walk it (default: once per distinct key).
    fn map(&mut self, field: FieldInfo<'a>, map: MapRef<'a>) -> MapWalk {
        MapWalk::Entries
    }
    /// One unknown field: its complete wire bytes (tag and value).
    fn unknown(&mut self, span: &'a [u8]) {}

    /// A repeated `bool`.
    fn bools(&mut self, field: FieldInfo<'a>, v: &'a [bool]) {
        for &x in v {
            self.bool(field, x);
        }
    }
    /// A repeated `int32`, `sint32` or `sfixed32`.
    fn i32s(&mut self, field: FieldInfo<'a>, v: &'a [i32]) {
        for &x in v {
            self.i32(field, x);
        }
    }
    /// A repeated `int64`, `sint64` or `sfixed64`.
    fn i64s(&mut self, field: FieldInfo<'a>, v: &'a [i64]) {
        for &x in v {
            self.i64(field, x);
        }
    }
    /// A repeated `uint32` or `fixed32`.
    fn u32s(&mut self, field: FieldInfo<'a>, v: &'a [u32]) {
        for &x in v {
            self.u32(field, x);
        }
    }
    /// A repeated `uint64` or `fixed64`.
    fn u64s(&mut self, field: FieldInfo<'a>, v: &'a [u64]) {
        for &x in v {
            self.u64(field, x);
        }
    }
    /// A repeated `float`.
    fn f32s(&mut self, field: FieldInfo<'a>, v: &'a [f32]) {
        for &x in v {
            self.f32(field, x);
        }
    }
    /// A repeated `double`.
    fn f64s(&mut self, field: FieldInfo<'a>, v: &'a [f64]) {
        for &x in v {
            self.f64(field, x);
        }
    }
    /// A repeated enum: the numbers and their type, once.
    fn enums(&mut self, field: FieldInfo<'a>, numbers: &'a [i32], ty: &'a EnumType) {
        for &n in numbers {
            self.enum_value(field, EnumValue::new(n, ty));
        }
    }
}

impl<'a> MessageRef<'a> {
    /// Walks every present field of this message (and of the messages in it, as the
    /// visitor asks) and its unknown fields, calling `visitor`'s typed callbacks: the
    /// fastest way to read a whole tree. See [`Visitor`] for the order of calls.
    ///
    /// (Decoding needs the `protojit` facade, which this crate cannot depend on, so this
    /// example is not compiled here; the facade's crate tour runs the same calls.)
    /// ```ignore
    /// # use protojit::{Arena, Schema};
    /// use protojit::{Descend, FieldInfo, MessageRef, Visitor};
    /// let schema = Schema::from_proto_source("t.proto", r#"
    ///     syntax = "proto3";
    ///     message Trip { repeated sint64 lat = 1; Stop stop = 2; }
    ///     message Stop { string name = 1; }
    /// "#)?;
    /// let decoder = schema.decoder("Trip")?;
    /// let arena = Arena::new();
    /// let trip = decoder.decode(b"\x0a\x02\x02\x05\x12\x03\x0a\x01x", &arena)?;
    ///
    /// #[derive(Default)]
    /// struct Sum { total: i64, names: Vec<String> }
    /// impl<'a> Visitor<'a> for Sum {
    ///     fn i64s(&mut self, _: FieldInfo<'a>, v: &'a [i64]) { self.total += v.iter().sum::<i64>() }
    ///     fn string(&mut self, f: FieldInfo<'a>, v: &'a str) { self.names.push(format!("{}={v}", f.name())) }
    /// }
    /// let mut sum = Sum::default();
    /// trip.visit(&mut sum);
    /// assert_eq!((sum.total, sum.names), (1 + -3, vec!["name=x".to_owned()]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit<V: Visitor<'a> + ?Sized>(&self, visitor: &mut V) {
        let layout = self.layout();
        let block = self.block;
        for (i, slot) in layout.slots().iter().enumerate() {
            let si = SlotIndex::new(i as u32);
            let f = FieldInfo { layout, slot: si };
            match slot.repetition {
                Repetition::Singular => {
                    if slot.kind.is_message() {
                        if let Some(child) = block.child(si) {
                            let child = self.with_block(child);
                            if visitor.message(f, child) == Descend::Yes {
                                child.visit(visitor);
                                visitor.end_message(f, child);
                            }
                        }
                        continue;
                    }
                    // Presence as `slot_present` says it, with the value read once: a field
                    // with explicit presence (a hasbit, a oneof) asks it; one without is
                    // present when its value is not zero (bitwise, so -0.0 counts).
                    let explicit = slot.hasbit != NO_INDEX || slot.oneof != NO_INDEX;
                    if explicit && !block.is_set(si) {
                        continue;
                    }
                    macro_rules! number {
                        ($call:ident, $t:ty) => {{
                            let v: $t = block.get(si);
                            if explicit || v != 0 {
                                visitor.$call(f, v);
                            }
                        }};
                    }
                    match slot.kind {
                        FieldKind::Bool => {
                            let v: bool = block.get(si);
                            if explicit || v {
                                visitor.bool(f, v);
                            }
                        }
                        FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 => number!(i32, i32),
                        FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => number!(i64, i64),
                        FieldKind::Uint32 | FieldKind::Fixed32 => number!(u32, u32),
                        FieldKind::Uint64 | FieldKind::Fixed64 => number!(u64, u64),
                        FieldKind::Float => {
                            let v: f32 = block.get(si);
                            if explicit || v.to_bits() != 0 {
                                visitor.f32(f, v);
                            }
                        }
                        FieldKind::Double => {
                            let v: f64 = block.get(si);
                            if explicit || v.to_bits() != 0 {
                                visitor.f64(f, v);
                            }
                        }
                        FieldKind::Enum => {
                            let v: i32 = block.get(si);
                            if explicit || v != 0 {
                                visitor.enum_value(f, EnumValue::new(v, self.enum_type(si)));
                            }
                        }
                        FieldKind::String if !block.text_checked(si) => {
                            let b = block.get_bytes(si);
                            if explicit || !b.is_empty() {
                                visitor.unchecked_string(f, b);
                            }
                        }
                        FieldKind::String => match block.get_str(si) {
                            Ok(s) if explicit || !s.is_empty() => visitor.string(f, s),
                            Err(b) if explicit || !b.is_empty() => visitor.bytes(f, b),
                            _ => {}
                        },
                        FieldKind::Bytes => {
                            let b = block.get_bytes(si);
                            if explicit || !b.is_empty() {
                                visitor.bytes(f, b);
                            }
                        }
                        FieldKind::Message | FieldKind::Group => unreachable!("handled above"),
                    }
                }
                Repetition::Repeated => {
                    if block.vec_len(si) == 0 {
                        continue;
                    }
                    match slot.kind {
                        FieldKind::Bool => visitor.bools(f, block.vec_slice(si)),
                        FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 => {
                            visitor.i32s(f, block.vec_slice(si))
                        }
                        FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => {
                            visitor.i64s(f, block.vec_slice(si))
                        }
                        FieldKind::Uint32 | FieldKind::Fixed32 => visitor.u32s(f, block.vec_slice(si)),
                        FieldKind::Uint64 | FieldKind::Fixed64 => visitor.u64s(f, block.vec_slice(si)),
                        FieldKind::Float => visitor.f32s(f, block.vec_slice(si)),
                        FieldKind::Double => visitor.f64s(f, block.vec_slice(si)),
                        FieldKind::Enum => visitor.enums(f, block.vec_slice(si), self.enum_type(si)),
                        FieldKind::String if !block.text_checked(si) => {
                            for b in block.vec_strs(si) {
                                visitor.unchecked_string(f, b);
                            }
                        }
                        FieldKind::String => {
                            for t in block.vec_strs(si).texts() {
                                match t {
                                    Ok(s) => visitor.string(f, s),
                                    Err(b) => visitor.bytes(f, b),
                                }
                            }
                        }
                        FieldKind::Bytes => {
                            for b in block.vec_strs(si) {
                                visitor.bytes(f, b);
                            }
                        }
                        FieldKind::Message | FieldKind::Group => {
                            for child in block.vec_children(si) {
                                self.visit_child(visitor, f, child);
                            }
                        }
                    }
                }
                Repetition::Map => {
                    let n = block.vec_len(si);
                    if n == 0 {
                        continue;
                    }
                    let map = MapRef { msg: *self, slot: si };
                    match visitor.map(f, map) {
                        MapWalk::Skip => {}
                        MapWalk::AllEntries => {
                            for child in block.vec_children(si) {
                                self.visit_entry(visitor, f, child);
                            }
                        }
                        MapWalk::Entries if n == 1 => self.visit_entry(visitor, f, block.vec_child(si, 0)),
                        MapWalk::Entries => {
                            for e in map.index().entries() {
                                self.visit_entry(visitor, f, e.block);
                            }
                        }
                    }
                }
            }
        }
        for span in block.unknown_fields() {
            visitor.unknown(span);
        }
    }

    /// A map entry as a message: its key and its value always, absent ones as their
    /// defaults (an entry has both; protobuf writes both, and the text format prints
    /// both), then its unknown fields.
    fn visit_entry<V: Visitor<'a> + ?Sized>(
        &self,
        visitor: &mut V,
        f: FieldInfo<'a>,
        child: protojit_arena::BlockRef<'a>,
    ) {
        let entry = self.with_block(child);
        if visitor.message(f, entry) != Descend::Yes {
            return;
        }
        let layout = entry.layout();
        for (i, slot) in layout.slots().iter().enumerate() {
            let si = SlotIndex::new(i as u32);
            let ef = FieldInfo { layout, slot: si };
            match entry.slot_value(si, slot) {
                Value::Bool(v) => visitor.bool(ef, v),
                Value::I32(v) => visitor.i32(ef, v),
                Value::I64(v) => visitor.i64(ef, v),
                Value::U32(v) => visitor.u32(ef, v),
                Value::U64(v) => visitor.u64(ef, v),
                Value::F32(v) => visitor.f32(ef, v),
                Value::F64(v) => visitor.f64(ef, v),
                Value::String(v) => visitor.string(ef, v),
                Value::Bytes(v) => visitor.bytes(ef, v),
                Value::Enum(v) => visitor.enum_value(ef, v),
                // An absent message value is an empty message of its type.
                Value::Message(m) => entry.visit_child(visitor, ef, m.block),
                Value::List(_) | Value::Map(_) => unreachable!("a map entry's key and value are singular"),
            }
        }
        for span in entry.block.unknown_fields() {
            visitor.unknown(span);
        }
        visitor.end_message(f, entry);
    }

    #[inline]
    fn visit_child<V: Visitor<'a> + ?Sized>(
        &self,
        visitor: &mut V,
        f: FieldInfo<'a>,
        child: protojit_arena::BlockRef<'a>,
    ) {
        let child = self.with_block(child);
        if visitor.message(f, child) == Descend::Yes {
            child.visit(visitor);
            visitor.end_message(f, child);
        }
    }
}
