//! `Engines`: the one place engines are built. It owns, for one set of layouts, the
//! compile options, the tiers every tiered engine shares and the eagerly compiled code
//! per root type, and makes an [`Engine`] for any root with any [`EngineOptions`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use protojit_arena::{LayoutIndex, Layouts};

use crate::compile::{Compiled, JitError};
use crate::engine::{Code, Engine};
use crate::options::{CompileOptions, EngineKind, EngineOptions};
use crate::tier::Tiers;

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
        Engines { layouts, compile, tiers: OnceLock::new(), compiled: Mutex::new(HashMap::new()) }
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
        Engine::assemble(self.layouts.clone(), root, *options, self.compile.clone(), code)
    }
}
