//! `protojit schema`: list message types, show fields, arena layouts, compiled code.

use std::fmt::Write as _;

use prost_reflect::Kind;
use protojit::Schema;
use protojit::{CompileOptions, EngineKind, EngineOptions, TypeEngine, TypeStats};
use protojit_arena::{
    Edition, FeatureSet, FieldKind, FieldPresence, FieldSlot, LayoutIndex, Layouts, MessageLayout, Repetition,
    SlotDescriptor, SlotIndex, NO_INDEX,
};

use crate::args::{EngineArgs, SchemaSub};
use crate::common::{self, Failure, Out};

pub fn run(sub: &SchemaSub) -> Result<(), Failure> {
    let mut text = String::new();
    match sub {
        SchemaSub::List { schema } => {
            let schema = common::load_schema(schema)?;
            for name in schema.message_names() {
                writeln!(text, "{name}").unwrap();
            }
        }
        SchemaSub::Show { schema, type_name } => {
            let schema = common::load_schema(schema)?;
            let (layouts, root) = layout_of(&schema, type_name)?;
            show(layouts, root, &mut text);
        }
        SchemaSub::Layout { schema, type_name, reachable } => {
            let schema = common::load_schema(schema)?;
            let (layouts, root) = layout_of(&schema, type_name)?;
            let types = if *reachable { layouts.reachable(root) } else { vec![root] };
            for (i, li) in types.into_iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                layout(layouts, layouts.get(li), &mut text);
            }
        }
        SchemaSub::Jit { schema, type_name, clif } => {
            let schema = common::load_schema(schema)?;
            jit(&schema, type_name, *clif, &mut text)?;
        }
        #[cfg(feature = "columns")]
        SchemaSub::Arrow { schema, type_name, select, enum_numbers, mapping, explode, format } => {
            let schema = common::load_schema(schema)?;
            return crate::columns::print_arrow_schema(
                &schema,
                type_name,
                select,
                *enum_numbers,
                (mapping, explode),
                *format,
            );
        }
        #[cfg(not(feature = "columns"))]
        SchemaSub::Arrow { .. } => return Err(crate::features::left_out("schema arrow", "columns")),
    }
    let mut out = Out::new();
    out.write(text.as_bytes())?;
    out.flush()
}

fn layout_of<'s>(schema: &'s Schema, type_name: &str) -> Result<(&'s Layouts, LayoutIndex), Failure> {
    let full = common::resolve(schema, type_name)?;
    let layouts = schema.layouts();
    let root = layouts.index_of(&full).expect("resolved names have layouts");
    Ok((layouts, root))
}

/// Columns padded to their widest cell, two spaces apart.
fn table(rows: &[Vec<String>], indent: &str, out: &mut String) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let mut line = String::from(indent);
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                write!(line, "{cell:<w$}  ", w = widths[c]).unwrap();
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// `proto2`, `proto3` or `edition 2023`: what the file is written in (an editions file
/// reaches the descriptor library as proto2, so this reads the features, not the syntax).
fn edition(layouts: &Layouts, layout: &MessageLayout) -> String {
    match layouts.features().file(&layout.descriptor().parent_file()).0 {
        e @ (Edition::Proto2 | Edition::Proto3) => e.name().to_owned(),
        e => format!("edition {}", e.name()),
    }
}

/// A resolved feature set, each feature as `name=VALUE`; with `base`, only the features
/// that differ from it.
fn features(set: &FeatureSet, base: Option<&FeatureSet>) -> String {
    let all = [
        ("field_presence", set.field_presence.name(), base.map(|b| b.field_presence.name())),
        ("enum_type", set.enum_type.name(), base.map(|b| b.enum_type.name())),
        ("repeated_field_encoding", set.repeated_field_encoding.name(), base.map(|b| b.repeated_field_encoding.name())),
        ("utf8_validation", set.utf8_validation.name(), base.map(|b| b.utf8_validation.name())),
        ("message_encoding", set.message_encoding.name(), base.map(|b| b.message_encoding.name())),
        ("json_format", set.json_format.name(), base.map(|b| b.json_format.name())),
        ("enforce_naming_style", set.enforce_naming_style.name(), base.map(|b| b.enforce_naming_style.name())),
        (
            "default_symbol_visibility",
            set.default_symbol_visibility.name(),
            base.map(|b| b.default_symbol_visibility.name()),
        ),
    ];
    all.iter().filter(|(_, v, b)| Some(*v) != *b).map(|(n, v, _)| format!("{n}={v}")).collect::<Vec<_>>().join(" ")
}

fn kind_name(kind: &Kind, group: bool) -> String {
    match kind {
        Kind::Enum(e) => format!("enum {}", e.full_name()),
        Kind::Message(m) if group => format!("group {}", m.full_name()),
        Kind::Message(m) => format!("message {}", m.full_name()),
        scalar => protojit_reflect::kind_name(scalar),
    }
}

