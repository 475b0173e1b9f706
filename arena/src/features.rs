//! Resolved protobuf features per field, message and enum of a pool: editions, with proto2 and proto3 as two fixed feature sets.
//!
//! Layouts, decoders and writers read these, never a file's syntax: an editions file is
//! lowered to proto2 for the descriptor library (see the root crate's `editions` module),
//! and what proto2 cannot say (implicit presence, open enums, UTF-8 checks, the JSON
//! format) is only here. The loader hands over [`DeclaredFeatures`] (by name, for the
//! editions files of a set); [`PoolFeatures::new`] turns them, with the fixed sets of the
//! proto2 and proto3 files, into dense tables in the pool's own order.

use std::collections::HashMap;

use prost_reflect::{
    Cardinality, DescriptorPool, EnumDescriptor, ExtensionDescriptor, FieldDescriptor, FileDescriptor, Kind,
    MessageDescriptor, Syntax,
};

/// The edition (or legacy syntax) a file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edition {
    /// `syntax = "proto2"` (or no syntax): protobuf's `EDITION_PROTO2` feature set.
    Proto2,
    /// `syntax = "proto3"`: `EDITION_PROTO3`.
    Proto3,
    /// `edition = "2023"`.
    Edition2023,
    /// `edition = "2024"`.
    Edition2024,
}

impl Edition {
    /// As written in a `.proto` file: `proto2`, `proto3`, `2023`, `2024`.
    pub const fn name(self) -> &'static str {
        match self {
            Edition::Proto2 => "proto2",
            Edition::Proto3 => "proto3",
            Edition::Edition2023 => "2023",
            Edition::Edition2024 => "2024",
        }
    }

    /// The value of descriptor.proto's `Edition` enum.
    pub const fn number(self) -> i32 {
        match self {
            Edition::Proto2 => 998,
            Edition::Proto3 => 999,
            Edition::Edition2023 => 1000,
            Edition::Edition2024 => 1001,
        }
    }
}

macro_rules! feature_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $num:literal => $text:literal,)+ }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $(#[doc = concat!("`", $text, "`")] $(#[doc = ""] #[$vm])* $variant,)+ }
        impl $name {
            /// The value of descriptor.proto's enum, if this build knows it.
            pub const fn from_number(n: u64) -> Option<Self> {
                match n { $($num => Some($name::$variant),)+ _ => None }
            }
            /// The value's name in descriptor.proto.
            pub const fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }
    };
}

feature_enum!(
    /// `field_presence`: whether an unset singular field is told apart from its default.
    FieldPresence {
        /// Set or not, whatever the value (proto2 `optional`, proto3 `optional`, messages, oneofs).
        Explicit = 1 => "EXPLICIT",
        /// No presence: a default value is the same as absent (proto3 scalars, and repeated fields).
        Implicit = 2 => "IMPLICIT",
        /// proto2 `required`.
        LegacyRequired = 3 => "LEGACY_REQUIRED",
    }
);
feature_enum!(
    /// `enum_type`: whether unknown numbers are kept in the field (open) or moved to unknown fields (closed)
    /// (named apart from the layouts' `EnumType`).
    EnumTypeFeature { Open = 1 => "OPEN", Closed = 2 => "CLOSED", }
);
feature_enum!(
    /// `repeated_field_encoding`: how repeated scalars are written (decoders accept both).
    RepeatedFieldEncoding { Packed = 1 => "PACKED", Expanded = 2 => "EXPANDED", }
);
feature_enum!(
    /// `utf8_validation`: whether `string` fields must hold valid UTF-8.
    Utf8Validation { Verify = 2 => "VERIFY", None = 3 => "NONE", }
);
feature_enum!(
    /// `message_encoding`: a message field on the wire as a length-prefixed record or as a group.
    MessageEncoding { LengthPrefixed = 1 => "LENGTH_PREFIXED", Delimited = 2 => "DELIMITED", }
);
feature_enum!(
    /// `json_format`: whether the type must have a well-formed proto3 JSON form.
    JsonFormat { Allow = 1 => "ALLOW", LegacyBestEffort = 2 => "LEGACY_BEST_EFFORT", }
);
feature_enum!(
    /// `enforce_naming_style` (edition 2024): checked by protoc; changes no decoding.
    EnforceNamingStyle { Style2024 = 1 => "STYLE2024", StyleLegacy = 2 => "STYLE_LEGACY", }
);
feature_enum!(
    /// `default_symbol_visibility` (edition 2024): checked by protoc; changes no decoding.
    DefaultSymbolVisibility {
        ExportAll = 1 => "EXPORT_ALL",
        ExportTopLevel = 2 => "EXPORT_TOP_LEVEL",
        LocalAll = 3 => "LOCAL_ALL",
        Strict = 4 => "STRICT",
    }
);

