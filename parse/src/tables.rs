//! What the parsers look up per field, precomputed once per message type: its fields by
//! name (JSON and text format each have their own table), each field's [`FieldData`] (kind,
//! presence, packing, ...: read from the layout once, not per value), its enum's values by
//! name, and whether the message is a well-known type with its own JSON form.
//!
//! A message type's tables are built the first time a parse meets it and kept per thread,
//! for the last few [`Layouts`] parsed with (told apart by [`Layouts::id`], which clones
//! share and no other layouts have), so a parse does no hashing through prost-reflect and
//! clones no descriptor per field.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use prost_reflect::{Kind, MessageDescriptor};
use protojit_arena::{LayoutIndex, Layouts, MessageLayout, Repetition, SlotDescriptor, SlotIndex, NO_INDEX};

/// How many [`Layouts`] a thread keeps tables for (the most recently used).
const CACHED_LAYOUTS: usize = 8;

thread_local! {
    static CACHE: RefCell<Vec<(u64, Rc<Tables>)>> = const { RefCell::new(Vec::new()) };
}

/// The tables of every message type of one [`Layouts`], each built when first asked for.
pub(crate) struct Tables {
    messages: Box<[OnceCell<MessageTable>]>,
    enums: Box<[OnceCell<Names>]>,
}

impl Tables {
    /// The tables for `layouts`, from this thread's cache or new (empty until asked).
    pub(crate) fn of(layouts: &Layouts) -> Rc<Tables> {
        let id = layouts.id();
        CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            if let Some(i) = cache.iter().position(|(k, _)| *k == id) {
                let hit = cache.remove(i);
                let tables = Rc::clone(&hit.1);
                cache.push(hit);
                return tables;
            }
            if cache.len() >= CACHED_LAYOUTS {
                cache.remove(0);
            }
            let enum_count = layouts
                .iter()
                .flat_map(|(_, l)| (0..l.slots().len()).filter_map(|i| l.slot_enum(SlotIndex::new(i as u32))))
                .max()
                .map_or(0, |m| m as usize + 1);
            let tables = Rc::new(Tables {
                messages: (0..layouts.len()).map(|_| OnceCell::new()).collect(),
                enums: (0..enum_count).map(|_| OnceCell::new()).collect(),
            });
            cache.push((id, Rc::clone(&tables)));
            tables
        })
    }

    /// The table of message type `index`.
    #[inline]
    pub(crate) fn message(&self, layouts: &Layouts, index: LayoutIndex) -> &MessageTable {
        self.messages[index.index()].get_or_init(|| MessageTable::new(layouts.get(index)))
    }

    /// The values of enum type `index` ([`MessageLayout::slot_enum`]) by name.
    pub(crate) fn enum_names(&self, layouts: &Layouts, index: u32) -> &Names {
        self.enums[index as usize].get_or_init(|| {
            let e = layouts.enum_type(index).descriptor();
            Names::new(e.values().map(|v| (v.name().to_owned(), v.number() as u32)))
        })
    }
}

/// One message type's tables.
pub(crate) struct MessageTable {
    /// Field (slot) by JSON key: the JSON name, else the field name, else `[extension]`.
    json: Names,
    /// Field (slot) by text format name: the field name, else a group-like field's type name.
    text: Names,
    /// Per slot.
    fields: Box<[FieldData]>,
    /// The well-known type with its own JSON form, if the message is one.
    pub(crate) wkt: Option<Wkt>,
}

impl MessageTable {
    fn new(layout: &MessageLayout) -> MessageTable {
        let desc = layout.descriptor();
        let slots = 0..layout.slots().len() as u32;
        let declared = |si: &u32| matches!(layout.slot_descriptor(SlotIndex::new(*si)), SlotDescriptor::Field(_));
        let name = |si: u32| layout.slot_descriptor(SlotIndex::new(si)).name().to_owned();
        let json_name = |si: u32| match layout.slot_descriptor(SlotIndex::new(si)) {
            SlotDescriptor::Field(f) => f.json_name().to_owned(),
            SlotDescriptor::Extension(e) => format!("[{}]", e.full_name()),
        };
        // Earlier entries win: the order is the lookups' order of preference.
        let json = Names::new(
            slots
                .clone()
                .filter(declared)
                .map(|si| (json_name(si), si))
                .chain(slots.clone().filter(declared).map(|si| (name(si), si)))
                .chain(slots.clone().filter(|si| !declared(si)).map(|si| (json_name(si), si))),
        );
        let text =
            Names::new(
                slots.clone().filter(declared).map(|si| (name(si), si)).chain(
                    slots.clone().filter(declared).map(|si| (layout.text_name(SlotIndex::new(si)).to_owned(), si)),
                ),
            );
        let fields = slots.map(|si| FieldData::new(layout, SlotIndex::new(si))).collect();
        MessageTable { json, text, fields, wkt: Wkt::of(desc) }
    }

