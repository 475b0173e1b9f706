//! Message layouts: where each field of each message type lives inside a block.

use std::collections::HashMap;

use prost_reflect::{
    DescriptorPool, EnumDescriptor, ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor, OneofDescriptor,
};

use crate::features::{FeatureError, FieldFeatures, PoolFeatures};
use crate::raw::RawStr;

mod builder;

/// "No such index" for the `u32` index fields of [`FieldSlot`].
pub const NO_INDEX: u32 = u32::MAX;

/// Index of a [`MessageLayout`] in its [`Layouts`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LayoutIndex(u32);

impl LayoutIndex {
    /// The layout at position `index`.
    pub const fn new(index: u32) -> LayoutIndex {
        LayoutIndex(index)
    }
    /// Position in the table.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
    /// Position as `u32` (what compiled code carries).
    pub const fn as_u32(self) -> u32 {
        self.0
    }
}

/// Index of a [`FieldSlot`] in its [`MessageLayout`] (slots are sorted by field number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotIndex(u32);

impl SlotIndex {
    /// The slot at position `index`.
    pub const fn new(index: u32) -> SlotIndex {
        SlotIndex(index)
    }
    /// Position in the layout.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A field's type, numbered as `FieldDescriptorProto.Type`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// `double`: 8 bytes, wire type 1.
    Double = 1,
    /// `float`: 4 bytes, wire type 5.
    Float = 2,
    /// `int64`: varint.
    Int64 = 3,
    /// `uint64`: varint.
    Uint64 = 4,
    /// `int32`: varint (negative values take 10 bytes).
    Int32 = 5,
    /// `fixed64`: 8 bytes.
    Fixed64 = 6,
    /// `fixed32`: 4 bytes.
    Fixed32 = 7,
    /// `bool`: varint 0 or 1.
    Bool = 8,
    /// `string`: length-delimited, UTF-8 (checked where the features say `VERIFY`).
    String = 9,
    /// A proto2 group, or a message field whose `message_encoding` is `DELIMITED`:
    /// start-group tag, fields, end-group tag.
    Group = 10,
    /// A message: length-delimited.
    Message = 11,
    /// `bytes`: length-delimited.
    Bytes = 12,
    /// `uint32`: varint.
    Uint32 = 13,
    /// An enum: varint, stored as `i32`.
    Enum = 14,
    /// `sfixed32`: 4 bytes.
    Sfixed32 = 15,
    /// `sfixed64`: 8 bytes.
    Sfixed64 = 16,
    /// `sint32`: zigzag varint.
    Sint32 = 17,
    /// `sint64`: zigzag varint.
    Sint64 = 18,
}

impl FieldKind {
    /// The kind of a prost-reflect field kind (`is_group` tells groups from messages).
    pub fn of(kind: &Kind, is_group: bool) -> FieldKind {
        match kind {
            Kind::Double => FieldKind::Double,
            Kind::Float => FieldKind::Float,
            Kind::Int64 => FieldKind::Int64,
            Kind::Uint64 => FieldKind::Uint64,
            Kind::Int32 => FieldKind::Int32,
            Kind::Fixed64 => FieldKind::Fixed64,
            Kind::Fixed32 => FieldKind::Fixed32,
            Kind::Bool => FieldKind::Bool,
            Kind::String => FieldKind::String,
            Kind::Bytes => FieldKind::Bytes,
            Kind::Uint32 => FieldKind::Uint32,
            Kind::Enum(_) => FieldKind::Enum,
            Kind::Sfixed32 => FieldKind::Sfixed32,
            Kind::Sfixed64 => FieldKind::Sfixed64,
            Kind::Sint32 => FieldKind::Sint32,
            Kind::Sint64 => FieldKind::Sint64,
            Kind::Message(_) if is_group => FieldKind::Group,
            Kind::Message(_) => FieldKind::Message,
        }
    }

    /// The wire type a single value of this kind is written with.
    pub const fn wire_type(self) -> u8 {
        match self {
            FieldKind::Double | FieldKind::Fixed64 | FieldKind::Sfixed64 => 1,
            FieldKind::Float | FieldKind::Fixed32 | FieldKind::Sfixed32 => 5,
            FieldKind::String | FieldKind::Bytes | FieldKind::Message => 2,
            FieldKind::Group => 3,
            _ => 0,
        }
    }

