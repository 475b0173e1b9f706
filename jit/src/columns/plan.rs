//! Column plans: which fields of which messages an [`Appender`](super::Appender) reads, and the check that lays a plan's columns out in row spaces.

use protojit_arena::{FieldKind, LayoutIndex, Layouts, Repetition, SlotIndex, NO_INDEX};

use crate::compile::JitError;

/// Which fields of which messages an [`Appender`](super::Appender) reads. `messages[0]` is the record's
/// type; a [`PlanCell::Message`] field names a later entry (so a plan never recurses).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ColumnPlan {
    /// The messages, the root first.
    pub messages: Vec<PlanMessage>,
    /// The depth limit the records are read under (the decoder's
    /// [`max_depth`](protojit_arena::DecodeOptions::max_depth)): a group the code skips
    /// (unknown, or a [`PlanCell::Spans`] group) counts toward it as in the tree, so with 0
    /// every such group declines its record (above
    /// [`MAX_DEPTH_LIMIT`](protojit_arena::MAX_DEPTH_LIMIT), as that).
    pub max_depth: u32,
}

impl ColumnPlan {
    /// Whether [`Appender::compile`](super::Appender::compile) reads every field of the plan (else why not), without
    /// compiling it: what a caller decides a path by before it starts a compiler.
    pub fn check(&self, layouts: &Layouts) -> Result<(), PlanError> {
        check_plan(layouts, self).map(|_| ())
    }
}

/// One message of a [`ColumnPlan`]: its layout and the fields read, each a column.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanMessage {
    /// The message type.
    pub layout: LayoutIndex,
    /// The fields read.
    pub fields: Vec<PlanField>,
}

/// A field of a [`PlanMessage`]: its slot and what its column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanField {
    /// The field's slot in the message's layout.
    pub slot: SlotIndex,
    /// What the column holds.
    pub cell: PlanCell,
}

/// What a column's cells hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlanCell {
    /// A singular number, bool or enum: the value's bits (zigzag decoded; a varint as read,
    /// so an `int32` is its low 32 bits, a `bool` is set when not 0).
    Number,
    /// A singular string or bytes field: `offset | len << 32` in the record. A `string`
    /// (every occurrence, also one a later one replaces) that is not UTF-8 declines the
    /// record.
    Bytes,
    /// A singular string or bytes field outside a oneof, written straight into its column:
    /// the code copies its bytes into the column's text ([`ChunkColumns::text`](super::ChunkColumns::text)), rows
    /// in order, and its cell is `start | len << 32` there. A value met again in the row
    /// replaces the row's bytes (the last is the row's, as in the tree); a `string` that is
    /// not UTF-8 declines the record, as for [`PlanCell::Bytes`].
    Text,
    /// A singular message: its presence; its fields are those of `messages[index]`.
    Message(usize),
    /// A repeated number, bool or enum: the items, as [`PlanCell::Number`]'s cells.
    List,
    /// A repeated number of 32 bits or an enum (`int32`, `uint32`, `sint32`, `fixed32`,
    /// `sfixed32`, `float`, `enum`): the items as [`PlanCell::List`]'s, 4 bytes each (a
    /// cell's low 32 bits: all a 32-bit column takes), so that a long packed run writes
    /// and is read back at half the bytes.
    List32,
    /// A repeated string or bytes field: the items, as [`PlanCell::Bytes`]'s cells.
    BytesList,
    /// A repeated message, or a map (its entries, messages of a key and a value, in wire
    /// order, keys repeated as the wire repeats them): its elements are the rows of
    /// `messages[index]`'s columns, a row space of their own (growing as elements come);
    /// the column's cell at a row is where that row's elements end.
    Messages(usize),
    /// A message, group, map or `string` field the caller reads another way (a field
    /// without a column, which it must still check as the tree would): where each
    /// occurrence lies in the record, as [`PlanCell::BytesList`]'s items (a singular field
    /// met twice has two); a `string`'s checked for UTF-8 by the code, a message's unread;
    /// a group's from after its start tag to after its end tag, found by walking its tags
    /// (nested groups counted toward [`ColumnPlan::max_depth`]), its fields unread. A
    /// oneof member clears the others as any member does.
    Spans,
}

