//! The way back: record batches into protobuf messages ([`Encoder`]), the converter's mapping inverted.
//!
//! An encoder is made for one message type and reads a batch's columns by name: a column
//! named for a field gives that field's values, a struct column a message's fields, a list
//! a repeated field, a map (or a list of `key`/`value` structs) a map field. It takes the
//! shapes the [`Converter`](crate::Converter) makes under any of its options, and the
//! shapes other tools and engines make of the same data: every Arrow integer type for an
//! integer field (each value checked against the field's range), `Utf8`, `LargeUtf8` and
//! `Utf8View` for strings (their binary kinds for `bytes`), `List` and `LargeList`, enums as
//! dictionaries or columns of names, or as numbers; timestamps and durations of any unit;
//! a Timestamp, Duration or wrapper field as the native column or as the struct it is.
//! Columns named by a path (`a.b.c`, as [`ArrowOptions::flatten`] names them) are regrouped
//! into the structs they were flattened from before anything else (a regrouped message is
//! absent in the rows where all its columns are null); a `<oneof>_case` column
//! ([`ArrowOptions::oneof_case`]) is accepted and not read: the member columns say which
//! member is set. A message field's column of text (`Utf8`, `LargeUtf8`, `Utf8View`) is
//! its proto3 JSON ([`AnyColumns::Json`](crate::AnyColumns::Json)), parsed by protojit's
//! JSON parser (an `Any` in the converter's form of an unresolved type,
//! `{"@type":"<url>","value":"<base64>"}`, from its bytes); JSON that does not parse is
//! [`EncodeError::Json`]. Proto3 JSON holds a `NullValue` field as `null` whatever its
//! number, so an undeclared number there comes back as `NULL_VALUE`.
//!
//! Messages come out canonical, as protoc's and prost's encoders write them: fields by
//! number; a field with presence written when its value is not null (even at its default),
//! one without presence (proto3, editions `IMPLICIT`) only when its value is not the
//! default; repeated scalars packed where the field is; groups as groups; map entries with
//! both key and value. A null list or map is empty; a null item of a list has no protobuf
//! form and is an error.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, TimeUnit};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use protojit::Schema;
use protojit_arena::wire::{
    patch_length, reserve_length, varint_len, write_varint, zigzag_encode32, zigzag_encode64, EGROUP, FIXED32, FIXED64,
    LEN, SGROUP, VARINT,
};
use protojit_arena::{FieldPresence, LayoutIndex, Layouts};

use crate::error::EncodeError;
use crate::framing::{Framing, FramingCheck};
use crate::options::ArrowOptions;
use crate::wkt::{wkt, Wkt};

/// Turns record batches into protobuf messages of one type (see the module docs).
///
/// ```
/// use protojit::Schema;
/// use protojit_arrow::{ArrowOptions, Converter, Encoder};
///
/// let schema = Schema::from_proto_source("ev.proto", r#"
///     syntax = "proto3";
///     message Event { string id = 1; int64 at = 2; repeated string tags = 3; }
/// "#)?;
/// let records: [&[u8]; 2] = [b"\x0a\x02e1\x10\x07\x1a\x01a", b"\x0a\x02e2"];
/// let batch = Converter::new(&schema, "Event", &ArrowOptions::default())?.convert(records)?;
/// let encoder = Encoder::new(&schema, "Event", &ArrowOptions::default())?;
/// let messages = encoder.encode(&batch)?;
/// assert_eq!(messages.value(0), records[0]);
/// assert_eq!(messages.value(1), records[1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Encoder {
    root: MessageDescriptor,
    layouts: Arc<Layouts>,
    /// Schema-registry framing: the header writer and the schema-id column's name.
    framing: Option<(FramingCheck, String)>,
    max_recursion: usize,
    ignore_extra: bool,
    allow_missing: bool,
}

impl Encoder {
    /// An encoder of `message` (full name, or a unique short name) from `schema`, for the
    /// columns a [`Converter`](crate::Converter) made with `options` (or any other shape the
    /// module docs list). Of the options, the framing and the recursion cut matter:
    /// schema-registry framing writes each record's header, from the schema-id column
    /// (without one the ids are unknown: [`EncodeError::NotInvertible`]); fields cut at
    /// `max_recursion` may be missing from the batch. [`ArrowOptions::explode`] cannot be
    /// inverted (its rows are elements, not records): [`EncodeError::NotInvertible`].
    pub fn new(schema: &Schema, message: &str, options: &ArrowOptions) -> Result<Encoder, EncodeError> {
        if options.extensions {
            return Err(EncodeError::NotInvertible {
                what: "extensions".into(),
                why: "extension columns are not encoded back: encode a batch converted without them".into(),
            });
        }
        if let Some(explode) = &options.explode {
            let option = if explode.outer { "explode_outer" } else { "explode" };
            return Err(EncodeError::NotInvertible {
                what: format!("{option} = \"{}\"", explode.path),
                why: "its rows are a record's elements, not records: encode a batch converted without it".into(),
            });
        }
        let full = schema.resolve_type(message)?;
        let root = schema.pool().get_message_by_name(&full).expect("resolved names exist");
        let framing = match &options.framing {
            Framing::Bare => None,
            Framing::SchemaRegistry { schema_id_column: Some(column) } => {
                Some((FramingCheck::new(&root, true), column.clone()))
            }
            Framing::SchemaRegistry { schema_id_column: None } => {
                return Err(EncodeError::NotInvertible {
                    what: "schema-registry framing".into(),
                    why: "the records' schema ids are not in the table: name the column that holds them \
                          (schema_id_column)"
                        .into(),
                })
            }
        };
        Ok(Encoder {
            root,
            layouts: schema.layouts().clone(),
            framing,
            max_recursion: options.max_recursion.max(1),
            ignore_extra: false,
            allow_missing: options.select.is_some(),
        })
    }

    /// Columns that name no field are skipped instead of being an error.
    pub fn ignore_extra_columns(mut self, ignore: bool) -> Encoder {
        self.ignore_extra = ignore;
        self
    }

    /// Fields without a column are left out of every message, even those a converter
    /// always gives a column (fields without presence, repeated fields, maps), instead of
    /// being an error; a missing `required` field is an error still. (On by default for an
    /// encoder made with [`ArrowOptions::select`]: its tables hold a projection.)
    pub fn allow_missing_columns(mut self, allow: bool) -> Encoder {
        self.allow_missing = allow;
        self
    }

    /// The full name of the message type.
    pub fn message_type(&self) -> &str {
        self.root.full_name()
    }

    /// One message per row of `batch`.
    pub fn encode(&self, batch: &RecordBatch) -> Result<BinaryArray, EncodeError> {
        let plan = self.plan(batch)?;
        let mut values = Vec::new();
        let mut offsets = Vec::with_capacity(batch.num_rows() + 1);
        offsets.push(0i32);
        for row in 0..batch.num_rows() {
            if row % BLOCK_ROWS == 0 {
                std::hint::black_box(plan.message.touch(row..(row + BLOCK_ROWS).min(batch.num_rows())));
                if row == BLOCK_ROWS {
                    // The rest of the batch at the first block's bytes per row (an eighth
                    // spare): a copy or two as the messages grow, not one per doubling. A
                    // hint only: never past what the offsets can address (more is an error
                    // anyway), and a reservation the allocator refuses is let go.
                    let rest = (values.len() / BLOCK_ROWS).saturating_mul(batch.num_rows() - row);
                    let room = (i32::MAX as usize).saturating_sub(values.len());
                    let _ = values.try_reserve(rest.saturating_add(rest / 8).min(room));
                }
            }
            plan.write_record(row, &mut values)?;
            offsets.push(i32::try_from(values.len()).map_err(|_| EncodeError::TooLarge { row })?);
        }
        Ok(BinaryArray::new(OffsetBuffer::new(offsets.into()), values.into(), None))
    }

    /// Appends one varint-delimited message per row of `batch` to `out` (the stream
    /// `protojit decode --delimited` and the converter's
    /// [`convert_delimited`](crate::Converter::convert_delimited) read). On an error, `out`
    /// keeps the records of the rows before the bad one.
    pub fn encode_delimited(&self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let plan = self.plan(batch)?;
        for row in 0..batch.num_rows() {
            if row % BLOCK_ROWS == 0 {
                std::hint::black_box(plan.message.touch(row..(row + BLOCK_ROWS).min(batch.num_rows())));
            }
            let mark = reserve_length(out);
            if let Err(e) = plan.write_record(row, out) {
                out.truncate(mark);
                return Err(e);
            }
            patch_length(out, mark);
        }
        Ok(())
    }

