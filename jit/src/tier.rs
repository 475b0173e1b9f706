//! Tiering: every message type starts on the interpreter and is compiled, on one
//! background thread, once its decodes pass a threshold; its entry is then swapped in.
//!
//! # Invariants
//! 1. `entries[t]` is null or the finalized function of type `t`, compiled over
//!    `layouts`, living in `compiler`'s module. It only ever goes from null to a function
//!    (release store; readers load with acquire), and module memory is freed only when
//!    the `Tiers` is dropped, when no decode can be running (each holds the `Tiers`).
//! 2. Compiled functions call their child types through `entries` (see
//!    `ChildCalls::Table`), so a type's code runs whatever tier its children are in, and
//!    the interpreter offers child messages to compiled code through `TierGate`: any mix
//!    of tiers decodes the same tree.
//! 3. A type's state goes cold → queued → compiled, or to failed (interpreted for good,
//!    with the reason); nothing goes back.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::JITModule;
use cranelift_module::Module;
use protojit_arena::{BlockMut, DecodeError, DecodeErrorKind, LayoutIndex, Layouts};

use crate::abi::{JitCtx, MessageFn, TierGate};
use crate::columns::{Appender, ColumnPlan};
use crate::compile::{
    declare, define, new_module, Bodies, CompilePhases, Compiled, JitError, TypeEngine, TypeFn, TypeStats,
};
use crate::compiling::Compiling;
use crate::options::CompileOptions;

const COLD: u8 = 0;
const QUEUED: u8 = 1;
const COMPILED: u8 = 2;
const FAILED: u8 = 3;

/// Per message type: tier state and counters.
#[derive(Default)]
struct TypeTier {
    state: AtomicU8,
    /// Interpreted decodes counted toward the thresholds (counting stops when queued).
    decodes: AtomicU64,
    /// Their bytes.
    bytes: AtomicU64,
    code_bytes: AtomicU32,
    /// Where its compile's time went (`compile_time` is their sum).
    phases: OnceLock<CompilePhases>,
    failure: OnceLock<String>,
}

/// The compiler's reusable state: one module for every type of the schema, and the
/// Cranelift context and function builder reused between types.
struct Compiler {
    module: JITModule,
    ctx: Context,
    fctx: FunctionBuilderContext,
}

/// Per-type tiers for every message type of one set of layouts, shared by all tiered
/// engines over them (made by [`Engines::tiers`](crate::Engines::tiers)). `Send + Sync`.
pub struct Tiers {
    layouts: Arc<Layouts>,
    /// Per layout: its compiled [`MessageFn`], or null while it is interpreted.
    entries: Box<[AtomicPtr<u8>]>,
    types: Box<[TypeTier]>,
    /// Made by the first compile (a tiered decoder that never meets a hot type never pays
    /// for a Cranelift ISA and module); `Err` when the host has no backend (every type
    /// stays interpreted).
    compiler: Mutex<Option<Result<Compiler, String>>>,
    options: CompileOptions,
    this: Weak<Tiers>,
    /// Per root type: the types it reaches (made on first use).
    reach: Box<[OnceLock<Box<[LayoutIndex]>>]>,
    /// Per root type: whether its direct-call recompilation was asked for.
    direct_asked: Box<[AtomicBool]>,
    /// Per root type: the root and everything it reaches recompiled as one module with
    /// direct calls, once all the types its decodes met were compiled. The entry table
    /// costs 2-4% on payloads with many child messages (callgrind); this wins it back.
    direct: Box<[OnceLock<Arc<Compiled>>]>,
}

impl std::fmt::Debug for Tiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tiers").field("layouts", &self.layouts.id()).finish_non_exhaustive()
    }
}

impl Drop for Tiers {
    fn drop(&mut self) {
        let compiler = self.compiler.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(Ok(c)) = compiler {
            // SAFETY: `&mut self` proves no decode runs and no compile is in progress
            // (both hold the `Tiers`); the entries die with `self` (invariant 1).
            unsafe { c.module.free_memory() };
        }
    }
}

