//! The mapping options' reshaping stage: a finished batch's canonical columns turned into the shape the options ask for (oneof cases, map entries, large offsets, enum names, `Any` as JSON, exploded rows, flattening).
//!
//! Every conversion path (compiled appenders, chunked, direct, tree) fills the same
//! canonical columns: messages as structs, maps as `Map`, `Utf8` / `Binary` / `List` with
//! 32-bit offsets, enums as dictionaries (or numbers). [`BatchBuilder::finish`]
//! (crate::BatchBuilder::finish), the one place every path's batch is made, hands those
//! columns to a [`Reshape`], planned once per converter from the canonical schema, so every
//! path honours the options by construction. The stage reuses what it can: child arrays,
//! value buffers and null buffers are shared; 32-bit offsets are widened into new buffers
//! (`large`); enum names are copied out of their dictionaries (`enums = string`); oneof
//! case columns are made from the member columns' validity; an `Any` struct's rows are
//! printed as proto3 JSON (`any = json`), its payload decoded through the schema. Exploding (one row per element
//! of a repeated field) takes the other columns' rows with repeated indices and puts the
//! list's items, taken in order, in the list's place; it runs after the other options and
//! before flattening, so the element's struct flattens like any other.
//!
//! The plan ([`Node`]) mirrors the canonical schema and is [`Node::Keep`] wherever nothing
//! changes, so untouched subtrees cost nothing. The output types are computed with the
//! plan and the arrays are built against them, so [`Reshape::fields`] is the schema of
//! every batch.

use std::sync::Arc;

use arrow_array::builder::GenericStringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int8Type};
use arrow_array::{
    make_array, Array, ArrayRef, DictionaryArray, GenericByteArray, GenericListArray, MapArray, OffsetSizeTrait,
    PrimitiveArray, StringArray, StructArray, UInt32Array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Fields};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};

use protojit::{Arena, Decoder, JsonOptions, Schema};
use protojit_arena::wire::write_varint;

use crate::error::ConvertError;
use crate::options::{AnyColumns, ArrowOptions, EnumColumns, Explode, MapColumns};

/// The suffix of a oneof's case column.
pub(crate) const CASE_SUFFIX: &str = "_case";

/// The field metadata key of an Arrow extension type's name.
pub(crate) const EXTENSION_NAME: &str = "ARROW:extension:name";
/// Arrow's canonical extension type of JSON text columns.
pub(crate) const JSON_EXTENSION: &str = "arrow.json";

/// `google.protobuf.Any`'s full name.
pub(crate) const ANY: &str = "google.protobuf.Any";

/// A converter's reshaping stage: the plan of its root message's columns.
#[derive(Debug)]
pub(crate) struct Reshape {
    root: StructPlan,
    flatten: bool,
    explode: Option<ExplodePlan>,
    /// `any = json`, where the columns hold an `Any`: its printer.
    any: Option<AnyPrinter>,
    /// The columns of every reshaped batch (before the schema-id column, if any).
    fields: Fields,
}

/// A batch's columns reshaped, with what exploding did to its rows.
pub(crate) struct Reshaped {
    pub(crate) columns: Vec<ArrayRef>,
    /// Rows of the batch (the records', unless exploded).
    pub(crate) rows: usize,
    /// Exploded: each row's record (an index into the records' rows), for columns made
    /// beside the reshaping (the schema ids).
    pub(crate) records: Option<UInt32Array>,
    /// Exploded: the records without an element.
    pub(crate) unexploded: u64,
    /// `any = json`: the `Any` values whose type the schema does not resolve.
    pub(crate) unresolved_any: u64,
}

/// Prints `Any` values as proto3 JSON: each `(type_url, value)` re-encoded as an `Any`
/// message, decoded by the full schema's decoder, written by protojit's JSON writer (which
/// resolves the payload's type through the schema).
pub(crate) struct AnyPrinter {
    decoder: Decoder,
}

impl std::fmt::Debug for AnyPrinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnyPrinter")
    }
}

impl AnyPrinter {
    fn new(schema: &Schema) -> Result<AnyPrinter, ConvertError> {
        Ok(AnyPrinter { decoder: schema.decoder(ANY)? })
    }

    /// Appends the JSON of the `Any` of `url` and `value` to `out`; `false` when the type
    /// is not resolved (then `{"@type": url, "value": "<base64>"}` is appended).
    fn print(&self, url: &str, value: &[u8], arena: &mut Arena, out: &mut Vec<u8>) -> bool {
        let mut message = Vec::with_capacity(url.len() + value.len() + 12);
        if !url.is_empty() {
            message.push(0x0a);
            write_varint(&mut message, url.len() as u64);
            message.extend_from_slice(url.as_bytes());
        }
        if !value.is_empty() {
            message.push(0x12);
            write_varint(&mut message, value.len() as u64);
            message.extend_from_slice(value);
        }
        arena.reset();
        let start = out.len();
        let printed = match self.decoder.decode(&message, arena) {
            Ok(m) => m.write_json(out, &JsonOptions::default()).is_ok(),
            Err(_) => false,
        };
        if printed {
            return true;
        }
        out.truncate(start);
        out.extend_from_slice(b"{\"@type\":");
        json_string(url, out);
        out.extend_from_slice(b",\"value\":\"");
        base64(value, out);
        out.extend_from_slice(b"\"}");
        false
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// `bytes` in standard base64 with padding (as proto3 JSON writes `bytes`).
pub(crate) fn base64(bytes: &[u8], out: &mut Vec<u8>) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        out.push(ALPHABET[(n >> 18) as usize & 63]);
        out.push(ALPHABET[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 { ALPHABET[(n >> 6) as usize & 63] } else { b'=' });
        out.push(if chunk.len() > 2 { ALPHABET[n as usize & 63] } else { b'=' });
    }
}

/// Field `base` reshaped to `data_type` (its metadata kept: a JSON column's extension
/// type), marked as JSON text (`arrow.json`) where `node` writes JSON.
fn new_field(base: &Field, node: &Node, data_type: DataType) -> FieldRef {
    let mut metadata = base.metadata().clone();
    if matches!(node, Node::AnyJson { .. }) {
        metadata.insert(EXTENSION_NAME.to_owned(), JSON_EXTENSION.to_owned());
    }
    Arc::new(Field::new(base.name(), data_type, base.is_nullable()).with_metadata(metadata))
}

/// What applying a plan needs besides the arrays: the `Any` printer, an arena for it,
/// and the counts it keeps.
struct Cx<'r> {
    any: Option<&'r AnyPrinter>,
    arena: Option<Arena>,
    unresolved_any: u64,
}

