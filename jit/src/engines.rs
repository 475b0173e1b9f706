//! `Engines`: the one owner of compiled code and the one place that decides when to compile: decoders, tiers and column appenders.
//!
//! For one set of layouts it holds the compile options, the tiers every tiered engine
//! shares, the eagerly compiled code per root type and the column appenders per plan; it
//! makes an [`Engine`] for any root with any [`EngineOptions`], and says what tiering a
//! caller's [`Workload`] should run with. Everything compiled in the background is
//! compiled on the process's one compiler thread (`protojit-compiler`, see `tier.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use protojit_arena::{LayoutIndex, Layouts};

use crate::columns::{Appender, ColumnPlan};
use crate::compile::{Compiled, JitError};
use crate::compiling::Compiling;
use crate::engine::{Code, Engine};
use crate::options::{CompileOptions, EngineKind, EngineOptions, Tiering};
use crate::tier::{queue_appender, Tiers};

/// The engines of one schema: compile options, per-type tiers and eagerly compiled code,
/// shared by every engine it builds. `Send + Sync`; the tiers and the code are made on
/// first use.
///
/// ```
/// use std::sync::Arc;
/// use protojit_jit::{EngineKind, EngineOptions, Engines, CompileOptions};
/// # struct Source;
/// # impl protox::file::FileResolver for Source {
/// #     fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
/// #         protox::file::File::from_source(name, "syntax = \"proto3\"; message M { int32 a = 1; }")
/// #     }
/// # }
/// # let pool = protox::Compiler::with_file_resolver(Source).open_file("m.proto")?.descriptor_pool();
/// let layouts = Arc::new(protojit_arena::Layouts::new(&pool)?);
/// let root = layouts.index_of("M").unwrap();
/// let engines = Engines::new(layouts, CompileOptions::default());
/// let interp = engines.engine(root, &EngineOptions::default().with_kind(EngineKind::Interpreter));
/// assert_eq!(interp.kind(), EngineKind::Interpreter);
/// let arena = protojit_arena::Arena::new();
/// let tree = interp.decode(&[0x08, 0x07], &arena)?;
/// assert_eq!(tree.layout().descriptor().name(), "M");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Engines {
    layouts: Arc<Layouts>,
    compile: CompileOptions,
    /// Per-type tiers ([`EngineKind::Auto`]), made on first use.
    tiers: OnceLock<Arc<Tiers>>,
    /// Eagerly compiled code per root type ([`EngineKind::Jit`]), compiled on first use.
    compiled: Mutex<HashMap<LayoutIndex, Result<Arc<Compiled>, JitError>>>,
    /// Column appenders per plan, compiled or compiling.
    appenders: Mutex<HashMap<ColumnPlan, Arc<Compiling<Appender>>>>,
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engines")
            .field("layouts", &self.layouts.id())
            .field("compile", &self.compile)
            .finish_non_exhaustive()
    }
}

impl Engines {
    /// The engines of `layouts`, compiling with `compile`.
    pub fn new(layouts: Arc<Layouts>, compile: CompileOptions) -> Engines {
        Engines {
            layouts,
            compile,
            tiers: OnceLock::new(),
            compiled: Mutex::new(HashMap::new()),
            appenders: Mutex::new(HashMap::new()),
        }
    }

    /// The layouts every engine decodes with.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// The compile options every engine's code is compiled with.
    pub fn compile_options(&self) -> &CompileOptions {
        &self.compile
    }

    /// The per-type tiers every tiered engine shares, made on first use.
    pub fn tiers(&self) -> &Arc<Tiers> {
        self.tiers.get_or_init(|| Tiers::new(self.layouts.clone(), self.compile.clone()))
    }

    /// Code for every type reachable from `root`, compiled on first use (or why there is
    /// none: the host has no backend, or Cranelift failed).
    pub fn compiled(&self, root: LayoutIndex) -> Result<Arc<Compiled>, JitError> {
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        cache.entry(root).or_insert_with(|| Compiled::compile(&self.layouts, root, &self.compile).map(Arc::new)).clone()
    }