/// protobuf's `FeatureSet` with every feature resolved (the language features `pb.cpp`,
/// `pb.java`, … and custom feature extensions are not kept: nothing here reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FeatureSet {
    /// `field_presence` (feature 1).
    pub field_presence: FieldPresence,
    /// `enum_type` (2).
    pub enum_type: EnumTypeFeature,
    /// `repeated_field_encoding` (3).
    pub repeated_field_encoding: RepeatedFieldEncoding,
    /// `utf8_validation` (4).
    pub utf8_validation: Utf8Validation,
    /// `message_encoding` (5).
    pub message_encoding: MessageEncoding,
    /// `json_format` (6).
    pub json_format: JsonFormat,
    /// `enforce_naming_style` (7).
    pub enforce_naming_style: EnforceNamingStyle,
    /// `default_symbol_visibility` (8).
    pub default_symbol_visibility: DefaultSymbolVisibility,
}

impl FeatureSet {
    /// The defaults of an edition, as protobuf's `FeatureSetDefaults` (descriptor.proto's
    /// `edition_defaults`) define them: proto2 is `EDITION_LEGACY`'s set, proto3 overrides
    /// presence, enums, packing, UTF-8 and JSON, 2023 takes proto3's except explicit
    /// presence, 2024 adds its naming style and symbol visibility.
    pub const fn defaults(edition: Edition) -> FeatureSet {
        let legacy = FeatureSet {
            field_presence: FieldPresence::Explicit,
            enum_type: EnumTypeFeature::Closed,
            repeated_field_encoding: RepeatedFieldEncoding::Expanded,
            utf8_validation: Utf8Validation::None,
            message_encoding: MessageEncoding::LengthPrefixed,
            json_format: JsonFormat::LegacyBestEffort,
            enforce_naming_style: EnforceNamingStyle::StyleLegacy,
            default_symbol_visibility: DefaultSymbolVisibility::ExportAll,
        };
        let proto3 = FeatureSet {
            field_presence: FieldPresence::Implicit,
            enum_type: EnumTypeFeature::Open,
            repeated_field_encoding: RepeatedFieldEncoding::Packed,
            utf8_validation: Utf8Validation::Verify,
            json_format: JsonFormat::Allow,
            ..legacy
        };
        let e2023 = FeatureSet { field_presence: FieldPresence::Explicit, ..proto3 };
        match edition {
            Edition::Proto2 => legacy,
            Edition::Proto3 => proto3,
            Edition::Edition2023 => e2023,
            Edition::Edition2024 => FeatureSet {
                enforce_naming_style: EnforceNamingStyle::Style2024,
                default_symbol_visibility: DefaultSymbolVisibility::ExportTopLevel,
                ..e2023
            },
        }
    }
}

/// What an editions file declares, by name: the resolved set of every message, field (in
/// declaration order), enum and extension. The loader fills it; [`PoolFeatures::new`] reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeclaredFeatures {
    /// Editions files by name: edition and resolved file-level set.
    pub files: HashMap<String, (Edition, FeatureSet)>,
    /// Messages by full name: their set and their fields' `(number, set)`, sorted by number.
    pub messages: HashMap<String, (FeatureSet, Vec<(u32, FeatureSet)>)>,
    /// Enums by full name.
    pub enums: HashMap<String, FeatureSet>,
    /// Extensions by full name (resolved in the scope they are declared in).
    pub extensions: HashMap<String, FeatureSet>,
}

/// What a field's features mean for decoding and writing, derived once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldFeatures {
    /// The field's resolved feature set (for display: `schema show`).
    pub set: FeatureSet,
    /// Effective presence: `Implicit` for repeated fields and maps (they have none),
    /// `Explicit` for message fields, oneof members and extensions unless required.
    pub presence: FieldPresence,
    /// An enum field whose enum is closed: unknown numbers go to unknown fields.
    pub closed_enum: bool,
    /// A `string` field (map keys and values included) whose UTF-8 protobuf checks.
    pub validate_utf8: bool,
    /// A message field encoded as a group (proto2 `group`, or `DELIMITED`).
    pub delimited: bool,
    /// A delimited field the text format names by its type, as protoc does for proto2
    /// groups and for editions fields that look like one (the type is named as the field,
    /// capitalised, and declared beside it); other delimited fields keep the field's name.
    pub group_like: bool,
    /// A repeated scalar written packed.
    pub packed: bool,
    /// The containing message's JSON format.
    pub json_format: JsonFormat,
}

