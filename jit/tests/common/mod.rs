//! Test support for the engines: layouts from `.proto` text or the shared corpus (through
//! protox, without the facade), a canonical dump of a decoded tree to compare engines
//! with, and a small deterministic generator of random messages.
#![allow(dead_code)]

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost_reflect::DescriptorPool;
use protojit_arena::{BlockRef, FieldKind, Layouts, Repetition, SlotIndex};

/// The layouts of one `.proto` file given as text.
pub fn layouts_from_source(source: &str) -> Arc<Layouts> {
    Arc::new(Layouts::new(&protojit_corpus::pool_from_source("test.proto", source)).expect("layouts"))
}

/// The shared corpus, if present (a test that needs it is skipped without it, and fails
/// under `CI=true`).
pub fn corpus_dir(test: &str) -> Option<PathBuf> {
    protojit_corpus::require_shared_corpus(test)
}

/// The layouts of a corpus `.proto` file; `descriptor.proto` comes from the descriptor set
/// beside it (protox does not read its syntax).
pub fn corpus_layouts(dir: &Path, proto: &str) -> Arc<Layouts> {
    let pool = if proto == "descriptor.proto" {
        DescriptorPool::decode(std::fs::read(dir.join("descriptor.fds.bin")).unwrap().as_slice()).unwrap()
    } else {
        let set = protox::compile([dir.join(proto)], [dir]).expect("corpus schema compiles");
        DescriptorPool::from_file_descriptor_set(set).unwrap()
    };
    Arc::new(Layouts::new(&pool).expect("layouts"))
}

/// Every field of a decoded tree, in slot order, with its values, children and unknown
/// fields: two engines agree on a tree exactly when their dumps are equal.
pub fn dump(block: BlockRef<'_>) -> String {
    let mut out = String::new();
    dump_into(block, &mut out);
    out
}

fn dump_into(block: BlockRef<'_>, out: &mut String) {
    let layout = block.layout();
    out.push('{');
    for (i, slot) in layout.slots().iter().enumerate() {
        let si = SlotIndex::new(i as u32);
        match slot.repetition {
            Repetition::Singular => {
                if !block.is_set(si) {
                    continue;
                }
                write!(out, "{}:", slot.number).unwrap();
                match slot.kind {
                    FieldKind::Message | FieldKind::Group => match block.child(si) {
                        Some(child) => dump_into(child, out),
                        None => out.push_str("none"),
                    },
                    FieldKind::String | FieldKind::Bytes => write!(out, "{:?}", block.get_bytes(si)).unwrap(),
                    FieldKind::Bool => write!(out, "{}", block.get::<bool>(si)).unwrap(),
                    k if is_wide(k) => write!(out, "{}", block.get::<u64>(si)).unwrap(),
                    _ => write!(out, "{}", block.get::<u32>(si)).unwrap(),
                }
                out.push(' ');
            }
            Repetition::Repeated | Repetition::Map => {
                let n = block.vec_len(si);
                if n == 0 {
                    continue;
                }
                write!(out, "{}:[", slot.number).unwrap();
                for e in 0..n {
                    match slot.kind {
                        FieldKind::Message | FieldKind::Group => dump_into(block.vec_child(si, e), out),
                        FieldKind::String | FieldKind::Bytes => {
                            write!(out, "{:?}", block.vec_get_bytes(si, e)).unwrap()
                        }
                        FieldKind::Bool => write!(out, "{}", block.vec_get::<bool>(si, e)).unwrap(),
                        k if is_wide(k) => write!(out, "{}", block.vec_get::<u64>(si, e)).unwrap(),
                        _ => write!(out, "{}", block.vec_get::<u32>(si, e)).unwrap(),
                    }
                    out.push(',');
                }
                out.push_str("] ");
            }
        }
    }
    for u in block.unknown_fields() {
        write!(out, "?{u:?} ").unwrap();
    }
    out.push('}');
}

fn is_wide(kind: FieldKind) -> bool {
    matches!(
        kind,
        FieldKind::Uint64
            | FieldKind::Fixed64
            | FieldKind::Int64
            | FieldKind::Sint64
            | FieldKind::Sfixed64
            | FieldKind::Double
    )
}

/// A small deterministic generator (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Appends a varint.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A random encoding of a message of `layout` (by index) of `layouts`: each field present
/// or not, repeated fields packed or not, values of every width (long varints included),
/// nested messages and groups down to `depth`, and now and then an unknown field.
pub fn random_message(layouts: &Layouts, layout: protojit_arena::LayoutIndex, depth: u32, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let slots = layouts.get(layout).slots();
    for slot in slots {
        if rng.below(3) == 0 {
            continue;
        }
        let count = match slot.repetition {
            Repetition::Singular => 1,
            _ => rng.below(4),
        };
        let nested = matches!(slot.kind, FieldKind::Message | FieldKind::Group);
        if nested && depth == 0 {
            continue;
        }
        let packable = !nested && !matches!(slot.kind, FieldKind::String | FieldKind::Bytes);
        if slot.repetition != Repetition::Singular && packable && rng.below(2) == 0 && count > 0 {
            let mut body = Vec::new();
            for _ in 0..count {
                scalar(slot.kind, &mut body, rng);
            }
            varint(&mut out, (slot.number as u64) << 3 | 2);
            varint(&mut out, body.len() as u64);
            out.extend(body);
            continue;
        }
        for _ in 0..count {
            match slot.kind {
                FieldKind::Message => {
                    let child = random_message(layouts, protojit_arena::LayoutIndex::new(slot.child), depth - 1, rng);
                    varint(&mut out, (slot.number as u64) << 3 | 2);
                    varint(&mut out, child.len() as u64);
                    out.extend(child);
                }
                FieldKind::Group => {
                    let child = random_message(layouts, protojit_arena::LayoutIndex::new(slot.child), depth - 1, rng);
                    varint(&mut out, (slot.number as u64) << 3 | 3);
                    out.extend(child);
                    varint(&mut out, (slot.number as u64) << 3 | 4);
                }
                FieldKind::String | FieldKind::Bytes => {
                    let len = rng.below(12) as usize;
                    let text: Vec<u8> = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
                    varint(&mut out, (slot.number as u64) << 3 | 2);
                    varint(&mut out, len as u64);
                    out.extend(text);
                }
                kind => {
                    varint(&mut out, (slot.number as u64) << 3 | kind.wire_type() as u64);
                    scalar(kind, &mut out, rng);
                }
            }
        }
    }
    if rng.below(8) == 0 {
        // An unknown varint field.
        varint(&mut out, 1999 << 3);
        varint(&mut out, rng.next());
    }
    out
}

fn scalar(kind: FieldKind, out: &mut Vec<u8>, rng: &mut Rng) {
    match kind.wire_type() {
        0 => {
            let v = match rng.below(4) {
                0 => rng.below(128),
                1 => rng.below(1 << 14),
                2 => rng.next(),
                _ => (-(rng.below(1000) as i64)) as u64,
            };
            varint(out, if kind == FieldKind::Bool { v & 1 } else { v });
        }
        1 => out.extend(rng.next().to_le_bytes()),
        _ => out.extend((rng.next() as u32).to_le_bytes()),
    }
}
