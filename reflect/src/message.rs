//! `MessageRef`: a read-only view of one decoded message.

use std::fmt;

use prost_reflect::MessageDescriptor;
use protojit_arena::{
    BlockRef, EnumType, FieldKind, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition, SlotDescriptor,
    SlotIndex,
};

use crate::value::{EnumValue, Value};
use crate::views::{ListRef, MapRef, MessageRef};

impl fmt::Debug for MessageRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageRef")
            .field("type", &self.descriptor().full_name())
            .field("block", &self.block.as_ptr())
            .finish()
    }
}

impl<'a> MessageRef<'a> {
    /// A view of a decoded block (the root of a tree, as a decoder returns it).
    #[inline]
    pub fn new(block: BlockRef<'a>) -> MessageRef<'a> {
        MessageRef { block }
    }

    /// The default instance of a message type: every field absent.
    pub fn empty(layouts: &'a Layouts, layout: LayoutIndex) -> MessageRef<'a> {
        MessageRef { block: layouts.empty_block(layout) }
    }

    /// The message type.
    pub fn descriptor(&self) -> &'a MessageDescriptor {
        self.block.layout().descriptor()
    }

    /// The message type's layout.
    pub fn layout(&self) -> &'a MessageLayout {
        self.block.layout()
    }

    /// The layouts of the whole schema.
    pub fn layouts(&self) -> &'a Layouts {
        self.block.layouts()
    }

    /// The raw block (for engines and tests).
    pub fn block(&self) -> BlockRef<'a> {
        self.block
    }

    fn slot_by_name(&self, name: &str) -> Option<SlotIndex> {
        let field = self.descriptor().get_field_by_name(name)?;
        self.layout().slot_by_number(field.number())
    }

    /// The value of the field called `name`: `None` if the message has no such field;
    /// an absent field reads as its default (declared proto2 default, zero, empty list,
    /// empty message).
    pub fn get(&self, name: &str) -> Option<Value<'a>> {
        self.slot_by_name(name).map(|si| self.value(si))
    }

    /// The value of field `number` (fields and extensions), like [`get`](Self::get).
    pub fn get_by_number(&self, number: u32) -> Option<Value<'a>> {
        self.layout().slot_by_number(number).map(|si| self.value(si))
    }

    /// The value of the extension with this full name, like [`get`](Self::get).
    pub fn get_extension(&self, full_name: &str) -> Option<Value<'a>> {
        let ext = self.layouts().pool().get_extension_by_name(full_name.trim_start_matches('.'))?;
        if ext.containing_message().full_name() != self.descriptor().full_name() {
            return None;
        }
        self.get_by_number(ext.number())
    }

    /// Whether the extension with this full name is present (see [`has`](Self::has)).
    pub fn has_extension(&self, full_name: &str) -> bool {
        let Some(ext) = self.layouts().pool().get_extension_by_name(full_name.trim_start_matches('.')) else {
            return false;
        };
        ext.containing_message().full_name() == self.descriptor().full_name() && self.has_by_number(ext.number())
    }

    /// Whether the field called `name` is present: set on the wire (fields with
    /// presence), non-default (proto3 fields without presence), non-empty (repeated).
    pub fn has(&self, name: &str) -> bool {
        self.slot_by_name(name).is_some_and(|si| self.is_present(si))
    }

    /// Whether field `number` is present, like [`has`](Self::has).
    pub fn has_by_number(&self, number: u32) -> bool {
        self.layout().slot_by_number(number).is_some_and(|si| self.is_present(si))
    }

    /// The present fields (and extensions), in field-number order.
    ///
    /// Each step reads the slot table once (presence, then the value, from the same
    /// [`FieldSlot`]); an enum value is its number and a reference to its type. To read
    /// everything without building [`Value`]s at all, use [`visit`](Self::visit).
    pub fn fields(&self) -> impl Iterator<Item = (&'a SlotDescriptor, Value<'a>)> + 'a {
        let this = *self;
        let layout = self.layout();
        layout.slots().iter().enumerate().filter_map(move |(i, slot)| {
            let si = SlotIndex::new(i as u32);
            this.slot_present(si, slot).then(|| (layout.slot_descriptor(si), this.slot_value(si, slot)))
        })
    }

    /// The unknown fields, each as its complete wire bytes (tag and value), in wire order.
    pub fn unknown_fields(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        self.block.unknown_fields()
    }

    /// Whether slot `si` is present (see [`has`](Self::has)).
    #[inline]
    pub fn is_present(&self, si: SlotIndex) -> bool {
        self.slot_present(si, self.layout().slot(si))
    }

    /// [`is_present`](Self::is_present) with the slot already looked up.
    #[inline]
    pub(crate) fn slot_present(&self, si: SlotIndex, slot: &FieldSlot) -> bool {
        if slot.repetition != Repetition::Singular {
            return self.block.vec_len(si) > 0;
        }
        if slot.hasbit != protojit_arena::NO_INDEX || slot.oneof != protojit_arena::NO_INDEX || slot.kind.is_message() {
            return self.block.is_set(si);
        }
        // No explicit presence (`is_set` would say true): present when not the zero value
        // (bitwise, so -0.0 counts).
        match slot.kind {
            FieldKind::Bool => self.block.get::<bool>(si),
            FieldKind::String | FieldKind::Bytes => !self.block.get_bytes(si).is_empty(),
            k if k.value_size() == 4 => self.block.get::<u32>(si) != 0,
            _ => self.block.get::<u64>(si) != 0,
        }
    }

    /// The value of slot `si`, the default when absent.
    #[inline]
    pub fn value(&self, si: SlotIndex) -> Value<'a> {
        self.slot_value(si, self.layout().slot(si))
    }

    /// [`value`](Self::value) with the slot already looked up.
    #[inline]
    pub(crate) fn slot_value(&self, si: SlotIndex, slot: &FieldSlot) -> Value<'a> {
        match slot.repetition {
            Repetition::Repeated => return Value::List(ListRef { msg: *self, slot: si }),
            Repetition::Map => return Value::Map(MapRef { msg: *self, slot: si }),
            Repetition::Singular => {}
        }
        if slot.kind.is_message() {
            let layout = LayoutIndex::new(slot.child);
            return Value::Message(match self.block.child(si) {
                Some(block) => MessageRef { block },
                None => MessageRef::empty(self.layouts(), layout),
            });
        }
        if !self.block.is_set(si) {
            let default = self.layout().slot_default(si).expect("scalar slots have defaults");
            return self.declared_default(si, default);
        }
        self.scalar(si, slot.kind, |t| t.get_inline(si))
    }

    /// A scalar read through `read` (from the block, or from a vector element).
    #[inline]
    pub(crate) fn scalar(&self, si: SlotIndex, kind: FieldKind, read: impl Fn(Reader<'a>) -> Inline) -> Value<'a> {
        let r = Reader { block: self.block, kind };
        match read(r) {
            Inline::I32(n) if kind == FieldKind::Enum => Value::Enum(EnumValue::new(n, self.enum_type(si))),
            v => v.into_value(),
        }
    }

    /// The enum type of enum slot `si` (of this message's layout).
    #[inline]
    pub(crate) fn enum_type(&self, si: SlotIndex) -> &'a EnumType {
        let e = self.layout().slot_enum(si).expect("enum slot without enum type");
        self.layouts().enum_type(e)
    }

    /// A message of this tree with another block (a child of this one).
    #[inline]
    pub(crate) fn with_block(&self, block: BlockRef<'a>) -> MessageRef<'a> {
        MessageRef { block }
    }

    fn declared_default(&self, si: SlotIndex, default: &'a prost_reflect::Value) -> Value<'a> {
        use prost_reflect::Value as P;
        match default {
            P::Bool(v) => Value::Bool(*v),
            P::I32(v) => Value::I32(*v),
            P::I64(v) => Value::I64(*v),
            P::U32(v) => Value::U32(*v),
            P::U64(v) => Value::U64(*v),
            P::F32(v) => Value::F32(*v),
            P::F64(v) => Value::F64(*v),
            P::String(s) => Value::String(s),
            P::Bytes(b) => Value::Bytes(b),
            P::EnumNumber(n) => Value::Enum(EnumValue::new(*n, self.enum_type(si))),
            P::Message(_) | P::List(_) | P::Map(_) => unreachable!("scalar default"),
        }
    }
}

/// A raw inline value, before it becomes a [`Value`].
pub(crate) enum Inline<'a> {
    Bool(bool),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    /// A `string`: text, or its bytes if they are not UTF-8.
    Text(Result<&'a str, &'a [u8]>),
    Bytes(&'a [u8]),
}

impl<'a> Inline<'a> {
    #[inline]
    fn into_value(self) -> Value<'a> {
        match self {
            Inline::Bool(v) => Value::Bool(v),
            Inline::I32(v) => Value::I32(v),
            Inline::I64(v) => Value::I64(v),
            Inline::U32(v) => Value::U32(v),
            Inline::U64(v) => Value::U64(v),
            Inline::F32(v) => Value::F32(v),
            Inline::F64(v) => Value::F64(v),
            Inline::Text(Ok(s)) => Value::String(s),
            Inline::Text(Err(b)) | Inline::Bytes(b) => Value::Bytes(b),
        }
    }
}

/// Reads one inline value of a kind from a block slot or vector element.
pub(crate) struct Reader<'a> {
    block: BlockRef<'a>,
    kind: FieldKind,
}

