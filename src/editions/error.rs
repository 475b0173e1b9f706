//! What the editions loader refuses: each error names the file, the element and what to do.

/// A descriptor set this loader cannot read; each names the file, the element and what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditionsError {
    /// The bytes are not a serialized `FileDescriptorSet`.
    #[error("not a FileDescriptorSet ({what}); give the output of `protoc --include_imports --descriptor_set_out=…` or `buf build -o …`")]
    Malformed {
        /// What broke, and in which file if known.
        what: String,
    },
    /// An edition this build does not implement (a newer one, or a test-only edition).
    #[error(
        "file `{file}`: edition {edition} is not supported (protojit loads proto2, proto3 and editions 2023 and \
         2024); write the file in edition 2024 or older, or use a protojit that supports {edition}"
    )]
    UnsupportedEdition {
        /// The file.
        file: String,
        /// The edition as descriptor.proto names it, e.g. `EDITION_2026`.
        edition: String,
    },
    /// A `syntax` other than proto2, proto3 and editions.
    #[error("file `{file}`: syntax {syntax:?} is unknown; only \"proto2\", \"proto3\" and \"editions\" load")]
    UnknownSyntax {
        /// The file.
        file: String,
        /// The syntax it declares.
        syntax: String,
    },
    /// A feature set to a value this build does not know.
    #[error(
        "file `{file}`: {element}: feature `{feature}` has value {value}, which edition {edition} does not define; \
         set one of {expected}, or use a protojit that knows the value"
    )]
    UnknownFeatureValue {
        /// The file.
        file: String,
        /// The element whose options set it, e.g. `field `pkg.M.f``.
        element: String,
        /// The feature's name in `google.protobuf.FeatureSet`.
        feature: &'static str,
        /// The value found.
        value: u64,
        /// The file's edition.
        edition: &'static str,
        /// The values this build knows.
        expected: String,
    },
    /// A field of `google.protobuf.FeatureSet` this build does not know (not an extension).
    #[error(
        "file `{file}`: {element}: `google.protobuf.FeatureSet` field {number} is unknown to this build \
         (edition {edition}); it may change decoding, so the file does not load: use a protojit that knows it"
    )]
    UnknownFeature {
        /// The file.
        file: String,
        /// The element whose options set it.
        element: String,
        /// The field number.
        number: u64,
        /// The file's edition.
        edition: &'static str,
    },
    /// A `DELIMITED` message field without its resolved `type` (a descriptor set not from a compiler).
    #[error(
        "file `{file}`: {element} is DELIMITED but has no resolved `type`; give a descriptor set written by \
         protoc or buf (they resolve types)"
    )]
    UnresolvedType {
        /// The file.
        file: String,
        /// The field.
        element: String,
    },
}
