//! Layouts built from descriptors: the set of a pool (`Layouts::new`), and each message type's layout in named steps: collect a slot per field and extension, place the slots in the block, then make the lookup tables and the cold per-slot data.

use std::collections::HashMap;

use prost_reflect::{
    Cardinality, DescriptorPool, ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor, OneofDescriptor,
};

use super::{
    check_layout, EnumType, FieldKind, FieldSlot, LayoutError, LayoutIndex, Layouts, MessageLayout, Repetition,
    SlotDescriptor, NO_INDEX,
};
use crate::features::{DeclaredFeatures, FieldFeatures, MessageFeatures, PoolFeatures};
use crate::raw::RawVec;

impl Layouts {
    /// Computes the layout of every message type in `pool`, in O(fields + extensions), its
    /// files read as the proto2 and proto3 files they say they are. A pool holding editions
    /// files lowered by the loader needs their features: [`Layouts::with_features`].
    pub fn new(pool: &DescriptorPool) -> Result<Layouts, LayoutError> {
        Layouts::with_features(PoolFeatures::new(pool, &DeclaredFeatures::default())?)
    }

    /// Computes the layout of every message type of `features`' pool, every slot decided
    /// by the field's resolved features (presence, closed enums, UTF-8, packed, delimited).
    pub fn with_features(features: PoolFeatures) -> Result<Layouts, LayoutError> {
        let pool = features.pool().clone();
        let pool = &pool;
        let messages: Vec<MessageDescriptor> = pool.all_messages().collect();
        let by_name: HashMap<String, LayoutIndex> =
            messages.iter().enumerate().map(|(i, m)| (m.full_name().to_owned(), LayoutIndex(i as u32))).collect();
        let enums: Vec<EnumType> = pool.all_enums().map(EnumType::new).collect();
        let enum_by_name: HashMap<String, u32> =
            enums.iter().enumerate().map(|(i, e)| (e.descriptor.full_name().to_owned(), i as u32)).collect();
        let mut extensions: Vec<Vec<ExtensionDescriptor>> = vec![Vec::new(); messages.len()];
        for ext in pool.all_extensions() {
            if let Some(&li) = by_name.get(ext.containing_message().full_name()) {
                extensions[li.index()].push(ext);
            }
        }
        // A repeated message field holds addresses of child blocks: its element size is a
        // pointer's (`FieldKind::value_size`), whatever the child's block size.
        let mut layouts = Vec::with_capacity(messages.len());
        for (i, msg) in messages.iter().enumerate() {
            let own = features.message_at(i).ok_or_else(|| LayoutError::NoFeatures(msg.full_name().to_owned()))?;
            let cx = Context { by_name: &by_name, enum_by_name: &enum_by_name, features: &features };
            layouts.push(build_layout(msg, own, std::mem::take(&mut extensions[i]), &cx)?);
        }
        for layout in &layouts {
            check_layout(layout);
        }
        let empty_blocks = layouts.iter().map(|l| vec![0u64; l.size as usize / 8].into_boxed_slice()).collect();
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Types some group field decodes: only their message functions need the group
        // end checks (a type decoded as a message alone never has a group number).
        let mut grouped = vec![false; layouts.len()];
        for slot in layouts.iter().flat_map(|l| &l.slots) {
            if slot.kind == FieldKind::Group && slot.child != NO_INDEX {
                grouped[slot.child as usize] = true;
            }
        }
        for (i, layout) in layouts.iter_mut().enumerate() {
            layout.decoded_as_group = grouped[i];
            layout.index = LayoutIndex(i as u32);
            layout.id = (id << 32) | i as u64;
        }
        Ok(Layouts {
            pool: pool.clone(),
            features: std::sync::Arc::new(features),
            layouts,
            by_name,
            enums,
            empty_blocks: std::sync::Arc::new(empty_blocks),
            id,
        })
    }
}