impl FieldFeatures {
    /// Whether an unset field is told apart from a default one.
    pub const fn has_presence(&self) -> bool {
        !matches!(self.presence, FieldPresence::Implicit)
    }
}

/// The features of one message type: its own set and its fields', sorted by number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageFeatures {
    /// The message's resolved set.
    pub set: FeatureSet,
    /// `(number, features)` of every field, sorted by number (as layout slots are).
    pub fields: Box<[(u32, FieldFeatures)]>,
}

impl MessageFeatures {
    /// The features of field `number`.
    pub fn field(&self, number: u32) -> Option<&FieldFeatures> {
        self.fields.binary_search_by_key(&number, |(n, _)| *n).ok().map(|i| &self.fields[i].1)
    }
}

/// A descriptor pool and the lowering's declarations disagree.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FeatureError {
    /// The pool holds a different file of the same name than the one lowered.
    #[error(
        "file `{file}`: {element} in the descriptor pool is not the one the editions loader lowered (a file of \
         the same name was already in the pool); load each file once, from one descriptor set"
    )]
    Mismatch {
        /// The file.
        file: String,
        /// The element that differs.
        element: String,
    },
}

/// Dense feature tables of a pool, in its own order: `messages[i]` is the i-th of
/// `pool.all_messages()` (a layout's index), `enums` and `extensions` likewise.
#[derive(Clone, Debug)]
pub struct PoolFeatures {
    pool: DescriptorPool,
    files: Vec<(Edition, FeatureSet)>,
    messages: Vec<MessageFeatures>,
    message_index: HashMap<Box<str>, u32>,
    enums: Vec<FeatureSet>,
    enum_index: HashMap<Box<str>, u32>,
    extensions: Vec<FieldFeatures>,
    extension_index: HashMap<Box<str>, u32>,
}

impl PoolFeatures {
    /// Resolves every element of `pool`: from `declared` for the editions files the loader
    /// lowered, from the fixed proto2/proto3 sets (with their per-field legacy forms:
    /// `required`, `group`, `[packed]`, proto3 `optional`) for every other file.
    pub fn new(pool: &DescriptorPool, declared: &DeclaredFeatures) -> Result<PoolFeatures, FeatureError> {
        let files: Vec<(Edition, FeatureSet)> = pool.files().map(|f| file_set(&f, declared)).collect();
        let enums: Vec<FeatureSet> =
            pool.all_enums().map(|e| enum_set(&e, &files, declared)).collect::<Result<_, _>>()?;
        let enum_index = pool.all_enums().enumerate().map(|(i, e)| (e.full_name().into(), i as u32)).collect();
        let mut me = PoolFeatures {
            pool: pool.clone(),
            files,
            messages: Vec::with_capacity(pool.all_messages().len()),
            message_index: HashMap::new(),
            enums,
            enum_index,
            extensions: Vec::new(),
            extension_index: HashMap::new(),
        };
        for (i, msg) in pool.all_messages().enumerate() {
            let features = me.message_features(&msg, declared)?;
            me.messages.push(features);
            me.message_index.insert(msg.full_name().into(), i as u32);
        }
        for (i, ext) in pool.all_extensions().enumerate() {
            let set = match declared.extensions.get(ext.full_name()) {
                Some(set) if me.is_editions(&ext.parent_file()) => *set,
                None if me.is_editions(&ext.parent_file()) => {
                    return Err(mismatch(&ext.parent_file(), ext.full_name()))
                }
                _ => legacy_field_set(me.file(&ext.parent_file()).1, &Slot::Extension(&ext)),
            };
            let features = me.derive(&Slot::Extension(&ext), set);
            me.extensions.push(features);
            me.extension_index.insert(ext.full_name().into(), i as u32);
        }
        Ok(me)
    }