/// [`ArrowOptions::explode`]: the list column's place, and the columns after.
#[derive(Debug)]
struct ExplodePlan {
    /// Column indexes from the root's (reshaped) columns down to the list: structs, then
    /// the list.
    steps: Vec<usize>,
    outer: bool,
    /// The root's columns exploded (before flattening).
    fields: Fields,
}

/// What happens to one canonical column (and what is inside it).
#[derive(Debug)]
enum Node {
    /// Nothing: the array as it is.
    Keep,
    /// `Utf8` → `LargeUtf8`, `Binary` → `LargeBinary`: offsets widened, data shared.
    LargeText,
    /// An enum's `Dictionary<Int32, Utf8>` → its names as `Utf8`, or `LargeUtf8` (`large`).
    EnumNames { large: bool },
    /// A list: its items reshaped; `large`: `LargeList`.
    List { item: Box<Node>, field: FieldRef, large: bool },
    /// A map: keys and values reshaped, as a `Map` or a list of its entries.
    Map(Box<MapPlan>),
    /// A message: its columns reshaped, then its oneof case columns.
    Struct(StructPlan),
    /// A `google.protobuf.Any` struct (its `type_url` and `value` columns at these
    /// indexes) as proto3 JSON text: `Utf8`, or `LargeUtf8` (`large`).
    AnyJson { url: usize, value: usize, large: bool },
}

#[derive(Debug)]
struct MapPlan {
    key: Node,
    value: Node,
    /// The entries' struct fields (key, value), reshaped.
    entries: Fields,
    shape: MapShape,
}

#[derive(Debug)]
enum MapShape {
    /// `Map` with this entries field.
    Map(FieldRef),
    /// `List` (`LargeList` where `large`) of the entries, with this item field.
    Entries { item: FieldRef, large: bool },
}

#[derive(Debug)]
struct StructPlan {
    children: Vec<Node>,
    cases: Vec<Case>,
    /// The struct's fields: its columns reshaped, then the case columns.
    fields: Fields,
}

/// A oneof's case column.
#[derive(Debug)]
struct Case {
    /// The member columns (indexes among the struct's canonical columns) and the key of
    /// each member's name.
    members: Vec<(usize, i32)>,
    /// The members' names (the dictionary's values).
    names: ArrayRef,
    /// `Int32` keys (more than 127 members); else `Int8`.
    wide: bool,
}

impl Reshape {
    /// The stage for the canonical columns `fields` of message `root` under `options`.
    pub(crate) fn new(
        schema: &Schema,
        root: &MessageDescriptor,
        fields: &Fields,
        options: &ArrowOptions,
    ) -> Result<Reshape, ConvertError> {
        let planner = Planner { options, any: std::cell::Cell::new(false) };
        let root = planner.message(root, fields)?;
        let any = if planner.any.get() { Some(AnyPrinter::new(schema)?) } else { None };
        let explode = options.explode.as_ref().map(|e| ExplodePlan::new(e, &root.fields)).transpose()?;
        let unflat = explode.as_ref().map_or(&root.fields, |e| &e.fields);
        let fields = if options.flatten { flat_fields(unflat) } else { unflat.clone() };
        Ok(Reshape { root, flatten: options.flatten, explode, any, fields })
    }

    /// The reshaped columns.
    pub(crate) fn fields(&self) -> &Fields {
        &self.fields
    }

    /// The root's canonical columns (`rows` rows) reshaped.
    pub(crate) fn apply(&self, columns: Vec<ArrayRef>, rows: usize) -> Result<Reshaped, ArrowError> {
        let mut cx = Cx { any: self.any.as_ref(), arena: None, unresolved_any: 0 };
        let columns = struct_columns(&self.root, columns, rows, None, &mut cx)?;
        let (columns, rows, records, unexploded, fields) = match &self.explode {
            None => (columns, rows, None, 0, &self.root.fields),
            Some(plan) => {
                let (columns, records, unexploded) = plan.apply(&columns, rows)?;
                (columns, records.len(), Some(records), unexploded, &plan.fields)
            }
        };
        let columns = if self.flatten {
            let mut out = Vec::with_capacity(self.fields.len());
            for (field, column) in fields.iter().zip(columns) {
                flatten_into(field, column, None, &mut out)?;
            }
            out
        } else {
            columns
        };
        Ok(Reshaped { columns, rows, records, unexploded, unresolved_any: cx.unresolved_any })
    }
}

impl ExplodePlan {
    /// The plan of `explode` over the root's reshaped columns `fields`.
    fn new(explode: &Explode, fields: &Fields) -> Result<ExplodePlan, ConvertError> {
        let fail = |why: String| ConvertError::Explode { path: explode.path.clone(), why };
        let names = path_names(&explode.path);
        let mut steps = Vec::with_capacity(names.len());
        let mut level = fields.clone();
        for (depth, name) in names.iter().enumerate() {
            let at = if depth == 0 { String::new() } else { format!(" in `{}`", names[..depth].join(".")) };
            let Some((index, field)) = level.find(name) else {
                let known = level.iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ");
                return Err(fail(format!("no column `{name}`{at} (the columns there: {known})")));
            };
            steps.push(index);
            let last = depth + 1 == names.len();
            match (field.data_type(), last) {
                (DataType::Struct(children), false) => level = children.clone(),
                (DataType::List(_) | DataType::LargeList(_), true) => {}
                (DataType::Map(..), true) => {
                    return Err(fail(format!("`{name}` is a map: only repeated fields explode")))
                }
                (DataType::List(_) | DataType::LargeList(_) | DataType::Map(..), false) => {
                    return Err(fail(format!("`{name}` is repeated: the path goes through singular messages only")))
                }
                (data_type, _) => {
                    return Err(fail(format!(
                        "`{name}` is not {} (its column is {data_type})",
                        if last { "a repeated field" } else { "a message" }
                    )))
                }
            }
        }
        let fields = exploded_fields(fields, &steps, explode.outer);
        Ok(ExplodePlan { steps, outer: explode.outer, fields })
    }

