//! A protobuf listing table that Ballista can ship: [`ProtobufClusterTable`], and `CREATE EXTERNAL TABLE … STORED AS PROTOBUF` making it in a cluster client's session.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{ScanArgs, ScanResult, Session, TableProvider, TableProviderFactory};
use datafusion::common::{Constraints, Statistics};
use datafusion::datasource::listing::ListingTable;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{CreateExternalTable, Expr, LogicalPlan, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use protojit_sql::{register_protobuf_format, ProtobufFormat, ProtobufFormatFactory, FORMAT_NAME};

/// A `ListingTable` of protobuf files (protojit-sql's [`protojit_sql::listing_table`])
/// that [`crate::ProtojitLogicalCodec`] can serialize. DataFusion's serializer writes a
/// `ListingTable` itself and knows only its built-in formats, so a protobuf listing table
/// goes to a cluster under this type; it scans exactly as the table it wraps.
#[derive(Debug)]
pub struct ProtobufClusterTable {
    /// Always a `ListingTable` whose format is a `ProtobufFormat` (checked by `try_new`).
    inner: Arc<dyn TableProvider>,
}

impl ProtobufClusterTable {
    /// Wraps `table`, which must be a `ListingTable` of a `ProtobufFormat`.
    pub fn try_new(table: Arc<dyn TableProvider>) -> DfResult<ProtobufClusterTable> {
        let listing = table.downcast_ref::<ListingTable>().ok_or_else(|| {
            DataFusionError::Plan("a protobuf cluster table wraps a ListingTable of protobuf files".into())
        })?;
        if listing.options().format.downcast_ref::<ProtobufFormat>().is_none() {
            return Err(DataFusionError::Plan(format!(
                "a protobuf cluster table wraps a ListingTable of protobuf files, not of {:?}",
                listing.options().format
            )));
        }
        Ok(ProtobufClusterTable { inner: table })
    }

    /// The listing table.
    pub fn listing(&self) -> &ListingTable {
        self.inner.downcast_ref::<ListingTable>().expect("checked by try_new")
    }

    /// The table's format.
    pub fn format(&self) -> &ProtobufFormat {
        self.listing().options().format.downcast_ref::<ProtobufFormat>().expect("checked by try_new")
    }
}

#[async_trait]
impl TableProvider for ProtobufClusterTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.inner.get_table_definition()
    }

    fn get_logical_plan(&self) -> Option<Cow<'_, LogicalPlan>> {
        self.inner.get_logical_plan()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.inner.scan(state, projection, filters, limit).await
    }

    async fn scan_with_args<'a>(&self, state: &dyn Session, args: ScanArgs<'a>) -> DfResult<ScanResult> {
        self.inner.scan_with_args(state, args).await
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
}

/// Registers `STORED AS PROTOBUF` in a cluster client's session: protojit-sql's format
/// and table factory ([`register_protobuf_format`]), with each table it creates wrapped in
/// a [`ProtobufClusterTable`] so that queries over it can be sent to the scheduler.
pub fn register_protobuf_cluster_format(ctx: &SessionContext, factory: ProtobufFormatFactory) -> DfResult<()> {
    register_protobuf_format(ctx, factory)?;
    let state = ctx.state_ref();
    let mut state = state.write();
    let key = FORMAT_NAME.to_uppercase();
    let inner = state
        .table_factories()
        .get(&key)
        .cloned()
        .ok_or_else(|| DataFusionError::Internal(format!("register_protobuf_format registered no '{key}' factory")))?;
    state.table_factories_mut().insert(key, Arc::new(ClusterTableFactory { inner }));
    Ok(())
}

/// protojit-sql's table factory, its tables wrapped for the cluster.
#[derive(Debug)]
struct ClusterTableFactory {
    inner: Arc<dyn TableProviderFactory>,
}

#[async_trait]
impl TableProviderFactory for ClusterTableFactory {
    async fn create(&self, state: &dyn Session, cmd: &CreateExternalTable) -> DfResult<Arc<dyn TableProvider>> {
        let table = self.inner.create(state, cmd).await?;
        Ok(Arc::new(ProtobufClusterTable::try_new(table)?))
    }
}
