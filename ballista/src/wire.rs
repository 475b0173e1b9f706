//! The messages protojit's codecs write into Ballista's plans: a protobuf format (descriptor-set bytes, message type, options), a table and a scan.

use std::str::FromStr;

use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::FileFormat;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion_proto::protobuf::{ArrowType, FileScanExecConf, FileSinkConfig};
use prost::Message;
use protojit::Schema;
use protojit_arrow::{
    AnyColumns, ArrowOptions, ConvertPath, EnumColumns, Explode, Framing, MapColumns, RecursionColumns, StringColumns,
    StructColumns,
};
use protojit_sql::ProtobufFormat;

/// Leads a table written by [`crate::ProtojitLogicalCodec`], so that its decoder tells it
/// apart from the tables of the codec it wraps.
pub(crate) const TABLE_TAG: &[u8] = b"protojit.table\0";
/// Leads a scan written by [`crate::ProtojitPhysicalCodec`].
pub(crate) const SCAN_TAG: &[u8] = b"protojit.scan\0";
/// Marks a [`FactoryNode`] in a logical plan.
pub(crate) const FACTORY_TAG: &[u8] = b"protojit.format\0";
/// Marks a [`SinkNode`] in a physical plan.
pub(crate) const SINK_TAG: &[u8] = b"protojit.sink\0";

/// A [`ProtobufFormat`]: everything an executor needs to rebuild it, the schema included
/// (as a FileDescriptorSet), so that no process but the client reads schema files.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct FormatNode {
    /// The records' message type (full name).
    #[prost(string, tag = "1")]
    pub message_type: String,
    /// The schema, a serialized FileDescriptorSet.
    #[prost(bytes = "vec", tag = "2")]
    pub descriptor_set: Vec<u8>,
    /// DataFusion's name of the files' compression (`UNCOMPRESSED`, `GZIP`, …).
    #[prost(string, tag = "3")]
    pub compression: String,
    /// Schema-registry framing on every record.
    #[prost(bool, tag = "4")]
    pub schema_registry: bool,
    /// With schema-registry framing: the schema id column's name.
    #[prost(string, optional, tag = "5")]
    pub schema_id_column: Option<String>,
    /// Enums as numbers rather than dictionaries of names.
    #[prost(bool, tag = "6")]
    pub enum_numbers: bool,
    /// Strings and bytes as views rather than offsets.
    #[prost(bool, tag = "7")]
    pub string_views: bool,
    /// ArrowOptions::max_recursion.
    #[prost(uint64, tag = "8")]
    pub max_recursion: u64,
    /// ArrowOptions::well_known_types.
    #[prost(bool, tag = "9")]
    pub well_known_types: bool,
    /// ArrowOptions::path: 0 chunked, 1 direct, 2 tree. (Tag 10, a bool for the direct
    /// path, is retired.)
    #[prost(uint32, tag = "11")]
    pub path: u32,
    /// ArrowOptions::oneof_case. (Tags 12 to 22, the mapping options, are absent from
    /// plans written before them: false, the default mapping.)
    #[prost(bool, tag = "12")]
    pub oneof_case: bool,
    /// ArrowOptions::maps is MapColumns::Entries.
    #[prost(bool, tag = "13")]
    pub map_entries: bool,
    /// ArrowOptions::large.
    #[prost(bool, tag = "14")]
    pub large: bool,
    /// Enums as plain strings (EnumColumns::String; over `enum_numbers`).
    #[prost(bool, tag = "15")]
    pub enum_strings: bool,
    /// ArrowOptions::flatten.
    #[prost(bool, tag = "16")]
    pub flatten: bool,
    /// ArrowOptions::explode's path (absent: no explode; absent from plans written before
    /// tags 17 and 18).
    #[prost(string, optional, tag = "17")]
    pub explode: Option<String>,
    /// ArrowOptions::explode is outer (explode_outer).
    #[prost(bool, tag = "18")]
    pub explode_outer: bool,
    /// ArrowOptions::any is AnyColumns::Json.
    #[prost(bool, tag = "19")]
    pub any_json: bool,
    /// ArrowOptions::extensions (a library's format: SQL tables do not take it).
    #[prost(bool, tag = "20")]
    pub extensions: bool,
    /// ArrowOptions::recursion is RecursionColumns::Json.
    #[prost(bool, tag = "21")]
    pub recursion_json: bool,
    /// ArrowOptions::structs is StructColumns::Json.
    #[prost(bool, tag = "22")]
    pub structs_json: bool,
}

/// A listing table of protobuf files (its schema travels beside it in the plan).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct TableNode {
    #[prost(message, optional, tag = "1")]
    pub format: Option<FormatNode>,
    /// The table's locations (URLs: a file, a directory or a glob each).
    #[prost(string, repeated, tag = "2")]
    pub paths: Vec<String>,
    /// The names of the partition columns.
    #[prost(string, repeated, tag = "3")]
    pub partition_columns: Vec<String>,
    /// Their types in the listing table (the plan's schema has the plain ones).
    #[prost(message, repeated, tag = "5")]
    pub partition_types: Vec<ArrowType>,
    /// The extension files must have ("" for every file).
    #[prost(string, tag = "4")]
    pub file_extension: String,
}