    /// The root's reshaped `columns` (`rows` rows) exploded: the columns, each row's
    /// record, and how many records had no element.
    fn apply(&self, columns: &[ArrayRef], rows: usize) -> Result<(Vec<ArrayRef>, UInt32Array, u64), ArrowError> {
        // Each record's elements: where every message on the path is present and the list
        // is not null, the list's offsets.
        let mut present: Option<NullBuffer> = None;
        let mut level: Vec<ArrayRef> = columns.to_vec();
        let (last, path) = self.steps.split_last().ok_or_else(|| unexpected("a path", &DataType::Null))?;
        for &i in path {
            let column = level.get(i).ok_or_else(|| unexpected("a struct column", &DataType::Null))?;
            let s = column.as_struct_opt().ok_or_else(|| unexpected("a Struct", column.data_type()))?;
            present = NullBuffer::union(present.as_ref(), s.nulls());
            level = s.columns().to_vec();
        }
        let list = level.get(*last).ok_or_else(|| unexpected("a list column", &DataType::Null))?;
        present = NullBuffer::union(present.as_ref(), list.logical_nulls().as_ref());
        let (ranges, items): (Vec<(usize, usize)>, ArrayRef) = match list.data_type() {
            DataType::List(_) => {
                let l = list.as_list::<i32>();
                (l.offsets().windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect(), l.values().clone())
            }
            DataType::LargeList(_) => {
                let l = list.as_list::<i64>();
                (l.offsets().windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect(), l.values().clone())
            }
            found => return Err(unexpected("a List", found)),
        };
        if ranges.len() != rows {
            return Err(ArrowError::InvalidArgumentError("reshaping: a list of another length".into()));
        }
        let index = |i: usize| {
            u32::try_from(i).map_err(|_| ArrowError::InvalidArgumentError("exploding: more than 2^32 rows".into()))
        };
        let mut records = Vec::with_capacity(items.len().max(rows));
        let mut elements: Vec<Option<u32>> = Vec::with_capacity(items.len().max(rows));
        let mut unexploded = 0;
        // Whether the elements are one run of the items in order, `first..next` (no record
        // left a row of nulls, no list skipped items): then the items column is a slice.
        let (mut run, mut first, mut next) = (true, None, 0);
        for (row, &(start, end)) in ranges.iter().enumerate() {
            let there = present.as_ref().is_none_or(|p| p.is_valid(row));
            if !there || start == end {
                unexploded += 1;
                if self.outer {
                    records.push(index(row)?);
                    elements.push(None);
                    run = false;
                }
                continue;
            }
            run &= first.is_none() || next == start;
            first.get_or_insert(start);
            next = end;
            for item in start..end {
                records.push(index(row)?);
                elements.push(Some(index(item)?));
            }
        }
        let records = UInt32Array::from(records);
        let items = match (run, first) {
            (true, Some(first)) => Items::Run(items.slice(first, next - first)),
            (true, None) => Items::Run(items.slice(0, 0)),
            (false, _) => Items::Taken(&items, UInt32Array::from(elements)),
        };
        let columns = take_exploded(columns, &self.fields, &self.steps, &records, &items)?;
        Ok((columns, records, unexploded))
    }
}

