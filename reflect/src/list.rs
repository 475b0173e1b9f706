//! `ListRef` and `MapRef`: views of repeated and map fields.

use std::collections::HashMap;
use std::fmt;

use protojit_arena::SlotIndex;

use crate::{MapKey, MessageRef, Value};

/// A repeated field of a decoded message.
#[derive(Clone, Copy)]
pub struct ListRef<'a> {
    pub(crate) msg: MessageRef<'a>,
    pub(crate) slot: SlotIndex,
}

impl fmt::Debug for ListRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> ListRef<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.msg.block.vec_len(self.slot)
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i`, if in range.
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        if i >= self.len() {
            return None;
        }
        let slot = self.msg.layout().slot(self.slot);
        if slot.kind.is_message() {
            let block = self.msg.block.vec_child(self.slot, i);
            return Some(Value::Message(MessageRef { block, ..self.msg }));
        }
        Some(self.msg.scalar(self.slot, slot.kind, |r| r.vec_inline(self.slot, i)))
    }

    /// The elements in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Value<'a>> + 'a {
        let this = *self;
        (0..self.len()).map(move |i| this.get(i).expect("index in range"))
    }
}

/// A map field of a decoded message. Entries are kept in wire order; where a key occurs
/// more than once the last entry wins, as protobuf specifies.
#[derive(Clone, Copy)]
pub struct MapRef<'a> {
    pub(crate) msg: MessageRef<'a>,
    pub(crate) slot: SlotIndex,
}

impl fmt::Debug for MapRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> MapRef<'a> {
    pub(crate) fn entries(&self) -> usize {
        self.msg.block.vec_len(self.slot)
    }

    pub(crate) fn entry(&self, i: usize) -> MessageRef<'a> {
        let block = self.msg.block.vec_child(self.slot, i);
        MessageRef { block, ..self.msg }
    }

    fn key_of(entry: &MessageRef<'a>) -> MapKey<'a> {
        let v = entry.get_by_number(1).expect("map entries have a key field");
        MapKey::from_value(&v).expect("map keys are scalars")
    }

    fn value_of(entry: &MessageRef<'a>) -> Value<'a> {
        entry.get_by_number(2).expect("map entries have a value field")
    }

    /// Index of the winning entry per key, in wire order of the winners.
    pub(crate) fn winners(&self) -> Vec<usize> {
        let n = self.entries();
        let mut last: HashMap<MapKey<'a>, usize> = HashMap::with_capacity(n);
        for i in 0..n {
            last.insert(Self::key_of(&self.entry(i)), i);
        }
        let mut idx: Vec<usize> = last.into_values().collect();
        idx.sort_unstable();
        idx
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        if self.entries() <= 1 {
            return self.entries();
        }
        self.winners().len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries() == 0
    }

    /// The value for `key` (the last entry with that key), if any.
    pub fn get(&self, key: &MapKey<'_>) -> Option<Value<'a>> {
        self.entry_of(key).map(|e| Self::value_of(&e))
    }

    /// The entry (a message with fields `key` and `value`) that holds `key`: the last one.
    pub(crate) fn entry_of(&self, key: &MapKey<'_>) -> Option<MessageRef<'a>> {
        (0..self.entries()).rev().map(|i| self.entry(i)).find(|e| Self::key_of(e) == *key)
    }

    /// The entries, one per distinct key (the last one on the wire), in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (MapKey<'a>, Value<'a>)> + 'a {
        let this = *self;
        self.winners().into_iter().map(move |i| {
            let e = this.entry(i);
            (Self::key_of(&e), Self::value_of(&e))
        })
    }
}