/// The kind column: scalar name, `enum X`, `message X`, `group X`, `map<K, V>`.
fn slot_kind(desc: &SlotDescriptor) -> String {
    let (kind, group, map) = match desc {
        SlotDescriptor::Field(f) => (f.kind(), f.is_group(), f.is_map()),
        SlotDescriptor::Extension(e) => (e.kind(), e.is_group(), e.is_map()),
    };
    match (&kind, map) {
        (Kind::Message(entry), true) => {
            let k = entry.map_entry_key_field();
            let v = entry.map_entry_value_field();
            let value = match v.kind() {
                Kind::Message(m) => m.full_name().to_owned(),
                Kind::Enum(e) => e.full_name().to_owned(),
                other => kind_name(&other, false),
            };
            format!("map<{}, {value}>", kind_name(&k.kind(), false))
        }
        _ => kind_name(&kind, group),
    }
}

/// The cardinality column: required (`LEGACY_REQUIRED`), optional (explicit presence),
/// singular (implicit presence), repeated (packed or not), map; from the resolved features.
fn cardinality(layout: &MessageLayout, si: SlotIndex, slot: &FieldSlot) -> String {
    let features = layout.slot_features(si);
    let mut s = match slot.repetition {
        Repetition::Map => "map".to_owned(),
        Repetition::Repeated if slot.packed => "repeated packed".to_owned(),
        Repetition::Repeated => "repeated".to_owned(),
        _ if features.presence == FieldPresence::LegacyRequired => "required".to_owned(),
        _ if features.has_presence() => "optional".to_owned(),
        _ => "singular".to_owned(),
    };
    if slot.is_extension {
        s.push_str(" (extension)");
    }
    s
}

fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'\n' => out.push_str("\\n"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => write!(out, "\\{b:03o}").unwrap(),
        }
    }
    out.push('"');
    out
}

/// The value an absent singular scalar reads as.
fn default_of(layout: &MessageLayout, si: SlotIndex, desc: &SlotDescriptor) -> String {
    use prost_reflect::Value as P;
    let Some(v) = layout.slot_default(si) else { return String::new() };
    match v {
        P::Bool(b) => b.to_string(),
        P::I32(n) => n.to_string(),
        P::I64(n) => n.to_string(),
        P::U32(n) => n.to_string(),
        P::U64(n) => n.to_string(),
        P::F32(x) => x.to_string(),
        P::F64(x) => x.to_string(),
        P::String(s) => quote(s.as_bytes()),
        P::Bytes(b) => quote(b),
        P::EnumNumber(n) => match desc.kind() {
            Kind::Enum(e) => e.get_value(*n).map_or_else(|| n.to_string(), |v| v.name().to_owned()),
            _ => n.to_string(),
        },
        P::Message(_) | P::List(_) | P::Map(_) => String::new(),
    }
}

fn show(layouts: &Layouts, root: LayoutIndex, out: &mut String) {
    let layout = layouts.get(root);
    let desc = layout.descriptor();
    writeln!(out, "message {} ({}, {})", desc.full_name(), edition(layouts, layout), desc.parent_file().name())
        .unwrap();
    let own = layouts.features().message(desc).map(|m| m.set);
    if let Some(set) = &own {
        writeln!(out, "  features: {}", features(set, None)).unwrap();
    }
    let mut rows =
        vec![["number", "name", "kind", "cardinality", "oneof", "default", "features"].map(String::from).to_vec()];
    for (i, slot) in layout.slots().iter().enumerate() {
        let si = SlotIndex::new(i as u32);
        let d = layout.slot_descriptor(si);
        let name = match d {
            SlotDescriptor::Field(f) => f.name().to_owned(),
            SlotDescriptor::Extension(e) => format!("[{}]", e.full_name()),
        };
        let oneof =
            if slot.oneof == NO_INDEX { String::new() } else { layout.oneofs()[slot.oneof as usize].name().to_owned() };
        rows.push(vec![
            slot.number.to_string(),
            name,
            slot_kind(d),
            cardinality(layout, si, slot),
            oneof,
            default_of(layout, si, d),
            // The field's resolved features where they differ from its message's.
            features(&layout.slot_features(si).set, own.as_ref()),
        ]);
    }
    if layout.slots().is_empty() {
        out.push_str("  (no fields)\n");
    } else {
        table(&rows, "  ", out);
    }
}

fn repetition(r: Repetition) -> &'static str {
    match r {
        Repetition::Singular => "singular",
        Repetition::Repeated => "repeated",
        Repetition::Map => "map",
    }
}