/// The column names of a path, split at the dots outside brackets (an extension column,
/// `[pkg.ext]`, is one name).
fn path_names(path: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let (mut start, mut depth) = (0, 0usize);
    for (i, c) in path.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '.' if depth == 0 => {
                names.push(path[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    names.push(path[start..].trim());
    names
}

/// The columns `fields` with the list at `steps` replaced by its items (nullable where
/// `outer`).
fn exploded_fields(fields: &Fields, steps: &[usize], outer: bool) -> Fields {
    let Some((&first, rest)) = steps.split_first() else { return fields.clone() };
    fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            if i != first {
                return field.clone();
            }
            let data_type = match (field.data_type(), rest.is_empty()) {
                (DataType::Struct(children), false) => DataType::Struct(exploded_fields(children, rest, outer)),
                (DataType::List(item) | DataType::LargeList(item), true) => {
                    let nullable = outer || item.is_nullable();
                    return Arc::new(item.as_ref().clone().with_name(field.name()).with_nullable(nullable));
                }
                (other, _) => other.clone(),
            };
            Arc::new(Field::new(field.name(), data_type, field.is_nullable()))
        })
        .collect()
}

/// The exploded list's items, one per row.
enum Items<'a> {
    /// One run of the list's items, in order: a slice, no copy.
    Run(ArrayRef),
    /// The list's items taken at these indices (null: a record without an element).
    Taken(&'a ArrayRef, UInt32Array),
}

/// `columns` (of one struct level) taken at `records`, the list at `steps` replaced by
/// `items`, the structs on the way rebuilt around it.
fn take_exploded(
    columns: &[ArrayRef],
    fields: &Fields,
    steps: &[usize],
    records: &UInt32Array,
    items: &Items<'_>,
) -> Result<Vec<ArrayRef>, ArrowError> {
    let (&here, rest) = steps.split_first().ok_or_else(|| unexpected("a path", &DataType::Null))?;
    let mut out = Vec::with_capacity(columns.len());
    for (i, column) in columns.iter().enumerate() {
        if i != here {
            out.push(take_rows(column, records)?);
            continue;
        }
        if rest.is_empty() {
            out.push(match items {
                Items::Run(run) => run.clone(),
                Items::Taken(items, elements) => arrow_select::take::take(items, elements, None)?,
            });
            continue;
        }
        let s = column.as_struct_opt().ok_or_else(|| unexpected("a Struct", column.data_type()))?;
        let DataType::Struct(children) = fields.get(i).map(|f| f.data_type()).unwrap_or(&DataType::Null) else {
            return Err(unexpected("a struct field", column.data_type()));
        };
        let nulls = s.nulls().map(|n| take_nulls(n, records));
        let inner = take_exploded(s.columns(), children, rest, records, items)?;
        out.push(Arc::new(StructArray::try_new(children.clone(), inner, nulls)?));
    }
    Ok(out)
}

/// `column`'s rows at `rows` (every index valid), as arrow's `take` gives
/// them, with lists and maps (at any depth inside structs) taken as a whole: their items
/// by one `take` of the indices of every row's items, their offsets from the rows'
/// lengths. (Arrow's own `take` of a list extends a builder once per row: the repeated
/// record columns of an explode, of lists and maps of strings, cost more than the
/// conversion.)
fn take_rows(column: &ArrayRef, rows: &UInt32Array) -> Result<ArrayRef, ArrowError> {
    if let Some(r) = rows.values().iter().copied().max().filter(|&r| r as usize >= column.len()) {
        return Err(ArrowError::InvalidArgumentError(format!(
            "exploding: row {r} past the end of a column of {} rows",
            column.len()
        )));
    }
    let nulls = column.nulls().map(|n| take_nulls(n, rows));
    Ok(match column.data_type() {
        DataType::List(field) => take_list(column.as_list::<i32>(), field, rows, nulls)?,
        DataType::LargeList(field) => take_list(column.as_list::<i64>(), field, rows, nulls)?,
        DataType::Map(field, sorted) => {
            let map = column.as_map();
            let (offsets, items) = item_indices(map.offsets(), rows)?;
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = take_rows(&entries, &items)?;
            let entries = entries.as_struct_opt().ok_or_else(|| unexpected("map entries", entries.data_type()))?;
            Arc::new(MapArray::try_new(field.clone(), offsets, entries.clone(), nulls, *sorted)?)
        }
        DataType::Struct(fields) => {
            let s = column.as_struct();
            let children = s.columns().iter().map(|c| take_rows(c, rows)).collect::<Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new(fields.clone(), children, nulls)?)
        }
        _ => arrow_select::take::take(column, rows, None)?,
    })
}

/// A list column's rows at `rows`, as [`take_rows`] takes them, with the rows' `nulls`.
fn take_list<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    field: &FieldRef,
    rows: &UInt32Array,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef, ArrowError> {
    let (offsets, items) = item_indices(list.offsets(), rows)?;
    Ok(Arc::new(GenericListArray::<O>::try_new(field.clone(), offsets, take_rows(list.values(), &items)?, nulls)?))
}

/// `nulls` at `rows` (in range).
fn take_nulls(nulls: &NullBuffer, rows: &UInt32Array) -> NullBuffer {
    // 64 rows a word, not a bit at a time through a builder.
    let rows = rows.values();
    NullBuffer::new(BooleanBuffer::collect_bool(rows.len(), |i| nulls.is_valid(rows[i] as usize)))
}

/// The offsets of a list's `rows` (in range: [`take_rows`] checks them) and the indices of
/// their items, in order.
fn item_indices<O: OffsetSizeTrait>(
    offsets: &OffsetBuffer<O>,
    rows: &UInt32Array,
) -> Result<(OffsetBuffer<O>, UInt32Array), ArrowError> {
    let too_many = || ArrowError::InvalidArgumentError("exploding: more list items than the offsets hold".into());
    let range = |r: u32| offsets[r as usize].as_usize()..offsets[r as usize + 1].as_usize();
    // Sized first: one allocation of the exact size (a growing one faults its pages in
    // again at every doubling).
    let mut items = Vec::with_capacity(rows.values().iter().map(|&r| range(r).len()).sum());
    let mut out = Vec::with_capacity(rows.len() + 1);
    out.push(O::usize_as(0));
    for &r in rows.values() {
        let items_of_r = range(r);
        let first = u32::try_from(items_of_r.start).map_err(|_| too_many())?;
        let last = u32::try_from(items_of_r.end).map_err(|_| too_many())?;
        items.extend(first..last);
        out.push(O::from_usize(items.len()).ok_or_else(too_many)?);
    }
    Ok((OffsetBuffer::new(ScalarBuffer::from(out)), UInt32Array::from(items)))
}

/// Builds the plan from the canonical schema and the message descriptors.
struct Planner<'o> {
    options: &'o ArrowOptions,
    /// Whether a column holds an `Any` printed as JSON.
    any: std::cell::Cell<bool>,
}

