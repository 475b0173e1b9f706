//! Compiling: every message type reachable from a root becomes a function in one
//! `JITModule`, so message functions call each other directly.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cranelift_codegen::ir::{FuncRef, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use protojit_arena::{LayoutIndex, Layouts};

use crate::abi::MessageFn;
use crate::lower::{message_signature, ChildCalls, ChildFns, Translator};
use crate::options::CompileOptions;

/// Why compiled code is not available.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JitError {
    /// Cranelift has no backend for this host (or it failed to configure).
    #[error("no compiled decoder for this host: {0}")]
    UnsupportedHost(String),
    /// Compiled code was offered for other layouts or another root type than the engine
    /// decodes: its functions would read and write blocks of another shape.
    #[error("compiled code for `{compiled_for}` (layouts #{compiled_layouts}) cannot decode `{wanted}` (layouts #{wanted_layouts})")]
    WrongLayouts {
        /// The root type the code was compiled for.
        compiled_for: String,
        /// [`Layouts::id`] of the layouts it was compiled over.
        compiled_layouts: u64,
        /// The root type the engine decodes.
        wanted: String,
        /// [`Layouts::id`] of the engine's layouts.
        wanted_layouts: u64,
    },
    /// Code generation failed (a lowering bug; the decoder uses the interpreter instead).
    #[error("compiling `{message_type}` failed: {reason}")]
    Codegen {
        /// The message type being compiled.
        message_type: String,
        /// What Cranelift reported.
        reason: String,
    },
}

/// Which engine decodes one message type, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeEngine {
    /// Compiled machine code.
    Jit,
    /// The interpreter, for good, with the reason.
    Interpreter(String),
    /// Tiered: interpreted until its decodes pass the compile thresholds.
    Cold,
    /// Tiered: hot, waiting for (or in) compilation on the background compiler.
    Queued,
}

/// What compiling one message type produced.
#[derive(Clone, Debug)]
pub struct TypeStats {
    /// Full name of the message type.
    pub message_type: String,
    /// Engine that decodes it.
    pub engine: TypeEngine,
    /// Machine-code bytes of its function (0 for the interpreter).
    pub code_bytes: u32,
    /// Time spent lowering and compiling it: [`phases`](Self::phases) in all.
    pub compile_time: Duration,
    /// Where that time went.
    pub phases: CompilePhases,
    /// Calls of small leaf message types inlined into this type's function (see
    /// `Bodies`). Eager code inlines; a tiered engine's per-type functions call through
    /// the entry table and inline nothing, so its stats say 0 (the direct-call module a
    /// hot root gets does inline, but its stats are not what `Tiers::stats` reports).
    pub inlined_calls: u32,
    /// The Cranelift IR, when requested (`CompileOptions::keep_clif` or `PROTOJIT_DUMP_CLIF`).
    pub clif: Option<String>,
    /// Tiered engines: decodes of this type the interpreter did while counting toward the
    /// compile thresholds (counting stops once compilation is requested; engines whose
    /// thresholds are [`Tiering::NEVER`](crate::Tiering::NEVER) do not count). 0 otherwise.
    pub interpreted_decodes: u64,
    /// Tiered engines: bytes of those decodes.
    pub interpreted_bytes: u64,
}

/// Where one message type's compile time went ([`TypeStats::phases`]): what a compile
/// costs, phase by phase (BENCHMARKS.md, "Compile cost"; the `compile_cost` example
/// prints the medians and Cranelift's own pass table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompilePhases {
    /// Lowering the type into Cranelift IR (the translator), inlining included.
    pub lower: Duration,
    /// Cranelift: instruction selection, register allocation, emission.
    pub codegen: Duration,
    /// Finalizing the module: relocations, making the code executable. Tiering finalizes
    /// each type; eager code once per module, counted on its root type.
    pub link: Duration,
}