    /// The pool these tables describe.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// The edition and file-level set of `file` (a file of another pool reads as proto2).
    pub fn file(&self, file: &FileDescriptor) -> (Edition, FeatureSet) {
        match self.files.get(file.index()) {
            Some(f) if file.parent_pool() == &self.pool => *f,
            _ => (Edition::Proto2, FeatureSet::defaults(Edition::Proto2)),
        }
    }

    /// The message at `index` in `pool.all_messages()` order.
    pub fn message_at(&self, index: usize) -> Option<&MessageFeatures> {
        self.messages.get(index)
    }

    /// The features of `message` (`None` for a message of another pool).
    pub fn message(&self, message: &MessageDescriptor) -> Option<&MessageFeatures> {
        if message.parent_pool() != &self.pool {
            return None;
        }
        self.message_index.get(message.full_name()).map(|&i| &self.messages[i as usize])
    }

    /// The features of `field` (`None` for a field of another pool).
    pub fn field(&self, field: &FieldDescriptor) -> Option<&FieldFeatures> {
        self.message(field.parent_message())?.field(field.number())
    }

    /// The features of `ext` (`None` for an extension of another pool).
    pub fn extension(&self, ext: &ExtensionDescriptor) -> Option<&FieldFeatures> {
        if ext.parent_pool() != &self.pool {
            return None;
        }
        self.extension_index.get(ext.full_name()).map(|&i| &self.extensions[i as usize])
    }

    /// The resolved set of `e` (`None` for an enum of another pool).
    pub fn enum_set(&self, e: &EnumDescriptor) -> Option<&FeatureSet> {
        if e.parent_pool() != &self.pool {
            return None;
        }
        self.enum_index.get(e.full_name()).map(|&i| &self.enums[i as usize])
    }

    /// Whether enum `e` is closed (unknown numbers go to unknown fields).
    pub fn is_closed(&self, e: &EnumDescriptor) -> bool {
        self.enum_set(e).is_some_and(|s| s.enum_type == EnumTypeFeature::Closed)
    }

    fn is_editions(&self, file: &FileDescriptor) -> bool {
        matches!(self.file(file).0, Edition::Edition2023 | Edition::Edition2024)
    }

    fn message_features(
        &self,
        msg: &MessageDescriptor,
        declared: &DeclaredFeatures,
    ) -> Result<MessageFeatures, FeatureError> {
        let file = msg.parent_file();
        let (set, field_sets): (FeatureSet, Option<&Vec<(u32, FeatureSet)>>) = if self.is_editions(&file) {
            match declared.messages.get(msg.full_name()) {
                Some((set, fields)) if fields.len() == msg.fields().len() => (*set, Some(fields)),
                _ => return Err(mismatch(&file, msg.full_name())),
            }
        } else {
            (self.file(&file).1, None)
        };
        // Both are sorted by number (`fields()` iterates in number order).
        let mut fields = Vec::with_capacity(msg.fields().len());
        for (i, f) in msg.fields().enumerate() {
            let slot = Slot::Field(&f);
            let fset = match field_sets {
                None => legacy_field_set(set, &slot),
                Some(v) if v[i].0 == f.number() => v[i].1,
                Some(_) => return Err(mismatch(&file, f.full_name())),
            };
            fields.push((f.number(), self.derive(&slot, fset)));
        }
        Ok(MessageFeatures { set, fields: fields.into_boxed_slice() })
    }

    /// The one place a field's set becomes decoding decisions, for every syntax.
    fn derive(&self, slot: &Slot<'_>, set: FeatureSet) -> FieldFeatures {
        let (kind, cardinality, is_map, in_oneof, is_ext, is_group, is_packed) = slot.shape();
        let presence = if cardinality == Cardinality::Repeated || is_map {
            FieldPresence::Implicit
        } else if cardinality == Cardinality::Required {
            FieldPresence::LegacyRequired
        } else if matches!(kind, Kind::Message(_)) || in_oneof || is_ext {
            FieldPresence::Explicit
        } else if set.field_presence == FieldPresence::LegacyRequired {
            // A lowered editions file says required in its label; this is unreachable for
            // it and kept so a hand-built pool reads as protobuf's resolution would.
            FieldPresence::LegacyRequired
        } else {
            set.field_presence
        };
        FieldFeatures {
            set,
            presence,
            closed_enum: matches!(&kind, Kind::Enum(e) if self.is_closed(e)),
            validate_utf8: kind == Kind::String && set.utf8_validation == Utf8Validation::Verify,
            // The lowering wrote DELIMITED as TYPE_GROUP and PACKED as `[packed = true]`,
            // so the descriptor library's answers are the features' answers.
            delimited: is_group,
            group_like: is_group && slot.is_group_like(),
            packed: is_packed,
            json_format: set.json_format,
        }
    }
}

