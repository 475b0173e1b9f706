//! Ballista's plan codecs with protojit's tables and scans: the client, the scheduler and every executor are built with them.
//!
//! Ballista ships a query's logical plan from the client to the scheduler, and each
//! stage's physical plan from the scheduler to the executors, as datafusion-proto
//! messages. DataFusion's serializer knows its built-in file formats only: a protobuf
//! table ([`ProtobufClusterTable`]), its scan (a `DataSourceExec` over protojit's
//! `FileSource`) and a write of protobuf files (`COPY … TO`: a `DataSinkExec` over a
//! `ProtobufSink`) reach these codecs, which write the format whole (message type, options
//! and the schema as FileDescriptorSet bytes) so that the other side rebuilds the same
//! `ProtobufFormat` without any schema file. Everything else goes to Ballista's own codecs.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder, FileSink, FileSinkConfig};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::from_proto::parse_protobuf_file_scan_config;
use datafusion_proto::physical_plan::to_proto::serialize_file_scan_config;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use protojit::Schema;
use protojit_sql::{ProtobufFormat, ProtobufFormatFactory, ProtobufSink};

use crate::table::ProtobufClusterTable;
use crate::wire::{
    decode_tagged, encode_tagged, format_from, format_node, malformed, FactoryNode, ScanNode, SinkNode, TableNode,
    FACTORY_TAG, SCAN_TAG, SINK_TAG, TABLE_TAG,
};

/// The logical codec: [`ProtobufClusterTable`]s, and Ballista's nodes through its own codec.
#[derive(Debug)]
pub struct ProtojitLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl ProtojitLogicalCodec {
    /// Protobuf tables around Ballista's default logical codec.
    pub fn new() -> ProtojitLogicalCodec {
        ProtojitLogicalCodec::wrapping(Arc::new(BallistaLogicalExtensionCodec::default()))
    }

    /// Protobuf tables around `inner`, which takes every other node.
    pub fn wrapping(inner: Arc<dyn LogicalExtensionCodec>) -> ProtojitLogicalCodec {
        ProtojitLogicalCodec { inner }
    }
}

impl Default for ProtojitLogicalCodec {
    fn default() -> Self {
        ProtojitLogicalCodec::new()
    }
}

impl LogicalExtensionCodec for ProtojitLogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let Some(node) = decode_tagged::<TableNode>(buf, TABLE_TAG) else {
            return self.inner.try_decode_table_provider(buf, table_ref, schema, ctx);
        };
        let node = node?;
        let format = format_from(node.format.as_ref())?;
        let file_schema = format.arrow_schema().clone();
        let paths = node.paths.iter().map(ListingTableUrl::parse).collect::<DfResult<Vec<_>>>()?;
        if node.partition_columns.len() != node.partition_types.len() {
            return Err(malformed("partition columns without their types"));
        }
        let partition_columns = node
            .partition_columns
            .iter()
            .zip(&node.partition_types)
            .map(|(name, arrow)| Ok((name.clone(), DataType::try_from(arrow)?)))
            .collect::<DfResult<Vec<_>>>()?;
        let options = ListingOptions::new(Arc::new(format))
            .with_file_extension(node.file_extension)
            .with_table_partition_cols(partition_columns);
        let config =
            ListingTableConfig::new_with_multi_paths(paths).with_listing_options(options).with_schema(file_schema);
        let table = ProtobufClusterTable::try_new(Arc::new(ListingTable::try_new(config)?))?;
        Ok(Arc::new(table))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        let Some(table) = node.downcast_ref::<ProtobufClusterTable>() else {
            return self.inner.try_encode_table_provider(table_ref, node, buf);
        };
        let listing = table.listing();
        let options = listing.options();
        let message = TableNode {
            format: Some(format_node(table.format())?),
            paths: listing.table_paths().iter().map(|p| p.as_str().to_owned()).collect(),
            partition_columns: options.table_partition_cols.iter().map(|(name, _)| name.clone()).collect(),
            partition_types: options
                .table_partition_cols
                .iter()
                .map(|(_, data_type)| data_type.try_into())
                .collect::<Result<Vec<_>, _>>()?,
            file_extension: options.file_extension.clone(),
        };
        encode_tagged(&message, TABLE_TAG, buf);
        Ok(())
    }

    fn try_decode_file_format(&self, buf: &[u8], ctx: &TaskContext) -> DfResult<Arc<dyn FileFormatFactory>> {
        let Some(node) = decode_tagged::<FactoryNode>(buf, FACTORY_TAG) else {
            return self.inner.try_decode_file_format(buf, ctx);
        };
        let node = node?;
        let factory = match node.descriptor_set {
            Some(bytes) => ProtobufFormatFactory::with_schema(
                Schema::from_descriptor_set(&bytes).map_err(|e| DataFusionError::External(Box::new(e)))?,
            ),
            None => ProtobufFormatFactory::new(),
        };
        Ok(Arc::new(factory.with_table_options(node.table_options)))
    }

    fn try_encode_file_format(&self, buf: &mut Vec<u8>, node: Arc<dyn FileFormatFactory>) -> DfResult<()> {
        // Ballista's own codec would write an unknown format as one it knows (its last,
        // which takes anything): `COPY … STORED AS PROTOBUF` would write other files.
        let Some(factory) = node.downcast_ref::<ProtobufFormatFactory>() else {
            return self.inner.try_encode_file_format(buf, node);
        };
        let message = FactoryNode {
            descriptor_set: factory.schema().map(|s| s.pool().encode_to_vec()),
            table_options: factory.table_options().clone(),
        };
        encode_tagged(&message, FACTORY_TAG, buf);
        Ok(())
    }
}

