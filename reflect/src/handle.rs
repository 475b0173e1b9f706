//! Typed field handles: a field (or a path of singular message fields ending in one) resolved once against a message type, then read in O(1) with no string work.

use std::fmt;
use std::marker::PhantomData;

use prost_reflect::{EnumDescriptor, Kind};
use protojit_arena::{
    Access, BlockRef, Child, ChildIter, ChildVector, FieldKind, LayoutIndex, Layouts, MessageLayout, Repetition,
    Scalar, Single, SlotIndex, StrIter, StrVector, Vector,
};

use crate::path::kind_name;
use crate::{EnumValue, MapRef, MessageRef};

/// Why a [`Field`] handle could not be resolved (or joined).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandleError {
    /// The path is empty, or has an empty segment.
    #[error("empty field path `{path}`")]
    Empty {
        /// The whole path.
        path: String,
    },
    /// No message type has this full name.
    #[error("no message type `{0}` in the schema")]
    UnknownType(String),
    /// The message type has no field called (or numbered) so.
    #[error("message type `{message}` has no field `{field}` (in `{path}`)")]
    UnknownField {
        /// Full name of the message type.
        message: String,
        /// The segment.
        field: String,
        /// The whole path.
        path: String,
    },
    /// A segment other than the last names a field that is not a singular message.
    #[error("field `{field}` of `{message}` is {found}, not a singular message, so `{path}` cannot go through it")]
    NotAMessage {
        /// Full name of the message type.
        message: String,
        /// The segment.
        field: String,
        /// What the field is (`repeated int32`, `map<string, Foo>`, `string`).
        found: String,
        /// The whole path.
        path: String,
    },
    /// The last field is not of the kind the handle reads.
    #[error("field `{field}` of `{message}` is {found}, but this handle reads {wanted} (in `{path}`)")]
    KindMismatch {
        /// Full name of the message type.
        message: String,
        /// The segment.
        field: String,
        /// What the field is.
        found: String,
        /// What the handle reads.
        wanted: &'static str,
        /// The whole path.
        path: String,
    },
    /// [`Field::join`]: the inner handle is for another message type (or schema) than the
    /// outer handle's message field holds.
    #[error("cannot join: `{outer}` holds `{holds}`, but the inner handle reads `{inner}`")]
    JoinMismatch {
        /// The outer handle's path.
        outer: String,
        /// The message type its field holds.
        holds: String,
        /// The inner handle's root type.
        inner: String,
    },
}

/// A number a handle reads: `bool`, `i32`, `i64`, `u32`, `u64`, `f32`, `f64`. Sealed.
pub trait Number: Scalar + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The field kinds read as this type (enums have their own handle, [`field::Enum`]).
    #[doc(hidden)]
    const KINDS: &'static [FieldKind];
    /// How `.proto` spells what this type reads (for errors).
    #[doc(hidden)]
    const WANTED: &'static str;
    /// Whether the value is zero bitwise (proto3 presence: `-0.0` is present).
    #[doc(hidden)]
    fn is_zero(self) -> bool;
    /// The value of a declared default of this type.
    #[doc(hidden)]
    fn from_default(v: &prost_reflect::Value) -> Self;
}

macro_rules! number {
    ($($t:ty, $variant:ident, [$($k:ident),*], $wanted:literal, |$v:ident| $zero:expr;)*) => {$(
        impl Number for $t {
            const KINDS: &'static [FieldKind] = &[$(FieldKind::$k),*];
            const WANTED: &'static str = $wanted;
            #[inline]
            fn is_zero(self) -> bool {
                let $v = self;
                $zero
            }
            fn from_default(v: &prost_reflect::Value) -> Self {
                match v {
                    prost_reflect::Value::$variant(x) => *x,
                    _ => Self::ZERO,
                }
            }
        }
    )*};
}
number! {
    bool, Bool, [Bool], "a bool", |v| !v;
    i32, I32, [Int32, Sint32, Sfixed32], "an int32, sint32 or sfixed32", |v| v == 0;
    i64, I64, [Int64, Sint64, Sfixed64], "an int64, sint64 or sfixed64", |v| v == 0;
    u32, U32, [Uint32, Fixed32], "a uint32 or fixed32", |v| v == 0;
    u64, U64, [Uint64, Fixed64], "a uint64 or fixed64", |v| v == 0;
    f32, F32, [Float], "a float", |v| v.to_bits() == 0;
    f64, F64, [Double], "a double", |v| v.to_bits() == 0;
}

