//! `ListRef` and `MapRef`: views of repeated and map fields.

use std::collections::HashMap;
use std::fmt;

use protojit_arena::{FieldKind, SlotIndex, StrIter};

use crate::handle::{MessageList, Number};
use crate::value::{EnumValue, MapKey, Value};
use crate::views::{ListRef, MapRef, MessageRef};

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
            return Some(Value::Message(MessageRef::new(block)));
        }
        Some(self.msg.scalar(self.slot, slot.kind, |r| r.vec_inline(self.slot, i)))
    }

    /// The elements in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Value<'a>> + 'a {
        let this = *self;
        (0..self.len()).map(move |i| this.get(i).expect("index in range"))
    }

    /// The element kind.
    pub fn kind(&self) -> FieldKind {
        self.msg.layout().slot(self.slot).kind
    }

    /// The elements as a slice of `T`, if they are numbers `T` reads (`i64` reads
    /// `int64`/`sint64`/`sfixed64`, `f32` reads `float`, ...; enums: see
    /// [`enum_numbers`](Self::enum_numbers)). The arena stores them contiguously, so this is
    /// one load.
    #[inline]
    pub fn as_slice<T: Number>(&self) -> Option<&'a [T]> {
        T::KINDS.contains(&self.kind()).then(|| self.msg.block.vec_slice::<T>(self.slot))
    }

    /// An enum list's numbers as a slice, with one value carrying the enum type (for
    /// names: `EnumValue::new(n, first.enum_type())`); `None` if this is not an enum list.
    pub fn enum_numbers(&self) -> Option<(&'a [i32], EnumValue<'a>)> {
        if self.kind() != FieldKind::Enum {
            return None;
        }
        let ty = self.msg.enum_type(self.slot);
        Some((self.msg.block.vec_slice::<i32>(self.slot), EnumValue::new(0, ty)))
    }

    /// A `string` or `bytes` list's elements as bytes (no [`Value`] per element).
    pub fn bytes_iter(&self) -> Option<StrIter<'a>> {
        matches!(self.kind(), FieldKind::String | FieldKind::Bytes).then(|| self.msg.block.vec_strs(self.slot))
    }

    /// A message list's elements (no [`Value`] per element).
    pub fn messages(&self) -> Option<MessageList<'a>> {
        self.kind().is_message().then(|| MessageList { inner: self.msg.block.vec_children(self.slot), msg: self.msg })
    }
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
        MessageRef::new(block)
    }

    /// Every entry on the wire, duplicates included, in wire order (each a message with
    /// fields `key` and `value`).
    pub fn entries_on_wire(&self) -> MessageList<'a> {
        MessageList { inner: self.msg.block.vec_children(self.slot), msg: self.msg }
    }

    fn key_of(entry: &MessageRef<'a>) -> MapKey<'a> {
        let v = entry.get_by_number(1).expect("map entries have a key field");
        MapKey::from_value(&v).expect("map keys are scalars")
    }

    fn value_of(entry: &MessageRef<'a>) -> Value<'a> {
        entry.get_by_number(2).expect("map entries have a value field")
    }

    /// The value of an entry whose value field is slot 1 (map entries have exactly the key
    /// field 1 and the value field 2, sorted by number).
    #[inline]
    fn value_at(entry: &MessageRef<'a>) -> Value<'a> {
        entry.value(SlotIndex::new(1))
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

    /// Number of distinct keys. Allocates nothing for up to 16 entries; above that it
    /// builds a set of keys: build a [`MapIndex`] once to ask often.
    pub fn len(&self) -> usize {
        let n = self.entries();
        if n <= 1 {
            return n;
        }
        if n <= 16 {
            let keys = self.entries_on_wire().map(|e| Self::key_of(&e));
            let mut distinct = 0;
            for (i, k) in keys.enumerate() {
                if !(i + 1..n).any(|j| Self::key_of(&self.entry(j)) == k) {
                    distinct += 1;
                }
            }
            return distinct;
        }
        self.winners().len()
    }

    /// An index of this map's keys, built once (O(entries)), for O(1) expected lookups
    /// and allocation-free `len` and iteration. The tree is not changed: the index is the
    /// caller's, so a tree stays shareable across threads.
    pub fn index(&self) -> MapIndex<'a> {
        MapIndex::new(*self)
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries() == 0
    }

    /// The value for `key` (the last entry with that key), if any: a scan from the last
    /// entry, O(entries); for many lookups build a [`MapIndex`] with [`index`](Self::index).
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

/// An index of one map's keys: O(1) expected [`get`](Self::get), and [`len`](Self::len) and
/// [`iter`](Self::iter) that allocate nothing. Made by [`MapRef::index`]; it borrows the
/// tree, and the tree is left as it was (nothing is cached inside it).
///
/// Keys are hashed with the standard library's randomly keyed SipHash: map keys come from
/// the input, and a fixed hash would let an input make every lookup O(n).
#[derive(Clone)]
pub struct MapIndex<'a> {
    map: MapRef<'a>,
    table: HashMap<MapKey<'a>, u32>,
    /// The winning entry of each key, in wire order.
    order: Vec<u32>,
}

impl fmt::Debug for MapIndex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> MapIndex<'a> {
    fn new(map: MapRef<'a>) -> MapIndex<'a> {
        let n = map.entries();
        let mut table: HashMap<MapKey<'a>, u32> = HashMap::with_capacity(n);
        for (i, e) in map.entries_on_wire().enumerate() {
            // Last key wins: a later entry replaces an earlier one.
            table.insert(MapRef::key_of(&e), i as u32);
        }
        let mut order: Vec<u32> = table.values().copied().collect();
        order.sort_unstable();
        MapIndex { map, table, order }
    }

    /// The map indexed.
    pub fn map(&self) -> MapRef<'a> {
        self.map
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The value for `key` (the last entry with that key on the wire), if any.
    #[inline]
    pub fn get(&self, key: &MapKey<'_>) -> Option<Value<'a>> {
        self.get_entry(key).map(|e| MapRef::value_at(&e))
    }

    /// Whether the map has `key`.
    #[inline]
    pub fn contains_key(&self, key: &MapKey<'_>) -> bool {
        self.lookup(key).is_some()
    }

    /// The entry (a message with fields `key` and `value`) holding `key`.
    #[inline]
    pub fn get_entry(&self, key: &MapKey<'_>) -> Option<MessageRef<'a>> {
        self.lookup(key).map(|i| self.map.entry(i as usize))
    }

    #[inline]
    fn lookup(&self, key: &MapKey<'_>) -> Option<u32> {
        // SAFETY-free lifetime shortening: `MapKey<'a>` keys compare with a `MapKey` of
        // any lifetime by value; the table's key type is covariant, so a shorter borrow of
        // the table accepts the caller's key.
        let table: &HashMap<MapKey<'_>, u32> = &self.table;
        table.get(key).copied()
    }

    /// The entries, one per distinct key (the last one on the wire), in wire order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (MapKey<'a>, Value<'a>)> + '_ {
        self.order.iter().map(move |&i| {
            let e = self.map.entry(i as usize);
            (MapRef::key_of(&e), MapRef::value_at(&e))
        })
    }

    /// The winning entries (messages with fields `key` and `value`), in wire order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = MessageRef<'a>> + '_ {
        self.order.iter().map(move |&i| self.map.entry(i as usize))
    }
}
