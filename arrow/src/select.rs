//! Projections: `--select a,b.c` paths parsed against the root type, and the pruned schema a projected converter decodes with, so unselected messages and lists are skipped on the wire instead of decoded and dropped.

use std::collections::HashMap;

use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FileDescriptorSet};
use protojit::{find_field, parse_path, FieldName, PathError, PathErrorKind, PathSegment};
use protojit_arena::SlotDescriptor;

use crate::error::ConvertError;
use crate::options::ArrowOptions;
use crate::wkt::is_atomic;

/// Why `parse_path` refused a path, without the path (the error repeats it).
fn syntax_reason(e: &PathError) -> String {
    match &e.kind {
        PathErrorKind::Empty => "empty path".into(),
        PathErrorKind::Syntax(expected) => format!("expected {expected} at byte {}", e.offset),
        _ => e.to_string(),
    }
}

/// What of a message is converted: every field, or some fields (each with what of it), in
/// the order they were first selected.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Selection {
    All,
    Some(Vec<(String, Selection)>),
}

impl Selection {
    /// Parses `paths` against `root`. Each path follows the one field-path grammar
    /// ([`parse_path`]): its field segments are names (declared or JSON) or `#number`s;
    /// a path may go through singular and repeated message fields, and a map, a well-known
    /// type converted as one column, or a scalar ends it. Extensions (`(ext)`) and `[...]`
    /// selectors are refused: a column is a whole field.
    pub(crate) fn parse(
        root: &MessageDescriptor,
        paths: Option<&[String]>,
        options: &ArrowOptions,
    ) -> Result<Selection, ConvertError> {
        let Some(paths) = paths else { return Ok(Selection::All) };
        let mut sel = Selection::Some(Vec::new());
        for path in paths {
            let refuse = |reason: String| ConvertError::Select { path: path.clone(), reason };
            let segments = parse_path(path).map_err(|e| refuse(syntax_reason(&e)))?;
            let mut msg = root.clone();
            let mut node = &mut sel;
            for (i, seg) in segments.iter().enumerate() {
                let name = match &seg.segment {
                    PathSegment::Field(FieldName::Extension(_)) => {
                        return Err(refuse(format!("`{}` is an extension; columns are declared fields", seg.text)))
                    }
                    PathSegment::Field(name) => name,
                    PathSegment::Select(_) => {
                        return Err(refuse(format!(
                            "`{}` selects elements; a column holds the whole field (select `{}`)",
                            seg.text,
                            &path[..seg.offset]
                        )))
                    }
                };
                let last = i + 1 == segments.len();
                let Some(SlotDescriptor::Field(field)) = find_field(&msg, name) else {
                    // With `oneof_case`, `<oneof>_case` names the column made from the
                    // oneof's members: selecting it selects them.
                    if let Some(oneof) = case_column(&msg, seg.text, options).filter(|_| last) {
                        if let Selection::Some(list) = node {
                            for member in oneof.fields() {
                                list.retain(|(n, _)| n != member.name());
                                list.push((member.name().to_owned(), Selection::All));
                            }
                        }
                        break;
                    }
                    return Err(refuse(format!("`{}` has no field `{}`", msg.full_name(), seg.text)));
                };
                let Selection::Some(list) = node else {
                    // An earlier path selected this whole message already.
                    break;
                };
                let pos = match list.iter().position(|(n, _)| n == field.name()) {
                    Some(p) => p,
                    None => {
                        let sub = if last { Selection::All } else { Selection::Some(Vec::new()) };
                        list.push((field.name().to_owned(), sub));
                        list.len() - 1
                    }
                };
                if last {
                    list[pos].1 = Selection::All;
                    break;
                }
                let child = match field.kind() {
                    Kind::Message(m) if !field.is_map() && !is_atomic(&m, options) => m,
                    _ => {
                        let what = if field.is_map() { "a map (select it whole)" } else { "not a message" };
                        return Err(refuse(format!("`{}.{}` is {what}", msg.full_name(), field.name())));
                    }
                };
                msg = child;
                node = &mut list[pos].1;
            }
        }
        Ok(sel)
    }

    /// The selection of field `name` under this one (`None`: not selected).
    pub(crate) fn child(&self, name: &str) -> Option<&Selection> {
        match self {
            Selection::All => Some(&Selection::All),
            Selection::Some(list) => list.iter().find(|(n, _)| n == name).map(|(_, s)| s),
        }
    }
}

/// The oneof of `msg` whose case column is named `name`, when the options make case columns.
fn case_column(msg: &MessageDescriptor, name: &str, options: &ArrowOptions) -> Option<prost_reflect::OneofDescriptor> {
    let oneof = name.strip_suffix(crate::reshape::CASE_SUFFIX)?;
    options.oneof_case.then(|| msg.oneofs().find(|o| !o.is_synthetic() && o.name() == oneof)).flatten()
}