/// The kinds a [`Field`] handle reads besides numbers: `Field<i64>`, `Field<field::Str>`,
/// `Field<field::List<u32>>`, `Field<field::Map>`, ...
pub mod field {
    use std::marker::PhantomData;

    /// A singular `string`, read as `&str`.
    #[derive(Debug)]
    pub enum Str {}
    /// A singular `bytes` (or `string`), read as `&[u8]`.
    #[derive(Debug)]
    pub enum Bytes {}
    /// A singular enum, read as its number (`i32`).
    #[derive(Debug)]
    pub enum Enum {}
    /// A singular message or group, read as a `MessageRef`.
    #[derive(Debug)]
    pub enum Message {}
    /// A repeated field of `T` (a number, [`Str`], [`Bytes`], [`Enum`] or [`Message`]):
    /// numbers and enums read as slices, the others as iterators.
    #[derive(Debug)]
    pub struct List<T>(PhantomData<T>);
    /// A map field, read as a `MapRef`.
    #[derive(Debug)]
    pub enum Map {}
}
use field::{Bytes, Enum, List, Map, Message, Str};

/// What a [`Field`] handle reads: a [`Number`] type or one of the [`field`] markers.
/// Sealed: the hidden items are how resolution checks a slot and how a read is done.
pub trait FieldType: sealed::Sealed + Sized + 'static {
    /// What a read yields, borrowed from the tree.
    type Value<'a>;
    /// What the handle keeps about its last field.
    #[doc(hidden)]
    type Leaf: Clone + fmt::Debug + Send + Sync;
    /// How `.proto` spells what the handle reads (for errors).
    #[doc(hidden)]
    const WANTED: &'static str;
    /// The leaf for slot `si` of `layout`, if the slot is of this kind.
    #[doc(hidden)]
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<Self::Leaf>;
    /// The value (the default when absent), `None` if `msg` is of another type.
    #[doc(hidden)]
    fn get<'a>(h: &Field<Self>, msg: &MessageRef<'a>) -> Option<Self::Value<'a>>;
    /// The value if present, `None` if absent or `msg` is of another type.
    #[doc(hidden)]
    fn present<'a>(h: &Field<Self>, msg: &MessageRef<'a>) -> Option<Self::Value<'a>>;
}

mod sealed {
    pub trait Sealed {}
}

/// A field of one message type, resolved once (from a name or a dotted path of singular
/// message fields, `a.b.c`) and checked to be of the kind `T` reads; then read on any
/// decoded message of that type with one layout check, one presence check and one load
/// per step: no string work, no descriptor lookup, no allocation.
///
/// `T` is a number type (`bool`, `i32`, `i64`, `u32`, `u64`, `f32`, `f64`: `i32` reads
/// `int32`/`sint32`/`sfixed32`, and so on) or a [`field`] marker: [`field::Str`],
/// [`field::Bytes`], [`field::Enum`], [`field::Message`], [`field::List`]`<T>`,
/// [`field::Map`].
///
/// Reads never guess: on a message of another type (or of another schema's layouts),
/// [`get`](Self::get) and [`present`](Self::present) return `None` and
/// [`has`](Self::has) `false`.
///
/// (Decoding needs the `protojit` facade, which this crate cannot depend on, so this
/// example is not compiled here; the facade's crate tour runs the same calls.)
/// ```ignore
/// # use protojit::Schema;
/// use protojit::{field, Arena, Field};
/// let schema = Schema::from_proto_source("p.proto", r#"
///     syntax = "proto3";
///     message Point { int64 x = 1; repeated sint32 path = 2; Meta meta = 3; }
///     message Meta { string name = 1; }
/// "#)?;
/// let x = Field::<i64>::resolve(schema.layouts(), "Point", "x")?;
/// let path = Field::<field::List<i32>>::resolve(schema.layouts(), "Point", "path")?;
/// let name = Field::<field::Str>::resolve(schema.layouts(), "Point", "meta.name")?;
///
/// let decoder = schema.decoder("Point")?;
/// let arena = Arena::new();
/// let point = decoder.decode(b"\x08\x07\x12\x02\x02\x03\x1a\x03\x0a\x01p", &arena)?;
/// assert_eq!(x.get(&point), Some(7));
/// assert_eq!(path.get(&point), Some(&[1, -2][..]));
/// assert_eq!(name.get(&point), Some("p"));
/// assert_eq!(point.get_field(&x), Some(7)); // the same read, prost-reflect's spelling
///
/// // Kinds are checked once, at resolution:
/// let err = Field::<field::Str>::resolve(schema.layouts(), "Point", "x").unwrap_err();
/// assert_eq!(err.to_string(), "field `x` of `Point` is int64, but this handle reads a string (in `x`)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Field<T: FieldType> {
    /// Singular message fields to follow from the root, in order.
    path: Box<[Access<Child>]>,
    leaf: T::Leaf,
    /// Id of the root layout ([`MessageLayout::id`]), for [`join`](Field::join).
    root_id: u64,
    root: LayoutIndex,
    /// Layout of the last field's message, and the last field's slot in it.
    leaf_layout: LayoutIndex,
    leaf_slot: SlotIndex,
    text: Box<str>,
    root_name: Box<str>,
    _t: PhantomData<fn() -> T>,
}