    /// The slot a JSON object key names.
    #[inline]
    pub(crate) fn json_slot(&self, key: &[u8]) -> Option<SlotIndex> {
        self.json.get(key).map(SlotIndex::new)
    }

    /// The slot a text format field name names.
    #[inline]
    pub(crate) fn text_slot(&self, name: &[u8]) -> Option<SlotIndex> {
        self.text.get(name).map(SlotIndex::new)
    }

    /// The slot's precomputed facts.
    #[inline]
    pub(crate) fn field(&self, slot: SlotIndex) -> &FieldData {
        &self.fields[slot.index()]
    }
}

/// What the parsers need to know of a field or extension, read from its slot once.
#[derive(Clone, Debug)]
pub(crate) struct FieldData {
    pub number: u32,
    pub kind: Kind,
    pub list: bool,
    pub map: bool,
    pub packed: bool,
    pub presence: bool,
    pub closed_enum: bool,
    pub validate_utf8: bool,
    pub group: bool,
    pub child: Option<LayoutIndex>,
    pub oneof: u32,
    /// The enum type's index ([`MessageLayout::slot_enum`]), or `NO_INDEX`.
    pub enum_index: u32,
}

impl FieldData {
    fn new(layout: &MessageLayout, slot: SlotIndex) -> FieldData {
        let s = layout.slot(slot);
        let features = layout.slot_features(slot);
        FieldData {
            number: s.number,
            kind: layout.slot_descriptor(slot).kind(),
            list: s.repetition == Repetition::Repeated,
            map: s.repetition == Repetition::Map,
            packed: s.packed,
            presence: features.has_presence(),
            closed_enum: s.closed_enum,
            validate_utf8: features.validate_utf8,
            group: features.delimited,
            child: (s.child != NO_INDEX).then(|| LayoutIndex::new(s.child)),
            oneof: s.oneof,
            enum_index: layout.slot_enum(slot).unwrap_or(NO_INDEX),
        }
    }
}

/// Names to `u32`s: an open-addressed hash table (at most half full, linear probing). Each
/// entry holds the name's length and its first and last eight bytes (which are the whole
/// name up to 16 bytes, so most names are compared in two words); longer names are compared
/// in full against one buffer.
pub(crate) struct Names {
    entries: Box<[Entry]>,
    text: Box<[u8]>,
}

#[derive(Clone, Copy)]
struct Entry {
    head: u64,
    tail: u64,
    /// The name's length; `FREE` for a free entry.
    len: u32,
    value: u32,
    /// Where the name starts in `text`.
    start: u32,
}

const FREE: u32 = u32::MAX;

