//! Re-encoding a decoded tree to canonical protobuf binary, in two passes (sizes, then bytes).
//!
//! The size pass walks the tree once and records, in visiting order, the encoded length of
//! every nested message, group, map entry and packed run; the write pass walks the tree in
//! the same order and consumes those lengths, so every length prefix is written once, in
//! place, and no byte is ever copied twice.

use protojit_arena::wire::{
    varint_len, write_varint, zigzag_encode32, zigzag_encode64, EGROUP, FIXED32, FIXED64, LEN, SGROUP,
};
use protojit_arena::{FieldKind, Repetition, SlotIndex};

use crate::{MapRef, MessageRef, Value};

impl MessageRef<'_> {
    /// Appends the message to `out` in canonical protobuf binary: known fields and
    /// extensions in field-number order (repeated scalars packed where the field is packed:
    /// as the field's `repeated_field_encoding` feature says: proto3 and editions by default,
    /// proto2 with `[packed = true]`), map entries once per key (the last
    /// one on the wire, as protobuf reads maps; each entry with its key and value), then the
    /// unknown fields verbatim in wire order. Decoding the result gives back an equal tree.
    ///
    /// Nested lengths are computed in a first pass over the tree, so the bytes are written
    /// exactly once.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut sizes = Vec::new();
        let len = size_message(self, &mut sizes);
        out.reserve(len);
        let start = out.len();
        let mut w = Writer { out, sizes: &sizes, next: 0 };
        w.message(self);
        debug_assert_eq!(w.next, sizes.len());
        debug_assert_eq!(out.len() - start, len);
    }

    /// The message encoded by [`encode`](Self::encode), as a new vector.
    pub fn encode_to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// The number of bytes [`encode`](Self::encode) writes (one size pass over the tree).
    pub fn encoded_len(&self) -> usize {
        size_message(self, &mut Vec::new())
    }
}

fn tag_len(number: u32) -> usize {
    varint_len(u64::from(number) << 3)
}

/// A scalar as it goes on the wire: a varint, 4 or 8 little-endian bytes, or bytes.
#[derive(Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed32(u32),
    Fixed64(u64),
    Bytes(&'a [u8]),
}

impl Wire<'_> {
    fn len(&self) -> usize {
        match self {
            Wire::Varint(v) => varint_len(*v),
            Wire::Fixed32(_) => 4,
            Wire::Fixed64(_) => 8,
            Wire::Bytes(b) => varint_len(b.len() as u64) + b.len(),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Wire::Varint(v) => write_varint(out, v),
            Wire::Fixed32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Wire::Fixed64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Wire::Bytes(b) => {
                write_varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
        }
    }
}

/// Singular scalar `si` of `msg` as stored (callers check presence first).
fn singular<'a>(msg: &MessageRef<'a>, si: SlotIndex, kind: FieldKind) -> Wire<'a> {
    let b = msg.block;
    match kind {
        FieldKind::Bool => Wire::Varint(u64::from(b.get::<bool>(si))),
        FieldKind::Int32 | FieldKind::Enum => Wire::Varint(b.get::<i32>(si) as i64 as u64),
        FieldKind::Sint32 => Wire::Varint(u64::from(zigzag_encode32(b.get::<i32>(si)))),
        FieldKind::Uint32 => Wire::Varint(u64::from(b.get::<u32>(si))),
        FieldKind::Int64 | FieldKind::Uint64 => Wire::Varint(b.get::<u64>(si)),
        FieldKind::Sint64 => Wire::Varint(zigzag_encode64(b.get::<i64>(si))),
        FieldKind::Fixed32 | FieldKind::Sfixed32 | FieldKind::Float => Wire::Fixed32(b.get::<u32>(si)),
        FieldKind::Fixed64 | FieldKind::Sfixed64 | FieldKind::Double => Wire::Fixed64(b.get::<u64>(si)),
        FieldKind::String | FieldKind::Bytes => Wire::Bytes(b.get_bytes(si)),
        FieldKind::Message | FieldKind::Group => unreachable!("messages are not scalars"),
    }
}

