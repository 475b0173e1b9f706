//! Field paths: `FieldPath`, a path (`a.b[2].c`) parsed and type-checked once against a schema, then evaluated on decoded trees without string work; the grammar every path follows is in `grammar.rs`.
//!
//! The grammar is written once, on [`parse_path`].

use std::fmt;
use std::ops::ControlFlow;

use prost_reflect::{Kind, MessageDescriptor};
use protojit_arena::{LayoutIndex, Layouts, Repetition, SlotIndex};

use crate::{ListRef, MapKey, MapRef, MessageRef, Value};

mod grammar;
use grammar::{field_name, Parser};
pub use grammar::{
    find_field, kind_name, parse_path, FieldName, PathError, PathErrorKind, PathSegment, Segment, Selector,
};

/// A map key held by a compiled path.
#[derive(Clone, Debug, PartialEq)]
enum Key {
    Bool(bool),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    String(String),
}

impl Key {
    fn as_map_key(&self) -> MapKey<'_> {
        match self {
            Key::Bool(v) => MapKey::Bool(*v),
            Key::I32(v) => MapKey::I32(*v),
            Key::I64(v) => MapKey::I64(*v),
            Key::U32(v) => MapKey::U32(*v),
            Key::U64(v) => MapKey::U64(*v),
            Key::String(v) => MapKey::String(v),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// A field of a message: its number, and its slot in the layout the path was compiled
    /// for (checked against the number at evaluation, so a tree of another schema falls
    /// back to a lookup by number).
    Field { number: u32, slot: SlotIndex },
    /// Element `i` of a list (negative: from the end).
    Index(i64),
    /// The value of a map key.
    Key(Key),
    /// Every element of a list, every entry of a map.
    All,
}

/// A compiled field path: names resolved to field numbers and layout slots, keys parsed,
/// types checked, once. [`eval`](Self::eval) then walks slots with no string work (besides
/// comparing string map keys).
///
/// The grammar is the one every path follows, in [`parse_path`]'s documentation.
///
/// A path yields zero or more values. A field yields its value even when absent (its
/// default, as [`MessageRef::get`] reads), so that `a.b` where `a` is unset yields `b`'s
/// default; an index out of range or a missing map key yields nothing.
///
/// The `protojit` crate's documentation has a runnable tour of paths.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldPath {
    text: String,
    root: MessageDescriptor,
    steps: Vec<Step>,
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What the path yields after a step, for type checking.
enum Cur {
    Message(MessageDescriptor),
    /// A repeated field: its element kind.
    List(Kind),
    /// A map field: its entry type.
    Map(MessageDescriptor),
    Scalar(Kind),
}

impl Cur {
    fn describe(&self) -> String {
        match self {
            Cur::Message(m) => format!("message `{}`", m.full_name()),
            Cur::List(k) => format!("a `repeated {}`", kind_name(k)),
            Cur::Map(e) => format!(
                "a `map<{}, {}>`",
                kind_name(&e.map_entry_key_field().kind()),
                kind_name(&e.map_entry_value_field().kind())
            ),
            Cur::Scalar(k) => format!("a `{}`", kind_name(k)),
        }
    }

    fn of_value(kind: Kind) -> Cur {
        match kind {
            Kind::Message(m) => Cur::Message(m),
            k => Cur::Scalar(k),
        }
    }
}

/// The layout slot of field `number` of `desc`: its rank among the type's fields and
/// extensions (how [`Layouts`] orders slots).
fn slot_in_descriptor(desc: &MessageDescriptor, number: u32) -> SlotIndex {
    let below = desc.fields().filter(|f| f.number() < number).count()
        + desc.extensions().filter(|e| e.number() < number).count();
    SlotIndex::new(below as u32)
}

fn parse_key(kind: &Kind, content: Selector) -> Option<Key> {
    match (kind, content) {
        (Kind::String, Selector::Quoted(s)) => Some(Key::String(s)),
        (Kind::Bool, Selector::Bare(s)) => match s.as_str() {
            "true" => Some(Key::Bool(true)),
            "false" => Some(Key::Bool(false)),
            _ => None,
        },
        (Kind::Int32 | Kind::Sint32 | Kind::Sfixed32, Selector::Bare(s)) => s.parse().ok().map(Key::I32),
        (Kind::Int64 | Kind::Sint64 | Kind::Sfixed64, Selector::Bare(s)) => s.parse().ok().map(Key::I64),
        (Kind::Uint32 | Kind::Fixed32, Selector::Bare(s)) => s.parse().ok().map(Key::U32),
        (Kind::Uint64 | Kind::Fixed64, Selector::Bare(s)) => s.parse().ok().map(Key::U64),
        _ => None,
    }
}

impl FieldPath {
    /// Parses `path` for messages of type `root`, resolving every name and checking every
    /// step against the schema.
    ///
    /// Slots are computed from the descriptor's pool (the way [`Layouts`] lays them out);
    /// [`parse_in`](Self::parse_in) takes them from the layouts themselves.
    pub fn parse(root: &MessageDescriptor, path: &str) -> Result<FieldPath, PathError> {
        Self::parse_with(root, path, slot_in_descriptor)
    }

