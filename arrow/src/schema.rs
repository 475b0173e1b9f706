//! The type mapping: a protobuf message type (and a selection of its fields) becomes an Arrow schema and the tree of column builders that fills it.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use prost_reflect::{ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor};
use protojit_arena::stream::WireValue;
use protojit_arena::{LayoutIndex, Layouts, SlotIndex};

use crate::column::{Cell, Column, ListCol, MapCol, StructCol, TimeCol};
use crate::options::{ArrowOptions, EnumColumns, RecursionColumns, StringColumns, StructColumns};
use crate::reshape::{EXTENSION_NAME, JSON_EXTENSION};
use crate::select::Selection;
use crate::values::{Data, EnumDict, Pending, Read, Values};
use crate::wkt::{wkt, Wkt};

/// What the mapping found worth telling: fields left out where a recursive type was cut.
#[derive(Default)]
pub(crate) struct Notes {
    pub(crate) cuts: Vec<String>,
}

/// A field or an extension, as the mapping reads it.
struct Desc {
    /// The column's name: the field's, or `[full.name]` for an extension.
    name: String,
    number: u32,
    kind: Kind,
    list: bool,
    map: bool,
    /// Null when absent: the field has presence.
    presence: bool,
}

impl Desc {
    fn field(fd: &FieldDescriptor, layouts: &Layouts) -> Desc {
        Desc {
            name: fd.name().to_owned(),
            number: fd.number(),
            kind: fd.kind(),
            list: fd.is_list(),
            map: fd.is_map(),
            presence: layouts.features().field(fd).is_none_or(|f| f.has_presence()),
        }
    }

    fn extension(ext: &ExtensionDescriptor, layouts: &Layouts) -> Desc {
        Desc {
            name: format!("[{}]", ext.full_name()),
            number: ext.number(),
            kind: ext.kind(),
            list: ext.is_list(),
            map: ext.is_map(),
            presence: layouts.features().extension(ext).is_none_or(|f| f.has_presence()),
        }
    }
}

/// Builds the columns (and their Arrow fields) of message type `msg` for `sel`.
pub(crate) struct Mapper<'s> {
    pub(crate) layouts: &'s Layouts,
    pub(crate) options: &'s ArrowOptions,
    pub(crate) notes: Notes,
    /// Message types on the current path, for the recursion cut.
    stack: Vec<String>,
}