    /// An engine for message type `root` (an index of these layouts) with `options`:
    /// tiered over the shared tiers for [`EngineKind::Auto`]; the shared eager code for
    /// [`EngineKind::Jit`] (or the interpreter, with the reason in its stats, where there
    /// is none); the interpreter for [`EngineKind::Interpreter`].
    pub fn engine(&self, root: LayoutIndex, options: &EngineOptions) -> Engine {
        let code = match options.kind {
            EngineKind::Interpreter => Code::Interpreted("the interpreter was requested".to_owned()),
            EngineKind::Auto => Code::Tiered(self.tiers().clone()),
            // The code was compiled over these very layouts for this root; the check is the
            // engine's own guard that it runs only such code.
            EngineKind::Jit => {
                match self.compiled(root).and_then(|code| code.check(&self.layouts, root).map(|()| code)) {
                    Ok(code) => Code::Eager(code),
                    Err(e) => Code::Interpreted(e.to_string()),
                }
            }
        };
        Engine::assemble(self.layouts.clone(), root, *options, code)
    }

    /// Column appenders for `plan` (which must [`check`](ColumnPlan::check) over these
    /// layouts, else the cell holds why not), shared by every caller of the same plan:
    /// queued on the background compiler for [`EngineKind::Auto`] (the caller converts
    /// another way until [`Compiling::get`] has them), compiled now for the other kinds or
    /// when the queue is full.
    pub fn appender(&self, plan: &ColumnPlan, kind: EngineKind) -> Arc<Compiling<Appender>> {
        let cell = {
            let mut cache = self.appenders.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cell) = cache.get(plan) {
                return cell.clone();
            }
            let cell = Arc::new(Compiling::new());
            cache.insert(plan.clone(), cell.clone());
            cell
        };
        let plan = plan.clone();
        let (cell, plan) = match kind {
            EngineKind::Auto => match queue_appender(cell.clone(), self.layouts.clone(), plan, self.compile.clone()) {
                Ok(()) => return cell,
                Err(job) => job,
            },
            _ => (cell, plan),
        };
        cell.compile_appender(&self.layouts, &plan, &self.compile);
        cell
    }

    /// The tiering a tiered engine of `root` should run with for `workload`, and why it
    /// compiles nothing when it does not (for the caller to show): the one place that
    /// decides when compiling pays.
    pub fn tiering(&self, root: LayoutIndex, workload: Workload) -> (Tiering, Option<String>) {
        let name = || self.layouts.get(root).descriptor().full_name().to_owned();
        let fit = |tiering: Tiering, bytes: Option<u64>| match bytes {
            Some(bytes) => {
                let fitted = tiering.for_input(&self.layouts, root, bytes);
                let why = (fitted != tiering).then(|| {
                    format!(
                        "{bytes} bytes of input cannot repay compiling {} (about {} would): decoding on the interpreter",
                        name(),
                        Tiering::repaying_bytes(&self.layouts, root)
                    )
                });
                (fitted, why)
            }
            None => (tiering, None),
        };
        match workload {
            Workload::Unknown => (Tiering::default(), None),
            // A core left idle compiles for free; when every core decodes, the compile
            // takes its time from them, so only an input that repays it compiles.
            Workload::Stream { bytes, threads } => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                fit(Tiering::default(), bytes.filter(|_| threads.is_none_or(|t| t >= cores)))
            }
            // One input read once: late thresholds, and only an input that repays them.
            Workload::OneInput { bytes } => fit(Tiering { after_decodes: 50_000, after_bytes: 4 << 20 }, bytes),
            // The appenders are the compiled code; the decodes beside them (records
            // converted while they compile, records they decline) stay interpreted rather
            // than compile beside the conversion.
            Workload::BesideAppenders => (Tiering::NEVER, None),
        }
    }
}

/// What a caller's decodes will read, for [`Engines::tiering`] to decide when compiling
/// pays for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Nothing known: a library caller's decodes ([`Tiering::default`]).
    Unknown,
    /// A stream of records, `bytes` long when known, decoded on `threads` threads (`None`:
    /// as many as there are cores, or threads beside the decoding ones that keep the
    /// cores busy): the compile is left out when every core decodes and the input cannot
    /// repay it ([`Tiering::for_input`]).
    Stream {
        /// The stream's size (a file's), if known.
        bytes: Option<u64>,
        /// Threads decoding it, if fewer than the cores may be.
        threads: Option<usize>,
    },
    /// One message read once (a file of one record), `bytes` long when known.
    OneInput {
        /// The input's size, if known.
        bytes: Option<u64>,
    },
    /// The decodes beside compiled column appenders: records converted while they
    /// compile, and records they decline.
    BesideAppenders,
}