impl Planner<'_> {
    /// The plan of message `msg`'s canonical columns `fields`.
    fn message(&self, msg: &MessageDescriptor, fields: &Fields) -> Result<StructPlan, ConvertError> {
        let mut children = Vec::with_capacity(fields.len());
        let mut out: Vec<FieldRef> = Vec::with_capacity(fields.len());
        for field in fields {
            let values = match msg.get_field_by_name(field.name()) {
                Some(fd) => message_of(&fd),
                None => extension_message(msg, field.name()),
            };
            let (node, data_type) = self.node(field.data_type(), values.as_ref())?;
            out.push(match node {
                Node::Keep => field.clone(),
                _ => new_field(field, &node, data_type),
            });
            children.push(node);
        }
        let mut cases = Vec::new();
        if self.options.oneof_case {
            for oneof in msg.oneofs().filter(|o| !o.is_synthetic()) {
                let names: Vec<String> = oneof.fields().map(|f| f.name().to_owned()).collect();
                let members: Vec<(usize, i32)> = fields
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| {
                        let key = names.iter().position(|n| n == f.name())?;
                        Some((i, i32::try_from(key).ok()?))
                    })
                    .collect();
                if members.is_empty() {
                    continue;
                }
                let name = format!("{}{CASE_SUFFIX}", oneof.name());
                if out.iter().any(|f| f.name() == &name) {
                    return Err(ConvertError::ColumnName {
                        column: name,
                        message: msg.full_name().to_owned(),
                        why: "the oneof's case column has the name of another column (ArrowOptions::oneof_case)".into(),
                    });
                }
                let wide = names.len() > i8::MAX as usize;
                let key = if wide { DataType::Int32 } else { DataType::Int8 };
                let data_type = DataType::Dictionary(Box::new(key), Box::new(DataType::Utf8));
                out.push(Arc::new(Field::new(name, data_type, true)));
                cases.push(Case { members, names: Arc::new(StringArray::from(names)), wide });
            }
        }
        Ok(StructPlan { children, cases, fields: out.into() })
    }

    /// The plan of a canonical column of type `data_type` (holding values of message type
    /// `msg`, if any: the struct's, the list items', the map values'), and its reshaped type.
    fn node(&self, data_type: &DataType, msg: Option<&MessageDescriptor>) -> Result<(Node, DataType), ConvertError> {
        let o = self.options;
        Ok(match data_type {
            DataType::Utf8 if o.large => (Node::LargeText, DataType::LargeUtf8),
            DataType::Binary if o.large => (Node::LargeText, DataType::LargeBinary),
            DataType::Dictionary(key, value)
                if o.enums == EnumColumns::String && **key == DataType::Int32 && **value == DataType::Utf8 =>
            {
                let large = o.large;
                (Node::EnumNames { large }, if large { DataType::LargeUtf8 } else { DataType::Utf8 })
            }
            DataType::List(item) => {
                let (node, item_type) = self.node(item.data_type(), msg)?;
                if matches!(node, Node::Keep) && !o.large {
                    return Ok((Node::Keep, data_type.clone()));
                }
                let field = new_field(item, &node, item_type);
                let large = o.large;
                let data_type = if large { DataType::LargeList(field.clone()) } else { DataType::List(field.clone()) };
                (Node::List { item: Box::new(node), field, large }, data_type)
            }
            DataType::Map(entries_field, sorted) => {
                let DataType::Struct(kv) = entries_field.data_type() else {
                    return Err(ConvertError::Schema(format!("a map's entries are not a struct: {entries_field}")));
                };
                let (Some(key_field), Some(value_field)) = (kv.first(), kv.get(1)) else {
                    return Err(ConvertError::Schema(format!("a map's entries lack a key or value: {entries_field}")));
                };
                let (key, key_type) = self.node(key_field.data_type(), None)?;
                let (value, value_type) = self.node(value_field.data_type(), msg)?;
                let entries_as_list = o.maps == MapColumns::Entries;
                if matches!((&key, &value), (Node::Keep, Node::Keep)) && !entries_as_list {
                    return Ok((Node::Keep, data_type.clone()));
                }
                let entries: Fields = vec![
                    Arc::new(Field::new(key_field.name(), key_type, key_field.is_nullable())),
                    new_field(value_field, &value, value_type),
                ]
                .into();
                let (shape, data_type) = if entries_as_list {
                    let item = Arc::new(Field::new("item", DataType::Struct(entries.clone()), false));
                    let large = o.large;
                    let t = if large { DataType::LargeList(item.clone()) } else { DataType::List(item.clone()) };
                    (MapShape::Entries { item, large }, t)
                } else {
                    let field = Arc::new(Field::new(
                        entries_field.name(),
                        DataType::Struct(entries.clone()),
                        entries_field.is_nullable(),
                    ));
                    (MapShape::Map(field.clone()), DataType::Map(field, *sorted))
                };
                (Node::Map(Box::new(MapPlan { key, value, entries, shape })), data_type)
            }
            DataType::Struct(fields) if o.any == AnyColumns::Json && msg.is_some_and(|m| m.full_name() == ANY) => {
                let at = |name: &str, types: [DataType; 2]| {
                    fields.iter().position(|f| f.name() == name && types.contains(f.data_type()))
                };
                let (Some(url), Some(value)) = (
                    at("type_url", [DataType::Utf8, DataType::Utf8View]),
                    at("value", [DataType::Binary, DataType::BinaryView]),
                ) else {
                    return Err(ConvertError::Schema(format!(
                        "any = json prints whole Any messages: select both type_url and value (the columns: {data_type})"
                    )));
                };
                self.any.set(true);
                let large = o.large;
                (Node::AnyJson { url, value, large }, if large { DataType::LargeUtf8 } else { DataType::Utf8 })
            }
            DataType::Struct(fields) => {
                let Some(msg) = msg else {
                    return Err(ConvertError::Schema(format!("a struct column without its message type: {data_type}")));
                };
                let plan = self.message(msg, fields)?;
                let unchanged = plan.cases.is_empty() && plan.children.iter().all(|c| matches!(c, Node::Keep));
                if unchanged {
                    return Ok((Node::Keep, data_type.clone()));
                }
                let data_type = DataType::Struct(plan.fields.clone());
                (Node::Struct(plan), data_type)
            }
            _ => (Node::Keep, data_type.clone()),
        })
    }
}

/// The message type of `fd`'s column values: its own message, or a map's value message.
fn message_of(fd: &FieldDescriptor) -> Option<MessageDescriptor> {
    let Kind::Message(m) = fd.kind() else { return None };
    if fd.is_map() {
        match m.map_entry_value_field().kind() {
            Kind::Message(v) => Some(v),
            _ => None,
        }
    } else {
        Some(m)
    }
}

/// The message type of extension column `name` (`[full.name]`, [`ArrowOptions::extensions`])
/// of `msg`, if it is a message extension.
fn extension_message(msg: &MessageDescriptor, name: &str) -> Option<MessageDescriptor> {
    let full = name.strip_prefix('[')?.strip_suffix(']')?;
    match msg.extensions().find(|e| e.full_name() == full)?.kind() {
        Kind::Message(m) => Some(m),
        _ => None,
    }
}

/// An error for a column that is not what the plan was made for (a bug).
fn unexpected(what: &str, found: &DataType) -> ArrowError {
    ArrowError::InvalidArgumentError(format!("reshaping: expected {what}, found {found}"))
}