fn layout(layouts: &Layouts, layout: &MessageLayout, out: &mut String) {
    let desc = layout.descriptor();
    writeln!(out, "message {}: block of {} bytes, 8-byte aligned", desc.full_name(), layout.size()).unwrap();
    match layout.hasbit_words() {
        0 => out.push_str("  presence bits: none (no field outside a oneof has explicit presence)\n"),
        words => writeln!(
            out,
            "  presence bits: {words} u32 word{} at bytes 0..{}",
            if words == 1 { "" } else { "s" },
            4 * words
        )
        .unwrap(),
    }
    for (i, oneof) in layout.oneofs().iter().enumerate() {
        writeln!(
            out,
            "  oneof {}: case word (u32, active field number) at byte {}",
            oneof.name(),
            layout.oneof_case_offset(i as u32)
        )
        .unwrap();
    }
    writeln!(out, "  unknown fields: span vector (16 bytes) at byte {}", layout.unknown_offset()).unwrap();
    let mut rows = vec![["offset", "size", "number", "name", "kind", "repetition", "presence", "element"]
        .map(String::from)
        .to_vec()];
    let mut slots: Vec<(usize, &FieldSlot)> = layout.slots().iter().enumerate().collect();
    slots.sort_by_key(|(i, s)| (s.offset, *i));
    for (i, slot) in slots {
        let d = layout.slot_descriptor(SlotIndex::new(i as u32));
        let size = match slot.repetition {
            Repetition::Singular => slot.kind.value_size(),
            _ => 16,
        };
        let presence = if slot.oneof != NO_INDEX {
            format!("oneof {} case", layout.oneofs()[slot.oneof as usize].name())
        } else if slot.repetition != Repetition::Singular {
            "len > 0".to_owned()
        } else if slot.kind.is_message() {
            "non-null pointer".to_owned()
        } else if slot.hasbit != NO_INDEX {
            format!("bit {} (word {}, mask 0x{:08x})", slot.hasbit, slot.hasbit / 32, 1u32 << (slot.hasbit % 32))
        } else {
            "non-zero value".to_owned()
        };
        let element = if slot.child != NO_INDEX {
            let child = layouts.get(LayoutIndex::new(slot.child));
            if slot.repetition == Repetition::Singular {
                format!("-> {} ({} bytes)", child.descriptor().full_name(), child.size())
            } else {
                format!("pointers -> {} ({} bytes)", child.descriptor().full_name(), child.size())
            }
        } else if slot.repetition != Repetition::Singular {
            format!("{} bytes each", slot.elem_size)
        } else {
            String::new()
        };
        let kind = match slot.kind {
            FieldKind::Message | FieldKind::Group => format!("{:?}", slot.kind).to_lowercase(),
            _ => kind_name(&d.kind(), false),
        };
        rows.push(vec![
            slot.offset.to_string(),
            size.to_string(),
            slot.number.to_string(),
            d.name().to_owned(),
            kind,
            repetition(slot.repetition).to_owned(),
            presence,
            element,
        ]);
    }
    if rows.len() > 1 {
        table(&rows, "  ", out);
    }
}

fn ms(d: std::time::Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn jit(schema: &Schema, type_name: &str, clif: bool, out: &mut String) -> Result<(), Failure> {
    let full = common::resolve(schema, type_name)?;
    let stats: Vec<TypeStats> = if clif {
        let options = CompileOptions { keep_clif: true, ..schema.compile_options().clone() };
        let schema = schema.clone().with_compile_options(options);
        let decoder = schema
            .decoder_with_options(&full, &EngineOptions::default().with_kind(EngineKind::Jit))
            .map_err(|e| Failure::usage(e.to_string()))?;
        decoder.stats().types
    } else {
        let engine = EngineArgs {
            engine: EngineKind::Jit,
            max_depth: 100,
            utf8: crate::args::Utf8::Features,
            no_utf8_check: false,
        };
        common::decoder(schema, &full, &engine, None)?.stats().types
    };
    let code: u64 = stats.iter().map(|t| u64::from(t.code_bytes)).sum();
    let time: std::time::Duration = stats.iter().map(|t| t.compile_time).sum();
    let compiled = stats.iter().filter(|t| t.engine == TypeEngine::Jit).count();
    writeln!(
        out,
        "{full}: {} reachable message type{}, {compiled} compiled, {code} bytes of machine code, {} compile time",
        stats.len(),
        if stats.len() == 1 { "" } else { "s" },
        ms(time)
    )
    .unwrap();
    let mut rows = vec![["type", "code bytes", "compile time", "engine"].map(String::from).to_vec()];
    for t in &stats {
        rows.push(vec![t.message_type.clone(), t.code_bytes.to_string(), ms(t.compile_time), common::engine_name(t)]);
    }
    table(&rows, "  ", out);
    if clif {
        for t in &stats {
            writeln!(out, "\n; {} ({} bytes, {})", t.message_type, t.code_bytes, common::engine_name(t)).unwrap();
            match &t.clif {
                Some(ir) => {
                    out.push_str(ir);
                    if !ir.ends_with('\n') {
                        out.push('\n');
                    }
                }
                None => out.push_str("; (no Cranelift IR: not compiled)\n"),
            }
        }
    }
    Ok(())
}
