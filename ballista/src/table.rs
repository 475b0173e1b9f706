//! A protobuf listing table that Ballista can ship: [`ProtobufClusterTable`], and `CREATE EXTERNAL TABLE … STORED AS PROTOBUF` making it in a cluster client's session.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::{Constraints, Statistics};
use datafusion::datasource::listing::ListingTable;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{CreateExternalTable, Expr, LogicalPlan, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_expr::projection::ProjectionExpr;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use protojit_sql::{register_protobuf_format, ProtobufFormat, ProtobufFormatFactory, FORMAT_NAME};

/// A `ListingTable` of protobuf files (protojit-sql's [`protojit_sql::listing_table`])
/// that [`crate::ProtojitLogicalCodec`] can serialize. DataFusion's serializer writes a
/// `ListingTable` itself and knows only its built-in formats, so a protobuf listing table
/// goes to a cluster under this type.
///
/// Its columns are the listing table's with every dictionary replaced by its values'
/// type ([`plain_type`]): enums as names in `Utf8`, partition columns as `Utf8`. Ballista
/// 55 moves data between executors, and results to the client, over Arrow Flight with
/// dictionaries hydrated, so a dictionary column would reach the next stage as plain
/// values under a dictionary type and fail there (grouping by an enum, say); a scan casts
/// those columns once, where they are read.
#[derive(Debug)]
pub struct ProtobufClusterTable {
    /// Always a `ListingTable` whose format is a `ProtobufFormat` (checked by `try_new`).
    inner: Arc<dyn TableProvider>,
    /// The inner table's schema with dictionaries replaced by their values' types.
    schema: SchemaRef,
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
        let schema = Arc::new(Schema::new_with_metadata(
            table.schema().fields().iter().map(plain_field).collect::<Vec<_>>(),
            table.schema().metadata().clone(),
        ));
        Ok(ProtobufClusterTable { inner: table, schema })
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
        self.schema.clone()
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
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // Filters are not passed down: they name this table's (plain) column types, and
        // the listing table's partition pruning would evaluate them on its dictionaries.
        let scan = self.inner.scan(state, projection, &[], limit).await?;
        let input = scan.schema();
        if input.fields().iter().all(|f| plain_type(f.data_type()) == *f.data_type()) {
            return Ok(scan);
        }
        let columns = input.fields().iter().enumerate().map(|(i, field)| {
            let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(field.name(), i));
            let plain = plain_type(field.data_type());
            let expr = match plain == *field.data_type() {
                true => column,
                false => Arc::new(CastExpr::new(column, plain, None)),
            };
            ProjectionExpr::new(expr, field.name().clone())
        });
        Ok(Arc::new(ProjectionExec::try_new(columns, scan)?))
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Unsupported; filters.len()])
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
}

/// `data_type` with every dictionary, at any depth, replaced by its values' type: the
/// column types of a [`ProtobufClusterTable`].
pub fn plain_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Dictionary(_, values) => plain_type(values),
        DataType::List(item) => DataType::List(plain_field(item)),
        DataType::LargeList(item) => DataType::LargeList(plain_field(item)),
        DataType::ListView(item) => DataType::ListView(plain_field(item)),
        DataType::LargeListView(item) => DataType::LargeListView(plain_field(item)),
        DataType::FixedSizeList(item, n) => DataType::FixedSizeList(plain_field(item), *n),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(plain_field).collect()),
        DataType::Map(entries, sorted) => DataType::Map(plain_field(entries), *sorted),
        other => other.clone(),
    }
}

fn plain_field(field: &FieldRef) -> FieldRef {
    Arc::new(field.as_ref().clone().with_data_type(plain_type(field.data_type())))
}

/// Registers `STORED AS PROTOBUF` in a cluster client's session: protojit-sql's format
/// and table factory ([`register_protobuf_format`]), with each table it creates wrapped in
/// a [`ProtobufClusterTable`] so that queries over it can be sent to the scheduler.
pub fn register_protobuf_cluster_format(ctx: &SessionContext, factory: ProtobufFormatFactory) -> DfResult<()> {
    register_protobuf_format(ctx, factory)?;
    let state = ctx.state_ref();
    let mut state = state.write();
    let key = FORMAT_NAME.to_uppercase();
    let inner =
        state.table_factories().get(&key).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!("register_protobuf_format registered no '{key}' factory"))
        })?;
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