/// Machine code for every message type reachable from one root.
///
/// The code is tied to the layouts it was compiled over (their [`Layouts::id`]) and to its
/// root type: it writes at those layouts' offsets and sizes.
/// An engine checks both before it runs the code ([`Compiled::check`]).
pub struct Compiled {
    /// Owns the code.
    _code: Code,
    root_fn: MessageFn,
    root: LayoutIndex,
    root_name: String,
    layouts_id: u64,
    stats: Vec<TypeStats>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled").field("stats", &self.stats).finish()
    }
}

/// The memory of finalized code, its `JITModule`, freed on drop (behind a mutex only so
/// that its owner, [`Compiled`] or an `Appender`, is `Sync`: the module is never used
/// after finalization). The owner keeps the function pointers, which die with it.
pub(crate) struct Code(Mutex<Option<JITModule>>);

impl Code {
    /// Finalizes `module` (named `name` in errors): its code and function `root`'s address.
    pub(crate) fn finalize(mut module: JITModule, root: FuncId, name: &str) -> Result<(Code, *const u8), JitError> {
        (module.finalize_definitions())
            .map_err(|e| JitError::Codegen { message_type: name.to_owned(), reason: e.to_string() })?;
        let root = module.get_finalized_function(root);
        Ok((Code(Mutex::new(Some(module))), root))
    }
}

impl Drop for Code {
    fn drop(&mut self) {
        let module = self.0.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(module) = module {
            // SAFETY: `&mut self` proves its owner is being dropped, so no call into the
            // code is running, and the function pointers die with the owner.
            unsafe { module.free_memory() };
        }
    }
}

struct Children<'m> {
    module: &'m mut JITModule,
    ids: &'m [Option<FuncId>],
    refs: HashMap<LayoutIndex, FuncRef>,
}

impl ChildFns for Children<'_> {
    fn child_fn(&mut self, b: &mut FunctionBuilder<'_>, layout: LayoutIndex) -> FuncRef {
        if let Some(&f) = self.refs.get(&layout) {
            return f;
        }
        let id = self.ids[layout.index()].expect("reachable layouts have functions");
        let f = self.module.declare_func_in_func(id, b.func);
        self.refs.insert(layout, f);
        f
    }
}

/// Keeps an error report readable: verifier dumps can run to megabytes.
fn clip(mut s: String) -> String {
    const MAX: usize = 4000;
    if s.len() > MAX {
        let mut cut = MAX;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(" [...]");
    }
    s
}

/// A fresh `JITModule` for the host, with room reserved for `functions` functions.
pub(crate) fn new_module(options: &CompileOptions, functions: usize) -> Result<JITModule, JitError> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) || !cfg!(target_endian = "little") {
        return Err(JitError::UnsupportedHost(format!("{} is not x86_64 or aarch64", std::env::consts::ARCH)));
    }
    let mut flags = settings::builder();
    let host = |e: &dyn std::fmt::Display| JitError::UnsupportedHost(e.to_string());
    flags.set("opt_level", options.opt_level.as_str()).map_err(|e| host(&e))?;
    flags.set("is_pic", "false").map_err(|e| host(&e))?;
    flags.set("regalloc_algorithm", options.regalloc.as_str()).map_err(|e| host(&e))?;
    flags.set("enable_verifier", if options.verify { "true" } else { "false" }).map_err(|e| host(&e))?;
    let isa =
        cranelift_native::builder().map_err(|e| host(&e))?.finish(settings::Flags::new(flags)).map_err(|e| host(&e))?;
    // One reservation for all functions, so direct calls (32-bit displacements on
    // x86_64) always reach. Reserved address space only; pages are committed on use.
    let reserve = (1 << 20) + functions * (256 << 10);
    let provider = ArenaMemoryProvider::new_with_size(reserve).map_err(|e| host(&e))?;
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    builder.memory_provider(Box::new(provider));
    Ok(JITModule::new(builder))
}