    /// Bytes of one value inline in a block (a pointer for singular messages).
    pub const fn value_size(self) -> u32 {
        match self {
            FieldKind::Bool => 1,
            FieldKind::Float
            | FieldKind::Fixed32
            | FieldKind::Sfixed32
            | FieldKind::Int32
            | FieldKind::Uint32
            | FieldKind::Sint32
            | FieldKind::Enum => 4,
            FieldKind::Double
            | FieldKind::Fixed64
            | FieldKind::Sfixed64
            | FieldKind::Int64
            | FieldKind::Uint64
            | FieldKind::Sint64 => 8,
            FieldKind::String | FieldKind::Bytes => std::mem::size_of::<RawStr>() as u32,
            FieldKind::Message | FieldKind::Group => std::mem::size_of::<usize>() as u32,
        }
    }

    /// Whether repeated fields of this kind may use packed encoding.
    pub const fn is_packable(self) -> bool {
        !matches!(self, FieldKind::String | FieldKind::Bytes | FieldKind::Message | FieldKind::Group)
    }

    /// Whether this is a message or group (a child block).
    pub const fn is_message(self) -> bool {
        matches!(self, FieldKind::Message | FieldKind::Group)
    }

    /// Fixed encoded width of a packable kind (0 for varints).
    pub const fn fixed_width(self) -> u32 {
        match self.wire_type() {
            1 => 8,
            5 => 4,
            _ => 0,
        }
    }
}

/// How many values a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repetition {
    /// One value, inline (or a child pointer).
    Singular,
    /// A [`RawVec`] of values (message values are addresses of child blocks).
    Repeated,
    /// A [`RawVec`] of map-entry blocks, in wire order; lookups take the last key.
    Map,
}

/// Where one field lives in its message's block, and how to decode it. Plain data: the
/// descriptor it came from is kept in the layout's cold table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSlot {
    /// Field number.
    pub number: u32,
    /// Byte offset of the value (or of the `RawVec`, or of the child pointer) in the block.
    pub offset: u32,
    /// Field type.
    pub kind: FieldKind,
    /// Singular, repeated or map.
    pub repetition: Repetition,
    /// Presence bit (index into the presence words), or [`NO_INDEX`]: fields without
    /// explicit presence, messages (a non-null pointer is presence), repeated fields,
    /// oneof members (the case word is presence).
    pub hasbit: u32,
    /// Index of the containing (non-synthetic) oneof in the layout, or [`NO_INDEX`].
    pub oneof: u32,
    /// Layout of the message / group / map-entry type, or [`NO_INDEX`].
    pub child: u32,
    /// Bytes per element of a repeated field (a pointer for messages).
    pub elem_size: u32,
    /// Written packed by an encoder (decoders accept both forms regardless): the
    /// `repeated_field_encoding` feature is `PACKED`.
    pub packed: bool,
    /// An enum whose unknown values go to unknown fields: the enum's `enum_type` feature
    /// is `CLOSED` (proto2 enums, and editions enums that say so).
    pub closed_enum: bool,
    /// A `string` that must be valid UTF-8: its `utf8_validation` feature is `VERIFY`
    /// (proto3 strings, editions strings unless they say `NONE`).
    pub validate_utf8: bool,
    /// An extension field (proto2), rather than a declared field.
    pub is_extension: bool,
}