/// What every layout of a set is built with: children by name, enum types by name, and
/// the pool's resolved features.
struct Context<'c> {
    by_name: &'c HashMap<String, LayoutIndex>,
    enum_by_name: &'c HashMap<String, u32>,
    features: &'c PoolFeatures,
}

/// The layout of `msg` (declared fields, with their features in `own`, then `extensions`).
/// The id, index and group flag are left for [`Layouts::new`](super::Layouts::new), which
/// knows the whole set.
fn build_layout(
    msg: &MessageDescriptor,
    own: &MessageFeatures,
    extensions: Vec<ExtensionDescriptor>,
    cx: &Context<'_>,
) -> Result<MessageLayout, LayoutError> {
    let mut builder = LayoutBuilder::new(msg, cx.by_name);
    for f in msg.fields() {
        let features = *own.field(f.number()).ok_or_else(|| LayoutError::NoFeatures(f.full_name().to_owned()))?;
        builder.add_field(f, features);
    }
    for e in extensions {
        let features = *cx.features.extension(&e).ok_or_else(|| LayoutError::NoFeatures(e.full_name().to_owned()))?;
        builder.add_extension(e, features);
    }
    if builder.pending.len() >= u16::MAX as usize {
        return Err(LayoutError::TooManyFields(msg.full_name().to_owned()));
    }
    builder.pending.sort_by_key(|p| p.slot.number);
    let placement = builder.place();
    Ok(builder.finish(placement, cx.enum_by_name))
}

/// A slot collected but not yet placed.
struct Pending {
    slot: FieldSlot,
    desc: SlotDescriptor,
    features: FieldFeatures,
    /// Bytes this slot needs in the block (oneof members are placed once per oneof).
    size: u32,
}

/// Where [`LayoutBuilder::place`] put the header and how big the block is.
struct Placement {
    hasbit_words: u32,
    oneof_case_offset: u32,
    unknown_offset: u32,
    size: u32,
}

/// What a field or extension declares, read the same way from either descriptor; every
/// decision a file's syntax once made comes from `features`.
struct Declared {
    number: u32,
    kind: Kind,
    cardinality: Cardinality,
    is_map: bool,
    features: FieldFeatures,
    /// Index of the containing (non-synthetic) oneof, or [`NO_INDEX`].
    oneof: u32,
}

struct LayoutBuilder<'l> {
    msg: &'l MessageDescriptor,
    by_name: &'l HashMap<String, LayoutIndex>,
    /// The non-synthetic oneofs, indexed as [`FieldSlot::oneof`].
    oneofs: Vec<OneofDescriptor>,
    pending: Vec<Pending>,
    hasbits: u32,
}

impl<'l> LayoutBuilder<'l> {
    fn new(msg: &'l MessageDescriptor, by_name: &'l HashMap<String, LayoutIndex>) -> Self {
        LayoutBuilder {
            msg,
            by_name,
            oneofs: msg.oneofs().filter(|o| !o.is_synthetic()).collect(),
            pending: Vec::new(),
            hasbits: 0,
        }
    }

    fn oneof_index(&self, f: &FieldDescriptor) -> u32 {
        match f.containing_oneof() {
            Some(o) if !o.is_synthetic() => self.oneofs.iter().position(|x| x.name() == o.name()).unwrap() as u32,
            _ => NO_INDEX,
        }
    }

    fn add_field(&mut self, f: FieldDescriptor, features: FieldFeatures) {
        let declared = Declared {
            number: f.number(),
            kind: f.kind(),
            cardinality: f.cardinality(),
            is_map: f.is_map(),
            features,
            oneof: self.oneof_index(&f),
        };
        self.add(declared, SlotDescriptor::Field(f));
    }

    /// Extensions have explicit presence (their features say so) and are never oneof members.
    fn add_extension(&mut self, e: ExtensionDescriptor, features: FieldFeatures) {
        let declared = Declared {
            number: e.number(),
            kind: e.kind(),
            cardinality: e.cardinality(),
            is_map: e.is_map(),
            features,
            oneof: NO_INDEX,
        };
        self.add(declared, SlotDescriptor::Extension(e));
    }

