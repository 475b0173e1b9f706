//! What a converter is asked for: which fields, how enums, strings, maps, oneofs, `Any` and well-known types become columns (and whether nested ones are flattened), which path turns records into rows, and the decoder's options.

use protojit::{EngineOptions, Utf8Check};

use crate::framing::Framing;

/// How enum fields become columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EnumColumns {
    /// `Dictionary<Int32, Utf8>` of value names (the default).
    #[default]
    Dictionary,
    /// `Int32`: the numbers on the wire.
    Number,
    /// `Utf8` (`LargeUtf8` with [`ArrowOptions::large`]): the value names as plain text,
    /// for engines and files without dictionaries (undeclared numbers of open enums as
    /// decimal text, as in the dictionaries). The conversion paths fill dictionaries; the
    /// names are taken from them when the batch is finished.
    String,
}

/// How map fields become columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MapColumns {
    /// `Map<K, V>` (the default).
    #[default]
    Map,
    /// `List<Struct<key, value>>` (`LargeList` with [`ArrowOptions::large`]): the map's
    /// entries as a repeated entry message would be, for engines and warehouses without a
    /// map type. The same offsets and entries as the map (no copy).
    Entries,
}

/// How `google.protobuf.Any` fields become columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum AnyColumns {
    /// `Struct<type_url: Utf8, value: Binary>`: the message as it is (the default).
    #[default]
    Struct,
    /// `Utf8` (`LargeUtf8` with [`ArrowOptions::large`]) holding the proto3 JSON of the
    /// packed message, `{"@type": url, ...its fields}`, resolved through the converter's
    /// schema; the field carries Arrow's canonical `arrow.json` extension type
    /// (`ARROW:extension:name`). A type URL the schema does not resolve (or a payload that
    /// does not decode) gives `{"@type": url, "value": "<base64>"}`, counted
    /// ([`Converter::unresolved_any`](crate::Converter::unresolved_any)).
    Json,
}

/// What becomes of a field where a recursive type is cut ([`ArrowOptions::max_recursion`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RecursionColumns {
    /// Left out, with a note (the default).
    #[default]
    Cut,
    /// One `Utf8` column holding the proto3 JSON of the subtree there (of the `arrow.json`
    /// extension type, nullable even as a list item), null where the message is absent or
    /// has no JSON form (an `Any` of a type the schema lacks, a non-finite number in a
    /// `google.protobuf.Value`: counted in
    /// [`BatchStats::json_unprintable`](crate::BatchStats::json_unprintable)). The compiled column appenders
    /// do not write JSON: the converter takes the chunked path, saying so in
    /// [`Converter::path_note`](crate::Converter::path_note); the streaming decoder's
    /// direct path hands such records to the tree.
    Json,
}

/// How `google.protobuf.Struct`, `Value` and `ListValue` become columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StructColumns {
    /// The structs they are (the default): recursive types, so cut at
    /// [`ArrowOptions::max_recursion`].
    #[default]
    Struct,
    /// One `Utf8` column of their canonical proto3 JSON (`{"a": 1}`, `[1, "x"]`, `null`),
    /// of the `arrow.json` extension type, whole however deep; null where absent or where
    /// the value has no JSON form (a non-finite number: counted in
    /// [`BatchStats::json_unprintable`](crate::BatchStats::json_unprintable)). Needs
    /// [`ArrowOptions::well_known_types`]. The compiled column appenders do not write JSON:
    /// the converter takes the chunked path, saying so in
    /// [`Converter::path_note`](crate::Converter::path_note).
    Json,
}

/// One row per element of a repeated field ([`ArrowOptions::explode`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explode {
    /// The repeated field's path from the root, through singular messages: `items`,
    /// `order.lines`.
    pub path: String,
    /// `explode_outer`: a record with no element (an empty list, or a parent message
    /// absent) keeps one row, the element's column null there; `false` (`explode`): it
    /// gives no row.
    pub outer: bool,
}

