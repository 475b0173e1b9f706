//! The mapping options as command-line flags (feature `clap`): one `clap::Args` that `protojit decode`, `schema arrow`, `sql` and `protojit-ballista sql` all flatten in, and the explode flags, which only commands that write a table flatten in.

use clap::Args;

use crate::{AnyColumns, ArrowOptions, EnumColumns, Explode, MapColumns, RecursionColumns, StructColumns};

/// How protobuf fields become columns: each flag sets one [`ArrowOptions`] mapping option;
/// a flag left out keeps the default mapping.
#[derive(Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct MappingArgs {
    /// Columns: a `<oneof>_case` column per oneof, the name of the member set (a
    /// dictionary; null when none is).
    #[arg(long)]
    pub oneof_case: bool,
    /// Columns: map fields as `map` (Map<K, V>, the default) or `entries` (a list of
    /// key/value structs, for engines without a map type).
    #[arg(long, value_enum, value_name = "SHAPE")]
    pub maps: Option<MapColumns>,
    /// Columns: LargeUtf8, LargeBinary and LargeList (64-bit offsets) instead of Utf8,
    /// Binary and List.
    #[arg(long)]
    pub large: bool,
    /// Columns: enums as a `dictionary` of names (the default), `number`s (Int32) or
    /// `string`s (plain Utf8 names).
    #[arg(long, value_enum, value_name = "AS")]
    pub enums: Option<EnumColumns>,
    /// Columns: singular message fields as top-level columns named by their path (`a.b.c`).
    #[arg(long)]
    pub flatten: bool,
    /// Columns: google.protobuf.Any fields as a `struct` (type_url, value: the default) or
    /// as `json` text of the packed message (resolved through the schema).
    #[arg(long, value_enum, value_name = "AS")]
    pub any: Option<AnyColumns>,
    /// Columns: where a recursive type is cut, the field is left out (`cut`, the default)
    /// or holds the subtree as `json` text.
    #[arg(long, value_enum, value_name = "AS")]
    pub recursion: Option<RecursionColumns>,
    /// Columns: google.protobuf.Struct, Value and ListValue as the `struct`s they are (the
    /// default, cut at the recursion limit) or as `json` text, whole.
    #[arg(long, value_enum, value_name = "AS")]
    pub structs: Option<StructColumns>,
}

impl MappingArgs {
    /// Sets the options the flags give on `options`.
    pub fn apply(&self, options: &mut ArrowOptions) {
        options.oneof_case |= self.oneof_case;
        if let Some(maps) = self.maps {
            options.maps = maps;
        }
        options.large |= self.large;
        if let Some(enums) = self.enums {
            options.enums = enums;
        }
        options.flatten |= self.flatten;
        if let Some(any) = self.any {
            options.any = any;
        }
        if let Some(recursion) = self.recursion {
            options.recursion = recursion;
        }
        if let Some(structs) = self.structs {
            options.structs = structs;
        }
    }

    /// Whether any flag is given (they apply to columnar output only).
    pub fn any(&self) -> bool {
        *self != MappingArgs::default()
    }
}

/// The mapping options SQL tables do not take ([`ArrowOptions::OTHER_OPTIONS`]): rows of a
/// record's elements (`--explode PATH` / `--explode-outer PATH`,
/// [`ArrowOptions::explode`]) and extension columns (`--extensions`,
/// [`ArrowOptions::extensions`]). Apart from [`MappingArgs`] because `schema arrow`, `decode`
/// and `sql` take them but not every command that maps columns does.
#[derive(Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct OtherMappingArgs {
    /// Rows: one per element of the repeated field at PATH (`items`, `order.lines`), the
    /// record's other columns repeated on each; records without an element give no row.
    #[arg(long, value_name = "PATH", conflicts_with = "explode_outer")]
    pub explode: Option<String>,
    /// Rows: as --explode, and a record without an element keeps one row, its element null.
    #[arg(long, value_name = "PATH")]
    pub explode_outer: Option<String>,
    /// Columns: extensions declared in the schema for the converted types, named
    /// `[pkg.ext]`, after each message's fields.
    #[arg(long)]
    pub extensions: bool,
}

impl OtherMappingArgs {
    /// Sets the option the flags give on `options`.
    pub fn apply(&self, options: &mut ArrowOptions) {
        if let Some(path) = &self.explode {
            options.explode = Some(Explode { path: path.clone(), outer: false });
        }
        if let Some(path) = &self.explode_outer {
            options.explode = Some(Explode { path: path.clone(), outer: true });
        }
        options.extensions |= self.extensions;
    }

    /// Whether a flag is given (they apply to columnar output only).
    pub fn any(&self) -> bool {
        *self != OtherMappingArgs::default()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        mapping: MappingArgs,
        #[command(flatten)]
        explode: OtherMappingArgs,
    }

    fn options(args: &[&str]) -> Result<ArrowOptions, String> {
        let command =
            Command::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        let mut options = ArrowOptions::default();
        command.mapping.apply(&mut options);
        command.explode.apply(&mut options);
        Ok(options)
    }

    #[test]
    fn flags_set_their_options() {
        let o = options(&[
            "--oneof-case",
            "--maps",
            "entries",
            "--large",
            "--enums",
            "string",
            "--flatten",
            "--any",
            "json",
        ])
        .unwrap();
        assert!(o.oneof_case && o.large && o.flatten);
        assert_eq!(o.any, AnyColumns::Json);
        assert_eq!(options(&["--recursion", "json"]).unwrap().recursion, RecursionColumns::Json);
        assert_eq!(options(&[]).unwrap().recursion, RecursionColumns::Cut);
        assert_eq!(options(&["--structs", "json"]).unwrap().structs, StructColumns::Json);
        assert_eq!((o.maps, o.enums), (MapColumns::Entries, EnumColumns::String));
        let o = options(&[]).unwrap();
        assert!(!o.oneof_case && !o.large && !o.flatten);
        assert_eq!((o.maps, o.enums), (MapColumns::Map, EnumColumns::Dictionary));
        assert!(options(&["--maps", "list"]).is_err());
        assert!(options(&["--any", "text"]).is_err());
        assert_eq!(options(&[]).unwrap().any, AnyColumns::Struct);
        assert_eq!(o.explode, None);
    }

    #[test]
    fn explode_flags_set_the_path() {
        let o = options(&["--explode", "order.lines"]).unwrap();
        assert_eq!(o.explode, Some(Explode { path: "order.lines".into(), outer: false }));
        let o = options(&["--explode-outer", "items", "--flatten"]).unwrap();
        assert_eq!(o.explode, Some(Explode { path: "items".into(), outer: true }));
        assert!(o.flatten);
        assert!(options(&["--explode", "a", "--explode-outer", "b"]).is_err());
        assert!(options(&["--extensions"]).unwrap().extensions);
        assert!(!options(&[]).unwrap().extensions);
    }
}