impl SlotDescriptor {
    /// Field name (the full name, for extensions).
    pub fn name(&self) -> &str {
        match self {
            SlotDescriptor::Field(f) => f.name(),
            SlotDescriptor::Extension(e) => e.full_name(),
        }
    }
    /// Field number.
    pub fn number(&self) -> u32 {
        match self {
            SlotDescriptor::Field(f) => f.number(),
            SlotDescriptor::Extension(e) => e.number(),
        }
    }
    /// Field type.
    pub fn kind(&self) -> Kind {
        match self {
            SlotDescriptor::Field(f) => f.kind(),
            SlotDescriptor::Extension(e) => e.kind(),
        }
    }
    /// JSON name.
    pub fn json_name(&self) -> &str {
        match self {
            SlotDescriptor::Field(f) => f.json_name(),
            SlotDescriptor::Extension(e) => e.json_name(),
        }
    }
    /// Whether the field is repeated and not a map.
    pub fn is_list(&self) -> bool {
        match self {
            SlotDescriptor::Field(f) => f.is_list(),
            SlotDescriptor::Extension(e) => e.is_list(),
        }
    }
    /// Whether the field is a map.
    pub fn is_map(&self) -> bool {
        match self {
            SlotDescriptor::Field(f) => f.is_map(),
            SlotDescriptor::Extension(e) => e.is_map(),
        }
    }
    /// prost-reflect's answer to whether the field distinguishes "absent" from its default
    /// value: wrong for editions fields with implicit presence (the loader hands the
    /// descriptor library every editions file as proto2). Read
    /// [`MessageLayout::slot_features`] instead.
    #[deprecated(note = "reads the file's syntax; use `MessageLayout::slot_features(..).has_presence()`")]
    pub fn supports_presence(&self) -> bool {
        match self {
            SlotDescriptor::Field(f) => f.supports_presence(),
            SlotDescriptor::Extension(e) => e.supports_presence(),
        }
    }
}

impl FieldSlot {
    /// The one-or-two-byte tag this slot's non-packed values are written with.
    pub const fn tag(&self) -> u32 {
        (self.number << 3) | self.kind.wire_type() as u32
    }
}

/// The descriptor a slot was made from.
#[derive(Clone, Debug)]
pub enum SlotDescriptor {
    /// A field declared in the message.
    Field(FieldDescriptor),
    /// An extension of the message.
    Extension(ExtensionDescriptor),
}

/// One message type's block layout: `[presence words][oneof case words][unknown fields +
/// 16-byte slots][8-byte slots][4-byte slots][1-byte slots]`, padded to 8.
#[derive(Clone, Debug)]
pub struct MessageLayout {
    /// `(Layouts::id() << 32) | index`: identifies this layout among every layout of the
    /// process, so a typed access made for it can check a block in one compare.
    id: u64,
    index: LayoutIndex,
    size: u32,
    hasbit_words: u32,
    oneof_case_offset: u32,
    unknown_offset: u32,
    is_map_entry: bool,
    /// Whether some field of the pool (a group, or a delimited message) decodes this type.
    decoded_as_group: bool,
    slots: Vec<FieldSlot>,
    /// `dense[n]` = slot index of field number `n`, `u16::MAX` if none (small numbers).
    dense: Vec<u16>,
    /// Per one-byte tag (`tag < 0x80`): what the interpreter does with it, without
    /// decoding the tag or looking the number up (see [`MessageLayout::one_byte_tag`]).
    tag_table: Box<[u16; 128]>,
    // Cold data.
    descriptor: MessageDescriptor,
    slot_descriptors: Vec<SlotDescriptor>,
    oneofs: Vec<OneofDescriptor>,
    /// Per slot: the sorted, distinct values of a closed enum (empty for other slots).
    closed_enum_values: Vec<Box<[i32]>>,
    /// Per slot: the value a singular scalar field reads as when absent.
    defaults: Vec<Option<prost_reflect::Value>>,
    /// Per slot: the index of its enum type in [`Layouts::enum_type`], or [`NO_INDEX`].
    enum_types: Vec<u32>,
    /// Per slot: the name protobuf's text format prints (the type name for a group-like
    /// delimited field, `[full.name]` for an extension), made once so printers do not allocate.
    text_names: Vec<Box<str>>,
    /// Per slot: the field's resolved features.
    slot_features: Vec<FieldFeatures>,
}