    /// The batch's columns matched to the message's fields.
    fn plan<'a>(&'a self, batch: &'a RecordBatch) -> Result<RecordPlan<'a>, EncodeError> {
        let schema = batch.schema_ref();
        let mut header = None;
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        for (field, column) in schema.fields().iter().zip(batch.columns()) {
            match &self.framing {
                Some((check, name)) if field.name() == name => {
                    let ids = Ints::of(column)
                        .ok_or_else(|| EncodeError::column_type(name, "the schema ids (Int32)", column.data_type()))?;
                    header = Some((check, ids, column.nulls(), name.as_str()));
                }
                _ => {
                    fields.push(field.clone());
                    columns.push(column.clone());
                }
            }
        }
        if let (Some((_, name)), None) = (&self.framing, &header) {
            return Err(EncodeError::MissingColumn {
                column: name.clone(),
                message: self.root.full_name().to_owned(),
                why: "it holds the records' schema ids (schema-registry framing)".into(),
            });
        }
        // Flattened columns (`a.b.c`, ArrowOptions::flatten) become the structs they came from.
        let (fields, columns) = regroup(fields, columns)?;
        let mut planner = Planner { encoder: self, stack: Vec::new() };
        let message = planner.message(&self.root, &Fields::from(fields), columns, "")?;
        Ok(RecordPlan { message, header })
    }
}

/// What one batch's rows are written from.
struct RecordPlan<'a> {
    message: MessagePlan,
    /// Schema-registry framing: the header writer, the ids, their nulls, the column's name.
    header: Option<(&'a FramingCheck, Ints, Option<&'a NullBuffer>, &'a str)>,
}

impl RecordPlan<'_> {
    fn write_record(&self, row: usize, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if let Some((check, ids, nulls, column)) = &self.header {
            if is_null(*nulls, row) {
                return Err(EncodeError::NullInRequired { column: (*column).to_owned(), row });
            }
            let id = ids.get(row);
            let id = i32::try_from(id).map_err(|_| EncodeError::OutOfRange {
                column: (*column).to_owned(),
                row,
                value: id.to_string(),
                kind: "a schema id (int32)".into(),
            })?;
            check.write_header(id, out);
        }
        self.message.write(row, row, out)
    }
}

/// Builds a batch's plan, following the mapping's recursion cut.
struct Planner<'e> {
    encoder: &'e Encoder,
    /// Message types on the current path.
    stack: Vec<String>,
}

impl Planner<'_> {
    /// The plan of message `desc` from `columns` (named by `fields`), at `path`.
    fn message(
        &mut self,
        desc: &MessageDescriptor,
        fields: &Fields,
        columns: Vec<ArrayRef>,
        path: &str,
    ) -> Result<MessagePlan, EncodeError> {
        self.stack.push(desc.full_name().to_owned());
        let mut plans = Vec::new();
        let mut seen = Vec::new();
        for (field, column) in fields.iter().zip(columns) {
            let column_path = join(path, field.name());
            let Some(fd) = desc.get_field_by_name(field.name()) else {
                if self.encoder.ignore_extra || is_case_column(desc, field.name()) {
                    continue;
                }
                return Err(EncodeError::ExtraColumn { column: column_path, message: desc.full_name().to_owned() });
            };
            seen.push(fd.number());
            if let Some(plan) = self.field(&fd, &column, &column_path)? {
                plans.push(plan);
            }
        }
        for fd in desc.fields() {
            if seen.contains(&fd.number()) {
                continue;
            }
            let features = self.encoder.layouts.features().field(&fd).copied();
            let required = features.is_some_and(|f| f.presence == FieldPresence::LegacyRequired);
            let without_presence = features.is_some_and(|f| f.presence == FieldPresence::Implicit);
            let why = if required {
                "the field is required"
            } else if without_presence && !self.encoder.allow_missing && !self.cut(&fd) {
                "a converter always gives this field a column (it has no presence, or is repeated or a map); \
                 add it, or allow missing columns to leave the field out"
            } else {
                continue;
            };
            self.stack.pop();
            return Err(EncodeError::MissingColumn {
                column: join(path, fd.name()),
                message: desc.full_name().to_owned(),
                why: why.into(),
            });
        }
        self.stack.pop();
        plans.sort_by_key(|p| p.number);
        // A column that writes nothing in any row of this batch (all null, or all the
        // default of a field without presence: proto3's unused fields) is left out of the
        // plan, so that no row pays for reading it.
        plans.retain(|p| !p.writes_nothing());
        // Oneofs with two or more members among the columns: at most one may be set.
        let mut oneofs: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, p) in plans.iter().enumerate() {
            let Some(oneof) = desc.get_field(p.number).and_then(|fd| fd.containing_oneof()) else { continue };
            if oneof.is_synthetic() {
                continue;
            }
            match oneofs.iter_mut().find(|(name, _)| name == oneof.name()) {
                Some((_, members)) => members.push(i),
                None => oneofs.push((oneof.name().to_owned(), vec![i])),
            }
        }
        oneofs.retain(|(_, members)| members.len() > 1);
        Ok(MessagePlan { fields: plans, oneofs })
    }

    /// Whether the mapping's recursion cut leaves `fd` out here (so its column may be
    /// missing).
    fn cut(&self, fd: &FieldDescriptor) -> bool {
        let Kind::Message(m) = fd.kind() else { return false };
        let m = if fd.is_map() { m.map_entry_value_field().kind() } else { Kind::Message(m) };
        let Kind::Message(m) = m else { return false };
        self.stack.iter().filter(|t| *t == m.full_name()).count() >= self.encoder.max_recursion
    }

    /// The plan of field `fd` from `column`; `None` for a column of nulls only (`Null`).
    fn field(&mut self, fd: &FieldDescriptor, column: &ArrayRef, path: &str) -> Result<Option<FieldPlan>, EncodeError> {
        let features = self.encoder.layouts.features().field(fd).copied();
        let required = features.is_some_and(|f| f.presence == FieldPresence::LegacyRequired);
        let nulls = column.logical_nulls();
        if column.data_type() == &DataType::Null {
            if required && !column.is_empty() {
                return Err(EncodeError::NullInRequired { column: path.to_owned(), row: 0 });
            }
            return Ok(None);
        }
        let shape = if fd.is_map() {
            let Kind::Message(entry) = fd.kind() else { unreachable!("map fields hold entries") };
            let (offsets, entries) = match column.data_type() {
                DataType::Map(..) => {
                    let map = column.as_map();
                    (Offsets::I32(map.offsets().clone()), map.entries().clone())
                }
                DataType::List(item) | DataType::LargeList(item) if matches!(item.data_type(), DataType::Struct(f) if f.len() == 2) =>
                {
                    let (offsets, values) = list_parts(column);
                    (offsets, values.as_struct().clone())
                }
                found => return Err(EncodeError::column_type(path, "a map (or a list of key/value structs)", found)),
            };
            let key = self.value(&entry.map_entry_key_field(), entries.column(0), &format!("{path}.key"))?;
            let value_path = format!("{path}.value");
            let value = self.value(&entry.map_entry_value_field(), entries.column(1), &value_path)?;
            Shape::Map { offsets, entry: Box::new((key, value)), value_nulls: entries.column(1).logical_nulls() }
        } else if fd.is_list() {
            if !matches!(column.data_type(), DataType::List(_) | DataType::LargeList(_)) {
                return Err(EncodeError::column_type(
                    path,
                    &format!("a list of {}", kind_name(fd)),
                    column.data_type(),
                ));
            }
            let (offsets, items) = list_parts(column);
            let item = self.value(fd, &items, path)?;
            let packed = features.map_or_else(|| fd.is_packed(), |f| f.packed) && item.packable();
            Shape::list(offsets, item, items.logical_nulls(), packed)
        } else {
            let implicit = features.is_some_and(|f| f.presence == FieldPresence::Implicit);
            Shape::one(self.value(fd, column, path)?, implicit)
        };
        Ok(Some(FieldPlan { number: fd.number(), path: path.to_owned(), nulls, required, shape }))
    }

    /// The reader of one value of `fd`'s type (a singular field's, a list item's, a map
    /// key's or value's) from `column`.
    fn value(&mut self, fd: &FieldDescriptor, column: &ArrayRef, path: &str) -> Result<Value, EncodeError> {
        let found = column.data_type();
        let mismatch = || EncodeError::column_type(path, &kind_name(fd), found);
        let kind = fd.kind();
        let value = match &kind {
            Kind::Bool => match found {
                DataType::Boolean => Value::Bool(column.as_boolean().clone()),
                _ => return Err(mismatch()),
            },
            Kind::Float | Kind::Double => {
                let floats = match found {
                    DataType::Float32 => Floats::F32(column.as_primitive::<Float32Type>().values().clone()),
                    DataType::Float64 => Floats::F64(column.as_primitive::<Float64Type>().values().clone()),
                    _ => return Err(mismatch()),
                };
                Value::Float { floats, double: matches!(kind, Kind::Double) }
            }
            Kind::String | Kind::Bytes => {
                let texts = Texts::of(column, matches!(kind, Kind::Bytes)).ok_or_else(mismatch)?;
                Value::Bytes(texts)
            }
            Kind::Enum(e) => {
                let features = self.encoder.layouts.features().field(fd).copied();
                let closed = features.is_some_and(|f| f.closed_enum).then(|| {
                    let mut numbers: Vec<i32> = e.values().map(|v| v.number()).collect();
                    numbers.sort_unstable();
                    numbers
                });
                let resolve = |name: &str| -> Option<i32> {
                    e.get_value_by_name(name).map(|v| v.number()).or_else(|| {
                        // Undeclared numbers of open enums convert as their decimal text.
                        name.parse::<i32>().ok().filter(|n| closed.as_ref().is_none_or(|c| c.binary_search(n).is_ok()))
                    })
                };
                let numbers = match found {
                    DataType::Dictionary(_, values) if is_text(values) => {
                        let dict = column.as_any_dictionary();
                        let names = Texts::of(dict.values(), false).ok_or_else(mismatch)?;
                        let numbers = (0..dict.values().len())
                            .map(|i| std::str::from_utf8(names.get(i)).ok().and_then(resolve))
                            .collect();
                        let keys = Ints::of(dict.keys()).ok_or_else(mismatch)?;
                        EnumNumbers::Dictionary { keys, names, numbers }
                    }
                    t if is_text(t) => {
                        let names = Texts::of(column, false).ok_or_else(mismatch)?;
                        let by_name = e.values().map(|v| (v.name().as_bytes().into(), v.number())).collect();
                        EnumNumbers::Names { names, by_name }
                    }
                    _ => EnumNumbers::Numbers(Ints::of(column).ok_or_else(mismatch)?),
                };
                Value::Enum { numbers, closed, name: e.full_name().to_owned() }
            }
            Kind::Message(m) => return self.message_value(fd, m, column, path),
            _ => {
                let int = IntKind::of(&kind).expect("every other kind is an integer");
                Value::Int { ints: Ints::of(column).ok_or_else(mismatch)?, int }
            }
        };
        Ok(value)
    }

    /// A message value: a struct of its fields, a native well-known-type column, or the
    /// marker of a message without columns.
    fn message_value(
        &mut self,
        fd: &FieldDescriptor,
        m: &MessageDescriptor,
        column: &ArrayRef,
        path: &str,
    ) -> Result<Value, EncodeError> {
        let features = self.encoder.layouts.features().field(fd).copied();
        let group = features.map_or_else(|| fd.is_group(), |f| f.delimited);
        let found = column.data_type();
        match (found, wkt(m)) {
            (DataType::Struct(fields), _) => {
                let columns = column.as_struct().columns().to_vec();
                let plan = self.message(m, fields, columns, path)?;
                Ok(Value::Message { plan: Box::new(plan), group })
            }
            (DataType::Timestamp(unit, _), Some(Wkt::Timestamp)) => {
                Ok(Value::Time { nanos: time_values(column, *unit), unit: *unit, timestamp: true })
            }
            (DataType::Duration(unit), Some(Wkt::Duration)) => {
                Ok(Value::Time { nanos: time_values(column, *unit), unit: *unit, timestamp: false })
            }
            (_, Some(Wkt::Wrapper)) => {
                let inner = m.get_field(1).expect("wrappers have field 1");
                let value = self.value(&inner, column, path)?;
                Ok(Value::Wrapper(Box::new(value)))
            }
            // (After the wrappers: a BoolValue's column is Boolean too.)
            (DataType::Boolean, _) => Ok(Value::Marker(column.as_boolean().clone(), group)),
            // A message as proto3 JSON text (`any = json`), parsed back through the schema.
            (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, _) => {
                let texts = Texts::of(column.as_ref(), false).expect("a text column");
                let root = self.encoder.layouts.index_of(m.full_name()).expect("every message type has a layout");
                let any = m.full_name() == crate::reshape::ANY;
                Ok(Value::Json(Box::new(JsonValue { texts, layouts: self.encoder.layouts.clone(), root, any, group })))
            }
            _ => Err(EncodeError::column_type(path, &format!("a struct of {}", m.full_name()), found)),
        }
    }
}

