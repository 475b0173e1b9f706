//! Loads protobuf editions (2023, 2024) descriptor sets: resolves every feature and lowers each editions file to an equivalent proto2 file.
//!
//! The descriptor library (prost-reflect 0.16) knows proto2 and proto3 only, and
//! prost-types drops `edition` and `features` as unknown fields. So the serialized set is
//! walked here directly, once: proto2/proto3 files are copied as they are; an editions file
//! has its features resolved (file → message → oneof → field, enum → value, extensions in
//! their declaring scope, over the edition's defaults) and is rewritten in place as proto2:
//! `LEGACY_REQUIRED` becomes `required`, a `DELIMITED` message field a group, `PACKED` the
//! `packed` option, and `features` are stripped. Everything else (custom options, unknown
//! fields) keeps its bytes, so the lowered set goes to `DescriptorPool::decode_file_descriptor_set`
//! exactly as a proto2/proto3 set does. What proto2 cannot say travels in [`DeclaredFeatures`].

mod error;
mod wire;

pub use error::EditionsError;

use wire::{
    fields, file_has, is_map_entry_options, map_entry_name, put_len, put_uint, tag, utf8, Field, Reader, Value,
};

use protojit_arena::{
    DeclaredFeatures, DefaultSymbolVisibility, Edition, EnforceNamingStyle, EnumTypeFeature, FeatureSet, FieldPresence,
    JsonFormat, MessageEncoding, RepeatedFieldEncoding, Utf8Validation,
};

/// A descriptor set ready for the descriptor library, and the features of its editions files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoweredSet {
    /// The serialized `FileDescriptorSet`, every editions file rewritten as proto2 (custom
    /// options and unknown fields byte for byte; decode it with
    /// `DescriptorPool::decode_file_descriptor_set` to keep them).
    pub bytes: Vec<u8>,
    /// Resolved features of every element of the editions files, by name.
    pub declared: DeclaredFeatures,
    /// Whether any file of the set was written in an edition.
    pub has_editions: bool,
}

impl LoweredSet {
    /// The lowered set as prost-types (which drops extension options; prefer
    /// [`bytes`](Self::bytes)). Fails where prost-types is stricter than the wire walk
    /// (a name that is not UTF-8, say).
    pub fn file_descriptor_set(&self) -> Result<prost_types::FileDescriptorSet, prost::DecodeError> {
        <prost_types::FileDescriptorSet as prost::Message>::decode(self.bytes.as_slice())
    }
}

/// Resolves and lowers every editions file of a serialized `FileDescriptorSet`.
pub fn lower_descriptor_set(bytes: &[u8]) -> Result<LoweredSet, EditionsError> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16);
    let mut declared = DeclaredFeatures::default();
    let mut has_editions = false;
    let mut r = Reader::new(bytes);
    while let Some(f) = r.next(None)? {
        match f {
            Field { number: 1, value: Value::Len(file), .. } => match file_edition(file)? {
                (_, Edition::Proto2 | Edition::Proto3) => out.extend_from_slice(f.raw),
                (name, edition) => {
                    has_editions = true;
                    let mut cx = Cx { file: name, edition, out: &mut declared };
                    let lowered = cx.lower_file(file)?;
                    put_len(&mut out, 1, &lowered);
                }
            },
            _ => out.extend_from_slice(f.raw),
        }
    }
    Ok(LoweredSet { bytes: out, declared, has_editions })
}

