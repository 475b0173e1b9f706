//! protojit's decode engines.
//!
//! - The table interpreter, the correctness oracle and the fallback, lives in
//!   `protojit_arena::interp` (no Cranelift there, so reading and JSON need none).
//! - `lower` / `compile`: one Cranelift function per message type (peek hub + field-order
//!   threading), all in one module; small leaf types are inlined into their callers.
//! - `abi`: the contract compiled code runs under (its context, the message function's
//!   signature, the list of helpers it calls); `helpers`: those helpers' bodies.
//! - [`Tiers`]: per-type tiering: types start on the interpreter and are compiled on a
//!   background thread once hot ([`EngineKind::Auto`]).
//! - [`Engines`]: the one owner of compiled code: it holds a schema's [`CompileOptions`],
//!   [`Tiers`], eagerly compiled code and column appenders, makes an [`Engine`] per root
//!   type and [`EngineOptions`], and decides when compiling pays ([`Engines::tiering`] for
//!   a [`Workload`]); everything compiled in the background goes through one queue to one
//!   thread.
//! - [`Engine`]: decodes one root message type with the chosen engine.
//! - [`Appender`] (`columns`): compiled code that reads records straight into column
//!   buffers ([`ColumnPlan`], [`ChunkColumns`]), for the Arrow converter's compiled path.
//! - `wire`: the wire-reading core both lowerings share (varints, lengths, fixed values,
//!   UTF-8, tag dispatch), and `helper_table!`, which turns a helper list into signatures.
//!
//! Streaming walks (`Decoder::stream`) run on the interpreter's walk
//! (`protojit_arena::stream::walk`), which is generic over the visitor and inlines its
//! callbacks: a compiled walk, which paid a call per value, ran at 0.89× its speed on the
//! OSM blocks and tiles and was removed.
//!
//! # Debugging compiled code
//!
//! - `PROTOJIT_DUMP_CLIF=1` prints every function's Cranelift IR to stderr as it is
//!   compiled; `CompileOptions::keep_clif` keeps it in [`TypeStats::clif`] instead
//!   (`protojit schema jit TYPE --clif` shows it). The IR is printed after inlining.
//! - `PROTOJIT_DUMP_VCODE=1` prints every function's machine code as Cranelift emitted
//!   it (after register allocation): what a per-instruction profile of compiled code
//!   (callgrind `--dump-instr=yes`) is read against.
//! - `PERF_BUILDID_DIR=1` makes Cranelift append each function to `/tmp/perf-<pid>.map`,
//!   so `perf report` names JIT frames `protojit:<message type>`.
//! - `EngineKind::Interpreter` decodes the same tree without compiled code: when the two
//!   disagree, the compiled code is wrong (the interpreter is the oracle).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod abi;
mod columns;
mod compile;
mod compiling;
mod engine;
mod engines;
mod helpers;
mod lower;
mod options;
mod tier;
mod wire;

pub use columns::{Appender, ChunkColumns, ColumnPlan, PlanCell, PlanError, PlanField, PlanMessage};
pub use compile::{CompilePhases, Compiled, JitError, TypeEngine, TypeStats};
pub use compiling::Compiling;
pub use engine::{Engine, EngineStats};
pub use engines::{Engines, Workload};
pub use options::{CompileOptions, EngineKind, EngineOptions, OptLevel, Regalloc, Tiering};
pub use tier::Tiers;