    /// Parses `path` for messages of layout `root` in `layouts` (see [`parse`](Self::parse)).
    pub fn parse_in(layouts: &Layouts, root: LayoutIndex, path: &str) -> Result<FieldPath, PathError> {
        Self::parse_with(layouts.get(root).descriptor(), path, |desc, number| {
            layouts
                .index_of(desc.full_name())
                .and_then(|li| layouts.get(li).slot_by_number(number))
                .unwrap_or_else(|| slot_in_descriptor(desc, number))
        })
    }

    fn parse_with(
        root: &MessageDescriptor,
        path: &str,
        slot_of: impl Fn(&MessageDescriptor, u32) -> SlotIndex,
    ) -> Result<FieldPath, PathError> {
        let mut p = Parser { text: path, pos: 0 };
        if path.is_empty() {
            return Err(p.err(0, "", PathErrorKind::Empty));
        }
        let mut cur = Cur::Message(root.clone());
        let mut steps = Vec::new();
        loop {
            let start = p.pos;
            let seg = p.field_segment()?;
            let Cur::Message(msg) = &cur else {
                return Err(p.err(start, seg, PathErrorKind::NotAMessage { found: cur.describe() }));
            };
            let message = msg.full_name().to_owned();
            let name = field_name(seg);
            let field = find_field(msg, &name).ok_or_else(|| {
                let kind = match name {
                    FieldName::Number(_) => PathErrorKind::UnknownNumber { message },
                    FieldName::Extension(_) => PathErrorKind::UnknownExtension { message },
                    FieldName::Name(_) => PathErrorKind::UnknownField { message },
                };
                p.err(start, seg, kind)
            })?;
            let (number, kind, is_list, is_map) = (field.number(), field.kind(), field.is_list(), field.is_map());
            steps.push(Step::Field { number, slot: slot_of(msg, number) });
            cur = match kind {
                Kind::Message(entry) if is_map => Cur::Map(entry),
                k if is_list => Cur::List(k),
                k => Cur::of_value(k),
            };
            while p.peek() == Some(b'[') {
                let (seg, start, content) = p.bracket()?;
                let (step, next) = match (&cur, content) {
                    (Cur::List(k), Selector::All) => (Step::All, Cur::of_value(k.clone())),
                    (Cur::Map(e), Selector::All) => (Step::All, Cur::Message(e.clone())),
                    (Cur::List(k), Selector::Bare(s)) => match s.parse::<i64>() {
                        Ok(i) => (Step::Index(i), Cur::of_value(k.clone())),
                        Err(_) => return Err(p.err(start, seg, PathErrorKind::BadIndex)),
                    },
                    (Cur::List(_), Selector::Quoted(_)) => return Err(p.err(start, seg, PathErrorKind::BadIndex)),
                    (Cur::Map(e), content) => {
                        let key_kind = e.map_entry_key_field().kind();
                        match parse_key(&key_kind, content) {
                            Some(key) => (Step::Key(key), Cur::of_value(e.map_entry_value_field().kind())),
                            None => {
                                return Err(p.err(start, seg, PathErrorKind::BadKey { key_type: kind_name(&key_kind) }))
                            }
                        }
                    }
                    (other, _) => {
                        return Err(p.err(start, seg, PathErrorKind::NotIndexable { found: other.describe() }))
                    }
                };
                steps.push(step);
                cur = next;
            }
            match p.peek() {
                None => break,
                Some(b'.') => p.pos += 1,
                Some(_) => return Err(p.syntax("`.`, `[` or the end of the path")),
            }
        }
        Ok(FieldPath { text: path.to_owned(), root: root.clone(), steps })
    }

    /// The message type the path was parsed for.
    pub fn root(&self) -> &MessageDescriptor {
        &self.root
    }