    /// A slot for `d`, unplaced (offset 0), its presence bit allocated.
    fn add(&mut self, d: Declared, desc: SlotDescriptor) {
        let ff = d.features;
        let fk = FieldKind::of(&d.kind, ff.delimited);
        let repetition = if d.is_map {
            Repetition::Map
        } else if d.cardinality == Cardinality::Repeated {
            Repetition::Repeated
        } else {
            Repetition::Singular
        };
        let hasbit =
            if repetition == Repetition::Singular && ff.has_presence() && d.oneof == NO_INDEX && !fk.is_message() {
                self.hasbits += 1;
                self.hasbits - 1
            } else {
                NO_INDEX
            };
        let size =
            if repetition == Repetition::Singular { fk.value_size() } else { std::mem::size_of::<RawVec>() as u32 };
        let child = match &d.kind {
            Kind::Message(m) => self.by_name[m.full_name()].index() as u32,
            _ => NO_INDEX,
        };
        self.pending.push(Pending {
            slot: FieldSlot {
                number: d.number,
                offset: 0,
                kind: fk,
                repetition,
                hasbit,
                oneof: d.oneof,
                child,
                elem_size: fk.value_size(),
                packed: ff.packed,
                closed_enum: ff.closed_enum,
                validate_utf8: fk == FieldKind::String && ff.validate_utf8,
                is_extension: matches!(desc, SlotDescriptor::Extension(_)),
            },
            desc,
            features: ff,
            size,
        });
    }

    /// Sets every slot's offset: the header (presence words, one case word per oneof),
    /// then the unknown-field vector and the slots by descending alignment class, so that
    /// nothing needs padding; oneof members share one slot sized for the widest member.
    fn place(&mut self) -> Placement {
        let hasbit_words = self.hasbits.div_ceil(32);
        let oneof_case_offset = 4 * hasbit_words;
        let mut cursor = (oneof_case_offset + 4 * self.oneofs.len() as u32).next_multiple_of(8);

        let mut oneof_size = vec![0u32; self.oneofs.len()];
        for p in &self.pending {
            if p.slot.oneof != NO_INDEX {
                let s = &mut oneof_size[p.slot.oneof as usize];
                *s = (*s).max(p.size);
            }
        }
        // 16-byte values (8-aligned), then 8, 4, 1. The unknown-field vector opens the
        // 16-byte class.
        let unknown_offset = cursor;
        cursor += std::mem::size_of::<RawVec>() as u32;
        let mut oneof_offset = vec![NO_INDEX; self.oneofs.len()];
        for class in [16u32, 8, 4, 1] {
            for (o, &size) in oneof_size.iter().enumerate() {
                if size == class {
                    oneof_offset[o] = cursor;
                    cursor += size;
                }
            }
            for p in self.pending.iter_mut() {
                if p.slot.oneof == NO_INDEX && p.size == class {
                    p.slot.offset = cursor;
                    cursor += p.size;
                }
            }
        }
        for p in self.pending.iter_mut() {
            if p.slot.oneof != NO_INDEX {
                p.slot.offset = oneof_offset[p.slot.oneof as usize];
            }
        }
        Placement { hasbit_words, oneof_case_offset, unknown_offset, size: cursor.next_multiple_of(8) }
    }

    /// `dense[n]` = slot index of field number `n` (numbers below 1024).
    fn dense_index(&self) -> Vec<u16> {
        let max_number = self.pending.last().map_or(0, |p| p.slot.number);
        let dense_len = (max_number as usize + 1).min(1024);
        let mut dense = vec![u16::MAX; dense_len];
        for (i, p) in self.pending.iter().enumerate() {
            if (p.slot.number as usize) < dense_len {
                dense[p.slot.number as usize] = i as u16;
            }
        }
        dense
    }