/// Whether `name` is the case column of one of `desc`'s oneofs (`<oneof>_case`,
/// [`ArrowOptions::oneof_case`]): accepted and not read, the members say which is set.
fn is_case_column(desc: &MessageDescriptor, name: &str) -> bool {
    name.strip_suffix(crate::reshape::CASE_SUFFIX)
        .is_some_and(|oneof| desc.oneofs().any(|o| !o.is_synthetic() && o.name() == oneof))
}

/// A batch's columns with those named by a path (`a.b.c`, as
/// [`ArrowOptions::flatten`](crate::ArrowOptions::flatten) names them) regrouped into the
/// struct columns they were flattened from, in the place of their first column. A
/// regrouped struct is null in the rows where all its columns are (so a message that was
/// present with every column null comes back absent). A dotted column whose first part is
/// also a column of its own is left as it is (and named as an extra column by the
/// planner).
fn regroup(fields: Vec<FieldRef>, columns: Vec<ArrayRef>) -> Result<(Vec<FieldRef>, Vec<ArrayRef>), EncodeError> {
    if !fields.iter().any(|f| f.name().contains('.')) {
        return Ok((fields, columns));
    }
    let plain: Vec<String> = fields.iter().filter(|f| !f.name().contains('.')).map(|f| f.name().clone()).collect();
    let mut groups: Vec<Group> = Vec::new();
    for (field, column) in fields.into_iter().zip(columns) {
        match field.name().split_once('.') {
            Some((head, rest)) if !plain.iter().any(|p| p == head) => {
                let i = match groups.iter().position(|g| matches!(g, Group::Nested(n, _) if n == head)) {
                    Some(i) => i,
                    None => {
                        groups.push(Group::Nested(head.to_owned(), Vec::new()));
                        groups.len() - 1
                    }
                };
                if let Group::Nested(_, children) = &mut groups[i] {
                    let renamed = Arc::new(Field::new(rest, field.data_type().clone(), true));
                    children.push((renamed, column));
                }
            }
            _ => groups.push(Group::Column(field, column)),
        }
    }
    let mut out_fields = Vec::with_capacity(groups.len());
    let mut out_columns = Vec::with_capacity(groups.len());
    for group in groups {
        let (field, column) = match group {
            Group::Column(field, column) => (field, column),
            Group::Nested(name, children) => {
                let (fields, columns): (Vec<FieldRef>, Vec<ArrayRef>) = children.into_iter().unzip();
                let (fields, columns) = regroup(fields, columns)?;
                let fields = Fields::from(
                    fields.iter().map(|f| Arc::new(f.as_ref().clone().with_nullable(true))).collect::<Vec<_>>(),
                );
                let nulls = any_valid(&columns);
                let array = StructArray::try_new(fields.clone(), columns, nulls).map_err(|e| {
                    EncodeError::column_type(&name, &format!("a flattened message ({e})"), &DataType::Null)
                })?;
                (Arc::new(Field::new(name, DataType::Struct(fields), true)), Arc::new(array) as ArrayRef)
            }
        };
        out_fields.push(field);
        out_columns.push(column);
    }
    Ok((out_fields, out_columns))
}

/// A column of the batch, or the columns of a flattened message (their names after the
/// message's).
enum Group {
    Column(FieldRef, ArrayRef),
    Nested(String, Vec<(FieldRef, ArrayRef)>),
}

/// Valid where any of `columns` is (`None`: everywhere).
fn any_valid(columns: &[ArrayRef]) -> Option<NullBuffer> {
    let mut valid: Option<arrow_buffer::BooleanBuffer> = None;
    for column in columns {
        let nulls = column.logical_nulls()?;
        valid = Some(match valid {
            None => nulls.inner().clone(),
            Some(v) => &v | nulls.inner(),
        });
    }
    valid.map(NullBuffer::new)
}

