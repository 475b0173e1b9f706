//! What goes wrong starting a cluster process or connecting to one.

/// An error of [`crate::run_scheduler`], [`crate::run_executor`] or [`crate::connect`].
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A host and port that do not form a socket address.
    #[error("'{0}' is not an address to listen on (give an IP address and a port)")]
    Address(String),
    /// Ballista failed (binding a port, reaching the scheduler, …).
    #[error("ballista: {0}")]
    Ballista(#[from] ballista_core::error::BallistaError),
    /// DataFusion failed (a bad scheduler URL, …).
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
}