/// Why a plan cannot be compiled.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    /// The plan asks for a shape the compiled appenders do not read (the caller converts
    /// another way).
    #[error("{0}")]
    Unsupported(String),
    /// Code generation failed.
    #[error(transparent)]
    Jit(#[from] JitError),
}

/// The most messages a plan compiled has: each is a function of its own (a type appears
/// once per path to it, so recursive types multiply), and compiling takes time and code
/// in proportion. (A plan's depth, the code's stack depth, is at most this too.)
const MAX_PLAN_MESSAGES: usize = 256;

impl PlanCell {
    /// The cell of a repeated number, bool or enum field of `kind`:
    /// [`PlanCell::List32`] where its items fit, else [`PlanCell::List`].
    pub fn list_of(kind: FieldKind) -> PlanCell {
        if is_32_bits(kind) {
            PlanCell::List32
        } else {
            PlanCell::List
        }
    }
}

/// Whether a field of `kind` is a number of 32 bits or an enum (its items fit
/// [`PlanCell::List32`]).
fn is_32_bits(kind: FieldKind) -> bool {
    matches!(
        kind,
        FieldKind::Int32
            | FieldKind::Uint32
            | FieldKind::Sint32
            | FieldKind::Enum
            | FieldKind::Fixed32
            | FieldKind::Sfixed32
            | FieldKind::Float
    )
}

/// What a column holds besides its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ColKind {
    /// Cells only.
    Cells,
    /// Items (a list of numbers, strings or bytes); its cells are its rows' item ends.
    Items,
    /// Items of 4 bytes ([`PlanCell::List32`]); its cells as [`ColKind::Items`]'.
    Items32,
    /// Bytes ([`PlanCell::Text`]): its rows' values, one after another; its cells where
    /// each row's lie.
    Text,
    /// A list of messages: its cells are its rows' ends in the elements' space.
    Rows,
}

/// A checked plan's columns and row spaces.
pub(super) struct Shape {
    pub kinds: Vec<ColKind>,
    pub space_of_col: Vec<u32>,
    pub space_of_message: Vec<u32>,
    /// Per message: the field number of the group it is read as (it ends at that group's
    /// end tag), or `None` for a length-delimited message.
    pub group_of_message: Vec<Option<u32>>,
    /// Per message: its nesting depth, as the tree counts it (0: the record).
    pub depth_of_message: Vec<u32>,
    /// Per message: its first column (columns are in plan order).
    pub first_col: Vec<usize>,
    pub spaces: usize,
}