/// How `string` and `bytes` fields become columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StringColumns {
    /// `Utf8` / `Binary`: offsets and one data buffer, every value copied into it (the
    /// default; what every Arrow reader and writer takes).
    #[default]
    Offsets,
    /// `Utf8View` / `BinaryView`. A value of at most 12 bytes lives in its view. A longer
    /// one from a record held in an Arrow buffer ([`Converter::convert_binary`](crate::Converter::convert_binary),
    /// [`BatchBuilder::append_in`](crate::BatchBuilder::append_in), SQL tables) points into that buffer instead of being
    /// copied, and the batch keeps the buffer alive; from other records it is copied.
    Views,
}

/// How a converter turns records into rows: [`ArrowOptions::path`] picks it,
/// [`Converter::path`](crate::Converter::path) reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConvertPath {
    /// The default, and what the CLI and SQL take: the compiled column appenders
    /// ([`DirectCompiled`](Self::DirectCompiled)) where they read the columns and the
    /// engine compiles, raced against the [`Chunked`](Self::Chunked) path once both are
    /// compiled: chunks alternate between the two, each timed per byte of input, and after
    /// a few each the faster converts the rest ([`Converter::path`](crate::Converter::path)
    /// then names it and [`Converter::path_note`](crate::Converter::path_note) gives the
    /// times). Which is faster depends on the records: the appenders on small flat
    /// records, the chunked path on large nested ones with long repeated fields. Until the
    /// appenders are compiled the chunked path converts; with the interpreter engine, or
    /// columns the appenders cannot read, the chunked path converts throughout (with a
    /// note).
    #[default]
    Auto,
    /// Records are decoded a chunk at a time (a few hundred) by the converter's decoder
    /// (compiled where its engine has compiled the type), then each column is filled for
    /// the whole chunk in one typed loop, its kind matched once per chunk rather than once
    /// per row. The values are the tree path's: the same decode, the same reads.
    Chunked,
    /// The streaming decoder (interpreted) appends each value to its column as it reads
    /// it, building no tree. A record it cannot append exactly (a oneof member replacing
    /// a message member, a map key met twice in one record) goes through the tree
    /// instead, counted in [`BatchStats::tree_records`](crate::BatchStats::tree_records).
    DirectInterpreted,
    /// Each record decoded into a tree, then its columns read row by row: the oracle the
    /// others are tested against.
    Tree,
    /// Compiled column appenders: machine code made for the converter's columns reads
    /// each record straight into per-chunk column buffers (no tree, no per-field call),
    /// which are moved into the builders a chunk at a time. With
    /// [`EngineKind::Jit`](protojit::EngineKind::Jit) the converter compiles it when it is
    /// made; with [`EngineKind::Auto`](protojit::EngineKind::Auto) on the background compiler,
    /// while the chunked path converts (so a conversion never waits for the compiler;
    /// [`Converter::compiled_records`](crate::Converter::compiled_records) counts the rows
    /// of each; [`Converter::wait_for_appender`](crate::Converter::wait_for_appender)
    /// waits); the interpreter engine compiles nothing (the chunked path, with a note).
    /// A record the code declines (malformed, or of a shape it leaves to the tree: a
    /// closed enum's undeclared value, invalid UTF-8) goes through the
    /// tree, counted in [`BatchStats::tree_records`](crate::BatchStats::tree_records), as
    /// does one where a oneof member follows a message member, or a map holds a key twice.
    /// Columns the appenders do not read (a plan of more than 256 messages, messages
    /// nested past the decoder's depth limit) make the converter take the chunked path
    /// instead, saying why in
    /// [`Converter::path_note`](crate::Converter::path_note).
    DirectCompiled,
}

impl std::fmt::Display for ConvertPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConvertPath::Auto => "auto path (the compiled column appenders raced against the chunked path)",
            ConvertPath::Chunked => "chunked path (records decoded a chunk at a time, then read column by column)",
            ConvertPath::DirectInterpreted => "direct path (the streaming decoder, interpreted)",
            ConvertPath::Tree => "tree path (each record decoded, then read row by row)",
            ConvertPath::DirectCompiled => "direct path (compiled column appenders)",
        })
    }
}