/// Reshapes one canonical column.
fn apply(node: &Node, array: ArrayRef, cx: &mut Cx<'_>) -> Result<ArrayRef, ArrowError> {
    Ok(match node {
        Node::Keep => array,
        Node::AnyJson { url, value, large: false } => any_json::<i32>(&array, *url, *value, cx)?,
        Node::AnyJson { url, value, large: true } => any_json::<i64>(&array, *url, *value, cx)?,
        Node::LargeText => match array.data_type() {
            DataType::Utf8 => {
                let a = array.as_string::<i32>();
                Arc::new(GenericByteArray::<arrow_array::types::LargeUtf8Type>::try_new(
                    widen(a.offsets()),
                    a.values().clone(),
                    a.nulls().cloned(),
                )?)
            }
            DataType::Binary => {
                let a = array.as_binary::<i32>();
                Arc::new(GenericByteArray::<arrow_array::types::LargeBinaryType>::try_new(
                    widen(a.offsets()),
                    a.values().clone(),
                    a.nulls().cloned(),
                )?)
            }
            found => return Err(unexpected("Utf8 or Binary", found)),
        },
        Node::EnumNames { large } => enum_names(&array, *large)?,
        Node::List { item, field, large } => {
            let list = array.as_list_opt::<i32>().ok_or_else(|| unexpected("a List", array.data_type()))?;
            let values = apply(item, list.values().clone(), cx)?;
            let nulls = list.nulls().cloned();
            if *large {
                Arc::new(GenericListArray::<i64>::try_new(field.clone(), widen(list.offsets()), values, nulls)?)
            } else {
                Arc::new(GenericListArray::<i32>::try_new(field.clone(), list.offsets().clone(), values, nulls)?)
            }
        }
        Node::Map(plan) => {
            let map = array.as_map_opt().ok_or_else(|| unexpected("a Map", array.data_type()))?;
            let entries = map.entries();
            let key = apply(&plan.key, entries.column(0).clone(), cx)?;
            let value = apply(&plan.value, entries.column(1).clone(), cx)?;
            let entries = StructArray::try_new(plan.entries.clone(), vec![key, value], entries.nulls().cloned())?;
            let nulls = map.nulls().cloned();
            match &plan.shape {
                MapShape::Map(field) => {
                    Arc::new(MapArray::try_new(field.clone(), map.offsets().clone(), entries, nulls, false)?)
                }
                MapShape::Entries { item, large: false } => Arc::new(GenericListArray::<i32>::try_new(
                    item.clone(),
                    map.offsets().clone(),
                    Arc::new(entries),
                    nulls,
                )?),
                MapShape::Entries { item, large: true } => Arc::new(GenericListArray::<i64>::try_new(
                    item.clone(),
                    widen(map.offsets()),
                    Arc::new(entries),
                    nulls,
                )?),
            }
        }
        Node::Struct(plan) => {
            let s = array.as_struct_opt().ok_or_else(|| unexpected("a Struct", array.data_type()))?;
            let nulls = s.nulls().cloned();
            let columns = struct_columns(plan, s.columns().to_vec(), s.len(), nulls.as_ref(), cx)?;
            Arc::new(StructArray::try_new(plan.fields.clone(), columns, nulls)?)
        }
    })
}

/// A message's canonical columns (`len` rows; `nulls`: where the message is absent)
/// reshaped, its case columns after them.
fn struct_columns(
    plan: &StructPlan,
    columns: Vec<ArrayRef>,
    len: usize,
    nulls: Option<&NullBuffer>,
    cx: &mut Cx<'_>,
) -> Result<Vec<ArrayRef>, ArrowError> {
    if columns.len() != plan.children.len() {
        return Err(ArrowError::InvalidArgumentError(format!(
            "reshaping: {} columns for a plan of {}",
            columns.len(),
            plan.children.len()
        )));
    }
    // The cases read the canonical member columns' validity, before they are reshaped.
    let cases: Vec<ArrayRef> =
        plan.cases.iter().map(|case| case_column(case, &columns, len, nulls)).collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(plan.fields.len());
    for (node, column) in plan.children.iter().zip(columns) {
        out.push(apply(node, column, cx)?);
    }
    out.extend(cases);
    Ok(out)
}

/// A oneof's case column: the name of the member whose column is not null, null where none
/// is (or the message is absent).
fn case_column(
    case: &Case,
    columns: &[ArrayRef],
    len: usize,
    nulls: Option<&NullBuffer>,
) -> Result<ArrayRef, ArrowError> {
    let mut keys = vec![0i32; len];
    let mut set = vec![false; len];
    // In reverse, so that the first member set wins (a converted row has one at most).
    for &(i, key) in case.members.iter().rev() {
        let column =
            columns.get(i).ok_or_else(|| ArrowError::InvalidArgumentError("reshaping: no member column".into()))?;
        if column.len() != len {
            return Err(ArrowError::InvalidArgumentError("reshaping: a member column of another length".into()));
        }
        match column.logical_nulls() {
            None => {
                keys.iter_mut().for_each(|k| *k = key);
                set.iter_mut().for_each(|s| *s = true);
            }
            Some(valid) => {
                for row in valid.valid_indices() {
                    keys[row] = key;
                    set[row] = true;
                }
            }
        }
    }
    let mut validity = NullBuffer::from(set);
    if let Some(parent) = nulls {
        validity = NullBuffer::union(Some(&validity), Some(parent)).unwrap_or(validity);
    }
    let validity = (validity.null_count() > 0).then_some(validity);
    Ok(if case.wide {
        let keys = PrimitiveArray::<Int32Type>::try_new(ScalarBuffer::from(keys), validity)?;
        Arc::new(DictionaryArray::try_new(keys, case.names.clone())?)
    } else {
        // Narrow keys: fewer than 128 members (checked when planned).
        let narrow: Vec<i8> = keys.into_iter().map(|k| i8::try_from(k).unwrap_or(0)).collect();
        let keys = PrimitiveArray::<Int8Type>::try_new(ScalarBuffer::from(narrow), validity)?;
        Arc::new(DictionaryArray::try_new(keys, case.names.clone())?)
    })
}