/// The physical codec: scans of protobuf files, and Ballista's nodes through its own codec.
#[derive(Debug)]
pub struct ProtojitPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl ProtojitPhysicalCodec {
    /// Protobuf scans around Ballista's default physical codec.
    pub fn new() -> ProtojitPhysicalCodec {
        ProtojitPhysicalCodec::wrapping(Arc::new(BallistaPhysicalExtensionCodec::default()))
    }

    /// Protobuf scans around `inner`, which takes every other plan.
    pub fn wrapping(inner: Arc<dyn PhysicalExtensionCodec>) -> ProtojitPhysicalCodec {
        ProtojitPhysicalCodec { inner }
    }
}

impl Default for ProtojitPhysicalCodec {
    fn default() -> Self {
        ProtojitPhysicalCodec::new()
    }
}

/// The protobuf scan configuration of `plan`, if it is a `DataSourceExec` over protojit's
/// `FileSource`.
fn protobuf_scan(plan: &dyn ExecutionPlan) -> Option<(&FileScanConfig, &ProtobufFormat)> {
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let conf = exec.data_source().downcast_ref::<FileScanConfig>()?;
    let format = ProtobufFormat::of_source(conf.file_source().as_ref())?;
    Some((conf, format))
}

/// The sink of `plan`, if it is a `DataSinkExec` writing protobuf files.
fn protobuf_sink(plan: &dyn ExecutionPlan) -> Option<(&DataSinkExec, &ProtobufSink)> {
    let exec = plan.downcast_ref::<DataSinkExec>()?;
    Some((exec, exec.sink().downcast_ref::<ProtobufSink>()?))
}

/// The write a [`SinkNode`] describes, of `inputs`' one plan's rows.
fn sink_from(node: SinkNode, inputs: &[Arc<dyn ExecutionPlan>]) -> DfResult<Arc<dyn ExecutionPlan>> {
    let format = format_from(node.format.as_ref())?
        .with_ignore_extra_columns(node.ignore_extra_columns)
        .with_allow_missing_columns(node.allow_missing_columns);
    let config = node.config.as_ref().ok_or_else(|| malformed("a protobuf write without its files"))?;
    let [input] = inputs else { return Err(malformed("a protobuf write without its one input")) };
    let sink = ProtobufSink::new(FileSinkConfig::try_from(config)?, format)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(Arc::new(DataSinkExec::new(input.clone(), Arc::new(sink), None)))
}

impl PhysicalExtensionCodec for ProtojitPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if let Some(node) = decode_tagged::<SinkNode>(buf, SINK_TAG) {
            return sink_from(node?, inputs);
        }
        let Some(node) = decode_tagged::<ScanNode>(buf, SCAN_TAG) else {
            return self.inner.try_decode(buf, inputs, ctx, proto_converter);
        };
        let node = node?;
        let format = format_from(node.format.as_ref())?;
        let conf = node.conf.as_ref().ok_or_else(|| malformed("a protobuf scan without its files"))?;
        let source = format.file_source(FileScanConfig::parse_table_schema_from_proto(conf)?);
        let decode = PhysicalPlanDecodeContext::new(ctx, self);
        let config = parse_protobuf_file_scan_config(conf, &decode, proto_converter, source)?;
        // The compression is the format's (FileScanExecConf does not carry it), as in
        // ProtobufFormat::create_physical_plan.
        let compression = format.compression_type().unwrap_or(FileCompressionType::UNCOMPRESSED);
        let config = FileScanConfigBuilder::from(config).with_file_compression_type(compression).build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        if let Some((exec, sink)) = protobuf_sink(node.as_ref()) {
            if exec.sort_order().is_some() {
                return Err(DataFusionError::NotImplemented("an ordered write of protobuf files on a cluster".into()));
            }
            let message = SinkNode {
                format: Some(format_node(sink.format())?),
                config: Some(sink.config().try_into()?),
                ignore_extra_columns: sink.format().ignores_extra_columns(),
                allow_missing_columns: sink.format().allows_missing_columns(),
            };
            encode_tagged(&message, SINK_TAG, buf);
            return Ok(());
        }
        let Some((conf, format)) = protobuf_scan(node.as_ref()) else {
            return self.inner.try_encode(node, buf, proto_converter);
        };
        let message = ScanNode {
            format: Some(format_node(format)?),
            conf: Some(serialize_file_scan_config(conf, self, proto_converter)?),
        };
        encode_tagged(&message, SCAN_TAG, buf);
        Ok(())
    }
}