/// How a [`Converter`](crate::Converter) maps and decodes.
#[derive(Clone, Debug)]
pub struct ArrowOptions {
    /// Field paths to convert (`a`, `a.b.c`), in column order; `None`: every field.
    /// `Some(vec![])` converts no field (the rows are still decoded, so bad records fail).
    pub select: Option<Vec<String>>,
    /// Enum columns (default: dictionaries of names).
    pub enums: EnumColumns,
    /// String and bytes columns (default: offsets, `Utf8` / `Binary`).
    pub strings: StringColumns,
    /// How many times one message type may appear on a path from the root before the
    /// field that would nest it again is left out (default 3; at least 1). Recursive
    /// types have no finite Arrow schema, so they are cut.
    pub max_recursion: usize,
    /// Timestamp, Duration and the wrappers as native Arrow types (default `true`);
    /// `false` converts them as the structs they are.
    pub well_known_types: bool,
    /// How records are framed (default: bare messages; Kafka's schema-registry framing is
    /// checked and stripped).
    pub framing: Framing,
    /// How records become rows (default [`ConvertPath::Auto`]: the faster of the compiled
    /// appenders and the chunked path, as the CLI and SQL convert); the others are each of
    /// those alone, the streaming decoder's direct appends and the row-by-row tree path,
    /// the oracle the others are tested against. [`Converter::path`](crate::Converter::path) says which runs.
    pub path: ConvertPath,
    /// A `<oneof>_case` column for each oneof of a converted message (default `false`):
    /// `Dictionary<Int8, Utf8>` (`Int32` keys past 127 members) of the set member's name,
    /// null when no member is set (or the message is absent), placed after the message's
    /// other columns (inside its struct for a nested message). Only members that have a
    /// column can be seen: a member left out by [`select`](Self::select) or by the recursion
    /// cut reads as none set. A oneof without member columns gets none; proto3 `optional`
    /// fields (synthetic oneofs) get none. A case column named like a field of the same
    /// message is a [`ConvertError::ColumnName`](crate::ConvertError::ColumnName).
    pub oneof_case: bool,
    /// Map columns (default: `Map<K, V>`; [`MapColumns::Entries`]: a list of key/value
    /// structs).
    pub maps: MapColumns,
    /// `LargeUtf8`, `LargeBinary` and `LargeList` (64-bit offsets) instead of `Utf8`,
    /// `Binary` and `List` everywhere (default `false`), for consumers that take only
    /// those. The offsets are widened when a batch is finished; value buffers are shared.
    /// Not changed: `Utf8View` / `BinaryView` columns ([`StringColumns::Views`] stays
    /// views), the `Utf8` names inside enum and oneof-case dictionaries, and `Map`
    /// columns (Arrow's map has 32-bit offsets only; [`MapColumns::Entries`] gives
    /// `LargeList`).
    pub large: bool,
    /// Singular message fields as top-level columns named by their path, `a.b.c`,
    /// recursively (default `false`): the struct column `a` is replaced by its children,
    /// in place. A child is null where its parent message is absent (so a non-nullable
    /// child becomes nullable). Lists, maps and what is inside them are not flattened; a
    /// message without columns stays its `Boolean` marker. The way back
    /// ([`Encoder`](crate::Encoder)) regroups the columns by path; a message that is
    /// present but whose columns are all null comes back absent.
    pub flatten: bool,
    /// One row per element of the repeated field at this path (default `None`: one row
    /// per record). The path goes from the root through singular message fields to a
    /// repeated field (of messages, or of scalars; not a map): `items`, `order.lines`. In
    /// each row the element takes the list's place, under the field's name (a struct for
    /// a message element, nullable under [`Explode::outer`]; with
    /// [`flatten`](Self::flatten), its fields become `path.sub` columns), and every other
    /// column holds its record's values, repeated on each of its rows. A record with no
    /// element (an empty list, or a message on the path absent) gives no row, or with
    /// [`Explode::outer`] one row whose element is null; such records are counted
    /// ([`Converter::unexploded_records`](crate::Converter::unexploded_records)). The
    /// path must name a column the converter makes ([`select`](Self::select) must keep
    /// it; else [`ConvertError::Explode`](crate::ConvertError::Explode)). Rows are no
    /// longer records: the [`Encoder`](crate::Encoder) refuses the option
    /// ([`EncodeError::NotInvertible`](crate::EncodeError::NotInvertible)), and it is
    /// not among [`MAPPING_OPTIONS`](Self::MAPPING_OPTIONS), the options SQL tables take
    /// (their scans count a row per record).
    pub explode: Option<Explode>,
    /// `google.protobuf.Any` columns (default: the `type_url` / `value` struct;
    /// [`AnyColumns::Json`]: the packed message as proto3 JSON text). The conversion paths
    /// fill the struct; the JSON is written when a batch is finished, so every path gives
    /// the same text. The [`Encoder`](crate::Encoder) parses it back.
    pub any: AnyColumns,
    /// Extensions declared in the schema for a converted message type as columns named
    /// `[pkg.ext]`, after the message's fields, by number (default `false`: extensions are
    /// not converted). Mapped as the fields they are (a message extension as a struct,
    /// `repeated` as a list), null when absent. Only where the whole message is converted
    /// (not under a [`select`](Self::select)ion naming its fields); the
    /// [`Encoder`](crate::Encoder) refuses it
    /// ([`EncodeError::NotInvertible`](crate::EncodeError::NotInvertible)). Not among
    /// [`MAPPING_OPTIONS`](Self::MAPPING_OPTIONS): a SQL scan's projection cannot name
    /// them.
    pub extensions: bool,
    /// Fields where [`max_recursion`](Self::max_recursion) cuts a recursive type (default
    /// [`RecursionColumns::Cut`]: left out; [`RecursionColumns::Json`]: the subtree as
    /// JSON text). The [`Encoder`](crate::Encoder) parses the JSON back.
    pub recursion: RecursionColumns,
    /// `google.protobuf.Struct`, `Value` and `ListValue` fields (default
    /// [`StructColumns::Struct`]; [`StructColumns::Json`]: their proto3 JSON text, parsed
    /// back by the [`Encoder`](crate::Encoder)).
    pub structs: StructColumns,
    /// The decoder's options (engine, depth limit, tiering). Their UTF-8 policy must be
    /// [`Utf8Check::All`] (the default here): Arrow `Utf8` columns hold valid text only, so
    /// any other setting is a [`ConvertError::Utf8`](crate::ConvertError::Utf8). The
    /// converter's decoder discards unknown fields whatever these say
    /// ([`UnknownFields::Discard`](protojit::UnknownFields::Discard)): no column holds
    /// them.
    pub decode: EngineOptions,
}

