//! protojit's SQL tables on a Ballista cluster: plan codecs that carry protobuf tables and scans (schema bytes included) from the client to the scheduler and executors, and the scheduler and executor processes built with them.
//!
//! - [`ProtojitLogicalCodec`], [`ProtojitPhysicalCodec`]: Ballista's codecs plus protojit's
//!   tables and scans (`codec`; their wire messages in `wire`).
//! - [`ProtobufClusterTable`], [`register_protobuf_cluster_format`]: a protobuf listing
//!   table the codecs can ship, and `STORED AS PROTOBUF` making it (`table`).
//! - [`run_scheduler`], [`run_executor`], [`connect`], [`connect_with_config`]: the processes and the client
//!   session (`cluster`); the `protojit-ballista` binary runs the processes.
//!
//! Files are read by the process that scans them: every executor (and the scheduler,
//! which lists them when it plans) must reach the table's location under the same URL (a
//! shared file system or an object store). Ballista's endpoints carry no authentication.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cluster;
mod codec;
mod error;
mod table;
mod wire;

pub use cluster::{connect, connect_with_config, run_executor, run_scheduler, ExecutorOptions, SchedulerOptions};
pub use codec::{ProtojitLogicalCodec, ProtojitPhysicalCodec};
pub use error::ClusterError;
pub use table::{plain_type, register_protobuf_cluster_format, ProtobufClusterTable};
