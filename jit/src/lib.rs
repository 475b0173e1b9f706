//! protojit's decode engines.
//!
//! - [`interp`]: the table interpreter over [`MessageLayout`](protojit_arena::MessageLayout)s,
//!   the correctness oracle and the fallback.
//! - `lower` / [`compile`]: one Cranelift function per message type (peek hub + field-order
//!   threading), all in one module.
//! - [`runtime`]: the context compiled code runs with and its slow-path helpers.
//! - [`Engine`]: decodes one root message type with the chosen engine.
//!
//! # Debugging compiled code
//!
//! - `PROTOJIT_DUMP_CLIF=1` prints every function's Cranelift IR to stderr as it is
//!   compiled; `CompileOptions::keep_clif` keeps it in [`TypeStats::clif`] instead
//!   (`protojit schema jit TYPE --clif` shows it).
//! - `PERF_BUILDID_DIR=1` makes Cranelift append each function to `/tmp/perf-<pid>.map`,
//!   so `perf report` names JIT frames `protojit:<message type>`.
//! - `EngineKind::Interpreter` decodes the same tree without compiled code: when the two
//!   disagree, the compiled code is wrong (the interpreter is the oracle).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod compile;
mod engine;
pub mod interp;
mod lower;
pub mod runtime;

pub use compile::{CompileOptions, Compiled, JitError, TypeEngine, TypeStats};
pub use engine::{Engine, EngineKind, EngineStats};

/// The largest effective [`DecodeOptions::max_depth`].
pub const MAX_DEPTH_LIMIT: u32 = 1000;

/// Decoder settings shared by both engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Deepest nesting of messages and groups below the root (default 100, as protobuf).
    /// Values above [`MAX_DEPTH_LIMIT`] act as that limit: both engines recurse once per
    /// level, and deeper nesting could overflow a thread's stack.
    pub max_depth: u32,
    /// Validate UTF-8 in proto3 `string` fields (default on). Turning it off is the
    /// caller's risk: string views then check UTF-8 when read.
    pub validate_utf8: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions { max_depth: 100, validate_utf8: true }
    }
}
