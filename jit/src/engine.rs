//! The engine: decodes one root message type into an arena with compiled code, or with
//! the interpreter where compiled code is unavailable or not wanted.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use protojit_arena::{
    Arena, BlockMut, BlockRef, DecodeError, DecodeErrorKind, FieldKind, LayoutIndex, Layouts, OwnedTree,
};

use crate::abi::{JitCtx, MessageFn, TierHook};
use crate::compile::{Compiled, TypeEngine, TypeStats};
use crate::options::{EngineKind, EngineOptions, Tiering};
use crate::tier::Tiers;
use protojit_arena::interp::Interp;

/// What an engine runs, per message type.
#[derive(Clone, Debug)]
pub struct EngineStats {
    /// The engine that runs: [`EngineKind::Interpreter`] also where compiled code was
    /// asked for and could not be made (each type's entry in `types` says why).
    pub kind: EngineKind,
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
pub(crate) enum Code {
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
    options: EngineOptions,
    code: Code,
    /// Whether the root type has message or group fields: then compiled code is lent the
    /// arena's free space for child blocks from the start.
    root_has_children: bool,
    /// Tree bytes per KiB of input of the last decode of a large input that took new
    /// memory from the system (0: none yet), with an eighth more; see
    /// [`Engine::first_chunk_min`].
    tree_per_kib: AtomicU32,
    /// The most `tree_per_kib` may say: the design's bound on a tree's size (half the
    /// largest block per input byte), at most 16× the input.
    max_per_kib: u32,
    /// The root function of eagerly compiled code (kept alive by `code`), and the root
    /// block's size: a small input's decode goes straight to it (see [`Engine::decode`]).
    eager_root: Option<MessageFn>,
    root_size: usize,
    /// Whether the options' UTF-8 policy checks the strings whose features say VERIFY (the trees' readers then
    /// read them as text without a second check).
    verify_utf8_checked: bool,
}

/// Inputs up to this size ask nothing of the arena at the start: their trees usually fit
/// what is free of its inline block.
const FIRST_CHUNK_SMALL: usize = 256;
/// Without a learned size, a larger input asks for about its own size, at most this.
const FIRST_CHUNK_MAX: usize = 64 << 10;

impl Engine {
    /// Assembles an engine whose code, if any, was made for `layouts` and `root` (as
    /// [`Engines::engine`](crate::Engines::engine) makes sure).
    pub(crate) fn assemble(layouts: Arc<Layouts>, root: LayoutIndex, options: EngineOptions, code: Code) -> Engine {
        let root_has_children =
            layouts.get(root).slots().iter().any(|s| matches!(s.kind, FieldKind::Message | FieldKind::Group));
        let largest = layouts.iter().map(|(_, l)| l.size() as usize).max().unwrap_or(0);
        let max_per_kib = (largest / 2).clamp(1, 16) as u32 * 1024;
        let eager_root = match &code {
            Code::Eager(code) => Some(code.root_fn()),
            _ => None,
        };
        let root_size = layouts.get(root).size() as usize;
        Engine {
            layouts,
            root,
            options,
            code,
            root_has_children,
            tree_per_kib: AtomicU32::new(0),
            max_per_kib,
            eager_root,
            root_size,
            verify_utf8_checked: options.decode.utf8().verify_checked(),
        }
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

    /// The options the engine was made with.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The engine that runs (see [`EngineStats::kind`]).
    pub fn kind(&self) -> EngineKind {
        match self.code {
            Code::Eager(_) => EngineKind::Jit,
            Code::Tiered(_) => EngineKind::Auto,
            Code::Interpreted(_) => EngineKind::Interpreter,
        }
    }

    /// Whether the engine's code is final: eager or interpreted, or tiered with every type
    /// the root reaches compiled (or interpreted for good), or with thresholds no type
    /// reaches. A caller that compares its speed against something else waits for this.
    pub fn settled(&self) -> bool {
        match &self.code {
            Code::Tiered(tiers) => self.options.tiering == Tiering::NEVER || tiers.settled(self.root),
            Code::Eager(_) | Code::Interpreted(_) => true,
        }
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
                    phases: Default::default(),
                    inlined_calls: 0,
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
        EngineStats { kind: self.kind(), types, direct_calls }
    }

    /// Decodes `input` into a fresh root block in `arena` and returns its reader, which
    /// borrows the engine, the input and the arena: none can go while the tree lives.
    ///
    /// ```compile_fail,E0505
    /// # fn f(engine: &protojit_jit::Engine) {
    /// let arena = protojit_arena::Arena::new();
    /// let root = engine.decode(&[], &arena).unwrap();
    /// drop(arena); // error[E0505]: the tree borrows the arena
    /// let _ = root.layout();
    /// # }
    /// ```
    ///
    /// ```compile_fail,E0505
    /// # fn f(engine: &protojit_jit::Engine, arena: &protojit_arena::Arena) {
    /// let input = vec![0u8; 0];
    /// let root = engine.decode(&input, arena).unwrap();
    /// drop(input); // error[E0505]: the tree borrows the input
    /// let _ = root.layout();
    /// # }
    /// ```
    ///
    /// Read first, then let them go:
    ///
    /// ```
    /// # fn f(engine: &protojit_jit::Engine) {
    /// let (input, arena) = (vec![0u8; 0], protojit_arena::Arena::new());
    /// let root = engine.decode(&input, &arena).unwrap();
    /// let _ = root.layout();
    /// drop((input, arena));
    /// # }
    /// ```
    #[inline]
    pub fn decode<'a>(&'a self, input: &'a [u8], arena: &'a Arena) -> Result<BlockRef<'a>, DecodeError> {
        let root = self.decode_root(input, arena)?;
        // SAFETY: `decode_root` returned the finished root block of `self.root`, allocated
        // in `arena` over `self.layouts`, pointing into `input` and `arena` only, all
        // borrowed for 'a; it checked the VERIFY strings iff `verify_utf8_checked` says so.
        Ok(unsafe { BlockRef::from_decoded(root, &self.layouts, self.root, self.verify_utf8_checked) })
    }