impl<T: FieldType> Clone for Field<T> {
    fn clone(&self) -> Self {
        Field {
            path: self.path.clone(),
            leaf: self.leaf.clone(),
            root_id: self.root_id,
            root: self.root,
            leaf_layout: self.leaf_layout,
            leaf_slot: self.leaf_slot,
            text: self.text.clone(),
            root_name: self.root_name.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: FieldType> fmt::Debug for Field<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Field")
            .field("message", &self.root_name)
            .field("path", &self.text)
            .field("reads", &<T as FieldType>::WANTED)
            .finish()
    }
}

/// What a slot holds, as `.proto` spells it (for errors).
fn describe(layout: &MessageLayout, si: SlotIndex) -> String {
    let slot = layout.slot(si);
    let kind = layout.slot_descriptor(si).kind();
    match slot.repetition {
        Repetition::Singular => kind_name(&kind),
        Repetition::Repeated => format!("repeated {}", kind_name(&kind)),
        Repetition::Map => match kind {
            Kind::Message(e) => format!(
                "map<{}, {}>",
                kind_name(&e.map_entry_key_field().kind()),
                kind_name(&e.map_entry_value_field().kind())
            ),
            k => kind_name(&k),
        },
    }
}

/// Slot of segment `seg` (a name, a JSON name, or `#number`) in `layout`.
fn find_slot(layout: &MessageLayout, seg: &str) -> Option<SlotIndex> {
    if let Some(n) = seg.strip_prefix('#') {
        return layout.slot_by_number(n.parse().ok()?);
    }
    let d = layout.descriptor();
    let f = d.get_field_by_name(seg).or_else(|| d.get_field_by_json_name(seg))?;
    layout.slot_by_number(f.number())
}

impl<T: FieldType> Field<T> {
    /// Resolves `path` (`name`, `a.b.c` through singular message fields; a segment may be
    /// a declared name, a JSON name or `#number`) against the message type `message` (a
    /// full name) of `layouts`.
    pub fn resolve(layouts: &Layouts, message: &str, path: &str) -> Result<Field<T>, HandleError> {
        let root = match layouts.index_of(message) {
            Some(li) => li,
            None => {
                // A unique short name, as `Schema::decoder` accepts.
                let mut found = layouts.iter().filter(|(_, l)| l.descriptor().name() == message);
                match (found.next(), found.next()) {
                    (Some((li, _)), None) => li,
                    _ => return Err(HandleError::UnknownType(message.to_owned())),
                }
            }
        };
        Self::resolve_in(layouts, root, path)
    }

