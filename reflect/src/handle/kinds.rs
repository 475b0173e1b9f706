//! What each kind of typed handle reads: numbers, enums, strings and bytes, messages, repeated fields and maps (the `FieldType` implementations).

use prost_reflect::EnumDescriptor;
use protojit_arena::{
    Access, ChildIter, FieldKind, LayoutIndex, Layouts, MessageLayout, Repetition, SlotIndex, StrIter, StrList,
};

use super::field::{Bytes, Enum, List, Map, Message, Str};
use super::{sealed, Field, FieldType, Number};
use crate::{EnumValue, MapRef, MessageRef};

// ---------------------------------------------------------------------------------------
// Numbers.

/// Leaf of a singular number (or enum) handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct NumLeaf<T: Number> {
    access: Access<T>,
    default: T,
    /// The field has explicit presence (a presence bit or a oneof case).
    explicit: bool,
    /// Enum type index ([`Layouts::enum_type`]), for enum handles.
    enum_type: Option<(u32, EnumDescriptor)>,
}

fn num_leaf<T: Number>(
    layouts: &Layouts,
    layout: &MessageLayout,
    si: SlotIndex,
    kinds: &[FieldKind],
) -> Option<NumLeaf<T>> {
    let slot = layout.slot(si);
    if !kinds.contains(&slot.kind) {
        return None;
    }
    let access = layout.access::<T>(si).ok()?;
    let default = layout.slot_default(si).map_or(T::ZERO, |d| match d {
        prost_reflect::Value::EnumNumber(n) => T::from_default(&prost_reflect::Value::I32(*n)),
        d => T::from_default(d),
    });
    let explicit = slot.hasbit != protojit_arena::NO_INDEX || slot.oneof != protojit_arena::NO_INDEX;
    let enum_type = layout.slot_enum(si).map(|e| (e, layouts.enum_type(e).descriptor().clone()));
    Some(NumLeaf { access, default, explicit, enum_type })
}

#[inline(always)]
fn num_get<T: Number, F: FieldType<Leaf = NumLeaf<T>>>(h: &Field<F>, msg: &MessageRef<'_>) -> Option<T> {
    match h.locate(msg)? {
        Some(b) => {
            let (set, v) = b.get_at(&h.leaf.access)?;
            Some(if set { v } else { h.leaf.default })
        }
        None => Some(h.leaf.default),
    }
}

#[inline]
fn num_present<T: Number, F: FieldType<Leaf = NumLeaf<T>>>(h: &Field<F>, msg: &MessageRef<'_>) -> Option<T> {
    let (set, v) = h.locate(msg)??.get_at(&h.leaf.access)?;
    (set && (h.leaf.explicit || !v.is_zero())).then_some(v)
}

impl<T: Number> sealed::Sealed for T {}
impl<T: Number> FieldType for T {
    type Value<'a> = T;
    type Leaf = NumLeaf<T>;
    const WANTED: &'static str = <T as Number>::WANTED;
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<NumLeaf<T>> {
        num_leaf(layouts, layout, si, T::KINDS)
    }
    #[inline(always)]
    fn get<'a>(h: &Field<T>, msg: &MessageRef<'a>) -> Option<T> {
        num_get(h, msg)
    }
    #[inline]
    fn present<'a>(h: &Field<T>, msg: &MessageRef<'a>) -> Option<T> {
        num_present(h, msg)
    }
}

impl sealed::Sealed for Enum {}
impl FieldType for Enum {
    type Value<'a> = i32;
    type Leaf = NumLeaf<i32>;
    const WANTED: &'static str = "an enum";
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<NumLeaf<i32>> {
        num_leaf(layouts, layout, si, &[FieldKind::Enum])
    }
    #[inline]
    fn get<'a>(h: &Field<Enum>, msg: &MessageRef<'a>) -> Option<i32> {
        num_get(h, msg)
    }
    #[inline]
    fn present<'a>(h: &Field<Enum>, msg: &MessageRef<'a>) -> Option<i32> {
        num_present(h, msg)
    }
}