    /// The path text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The values the path selects in `msg`, in order.
    ///
    /// `msg` should be of the path's [`root`](Self::root) type; for a message of another
    /// type, the path's field numbers are looked up in that type instead.
    pub fn eval<'a>(&self, msg: &MessageRef<'a>) -> Vec<Value<'a>> {
        let mut out = Vec::new();
        self.eval_into(msg, &mut out);
        out
    }

    /// Like [`eval`](Self::eval), appending to `out`.
    pub fn eval_into<'a>(&self, msg: &MessageRef<'a>, out: &mut Vec<Value<'a>>) {
        let _ = self.walk_msg(0, *msg, &mut |v| {
            out.push(v);
            ControlFlow::Continue(())
        });
    }

    /// The first value the path selects in `msg`, if any (stops walking there).
    pub fn first<'a>(&self, msg: &MessageRef<'a>) -> Option<Value<'a>> {
        let mut found = None;
        let _ = self.walk_msg(0, *msg, &mut |v| {
            found = Some(v);
            ControlFlow::Break(())
        });
        found
    }

    /// Calls `f` with each value the path selects in `msg`, in order.
    pub fn for_each<'a>(&self, msg: &MessageRef<'a>, mut f: impl FnMut(Value<'a>)) {
        let _ = self.walk_msg(0, *msg, &mut |v| {
            f(v);
            ControlFlow::Continue(())
        });
    }

    // The walk materialises a `Value` only for what it yields: in between, it moves from
    // block to block (a message, a field slot of one, an element of a repeated slot).

    /// Applies steps `step..` to message `m`.
    fn walk_msg<'a, F>(&self, step: usize, m: MessageRef<'a>, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Value<'a>) -> ControlFlow<()>,
    {
        match self.steps.get(step) {
            None => f(Value::Message(m)),
            Some(&Step::Field { number, slot }) => {
                let layout = m.layout();
                let si = match layout.slots().get(slot.index()) {
                    Some(s) if s.number == number => slot,
                    _ => match layout.slot_by_number(number) {
                        Some(si) => si,
                        None => return ControlFlow::Continue(()),
                    },
                };
                self.walk_slot(step + 1, m, si, f)
            }
            // Type checking put a field step first and after every message.
            Some(_) => ControlFlow::Continue(()),
        }
    }

    /// Applies steps `step..` to field slot `si` of message `m`.
    fn walk_slot<'a, F>(&self, step: usize, m: MessageRef<'a>, si: SlotIndex, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Value<'a>) -> ControlFlow<()>,
    {
        let Some(s) = self.steps.get(step) else { return f(m.value(si)) };
        let slot = m.layout().slot(si);
        match (s, slot.repetition) {
            (Step::Field { .. }, Repetition::Singular) if slot.kind.is_message() => {
                let child = match m.block.child(si) {
                    Some(block) => MessageRef::new(block),
                    None => MessageRef::empty(m.layouts(), LayoutIndex::new(slot.child)),
                };
                self.walk_msg(step, child, f)
            }
            (&Step::Index(i), Repetition::Repeated) => {
                let len = m.block.vec_len(si) as i64;
                let i = if i < 0 { len + i } else { i };
                if !(0..len).contains(&i) {
                    return ControlFlow::Continue(());
                }
                self.walk_element(step + 1, m, si, i as usize, f)
            }
            (Step::All, Repetition::Repeated) => {
                for i in 0..m.block.vec_len(si) {
                    self.walk_element(step + 1, m, si, i, f)?;
                }
                ControlFlow::Continue(())
            }
            (Step::Key(k), Repetition::Map) => {
                let map = MapRef { msg: m, slot: si };
                match map.entry_of(&k.as_map_key()) {
                    Some(entry) => match entry.layout().slot_by_number(2) {
                        Some(value) => self.walk_slot(step + 1, entry, value, f),
                        None => ControlFlow::Continue(()),
                    },
                    None => ControlFlow::Continue(()),
                }
            }
            (Step::All, Repetition::Map) => {
                for e in map_entries(&MapRef { msg: m, slot: si }) {
                    self.walk_msg(step + 1, e, f)?;
                }
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Continue(()),
        }
    }

    /// Applies steps `step..` to element `i` of repeated slot `si` of `m`.
    fn walk_element<'a, F>(&self, step: usize, m: MessageRef<'a>, si: SlotIndex, i: usize, f: &mut F) -> ControlFlow<()>
    where
        F: FnMut(Value<'a>) -> ControlFlow<()>,
    {
        if m.layout().slot(si).kind.is_message() {
            let child = MessageRef::new(m.block.vec_child(si, i));
            return self.walk_msg(step, child, f);
        }
        match self.steps.get(step) {
            None => f(ListRef { msg: m, slot: si }.get(i).expect("index in range")),
            Some(_) => ControlFlow::Continue(()),
        }
    }
}

/// A map's entries, one per key (the last on the wire), in wire order.
fn map_entries<'a>(m: &MapRef<'a>) -> impl Iterator<Item = MessageRef<'a>> + 'a {
    let m = *m;
    let winners = if m.entries() <= 1 { (0..m.entries()).collect() } else { m.winners() };
    winners.into_iter().map(move |i| m.entry(i))
}

impl<'a> MessageRef<'a> {
    /// The values at `path` in this message (see [`FieldPath`] for the grammar). Parses
    /// the path each call; parse it once with [`FieldPath::parse`] to evaluate it often.
    pub fn path(&self, path: &str) -> Result<Vec<Value<'a>>, PathError> {
        let layouts = self.layouts();
        let fp = match layouts.index_of(self.descriptor().full_name()) {
            Some(li) => FieldPath::parse_in(layouts, li, path)?,
            None => FieldPath::parse(self.descriptor(), path)?,
        };
        Ok(fp.eval(self))
    }
}