/// Checks that every field of the plan is of a shape the code reads, and lays its
/// columns out in row spaces.
pub(super) fn check_plan(layouts: &Layouts, plan: &ColumnPlan) -> Result<Shape, PlanError> {
    let no = |s: String| Err(PlanError::Unsupported(s));
    if plan.messages.is_empty() {
        return no("an empty plan".into());
    }
    if plan.messages.len() > MAX_PLAN_MESSAGES {
        return no(format!("{} messages (at most {MAX_PLAN_MESSAGES})", plan.messages.len()));
    }
    let mut kinds = Vec::new();
    let mut space_of_col = Vec::new();
    // Every message but the root is named by exactly one field of an earlier one.
    let mut space_of_message: Vec<Option<u32>> = vec![None; plan.messages.len()];
    space_of_message[0] = Some(0);
    let mut group_of_message: Vec<Option<u32>> = vec![None; plan.messages.len()];
    let mut depth_of_message = vec![0u32; plan.messages.len()];
    let mut spaces = 1;
    for (i, m) in plan.messages.iter().enumerate() {
        if m.layout.index() >= layouts.len() {
            return no(format!("no layout #{}", m.layout.index()));
        }
        let Some(space) = space_of_message[i] else {
            return no(format!("message #{i} of the plan is under no field"));
        };
        let layout = layouts.get(m.layout);
        let name = layout.descriptor().full_name();
        for f in &m.fields {
            if f.slot.index() >= layout.slots().len() {
                return no(format!("{name} has no slot #{}", f.slot.index()));
            }
            let slot = layout.slot(f.slot);
            let field = format!("{name}.{}", layout.slot_descriptor(f.slot).name());
            if slot.oneof != NO_INDEX {
                // Setting a member clears the others from the row; one the plan does not
                // read is skipped after that, so it must be a value the tree would take
                // without a check the skip does not make (not a message; not a closed
                // enum, whose undeclared values are unknown fields and clear nothing).
                let unread = layout.slots().iter().enumerate().find(|(si, s)| {
                    s.oneof == slot.oneof
                        && !m.fields.iter().any(|g| g.slot.index() == *si)
                        && (s.kind.is_message() || (s.kind == FieldKind::Enum && s.closed_enum))
                });
                if let Some((si, _)) = unread {
                    let other = layout.slot_descriptor(SlotIndex::new(si as u32)).name().to_owned();
                    return no(format!("{field} is a member of a oneof whose member {other} is not read"));
                }
            }
            if slot.kind == FieldKind::Enum && slot.closed_enum && layout.closed_enum_values(f.slot).len() > 1024 {
                return no(format!("{field}: a closed enum of more than 1024 values"));
            }
            let number =
                !matches!(slot.kind, FieldKind::String | FieldKind::Bytes | FieldKind::Message | FieldKind::Group);
            let child = |j: usize| j > i && j < plan.messages.len() && plan.messages[j].layout.as_u32() == slot.child;
            let ok = match f.cell {
                PlanCell::Number => slot.repetition == Repetition::Singular && number,
                PlanCell::Bytes => {
                    slot.repetition == Repetition::Singular && matches!(slot.kind, FieldKind::String | FieldKind::Bytes)
                }
                // Outside oneofs: a member cleared from the row would leave its bytes in
                // the column's text.
                PlanCell::Text => {
                    slot.repetition == Repetition::Singular
                        && matches!(slot.kind, FieldKind::String | FieldKind::Bytes)
                        && slot.oneof == NO_INDEX
                }
                PlanCell::List => slot.repetition == Repetition::Repeated && number,
                PlanCell::List32 => slot.repetition == Repetition::Repeated && is_32_bits(slot.kind),
                PlanCell::BytesList => {
                    slot.repetition == Repetition::Repeated && matches!(slot.kind, FieldKind::String | FieldKind::Bytes)
                }
                PlanCell::Message(j) => slot.repetition == Repetition::Singular && slot.kind.is_message() && child(j),
                PlanCell::Messages(j) => {
                    (slot.repetition == Repetition::Repeated && slot.kind.is_message()
                        || slot.repetition == Repetition::Map && slot.kind == FieldKind::Message)
                        && child(j)
                }
                PlanCell::Spans => matches!(slot.kind, FieldKind::Message | FieldKind::Group | FieldKind::String),
            };
            if !ok {
                return no(format!("{field} cannot be read as {:?}", f.cell));
            }
            if let PlanCell::Message(j) | PlanCell::Messages(j) = f.cell {
                if space_of_message[j].is_some() {
                    return no(format!("message #{j} of the plan is under two fields"));
                }
                if slot.kind == FieldKind::Group {
                    group_of_message[j] = Some(slot.number);
                }
                depth_of_message[j] = depth_of_message[i] + 1;
                space_of_message[j] = Some(match f.cell {
                    PlanCell::Messages(_) => {
                        spaces += 1;
                        spaces as u32 - 1
                    }
                    _ => space,
                });
            }
            kinds.push(match f.cell {
                PlanCell::List | PlanCell::BytesList | PlanCell::Spans => ColKind::Items,
                PlanCell::List32 => ColKind::Items32,
                PlanCell::Text => ColKind::Text,
                PlanCell::Messages(_) => ColKind::Rows,
                _ => ColKind::Cells,
            });
            space_of_col.push(space);
        }
    }
    let space_of_message = space_of_message.into_iter().map(|s| s.unwrap_or(0)).collect();
    let first_col = (plan.messages.iter().scan(0, |n, m| {
        *n += m.fields.len();
        Some(*n - m.fields.len())
    }))
    .collect();
    Ok(Shape { kinds, space_of_col, space_of_message, group_of_message, depth_of_message, first_col, spaces })
}