impl<'s> Mapper<'s> {
    pub(crate) fn new(layouts: &'s Layouts, options: &'s ArrowOptions) -> Mapper<'s> {
        Mapper { layouts, options, notes: Notes::default(), stack: Vec::new() }
    }

    fn layout_of(&self, msg: &MessageDescriptor) -> LayoutIndex {
        self.layouts.index_of(msg.full_name()).expect("every message type of the schema has a layout")
    }

    /// The columns of `msg` for `sel`, in declaration order (for [`Selection::All`]) or
    /// selection order.
    pub(crate) fn message(
        &mut self,
        msg: &MessageDescriptor,
        sel: &Selection,
        path: &str,
        nullable: bool,
    ) -> StructCol {
        self.stack.push(msg.full_name().to_owned());
        let layouts: &'s Layouts = self.layouts;
        let layout = layouts.get(self.layout_of(msg));
        let mut fields: Vec<Desc> = match sel {
            Selection::All => msg.fields().map(|f| Desc::field(&f, layouts)).collect(),
            Selection::Some(list) => {
                list.iter().filter_map(|(n, _)| msg.get_field_by_name(n)).map(|f| Desc::field(&f, layouts)).collect()
            }
        };
        if self.options.extensions && matches!(sel, Selection::All) {
            // Extensions of the type declared in the schema, by number, after its fields.
            let mut extensions: Vec<ExtensionDescriptor> = msg.extensions().collect();
            extensions.sort_by_key(|e| e.number());
            fields.extend(extensions.iter().map(|e| Desc::extension(e, layouts)));
        }
        let mut columns = Vec::new();
        for fd in fields {
            let Some(sub) = sel.child(&fd.name) else { continue };
            let Some(si) = layout.slot_by_number(fd.number) else { continue };
            let field_path = if path.is_empty() { fd.name.clone() } else { format!("{path}.{}", fd.name) };
            if let Some((field, cell)) = self.field(&fd, sub, &field_path) {
                let read = match &cell {
                    Cell::Values(values) if !fd.list && !fd.map => Read::new(layout, si, values),
                    _ => None,
                };
                columns.push(Column { si, field, cell, read, present: false });
            }
        }
        self.stack.pop();
        StructCol::new(columns, nullable, layout)
    }

    /// One field's column, or `None` where the recursion cut leaves it out.
    fn field(&mut self, fd: &Desc, sel: &Selection, path: &str) -> Option<(Arc<Field>, Cell)> {
        let name = fd.name.as_str();
        if fd.map {
            let Kind::Message(entry) = fd.kind.clone() else { unreachable!("map fields hold entries") };
            let key_fd = entry.map_entry_key_field();
            let value_fd = entry.map_entry_value_field();
            let key = self.values(&key_fd.kind());
            let (value_field, value) =
                self.element(value_fd.kind(), &Selection::All, &format!("{path}.value"), "value", false)?;
            let key_field = Arc::new(Field::new("key", key.data_type(), false));
            let entries = Fields::from(vec![key_field, value_field]);
            let entries_field = Arc::new(Field::new("entries", DataType::Struct(entries.clone()), false));
            let field = Arc::new(Field::new(name, DataType::Map(entries_field.clone(), false), false));
            // An entry without a value takes the value field's default: zero, or a closed
            // enum's first value.
            let layouts: &'s Layouts = self.layouts;
            let entry_layout = layouts.get(self.layout_of(&entry));
            let value_default = match entry_layout.slot_default(SlotIndex::new(1)) {
                Some(prost_reflect::Value::EnumNumber(n)) => Pending::Number(WireValue::Enum(*n)),
                _ => Pending::None,
            };
            let map = MapCol::new(entries_field, entries, key, value, value_default);
            return Some((field, Cell::Map(Box::new(map))));
        }
        if fd.list {
            let (item_field, item) = self.element(fd.kind.clone(), sel, path, "item", false)?;
            let field = Arc::new(Field::new(name, DataType::List(item_field.clone()), false));
            return Some((field, Cell::List(Box::new(ListCol::new(item_field, item)))));
        }
        // Singular: nullable where protobuf tracks presence (the resolved `field_presence`:
        // proto2, `optional`, oneof members, messages, editions EXPLICIT); implicit-presence
        // fields (proto3, editions IMPLICIT) read as their values.
        let nullable = fd.presence;
        let (field, cell) = self.element(fd.kind.clone(), sel, path, name, nullable)?;
        Some((field, cell))
    }

    /// The column of one value of `fd`'s type (a singular field, a list item, a map
    /// value), named `name`.
    fn element(
        &mut self,
        kind: Kind,
        sel: &Selection,
        path: &str,
        name: &str,
        nullable: bool,
    ) -> Option<(Arc<Field>, Cell)> {
        match kind {
            Kind::Message(m) => {
                let json_value = matches!(
                    m.full_name(),
                    "google.protobuf.Struct" | "google.protobuf.Value" | "google.protobuf.ListValue"
                );
                if self.options.well_known_types && self.options.structs == StructColumns::Json && json_value {
                    return Some(self.json_column(name));
                }
                if self.options.well_known_types {
                    if let Some(w) = wkt(&m) {
                        let layouts: &'s Layouts = self.layouts;
                        let layout = layouts.get(self.layout_of(&m));
                        return Some(match w {
                            Wkt::Timestamp | Wkt::Duration => {
                                let dt = if w == Wkt::Timestamp {
                                    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
                                } else {
                                    DataType::Duration(TimeUnit::Nanosecond)
                                };
                                // Null when absent, and where seconds and nanos overflow
                                // 64-bit nanoseconds (counted in the batch stats).
                                (Arc::new(Field::new(name, dt.clone(), true)), Cell::Time(TimeCol::new(layout, dt)))
                            }
                            Wkt::Wrapper => {
                                let value_fd = m.get_field(1).expect("wrappers have field 1");
                                let values = self.values(&value_fd.kind());
                                let si = layout.slot_by_number(1).expect("wrappers have field 1");
                                (
                                    Arc::new(Field::new(name, values.data_type(), true)),
                                    Cell::Wrapper(values.nullable(), si),
                                )
                            }
                        });
                    }
                }
                let count = self.stack.iter().filter(|t| *t == m.full_name()).count();
                if count >= self.options.max_recursion && self.options.recursion == RecursionColumns::Json {
                    self.notes.cuts.push(format!(
                        "`{path}` ({}) as JSON text: the type recurses more than {} levels",
                        m.full_name(),
                        self.options.max_recursion
                    ));
                    return Some(self.json_column(name));
                }
                if count >= self.options.max_recursion {
                    self.notes.cuts.push(format!(
                        "`{path}` ({}) left out: the type recurses more than {} levels",
                        m.full_name(),
                        self.options.max_recursion
                    ));
                    return None;
                }
                let col = self.message(&m, sel, path, nullable);
                if col.fields().is_empty() {
                    // No columns (an empty message such as google.protobuf.Empty, or every
                    // field cut): Parquet cannot store a struct without fields, so the
                    // column says only whether the message is there.
                    return Some((
                        Arc::new(Field::new(name, DataType::Boolean, nullable)),
                        Cell::Marker(Values::bool().nullable()),
                    ));
                }
                Some((Arc::new(Field::new(name, DataType::Struct(col.fields()), nullable)), Cell::Struct(col)))
            }
            _ => {
                let values = self.values(&kind);
                let values = if nullable { values.nullable() } else { values };
                Some((Arc::new(Field::new(name, values.data_type(), nullable)), Cell::Values(values)))
            }
        }
    }

    /// A message's column of JSON text ([`RecursionColumns::Json`], [`StructColumns::Json`]):
    /// nullable even as a list item (a message without a JSON form is null).
    fn json_column(&self, name: &str) -> (Arc<Field>, Cell) {
        let values = Values::text(true, self.options.strings == StringColumns::Views).nullable();
        let metadata = [(EXTENSION_NAME.to_owned(), JSON_EXTENSION.to_owned())].into();
        let field = Field::new(name, values.data_type(), true).with_metadata(metadata);
        (Arc::new(field), Cell::Json(values))
    }

    /// The leaf builder of a scalar field.
    fn values(&self, kind: &Kind) -> Values {
        match kind {
            Kind::Bool => Values::bool(),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Values::new(Data::I32(Vec::new())),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Values::new(Data::I64(Vec::new())),
            Kind::Uint32 | Kind::Fixed32 => Values::new(Data::U32(Vec::new())),
            Kind::Uint64 | Kind::Fixed64 => Values::new(Data::U64(Vec::new())),
            Kind::Float => Values::new(Data::F32(Vec::new())),
            Kind::Double => Values::new(Data::F64(Vec::new())),
            Kind::String => Values::text(true, self.options.strings == StringColumns::Views),
            Kind::Bytes => Values::text(false, self.options.strings == StringColumns::Views),
            Kind::Enum(e) => match self.options.enums {
                EnumColumns::Number => Values::new(Data::I32(Vec::new())),
                // Names as plain text are taken from the dictionaries when a batch is
                // finished (the reshaping stage): every path fills dictionaries.
                EnumColumns::Dictionary | EnumColumns::String => Values::new(Data::Enum(Vec::new(), EnumDict::new(e))),
            },
            Kind::Message(_) => unreachable!("message fields are not leaves"),
        }
    }
}