impl MessageLayout {
    /// A number that identifies this layout among all layouts of the process (clones of
    /// one [`Layouts`] share it: their layouts are the same): typed accesses
    /// ([`crate::Access`]) record it and refuse blocks of any other layout.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The layout's index in its [`Layouts`].
    #[inline]
    pub fn index(&self) -> LayoutIndex {
        self.index
    }
    /// Index of the enum type of the slot at `index` in [`Layouts::enum_type`] (enum
    /// fields, repeated or not), if it is an enum field.
    #[inline]
    pub fn slot_enum(&self, index: SlotIndex) -> Option<u32> {
        let e = self.enum_types[index.index()];
        (e != NO_INDEX).then_some(e)
    }
    /// The field name as protobuf's text format prints it: the declared name, the type
    /// name of a group-like delimited field (a proto2 group, or an editions field named as
    /// its type: protobuf's `IsGroupLike`), `[full.name]` for an extension.
    #[inline]
    pub fn text_name(&self, index: SlotIndex) -> &str {
        &self.text_names[index.index()]
    }
    /// Whether some field of the pool decodes this type as a group (`TYPE_GROUP`: a
    /// proto2 group, or a message field with delimited encoding). A type for which this is
    /// false is only ever decoded as a length-delimited message or a root.
    #[inline]
    pub fn decoded_as_group(&self) -> bool {
        self.decoded_as_group
    }
    /// Block size in bytes (a multiple of 8).
    pub fn size(&self) -> u32 {
        self.size
    }
    /// Number of `u32` presence words at the start of the block.
    pub fn hasbit_words(&self) -> u32 {
        self.hasbit_words
    }
    /// Byte offset of the case word of oneof `i` (it holds the active field number, 0 = none).
    pub fn oneof_case_offset(&self, oneof: u32) -> u32 {
        self.oneof_case_offset + 4 * oneof
    }
    /// Byte offset of the unknown-fields [`RawVec`] of [`RawStr`] spans.
    pub fn unknown_offset(&self) -> u32 {
        self.unknown_offset
    }
    /// Whether this is a synthetic map entry (key = field 1, value = field 2).
    pub fn is_map_entry(&self) -> bool {
        self.is_map_entry
    }
    /// All slots, sorted by field number.
    pub fn slots(&self) -> &[FieldSlot] {
        &self.slots
    }
    /// The slot at `index`.
    pub fn slot(&self, index: SlotIndex) -> &FieldSlot {
        &self.slots[index.index()]
    }
    /// The slot of field `number`, if the message declares (or is extended with) it.
    #[inline]
    pub fn slot_by_number(&self, number: u32) -> Option<SlotIndex> {
        if let Some(&i) = self.dense.get(number as usize) {
            return (i != u16::MAX).then_some(SlotIndex(i as u32));
        }
        self.slots.binary_search_by_key(&number, |s| s.number).ok().map(|i| SlotIndex(i as u32))
    }
    /// What one-byte tag `tag` (< 0x80) stands for in this message: `Some((slot, false))`
    /// for a value of the slot in its own wire type, `Some((slot, true))` for a packed run
    /// of a repeated packable slot, `None` for anything else (an unknown field, a wrong wire
    /// type, an end-group tag, field number 0), which takes the general path. The table is
    /// what a tag decode and [`slot_by_number`](Self::slot_by_number) would give.
    #[inline]
    pub fn one_byte_tag(&self, tag: u8) -> Option<(SlotIndex, bool)> {
        let e = *self.tag_table.get(tag as usize)?;
        (e != u16::MAX).then_some((SlotIndex((e & 0x7fff) as u32), e & 0x8000 != 0))
    }
    /// The message type this layout is for.
    pub fn descriptor(&self) -> &MessageDescriptor {
        &self.descriptor
    }
    /// The descriptor of the slot at `index`.
    pub fn slot_descriptor(&self, index: SlotIndex) -> &SlotDescriptor {
        &self.slot_descriptors[index.index()]
    }
    /// Whether `value` is a declared value of the closed enum in slot `index`.
    #[inline]
    pub fn closed_enum_has(&self, index: SlotIndex, value: i32) -> bool {
        match self.closed_enum_range(index) {
            Some((lo, hi)) => lo <= value && value <= hi,
            None => self.closed_enum_values[index.index()].binary_search(&value).is_ok(),
        }
    }
    /// The sorted, distinct declared values of the closed enum in slot `index` (empty
    /// otherwise).
    #[inline]
    pub fn closed_enum_values(&self, index: SlotIndex) -> &[i32] {
        &self.closed_enum_values[index.index()]
    }
    /// The declared values of the closed enum in slot `index` as `(lowest, highest)` when
    /// they are one run of consecutive numbers (most enums), so a value is checked with
    /// two compares; `None` otherwise (gaps, or not a closed enum).
    #[inline]
    pub fn closed_enum_range(&self, index: SlotIndex) -> Option<(i32, i32)> {
        let values = self.closed_enum_values(index);
        let (&lo, &hi) = (values.first()?, values.last()?);
        // Sorted and distinct (the builder's invariant): consecutive iff the span between
        // the first and the last is the count.
        (i64::from(hi) - i64::from(lo) + 1 == values.len() as i64).then_some((lo, hi))
    }
    /// The value an absent singular scalar field reads as (proto2 declared defaults,
    /// else the zero value); `None` for messages and repeated fields.
    pub fn slot_default(&self, index: SlotIndex) -> Option<&prost_reflect::Value> {
        self.defaults[index.index()].as_ref()
    }
    /// The oneofs (non-synthetic), indexed as [`FieldSlot::oneof`].
    pub fn oneofs(&self) -> &[OneofDescriptor] {
        &self.oneofs
    }
    /// The resolved features of the slot at `index` (presence, closedness, UTF-8,
    /// encodings, JSON format): what writers and printers read, never the file's syntax.
    #[inline]
    pub fn slot_features(&self, index: SlotIndex) -> &FieldFeatures {
        &self.slot_features[index.index()]
    }
}