/// An `Any` struct column's values as proto3 JSON text (null where the message is absent).
fn any_json<'a, O: OffsetSizeTrait>(
    array: &'a ArrayRef,
    url: usize,
    value: usize,
    cx: &mut Cx<'_>,
) -> Result<ArrayRef, ArrowError> {
    let s = array.as_struct_opt().ok_or_else(|| unexpected("an Any struct", array.data_type()))?;
    let (Some(urls), Some(values)) = (s.columns().get(url), s.columns().get(value)) else {
        return Err(unexpected("an Any struct", array.data_type()));
    };
    // Offsets or views, as the converter's strings are.
    let url_at: Box<dyn Fn(usize) -> &'a str + 'a> = match (urls.as_string_opt::<i32>(), urls.as_string_view_opt()) {
        (Some(u), _) => Box::new(|row| u.value(row)),
        (None, Some(u)) => Box::new(|row| u.value(row)),
        _ => return Err(unexpected("an Any's type_url as text", urls.data_type())),
    };
    let value_at: Box<dyn Fn(usize) -> &'a [u8] + 'a> =
        match (values.as_binary_opt::<i32>(), values.as_binary_view_opt()) {
            (Some(v), _) => Box::new(|row| v.value(row)),
            (None, Some(v)) => Box::new(|row| v.value(row)),
            _ => return Err(unexpected("an Any's value as bytes", values.data_type())),
        };
    let printer = cx.any.ok_or_else(|| ArrowError::InvalidArgumentError("reshaping: no Any printer".into()))?;
    let arena = cx.arena.get_or_insert_with(Arena::default);
    let mut out = GenericStringBuilder::<O>::with_capacity(s.len(), s.len() * 64);
    let mut json = Vec::new();
    for row in 0..s.len() {
        if s.is_null(row) {
            out.append_null();
            continue;
        }
        json.clear();
        if !printer.print(url_at(row), value_at(row), arena, &mut json) {
            cx.unresolved_any += 1;
        }
        let text = std::str::from_utf8(&json)
            .map_err(|_| ArrowError::InvalidArgumentError("reshaping: the JSON writer wrote invalid UTF-8".into()))?;
        out.append_value(text);
    }
    Ok(Arc::new(out.finish()))
}

/// 32-bit offsets as 64-bit ones.
fn widen(offsets: &OffsetBuffer<i32>) -> OffsetBuffer<i64> {
    let wide: Vec<i64> = offsets.iter().map(|&o| i64::from(o)).collect();
    // Widening keeps them non-negative and ascending.
    OffsetBuffer::new(ScalarBuffer::from(wide))
}

/// An enum dictionary column's names as plain text: the names gathered by the keys in one
/// typed pass (arrow's `take`: the offsets, then the bytes; the keys' nulls become the
/// column's), after every valid key is checked against the dictionary.
fn enum_names(array: &ArrayRef, large: bool) -> Result<ArrayRef, ArrowError> {
    let dict = array
        .as_dictionary_opt::<Int32Type>()
        .ok_or_else(|| unexpected("an enum dictionary (Int32 keys)", array.data_type()))?;
    let names = dict
        .values()
        .as_string_opt::<i32>()
        .ok_or_else(|| unexpected("enum names (Utf8)", dict.values().data_type()))?;
    let keys = dict.keys();
    let in_range = |k: i32| usize::try_from(k).is_ok_and(|k| k < names.len());
    let bad = match keys.nulls().filter(|n| n.null_count() > 0) {
        None => keys.values().iter().copied().find(|&k| !in_range(k)),
        Some(nulls) => nulls.valid_indices().map(|i| keys.values()[i]).find(|&k| !in_range(k)),
    };
    if let Some(k) = bad {
        return Err(ArrowError::InvalidArgumentError(format!("reshaping: enum dictionary key {k} out of range")));
    }
    if large {
        let names = GenericByteArray::<arrow_array::types::LargeUtf8Type>::try_new(
            widen(names.offsets()),
            names.values().clone(),
            names.nulls().cloned(),
        )?;
        arrow_select::take::take(&names, keys, None)
    } else {
        arrow_select::take::take(names, keys, None)
    }
}

/// The columns of `fields` with every struct replaced by its children, named by path.
fn flat_fields(fields: &Fields) -> Fields {
    let mut out = Vec::new();
    for field in fields {
        flat_field(field, "", false, &mut out);
    }
    out.into()
}

fn flat_field(field: &FieldRef, prefix: &str, parent_nullable: bool, out: &mut Vec<FieldRef>) {
    let name = if prefix.is_empty() { field.name().clone() } else { format!("{prefix}.{}", field.name()) };
    let nullable = field.is_nullable() || parent_nullable;
    match field.data_type() {
        DataType::Struct(children) => {
            for child in children {
                flat_field(child, &name, nullable, out);
            }
        }
        _ => out.push(Arc::new(field.as_ref().clone().with_name(name).with_nullable(nullable))),
    }
}