impl Tiers {
    /// Tiers for every type of `layouts`, all cold, compiling with `options` when hot.
    pub(crate) fn new(layouts: Arc<Layouts>, options: CompileOptions) -> Arc<Tiers> {
        let n = layouts.len();
        Arc::new_cyclic(|this| Tiers {
            layouts,
            entries: (0..n).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect(),
            types: (0..n).map(|_| TypeTier::default()).collect(),
            compiler: Mutex::new(None),
            options,
            this: this.clone(),
            reach: (0..n).map(|_| OnceLock::new()).collect(),
            direct_asked: (0..n).map(|_| AtomicBool::new(false)).collect(),
            direct: (0..n).map(|_| OnceLock::new()).collect(),
        })
    }

    /// The layouts the tiers compile over.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// The compiled function of `layout`, once it has one.
    #[inline]
    pub(crate) fn entry(&self, layout: LayoutIndex) -> Option<MessageFn> {
        let f = self.entries[layout.index()].load(Ordering::Acquire);
        // SAFETY: non-null entries are finalized functions with `MessageFn`'s ABI
        // (invariant 1).
        (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut u8, MessageFn>(f) })
    }

    /// Base of the entry table compiled code loads from.
    fn table(&self) -> *const AtomicPtr<u8> {
        self.entries.as_ptr()
    }

    /// Whether `layout` is interpreted and still counting toward its thresholds.
    #[inline]
    pub(crate) fn is_cold(&self, layout: LayoutIndex) -> bool {
        self.types[layout.index()].state.load(Ordering::Relaxed) == COLD
    }

    /// Counts one interpreted decode of `layout` over `bytes` bytes; queues the type for
    /// compilation once its decodes reach `after_decodes` or its bytes `after_bytes`.
    pub(crate) fn note(&self, layout: LayoutIndex, bytes: u64, after_decodes: u64, after_bytes: u64) {
        let t = &self.types[layout.index()];
        let decodes = t.decodes.fetch_add(1, Ordering::Relaxed) + 1;
        let total = t.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if decodes >= after_decodes || total >= after_bytes {
            self.request(layout);
        }
    }

    /// Queues `layout` for the background compiler, if it is cold and the queue has room
    /// (else it stays cold and is asked for again by a later decode).
    pub fn request(&self, layout: LayoutIndex) {
        let t = &self.types[layout.index()];
        if t.state.compare_exchange(COLD, QUEUED, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        let Some(this) = self.this.upgrade() else { return };
        match background().try_send(Job::Type(this, layout)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                t.state.store(COLD, Ordering::Relaxed);
            }
        }
    }

    /// Compiles `layout` now, on this thread, unless it is compiled or failed already.
    /// Returns whether it has compiled code afterwards.
    pub fn compile_now(&self, layout: LayoutIndex) -> bool {
        let t = &self.types[layout.index()];
        let mut compiler = self.compiler.lock().unwrap_or_else(|e| e.into_inner());
        match t.state.load(Ordering::Acquire) {
            COMPILED => return true,
            FAILED => return false,
            _ => {}
        }
        let n = self.layouts.len();
        let compiler = compiler.get_or_insert_with(|| {
            new_module(&self.options, n)
                .map(|module| Compiler { ctx: module.make_context(), module, fctx: FunctionBuilderContext::new() })
                .map_err(|e| e.to_string())
        });
        let c = match compiler.as_mut() {
            Ok(c) => c,
            Err(why) => {
                let _ = t.failure.set(why.clone());
                t.state.store(FAILED, Ordering::Release);
                return false;
            }
        };
        match self.compile_type(c, layout) {
            Ok((f, stats)) => {
                t.code_bytes.store(stats.code_bytes, Ordering::Relaxed);
                let _ = t.phases.set(stats.phases);
                match stats.engine {
                    TypeEngine::Jit => {
                        // Invariant 1: published once, after finalization.
                        self.entries[layout.index()].store(f, Ordering::Release);
                        t.state.store(COMPILED, Ordering::Release);
                        true
                    }
                    TypeEngine::Interpreter(why) => {
                        // Too many fields: the function would only call the interpreter.
                        let _ = t.failure.set(why);
                        t.state.store(FAILED, Ordering::Release);
                        false
                    }
                    TypeEngine::Cold | TypeEngine::Queued => unreachable!("define reports Jit or Interpreter"),
                }
            }
            Err(e) => {
                let _ = t.failure.set(e.to_string());
                t.state.store(FAILED, Ordering::Release);
                false
            }
        }
    }

    /// Lowers, defines and finalizes one type's function in the shared module.
    fn compile_type(&self, c: &mut Compiler, layout: LayoutIndex) -> Result<(*mut u8, TypeStats), JitError> {
        let id = declare(&mut c.module, &self.layouts, layout)?;
        let f = TypeFn {
            layouts: &self.layouts,
            li: layout,
            id,
            children: None,
            table: self.table(),
            options: &self.options,
        };
        let mut stats = define(&mut c.module, &mut c.ctx, &mut c.fctx, &f, &mut Bodies::default())?;
        let linking = std::time::Instant::now();
        c.module
            .finalize_definitions()
            .map_err(|e| JitError::Codegen { message_type: stats.message_type.clone(), reason: e.to_string() })?;
        stats.phases.link = linking.elapsed();
        stats.compile_time = stats.phases.lower + stats.phases.codegen + stats.phases.link;
        Ok((c.module.get_finalized_function(id) as *mut u8, stats))
    }

    /// The direct-call module of hot root `root`, once it exists.
    #[inline]
    pub(crate) fn direct(&self, root: LayoutIndex) -> Option<&Arc<Compiled>> {
        self.direct[root.index()].get()
    }

    /// Called by decodes that ran `root`'s compiled code: once every type reachable from
    /// it that decodes have met is compiled (or refused) and none is waiting, queues the
    /// root's direct-call recompilation, once.
    pub(crate) fn consider_direct(&self, root: LayoutIndex) {
        if self.direct_asked[root.index()].load(Ordering::Relaxed) {
            return;
        }
        // The check reads every reachable type's state: a thread makes it on one decode in
        // 64 (a type met too rarely to get hot can hold the root back for good).
        thread_local! {
            static TICK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
        }
        if TICK.with(|t| {
            let v = t.get().wrapping_add(1);
            t.set(v);
            v % 64 != 1
        }) {
            return;
        }
        let reach = self.reach[root.index()].get_or_init(|| self.layouts.reachable(root).into_boxed_slice());
        let ready = reach.iter().all(|li| {
            let t = &self.types[li.index()];
            match t.state.load(Ordering::Acquire) {
                COMPILED | FAILED => true,
                COLD => t.decodes.load(Ordering::Relaxed) == 0,
                _ => false,
            }
        });
        if !ready || self.direct_asked[root.index()].swap(true, Ordering::Relaxed) {
            return;
        }
        let Some(this) = self.this.upgrade() else { return };
        if background().try_send(Job::Direct(this, root)).is_err() {
            self.direct_asked[root.index()].store(false, Ordering::Relaxed);
        }
    }

    /// Recompiles `root` and everything it reaches as one module with direct calls, and
    /// publishes it for `root`'s tiered engines (failures leave them on the entry table).
    fn compile_direct(&self, root: LayoutIndex) {
        if let Ok(code) = Compiled::compile(&self.layouts, root, &self.options) {
            let _ = self.direct[root.index()].set(Arc::new(code));
        }
    }

    /// Compiles every type reachable from `root` now (the eager `Jit` engine over tiers).
    pub fn compile_reachable(&self, root: LayoutIndex) {
        for li in self.layouts.reachable(root) {
            self.compile_now(li);
        }
    }

    /// Whether every type reachable from `root` is compiled or interpreted for good.
    pub fn settled(&self, root: LayoutIndex) -> bool {
        self.layouts.reachable(root).into_iter().all(|li| {
            let s = self.types[li.index()].state.load(Ordering::Acquire);
            s == COMPILED || s == FAILED
        })
    }

    /// Per type reachable from `root` (root first): tier, interpreted decodes counted,
    /// compile time and code size.
    pub fn stats(&self, root: LayoutIndex) -> Vec<TypeStats> {
        self.layouts.reachable(root).into_iter().map(|li| self.type_stats(li)).collect()
    }

    /// Tier, interpreted decodes counted, compile time and code size of one type.
    pub fn type_stats(&self, layout: LayoutIndex) -> TypeStats {
        let t = &self.types[layout.index()];
        let engine = match t.state.load(Ordering::Acquire) {
            COLD => TypeEngine::Cold,
            QUEUED => TypeEngine::Queued,
            COMPILED => TypeEngine::Jit,
            _ => TypeEngine::Interpreter(t.failure.get().cloned().unwrap_or_default()),
        };
        let phases = t.phases.get().copied().unwrap_or_default();
        TypeStats {
            message_type: self.layouts.get(layout).descriptor().full_name().to_owned(),
            engine,
            code_bytes: t.code_bytes.load(Ordering::Relaxed),
            compile_time: phases.lower + phases.codegen + phases.link,
            phases,
            inlined_calls: 0,
            clif: None,
            interpreted_decodes: t.decodes.load(Ordering::Relaxed),
            interpreted_bytes: t.bytes.load(Ordering::Relaxed),
        }
    }
}