impl Field<Enum> {
    /// The enum type the field holds (resolved once).
    pub fn enum_type(&self) -> &EnumDescriptor {
        &self.leaf.enum_type.as_ref().expect("enum handles have an enum type").1
    }

    /// The value with its type (names without allocation), like [`get`](Self::get).
    pub fn get_value<'a>(&self, msg: &MessageRef<'a>) -> Option<EnumValue<'a>> {
        let n = self.get(msg)?;
        let ty = msg.layouts().enum_type(self.leaf.enum_type.as_ref().expect("enum handles have an enum type").0);
        Some(EnumValue::new(n, ty))
    }
}

// ---------------------------------------------------------------------------------------
// Strings and bytes.

/// Leaf of a singular string/bytes handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct StrLeaf {
    access: Access<Bytes>,
    explicit: bool,
}

fn str_leaf(layout: &MessageLayout, si: SlotIndex, kinds: &[FieldKind]) -> Option<StrLeaf> {
    let slot = layout.slot(si);
    if !kinds.contains(&slot.kind) {
        return None;
    }
    Some(StrLeaf {
        access: layout.access(si).ok()?,
        explicit: slot.hasbit != protojit_arena::NO_INDEX || slot.oneof != protojit_arena::NO_INDEX,
    })
}

impl<F: FieldType<Leaf = StrLeaf>> Field<F> {
    /// The declared default (proto2), else empty: read only when the field is absent.
    fn default_bytes<'a>(&self, msg: &MessageRef<'a>) -> &'a [u8] {
        match msg.layouts().get(self.leaf_layout).slot_default(self.leaf_slot) {
            Some(prost_reflect::Value::String(s)) => s.as_bytes(),
            Some(prost_reflect::Value::Bytes(b)) => b,
            _ => &[],
        }
    }

    #[inline]
    fn bytes_get<'a>(&self, msg: &MessageRef<'a>) -> Option<&'a [u8]> {
        match self.locate(msg)? {
            Some(b) => {
                let (set, v) = b.get_bytes_at(&self.leaf.access)?;
                Some(if set { v } else { self.default_bytes(msg) })
            }
            None => Some(self.default_bytes(msg)),
        }
    }

    #[inline]
    fn bytes_present<'a>(&self, msg: &MessageRef<'a>) -> Option<&'a [u8]> {
        let (set, v) = self.locate(msg)??.get_bytes_at(&self.leaf.access)?;
        (set && (self.leaf.explicit || !v.is_empty())).then_some(v)
    }
}

impl Field<Str> {
    /// The declared default (proto2), else empty: read only when the field is absent.
    fn default_str<'a>(&self, msg: &MessageRef<'a>) -> &'a str {
        match msg.layouts().get(self.leaf_layout).slot_default(self.leaf_slot) {
            Some(prost_reflect::Value::String(s)) => s,
            _ => "",
        }
    }
}

impl sealed::Sealed for Str {}
impl FieldType for Str {
    type Value<'a> = &'a str;
    type Leaf = StrLeaf;
    const WANTED: &'static str = "a string";
    fn leaf(_: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<StrLeaf> {
        str_leaf(layout, si, &[FieldKind::String])
    }
    /// `None` also when the bytes are not UTF-8, which only a string the decoder did not
    /// validate (proto2, or with validation off) can hold: read those with `field::Bytes`.
    #[inline]
    fn get<'a>(h: &Field<Str>, msg: &MessageRef<'a>) -> Option<&'a str> {
        match h.locate(msg)? {
            Some(b) => match b.get_str_at(&h.leaf.access)? {
                (true, text) => text.ok(),
                (false, _) => Some(h.default_str(msg)),
            },
            None => Some(h.default_str(msg)),
        }
    }
    #[inline]
    fn present<'a>(h: &Field<Str>, msg: &MessageRef<'a>) -> Option<&'a str> {
        let (set, text) = h.locate(msg)??.get_str_at(&h.leaf.access)?;
        let empty = text.map_or_else(<[u8]>::is_empty, str::is_empty);
        (set && (h.leaf.explicit || !empty)).then_some(text.ok()?)
    }
}