/// Two words that, with the length, tell names of up to 16 bytes apart: the first and last
/// eight bytes; under eight, overlapping loads that cover every byte (the first and last
/// four; the first, middle and last byte), without a loop per byte.
#[inline]
fn words(name: &[u8]) -> (u64, u64) {
    let n = name.len();
    let word = |at: usize| {
        let b = &name[at..at + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    };
    let half = |at: usize| {
        let b = &name[at..at + 4];
        u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    match n {
        8.. => (word(0), word(n - 8)),
        4..=7 => {
            let head = half(0) | half(n - 4) << 32;
            (head, head)
        }
        1..=3 => {
            let head = u64::from(name[0]) | u64::from(name[n / 2]) << 8 | u64::from(name[n - 1]) << 16;
            (head, head)
        }
        0 => (0, 0),
    }
}

/// A hash of a name's length and words.
#[inline]
fn hash(len: usize, head: u64, tail: u64) -> usize {
    let h = (head ^ tail.rotate_left(29) ^ (len as u64) << 56).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 32) as usize
}

impl Names {
    /// The table of `names`; of a name given twice, the first value is kept.
    fn new(names: impl Iterator<Item = (String, u32)>) -> Names {
        let names: Vec<(String, u32)> = names.collect();
        let capacity = (names.len() * 2).next_power_of_two().max(4);
        let mut entries = vec![Entry { head: 0, tail: 0, len: FREE, value: 0, start: 0 }; capacity];
        let mut text = Vec::new();
        for (name, value) in names {
            let bytes = name.as_bytes();
            let (head, tail) = words(bytes);
            let mut i = hash(bytes.len(), head, tail) & (capacity - 1);
            let mut duplicate = false;
            while entries[i].len != FREE {
                let e = entries[i];
                if e.len as usize == bytes.len() && &text[e.start as usize..e.start as usize + bytes.len()] == bytes {
                    duplicate = true;
                    break;
                }
                i = (i + 1) & (capacity - 1);
            }
            if !duplicate {
                entries[i] = Entry { head, tail, len: bytes.len() as u32, value, start: text.len() as u32 };
                text.extend_from_slice(bytes);
            }
        }
        Names { entries: entries.into_boxed_slice(), text: text.into_boxed_slice() }
    }

    /// The value of `name`.
    #[inline]
    pub(crate) fn get(&self, name: &[u8]) -> Option<u32> {
        let (head, tail) = words(name);
        let mask = self.entries.len() - 1;
        let mut i = hash(name.len(), head, tail) & mask;
        loop {
            let e = &self.entries[i];
            if e.len == FREE {
                return None;
            }
            if e.head == head
                && e.tail == tail
                && e.len as usize == name.len()
                && (name.len() <= 16 || &self.text[e.start as usize..e.start as usize + name.len()] == name)
            {
                return Some(e.value);
            }
            i = (i + 1) & mask;
        }
    }
}

/// A well-known type with its own JSON form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wkt {
    Any,
    Timestamp,
    Duration,
    FieldMask,
    Struct,
    Value,
    ListValue,
    /// `google.protobuf.*Value`: the bare scalar of field 1.
    Wrapper,
}

impl Wkt {
    pub(crate) fn of(desc: &MessageDescriptor) -> Option<Wkt> {
        let name = desc.full_name().strip_prefix("google.protobuf.")?;
        Some(match name {
            "Any" => Wkt::Any,
            "Timestamp" => Wkt::Timestamp,
            "Duration" => Wkt::Duration,
            "FieldMask" => Wkt::FieldMask,
            "Struct" => Wkt::Struct,
            "Value" => Wkt::Value,
            "ListValue" => Wkt::ListValue,
            "DoubleValue" | "FloatValue" | "Int64Value" | "UInt64Value" | "Int32Value" | "UInt32Value"
            | "BoolValue" | "StringValue" | "BytesValue" => Wkt::Wrapper,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn names_find_what_they_hold_and_nothing_else() {
        let names: Vec<String> = (0..300).map(|i| format!("field_{i}_{}", "x".repeat(i % 17))).collect();
        let table = Names::new(names.iter().cloned().zip(0..).chain([("field_0_".to_owned(), 999)]));
        for (i, n) in names.iter().enumerate() {
            assert_eq!(table.get(n.as_bytes()), Some(i as u32));
        }
        for miss in ["", "field", "field_0", "field_0_x", "[field_1_x]"] {
            assert_eq!(table.get(miss.as_bytes()), None, "{miss}");
        }
        assert_eq!(Names::new(std::iter::empty()).get(b"a"), None);
    }

    /// Short names (read by overlapping loads) are told apart: every name of up to seven
    /// letters over a three-letter alphabet up to length 5 and a sample past it, every other
    /// one in the table.
    #[test]
    fn short_names_are_told_apart() {
        let mut all = vec![String::new()];
        let mut level = vec![String::new()];
        for len in 1..=7 {
            level = level.iter().flat_map(|p| ["a", "b", "c"].map(|c| format!("{p}{c}"))).collect();
            let step = if len <= 5 { 1 } else { 7 };
            all.extend(level.iter().step_by(step).cloned());
        }
        let held = all.iter().enumerate().filter(|(i, _)| i % 2 == 0);
        let table = Names::new(held.map(|(i, n)| (n.clone(), i as u32)));
        for (i, name) in all.iter().enumerate() {
            let want = (i % 2 == 0).then_some(i as u32);
            assert_eq!(table.get(name.as_bytes()), want, "{name:?}");
        }
    }
}