    /// Decodes `input` into `arena` and bundles the tree with both (and the layouts) into
    /// an [`OwnedTree`], which has no lifetime; its reader borrows the owner.
    ///
    /// ```compile_fail,E0505
    /// # fn f(engine: &protojit_jit::Engine) {
    /// let owned = engine.decode_owned(vec![], protojit_arena::Arena::new()).unwrap();
    /// let root = owned.tree();
    /// drop(owned); // error[E0505]: the tree borrows its owner
    /// let _ = root.layout();
    /// # }
    /// ```
    ///
    /// ```
    /// # fn f(engine: &protojit_jit::Engine) {
    /// let owned = engine.decode_owned(vec![], protojit_arena::Arena::new()).unwrap();
    /// let _ = owned.tree().layout();
    /// let arena = owned.into_arena(); // the tree is gone; its arena, reset, stays
    /// # }
    /// ```
    pub fn decode_owned<I: AsRef<[u8]>>(&self, input: I, arena: Arena) -> Result<OwnedTree<I>, DecodeError> {
        OwnedTree::decode(input, arena, self.layouts.clone(), |input, arena, layouts| {
            // `OwnedTree::decode` passes the layouts it was given, the engine's own.
            if !std::ptr::eq(layouts, &*self.layouts) {
                return Err(DecodeError::new(DecodeErrorKind::Internal, 0));
            }
            let root = self.decode_root(input, arena)?;
            // SAFETY: as in `decode`, with `layouts` the engine's (checked above).
            Ok(unsafe { BlockRef::from_decoded(root, layouts, self.root, self.verify_utf8_checked) })
        })
    }