/// Calls `f` with every element of repeated scalar `si`, read as a slice (the kind
/// matched once, not per element).
#[inline]
fn for_each_element<'a>(msg: &MessageRef<'a>, si: SlotIndex, kind: FieldKind, mut f: impl FnMut(Wire<'a>)) {
    let b = msg.block;
    match kind {
        FieldKind::Bool => b.vec_slice::<bool>(si).iter().for_each(|&v| f(Wire::Varint(u64::from(v)))),
        FieldKind::Int32 | FieldKind::Enum => {
            b.vec_slice::<i32>(si).iter().for_each(|&v| f(Wire::Varint(v as i64 as u64)))
        }
        FieldKind::Sint32 => {
            b.vec_slice::<i32>(si).iter().for_each(|&v| f(Wire::Varint(u64::from(zigzag_encode32(v)))))
        }
        FieldKind::Uint32 => b.vec_slice::<u32>(si).iter().for_each(|&v| f(Wire::Varint(u64::from(v)))),
        FieldKind::Int64 | FieldKind::Uint64 => b.vec_slice::<u64>(si).iter().for_each(|&v| f(Wire::Varint(v))),
        FieldKind::Sint64 => b.vec_slice::<i64>(si).iter().for_each(|&v| f(Wire::Varint(zigzag_encode64(v)))),
        FieldKind::Fixed32 | FieldKind::Sfixed32 | FieldKind::Float => {
            b.vec_slice::<u32>(si).iter().for_each(|&v| f(Wire::Fixed32(v)))
        }
        FieldKind::Fixed64 | FieldKind::Sfixed64 | FieldKind::Double => {
            b.vec_slice::<u64>(si).iter().for_each(|&v| f(Wire::Fixed64(v)))
        }
        FieldKind::String | FieldKind::Bytes => b.vec_strs(si).for_each(|v| f(Wire::Bytes(v))),
        FieldKind::Message | FieldKind::Group => unreachable!("messages are not scalars"),
    }
}

/// A map entry's key or value scalar, read through the view so that an absent one is its
/// default (a proto2 enum's default is its first value, not necessarily 0).
fn entry_scalar<'a>(entry: &MessageRef<'a>, si: SlotIndex, kind: FieldKind) -> Wire<'a> {
    if entry.block.is_set(si) {
        return singular(entry, si, kind);
    }
    match entry.value(si) {
        Value::Bool(v) => Wire::Varint(u64::from(v)),
        Value::I32(v) if kind == FieldKind::Sint32 => Wire::Varint(u64::from(zigzag_encode32(v))),
        Value::I32(v) if kind == FieldKind::Sfixed32 => Wire::Fixed32(v as u32),
        Value::I32(v) => Wire::Varint(v as i64 as u64),
        Value::Enum(e) => Wire::Varint(e.number as i64 as u64),
        Value::I64(v) if kind == FieldKind::Sint64 => Wire::Varint(zigzag_encode64(v)),
        Value::I64(v) if kind == FieldKind::Sfixed64 => Wire::Fixed64(v as u64),
        Value::I64(v) => Wire::Varint(v as u64),
        Value::U32(v) if kind == FieldKind::Fixed32 => Wire::Fixed32(v),
        Value::U32(v) => Wire::Varint(u64::from(v)),
        Value::U64(v) if kind == FieldKind::Fixed64 => Wire::Fixed64(v),
        Value::U64(v) => Wire::Varint(v),
        Value::F32(v) => Wire::Fixed32(v.to_bits()),
        Value::F64(v) => Wire::Fixed64(v.to_bits()),
        Value::String(s) => Wire::Bytes(s.as_bytes()),
        Value::Bytes(b) => Wire::Bytes(b),
        Value::Message(_) | Value::List(_) | Value::Map(_) => unreachable!("map keys and scalar values"),
    }
}

fn packed_payload_len(msg: &MessageRef<'_>, si: SlotIndex, kind: FieldKind, n: usize) -> usize {
    match kind.fixed_width() {
        0 => {
            let mut total = 0;
            for_each_element(msg, si, kind, |w| total += w.len());
            total
        }
        w => w as usize * n,
    }
}

fn unknown_len(msg: &MessageRef<'_>) -> usize {
    msg.unknown_fields().map(<[u8]>::len).sum()
}

/// A nested message's contribution: the length prefix (or group tags) around its body.
fn framed(number: u32, kind: FieldKind, body: usize) -> usize {
    if kind == FieldKind::Group {
        2 * tag_len(number) + body
    } else {
        tag_len(number) + varint_len(body as u64) + body
    }
}

/// Encoded size of `msg`'s body; pushes, in visiting order, the body size of every nested
/// message, map entry and packed run (a placeholder first, so parents precede children).
fn size_message(msg: &MessageRef<'_>, sizes: &mut Vec<usize>) -> usize {
    let layout = msg.layout();
    let mut total = 0;
    for (i, slot) in layout.slots().iter().enumerate() {
        let si = SlotIndex::new(i as u32);
        if !msg.is_present(si) {
            continue;
        }
        let n = slot.number;
        match slot.repetition {
            Repetition::Singular if slot.kind.is_message() => {
                let child = msg.value(si).as_message().expect("message slot");
                total += framed(n, slot.kind, size_nested(&child, sizes));
            }
            Repetition::Singular => total += tag_len(n) + singular(msg, si, slot.kind).len(),
            Repetition::Repeated => {
                let len = msg.block.vec_len(si);
                if slot.kind.is_message() {
                    for child in msg.block.vec_children(si) {
                        let child = MessageRef::new(child);
                        total += framed(n, slot.kind, size_nested(&child, sizes));
                    }
                } else if slot.packed && slot.kind.is_packable() {
                    let payload = packed_payload_len(msg, si, slot.kind, len);
                    sizes.push(payload);
                    total += tag_len(n) + varint_len(payload as u64) + payload;
                } else {
                    total += len * tag_len(n);
                    for_each_element(msg, si, slot.kind, |w| total += w.len());
                }
            }
            Repetition::Map => {
                let map = MapRef { msg: *msg, slot: si };
                for i in map.winners() {
                    let body = size_entry(&map.entry(i), sizes);
                    total += framed(n, FieldKind::Message, body);
                }
            }
        }
    }
    total + unknown_len(msg)
}