/// Declares the function of message type `li` in `module`.
pub(crate) fn declare(module: &mut JITModule, layouts: &Layouts, li: LayoutIndex) -> Result<FuncId, JitError> {
    let frontend = module.isa().frontend_config();
    let sig = message_signature(frontend.pointer_type(), frontend.default_call_conv);
    let name = format!("protojit:{}", layouts.get(li).descriptor().full_name());
    module
        .declare_function(&name, Linkage::Local, &sig)
        .map_err(|e| JitError::Codegen { message_type: name.clone(), reason: e.to_string() })
}

/// One message type's function in a module: what [`lower`] and [`define`] build.
#[derive(Clone, Copy)]
pub(crate) struct TypeFn<'a> {
    pub layouts: &'a Layouts,
    /// The message type.
    pub li: LayoutIndex,
    /// Its function in the module.
    pub id: FuncId,
    /// The functions of child types, called directly (a whole module compiled at once);
    /// `None`: called through `table`, the tiers' table of entries by layout.
    pub children: Option<&'a [Option<FuncId>]>,
    pub table: *const std::sync::atomic::AtomicPtr<u8>,
    pub options: &'a CompileOptions,
}

/// Lowers message type `f.li` into `ctx.func` as function `f.id`; returns why the function
/// only calls the interpreter, if it does.
fn lower(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    f: &TypeFn<'_>,
) -> Option<String> {
    let TypeFn { layouts, li, id, children, table, options } = *f;
    let frontend = module.isa().frontend_config();
    let layout = layouts.get(li);
    ctx.func.signature = message_signature(frontend.pointer_type(), frontend.default_call_conv);
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let fallback = (layout.slots().len() > options.max_fields)
        .then(|| format!("{} fields exceed the compile limit of {}", layout.slots().len(), options.max_fields));
    let b = FunctionBuilder::new(&mut ctx.func, fctx);
    let t = Translator::new(b, frontend, layouts, li);
    if fallback.is_some() {
        t.translate_fallback();
    } else if let Some(ids) = children {
        let mut children = Children { module: &mut *module, ids, refs: HashMap::new() };
        t.translate(ChildCalls::Direct(&mut children));
    } else {
        t.translate(ChildCalls::Table(table));
    }
    fallback
}

/// The lowered bodies of small leaf message types (no message fields of their own), by
/// function: each call of one from another message function of the module is inlined.
///
/// A call costs a small message more than its fields do: a 3-byte child of an embedded
/// command took 60 instructions, 20 of them its prologue and epilogue, and the caller
/// another 10 to pass the arguments and keep its own values across the call. A leaf
/// calls no message function, so inlining ends there and recursion cannot reach it.
#[derive(Default)]
pub(crate) struct Bodies {
    /// By `FuncId` (functions are declared densely from 0 in a module).
    bodies: Vec<Option<cranelift_codegen::ir::Function>>,
    /// How many calls were inlined.
    inlined: usize,
}

/// Leaf types with up to this many fields are inlined into their callers. More fields
/// mean a longer body for each call site (the function of a one-field message is some
/// 250 IR instructions, most of them in cold paths) for a call that costs relatively
/// less.
const INLINE_MAX_FIELDS: usize = 4;

impl Bodies {
    /// Lowers every small leaf type of `reachable` (functions `ids`) once, for inlining.
    fn lower_leaves(
        module: &mut JITModule,
        ctx: &mut cranelift_codegen::Context,
        fctx: &mut FunctionBuilderContext,
        layouts: &Layouts,
        reachable: &[LayoutIndex],
        ids: &[Option<FuncId>],
        options: &CompileOptions,
    ) -> Bodies {
        let mut bodies = Bodies::default();
        for &li in reachable.iter().skip(1) {
            let slots = layouts.get(li).slots();
            let leaf = slots.iter().all(|s| s.child == protojit_arena::NO_INDEX);
            if !leaf || slots.len() > INLINE_MAX_FIELDS || slots.len() > options.max_fields {
                continue;
            }
            let id = ids[li.index()].expect("reachable layouts have functions");
            let f = TypeFn { layouts, li, id, children: Some(ids), table: std::ptr::null(), options };
            lower(module, ctx, fctx, &f);
            let at = id.as_u32() as usize;
            if bodies.bodies.len() <= at {
                bodies.bodies.resize(at + 1, None);
            }
            bodies.bodies[at] = Some(std::mem::replace(&mut ctx.func, cranelift_codegen::ir::Function::new()));
            ctx.clear();
        }
        bodies
    }

    fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }

    fn get(&self, id: FuncId) -> Option<&cranelift_codegen::ir::Function> {
        self.bodies.get(id.as_u32() as usize)?.as_ref()
    }
}

impl cranelift_codegen::inline::Inline for Bodies {
    fn inline(
        &mut self,
        caller: &cranelift_codegen::ir::Function,
        _call: cranelift_codegen::ir::Inst,
        _opcode: cranelift_codegen::ir::Opcode,
        callee: FuncRef,
        _args: &[cranelift_codegen::ir::Value],
    ) -> cranelift_codegen::inline::InlineCommand<'_> {
        use cranelift_codegen::inline::InlineCommand;
        let cranelift_codegen::ir::ExternalName::User(name) = caller.dfg.ext_funcs[callee].name else {
            return InlineCommand::KeepCall;
        };
        let id = caller.params.user_named_funcs()[name].index;
        match self.bodies.get(id as usize).and_then(Option::as_ref) {
            Some(body) => {
                self.inlined += 1;
                InlineCommand::Inline { callee: std::borrow::Cow::Borrowed(body), visit_callee: false }
            }
            None => InlineCommand::KeepCall,
        }
    }
}

/// Defines the function built in `ctx` as `id` of `module` and clears `ctx`: its
/// machine-code bytes. `name` names it in errors and in the `PROTOJIT_DUMP_VCODE` dump (the
/// machine code as Cranelift lowered it, after register allocation: what a
/// per-instruction profile of compiled code is read against).
pub(crate) fn define_built(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    id: FuncId,
    name: &str,
) -> Result<u32, JitError> {
    let dump_vcode = std::env::var_os("PROTOJIT_DUMP_VCODE").is_some();
    ctx.set_disasm(dump_vcode);
    let defined = module.define_function(id, ctx).map_err(|e| JitError::Codegen {
        message_type: name.to_owned(),
        reason: clip(match e {
            cranelift_module::ModuleError::Compilation(c) => {
                cranelift_codegen::print_errors::pretty_error(&ctx.func, c)
            }
            other => other.to_string(),
        }),
    });
    let code_bytes = ctx.compiled_code().map_or(0, |c| c.code_info().total_size);
    if let Some(vcode) = ctx.compiled_code().and_then(|c| c.vcode.as_deref()).filter(|_| dump_vcode) {
        eprintln!("; protojit: {name} (machine code)\n{vcode}");
    }
    module.clear_context(ctx);
    defined.map(|()| code_bytes)
}

/// Lowers message type `li` and defines it as function `id` of `module` (not yet
/// finalized). `ctx` and `fctx` are reused between functions, which saves their
/// allocations.
pub(crate) fn define(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    f: &TypeFn<'_>,
    inline: &mut Bodies,
) -> Result<TypeStats, JitError> {
    let TypeFn { layouts, li, id, options, .. } = *f;
    let dump = std::env::var_os("PROTOJIT_DUMP_CLIF").is_some();
    let layout = layouts.get(li);
    let started = Instant::now();
    let fallback = match inline.get(id) {
        // A small leaf lowered already (`Bodies::lower_leaves`).
        Some(body) => {
            ctx.func = body.clone();
            None
        }
        None => lower(module, ctx, fctx, f),
    };
    let inlined_before = inline.inlined;
    if !inline.is_empty() && !ctx.func.dfg.ext_funcs.is_empty() {
        ctx.inline(&mut *inline).map_err(|e| JitError::Codegen {
            message_type: layout.descriptor().full_name().to_owned(),
            reason: clip(e.to_string()),
        })?;
    }
    let clif = (options.keep_clif || dump).then(|| ctx.func.display().to_string());
    if dump {
        eprintln!("; protojit: {}\n{}", layout.descriptor().full_name(), clif.as_deref().unwrap_or(""));
    }
    let lowered = started.elapsed();
    let code_bytes = define_built(module, ctx, id, layout.descriptor().full_name())?;
    let compile_time = started.elapsed();
    Ok(TypeStats {
        message_type: layout.descriptor().full_name().to_owned(),
        engine: match fallback {
            Some(reason) => TypeEngine::Interpreter(reason),
            None => TypeEngine::Jit,
        },
        code_bytes,
        compile_time,
        phases: CompilePhases { lower: lowered, codegen: compile_time - lowered, link: Duration::ZERO },
        inlined_calls: (inline.inlined - inlined_before) as u32,
        clif,
        interpreted_decodes: 0,
        interpreted_bytes: 0,
    })
}