/// The name and edition of a serialized `FileDescriptorProto` (only its top level is read).
fn file_edition(file: &[u8]) -> Result<(&str, Edition), EditionsError> {
    let (mut name, mut syntax, mut edition) = ("", None, None);
    for f in fields(file, "?")? {
        match (f.number, f.value) {
            (tag::FILE_NAME, Value::Len(v)) => name = utf8(v, "?")?,
            (tag::FILE_SYNTAX, Value::Len(v)) => syntax = Some(v),
            (tag::FILE_EDITION, Value::Varint(v)) => edition = Some(v),
            _ => {}
        }
    }
    let unsupported = |n: u64| EditionsError::UnsupportedEdition { file: name.to_owned(), edition: edition_name(n) };
    let ed = match (syntax, edition) {
        (None | Some(b"proto2"), None | Some(998)) => Edition::Proto2,
        (Some(b"proto3"), None | Some(999)) => Edition::Proto3,
        (Some(b"editions") | None, Some(1000)) => Edition::Edition2023,
        (Some(b"editions") | None, Some(1001)) => Edition::Edition2024,
        (Some(b"editions") | None, Some(n)) => return Err(unsupported(n)),
        (Some(b"editions"), None) => return Err(unsupported(0)),
        (Some(s @ (b"proto2" | b"proto3")), Some(n)) => {
            return Err(EditionsError::Malformed {
                what: format!(
                    "file `{name}` has syntax {:?} and edition {}",
                    String::from_utf8_lossy(s),
                    edition_name(n)
                ),
            })
        }
        (Some(s), _) => {
            return Err(EditionsError::UnknownSyntax {
                file: name.to_owned(),
                syntax: String::from_utf8_lossy(s).into_owned(),
            })
        }
    };
    Ok((name, ed))
}

/// descriptor.proto's name of an `Edition` value.
fn edition_name(n: u64) -> String {
    let known = match n {
        0 => "EDITION_UNKNOWN (no edition given)",
        900 => "EDITION_LEGACY",
        998 => "EDITION_PROTO2",
        999 => "EDITION_PROTO3",
        1000 => "2023",
        1001 => "2024",
        1002 => "EDITION_2026",
        9999 => "EDITION_UNSTABLE",
        1 => "EDITION_1_TEST_ONLY",
        2 => "EDITION_2_TEST_ONLY",
        99997 => "EDITION_99997_TEST_ONLY",
        99998 => "EDITION_99998_TEST_ONLY",
        99999 => "EDITION_99999_TEST_ONLY",
        0x7fff_ffff => "EDITION_MAX",
        _ => return format!("number {n}"),
    };
    known.to_owned()
}

// ---- resolution and lowering -------------------------------------------------------------

/// The file being lowered and where its declarations go.
struct Cx<'a> {
    file: &'a str,
    edition: Edition,
    out: &'a mut DeclaredFeatures,
}

/// A parsed `features` override (`None`: inherit).
#[derive(Default)]
struct Overrides {
    field_presence: Option<FieldPresence>,
    enum_type: Option<EnumTypeFeature>,
    repeated_field_encoding: Option<RepeatedFieldEncoding>,
    utf8_validation: Option<Utf8Validation>,
    message_encoding: Option<MessageEncoding>,
    json_format: Option<JsonFormat>,
    enforce_naming_style: Option<EnforceNamingStyle>,
    default_symbol_visibility: Option<DefaultSymbolVisibility>,
}

impl Overrides {
    fn over(self, parent: FeatureSet) -> FeatureSet {
        FeatureSet {
            field_presence: self.field_presence.unwrap_or(parent.field_presence),
            enum_type: self.enum_type.unwrap_or(parent.enum_type),
            repeated_field_encoding: self.repeated_field_encoding.unwrap_or(parent.repeated_field_encoding),
            utf8_validation: self.utf8_validation.unwrap_or(parent.utf8_validation),
            message_encoding: self.message_encoding.unwrap_or(parent.message_encoding),
            json_format: self.json_format.unwrap_or(parent.json_format),
            enforce_naming_style: self.enforce_naming_style.unwrap_or(parent.enforce_naming_style),
            default_symbol_visibility: self.default_symbol_visibility.unwrap_or(parent.default_symbol_visibility),
        }
    }
}

fn join(scope: &str, name: &str) -> String {
    // Not `format!`: it showed in profiles, once per message, enum and extension.
    let mut full = String::with_capacity(scope.len() + 1 + name.len());
    if !scope.is_empty() {
        full.push_str(scope);
        full.push('.');
    }
    full.push_str(name);
    full
}

