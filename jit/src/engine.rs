//! The engine: decodes one root message type into an arena with compiled code, or with
//! the interpreter where compiled code is unavailable or not wanted.

use std::ptr::NonNull;
use std::sync::Arc;

use protojit_arena::{Arena, BlockMut, DecodeError, DecodeErrorKind, LayoutIndex, Layouts};

use crate::compile::{Compiled, JitError, TypeEngine, TypeStats};
use crate::runtime::JitCtx;
use crate::DecodeOptions;
use protojit_arena::interp::Interp;

/// Which engine decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EngineKind {
    /// Compiled code where the host is supported, the interpreter elsewhere.
    #[default]
    Auto,
    /// Compiled code (message types the lowering cannot handle, or a host without a
    /// backend, fall back to the interpreter; [`Engine::stats`] says which and why).
    Jit,
    /// The table interpreter only.
    Interpreter,
}

/// What an engine runs, per message type.
#[derive(Clone, Debug)]
pub struct EngineStats {
    /// The engine asked for.
    pub requested: EngineKind,
    /// Per message type reachable from the root (root first).
    pub types: Vec<TypeStats>,
}

impl EngineStats {
    /// Number of reachable message types decoded by the interpreter.
    pub fn interpreted(&self) -> usize {
        self.types.iter().filter(|t| t.engine != TypeEngine::Jit).count()
    }
    /// Total machine-code bytes.
    pub fn code_bytes(&self) -> u64 {
        self.types.iter().map(|t| t.code_bytes as u64).sum()
    }
}

/// A ready decoder for one root message type. `Send + Sync`.
pub struct Engine {
    layouts: Arc<Layouts>,
    root: LayoutIndex,
    options: DecodeOptions,
    kind: EngineKind,
    code: Result<Arc<Compiled>, String>,
}

impl Engine {
    /// An engine for `root` over `layouts`, compiling now if `kind` asks for compiled code.
    pub fn new(layouts: Arc<Layouts>, root: LayoutIndex, options: DecodeOptions, kind: EngineKind) -> Engine {
        let code = match kind {
            EngineKind::Interpreter => Err(JitError::UnsupportedHost(String::new())),
            _ => Compiled::compile(&layouts, root, &Default::default()).map(Arc::new),
        };
        match Engine::with_code(layouts.clone(), root, options.clone(), kind, code) {
            Ok(engine) => engine,
            // Unreachable: the code was just compiled for these layouts and this root.
            Err(e) => Engine::unchecked(layouts, root, options, kind, Err(e.to_string())),
        }
    }

    /// An engine using already compiled code for `root` (shared between decoders with
    /// different options: compiled code reads the options at run time).
    ///
    /// Fails with [`JitError::WrongLayouts`] when `code` was compiled for another root type
    /// or over other layouts (not `layouts` or a clone of it): its functions would write
    /// blocks of another shape. A `code` that is itself an error makes an engine that
    /// interprets, and says why in [`Engine::stats`].
    pub fn with_code(
        layouts: Arc<Layouts>,
        root: LayoutIndex,
        options: DecodeOptions,
        kind: EngineKind,
        code: Result<Arc<Compiled>, JitError>,
    ) -> Result<Engine, JitError> {
        let code = match kind {
            EngineKind::Interpreter => Err("the interpreter was requested".to_owned()),
            _ => match code {
                Ok(code) => {
                    code.check(&layouts, root)?;
                    Ok(code)
                }
                Err(e) => Err(e.to_string()),
            },
        };
        Ok(Engine::unchecked(layouts, root, options, kind, code))
    }

    /// Assembles an engine whose `code`, if any, was checked against `layouts` and `root`.
    fn unchecked(
        layouts: Arc<Layouts>,
        root: LayoutIndex,
        options: DecodeOptions,
        kind: EngineKind,
        code: Result<Arc<Compiled>, String>,
    ) -> Engine {
        let options = DecodeOptions { max_depth: options.max_depth.min(crate::MAX_DEPTH_LIMIT), ..options };
        Engine { layouts, root, options, kind, code }
    }

    /// The layouts this engine decodes with.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// The root message type's layout.
    pub fn root(&self) -> LayoutIndex {
        self.root
    }

    /// The options in force.
    pub fn options(&self) -> &DecodeOptions {
        &self.options
    }

    /// The engine asked for.
    pub fn kind(&self) -> EngineKind {
        self.kind
    }

    /// Per message type: engine (and why not compiled), code bytes, compile time.
    pub fn stats(&self) -> EngineStats {
        let types = match &self.code {
            Ok(code) => code.stats().to_vec(),
            Err(reason) => self
                .layouts
                .reachable(self.root)
                .into_iter()
                .map(|li| TypeStats {
                    message_type: self.layouts.get(li).descriptor().full_name().to_owned(),
                    engine: TypeEngine::Interpreter(reason.clone()),
                    code_bytes: 0,
                    compile_time: Default::default(),
                    clif: None,
                })
                .collect(),
        };
        EngineStats { requested: self.kind, types }
    }

    /// Decodes `input` into a fresh root block in `arena`.
    pub fn decode(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        if input.len() > u32::MAX as usize {
            return Err(DecodeError::new(DecodeErrorKind::InputTooLarge, 0));
        }
        let mut root = BlockMut::alloc(arena, &self.layouts, self.root);
        match &self.code {
            Ok(code) => {
                let mut ctx = JitCtx::new(input, arena, &self.layouts, &self.options);
                let start = input.as_ptr();
                let end = start.wrapping_add(input.len());
                // SAFETY: the root function was compiled for `self.root` over
                // `self.layouts` (checked in `with_code`), and `code` keeps it alive; it
                // reads only `start..end` (the input) and writes only into blocks of
                // `arena`, all of which outlive the call; `ctx` describes exactly these.
                let r = unsafe { (code.root_fn())(&mut ctx, root.as_ptr().as_ptr(), start, end, 0, std::ptr::null()) };
                if r.is_null() {
                    // Compiled code records an error before it returns null; a missing one
                    // would be a lowering bug, reported rather than trusted.
                    return Err(ctx.error().unwrap_or(DecodeError::new(DecodeErrorKind::Internal, 0)));
                }
            }
            Err(_) => {
                let interp = Interp::new(input, &self.options);
                interp.message(&mut root, 0, input.len(), 0, None)?;
            }
        }
        Ok(root.as_ptr())
    }
}