    /// [`Engine::decode`]'s work: the root block of the finished tree.
    ///
    /// Eagerly compiled code, the common case, is called from here, inlined into the
    /// caller; a small input skips the size learning too (see
    /// [`Engine::first_chunk_min`]): at 10 bytes a decode costs about as much as the work
    /// around it. Tiers and the interpreter go through [`Engine::decode_other`].
    #[inline]
    fn decode_root(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        let Some(f) = self.eager_root else {
            return self.decode_other(input, arena);
        };
        if input.len() <= FIRST_CHUNK_SMALL {
            let mut ctx = JitCtx::new(input, arena, &self.layouts, &self.options.decode);
            // A small input asks for no minimum (see `first_chunk_min`).
            let root = self.compiled_root(arena, &mut ctx, 0);
            // SAFETY: `f` is the root function of the eagerly compiled code, made for
            // `self.root` over `self.layouts` (checked by `Engines::engine`) and kept alive by
            // `self.code`; `root` is a zeroed block of the root's size in `arena`.
            unsafe { run(f, &mut ctx, root, arena, input)? };
            return Ok(root);
        }
        if input.len() > u32::MAX as usize {
            return Err(DecodeError::new(DecodeErrorKind::InputTooLarge, 0));
        }
        let mut ctx = JitCtx::new(input, arena, &self.layouts, &self.options.decode);
        let before = self.before(arena, input);
        let root = self.compiled_root(arena, &mut ctx, self.first_chunk_min(arena, input.len()));
        // SAFETY: as above.
        unsafe { run(f, &mut ctx, root, arena, input)? };
        self.learn(arena, before, input);
        Ok(root)
    }

    /// [`Engine::decode`] by tiers or the interpreter.
    #[inline(never)]
    fn decode_other(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        if input.len() > u32::MAX as usize {
            return Err(DecodeError::new(DecodeErrorKind::InputTooLarge, 0));
        }
        match &self.code {
            Code::Tiered(tiers) => self.decode_tiered(tiers, input, arena),
            Code::Interpreted(_) => self.decode_interpreted(input, arena),
            // `eager_root` is set exactly for eager code, which `decode` runs itself.
            Code::Eager(_) => unreachable!("eager code is run by Engine::decode"),
        }
    }

    /// [`Engine::decode`] by the interpreter alone.
    #[inline(never)]
    fn decode_interpreted(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        let mut root = BlockMut::alloc(arena, &self.layouts, self.root);
        let interp = Interp::new(input, &self.options.decode);
        interp.message(&mut root, 0, input.len(), 0, None)?;
        Ok(root.as_ptr())
    }

    /// [`Engine::decode`] with tiers: the direct module, else the root's entry, else the
    /// interpreter, which offers child messages to their compiled code. Each arm allocates
    /// the root itself: the interpreter's blocks must not outlive the tier hook it is
    /// given, so there the root comes after the hook.
    #[inline(never)]
    fn decode_tiered(&self, tiers: &Tiers, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        let mut ctx = JitCtx::new(input, arena, &self.layouts, &self.options.decode).tiered(
            tiers,
            self.options.tiering.after_decodes,
            self.options.tiering.after_bytes,
        );
        let before = self.before(arena, input);
        if let Some(code) = tiers.direct(self.root) {
            let root = self.compiled_root(arena, &mut ctx, self.first_chunk_min(arena, input.len()));
            // SAFETY: the direct module was compiled by the tiers for `self.root` over their
            // layouts, which are the engine's; `tiers` keeps it alive.
            unsafe { run(code.root_fn(), &mut ctx, root, arena, input)? };
            self.learn(arena, before, input);
            return Ok(root);
        }
        match tiers.entry(self.root) {
            Some(f) => {
                let root = self.compiled_root(arena, &mut ctx, self.first_chunk_min(arena, input.len()));
                // SAFETY: a tiers' entry is the function of that type over its layouts,
                // which are the engine's (`Engines::engine`), alive while `tiers` is.
                unsafe { run(f, &mut ctx, root, arena, input)? };
                self.learn(arena, before, input);
                tiers.consider_direct(self.root);
                Ok(root)
            }
            None => {
                let hook = TierHook { ctx: &mut ctx, tiers };
                hook.note(self.root, input.len());
                let mut root = BlockMut::alloc(arena, &self.layouts, self.root);
                let interp = Interp::new(input, &self.options.decode).with_children(&hook);
                interp.message(&mut root, 0, input.len(), 0, None)?;
                Ok(root.as_ptr())
            }
        }
    }

