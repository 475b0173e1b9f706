//! Running a Ballista scheduler or executor with protojit's codecs, and connecting a client session to the cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::{ClusterError, ProtojitLogicalCodec, ProtojitPhysicalCodec};

/// Where a scheduler listens. Ballista's endpoints carry no authentication: the default
/// host is 127.0.0.1, and another one belongs on a private network.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// The address to bind (default 127.0.0.1).
    pub bind_host: String,
    /// The host executors and clients are told to reach it at (default: `bind_host`).
    pub external_host: Option<String>,
    /// The gRPC port (default 50050).
    pub port: u16,
    /// Seconds without a heartbeat after which an executor counts as lost: its running
    /// tasks, and finished ones whose shuffle output a running stage still needs, are
    /// scheduled again on the others (Ballista's default 180). Keep it above the
    /// executors' `heartbeat_interval_seconds`; jobs fail when no executor is left this long.
    pub executor_timeout_seconds: u64,
    /// Seconds between checks for lost executors (Ballista's default 15; below
    /// `executor_timeout_seconds`).
    pub expire_interval_seconds: u64,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        SchedulerOptions {
            bind_host: "127.0.0.1".into(),
            external_host: None,
            port: 50050,
            executor_timeout_seconds: 180,
            expire_interval_seconds: 15,
        }
    }
}

/// Where an executor listens and which scheduler it joins.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    /// The address to bind (default 127.0.0.1).
    pub bind_host: String,
    /// The host other executors and clients fetch results from (default: `bind_host`).
    pub external_host: Option<String>,
    /// The Arrow Flight port results are fetched from (default 50051).
    pub port: u16,
    /// The gRPC port the scheduler talks to (default 50052).
    pub grpc_port: u16,
    /// The scheduler's host (default 127.0.0.1).
    pub scheduler_host: String,
    /// The scheduler's port (default 50050).
    pub scheduler_port: u16,
    /// Tasks run at once (default: the machine's cores).
    pub vcores: Option<usize>,
    /// Where shuffle files are written (default: a new temporary directory).
    pub work_dir: Option<PathBuf>,
    /// Seconds between heartbeats to the scheduler (Ballista's default 60).
    pub heartbeat_interval_seconds: u64,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions {
            bind_host: "127.0.0.1".into(),
            external_host: None,
            port: 50051,
            grpc_port: 50052,
            scheduler_host: "127.0.0.1".into(),
            scheduler_port: 50050,
            vcores: None,
            work_dir: None,
            heartbeat_interval_seconds: 60,
        }
    }
}

/// Runs a scheduler that decodes protobuf tables and scans, until it fails.
pub async fn run_scheduler(options: &SchedulerOptions) -> Result<(), ClusterError> {
    let address: SocketAddr = format!("{}:{}", options.bind_host, options.port)
        .parse()
        .map_err(|e| ClusterError::Address(format!("{}:{}: {e}", options.bind_host, options.port)))?;
    let mut config = SchedulerConfig::default()
        .with_hostname(options.external_host.as_deref().unwrap_or(&options.bind_host))
        .with_port(options.port);
    config.bind_host = options.bind_host.clone();
    config.executor_timeout_seconds = options.executor_timeout_seconds;
    // Jobs fail once no executor has been left for as long as one may go silent.
    config.no_executors_grace_period_seconds = options.executor_timeout_seconds;
    config.expire_dead_executor_interval_seconds = options.expire_interval_seconds;
    config.override_logical_codec = Some(Arc::new(ProtojitLogicalCodec::new()));
    config.override_physical_codec = Some(Arc::new(ProtojitPhysicalCodec::new()));
    let cluster = BallistaCluster::new_from_config(&config).await?;
    start_server(cluster, address, Arc::new(config)).await?;
    Ok(())
}

/// Runs an executor that decodes protobuf scans, until it is stopped or fails.
pub async fn run_executor(options: &ExecutorOptions) -> Result<(), ClusterError> {
    let mut config = ExecutorProcessConfig {
        bind_host: options.bind_host.clone(),
        external_host: Some(options.external_host.clone().unwrap_or_else(|| options.bind_host.clone())),
        port: options.port,
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler_host.clone(),
        scheduler_port: options.scheduler_port,
        work_dir: options.work_dir.as_ref().map(|d| d.display().to_string()),
        executor_heartbeat_interval_seconds: options.heartbeat_interval_seconds,
        override_logical_codec: Some(Arc::new(ProtojitLogicalCodec::new())),
        override_physical_codec: Some(Arc::new(ProtojitPhysicalCodec::new())),
        // Ballista's default registry has DataFusion's core functions only; a client's
        // session also plans the nested ones (cardinality, array_*, …), so tasks using
        // them would fail to decode. The executor takes a default session's functions.
        override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(
            &SessionStateBuilder::new().with_default_features().build(),
        ))),
        ..ExecutorProcessConfig::default()
    };
    if let Some(vcores) = options.vcores {
        config.vcores = vcores;
    }
    start_executor_process(Arc::new(config)).await?;
    Ok(())
}

/// A client session whose queries run on the scheduler at `url` (`df://HOST:PORT`), with
/// protojit's codecs and `STORED AS PROTOBUF` registered (see
/// [`crate::register_protobuf_cluster_format`]; call it with the factory of your choice).
pub async fn connect(url: &str) -> Result<SessionContext, ClusterError> {
    connect_with_config(url, SessionConfig::new_with_ballista()).await
}

/// [`connect`] with a session configuration of one's own (target partitions, batch
/// size, …; start from `SessionConfig::new_with_ballista()`); protojit's codecs are added.
pub async fn connect_with_config(url: &str, config: SessionConfig) -> Result<SessionContext, ClusterError> {
    let config = config
        .with_ballista_logical_extension_codec(Arc::new(ProtojitLogicalCodec::new()))
        .with_ballista_physical_extension_codec(Arc::new(ProtojitPhysicalCodec::new()));
    let state = SessionStateBuilder::new().with_config(config).with_default_features().build();
    Ok(SessionContext::remote_with_state(url, state).await?)
}