impl sealed::Sealed for Bytes {}
impl FieldType for Bytes {
    type Value<'a> = &'a [u8];
    type Leaf = StrLeaf;
    const WANTED: &'static str = "bytes or a string";
    fn leaf(_: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<StrLeaf> {
        str_leaf(layout, si, &[FieldKind::Bytes, FieldKind::String])
    }
    #[inline]
    fn get<'a>(h: &Field<Bytes>, msg: &MessageRef<'a>) -> Option<&'a [u8]> {
        h.bytes_get(msg)
    }
    #[inline]
    fn present<'a>(h: &Field<Bytes>, msg: &MessageRef<'a>) -> Option<&'a [u8]> {
        h.bytes_present(msg)
    }
}

// ---------------------------------------------------------------------------------------
// Messages.

/// Leaf of a singular message handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct MsgLeaf {
    pub(super) access: Access<Message>,
    pub(super) child: LayoutIndex,
    pub(super) child_id: u64,
    pub(super) child_name: Box<str>,
}

impl sealed::Sealed for Message {}
impl FieldType for Message {
    type Value<'a> = MessageRef<'a>;
    type Leaf = MsgLeaf;
    const WANTED: &'static str = "a message";
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<MsgLeaf> {
        let access = layout.access::<Message>(si).ok()?;
        let child = access.child()?;
        let cl = layouts.get(child);
        Some(MsgLeaf { access, child, child_id: cl.id(), child_name: cl.descriptor().full_name().into() })
    }
    #[inline]
    fn get<'a>(h: &Field<Message>, msg: &MessageRef<'a>) -> Option<MessageRef<'a>> {
        let child = match h.locate(msg)? {
            Some(b) => b.child_at(&h.leaf.access)?,
            None => None,
        };
        Some(match child {
            Some(c) => msg.with_block(c),
            None => MessageRef::empty(msg.layouts(), h.leaf.child),
        })
    }
    #[inline]
    fn present<'a>(h: &Field<Message>, msg: &MessageRef<'a>) -> Option<MessageRef<'a>> {
        h.locate(msg)??.child_at(&h.leaf.access)?.map(|c| msg.with_block(c))
    }
}

impl Field<Message> {
    /// Full name of the message type the field holds.
    pub fn holds(&self) -> &str {
        &self.leaf.child_name
    }
}

// ---------------------------------------------------------------------------------------
// Repeated fields.

/// Leaf of a repeated number (or enum) handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct VecLeaf<T: Number> {
    access: Access<List<T>>,
    enum_type: Option<(u32, EnumDescriptor)>,
}

fn vec_leaf<T: Number>(
    layouts: &Layouts,
    layout: &MessageLayout,
    si: SlotIndex,
    kinds: &[FieldKind],
) -> Option<VecLeaf<T>> {
    if !kinds.contains(&layout.slot(si).kind) {
        return None;
    }
    let access = layout.access::<List<T>>(si).ok()?;
    let enum_type = layout.slot_enum(si).map(|e| (e, layouts.enum_type(e).descriptor().clone()));
    Some(VecLeaf { access, enum_type })
}

#[inline]
fn vec_get<'a, T: Number, F: FieldType<Leaf = VecLeaf<T>>>(h: &Field<F>, msg: &MessageRef<'a>) -> Option<&'a [T]> {
    match h.locate(msg)? {
        Some(b) => b.slice_at(&h.leaf.access),
        None => Some(&[]),
    }
}

