//! protojit's decode engines.
//!
//! - [`interp`]: the table interpreter over [`MessageLayout`](protojit_arena::MessageLayout)s,
//!   the correctness oracle and the fallback.
//! - `lower` / [`compile`]: one Cranelift function per message type (peek hub + field-order
//!   threading), all in one module.
//! - [`runtime`]: the context compiled code runs with and its slow-path helpers.
//! - [`Engine`]: decodes one root message type with the chosen engine.

pub mod compile;
mod engine;
pub mod interp;
mod lower;
pub mod runtime;

pub use compile::{CompileOptions, Compiled, JitError, TypeEngine, TypeStats};
pub use engine::{Engine, EngineKind, EngineStats};

/// Decoder settings shared by both engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Deepest nesting of messages and groups below the root (default 100, as protobuf).
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