impl Cx<'_> {
    /// Parses a serialized `FeatureSet`; language (`pb.cpp` = 1000, …) and custom feature
    /// extensions (1000 and up) are skipped: they change no decoding.
    fn features(&self, bytes: &[u8], element: &dyn Fn() -> String) -> Result<Overrides, EditionsError> {
        let mut o = Overrides::default();
        let mut r = Reader::new(bytes);
        while let Some(f) = r.next(Some(self.file))? {
            if f.number >= 1000 {
                continue;
            }
            let Value::Varint(v) = f.value else {
                return Err(self.unknown_feature(element(), f.number));
            };
            macro_rules! set {
                ($slot:ident, $ty:ident, $name:literal, $expected:literal) => {
                    o.$slot = Some($ty::from_number(v).ok_or_else(|| EditionsError::UnknownFeatureValue {
                        file: self.file.to_owned(),
                        element: element(),
                        feature: $name,
                        value: v,
                        edition: self.edition.name(),
                        expected: $expected.to_owned(),
                    })?)
                };
            }
            match f.number {
                1 => set!(field_presence, FieldPresence, "field_presence", "EXPLICIT, IMPLICIT, LEGACY_REQUIRED"),
                2 => set!(enum_type, EnumTypeFeature, "enum_type", "OPEN, CLOSED"),
                3 => {
                    set!(repeated_field_encoding, RepeatedFieldEncoding, "repeated_field_encoding", "PACKED, EXPANDED")
                }
                4 => set!(utf8_validation, Utf8Validation, "utf8_validation", "VERIFY, NONE"),
                5 => set!(message_encoding, MessageEncoding, "message_encoding", "LENGTH_PREFIXED, DELIMITED"),
                6 => set!(json_format, JsonFormat, "json_format", "ALLOW, LEGACY_BEST_EFFORT"),
                7 => set!(enforce_naming_style, EnforceNamingStyle, "enforce_naming_style", "STYLE2024, STYLE_LEGACY"),
                8 => set!(
                    default_symbol_visibility,
                    DefaultSymbolVisibility,
                    "default_symbol_visibility",
                    "EXPORT_ALL, EXPORT_TOP_LEVEL, LOCAL_ALL, STRICT"
                ),
                n => return Err(self.unknown_feature(element(), n)),
            }
        }
        Ok(o)
    }

    fn unknown_feature(&self, element: String, number: u64) -> EditionsError {
        EditionsError::UnknownFeature { file: self.file.to_owned(), element, number, edition: self.edition.name() }
    }

    /// The `features` override inside a serialized options message, if any.
    fn options_features(
        &self,
        options: &[u8],
        features_tag: u64,
        element: &dyn Fn() -> String,
    ) -> Result<(Overrides, bool), EditionsError> {
        let mut o = Overrides::default();
        let mut found = false;
        let mut r = Reader::new(options);
        while let Some(f) = r.next(Some(self.file))? {
            if let (true, Value::Len(v)) = (f.number == features_tag, f.value) {
                found = true;
                // Repeated occurrences of a message field merge, so later values win.
                let next = self.features(v, element)?;
                o = Overrides {
                    field_presence: next.field_presence.or(o.field_presence),
                    enum_type: next.enum_type.or(o.enum_type),
                    repeated_field_encoding: next.repeated_field_encoding.or(o.repeated_field_encoding),
                    utf8_validation: next.utf8_validation.or(o.utf8_validation),
                    message_encoding: next.message_encoding.or(o.message_encoding),
                    json_format: next.json_format.or(o.json_format),
                    enforce_naming_style: next.enforce_naming_style.or(o.enforce_naming_style),
                    default_symbol_visibility: next.default_symbol_visibility.or(o.default_symbol_visibility),
                };
            }
        }
        Ok((o, found))
    }

    /// Copies an options message without its `features`, appending `extra` fields.
    fn strip_options(&self, options: &[u8], features_tag: u64, drop_packed: bool) -> Result<Vec<u8>, EditionsError> {
        let mut out = Vec::with_capacity(options.len());
        let mut r = Reader::new(options);
        while let Some(f) = r.next(Some(self.file))? {
            if f.number != features_tag && !(drop_packed && f.number == tag::FIELD_PACKED) {
                out.extend_from_slice(f.raw);
            }
        }
        Ok(out)
    }

    fn lower_file(&mut self, file: &[u8]) -> Result<Vec<u8>, EditionsError> {
        let all = fields(file, self.file)?;
        let mut package = "";
        let mut own = Overrides::default();
        for f in &all {
            match (f.number, f.value) {
                (tag::FILE_PACKAGE, Value::Len(v)) => package = utf8(v, self.file)?,
                (tag::FILE_OPTIONS, Value::Len(v)) => {
                    own = self.options_features(v, tag::FILE_FEATURES, &|| "file options".to_owned())?.0
                }
                _ => {}
            }
        }
        let set = own.over(FeatureSet::defaults(self.edition));
        self.out.files.insert(self.file.to_owned(), (self.edition, set));
        let mut out = Vec::with_capacity(file.len());
        for f in all {
            match (f.number, f.value) {
                (tag::FILE_MESSAGE, Value::Len(v)) => {
                    put_len(&mut out, f.number, &self.lower_message(v, package, set)?)
                }
                (tag::FILE_ENUM, Value::Len(v)) => put_len(&mut out, f.number, &self.lower_enum(v, package, set)?),
                (tag::FILE_EXTENSION, Value::Len(v)) => {
                    let (name, _, fset) =
                        self.lower_field(&mut out, f.number, v, f.raw, package, set, &[], false, None)?;
                    self.out.extensions.insert(join(package, utf8(name, self.file)?), fset);
                }
                (tag::FILE_SERVICE, Value::Len(v)) => put_len(&mut out, f.number, &self.lower_service(v)?),
                (tag::FILE_OPTIONS, Value::Len(v)) => {
                    put_len(&mut out, f.number, &self.strip_options(v, tag::FILE_FEATURES, false)?)
                }
                (tag::FILE_SYNTAX, _) => put_len(&mut out, tag::FILE_SYNTAX, b"proto2"),
                (tag::FILE_EDITION, _) => {}
                _ => out.extend_from_slice(f.raw),
            }
        }
        if !file_has(&out, tag::FILE_SYNTAX) {
            put_len(&mut out, tag::FILE_SYNTAX, b"proto2");
        }
        Ok(out)
    }

    fn lower_message(&mut self, msg: &[u8], scope: &str, parent: FeatureSet) -> Result<Vec<u8>, EditionsError> {
        let all = fields(msg, self.file)?;
        let mut name = "";
        let mut options = None;
        let mut oneofs = Vec::new();
        let mut is_map_entry = false;
        let mut nested: Vec<&[u8]> = Vec::new();
        for f in &all {
            match (f.number, f.value) {
                (tag::MSG_NAME, Value::Len(v)) => name = utf8(v, self.file)?,
                (tag::MSG_OPTIONS, Value::Len(v)) => {
                    options = Some(v);
                    is_map_entry = is_map_entry_options(v, self.file)?;
                }
                (tag::MSG_NESTED, Value::Len(v)) => nested.push(v),
                _ => {}
            }
        }
        let full = join(scope, name);
        let own = match options {
            Some(v) => self.options_features(v, tag::MSG_FEATURES, &|| format!("message `{full}`"))?.0,
            None => Overrides::default(),
        };
        let set = own.over(parent);
        for f in &all {
            if let (tag::MSG_ONEOF, Value::Len(v)) = (f.number, f.value) {
                let mut oneof_set = set;
                for o in fields(v, self.file)? {
                    if let (tag::ONEOF_OPTIONS, Value::Len(opts)) = (o.number, o.value) {
                        let element = || format!("oneof {} of `{full}`", oneofs.len());
                        oneof_set = self.options_features(opts, tag::ONEOF_FEATURES, &element)?.0.over(set);
                    }
                }
                oneofs.push(oneof_set);
            }
        }
        let entries = MapEntries { scope: &full, nested, names: std::cell::OnceCell::new() };
        let mut field_sets = Vec::new();
        let mut out = Vec::with_capacity(msg.len());
        for f in &all {
            match (f.number, f.value) {
                (tag::MSG_FIELD, Value::Len(v)) => {
                    let (_, number, fset) = self.lower_field(
                        &mut out,
                        f.number,
                        v,
                        f.raw,
                        &full,
                        set,
                        &oneofs,
                        is_map_entry,
                        Some(&entries),
                    )?;
                    field_sets.push((number, fset));
                }
                (tag::MSG_EXTENSION, Value::Len(v)) => {
                    let (name, _, fset) =
                        self.lower_field(&mut out, f.number, v, f.raw, &full, set, &[], false, None)?;
                    self.out.extensions.insert(join(&full, utf8(name, self.file)?), fset);
                }
                (tag::MSG_NESTED, Value::Len(v)) => put_len(&mut out, f.number, &self.lower_message(v, &full, set)?),
                (tag::MSG_ENUM, Value::Len(v)) => put_len(&mut out, f.number, &self.lower_enum(v, &full, set)?),
                (tag::MSG_OPTIONS, Value::Len(v)) => {
                    put_len(&mut out, f.number, &self.strip_options(v, tag::MSG_FEATURES, false)?)
                }
                (tag::MSG_ONEOF, Value::Len(v)) => {
                    let mut oneof = Vec::with_capacity(v.len());
                    for o in fields(v, self.file)? {
                        match (o.number, o.value) {
                            (tag::ONEOF_OPTIONS, Value::Len(opts)) => {
                                put_len(&mut oneof, o.number, &self.strip_options(opts, tag::ONEOF_FEATURES, false)?)
                            }
                            _ => oneof.extend_from_slice(o.raw),
                        }
                    }
                    put_len(&mut out, f.number, &oneof);
                }
                (tag::MSG_EXTENSION_RANGE, Value::Len(v)) => {
                    // Range features only steer extension declarations: checked, then stripped.
                    let mut range = Vec::with_capacity(v.len());
                    for x in fields(v, self.file)? {
                        match (x.number, x.value) {
                            (tag::RANGE_OPTIONS, Value::Len(opts)) => {
                                let element = || format!("extension range of `{full}`");
                                self.options_features(opts, tag::RANGE_FEATURES, &element)?;
                                put_len(&mut range, x.number, &self.strip_options(opts, tag::RANGE_FEATURES, false)?)
                            }
                            _ => range.extend_from_slice(x.raw),
                        }
                    }
                    put_len(&mut out, f.number, &range);
                }
                _ => out.extend_from_slice(f.raw),
            }
        }
        field_sets.sort_unstable_by_key(|(n, _)| *n);
        self.out.messages.insert(full, (set, field_sets));
        Ok(out)
    }

    /// Resolves and lowers one field or extension into `out` (with its tag `out_tag`);
    /// returns its name, number and set. A field the lowering leaves alone is copied whole.
    #[allow(clippy::too_many_arguments)]
    fn lower_field<'b>(
        &mut self,
        out: &mut Vec<u8>,
        out_tag: u64,
        field: &'b [u8],
        raw: &[u8],
        scope: &str,
        message_set: FeatureSet,
        oneofs: &[FeatureSet],
        in_map_entry: bool,
        map_entries: Option<&MapEntries<'_>>,
    ) -> Result<(&'b [u8], u32, FeatureSet), EditionsError> {
        let (mut name, mut label, mut ty, mut type_name, mut options, mut oneof): (&[u8], _, _, &[u8], _, _) =
            (b"", None, None, b"", None, None);
        let mut number = 0;
        let mut r = Reader::new(field);
        while let Some(f) = r.next(Some(self.file))? {
            match (f.number, f.value) {
                (tag::FIELD_NAME, Value::Len(v)) => name = v,
                (tag::FIELD_NUMBER, Value::Varint(v)) => number = v as u32,
                (tag::FIELD_LABEL, Value::Varint(v)) => label = Some(v),
                (tag::FIELD_TYPE, Value::Varint(v)) => ty = Some(v),
                (tag::FIELD_TYPE_NAME, Value::Len(v)) => type_name = v,
                (tag::FIELD_OPTIONS, Value::Len(v)) => options = Some(v),
                (tag::FIELD_ONEOF_INDEX, Value::Varint(v)) => oneof = Some(v),
                _ => {}
            }
        }
        // Names are only needed for errors: built then, not per field.
        let element = || format!("field `{}`", join(scope, &String::from_utf8_lossy(name)));
        // A oneof member inherits from its oneof, the oneof from the message.
        let parent = oneof.and_then(|i| oneofs.get(i as usize)).copied().unwrap_or(message_set);
        let (own, has_features) = match options {
            Some(v) => self.options_features(v, tag::FIELD_FEATURES, &element)?,
            None => (Overrides::default(), false),
        };
        let set = own.over(parent);
        let required = set.field_presence == FieldPresence::LegacyRequired && label == Some(tag::LABEL_OPTIONAL);
        // As protoc: DELIMITED makes a group of a message field, except in and of map entries.
        let delimited = set.message_encoding == MessageEncoding::Delimited
            && !in_map_entry
            && matches!(ty, Some(tag::TYPE_MESSAGE) | None)
            && !map_entries.map_or(Ok(false), |m| m.contains(type_name, self.file))?;
        let to_group = match ty {
            Some(tag::TYPE_MESSAGE) => delimited,
            None if delimited && !type_name.is_empty() => {
                return Err(EditionsError::UnresolvedType { file: self.file.to_owned(), element: element() })
            }
            _ => false,
        };
        let packed = label == Some(tag::LABEL_REPEATED)
            && ty.is_some_and(is_packable)
            && set.repeated_field_encoding == RepeatedFieldEncoding::Packed;
        if !(has_features || required || to_group || packed) {
            out.extend_from_slice(raw);
            return Ok((name, number, set));
        }
        let mut lowered = Vec::with_capacity(field.len() + 4);
        let mut wrote_options = false;
        let mut r = Reader::new(field);
        while let Some(f) = r.next(Some(self.file))? {
            match (f.number, f.value) {
                (tag::FIELD_LABEL, _) if required => put_uint(&mut lowered, tag::FIELD_LABEL, tag::LABEL_REQUIRED),
                (tag::FIELD_TYPE, _) if to_group => put_uint(&mut lowered, tag::FIELD_TYPE, tag::TYPE_GROUP),
                (tag::FIELD_OPTIONS, Value::Len(v)) => {
                    let mut opts = self.strip_options(v, tag::FIELD_FEATURES, true)?;
                    if packed {
                        put_uint(&mut opts, tag::FIELD_PACKED, 1);
                    }
                    put_len(&mut lowered, tag::FIELD_OPTIONS, &opts);
                    wrote_options = true;
                }
                _ => lowered.extend_from_slice(f.raw),
            }
        }
        if packed && !wrote_options {
            put_len(&mut lowered, tag::FIELD_OPTIONS, &[(tag::FIELD_PACKED << 3) as u8, 1]);
        }
        put_len(out, out_tag, &lowered);
        Ok((name, number, set))
    }

    fn lower_enum(&mut self, e: &[u8], scope: &str, parent: FeatureSet) -> Result<Vec<u8>, EditionsError> {
        let all = fields(e, self.file)?;
        let name = match all.iter().find(|f| f.number == tag::ENUM_NAME) {
            Some(Field { value: Value::Len(v), .. }) => utf8(v, self.file)?,
            _ => "",
        };
        let full = join(scope, name);
        let mut set = parent;
        let mut out = Vec::with_capacity(e.len());
        for f in &all {
            match (f.number, f.value) {
                (tag::ENUM_OPTIONS, Value::Len(v)) => {
                    set = self.options_features(v, tag::ENUM_FEATURES, &|| format!("enum `{full}`"))?.0.over(parent);
                    put_len(&mut out, f.number, &self.strip_options(v, tag::ENUM_FEATURES, false)?);
                }
                (tag::ENUM_VALUE, Value::Len(v)) => {
                    let mut value = Vec::with_capacity(v.len());
                    let values = fields(v, self.file)?;
                    let vname = match values.iter().find(|f| f.number == tag::VALUE_NAME) {
                        Some(Field { value: Value::Len(n), .. }) => utf8(n, self.file)?,
                        _ => "",
                    };
                    for x in values.iter() {
                        match (x.number, x.value) {
                            (tag::VALUE_OPTIONS, Value::Len(opts)) => {
                                // Values resolve (and fail on unknown values) though no feature reads them.
                                let element = || format!("enum value `{}`", join(scope, vname));
                                self.options_features(opts, tag::VALUE_FEATURES, &element)?;
                                put_len(&mut value, x.number, &self.strip_options(opts, tag::VALUE_FEATURES, false)?);
                            }
                            _ => value.extend_from_slice(x.raw),
                        }
                    }
                    put_len(&mut out, f.number, &value);
                }
                _ => out.extend_from_slice(f.raw),
            }
        }
        self.out.enums.insert(full, set);
        Ok(out)
    }

    /// Services decode nothing; their features are only stripped.
    fn lower_service(&self, s: &[u8]) -> Result<Vec<u8>, EditionsError> {
        let mut out = Vec::with_capacity(s.len());
        for f in fields(s, self.file)? {
            match (f.number, f.value) {
                (tag::SERVICE_OPTIONS, Value::Len(v)) => {
                    put_len(&mut out, f.number, &self.strip_options(v, tag::SERVICE_FEATURES, false)?)
                }
                (tag::SERVICE_METHOD, Value::Len(v)) => {
                    let mut m = Vec::with_capacity(v.len());
                    for x in fields(v, self.file)? {
                        match (x.number, x.value) {
                            (tag::METHOD_OPTIONS, Value::Len(opts)) => {
                                put_len(&mut m, x.number, &self.strip_options(opts, tag::METHOD_FEATURES, false)?)
                            }
                            _ => m.extend_from_slice(x.raw),
                        }
                    }
                    put_len(&mut out, f.number, &m);
                }
                _ => out.extend_from_slice(f.raw),
            }
        }
        Ok(out)
    }
}

/// The map entries nested in a message, by `.full.Name`, found only if a field may be
/// DELIMITED (a map field stays length-prefixed): most files never ask.
struct MapEntries<'a> {
    scope: &'a str,
    nested: Vec<&'a [u8]>,
    names: std::cell::OnceCell<Vec<String>>,
}

impl MapEntries<'_> {
    fn contains(&self, type_name: &[u8], file: &str) -> Result<bool, EditionsError> {
        if self.names.get().is_none() {
            let mut names = Vec::new();
            for n in &self.nested {
                if let Some(entry) = map_entry_name(n, file)? {
                    let mut name = String::with_capacity(2 + self.scope.len() + entry.len());
                    name.push('.');
                    name.push_str(&join(self.scope, entry));
                    names.push(name);
                }
            }
            let _ = self.names.set(names);
        }
        Ok(self.names.get().is_some_and(|v| v.iter().any(|e| e.as_bytes() == type_name)))
    }
}

/// Scalars and enums may be packed; strings, bytes, messages and groups may not.
fn is_packable(ty: u64) -> bool {
    matches!(ty, 1..=8 | 13..=18)
}