/// A scan of protobuf files: the format and DataFusion's own description of the scan
/// (files, projection, limit, partition columns).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ScanNode {
    #[prost(message, optional, tag = "1")]
    pub format: Option<FormatNode>,
    #[prost(message, optional, tag = "2")]
    pub conf: Option<FileScanExecConf>,
}

/// `STORED AS PROTOBUF` in a logical plan (`COPY … TO`): the session's schema, if it has
/// one (its tables name their types in it), as FileDescriptorSet bytes, and the table
/// options bound to it (a `COPY`'s). The session's default mapping options are not
/// carried: writing reads every mapping's columns.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct FactoryNode {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub descriptor_set: Option<Vec<u8>>,
    /// ProtobufFormatFactory::table_options (a `COPY`'s `OPTIONS (…)`).
    #[prost(map = "string, string", tag = "2")]
    pub table_options: std::collections::HashMap<String, String>,
}

/// A write of protobuf files (`COPY … TO`, `INSERT INTO`): the format, how columns missing
/// or extra are taken, and DataFusion's own description of the files to write.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct SinkNode {
    #[prost(message, optional, tag = "1")]
    pub format: Option<FormatNode>,
    #[prost(message, optional, tag = "2")]
    pub config: Option<FileSinkConfig>,
    /// ProtobufFormat::ignores_extra_columns.
    #[prost(bool, tag = "3")]
    pub ignore_extra_columns: bool,
    /// ProtobufFormat::allows_missing_columns.
    #[prost(bool, tag = "4")]
    pub allow_missing_columns: bool,
}

/// The wire form of `format`. Fails for decode options other than the default, which
/// this message does not carry (a scan elsewhere would decode differently).
pub(crate) fn format_node(format: &ProtobufFormat) -> DfResult<FormatNode> {
    let options = format.arrow_options();
    if options.decode != ArrowOptions::default().decode {
        return Err(DataFusionError::NotImplemented(format!(
            "a protobuf table of {} has decode options other than the default; they are not carried to a cluster",
            format.message()
        )));
    }
    let (schema_registry, schema_id_column) = match &options.framing {
        Framing::Bare => (false, None),
        Framing::SchemaRegistry { schema_id_column } => (true, schema_id_column.clone()),
    };
    let compression = format.compression_type().unwrap_or(FileCompressionType::UNCOMPRESSED);
    Ok(FormatNode {
        message_type: format.message().to_owned(),
        descriptor_set: format.schema().pool().encode_to_vec(),
        compression: compression_name(compression).to_owned(),
        schema_registry,
        schema_id_column,
        enum_numbers: options.enums == EnumColumns::Number,
        string_views: options.strings == StringColumns::Views,
        max_recursion: options.max_recursion as u64,
        well_known_types: options.well_known_types,
        path: match options.path {
            ConvertPath::Chunked => 0,
            ConvertPath::DirectInterpreted => 1,
            ConvertPath::Tree => 2,
            ConvertPath::DirectCompiled => 3,
            ConvertPath::Auto => 4,
        },
        oneof_case: options.oneof_case,
        map_entries: options.maps == MapColumns::Entries,
        large: options.large,
        enum_strings: options.enums == EnumColumns::String,
        flatten: options.flatten,
        explode: options.explode.as_ref().map(|e| e.path.clone()),
        explode_outer: options.explode.as_ref().is_some_and(|e| e.outer),
        any_json: options.any == AnyColumns::Json,
        extensions: options.extensions,
        recursion_json: options.recursion == RecursionColumns::Json,
        structs_json: options.structs == StructColumns::Json,
    })
}

/// The format `node` describes.
pub(crate) fn format_from(node: Option<&FormatNode>) -> DfResult<ProtobufFormat> {
    let node = node.ok_or_else(|| malformed("a protobuf format without its description"))?;
    let schema =
        Schema::from_descriptor_set(&node.descriptor_set).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let framing = match node.schema_registry {
        false => Framing::Bare,
        true => Framing::SchemaRegistry { schema_id_column: node.schema_id_column.clone() },
    };
    let options = ArrowOptions {
        select: None,
        enums: match (node.enum_strings, node.enum_numbers) {
            (true, _) => EnumColumns::String,
            (false, true) => EnumColumns::Number,
            (false, false) => EnumColumns::Dictionary,
        },
        oneof_case: node.oneof_case,
        maps: if node.map_entries { MapColumns::Entries } else { MapColumns::Map },
        large: node.large,
        flatten: node.flatten,
        explode: node.explode.clone().map(|path| Explode { path, outer: node.explode_outer }),
        any: if node.any_json { AnyColumns::Json } else { AnyColumns::Struct },
        extensions: node.extensions,
        recursion: if node.recursion_json { RecursionColumns::Json } else { RecursionColumns::Cut },
        structs: if node.structs_json { StructColumns::Json } else { StructColumns::Struct },
        strings: if node.string_views { StringColumns::Views } else { StringColumns::Offsets },
        max_recursion: usize::try_from(node.max_recursion).map_err(|_| malformed("max_recursion out of range"))?,
        well_known_types: node.well_known_types,
        framing,
        path: match node.path {
            0 => ConvertPath::Chunked,
            1 => ConvertPath::DirectInterpreted,
            2 => ConvertPath::Tree,
            3 => ConvertPath::DirectCompiled,
            4 => ConvertPath::Auto,
            _ => return Err(malformed("an unknown conversion path")),
        },
        ..ArrowOptions::default()
    };
    let compression = FileCompressionType::from_str(&node.compression)?;
    let format = ProtobufFormat::new(&schema, &node.message_type, &options)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(format.with_compression(compression))
}