    /// Resolves `path` against layout `root` of `layouts` (see [`resolve`](Self::resolve)).
    pub fn resolve_in(layouts: &Layouts, root: LayoutIndex, path: &str) -> Result<Field<T>, HandleError> {
        let root_layout = layouts.get(root);
        let mut layout = root_layout;
        let mut steps = Vec::new();
        let mut segs = path.split('.').peekable();
        loop {
            let seg = segs.next().unwrap_or_default();
            if seg.is_empty() {
                return Err(HandleError::Empty { path: path.to_owned() });
            }
            let message = || layout.descriptor().full_name().to_owned();
            let si = find_slot(layout, seg).ok_or_else(|| HandleError::UnknownField {
                message: message(),
                field: seg.to_owned(),
                path: path.to_owned(),
            })?;
            if segs.peek().is_none() {
                let leaf = T::leaf(layouts, layout, si).ok_or_else(|| HandleError::KindMismatch {
                    message: message(),
                    field: seg.to_owned(),
                    found: describe(layout, si),
                    wanted: <T as FieldType>::WANTED,
                    path: path.to_owned(),
                })?;
                return Ok(Field {
                    path: steps.into_boxed_slice(),
                    leaf,
                    root_id: root_layout.id(),
                    root,
                    leaf_layout: layout.index(),
                    leaf_slot: si,
                    text: path.into(),
                    root_name: root_layout.descriptor().full_name().into(),
                    _t: PhantomData,
                });
            }
            let step = layout.access::<Child>(si).map_err(|_| HandleError::NotAMessage {
                message: message(),
                field: seg.to_owned(),
                found: describe(layout, si),
                path: path.to_owned(),
            })?;
            steps.push(step);
            layout = layouts.get(step.child().expect("message slots have a child layout"));
        }
    }

    /// Resolves `path` against the type of `msg` (see [`resolve`](Self::resolve)).
    pub fn of(msg: &MessageRef<'_>, path: &str) -> Result<Field<T>, HandleError> {
        Self::resolve_in(msg.layouts(), msg.layout().index(), path)
    }

    /// The path the handle was resolved from.
    pub fn path(&self) -> &str {
        &self.text
    }

    /// Full name of the message type the handle reads.
    pub fn message_name(&self) -> &str {
        &self.root_name
    }

    /// The layout of the message type the handle reads.
    pub fn root(&self) -> LayoutIndex {
        self.root
    }

    /// The value of the field in `msg`: its default when absent (or when a message on the
    /// path is absent); `None` if `msg` is not of the handle's type.
    #[inline(always)]
    pub fn get<'a>(&self, msg: &MessageRef<'a>) -> Option<T::Value<'a>> {
        T::get(self, msg)
    }

    /// The value of the field in `msg` if it is present (set on the wire; non-default for
    /// fields without explicit presence; non-empty when repeated); `None` if absent or if
    /// `msg` is not of the handle's type.
    #[inline]
    pub fn present<'a>(&self, msg: &MessageRef<'a>) -> Option<T::Value<'a>> {
        T::present(self, msg)
    }

    /// Whether the field is present in `msg` (`false` for a message of another type).
    #[inline]
    pub fn has(&self, msg: &MessageRef<'_>) -> bool {
        self.present(msg).is_some()
    }

    /// The block holding the last field: `Some(None)` when a message on the path is absent,
    /// `None` when `msg` is of another type than the handle's (checked by the first
    /// access: the first step's, or the leaf's when the path has one segment).
    #[inline(always)]
    fn locate<'a>(&self, msg: &MessageRef<'a>) -> Option<Option<BlockRef<'a>>> {
        let mut b = msg.block();
        for step in self.path.iter() {
            match b.child_at(step)? {
                Some(c) => b = c,
                None => return Some(None),
            }
        }
        Some(Some(b))
    }
}