impl TierGate for Tiers {
    fn note(&self, ctx: *const JitCtx, layout: LayoutIndex, bytes: usize) {
        // SAFETY: the context of a running decode is live for the whole decode; plain
        // reads of two fields nothing writes during a decode.
        let (decodes, limit) = unsafe { ((*ctx).tier_decodes, (*ctx).tier_bytes) };
        // Thresholds no count reaches: nothing to count. (Counting writes counters every
        // thread decoding the type shares: with `--jobs 2` on a stream too short to repay
        // a compile, 6% of the CPU time went to those cache lines.)
        if (decodes, limit) == (u64::MAX, u64::MAX) || !self.is_cold(layout) {
            return;
        }
        Tiers::note(self, layout, bytes as u64, decodes, limit);
    }

    fn decode_child(
        &self,
        ctx: *mut JitCtx,
        child: &mut BlockMut<'_>,
        layout: LayoutIndex,
        pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Option<Result<usize, DecodeError>> {
        let Some(f) = self.entry(layout) else {
            TierGate::note(self, ctx, layout, if group.is_some() { 0 } else { end - pos });
            return None;
        };
        // SAFETY: a plain read of the live context (see `note`).
        let (start, input_len, arena) = unsafe { ((*ctx).input_start, (*ctx).input_len, (*ctx).arena) };
        // The interpreter hands over its own child blocks, which are in this decode's arena
        // and of `layout`; checked anyway, since compiled code trusts both.
        if !std::ptr::eq(child.layout(), self.layouts.get(layout))
            || !std::ptr::eq(child.arena(), arena)
            || pos > end
            || end > input_len
        {
            return Some(Err(DecodeError::new(DecodeErrorKind::Internal, pos)));
        }
        let meta = depth as u64 | group.map_or(0, |g| (g.0 as u64) << 32);
        let gtag = group.map_or(std::ptr::null(), |g| start.wrapping_add(g.1));
        // SAFETY: `f` is the compiled function of `layout` over these tiers' layouts, which
        // are this decode's; `child` is a block of that layout in this decode's arena
        // (checked above); `pos..end` lies inside the input; `ctx` is this decode's live
        // context, and no reference to it is held across the call.
        let r = unsafe {
            // Compiled code gets the arena's free space for the call, and the interpreter
            // the unused rest after it (see `JitCtx::borrow_chunk`).
            (*ctx).borrow_chunk(&*arena, 0);
            let r = f(ctx, child.as_ptr().as_ptr(), start.wrapping_add(pos), start.wrapping_add(end), meta, gtag);
            (*ctx).return_chunk(&*arena);
            r
        };
        if r.is_null() {
            // SAFETY: as in `note`; compiled code has returned.
            let e = unsafe { (*ctx).error() };
            return Some(Err(e.unwrap_or(DecodeError::new(DecodeErrorKind::Internal, pos))));
        }
        Some(Ok(r as usize - start as usize))
    }
}

/// Room in the background compiler's queue; a type that finds it full stays cold and is
/// queued by a later decode.
const QUEUE: usize = 256;

/// Work for the background compiler.
enum Job {
    /// Compile one type into the tiers' module.
    Type(Arc<Tiers>, LayoutIndex),
    /// Recompile a hot root and everything it reaches as one module with direct calls.
    Direct(Arc<Tiers>, LayoutIndex),
    /// Compile column appenders for a plan (see [`Engines::appender`](crate::Engines::appender)).
    Appender(Arc<Compiling<Appender>>, Arc<Layouts>, Box<ColumnPlan>, CompileOptions),
}

/// Queues the compile of `plan`'s appenders into `cell` on the background compiler;
/// gives the job back when the queue is full or there is no compiler thread.
pub(crate) fn queue_appender(
    cell: Arc<Compiling<Appender>>,
    layouts: Arc<Layouts>,
    plan: ColumnPlan,
    options: CompileOptions,
) -> Result<(), (Arc<Compiling<Appender>>, ColumnPlan)> {
    match background().try_send(Job::Appender(cell, layouts, Box::new(plan), options)) {
        Ok(()) => Ok(()),
        Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => match job {
            Job::Appender(cell, _, plan, _) => Err((cell, *plan)),
            _ => unreachable!("the job sent is an appender's"),
        },
    }
}

/// The process's one background compiler: a thread that compiles queued types one at a
/// time, so that it takes at most one core from decoding threads.
fn background() -> &'static SyncSender<Job> {
    static QUEUE_TX: OnceLock<SyncSender<Job>> = OnceLock::new();
    QUEUE_TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let spawned = std::thread::Builder::new().name("protojit-compiler".into()).spawn(move || {
            while let Ok(job) = rx.recv() {
                let job = match job {
                    Job::Appender(cell, layouts, plan, options) => {
                        // Nobody holds the cell any more: the work would be wasted.
                        if Arc::strong_count(&cell) > 1 {
                            cell.compile_appender(&layouts, &plan, &options);
                        }
                        continue;
                    }
                    job => job,
                };
                let (Job::Type(tiers, layout) | Job::Direct(tiers, layout)) = &job else { continue };
                if Arc::strong_count(tiers) == 1 {
                    // Nobody decodes with these tiers any more: the work would be wasted.
                    continue;
                }
                // A panic in Cranelift would be a bug there or in the lowering: the type
                // stays interpreted (or its root on the entry table), with the reason,
                // and the thread lives on.
                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job {
                    Job::Type(tiers, layout) => {
                        tiers.compile_now(*layout);
                    }
                    Job::Direct(tiers, root) => tiers.compile_direct(*root),
                    Job::Appender(..) => {}
                }));
                if done.is_err() {
                    if let Job::Type(..) = job {
                        let t = &tiers.types[layout.index()];
                        let _ = t.failure.set("the compiler panicked".to_owned());
                        t.state.store(FAILED, Ordering::Release);
                    }
                }
            }
        });
        if spawned.is_err() {
            // No thread: sends fail (the receiver is gone) and types stay cold.
        }
        tx
    })
}