macro_rules! read_kind {
    ($self:ident, $get:ident, $text:ident, $bytes:ident, $($arg:expr),*) => {
        match $self.kind {
            FieldKind::Bool => Inline::Bool($self.block.$get($($arg),*)),
            FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 | FieldKind::Enum => Inline::I32($self.block.$get($($arg),*)),
            FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => Inline::I64($self.block.$get($($arg),*)),
            FieldKind::Uint32 | FieldKind::Fixed32 => Inline::U32($self.block.$get($($arg),*)),
            FieldKind::Uint64 | FieldKind::Fixed64 => Inline::U64($self.block.$get($($arg),*)),
            FieldKind::Float => Inline::F32($self.block.$get($($arg),*)),
            FieldKind::Double => Inline::F64($self.block.$get($($arg),*)),
            FieldKind::String => Inline::Text($self.block.$text($($arg),*)),
            FieldKind::Bytes => Inline::Bytes($self.block.$bytes($($arg),*)),
            FieldKind::Message | FieldKind::Group => unreachable!("messages are not inline"),
        }
    };
}

impl<'a> Reader<'a> {
    #[inline]
    pub(crate) fn get_inline(&self, si: SlotIndex) -> Inline<'a> {
        read_kind!(self, get, get_str, get_bytes, si)
    }
    #[inline]
    pub(crate) fn vec_inline(&self, si: SlotIndex, i: usize) -> Inline<'a> {
        read_kind!(self, vec_get, vec_get_str, vec_get_bytes, si, i)
    }
}