/// A field or an extension: the descriptor library has no common type for them.
enum Slot<'a> {
    Field(&'a FieldDescriptor),
    Extension(&'a ExtensionDescriptor),
}

impl Slot<'_> {
    /// protobuf's `IsGroupLike`: the message type's name lowercased is the field's name,
    /// and the type is declared in the same file and scope as the field.
    fn is_group_like(&self) -> bool {
        let (name, scope, file, kind) = match self {
            Slot::Field(f) => (f.name(), Some(f.parent_message().clone()), f.parent_file(), f.kind()),
            Slot::Extension(e) => (e.name(), e.parent_message(), e.parent_file(), e.kind()),
        };
        match kind {
            Kind::Message(m) => {
                m.name().to_ascii_lowercase() == name && m.parent_file() == file && m.parent_message() == scope
            }
            _ => false,
        }
    }

    #[allow(clippy::type_complexity)]
    fn shape(&self) -> (Kind, Cardinality, bool, bool, bool, bool, bool) {
        match self {
            Slot::Field(f) => (
                f.kind(),
                f.cardinality(),
                f.is_map(),
                f.containing_oneof().is_some(),
                false,
                f.is_group(),
                f.is_packed(),
            ),
            Slot::Extension(e) => (e.kind(), e.cardinality(), e.is_map(), false, true, e.is_group(), e.is_packed()),
        }
    }
}

fn mismatch(file: &FileDescriptor, element: &str) -> FeatureError {
    FeatureError::Mismatch { file: file.name().to_owned(), element: format!("`{element}`") }
}

/// A proto2/proto3 file's fixed set, or what the loader declared for an editions file.
fn file_set(file: &FileDescriptor, declared: &DeclaredFeatures) -> (Edition, FeatureSet) {
    if let Some(&(edition, set)) = declared.files.get(file.name()) {
        // The lowered file says proto2; only the declaration knows it is an editions file.
        if file.syntax() == Syntax::Proto2 {
            return (edition, set);
        }
    }
    let edition = match file.syntax() {
        Syntax::Proto3 => Edition::Proto3,
        _ => Edition::Proto2,
    };
    (edition, FeatureSet::defaults(edition))
}

fn enum_set(
    e: &EnumDescriptor,
    files: &[(Edition, FeatureSet)],
    declared: &DeclaredFeatures,
) -> Result<FeatureSet, FeatureError> {
    let (edition, file_set) = files[e.parent_file().index()];
    if matches!(edition, Edition::Proto2 | Edition::Proto3) {
        return Ok(file_set);
    }
    declared.enums.get(e.full_name()).copied().ok_or_else(|| mismatch(&e.parent_file(), e.full_name()))
}

/// protobuf's inference of a proto2/proto3 field's features from its legacy spelling.
fn legacy_field_set(file_set: FeatureSet, slot: &Slot<'_>) -> FeatureSet {
    let (kind, cardinality, _, _, _, is_group, is_packed) = slot.shape();
    let mut set = file_set;
    // As protobuf's `InferLegacyProtoFeatures`: only `required` and proto3 `optional` (a
    // synthetic oneof) say a presence; message fields and oneof members keep the file's
    // value and have presence by their shape ([`FieldFeatures::presence`]).
    if cardinality == Cardinality::Required {
        set.field_presence = FieldPresence::LegacyRequired;
    } else if matches!(slot, Slot::Field(f) if f.containing_oneof().is_some_and(|o| o.is_synthetic())) {
        set.field_presence = FieldPresence::Explicit;
    }
    if is_group {
        set.message_encoding = MessageEncoding::Delimited;
    }
    if cardinality == Cardinality::Repeated && is_packable(&kind) {
        set.repeated_field_encoding =
            if is_packed { RepeatedFieldEncoding::Packed } else { RepeatedFieldEncoding::Expanded };
    }
    set
}

/// Scalars and enums (not strings, bytes or messages) may be packed.
fn is_packable(kind: &Kind) -> bool {
    !matches!(kind, Kind::String | Kind::Bytes | Kind::Message(_))
}
