//! Typed field handles: a field (or a path of singular message fields ending in one) resolved once against a message type, then read in O(1) with no string work.

use std::fmt;
use std::marker::PhantomData;

use prost_reflect::Kind;
use protojit_arena::{Access, BlockRef, FieldKind, LayoutIndex, Layouts, MessageLayout, Repetition, Scalar, SlotIndex};

use crate::path::{find_field, kind_name, PathError, PathErrorKind, PathSegment};
use crate::MessageRef;

mod kinds;
pub use kinds::MessageList;

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
    /// No message type has this full name (or short name).
    #[error("no message type `{0}` in the schema")]
    UnknownType(String),
    /// A short name matches several message types.
    #[error("message type name `{name}` is ambiguous: {}; use the full name", candidates.join(", "))]
    AmbiguousType {
        /// The name asked for.
        name: String,
        /// The full names it matches.
        candidates: Vec<String>,
    },
    /// The path does not follow the field-path grammar ([`parse_path`](crate::parse_path)).
    #[error(transparent)]
    Path(PathError),
    /// A `[...]` selector: a handle reads one field (a [`FieldPath`](crate::FieldPath) selects).
    #[error("`{segment}` in `{path}`: a handle reads one field, through singular messages; select elements with a FieldPath")]
    Selector {
        /// The selector.
        segment: String,
        /// The whole path.
        path: String,
    },
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

use field::Message;
/// The kinds a [`Field`] handle reads besides numbers: `Field<i64>`, `Field<field::Str>`,
/// `Field<field::List<u32>>`, `Field<field::Map>`, ... (the arena's markers, which its
/// typed slot accesses read with too).
pub use protojit_arena::field;

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
///
/// // Kinds are checked once, at resolution:
/// let err = Field::<field::Str>::resolve(schema.layouts(), "Point", "x").unwrap_err();
/// assert_eq!(err.to_string(), "field `x` of `Point` is int64, but this handle reads a string (in `x`)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Field<T: FieldType> {
    /// Singular message fields to follow from the root, in order.
    path: Box<[Access<Message>]>,
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

impl<T: FieldType> Field<T> {
    /// Resolves `path` against the message type `message` of `layouts`: the one way to
    /// make a handle. `message` is a full name or a unique short name
    /// ([`Layouts::find_type`], the rule `Schema` follows too); `path` is a chain of
    /// fields through singular messages (`name`, `a.b.c`), each segment written in the
    /// one field-path grammar ([`parse_path`](crate::parse_path): a declared name, a JSON
    /// name, `#number` or `(extension)`; no `[...]` selectors).
    ///
    /// From a decoded message: `Field::resolve(msg.layouts(), msg.descriptor().full_name(), path)`.
    pub fn resolve(layouts: &Layouts, message: &str, path: &str) -> Result<Field<T>, HandleError> {
        let root = layouts.find_type(message).map_err(|candidates| match candidates.len() {
            0 => HandleError::UnknownType(message.to_owned()),
            _ => HandleError::AmbiguousType {
                name: message.to_owned(),
                candidates: candidates.iter().map(|&li| layouts.get(li).descriptor().full_name().to_owned()).collect(),
            },
        })?;
        let segments = crate::parse_path(path).map_err(|e| match e.kind {
            // No path, or a segment left empty (`a.`, `a..b`, `.a`).
            PathErrorKind::Empty => HandleError::Empty { path: path.to_owned() },
            PathErrorKind::Syntax(_) if matches!(e.segment.as_str(), "" | ".") => {
                HandleError::Empty { path: path.to_owned() }
            }
            _ => HandleError::Path(e),
        })?;
        if let Some(seg) = segments.iter().find(|s| matches!(s.segment, PathSegment::Select(_))) {
            return Err(HandleError::Selector { segment: seg.text.to_owned(), path: path.to_owned() });
        }
        let root_layout = layouts.get(root);
        let mut layout = root_layout;
        let mut steps = Vec::new();
        let mut segs = segments.iter().peekable();
        while let Some(seg) = segs.next() {
            let PathSegment::Field(name) = &seg.segment else { unreachable!("selectors refused above") };
            let message = || layout.descriptor().full_name().to_owned();
            let si = find_field(layout.descriptor(), name).and_then(|f| layout.slot_by_number(f.number())).ok_or_else(
                || HandleError::UnknownField { message: message(), field: seg.text.to_owned(), path: path.to_owned() },
            )?;
            if segs.peek().is_none() {
                let leaf = T::leaf(layouts, layout, si).ok_or_else(|| HandleError::KindMismatch {
                    message: message(),
                    field: seg.text.to_owned(),
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
            let step = layout.access::<Message>(si).map_err(|_| HandleError::NotAMessage {
                message: message(),
                field: seg.text.to_owned(),
                found: describe(layout, si),
                path: path.to_owned(),
            })?;
            steps.push(step);
            layout = layouts.get(step.child().expect("message slots have a child layout"));
        }
        unreachable!("a parsed path has a segment")
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
        // Most handles name a field of the message itself: test for that before setting up
        // the walk, so a one-segment read is a layout check and a load (BENCHMARKS.md,
        // "Cost of the re-laid crates").
        if self.path.is_empty() {
            return Some(Some(msg.block()));
        }
        self.walk(msg.block())
    }

    /// [`locate`](Self::locate) over a non-empty path of message steps.
    #[inline]
    fn walk<'a>(&self, mut b: BlockRef<'a>) -> Option<Option<BlockRef<'a>>> {
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