    /// The interpreter's one-byte tag table (see [`MessageLayout::one_byte_tag`]).
    fn tag_table(&self) -> Box<[u16; 128]> {
        // Field numbers 1..=15 have one-byte tags; slot indexes fit in 15 bits (a message
        // has fewer than 32768 fields here: the bit above marks the packed form).
        let mut tag_table = Box::new([u16::MAX; 128]);
        for (i, p) in self.pending.iter().enumerate().filter(|(i, _)| *i < 0x8000) {
            let s = &p.slot;
            if (1..16).contains(&s.number) {
                tag_table[s.tag() as usize] = i as u16;
                if s.repetition != Repetition::Singular && s.kind.is_packable() {
                    tag_table[((s.number << 3) | 2) as usize] = i as u16 | 0x8000;
                }
            }
        }
        tag_table
    }

    /// Per slot: the sorted declared values of a closed enum (empty for other slots).
    fn closed_enum_values(&self) -> Vec<Box<[i32]>> {
        self.pending
            .iter()
            .map(|p| match p.desc.kind() {
                Kind::Enum(e) if p.slot.closed_enum => {
                    let mut v: Vec<i32> = e.values().map(|v| v.number()).collect();
                    v.sort_unstable();
                    v.dedup();
                    v.into_boxed_slice()
                }
                _ => Box::default(),
            })
            .collect()
    }

    /// Per slot: the value a singular scalar reads as when absent.
    fn defaults(&self) -> Vec<Option<prost_reflect::Value>> {
        self.pending
            .iter()
            .map(|p| {
                if p.slot.repetition != Repetition::Singular || p.slot.kind.is_message() {
                    return None;
                }
                Some(match &p.desc {
                    SlotDescriptor::Field(f) => f.default_value(),
                    SlotDescriptor::Extension(e) => e.default_value(),
                })
            })
            .collect()
    }

    /// Per slot: the index of its enum type, or [`NO_INDEX`].
    fn enum_types(&self, enum_by_name: &HashMap<String, u32>) -> Vec<u32> {
        self.pending
            .iter()
            .map(|p| match p.desc.kind() {
                Kind::Enum(e) => enum_by_name.get(e.full_name()).copied().unwrap_or(NO_INDEX),
                _ => NO_INDEX,
            })
            .collect()
    }

    /// Per slot: the name protobuf's text format prints: a delimited field that looks like
    /// a proto2 group (protobuf's `IsGroupLike`) by its type's name, as protoc does.
    fn text_names(&self) -> Vec<Box<str>> {
        self.pending
            .iter()
            .map(|p| match &p.desc {
                SlotDescriptor::Extension(e) => format!("[{}]", e.full_name()).into_boxed_str(),
                SlotDescriptor::Field(f) if p.features.group_like => match f.kind() {
                    Kind::Message(m) => m.name().into(),
                    _ => f.name().into(),
                },
                SlotDescriptor::Field(f) => f.name().into(),
            })
            .collect()
    }

    fn finish(self, placement: Placement, enum_by_name: &HashMap<String, u32>) -> MessageLayout {
        let dense = self.dense_index();
        let tag_table = self.tag_table();
        let closed_enum_values = self.closed_enum_values();
        let defaults = self.defaults();
        let enum_types = self.enum_types(enum_by_name);
        let text_names = self.text_names();
        let slot_features = self.pending.iter().map(|p| p.features).collect();
        let (slots, slot_descriptors) = self.pending.into_iter().map(|p| (p.slot, p.desc)).unzip();
        MessageLayout {
            // Set by `Layouts::new` once the set's id is known.
            id: 0,
            index: LayoutIndex(0),
            decoded_as_group: false,
            size: placement.size,
            hasbit_words: placement.hasbit_words,
            oneof_case_offset: placement.oneof_case_offset,
            unknown_offset: placement.unknown_offset,
            is_map_entry: self.msg.is_map_entry(),
            slots,
            dense,
            tag_table,
            descriptor: self.msg.clone(),
            slot_descriptors,
            oneofs: self.oneofs,
            closed_enum_values,
            defaults,
            enum_types,
            text_names,
            slot_features,
        }
    }
}