    /// The zeroed root block of a decode by compiled code and, when the root type has
    /// child messages, the arena's free space (at least `min` bytes) lent to `ctx` for them.
    #[inline]
    fn compiled_root(&self, arena: &Arena, ctx: &mut JitCtx, min: usize) -> NonNull<u8> {
        if self.root_has_children {
            // One step: the root at the front of the lent region.
            return ctx.borrow_chunk_with_block(arena, self.root_size, min);
        }
        arena.alloc_zeroed(self.root_size)
    }

    /// The least free space a decode of `input_len` bytes asks of the arena at its start:
    /// nothing for a small input; else about the input's own size (at most 64 KiB), and,
    /// in an arena that holds no chunk yet, what this type's trees took per input byte
    /// last time. A fresh arena thus takes one chunk of about the tree's size instead of
    /// a growing series: freeing such a series after every decode made glibc return the
    /// memory to the system and fault it in again each time (a 1 MB vector tile into a
    /// new arena per decode: 1.7× slower). A reused arena has its own chunks, sized by
    /// what it held before its last reset.
    #[inline]
    fn first_chunk_min(&self, arena: &Arena, input_len: usize) -> usize {
        if input_len <= FIRST_CHUNK_SMALL {
            return 0;
        }
        let min = input_len.min(FIRST_CHUNK_MAX);
        if arena.has_chunks() {
            return min;
        }
        min.max(input_len.saturating_mul(self.tree_per_kib.load(Relaxed) as usize) / 1024)
    }

    /// What [`Engine::learn`] compares with: the arena's bytes held and in use before a
    /// decode of a large input (nothing is recorded for small ones).
    #[inline]
    fn before(&self, arena: &Arena, input: &[u8]) -> (usize, usize) {
        if input.len() <= FIRST_CHUNK_SMALL {
            return (0, 0);
        }
        (arena.allocated_bytes(), arena.used_bytes())
    }

    /// After a successful decode of a large input that took new memory from the system,
    /// records the tree's bytes per KiB of input (see [`Engine::first_chunk_min`]).
    #[inline]
    fn learn(&self, arena: &Arena, (held, used): (usize, usize), input: &[u8]) {
        if input.len() <= FIRST_CHUNK_SMALL || arena.allocated_bytes() == held {
            return;
        }
        let tree = arena.used_bytes().saturating_sub(used);
        let per_kib = (tree.saturating_mul(1024) / input.len()).min(self.max_per_kib as usize) as u32;
        self.tree_per_kib.store(per_kib.saturating_add(per_kib / 8).min(self.max_per_kib), Relaxed);
    }
}

/// Runs compiled message function `f` over the whole input into the root block `root`.
///
/// # Safety
/// `f` is the compiled function of the root's layout over the layouts `ctx` was made
/// with, alive for the call; `ctx` was made for `input` and `arena`; `root` is a zeroed
/// block of that layout allocated in `arena`.
#[inline]
unsafe fn run(
    f: MessageFn,
    ctx: &mut JitCtx,
    root: NonNull<u8>,
    arena: &Arena,
    input: &[u8],
) -> Result<(), DecodeError> {
    let start = input.as_ptr();
    let end = start.wrapping_add(input.len());
    // SAFETY: the caller's contract; compiled code reads only `start..end` (the input)
    // and writes only into blocks of the arena, all of which outlive the call.
    let r = unsafe { f(ctx, root.as_ptr(), start, end, 0, std::ptr::null()) };
    ctx.return_chunk(arena);
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