/// `path.name`, or `name` at the top.
fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// What a field's column holds, for errors.
fn kind_name(fd: &FieldDescriptor) -> String {
    match fd.kind() {
        Kind::Message(m) => format!("{} messages", m.full_name()),
        Kind::Enum(e) => format!("{} values (names or numbers)", e.full_name()),
        k => format!("{k:?} values").to_lowercase(),
    }
}

fn is_null(nulls: Option<&NullBuffer>, i: usize) -> bool {
    nulls.is_some_and(|n| n.is_null(i))
}

/// A list column's offsets and items.
fn list_parts(column: &ArrayRef) -> (Offsets, ArrayRef) {
    match column.data_type() {
        DataType::LargeList(_) => {
            let list = column.as_list::<i64>();
            (Offsets::I64(list.offsets().clone()), list.values().clone())
        }
        _ => {
            let list = column.as_list::<i32>();
            (Offsets::I32(list.offsets().clone()), list.values().clone())
        }
    }
}

/// A timestamp or duration column's values.
fn time_values(column: &ArrayRef, unit: TimeUnit) -> arrow_buffer::ScalarBuffer<i64> {
    match (column.data_type(), unit) {
        (DataType::Timestamp(..), TimeUnit::Second) => column.as_primitive::<TimestampSecondType>().values().clone(),
        (DataType::Timestamp(..), TimeUnit::Millisecond) => {
            column.as_primitive::<TimestampMillisecondType>().values().clone()
        }
        (DataType::Timestamp(..), TimeUnit::Microsecond) => {
            column.as_primitive::<TimestampMicrosecondType>().values().clone()
        }
        (DataType::Timestamp(..), TimeUnit::Nanosecond) => {
            column.as_primitive::<TimestampNanosecondType>().values().clone()
        }
        (_, TimeUnit::Second) => column.as_primitive::<DurationSecondType>().values().clone(),
        (_, TimeUnit::Millisecond) => column.as_primitive::<DurationMillisecondType>().values().clone(),
        (_, TimeUnit::Microsecond) => column.as_primitive::<DurationMicrosecondType>().values().clone(),
        (_, TimeUnit::Nanosecond) => column.as_primitive::<DurationNanosecondType>().values().clone(),
    }
}

/// Rows whose column values [`MessagePlan::touch`] brings into cache ahead of writing them
/// (~40 KB of gm1's columns: they stay in L2 until written).
const BLOCK_ROWS: usize = 128;

/// Reads one value per cache line of `values`, in order (a sequential read the CPU's
/// prefetcher follows), and returns them combined so the reads are kept.
fn touch<T: Copy>(values: &[T], mut read: impl FnMut(T) -> u64) -> u64 {
    let step = (64 / std::mem::size_of::<T>()).max(1);
    values.iter().step_by(step).map(|&v| read(v)).fold(0, |a, b| a ^ b)
}

impl MessagePlan {
    /// Reads the values of rows `rows` of the top-level scalar and text columns, a column at
    /// a time, one value per cache line: writing a row touches ~40 columns, more streams
    /// than the CPU's prefetcher follows, so the row-at-a-time writer would wait for memory
    /// on each column's next line; after this it finds them in cache.
    fn touch(&self, rows: Range<usize>) -> u64 {
        let mut sum = 0;
        for f in &self.fields {
            sum ^= match &f.shape {
                Shape::Int { ints, .. } => ints.touch(rows.clone()),
                Shape::Varint { values, .. } => values.touch(rows.clone()),
                Shape::F64 { floats, .. } => touch(&floats[rows.clone()], |x| x.to_bits()),
                Shape::F32 { floats, .. } => touch(&floats[rows.clone()], |x| x.to_bits() as u64),
                Shape::Bytes { texts: Texts::Utf8(a), .. } => {
                    let o = a.value_offsets();
                    let data = a.value_data();
                    let (from, to) = (o[rows.start] as usize, o[rows.end] as usize);
                    touch(&o[rows.clone()], |x| x as u64) ^ touch(&data[from..to], |x| x as u64)
                }
                _ => 0,
            };
        }
        sum
    }
}

/// One message's fields, by number.
struct MessagePlan {
    fields: Vec<FieldPlan>,
    /// Oneofs with two or more member columns: their members' indexes in `fields`.
    oneofs: Vec<(String, Vec<usize>)>,
}

impl MessagePlan {
    /// Writes the fields of the message at index `i` of its columns (`row`: the batch row
    /// it belongs to, for errors).
    fn write(&self, i: usize, row: usize, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (oneof, members) in &self.oneofs {
            let mut set = members.iter().filter(|&&m| self.fields[m].is_set(i));
            if let (Some(&first), Some(&second)) = (set.next(), set.next()) {
                return Err(EncodeError::OneofConflict {
                    oneof: oneof.clone(),
                    row,
                    first: self.fields[first].path.clone(),
                    second: self.fields[second].path.clone(),
                });
            }
        }
        for f in &self.fields {
            f.write(i, row, out)?;
        }
        Ok(())
    }
}

/// One field's column.
struct FieldPlan {
    number: u32,
    /// The column's path, for errors.
    path: String,
    nulls: Option<NullBuffer>,
    /// A `required` field: a null is an error.
    required: bool,
    shape: Shape,
}

/// How a field is written. The commonest kinds have their own variants, so that a field is
/// dispatched once (not on its shape and then on its value); `implicit`: a singular field
/// without presence, written only when not the default.
enum Shape {
    /// A varint field whose column has the field's own width and signedness.
    Varint {
        values: VarintValues,
        implicit: bool,
    },
    Int {
        ints: Ints,
        int: IntKind,
        implicit: bool,
    },
    Bool {
        values: arrow_buffer::BooleanBuffer,
        implicit: bool,
    },
    /// A float column of the field's own width.
    F64 {
        floats: arrow_buffer::ScalarBuffer<f64>,
        implicit: bool,
    },
    F32 {
        floats: arrow_buffer::ScalarBuffer<f32>,
        implicit: bool,
    },
    Bytes {
        texts: Texts,
        implicit: bool,
    },
    /// Any other singular field.
    One {
        value: Value,
        implicit: bool,
    },
    /// A packed repeated integer field whose items have no nulls.
    PackedInts {
        offsets: Offsets,
        ints: Ints,
        int: IntKind,
    },
    List {
        offsets: Offsets,
        item: Value,
        item_nulls: Option<NullBuffer>,
        packed: bool,
    },
    Map {
        offsets: Offsets,
        /// The key and the value (boxed: the other shapes are smaller).
        entry: Box<(Value, Value)>,
        value_nulls: Option<NullBuffer>,
    },
}

impl Shape {
    /// A singular field reading `value`.
    fn one(value: Value, implicit: bool) -> Shape {
        match value {
            Value::Int { ints, int } => match VarintValues::of(&ints, int) {
                Some(values) => Shape::Varint { values, implicit },
                None => Shape::Int { ints, int, implicit },
            },
            // An open enum's numbers in an Int32 column: every one is written as it is,
            // as an `int32` is.
            Value::Enum { numbers: EnumNumbers::Numbers(Ints::I32(v)), closed: None, .. } => {
                Shape::Varint { values: VarintValues::Int32(v), implicit }
            }
            Value::Bool(b) => Shape::Bool { values: b.values().clone(), implicit },
            Value::Float { floats: Floats::F64(floats), double: true } => Shape::F64 { floats, implicit },
            Value::Float { floats: Floats::F32(floats), double: false } => Shape::F32 { floats, implicit },
            Value::Bytes(texts) => Shape::Bytes { texts, implicit },
            value => Shape::One { value, implicit },
        }
    }

    /// A repeated field whose items `item` reads.
    fn list(offsets: Offsets, item: Value, item_nulls: Option<NullBuffer>, packed: bool) -> Shape {
        match (item, item_nulls, packed) {
            (Value::Int { ints, int }, None, true) => Shape::PackedInts { offsets, ints, int },
            (item, item_nulls, packed) => Shape::List { offsets, item, item_nulls, packed },
        }
    }
}

