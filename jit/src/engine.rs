//! The engine: decodes one root message type into an arena with compiled code, or with
//! the interpreter where compiled code is unavailable or not wanted.

use std::ptr::NonNull;
use std::sync::Arc;

use protojit_arena::{Arena, BlockMut, DecodeError, DecodeErrorKind, FieldKind, LayoutIndex, Layouts};

use crate::compile::{CompileOptions, Compiled, JitError, TypeEngine, TypeStats};
use crate::runtime::{JitCtx, TierHook};
use crate::tier::Tiers;
use crate::{DecodeOptions, EngineKind};
use protojit_arena::interp::Interp;

/// What an engine runs, per message type.
#[derive(Clone, Debug)]
pub struct EngineStats {
    /// The engine asked for.
    pub requested: EngineKind,
    /// Per message type reachable from the root (root first).
    pub types: Vec<TypeStats>,
    /// Whether compiled functions call each other directly: eager compilation, or a
    /// tiered root recompiled as one module once its types were hot (else they go
    /// through the per-type entry table).
    pub direct_calls: bool,
}

impl EngineStats {
    /// Number of reachable message types decoded by the interpreter now (cold and queued
    /// types of a tiered engine included).
    pub fn interpreted(&self) -> usize {
        self.types.iter().filter(|t| t.engine != TypeEngine::Jit).count()
    }
    /// Total machine-code bytes.
    pub fn code_bytes(&self) -> u64 {
        self.types.iter().map(|t| t.code_bytes as u64).sum()
    }
}

/// What an engine runs.
enum Code {
    /// Eager: one module for the root and everything it reaches, with direct calls.
    Eager(Arc<Compiled>),
    /// Tiered: per-type entries, compiled when hot.
    Tiered(Arc<Tiers>),
    /// The interpreter only, and why.
    Interpreted(String),
}

/// A ready decoder for one root message type. `Send + Sync`.
pub struct Engine {
    layouts: Arc<Layouts>,
    root: LayoutIndex,
    options: DecodeOptions,
    code: Code,
    /// Whether the root type has message or group fields: then its block is allocated
    /// together with the first chunk compiled code carves child blocks from.
    root_has_children: bool,
}

impl Engine {
    /// An engine for `root` over `layouts` with the engine `options.engine` names:
    /// compiling everything now for [`EngineKind::Jit`], with its own tiers for
    /// [`EngineKind::Auto`] (share tiers between engines with [`Engine::with_tiers`]).
    pub fn new(layouts: Arc<Layouts>, root: LayoutIndex, options: DecodeOptions) -> Engine {
        let code = match options.engine {
            EngineKind::Interpreter => Code::Interpreted("the interpreter was requested".to_owned()),
            EngineKind::Auto => Code::Tiered(Tiers::new(layouts.clone(), CompileOptions::default())),
            EngineKind::Jit => match Compiled::compile(&layouts, root, &CompileOptions::default()) {
                Ok(code) => Code::Eager(Arc::new(code)),
                Err(e) => Code::Interpreted(e.to_string()),
            },
        };
        Engine::unchecked(layouts, root, options, code)
    }

    /// An engine using already compiled code for `root` (shared between decoders with
    /// different options: compiled code reads the options at run time). For
    /// [`EngineKind::Interpreter`] the code is not used; for [`EngineKind::Auto`] it is
    /// used as if [`EngineKind::Jit`] had been asked for.
    ///
    /// Fails with [`JitError::WrongLayouts`] when `code` was compiled for another root type
    /// or over other layouts (not `layouts` or a clone of it): its functions would write
    /// blocks of another shape. A `code` that is itself an error makes an engine that
    /// interprets, and says why in [`Engine::stats`].
    pub fn with_code(
        layouts: Arc<Layouts>,
        root: LayoutIndex,
        options: DecodeOptions,
        code: Result<Arc<Compiled>, JitError>,
    ) -> Result<Engine, JitError> {
        let code = match options.engine {
            EngineKind::Interpreter => Code::Interpreted("the interpreter was requested".to_owned()),
            _ => match code {
                Ok(code) => {
                    code.check(&layouts, root)?;
                    Code::Eager(code)
                }
                Err(e) => Code::Interpreted(e.to_string()),
            },
        };
        Ok(Engine::unchecked(layouts, root, options, code))
    }

    /// A tiered engine for `root` over the layouts of `tiers`, sharing its compiled types
    /// with every other engine over them. Used whatever `options.engine` says (the
    /// caller chose tiering).
    pub fn with_tiers(tiers: Arc<Tiers>, root: LayoutIndex, options: DecodeOptions) -> Engine {
        Engine::unchecked(tiers.layouts().clone(), root, options, Code::Tiered(tiers))
    }

    /// Assembles an engine whose code, if any, was made for `layouts` and `root`.
    fn unchecked(layouts: Arc<Layouts>, root: LayoutIndex, options: DecodeOptions, code: Code) -> Engine {
        let options = DecodeOptions { max_depth: options.max_depth.min(crate::MAX_DEPTH_LIMIT), ..options };
        let root_has_children =
            layouts.get(root).slots().iter().any(|s| matches!(s.kind, FieldKind::Message | FieldKind::Group));
        Engine { layouts, root, options, code, root_has_children }
    }

    /// The tiers of a tiered engine.
    pub fn tiers(&self) -> Option<&Arc<Tiers>> {
        match &self.code {
            Code::Tiered(t) => Some(t),
            _ => None,
        }
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
        self.options.engine
    }

