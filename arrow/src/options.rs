//! What a converter is asked for: which fields, how enums, strings and well-known types become columns, which path turns records into rows, and the decoder's options.

use protojit::{EngineOptions, Utf8Check};

use crate::framing::Framing;

/// How enum fields become columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EnumColumns {
    /// `Dictionary<Int32, Utf8>` of value names (the default).
    #[default]
    Dictionary,
    /// `Int32`: the numbers on the wire.
    Number,
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
            decode: EngineOptions::default().with_utf8(Utf8Check::All),
        }
    }
}
