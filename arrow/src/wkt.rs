//! The well-known types that become one native Arrow column (Timestamp, Duration, the wrappers) instead of a struct.

use prost_reflect::MessageDescriptor;

use crate::options::ArrowOptions;

/// Whether a message type converts to one native column rather than a struct
/// (Timestamp, Duration, the wrappers), under `options`.
pub(crate) fn is_atomic(msg: &MessageDescriptor, options: &ArrowOptions) -> bool {
    options.well_known_types && wkt(msg).is_some()
}

/// A well-known type with a native Arrow column.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wkt {
    Timestamp,
    Duration,
    /// `google.protobuf.*Value`: the wrapped scalar, null when the message is absent.
    Wrapper,
}

pub(crate) fn wkt(msg: &MessageDescriptor) -> Option<Wkt> {
    match msg.full_name() {
        "google.protobuf.Timestamp" => Some(Wkt::Timestamp),
        "google.protobuf.Duration" => Some(Wkt::Duration),
        "google.protobuf.DoubleValue"
        | "google.protobuf.FloatValue"
        | "google.protobuf.Int64Value"
        | "google.protobuf.UInt64Value"
        | "google.protobuf.Int32Value"
        | "google.protobuf.UInt32Value"
        | "google.protobuf.BoolValue"
        | "google.protobuf.StringValue"
        | "google.protobuf.BytesValue" => Some(Wkt::Wrapper),
        _ => None,
    }
}