/// A layout could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A message type has more fields than a layout indexes.
    #[error("message type `{0}` has more than 65534 fields and extensions")]
    TooManyFields(String),
    /// The feature tables do not describe the pool.
    #[error(transparent)]
    Features(#[from] FeatureError),
    /// A field of the pool has no entry in the feature tables given.
    #[error("field `{0}` has no resolved features (the feature tables were built for another pool)")]
    NoFeatures(String),
}

/// The layouts of every message type in a descriptor pool, indexed by [`LayoutIndex`].
#[derive(Clone, Debug)]
pub struct Layouts {
    pool: DescriptorPool,
    /// Every element's resolved features (shared by clones).
    features: std::sync::Arc<PoolFeatures>,
    layouts: Vec<MessageLayout>,
    by_name: HashMap<String, LayoutIndex>,
    /// Every enum type of the pool, with its values sorted by number for lookups.
    enums: Vec<EnumType>,
    /// One zeroed block per layout: the default instance an absent message reads as.
    empty_blocks: std::sync::Arc<Vec<Box<[u64]>>>,
    /// Identity of this set of layouts (clones share it: they are the same layouts).
    id: u64,
}

impl Layouts {
    /// A number that identifies these layouts (and their clones) among all layouts made
    /// by this process: compiled code records it and refuses to run over other layouts,
    /// whose blocks have other sizes and offsets.
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The pool these layouts were computed from.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }
    /// The resolved features of every file, message, field, enum and extension of the pool.
    pub fn features(&self) -> &PoolFeatures {
        &self.features
    }
    /// Number of layouts.
    pub fn len(&self) -> usize {
        self.layouts.len()
    }
    /// Whether the pool has no message types.
    pub fn is_empty(&self) -> bool {
        self.layouts.is_empty()
    }
    /// The layout at `index`.
    #[inline]
    pub fn get(&self, index: LayoutIndex) -> &MessageLayout {
        &self.layouts[index.index()]
    }
    /// The zeroed block of layout `index` that [`empty_block`](Self::empty_block) reads:
    /// 8-aligned, of the layout's size, never written.
    pub(crate) fn empty_block_ptr(&self, index: LayoutIndex) -> std::ptr::NonNull<u8> {
        let block = &self.empty_blocks[index.index()];
        std::ptr::NonNull::new(block.as_ptr() as *mut u8).expect("a boxed slice is not null")
    }
    /// Enum type `index` (see [`MessageLayout::slot_enum`]).
    #[inline]
    pub fn enum_type(&self, index: u32) -> &EnumType {
        &self.enums[index as usize]
    }
    /// The layout of the message type with this full name.
    pub fn index_of(&self, full_name: &str) -> Option<LayoutIndex> {
        self.by_name.get(full_name.trim_start_matches('.')).copied()
    }
    /// The message type `name` names, by the one rule every lookup by type name follows
    /// (`Schema`'s decoders, typed handles): its full name (a leading dot allowed), or else
    /// the one type whose full name ends in `.name`: a short name (`Inner`) or a partly
    /// qualified one (`Outer.Inner`). Map entries are found by full name only. `Err`
    /// lists the types a short name matches when it is not exactly one (none, or several).
    pub fn find_type(&self, name: &str) -> Result<LayoutIndex, Vec<LayoutIndex>> {
        let name = name.trim_start_matches('.');
        if let Some(li) = self.index_of(name) {
            return Ok(li);
        }
        let found: Vec<LayoutIndex> = self
            .iter()
            .filter(|(_, l)| {
                let full = l.descriptor().full_name();
                !l.is_map_entry()
                    && full.len() > name.len()
                    && full.ends_with(name)
                    && full.as_bytes()[full.len() - name.len() - 1] == b'.'
            })
            .map(|(li, _)| li)
            .collect();
        match found[..] {
            [li] => Ok(li),
            _ => Err(found),
        }
    }
    /// All layouts in index order.
    pub fn iter(&self) -> impl Iterator<Item = (LayoutIndex, &MessageLayout)> {
        self.layouts.iter().enumerate().map(|(i, l)| (LayoutIndex(i as u32), l))
    }
    /// Every layout reachable from `root` through message, group and map fields (root
    /// first, then breadth-first).
    pub fn reachable(&self, root: LayoutIndex) -> Vec<LayoutIndex> {
        let mut seen = vec![false; self.layouts.len()];
        let mut order = vec![root];
        seen[root.index()] = true;
        let mut i = 0;
        while i < order.len() {
            for slot in &self.layouts[order[i].index()].slots {
                if slot.child != NO_INDEX && !seen[slot.child as usize] {
                    seen[slot.child as usize] = true;
                    order.push(LayoutIndex(slot.child));
                }
            }
            i += 1;
        }
        order
    }
}