impl Field<Message> {
    /// The handle of `inner`'s field reached through this handle's message field:
    /// `a` joined with `b.c` reads `a.b.c`. The inner handle must be for the message type
    /// this field holds, in the same layouts.
    pub fn join<T: FieldType>(&self, inner: &Field<T>) -> Result<Field<T>, HandleError> {
        let holds = self.leaf.child;
        if self.leaf.child_id != inner.root_id {
            return Err(HandleError::JoinMismatch {
                outer: self.text.to_string(),
                holds: self.leaf.child_name.to_string(),
                inner: inner.root_name.to_string(),
            });
        }
        debug_assert_eq!(holds, inner.root);
        let mut path = self.path.to_vec();
        path.push(self.leaf.access);
        path.extend_from_slice(&inner.path);
        Ok(Field {
            path: path.into_boxed_slice(),
            leaf: inner.leaf.clone(),
            root_id: self.root_id,
            root: self.root,
            leaf_layout: inner.leaf_layout,
            leaf_slot: inner.leaf_slot,
            text: format!("{}.{}", self.text, inner.text).into(),
            root_name: self.root_name.clone(),
            _t: PhantomData,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Numbers.

/// Leaf of a singular number (or enum) handle.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct NumLeaf<T: Number> {
    access: Access<Single<T>>,
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
    let access = layout.access::<Single<T>>(si).ok()?;
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
    access: Access<protojit_arena::Str>,
    explicit: bool,
    /// The decoder validates this field's UTF-8 (proto3 `string`).
    validated: bool,
}

fn str_leaf(layout: &MessageLayout, si: SlotIndex, kinds: &[FieldKind]) -> Option<StrLeaf> {
    let slot = layout.slot(si);
    if !kinds.contains(&slot.kind) {
        return None;
    }
    Some(StrLeaf {
        access: layout.access(si).ok()?,
        explicit: slot.hasbit != protojit_arena::NO_INDEX || slot.oneof != protojit_arena::NO_INDEX,
        validated: slot.validate_utf8,
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

    #[inline]
    fn text<'a>(&self, msg: &MessageRef<'a>, bytes: &'a [u8]) -> Option<&'a str> {
        if self.leaf.validated && msg.utf8_validated() {
            // SAFETY: the decoder validated this proto3 string (`MessageRef::from_raw`).
            Some(unsafe { std::str::from_utf8_unchecked(bytes) })
        } else {
            std::str::from_utf8(bytes).ok()
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
        let b = h.bytes_get(msg)?;
        h.text(msg, b)
    }
    #[inline]
    fn present<'a>(h: &Field<Str>, msg: &MessageRef<'a>) -> Option<&'a str> {
        let b = h.bytes_present(msg)?;
        h.text(msg, b)
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
    access: Access<Child>,
    child: LayoutIndex,
    child_id: u64,
    child_name: Box<str>,
}

impl sealed::Sealed for Message {}
impl FieldType for Message {
    type Value<'a> = MessageRef<'a>;
    type Leaf = MsgLeaf;
    const WANTED: &'static str = "a message";
    fn leaf(layouts: &Layouts, layout: &MessageLayout, si: SlotIndex) -> Option<MsgLeaf> {
        let access = layout.access::<Child>(si).ok()?;
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
    access: Access<Vector<T>>,
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
    let access = layout.access::<Vector<T>>(si).ok()?;
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
    access: Access<StrVector>,
    validated: bool,
}

fn str_vec_leaf(layout: &MessageLayout, si: SlotIndex, kinds: &[FieldKind]) -> Option<StrVecLeaf> {
    let slot = layout.slot(si);
    if !kinds.contains(&slot.kind) {
        return None;
    }
    Some(StrVecLeaf { access: layout.access(si).ok()?, validated: slot.validate_utf8 })
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

/// The elements of a repeated `string` field as text (see [`field::List`]).
#[derive(Clone, Debug)]
pub struct StrList<'a> {
    inner: StrIter<'a>,
}

impl<'a> Iterator for StrList<'a> {
    type Item = &'a str;
    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        // SAFETY: every element was checked to be UTF-8, by the decoder or by `Field::get`
        // before this iterator was made.
        self.inner.next().map(|b| unsafe { std::str::from_utf8_unchecked(b) })
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
impl ExactSizeIterator for StrList<'_> {}
impl DoubleEndedIterator for StrList<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        // SAFETY: as in `next`.
        self.inner.next_back().map(|b| unsafe { std::str::from_utf8_unchecked(b) })
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
        let inner = h.strs(msg)?;
        if !(h.leaf.validated && msg.utf8_validated()) && inner.clone().any(|b| std::str::from_utf8(b).is_err()) {
            return None;
        }
        Some(StrList { inner })
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
    access: Access<ChildVector>,
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

impl<'a> MessageRef<'a> {
    /// The value of a field through its handle (see [`Field::get`]): the prost-reflect
    /// spelling of `field.get(&msg)`.
    #[inline]
    pub fn get_field<T: FieldType>(&self, field: &Field<T>) -> Option<T::Value<'a>> {
        field.get(self)
    }

    /// Whether a field is present, through its handle (see [`Field::has`]).
    #[inline]
    pub fn has_field<T: FieldType>(&self, field: &Field<T>) -> bool {
        field.has(self)
    }

    /// A handle on the field at `path` of this message's type (see [`Field::resolve`]):
    /// resolve once, then read it on every message of the type.
    pub fn field_handle<T: FieldType>(&self, path: &str) -> Result<Field<T>, HandleError> {
        Field::of(self, path)
    }
}