impl Default for ArrowOptions {
    fn default() -> Self {
        ArrowOptions {
            select: None,
            enums: EnumColumns::Dictionary,
            strings: StringColumns::Offsets,
            max_recursion: 3,
            well_known_types: true,
            framing: Framing::Bare,
            path: ConvertPath::Auto,
            oneof_case: false,
            maps: MapColumns::Map,
            large: false,
            flatten: false,
            explode: None,
            any: AnyColumns::Struct,
            extensions: false,
            recursion: RecursionColumns::Cut,
            structs: StructColumns::Struct,
            decode: EngineOptions::default().with_utf8(Utf8Check::All),
        }
    }
}

impl ArrowOptions {
    /// Sets one mapping option by name from its text, as option lists spell them (SQL's
    /// `STORED AS PROTOBUF OPTIONS (...)`, the CLI, Python keywords): `oneof_case`,
    /// `large`, `flatten` and `extensions` take `true` / `false`; `maps` takes `map` or `entries`;
    /// `enums` takes `dictionary`, `number` (or `numbers`) or `string` (or `strings`);
    /// `any` takes `struct` or `json`; `recursion` and `structs` take `cut` / `struct` or `json`; `explode` and `explode_outer` take a field path ([`OTHER_OPTIONS`](Self::OTHER_OPTIONS);
    /// an empty path sets none). Names and values are matched without regard to case. An unknown name or value is
    /// an `Err` saying what is accepted.
    ///
    /// ```
    /// use protojit_arrow::{ArrowOptions, MapColumns};
    ///
    /// let mut options = ArrowOptions::default();
    /// options.set("maps", "entries")?;
    /// options.set("flatten", "true")?;
    /// assert_eq!(options.maps, MapColumns::Entries);
    /// assert!(options.flatten);
    /// assert!(options.set("maps", "list").is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let key = key.trim().to_ascii_lowercase();
        let value_lower = value.trim().to_ascii_lowercase();
        let flag = |name: &str| match value_lower.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("option `{name}`: `{value}` is not `true` or `false`")),
        };
        match key.as_str() {
            "oneof_case" => self.oneof_case = flag("oneof_case")?,
            "large" => self.large = flag("large")?,
            "flatten" => self.flatten = flag("flatten")?,
            "extensions" => self.extensions = flag("extensions")?,
            "maps" => {
                self.maps = match value_lower.as_str() {
                    "map" => MapColumns::Map,
                    "entries" => MapColumns::Entries,
                    _ => return Err(format!("option `maps`: `{value}` is not `map` or `entries`")),
                }
            }
            "enums" => {
                self.enums = match value_lower.as_str() {
                    "dictionary" => EnumColumns::Dictionary,
                    "number" | "numbers" => EnumColumns::Number,
                    "string" | "strings" => EnumColumns::String,
                    _ => return Err(format!("option `enums`: `{value}` is not `dictionary`, `number` or `string`")),
                }
            }
            "structs" => {
                self.structs = match value_lower.as_str() {
                    "struct" => StructColumns::Struct,
                    "json" => StructColumns::Json,
                    _ => return Err(format!("option `structs`: `{value}` is not `struct` or `json`")),
                }
            }
            "recursion" => {
                self.recursion = match value_lower.as_str() {
                    "cut" => RecursionColumns::Cut,
                    "json" => RecursionColumns::Json,
                    _ => return Err(format!("option `recursion`: `{value}` is not `cut` or `json`")),
                }
            }
            "any" => {
                self.any = match value_lower.as_str() {
                    "struct" => AnyColumns::Struct,
                    "json" => AnyColumns::Json,
                    _ => return Err(format!("option `any`: `{value}` is not `struct` or `json`")),
                }
            }
            "explode" | "explode_outer" => {
                let path = value.trim();
                self.explode =
                    (!path.is_empty()).then(|| Explode { path: path.to_owned(), outer: key == "explode_outer" });
            }
            _ => {
                return Err(format!(
                    "unknown mapping option `{key}` (the options are {}, {})",
                    Self::MAPPING_OPTIONS.join(", "),
                    Self::OTHER_OPTIONS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// The option names [`set`](Self::set) takes that keep one row per record (what SQL
    /// tables take as options).
    pub const MAPPING_OPTIONS: [&'static str; 8] =
        ["oneof_case", "maps", "large", "enums", "flatten", "any", "recursion", "structs"];

    /// The option names [`set`](Self::set) takes besides [`MAPPING_OPTIONS`](Self::MAPPING_OPTIONS),
    /// which SQL tables do not take: those that make rows of a record's elements
    /// ([`explode`](Self::explode); a scan counts a row per record) and
    /// [`extensions`](Self::extensions) (a scan's projection cannot name them yet).
    pub const OTHER_OPTIONS: [&'static str; 3] = ["explode", "explode_outer", "extensions"];

    /// Whether any option changes the shape of the columns the conversion paths fill
    /// (the reshaping stage runs when a batch is finished).
    pub(crate) fn reshapes(&self) -> bool {
        self.oneof_case
            || self.maps != MapColumns::Map
            || self.large
            || self.flatten
            || self.enums == EnumColumns::String
            || self.explode.is_some()
            || self.any == AnyColumns::Json
    }
}