impl FieldPlan {
    /// Where its value in `row` is, for errors.
    fn site(&self, row: usize) -> Site<'_> {
        Site { path: &self.path, row }
    }

    /// Whether the field writes nothing in any row of its column: every row null (and the
    /// field not `required`, whose nulls are errors), or every value the default of a field
    /// without presence, or every list and map empty. Answered a column at a time, for the
    /// plan of a batch ([`Planner::message`] leaves such fields out).
    fn writes_nothing(&self) -> bool {
        if self.required {
            return false;
        }
        if self.nulls.as_ref().is_some_and(|n| n.null_count() == n.len()) {
            return true;
        }
        match &self.shape {
            Shape::Int { ints, implicit: true, .. } => ints.all_zero(),
            Shape::Varint { values, implicit: true } => values.all_zero(),
            Shape::Bool { values, implicit: true } => values.count_set_bits() == 0,
            Shape::F64 { floats, implicit: true } => floats.iter().all(|x| x.to_bits() == 0),
            Shape::F32 { floats, implicit: true } => floats.iter().all(|x| x.to_bits() == 0),
            Shape::Bytes { texts, implicit: true } => texts.all_empty(),
            Shape::PackedInts { offsets, .. } | Shape::List { offsets, .. } | Shape::Map { offsets, .. } => {
                offsets.all_empty()
            }
            _ => false,
        }
    }

    /// Whether the field is set at `i` (for the oneof check).
    fn is_set(&self, i: usize) -> bool {
        !is_null(self.nulls.as_ref(), i)
            && match &self.shape {
                Shape::One { value: Value::Marker(b, _), .. } => b.value(i),
                _ => true,
            }
    }

    fn write(&self, i: usize, row: usize, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if is_null(self.nulls.as_ref(), i) {
            if self.required {
                return Err(EncodeError::NullInRequired { column: self.path.clone(), row });
            }
            return Ok(());
        }
        // The commonest fields, integers and text, read once: the value decides both
        // whether it is the default and what is written.
        match &self.shape {
            Shape::Varint { values, implicit } => {
                let w = values.wire(i);
                if *implicit && w == 0 {
                    return Ok(());
                }
                tag(out, self.number, VARINT);
                write_varint(out, w);
                Ok(())
            }
            Shape::Int { ints, int, implicit } => {
                let v = ints.get(i);
                if *implicit && v == 0 {
                    return Ok(());
                }
                if !int.holds(v) {
                    return Err(out_of_range(self.site(row), v, *int));
                }
                tag(out, self.number, int.wire_type());
                int.write(v, out);
                Ok(())
            }
            Shape::Bool { values, implicit } => {
                let v = values.value(i);
                if *implicit && !v {
                    return Ok(());
                }
                tag(out, self.number, VARINT);
                out.push(u8::from(v));
                Ok(())
            }
            // A float column of the field's own width: its bits as they are (-0.0 and NaN
            // payloads kept; only +0.0 is the default).
            Shape::F64 { floats, implicit } => {
                let bits = floats[i].to_bits();
                if *implicit && bits == 0 {
                    return Ok(());
                }
                tag(out, self.number, FIXED64);
                out.extend_from_slice(&bits.to_le_bytes());
                Ok(())
            }
            Shape::F32 { floats, implicit } => {
                let bits = floats[i].to_bits();
                if *implicit && bits == 0 {
                    return Ok(());
                }
                tag(out, self.number, FIXED32);
                out.extend_from_slice(&bits.to_le_bytes());
                Ok(())
            }
            Shape::Bytes { texts, implicit } => {
                let b = texts.get(i);
                if *implicit && b.is_empty() {
                    return Ok(());
                }
                tag(out, self.number, LEN);
                write_varint(out, b.len() as u64);
                out.extend_from_slice(b);
                Ok(())
            }
            Shape::PackedInts { offsets, ints, int } => {
                let items = offsets.range(i);
                if items.is_empty() {
                    return Ok(());
                }
                tag(out, self.number, LEN);
                let mark = reserve_length(out);
                ints.write_run(items, *int, self.site(row), out)?;
                patch_length(out, mark);
                Ok(())
            }
            Shape::One { value, implicit } => {
                let at = self.site(row);
                if *implicit && value.is_default(i) {
                    return Ok(());
                }
                if let Value::Marker(b, _) = value {
                    if !b.value(i) {
                        // `false`: the message is absent.
                        if self.required {
                            return Err(EncodeError::NullInRequired { column: self.path.clone(), row });
                        }
                        return Ok(());
                    }
                }
                value.write_field(self.number, i, at, out)
            }
            Shape::List { offsets, item, item_nulls, packed } => {
                let at = self.site(row);
                let items = offsets.range(i);
                if let Some(nulls) = item_nulls {
                    if items.clone().any(|j| nulls.is_null(j)) {
                        return Err(EncodeError::NullItem { column: self.path.clone(), row });
                    }
                }
                if *packed {
                    if items.is_empty() {
                        return Ok(());
                    }
                    tag(out, self.number, LEN);
                    let mark = reserve_length(out);
                    match item {
                        Value::Int { ints, int } => ints.write_run(items, *int, at, out)?,
                        _ => {
                            for j in items {
                                item.write_raw(j, at, out)?;
                            }
                        }
                    }
                    patch_length(out, mark);
                } else {
                    for j in items {
                        item.write_field(self.number, j, at, out)?;
                    }
                }
                Ok(())
            }
            Shape::Map { offsets, entry, value_nulls } => {
                let at = self.site(row);
                let (key, value) = &**entry;
                for j in offsets.range(i) {
                    tag(out, self.number, LEN);
                    let mark = reserve_length(out);
                    key.write_field(1, j, at, out)?;
                    // A null value is an entry without one: the value type's default.
                    if !is_null(value_nulls.as_ref(), j) {
                        value.write_field(2, j, at, out)?;
                    }
                    patch_length(out, mark);
                }
                Ok(())
            }
        }
    }
}

/// Where a value is, for errors.
#[derive(Clone, Copy)]
struct Site<'p> {
    path: &'p str,
    row: usize,
}

#[inline(always)]
fn tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    write_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// A list's (or map's) offsets.
#[derive(Clone)]
enum Offsets {
    I32(OffsetBuffer<i32>),
    I64(OffsetBuffer<i64>),
}

impl Offsets {
    /// Whether every list is empty.
    fn all_empty(&self) -> bool {
        match self {
            Offsets::I32(o) => o.first() == o.last(),
            Offsets::I64(o) => o.first() == o.last(),
        }
    }

    fn range(&self, i: usize) -> Range<usize> {
        // Arrow offsets are non-negative and ascending (checked when the array is made).
        match self {
            Offsets::I32(o) => o[i] as usize..o[i + 1] as usize,
            Offsets::I64(o) => o[i] as usize..o[i + 1] as usize,
        }
    }
}

/// One value of a field's type, read from a column.
enum Value {
    Bool(BooleanArray),
    Int {
        ints: Ints,
        int: IntKind,
    },
    Float {
        floats: Floats,
        double: bool,
    },
    /// `string` and `bytes`: the same on the wire.
    Bytes(Texts),
    Enum {
        numbers: EnumNumbers,
        closed: Option<Vec<i32>>,
        name: String,
    },
    Message {
        plan: Box<MessagePlan>,
        group: bool,
    },
    /// A message without columns: `true` when present.
    Marker(BooleanArray, bool),
    /// A Timestamp or Duration from a native column (`nanos` in `unit`s).
    Time {
        nanos: arrow_buffer::ScalarBuffer<i64>,
        unit: TimeUnit,
        timestamp: bool,
    },
    /// A wrapper (`google.protobuf.*Value`) from a column of the wrapped type.
    Wrapper(Box<Value>),
    /// A message from a column of its proto3 JSON.
    Json(Box<JsonValue>),
}

/// A message column of proto3 JSON text ([`AnyColumns::Json`](crate::AnyColumns::Json)).
struct JsonValue {
    texts: Texts,
    layouts: Arc<Layouts>,
    root: LayoutIndex,
    /// `google.protobuf.Any`: the converter's form of an unresolved type is read too.
    any: bool,
    group: bool,
}

impl JsonValue {
    /// The message at `i`, its canonical binary encoding appended to `out`.
    fn write(&self, i: usize, at: Site, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let json = self.texts.get(i);
        let options = protojit::ParseOptions::default();
        match protojit::json_to_binary(&self.layouts, self.root, json, &options, out) {
            Ok(()) => Ok(()),
            Err(e) => match self.any.then(|| unresolved_any(json)).flatten() {
                Some((url, value)) => {
                    if !url.is_empty() {
                        tag(out, 1, LEN);
                        write_varint(out, url.len() as u64);
                        out.extend_from_slice(url.as_bytes());
                    }
                    if !value.is_empty() {
                        tag(out, 2, LEN);
                        write_varint(out, value.len() as u64);
                        out.extend_from_slice(&value);
                    }
                    Ok(())
                }
                None => Err(EncodeError::Json { column: at.path.to_owned(), row: at.row, why: e.to_string() }),
            },
        }
    }
}