/// Which fields of each message type the pruned schema keeps (`None`: all).
type Keep = HashMap<String, Option<Vec<u32>>>;

/// A pool in which every message type the selection goes into keeps the fields some
/// selection needs (the union over the places the type occurs) and its singular scalars
/// (see `prune`). Types selected whole, and everything under them, are kept whole. The
/// other fields (messages, groups, repeated fields) then decode as unknown fields: skipped
/// on the wire (a span is noted), never decoded into values.
pub(crate) fn pruned_pool(root: &MessageDescriptor, sel: &Selection) -> Result<DescriptorPool, ConvertError> {
    let mut keep = Keep::new();
    mark(root, sel, &mut keep);
    let pool = root.parent_pool();
    let mut set = FileDescriptorSet { file: pool.file_descriptor_protos().cloned().collect() };
    for file in &mut set.file {
        let prefix = match file.package() {
            "" => String::new(),
            p => format!("{p}."),
        };
        for msg in &mut file.message_type {
            prune(msg, &prefix, &keep);
        }
    }
    DescriptorPool::from_file_descriptor_set(set)
        .map_err(|e| ConvertError::Schema(format!("the projected schema does not load: {e}")))
}

fn mark(msg: &MessageDescriptor, sel: &Selection, keep: &mut Keep) {
    match sel {
        Selection::All => {
            if let Some(None) = keep.get(msg.full_name()) {
                return; // already whole (and so is what is under it)
            }
            keep.insert(msg.full_name().to_owned(), None);
            for f in msg.fields() {
                if let Kind::Message(m) = f.kind() {
                    mark(&m, &Selection::All, keep);
                }
            }
        }
        Selection::Some(list) => {
            let fields: Vec<_> = list
                .iter()
                .map(|(name, sub)| (msg.get_field_by_name(name).expect("parsed against this type"), sub))
                .collect();
            // An empty selection (`SELECT COUNT(*)`) keeps no field: records are still
            // walked and checked, nothing is stored.
            if let Some(numbers) = keep.entry(msg.full_name().to_owned()).or_insert_with(|| Some(Vec::new())) {
                numbers.extend(fields.iter().map(|(f, _)| f.number()));
            }
            for (field, sub) in fields {
                if let Kind::Message(m) = field.kind() {
                    mark(&m, sub, keep);
                }
            }
        }
    }
}

fn prune(msg: &mut DescriptorProto, prefix: &str, keep: &Keep) {
    let full = format!("{prefix}{}", msg.name());
    let nested_prefix = format!("{full}.");
    for nested in &mut msg.nested_type {
        prune(nested, &nested_prefix, keep);
    }
    let Some(Some(numbers)) = keep.get(&full) else { return };
    // An unselected singular scalar stays a field, stored and not read: the decoder (the
    // compiled one inline) stores it for less than it takes to record an unknown field,
    // and a later oneof member still clears the selected one, as in the whole message.
    // Accepting and rejecting are as for an unknown field (a singular value is checked
    // alike either way); strings become `bytes`, so no unselected string is checked for
    // UTF-8. Messages, groups and repeated fields go (skipping them unread is cheaper),
    // except a oneof's message members.
    msg.field.retain(|f| {
        numbers.contains(&(f.number() as u32))
            || (f.label() != Label::Repeated && !matches!(f.r#type(), Type::Message | Type::Group))
            // A oneof's message members too: setting one clears a selected member.
            || (f.oneof_index.is_some() && !f.proto3_optional())
    });
    for f in &mut msg.field {
        if !numbers.contains(&(f.number() as u32)) && f.r#type() == Type::String {
            f.set_type(Type::Bytes);
            f.default_value = None;
        }
    }
    // Oneofs left without members go; the others are renumbered in order (synthetic
    // proto3-optional oneofs stay after the real ones, as protoc wants).
    let used: Vec<bool> =
        (0..msg.oneof_decl.len()).map(|i| msg.field.iter().any(|f| f.oneof_index == Some(i as i32))).collect();
    let mut renumber = vec![None; used.len()];
    let mut next = 0;
    for (i, u) in used.iter().enumerate() {
        if *u {
            renumber[i] = Some(next);
            next += 1;
        }
    }
    let mut i = 0;
    msg.oneof_decl.retain(|_| {
        i += 1;
        used[i - 1]
    });
    for f in &mut msg.field {
        if let Some(o) = f.oneof_index {
            f.oneof_index = renumber[o as usize];
        }
    }
}