/// An enum type with its declared values sorted by number, so that a number's name is a
/// binary search that clones nothing (prost-reflect's lookups hand out descriptors that
/// each hold a reference-counted pool).
#[derive(Clone, Debug)]
pub struct EnumType {
    descriptor: EnumDescriptor,
    numbers: Box<[i32]>,
    names: Box<[Box<str>]>,
}

impl EnumType {
    fn new(descriptor: EnumDescriptor) -> EnumType {
        let mut numbers: Vec<i32> = descriptor.values().map(|v| v.number()).collect();
        numbers.sort_unstable();
        numbers.dedup();
        // The name of a number is the one prost-reflect's `get_value` gives (the first
        // declared, where aliases share a number), so printers say what they said before.
        let names =
            numbers.iter().map(|&n| descriptor.get_value(n).map(|v| v.name().into()).unwrap_or_default()).collect();
        EnumType { descriptor, numbers: numbers.into_boxed_slice(), names }
    }
    /// The enum's descriptor.
    pub fn descriptor(&self) -> &EnumDescriptor {
        &self.descriptor
    }
    /// The full name of the enum type.
    pub fn full_name(&self) -> &str {
        self.descriptor.full_name()
    }
    /// The declared name of `number`, if any.
    #[inline]
    pub fn name_of(&self, number: i32) -> Option<&str> {
        self.numbers.binary_search(&number).ok().map(|i| &*self.names[i])
    }
}

/// Crate invariant 2: every slot inside the block, naturally aligned. A layout bug here
/// would let the decoders write out of bounds, so this is checked in release builds too.
fn check_layout(layout: &MessageLayout) {
    assert!(layout.size.is_multiple_of(8) && layout.size >= 16);
    assert!(layout.unknown_offset.is_multiple_of(8) && layout.unknown_offset + 16 <= layout.size);
    for slot in &layout.slots {
        let size = match slot.repetition {
            Repetition::Singular => slot.kind.value_size(),
            _ => 16,
        };
        let align = size.min(8);
        assert!(slot.offset % align == 0, "misaligned slot in {}", layout.descriptor.full_name());
        assert!(slot.offset + size <= layout.size, "slot outside block");
        assert!(slot.offset >= layout.oneof_case_offset(layout.oneofs.len() as u32));
        assert!(slot.hasbit == NO_INDEX || slot.hasbit < 32 * layout.hasbit_words);
        assert!(slot.oneof == NO_INDEX || (slot.oneof as usize) < layout.oneofs.len());
        assert!(slot.elem_size > 0);
    }
}