impl<T: Number> sealed::Sealed for List<T> {}
impl<T: Number> FieldType for List<T> {
    type Value<'a> = &'a [T];
    type Leaf = VecLeaf<T>;
    const WANTED: &'static str = "a repeated number of this type";
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<VecLeaf<T>> {
        vec_leaf(layouts, layout, si, T::KINDS)
    }
    #[inline]
    fn get<'a>(h: &Field<List<T>>, msg: &MessageRef<'a>) -> Option<&'a [T]> {
        vec_get(h, msg)
    }
    #[inline]
    fn present<'a>(h: &Field<List<T>>, msg: &MessageRef<'a>) -> Option<&'a [T]> {
        vec_get(h, msg).filter(|s| !s.is_empty())
    }
}

impl sealed::Sealed for List<Enum> {}
impl FieldType for List<Enum> {
    type Value<'a> = &'a [i32];
    type Leaf = VecLeaf<i32>;
    const WANTED: &'static str = "a repeated enum";
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<VecLeaf<i32>> {
        vec_leaf(layouts, layout, si, &[FieldKind::Enum])
    }
    #[inline]
    fn get<'a>(h: &Field<List<Enum>>, msg: &MessageRef<'a>) -> Option<&'a [i32]> {
        vec_get(h, msg)
    }
    #[inline]
    fn present<'a>(h: &Field<List<Enum>>, msg: &MessageRef<'a>) -> Option<&'a [i32]> {
        vec_get(h, msg).filter(|s| !s.is_empty())
    }
}

impl Field<List<Enum>> {
    /// The enum type of the elements (resolved once).
    pub fn enum_type(&self) -> &EnumDescriptor {
        &self.leaf.enum_type.as_ref().expect("enum handles have an enum type").1
    }
}

/// Leaf of a repeated string/bytes handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct StrVecLeaf {
    access: Access<List<Bytes>>,
}

fn str_vec_leaf(layout: &MessageLayout, si: SlotIndex, kinds: &[FieldKind]) -> Option<StrVecLeaf> {
    let slot = layout.slot(si);
    if !kinds.contains(&slot.kind) {
        return None;
    }
    Some(StrVecLeaf { access: layout.access(si).ok()? })
}

impl<F: FieldType<Leaf = StrVecLeaf>> Field<F> {
    #[inline]
    fn strs<'a>(&self, msg: &MessageRef<'a>) -> Option<StrIter<'a>> {
        match self.locate(msg)? {
            Some(b) => b.strs_at(&self.leaf.access),
            None => {
                // An empty iterator of the right type: a message on the path is absent.
                let empty = MessageRef::empty(msg.layouts(), self.leaf_layout);
                Some(empty.block().vec_strs(self.leaf_slot))
            }
        }
    }
}

impl sealed::Sealed for List<Str> {}
impl FieldType for List<Str> {
    type Value<'a> = StrList<'a>;
    type Leaf = StrVecLeaf;
    const WANTED: &'static str = "a repeated string";
    fn leaf(_: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<StrVecLeaf> {
        str_vec_leaf(layout, si, &[FieldKind::String])
    }
    /// Where the decoder did not validate the strings, they are checked here, all at
    /// once; `None` if one is not UTF-8 (read those with `List<Bytes>`).
    #[inline]
    fn get<'a>(h: &Field<List<Str>>, msg: &MessageRef<'a>) -> Option<StrList<'a>> {
        h.strs(msg)?.strs()
    }
    #[inline]
    fn present<'a>(h: &Field<List<Str>>, msg: &MessageRef<'a>) -> Option<StrList<'a>> {
        Self::get(h, msg).filter(|l| l.len() > 0)
    }
}