/// The type URL and value of the JSON the converter writes for an `Any` whose type it
/// could not resolve, `{"@type":"<url>","value":"<base64>"}` (exactly so).
fn unresolved_any(json: &[u8]) -> Option<(String, Vec<u8>)> {
    let rest = json.strip_prefix(b"{\"@type\":\"")?;
    let mut url = String::new();
    let mut i = 0;
    loop {
        match *rest.get(i)? {
            b'"' => break,
            b'\\' => {
                let c = match *rest.get(i + 1)? {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'u' => {
                        let hex = std::str::from_utf8(rest.get(i + 2..i + 6)?).ok()?;
                        i += 4;
                        char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                    }
                    _ => return None,
                };
                url.push(c);
                i += 2;
            }
            _ => {
                // The next character, whole.
                let len = match rest[i] {
                    b if b < 0x80 => 1,
                    b if b >= 0xf0 => 4,
                    b if b >= 0xe0 => 3,
                    _ => 2,
                };
                url.push_str(std::str::from_utf8(rest.get(i..i + len)?).ok()?);
                i += len;
            }
        }
    }
    let b64 = rest.get(i + 1..)?.strip_prefix(b",\"value\":\"")?.strip_suffix(b"\"}")?;
    Some((url, base64_decode(b64)?))
}