/// DataFusion's name of a compression type, as `FileCompressionType::from_str` reads it.
fn compression_name(compression: FileCompressionType) -> &'static str {
    use datafusion::common::parsers::CompressionTypeVariant as V;
    match compression.get_variant() {
        V::GZIP => "GZIP",
        V::BZIP2 => "BZIP2",
        V::XZ => "XZ",
        V::ZSTD => "ZSTD",
        V::UNCOMPRESSED => "UNCOMPRESSED",
    }
}

/// A plan part that cannot be read back.
pub(crate) fn malformed(what: &str) -> DataFusionError {
    DataFusionError::Internal(format!("protojit plan node: {what}"))
}

/// `message` after `tag`, or `None` when `buf` is not one of ours.
pub(crate) fn decode_tagged<M: Message + Default>(buf: &[u8], tag: &[u8]) -> Option<DfResult<M>> {
    let body = buf.strip_prefix(tag)?;
    Some(M::decode(body).map_err(|e| malformed(&e.to_string())))
}

/// `message` after `tag`, appended to `buf`.
pub(crate) fn encode_tagged(message: &impl Message, tag: &[u8], buf: &mut Vec<u8>) {
    buf.extend_from_slice(tag);
    message.encode(buf).expect("a Vec grows as needed");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(options: &ArrowOptions) -> ProtobufFormat {
        let schema = Schema::from_proto_source(
            "m.proto",
            "syntax = \"proto3\"; message M { oneof k { int32 a = 1; string b = 2; } map<string, int32> t = 3; repeated int32 r = 4; }",
        )
        .unwrap();
        ProtobufFormat::new(&schema, "M", options).unwrap()
    }

    /// The mapping options travel in the plan, and a plan written before they existed
    /// (without their fields) reads as the default mapping.
    #[test]
    fn mapping_options_travel_and_old_plans_read_as_the_default() {
        let options = ArrowOptions {
            oneof_case: true,
            maps: MapColumns::Entries,
            large: true,
            enums: EnumColumns::String,
            flatten: true,
            any: AnyColumns::Json,
            recursion: RecursionColumns::Json,
            structs: StructColumns::Json,
            ..ArrowOptions::default()
        };
        let node = format_node(&format(&options)).unwrap();
        let back = format_from(Some(&FormatNode::decode(node.encode_to_vec().as_slice()).unwrap())).unwrap();
        let got = back.arrow_options();
        assert!(got.oneof_case && got.large && got.flatten);
        assert_eq!((got.maps, got.enums, got.any), (MapColumns::Entries, EnumColumns::String, AnyColumns::Json));
        assert_eq!(got.recursion, RecursionColumns::Json);
        assert_eq!(got.structs, StructColumns::Json);
        // Explode (a library's format: SQL tables do not take it as an option).
        for outer in [false, true] {
            let explode = Some(Explode { path: "r".into(), outer });
            let node =
                format_node(&format(&ArrowOptions { explode: explode.clone(), ..ArrowOptions::default() })).unwrap();
            let back = format_from(Some(&FormatNode::decode(node.encode_to_vec().as_slice()).unwrap())).unwrap();
            assert_eq!(back.arrow_options().explode, explode);
        }
        let node = format_node(&format(&ArrowOptions { extensions: true, ..ArrowOptions::default() })).unwrap();
        let back = format_from(Some(&FormatNode::decode(node.encode_to_vec().as_slice()).unwrap())).unwrap();
        assert!(back.arrow_options().extensions);

        let node =
            format_node(&format(&ArrowOptions { enums: EnumColumns::Number, ..ArrowOptions::default() })).unwrap();
        // An old plan: the same message without tags 12 to 22.
        let old = FormatNode {
            oneof_case: false,
            map_entries: false,
            large: false,
            enum_strings: false,
            flatten: false,
            explode: None,
            explode_outer: false,
            any_json: false,
            extensions: false,
            recursion_json: false,
            structs_json: false,
            ..node
        };
        let got = format_from(Some(&old)).unwrap();
        let got = got.arrow_options();
        assert!(!got.oneof_case && !got.large && !got.flatten && got.explode.is_none());
        assert_eq!(got.any, AnyColumns::Struct);
        assert!(!got.extensions);
        assert_eq!(got.recursion, RecursionColumns::Cut);
        assert_eq!(got.structs, StructColumns::Struct);
        assert_eq!((got.maps, got.enums), (MapColumns::Map, EnumColumns::Number));
    }
}