fn size_nested(child: &MessageRef<'_>, sizes: &mut Vec<usize>) -> usize {
    let at = sizes.len();
    sizes.push(0);
    let body = size_message(child, sizes);
    sizes[at] = body;
    body
}

/// A map entry: key and value always (as protobuf writes them), then its unknown fields.
fn size_entry(entry: &MessageRef<'_>, sizes: &mut Vec<usize>) -> usize {
    let at = sizes.len();
    sizes.push(0);
    let layout = entry.layout();
    let mut body = 0;
    for (i, slot) in layout.slots().iter().enumerate() {
        let si = SlotIndex::new(i as u32);
        body += if slot.kind.is_message() {
            let child = entry.value(si).as_message().expect("message slot");
            framed(slot.number, slot.kind, size_nested(&child, sizes))
        } else {
            tag_len(slot.number) + entry_scalar(entry, si, slot.kind).len()
        };
    }
    body += unknown_len(entry);
    sizes[at] = body;
    body
}

struct Writer<'o, 's> {
    out: &'o mut Vec<u8>,
    sizes: &'s [usize],
    next: usize,
}

impl Writer<'_, '_> {
    fn tag(&mut self, number: u32, wire_type: u8) {
        write_varint(self.out, (u64::from(number) << 3) | u64::from(wire_type));
    }

    fn take_size(&mut self) -> usize {
        let s = self.sizes[self.next];
        self.next += 1;
        s
    }

    fn scalar_field(&mut self, number: u32, kind: FieldKind, v: Wire<'_>) {
        let wt = match v {
            Wire::Varint(_) => 0,
            Wire::Fixed32(_) => FIXED32,
            Wire::Fixed64(_) => FIXED64,
            Wire::Bytes(_) => LEN,
        };
        debug_assert_eq!(wt, kind.wire_type());
        self.tag(number, wt);
        v.write(self.out);
    }

    fn nested(&mut self, number: u32, kind: FieldKind, child: &MessageRef<'_>) {
        let body = self.take_size();
        if kind == FieldKind::Group {
            self.tag(number, SGROUP);
            self.message(child);
            self.tag(number, EGROUP);
        } else {
            self.tag(number, LEN);
            write_varint(self.out, body as u64);
            let start = self.out.len();
            self.message(child);
            debug_assert_eq!(self.out.len() - start, body);
        }
    }

    fn message(&mut self, msg: &MessageRef<'_>) {
        let layout = msg.layout();
        for (i, slot) in layout.slots().iter().enumerate() {
            let si = SlotIndex::new(i as u32);
            if !msg.is_present(si) {
                continue;
            }
            let n = slot.number;
            match slot.repetition {
                Repetition::Singular if slot.kind.is_message() => {
                    let child = msg.value(si).as_message().expect("message slot");
                    self.nested(n, slot.kind, &child);
                }
                Repetition::Singular => self.scalar_field(n, slot.kind, singular(msg, si, slot.kind)),
                Repetition::Repeated => {
                    if slot.kind.is_message() {
                        for child in msg.block.vec_children(si) {
                            let child = MessageRef::new(child);
                            self.nested(n, slot.kind, &child);
                        }
                    } else if slot.packed && slot.kind.is_packable() {
                        let payload = self.take_size();
                        self.tag(n, LEN);
                        write_varint(self.out, payload as u64);
                        let out = &mut *self.out;
                        for_each_element(msg, si, slot.kind, |w| w.write(out));
                    } else {
                        for_each_element(msg, si, slot.kind, |w| self.scalar_field(n, slot.kind, w));
                    }
                }
                Repetition::Map => {
                    let map = MapRef { msg: *msg, slot: si };
                    for i in map.winners() {
                        self.entry(n, &map.entry(i));
                    }
                }
            }
        }
        for span in msg.unknown_fields() {
            self.out.extend_from_slice(span);
        }
    }

    fn entry(&mut self, number: u32, entry: &MessageRef<'_>) {
        let body = self.take_size();
        self.tag(number, LEN);
        write_varint(self.out, body as u64);
        for (i, slot) in entry.layout().slots().iter().enumerate() {
            let si = SlotIndex::new(i as u32);
            if slot.kind.is_message() {
                let child = entry.value(si).as_message().expect("message slot");
                self.nested(slot.number, slot.kind, &child);
            } else {
                self.scalar_field(slot.number, slot.kind, entry_scalar(entry, si, slot.kind));
            }
        }
        for span in entry.unknown_fields() {
            self.out.extend_from_slice(span);
        }
    }
}