/// Appends `array` (of `field`) flattened as [`flat_fields`] flattens its field: a
/// struct's children with the struct's nulls (and its parents', `parent`) merged in.
fn flatten_into(
    field: &FieldRef,
    array: ArrayRef,
    parent: Option<&NullBuffer>,
    out: &mut Vec<ArrayRef>,
) -> Result<(), ArrowError> {
    match field.data_type() {
        DataType::Struct(children) => {
            let s = array.as_struct_opt().ok_or_else(|| unexpected("a Struct", array.data_type()))?;
            let nulls = NullBuffer::union(parent, s.nulls());
            for (child, column) in children.iter().zip(s.columns()) {
                flatten_into(child, column.clone(), nulls.as_ref(), out)?;
            }
        }
        _ => out.push(match parent {
            None => array,
            Some(parent) => {
                let merged = NullBuffer::union(Some(parent), array.nulls());
                make_array(array.to_data().into_builder().nulls(merged).build()?)
            }
        }),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BooleanArray, Int32Array, ListArray};

    fn options(set: &[(&str, &str)]) -> ArrowOptions {
        let mut o = ArrowOptions::default();
        for (k, v) in set {
            o.set(k, v).unwrap();
        }
        o
    }

    fn schema() -> Schema {
        Schema::from_proto_source(
            "t.proto",
            "syntax = \"proto3\"; message In { string s = 1; } message T { In a = 1; repeated string l = 2; }",
        )
        .unwrap()
    }

    fn message() -> MessageDescriptor {
        schema().pool().get_message_by_name("T").unwrap()
    }

    /// `large` shares the value buffers of strings and the items of lists; `flatten`
    /// shares the children and merges the parents' nulls into them.
    #[test]
    fn buffers_are_shared_and_nulls_merged() {
        let s: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), Some("yy"), None]));
        let in_fields = Fields::from(vec![Field::new("s", DataType::Utf8, true)]);
        let a: ArrayRef = Arc::new(StructArray::new(
            in_fields.clone(),
            vec![s.clone()],
            Some(NullBuffer::from(vec![true, false, true])),
        ));
        let item = Arc::new(Field::new("item", DataType::Utf8, false));
        let l: ArrayRef = Arc::new(ListArray::new(
            item.clone(),
            OffsetBuffer::from_lengths([1, 0, 0]),
            Arc::new(StringArray::from(vec!["i"])),
            None,
        ));
        let fields = Fields::from(vec![
            Field::new("a", DataType::Struct(in_fields), true),
            Field::new("l", DataType::List(item), false),
        ]);
        let msg = message();

        let large = Reshape::new(&schema(), &msg, &fields, &options(&[("large", "true")])).unwrap();
        let out = large.apply(vec![a.clone(), l.clone()], 3).unwrap().columns;
        let s_large = out[0].as_struct().column(0).as_string::<i64>().clone();
        assert_eq!(s_large.values().as_ptr(), s.as_string::<i32>().values().as_ptr());
        assert_eq!(s_large.iter().collect::<Vec<_>>(), [Some("x"), Some("yy"), None]);
        assert_eq!(out[1].data_type(), large.fields()[1].data_type());

        let flat = Reshape::new(&schema(), &msg, &fields, &options(&[("flatten", "true")])).unwrap();
        assert_eq!(flat.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["a.s", "l"]);
        let out = flat.apply(vec![a, l.clone()], 3).unwrap().columns;
        let s_flat = out[0].as_string::<i32>();
        assert_eq!(s_flat.iter().collect::<Vec<_>>(), [Some("x"), None, None]);
        assert_eq!(s_flat.values().as_ptr(), s.as_string::<i32>().values().as_ptr());
        assert!(Arc::ptr_eq(&out[1], &l), "a column without structs is kept as it is");
    }

    /// A column of the wrong type (never made by the paths) is an error, not a panic.
    #[test]
    fn unexpected_columns_are_errors() {
        let in_fields = Fields::from(vec![Field::new("s", DataType::Utf8, true)]);
        let item = Arc::new(Field::new("item", DataType::Utf8, false));
        let fields = Fields::from(vec![
            Field::new("a", DataType::Struct(in_fields), true),
            Field::new("l", DataType::List(item), false),
        ]);
        let r =
            Reshape::new(&schema(), &message(), &fields, &options(&[("large", "true"), ("flatten", "true")])).unwrap();
        let wrong: Vec<ArrayRef> = vec![Arc::new(Int32Array::from(vec![1])), Arc::new(BooleanArray::from(vec![true]))];
        assert!(r.apply(wrong, 1).is_err());
        assert!(r.apply(vec![], 0).is_err());
    }

    /// `take_rows` gives arrow's `take` on lists, large lists, maps and structs holding
    /// them, with nulls, empty lists and a list sliced off its offsets' start.
    #[test]
    fn take_rows_is_arrows_take() {
        use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
        use arrow_array::LargeListArray;
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            None,
            Some(vec![]),
            Some(vec![Some(3), None, Some(4)]),
            Some(vec![Some(5)]),
        ]);
        let large = LargeListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            None,
            Some(vec![Some(7)]),
            Some(vec![Some(8), Some(9)]),
            Some(vec![]),
            Some(vec![Some(10)]),
        ]);
        let mut maps = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
        for row in 0..6 {
            for e in 0..row % 3 {
                maps.keys().append_value(format!("k{row}{e}"));
                if e == 1 {
                    maps.values().append_null();
                } else {
                    maps.values().append_value(format!("v{row}"));
                }
            }
            maps.append(row != 4).unwrap();
        }
        // Sliced: its offsets start past 0.
        let map: ArrayRef = Arc::new(maps.finish().slice(1, 5));
        let mut nested = ListBuilder::new(ListBuilder::new(Int32Builder::new()));
        for row in 0..5 {
            for inner in 0..row % 3 {
                nested.values().values().append_value(row * 10 + inner);
                nested.values().append(true);
            }
            nested.append(row != 2);
        }
        let nested: ArrayRef = Arc::new(nested.finish());
        let inside = StructArray::try_new(
            Fields::from(vec![
                Field::new("l", list.data_type().clone(), true),
                Field::new("n", nested.data_type().clone(), true),
            ]),
            vec![Arc::new(list.clone()), nested.clone()],
            Some(NullBuffer::from(vec![true, true, false, true, true])),
        )
        .unwrap();
        let rows = UInt32Array::from(vec![0, 0, 1, 3, 3, 3, 2, 4, 1, 0]);
        let columns: Vec<ArrayRef> = vec![Arc::new(list), Arc::new(large), map, nested, Arc::new(inside)];
        for column in &columns {
            let want = arrow_select::take::take(column, &rows, None).unwrap();
            let got = take_rows(column, &rows).unwrap();
            assert_eq!(got.to_data(), want.to_data(), "{}", column.data_type());
        }
        let past = UInt32Array::from(vec![0, 9]);
        assert!(take_rows(&columns[0], &past).is_err(), "a row past the end is an error, not a panic");
    }
}