    /// Per message type: engine (and why not compiled), code bytes, compile time; for a
    /// tiered engine, each type's tier now and the interpreted decodes that made it hot.
    pub fn stats(&self) -> EngineStats {
        let types = match &self.code {
            Code::Eager(code) => code.stats().to_vec(),
            Code::Tiered(tiers) => tiers.stats(self.root),
            Code::Interpreted(reason) => self
                .layouts
                .reachable(self.root)
                .into_iter()
                .map(|li| TypeStats {
                    message_type: self.layouts.get(li).descriptor().full_name().to_owned(),
                    engine: TypeEngine::Interpreter(reason.clone()),
                    code_bytes: 0,
                    compile_time: Default::default(),
                    clif: None,
                    interpreted_decodes: 0,
                    interpreted_bytes: 0,
                })
                .collect(),
        };
        let direct_calls = match &self.code {
            Code::Eager(_) => true,
            Code::Tiered(tiers) => tiers.direct(self.root).is_some(),
            Code::Interpreted(_) => false,
        };
        EngineStats { requested: self.options.engine, types, direct_calls }
    }

    /// Decodes `input` into a fresh root block in `arena`.
    ///
    /// Inlined into the caller for eagerly compiled code, the common case: a tiny
    /// message's decode costs about as much as the calls around it.
    #[inline]
    pub fn decode(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        if input.len() > u32::MAX as usize {
            return Err(DecodeError::new(DecodeErrorKind::InputTooLarge, 0));
        }
        match &self.code {
            Code::Eager(code) => {
                let mut ctx = JitCtx::new(input, arena, &self.layouts, &self.options);
                let root = self.compiled_root(arena, &mut ctx);
                // SAFETY: the root function was compiled for `self.root` over
                // `self.layouts` (checked in `with_code`), and `code` keeps it alive.
                unsafe { run(code.root_fn(), &mut ctx, &root, input)? };
                Ok(root.as_ptr())
            }
            Code::Tiered(tiers) => self.decode_tiered(tiers, input, arena),
            Code::Interpreted(_) => self.decode_interpreted(input, arena),
        }
    }

    /// [`Engine::decode`] by the interpreter alone.
    #[inline(never)]
    fn decode_interpreted(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        let mut root = BlockMut::alloc(arena, &self.layouts, self.root);
        let interp = Interp::new(input, &self.options);
        interp.message(&mut root, 0, input.len(), 0, None)?;
        Ok(root.as_ptr())
    }

    /// [`Engine::decode`] with tiers: the direct module, else the root's entry, else the
    /// interpreter, which offers child messages to their compiled code. Each arm allocates
    /// the root itself: the interpreter's blocks must not outlive the tier hook it is
    /// given, so there the root comes after the hook.
    #[inline(never)]
    fn decode_tiered(&self, tiers: &Tiers, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        let mut ctx = JitCtx::new(input, arena, &self.layouts, &self.options).tiered(tiers);
        if let Some(code) = tiers.direct(self.root) {
            let root = self.compiled_root(arena, &mut ctx);
            // SAFETY: the direct module was compiled by the tiers for `self.root` over their
            // layouts, which are the engine's; `tiers` keeps it alive.
            unsafe { run(code.root_fn(), &mut ctx, &root, input)? };
            return Ok(root.as_ptr());
        }
        match tiers.entry(self.root) {
            Some(f) => {
                let root = self.compiled_root(arena, &mut ctx);
                // SAFETY: a tiers' entry is the function of that type over its layouts,
                // which are the engine's (`with_tiers`), alive while `tiers` is.
                unsafe { run(f, &mut ctx, &root, input)? };
                tiers.consider_direct(self.root);
                Ok(root.as_ptr())
            }
            None => {
                let hook = TierHook { ctx: &mut ctx, tiers };
                if tiers.is_cold(self.root) {
                    hook.note(self.root, input.len());
                }
                let mut root = BlockMut::alloc(arena, &self.layouts, self.root);
                let interp = Interp::new(input, &self.options).with_children(&hook);
                interp.message(&mut root, 0, input.len(), 0, None)?;
                Ok(root.as_ptr())
            }
        }
    }

    /// The root block of a decode by compiled code and, when the root type has child
    /// messages, the arena's free space lent to `ctx` for them.
    #[inline]
    fn compiled_root<'a>(&'a self, arena: &'a Arena, ctx: &mut JitCtx) -> BlockMut<'a> {
        let root = BlockMut::alloc(arena, &self.layouts, self.root);
        if self.root_has_children {
            ctx.first_chunk(arena);
        }
        root
    }
}

/// Runs compiled message function `f` over the whole input into `root`.
///
/// # Safety
/// `f` is the compiled function of `root`'s layout over the layouts `ctx` was made with,
/// alive for the call; `ctx` was made for `input` and `root`'s arena.
#[inline]
unsafe fn run(
    f: crate::runtime::MessageFn,
    ctx: &mut JitCtx,
    root: &BlockMut<'_>,
    input: &[u8],
) -> Result<(), DecodeError> {
    let start = input.as_ptr();
    let end = start.wrapping_add(input.len());
    // SAFETY: the caller's contract; compiled code reads only `start..end` (the input)
    // and writes only into blocks of the arena, all of which outlive the call.
    let r = unsafe { f(ctx, root.as_ptr().as_ptr(), start, end, 0, std::ptr::null()) };
    ctx.return_chunk(root.arena());
    if r.is_null() {
        return Err(recorded_error(ctx));
    }
    Ok(())
}

/// The error compiled code recorded before it returned null; a missing one would be a
/// lowering bug, reported rather than trusted.
#[cold]
#[inline(never)]
fn recorded_error(ctx: &JitCtx) -> DecodeError {
    ctx.error().unwrap_or(DecodeError::new(DecodeErrorKind::Internal, 0))
}