impl Compiled {
    /// Compiles every message type reachable from `root`.
    pub fn compile(layouts: &Layouts, root: LayoutIndex, options: &CompileOptions) -> Result<Compiled, JitError> {
        let reachable = layouts.reachable(root);
        let mut module = new_module(options, reachable.len())?;
        let mut ids: Vec<Option<FuncId>> = vec![None; layouts.len()];
        for &li in &reachable {
            ids[li.index()] = Some(declare(&mut module, layouts, li)?);
        }
        let mut ctx = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut stats = Vec::with_capacity(reachable.len());
        let mut bodies = Bodies::lower_leaves(&mut module, &mut ctx, &mut fctx, layouts, &reachable, &ids, options);
        for &li in &reachable {
            let id = ids[li.index()].expect("declared above");
            let f = TypeFn { layouts, li, id, children: Some(&ids), table: std::ptr::null(), options };
            let s = define(&mut module, &mut ctx, &mut fctx, &f, &mut bodies)?;
            stats.push(s);
        }
        let root_name = layouts.get(root).descriptor().full_name().to_owned();
        let linking = Instant::now();
        let (code, f) = Code::finalize(module, ids[root.index()].unwrap(), &root_name)?;
        let link = linking.elapsed();
        // `reachable` starts with the root.
        if let Some(root_stats) = stats.first_mut() {
            root_stats.phases.link = link;
            root_stats.compile_time += link;
        }
        // SAFETY: the function was defined with `message_signature`, which is `MessageFn`'s
        // ABI (the host's default C calling convention, pointer-sized arguments).
        let root_fn = unsafe { std::mem::transmute::<*const u8, MessageFn>(f) };
        Ok(Compiled { _code: code, root_fn, root, root_name, layouts_id: layouts.id(), stats })
    }

    /// The root message type's function.
    ///
    /// The pointer is valid only while `self` lives (dropping `Compiled` frees the code),
    /// and calling it is sound only with a `JitCtx` made for an
    /// input, an arena and the very layouts this was compiled over, and a zeroed (or
    /// partly decoded) block of the root layout in that arena.
    pub(crate) fn root_fn(&self) -> MessageFn {
        self.root_fn
    }

    /// The root message type the code decodes.
    pub fn root(&self) -> LayoutIndex {
        self.root
    }

    /// [`Layouts::id`] of the layouts the code was compiled over.
    pub fn layouts_id(&self) -> u64 {
        self.layouts_id
    }

    /// Checks that this code decodes `root` over `layouts`.
    pub fn check(&self, layouts: &Layouts, root: LayoutIndex) -> Result<(), JitError> {
        if self.layouts_id == layouts.id() && self.root == root {
            return Ok(());
        }
        Err(JitError::WrongLayouts {
            compiled_for: self.root_name.clone(),
            compiled_layouts: self.layouts_id,
            wanted: layouts.get(root).descriptor().full_name().to_owned(),
            wanted_layouts: layouts.id(),
        })
    }

    /// Per message type: engine, code size, compile time (root first).
    pub fn stats(&self) -> &[TypeStats] {
        &self.stats
    }
}