/// Standard base64 with padding, as the converter writes it.
fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for (n, quad) in text.chunks(4).enumerate() {
        let last = n + 1 == text.len() / 4;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut v = 0u32;
        for &c in &quad[..4 - pad] {
            v = v << 6 | sextet(c)?;
        }
        v <<= 6 * pad as u32;
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

impl Value {
    /// Whether a list of these is packed where the field says so: scalars only.
    fn packable(&self) -> bool {
        matches!(self, Value::Bool(_) | Value::Int { .. } | Value::Float { .. } | Value::Enum { .. })
    }

    /// Whether the value at `i` is its type's default (for fields without presence).
    fn is_default(&self, i: usize) -> bool {
        match self {
            Value::Bool(b) => !b.values().value(i),
            Value::Int { ints, .. } => ints.is_zero(i),
            // By bits, as protoc's encoder: -0.0 is written.
            Value::Float { floats: Floats::F32(v), .. } => v[i].to_bits() == 0,
            Value::Float { floats: Floats::F64(v), .. } => v[i].to_bits() == 0,
            Value::Bytes(t) => t.get(i).is_empty(),
            Value::Enum { numbers, .. } => numbers.number(i) == Some(0),
            _ => false,
        }
    }

    /// The value at `i` as field `number`: tag and value.
    fn write_field(&self, number: u32, i: usize, at: Site, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Value::Message { plan, group: true } => {
                tag(out, number, SGROUP);
                plan.write(i, at.row, out)?;
                tag(out, number, EGROUP);
            }
            Value::Message { plan, group: false } => {
                tag(out, number, LEN);
                let mark = reserve_length(out);
                plan.write(i, at.row, out)?;
                patch_length(out, mark);
            }
            Value::Marker(_, true) => {
                tag(out, number, SGROUP);
                tag(out, number, EGROUP);
            }
            Value::Marker(_, false) => {
                tag(out, number, LEN);
                out.push(0);
            }
            Value::Time { nanos, unit, timestamp } => {
                let (seconds, nanos) = split_time(nanos[i], *unit, *timestamp);
                let len = if seconds != 0 { 1 + varint_len(seconds as u64) } else { 0 }
                    + if nanos != 0 { 1 + varint_len(nanos as i64 as u64) } else { 0 };
                tag(out, number, LEN);
                write_varint(out, len as u64);
                if seconds != 0 {
                    tag(out, 1, VARINT);
                    write_varint(out, seconds as u64);
                }
                if nanos != 0 {
                    tag(out, 2, VARINT);
                    write_varint(out, nanos as i64 as u64);
                }
            }
            Value::Json(json) if json.group => {
                tag(out, number, SGROUP);
                json.write(i, at, out)?;
                tag(out, number, EGROUP);
            }
            Value::Json(json) => {
                tag(out, number, LEN);
                let mark = reserve_length(out);
                json.write(i, at, out)?;
                patch_length(out, mark);
            }
            Value::Wrapper(inner) => {
                tag(out, number, LEN);
                let mark = reserve_length(out);
                if !inner.is_default(i) {
                    inner.write_field(1, i, at, out)?;
                }
                patch_length(out, mark);
            }
            // Strings and bytes (map keys and values, list items) written here, not after a
            // second dispatch in `write_raw`.
            Value::Bytes(texts) => {
                let b = texts.get(i);
                tag(out, number, LEN);
                write_varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            scalar => {
                let wire_type = match scalar {
                    Value::Int { int, .. } => int.wire_type(),
                    Value::Float { double: true, .. } => FIXED64,
                    Value::Float { double: false, .. } => FIXED32,
                    Value::Bytes(_) => LEN,
                    _ => VARINT,
                };
                tag(out, number, wire_type);
                scalar.write_raw(i, at, out)?;
            }
        }
        Ok(())
    }

    /// The value at `i` without its tag (a scalar's: also each item of a packed list).
    fn write_raw(&self, i: usize, at: Site, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Value::Bool(b) => out.push(u8::from(b.values().value(i))),
            Value::Int { ints, int } => {
                let v = ints.get(i);
                if !int.holds(v) {
                    return Err(out_of_range(at, v, *int));
                }
                int.write(v, out);
            }
            // The column's own width is written as it is (NaN payloads kept); another is
            // converted.
            Value::Float { floats, double } => match (floats, double) {
                (Floats::F32(v), false) => out.extend_from_slice(&v[i].to_le_bytes()),
                (Floats::F64(v), true) => out.extend_from_slice(&v[i].to_le_bytes()),
                (Floats::F32(v), true) => out.extend_from_slice(&f64::from(v[i]).to_le_bytes()),
                (Floats::F64(v), false) => out.extend_from_slice(&(v[i] as f32).to_le_bytes()),
            },
            Value::Bytes(t) => {
                let b = t.get(i);
                write_varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            Value::Enum { numbers, closed, name } => {
                let n = numbers.number(i).ok_or_else(|| EncodeError::UnknownEnumValue {
                    column: at.path.to_owned(),
                    row: at.row,
                    value: numbers.show(i),
                    enum_name: name.clone(),
                })?;
                if let Some(c) = closed {
                    if c.binary_search(&n).is_err() {
                        return Err(EncodeError::UnknownEnumValue {
                            column: at.path.to_owned(),
                            row: at.row,
                            value: n.to_string(),
                            enum_name: format!("{name} (closed: declared values only)"),
                        });
                    }
                }
                write_varint(out, n as i64 as u64);
            }
            _ => unreachable!("only scalars are written without a tag (packed, or after write_field's tag)"),
        }
        Ok(())
    }
}

/// The error of integer `v` at `at`, outside the range of the field's type `int`.
#[cold]
fn out_of_range(at: Site, v: i128, int: IntKind) -> EncodeError {
    EncodeError::OutOfRange { column: at.path.to_owned(), row: at.row, value: v.to_string(), kind: int.name().into() }
}

/// A Timestamp's or Duration's `(seconds, nanos)` from `v` `unit`s: a Timestamp's nanos
/// are never negative, a Duration's have the seconds' sign (as the types define them).
fn split_time(v: i64, unit: TimeUnit, timestamp: bool) -> (i64, i32) {
    let per: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let scale = 1_000_000_000 / per;
    let (seconds, rest) = if timestamp { (v.div_euclid(per), v.rem_euclid(per)) } else { (v / per, v % per) };
    (seconds, (rest * scale) as i32)
}

/// An integer column of any Arrow integer type.
#[derive(Clone)]
enum Ints {
    I8(arrow_buffer::ScalarBuffer<i8>),
    I16(arrow_buffer::ScalarBuffer<i16>),
    I32(arrow_buffer::ScalarBuffer<i32>),
    I64(arrow_buffer::ScalarBuffer<i64>),
    U8(arrow_buffer::ScalarBuffer<u8>),
    U16(arrow_buffer::ScalarBuffer<u16>),
    U32(arrow_buffer::ScalarBuffer<u32>),
    U64(arrow_buffer::ScalarBuffer<u64>),
}

impl Ints {
    fn of(column: &dyn Array) -> Option<Ints> {
        Some(match column.data_type() {
            DataType::Int8 => Ints::I8(column.as_primitive::<Int8Type>().values().clone()),
            DataType::Int16 => Ints::I16(column.as_primitive::<Int16Type>().values().clone()),
            DataType::Int32 => Ints::I32(column.as_primitive::<Int32Type>().values().clone()),
            DataType::Int64 => Ints::I64(column.as_primitive::<Int64Type>().values().clone()),
            DataType::UInt8 => Ints::U8(column.as_primitive::<UInt8Type>().values().clone()),
            DataType::UInt16 => Ints::U16(column.as_primitive::<UInt16Type>().values().clone()),
            DataType::UInt32 => Ints::U32(column.as_primitive::<UInt32Type>().values().clone()),
            DataType::UInt64 => Ints::U64(column.as_primitive::<UInt64Type>().values().clone()),
            _ => return None,
        })
    }

    /// Whether the value at `i` is 0, compared in the column's own width (the default of a
    /// field without presence: asked of every such field of every row).
    #[inline(always)]
    fn is_zero(&self, i: usize) -> bool {
        match self {
            Ints::I8(v) => v[i] == 0,
            Ints::I16(v) => v[i] == 0,
            Ints::I32(v) => v[i] == 0,
            Ints::I64(v) => v[i] == 0,
            Ints::U8(v) => v[i] == 0,
            Ints::U16(v) => v[i] == 0,
            Ints::U32(v) => v[i] == 0,
            Ints::U64(v) => v[i] == 0,
        }
    }

    /// Whether every value is 0.
    fn all_zero(&self) -> bool {
        match self {
            Ints::I8(v) => v.iter().all(|&x| x == 0),
            Ints::I16(v) => v.iter().all(|&x| x == 0),
            Ints::I32(v) => v.iter().all(|&x| x == 0),
            Ints::I64(v) => v.iter().all(|&x| x == 0),
            Ints::U8(v) => v.iter().all(|&x| x == 0),
            Ints::U16(v) => v.iter().all(|&x| x == 0),
            Ints::U32(v) => v.iter().all(|&x| x == 0),
            Ints::U64(v) => v.iter().all(|&x| x == 0),
        }
    }

    /// Writes the values at `items` as a packed run of `int`s (the column's type matched
    /// once, not per value).
    fn write_run(&self, items: Range<usize>, int: IntKind, at: Site, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        fn run<T: Copy + Into<i128>>(
            values: &[T],
            int: IntKind,
            at: Site,
            out: &mut Vec<u8>,
        ) -> Result<(), EncodeError> {
            // The kind matched once: each arm's loop is its own, knowing how a value is
            // checked and written.
            let refused = match int {
                IntKind::Int32 => varints(values, out, |v| i32::try_from(v).ok().map(|x| x as i64 as u64)),
                IntKind::Int64 => varints(values, out, |v| i64::try_from(v).ok().map(|x| x as u64)),
                IntKind::Uint32 => varints(values, out, |v| u32::try_from(v).ok().map(u64::from)),
                IntKind::Uint64 => varints(values, out, |v| u64::try_from(v).ok()),
                IntKind::Sint32 => {
                    varints(values, out, |v| i32::try_from(v).ok().map(|x| u64::from(zigzag_encode32(x))))
                }
                IntKind::Sint64 => varints(values, out, |v| i64::try_from(v).ok().map(zigzag_encode64)),
                IntKind::Fixed32 | IntKind::Fixed64 | IntKind::Sfixed32 | IntKind::Sfixed64 => {
                    for &v in values {
                        let v: i128 = v.into();
                        if !int.holds(v) {
                            return Err(out_of_range(at, v, int));
                        }
                        int.write(v, out);
                    }
                    None
                }
            };
            match refused {
                Some(v) => Err(out_of_range(at, v, int)),
                None => Ok(()),
            }
        }
        match self {
            Ints::I8(v) => run(&v[items], int, at, out),
            Ints::I16(v) => run(&v[items], int, at, out),
            Ints::I32(v) => run(&v[items], int, at, out),
            Ints::I64(v) => run(&v[items], int, at, out),
            Ints::U8(v) => run(&v[items], int, at, out),
            Ints::U16(v) => run(&v[items], int, at, out),
            Ints::U32(v) => run(&v[items], int, at, out),
            Ints::U64(v) => run(&v[items], int, at, out),
        }
    }

    /// [`touch`] of the values at `rows`.
    fn touch(&self, rows: Range<usize>) -> u64 {
        match self {
            Ints::I8(v) => touch(&v[rows], |x| x as u64),
            Ints::I16(v) => touch(&v[rows], |x| x as u64),
            Ints::I32(v) => touch(&v[rows], |x| x as u64),
            Ints::I64(v) => touch(&v[rows], |x| x as u64),
            Ints::U8(v) => touch(&v[rows], |x| x as u64),
            Ints::U16(v) => touch(&v[rows], |x| x as u64),
            Ints::U32(v) => touch(&v[rows], |x| x as u64),
            Ints::U64(v) => touch(&v[rows], |x| x),
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> i128 {
        match self {
            Ints::I8(v) => v[i].into(),
            Ints::I16(v) => v[i].into(),
            Ints::I32(v) => v[i].into(),
            Ints::I64(v) => v[i].into(),
            Ints::U8(v) => v[i].into(),
            Ints::U16(v) => v[i].into(),
            Ints::U32(v) => v[i].into(),
            Ints::U64(v) => v[i].into(),
        }
    }
}

/// Appends the varint of `wire(v)` for each value of a packed run; the first value `wire`
/// refuses (out of the field's range), if any, stops it.
#[inline(always)]
fn varints<T: Copy + Into<i128>>(values: &[T], out: &mut Vec<u8>, wire: impl Fn(i128) -> Option<u64>) -> Option<i128> {
    out.reserve(values.len());
    for &v in values {
        let v = v.into();
        match wire(v) {
            Some(w) => write_varint(out, w),
            None => return Some(v),
        }
    }
    None
}

/// The column of a varint field in the field's own width and signedness (as the converter
/// makes them): every value is in range, and how it is written is matched once per value,
/// not again on the column's type and the field's kind.
enum VarintValues {
    Int32(arrow_buffer::ScalarBuffer<i32>),
    Int64(arrow_buffer::ScalarBuffer<i64>),
    Uint32(arrow_buffer::ScalarBuffer<u32>),
    Uint64(arrow_buffer::ScalarBuffer<u64>),
    Sint32(arrow_buffer::ScalarBuffer<i32>),
    Sint64(arrow_buffer::ScalarBuffer<i64>),
}

impl VarintValues {
    /// `ints` as the column of an `int` field, if its type is the field's own.
    fn of(ints: &Ints, int: IntKind) -> Option<VarintValues> {
        Some(match (ints, int) {
            (Ints::I32(v), IntKind::Int32) => VarintValues::Int32(v.clone()),
            (Ints::I64(v), IntKind::Int64) => VarintValues::Int64(v.clone()),
            (Ints::U32(v), IntKind::Uint32) => VarintValues::Uint32(v.clone()),
            (Ints::U64(v), IntKind::Uint64) => VarintValues::Uint64(v.clone()),
            (Ints::I32(v), IntKind::Sint32) => VarintValues::Sint32(v.clone()),
            (Ints::I64(v), IntKind::Sint64) => VarintValues::Sint64(v.clone()),
            _ => return None,
        })
    }

    /// The varint of the value at `i` (0 exactly when the value is).
    #[inline(always)]
    fn wire(&self, i: usize) -> u64 {
        match self {
            // Negative int32s are sign-extended to ten bytes, as protobuf writes them.
            VarintValues::Int32(v) => v[i] as i64 as u64,
            VarintValues::Int64(v) => v[i] as u64,
            VarintValues::Uint32(v) => u64::from(v[i]),
            VarintValues::Uint64(v) => v[i],
            VarintValues::Sint32(v) => u64::from(zigzag_encode32(v[i])),
            VarintValues::Sint64(v) => zigzag_encode64(v[i]),
        }
    }

    fn all_zero(&self) -> bool {
        match self {
            VarintValues::Int32(v) | VarintValues::Sint32(v) => v.iter().all(|&x| x == 0),
            VarintValues::Int64(v) | VarintValues::Sint64(v) => v.iter().all(|&x| x == 0),
            VarintValues::Uint32(v) => v.iter().all(|&x| x == 0),
            VarintValues::Uint64(v) => v.iter().all(|&x| x == 0),
        }
    }

    /// [`touch`] of the values at `rows`.
    fn touch(&self, rows: Range<usize>) -> u64 {
        match self {
            VarintValues::Int32(v) | VarintValues::Sint32(v) => touch(&v[rows], |x| x as u64),
            VarintValues::Int64(v) | VarintValues::Sint64(v) => touch(&v[rows], |x| x as u64),
            VarintValues::Uint32(v) => touch(&v[rows], |x| x as u64),
            VarintValues::Uint64(v) => touch(&v[rows], |x| x),
        }
    }
}

/// A float column.
#[derive(Clone)]
enum Floats {
    F32(arrow_buffer::ScalarBuffer<f32>),
    F64(arrow_buffer::ScalarBuffer<f64>),
}

/// A string or binary column of any offset width or views.
#[derive(Clone)]
enum Texts {
    Utf8(arrow_array::StringArray),
    LargeUtf8(arrow_array::LargeStringArray),
    Utf8View(arrow_array::StringViewArray),
    Binary(arrow_array::BinaryArray),
    LargeBinary(arrow_array::LargeBinaryArray),
    BinaryView(arrow_array::BinaryViewArray),
    Fixed(arrow_array::FixedSizeBinaryArray),
}

impl Texts {
    /// Text columns, and binary ones where `binary` (a `bytes` field).
    fn of(column: &dyn Array, binary: bool) -> Option<Texts> {
        Some(match column.data_type() {
            DataType::Utf8 => Texts::Utf8(column.as_string::<i32>().clone()),
            DataType::LargeUtf8 => Texts::LargeUtf8(column.as_string::<i64>().clone()),
            DataType::Utf8View => Texts::Utf8View(column.as_string_view().clone()),
            DataType::Binary if binary => Texts::Binary(column.as_binary::<i32>().clone()),
            DataType::LargeBinary if binary => Texts::LargeBinary(column.as_binary::<i64>().clone()),
            DataType::BinaryView if binary => Texts::BinaryView(column.as_binary_view().clone()),
            DataType::FixedSizeBinary(_) if binary => Texts::Fixed(column.as_fixed_size_binary().clone()),
            _ => return None,
        })
    }

    /// Number of values.
    fn len(&self) -> usize {
        match self {
            Texts::Utf8(a) => a.len(),
            Texts::LargeUtf8(a) => a.len(),
            Texts::Utf8View(a) => a.len(),
            Texts::Binary(a) => a.len(),
            Texts::LargeBinary(a) => a.len(),
            Texts::BinaryView(a) => a.len(),
            Texts::Fixed(a) => a.len(),
        }
    }

    /// Whether every value is empty.
    fn all_empty(&self) -> bool {
        fn no_bytes<O: arrow_array::OffsetSizeTrait>(o: &OffsetBuffer<O>) -> bool {
            o.first() == o.last()
        }
        match self {
            Texts::Utf8(a) => no_bytes(a.offsets()),
            Texts::LargeUtf8(a) => no_bytes(a.offsets()),
            Texts::Binary(a) => no_bytes(a.offsets()),
            Texts::LargeBinary(a) => no_bytes(a.offsets()),
            // A view's low 32 bits are its value's length.
            Texts::Utf8View(a) => a.views().iter().all(|&v| v as u32 == 0),
            Texts::BinaryView(a) => a.views().iter().all(|&v| v as u32 == 0),
            Texts::Fixed(a) => a.value_length() == 0 || a.is_empty(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> &[u8] {
        match self {
            Texts::Utf8(a) => a.value(i).as_bytes(),
            Texts::LargeUtf8(a) => a.value(i).as_bytes(),
            Texts::Utf8View(a) => a.value(i).as_bytes(),
            Texts::Binary(a) => a.value(i),
            Texts::LargeBinary(a) => a.value(i),
            Texts::BinaryView(a) => a.value(i),
            Texts::Fixed(a) => a.value(i),
        }
    }
}

/// An enum column: numbers, names, or a dictionary of names.
enum EnumNumbers {
    Numbers(Ints),
    Names {
        names: Texts,
        by_name: HashMap<Box<[u8]>, i32>,
    },
    /// `numbers[k]`: the number of dictionary value `k` (`None`: no value of the enum).
    Dictionary {
        keys: Ints,
        names: Texts,
        numbers: Vec<Option<i32>>,
    },
}

impl EnumNumbers {
    /// The number at `i`, `None` where it names no value (or is out of `int32`'s range).
    fn number(&self, i: usize) -> Option<i32> {
        match self {
            EnumNumbers::Numbers(n) => i32::try_from(n.get(i)).ok(),
            EnumNumbers::Names { names, by_name } => {
                let name = names.get(i);
                by_name.get(name).copied().or_else(|| std::str::from_utf8(name).ok()?.parse().ok())
            }
            EnumNumbers::Dictionary { keys, numbers, .. } => *numbers.get(usize::try_from(keys.get(i)).ok()?)?,
        }
    }

    /// The value at `i` as the column holds it, for errors.
    fn show(&self, i: usize) -> String {
        match self {
            EnumNumbers::Numbers(n) => n.get(i).to_string(),
            EnumNumbers::Names { names, .. } => format!("`{}`", String::from_utf8_lossy(names.get(i))),
            EnumNumbers::Dictionary { keys, names, .. } => match usize::try_from(keys.get(i)) {
                Ok(k) if k < names.len() => format!("`{}`", String::from_utf8_lossy(names.get(k))),
                _ => format!("dictionary key {}", keys.get(i)),
            },
        }
    }
}

/// An integer field's type: its range and its wire form.
#[derive(Clone, Copy, Debug)]
enum IntKind {
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
}

impl IntKind {
    fn of(kind: &Kind) -> Option<IntKind> {
        Some(match kind {
            Kind::Int32 => IntKind::Int32,
            Kind::Int64 => IntKind::Int64,
            Kind::Uint32 => IntKind::Uint32,
            Kind::Uint64 => IntKind::Uint64,
            Kind::Sint32 => IntKind::Sint32,
            Kind::Sint64 => IntKind::Sint64,
            Kind::Fixed32 => IntKind::Fixed32,
            Kind::Fixed64 => IntKind::Fixed64,
            Kind::Sfixed32 => IntKind::Sfixed32,
            Kind::Sfixed64 => IntKind::Sfixed64,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            IntKind::Int32 => "int32",
            IntKind::Int64 => "int64",
            IntKind::Uint32 => "uint32",
            IntKind::Uint64 => "uint64",
            IntKind::Sint32 => "sint32",
            IntKind::Sint64 => "sint64",
            IntKind::Fixed32 => "fixed32",
            IntKind::Fixed64 => "fixed64",
            IntKind::Sfixed32 => "sfixed32",
            IntKind::Sfixed64 => "sfixed64",
        }
    }

    fn wire_type(self) -> u8 {
        match self {
            IntKind::Fixed32 | IntKind::Sfixed32 => FIXED32,
            IntKind::Fixed64 | IntKind::Sfixed64 => FIXED64,
            _ => VARINT,
        }
    }

    #[inline(always)]
    fn holds(self, v: i128) -> bool {
        match self {
            IntKind::Int32 | IntKind::Sint32 | IntKind::Sfixed32 => i32::try_from(v).is_ok(),
            IntKind::Int64 | IntKind::Sint64 | IntKind::Sfixed64 => i64::try_from(v).is_ok(),
            IntKind::Uint32 | IntKind::Fixed32 => u32::try_from(v).is_ok(),
            IntKind::Uint64 | IntKind::Fixed64 => u64::try_from(v).is_ok(),
        }
    }

    /// Writes `v` (in range: [`holds`](Self::holds)). Always inlined: its callers (a
    /// packed run's loop, a singular field) each know the kind.
    #[inline(always)]
    fn write(self, v: i128, out: &mut Vec<u8>) {
        match self {
            // Negative int32s are sign-extended to ten bytes, as protobuf writes them.
            IntKind::Int32 | IntKind::Int64 => write_varint(out, v as i64 as u64),
            IntKind::Uint32 | IntKind::Uint64 => write_varint(out, v as u64),
            IntKind::Sint32 => write_varint(out, u64::from(zigzag_encode32(v as i32))),
            IntKind::Sint64 => write_varint(out, zigzag_encode64(v as i64)),
            IntKind::Fixed32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
            IntKind::Sfixed32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            IntKind::Fixed64 => out.extend_from_slice(&(v as u64).to_le_bytes()),
            IntKind::Sfixed64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
        }
    }
}