impl sealed::Sealed for List<Bytes> {}
impl FieldType for List<Bytes> {
    type Value<'a> = StrIter<'a>;
    type Leaf = StrVecLeaf;
    const WANTED: &'static str = "a repeated bytes or string";
    fn leaf(_: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<StrVecLeaf> {
        str_vec_leaf(layout, si, &[FieldKind::Bytes, FieldKind::String])
    }
    #[inline]
    fn get<'a>(h: &Field<List<Bytes>>, msg: &MessageRef<'a>) -> Option<StrIter<'a>> {
        h.strs(msg)
    }
    #[inline]
    fn present<'a>(h: &Field<List<Bytes>>, msg: &MessageRef<'a>) -> Option<StrIter<'a>> {
        h.strs(msg).filter(|l| l.len() > 0)
    }
}

/// The elements of a repeated message field (see [`field::List`], [`ListRef::messages`](crate::ListRef::messages)).
#[derive(Clone, Debug)]
pub struct MessageList<'a> {
    pub(crate) inner: ChildIter<'a>,
    pub(crate) msg: MessageRef<'a>,
}

impl<'a> MessageList<'a> {
    /// Element `i`, if in range.
    #[inline]
    pub fn get(&self, i: usize) -> Option<MessageRef<'a>> {
        self.inner.get(i).map(|b| self.msg.with_block(b))
    }
}

impl<'a> Iterator for MessageList<'a> {
    type Item = MessageRef<'a>;
    #[inline]
    fn next(&mut self) -> Option<MessageRef<'a>> {
        self.inner.next().map(|b| self.msg.with_block(b))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
impl ExactSizeIterator for MessageList<'_> {}
impl DoubleEndedIterator for MessageList<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|b| self.msg.with_block(b))
    }
}

/// Leaf of a repeated message or map handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct ChildVecLeaf {
    access: Access<List<Message>>,
}

impl Field<List<Message>> {
    #[inline]
    fn children<'a>(&self, msg: &MessageRef<'a>) -> Option<MessageList<'a>> {
        let inner = match self.locate(msg)? {
            Some(b) => b.children_at(&self.leaf.access)?,
            None => MessageRef::empty(msg.layouts(), self.leaf_layout).block().vec_children(self.leaf_slot),
        };
        Some(MessageList { inner, msg: *msg })
    }
}

impl sealed::Sealed for List<Message> {}
impl FieldType for List<Message> {
    type Value<'a> = MessageList<'a>;
    type Leaf = ChildVecLeaf;
    const WANTED: &'static str = "a repeated message";
    fn leaf(_: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<ChildVecLeaf> {
        if layout.slot(si).repetition != Repetition::Repeated {
            return None;
        }
        Some(ChildVecLeaf { access: layout.access(si).ok()? })
    }
    #[inline]
    fn get<'a>(h: &Field<List<Message>>, msg: &MessageRef<'a>) -> Option<MessageList<'a>> {
        h.children(msg)
    }
    #[inline]
    fn present<'a>(h: &Field<List<Message>>, msg: &MessageRef<'a>) -> Option<MessageList<'a>> {
        h.children(msg).filter(|l| l.len() > 0)
    }
}

impl sealed::Sealed for Map {}
impl FieldType for Map {
    type Value<'a> = MapRef<'a>;
    type Leaf = ChildVecLeaf;
    const WANTED: &'static str = "a map";
    fn leaf(_: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<ChildVecLeaf> {
        if layout.slot(si).repetition != Repetition::Map {
            return None;
        }
        Some(ChildVecLeaf { access: layout.access(si).ok()? })
    }
    #[inline]
    fn get<'a>(h: &Field<Map>, msg: &MessageRef<'a>) -> Option<MapRef<'a>> {
        let holder = match h.locate(msg)? {
            Some(b) => {
                b.is_set_at(&h.leaf.access)?;
                msg.with_block(b)
            }
            None => MessageRef::empty(msg.layouts(), h.leaf_layout),
        };
        Some(MapRef { msg: holder, slot: h.leaf_slot })
    }
    #[inline]
    fn present<'a>(h: &Field<Map>, msg: &MessageRef<'a>) -> Option<MapRef<'a>> {
        Self::get(h, msg).filter(|m| !m.is_empty())
    }
}
