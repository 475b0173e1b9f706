//! The compiled streaming walk: machine code that reads a message's wire bytes and hands each value to a [`MessageSink`], building nothing.
//!
//! [`StreamCode::compile`] lowers every message type reachable from a root to one
//! Cranelift function, `(ctx, sink, p, end, depth, end_tag) -> the position after the
//! message` (null: the walk halted). A function reads a tag (one and two bytes inline,
//! longer ones through `ps_tag`), dispatches it with a `Switch` over the type's tags (each field's
//! wire type, and the packed form of packable repeated fields), reads the value inline
//! (varints, fixed-width numbers, length prefixes: [`WireReads`]) and calls the sink
//! through a *trampoline*: a monomorphic `extern "C"` function of the walk's sink type,
//! taken from a table in the context. Messages and groups call their type's function.
//!
//! The walk accepts and rejects exactly what the interpreted walk
//! ([`protojit_arena::stream::walk`]) does and calls the sink in the same order, because it
//! checks the same things at the same points: a value is checked (bounds, UTF-8 in the
//! trampoline, a message's depth before its `begin`) before the sink sees it. So the code
//! needs no error kinds or offsets: when it meets malformed input it returns null, and
//! [`StreamCode::walk`] finds the error (kind and offset) by checking the record with the
//! interpreter's walk, which stops at the same first error.
//!
//! What the trampolines leave to Rust: a value's conversion to its [`WireValue`] variant,
//! closed enums' undeclared values (passed over), UTF-8 under the decode options' policy,
//! packed runs ([`protojit_arena::stream::packed_run`]), unknown fields
//! ([`protojit_arena::wire::skip_value`]) and messages the sink passes over
//! ([`protojit_arena::stream::check_fields`]). A sink that panics does not unwind through
//! machine code: the trampoline catches the panic, the walk halts, and `walk` resumes it.

use std::any::Any;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, SigRef, Signature, Type, UserFuncName, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Switch};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use protojit_arena::stream::{check_fields, check_record, packed_run, MessageSink, WireValue};
use protojit_arena::wire::{read_tag, skip_value};
use protojit_arena::{
    runtime, DecodeError, DecodeErrorKind, DecodeOptions, FieldKind, LayoutIndex, Layouts, Repetition, SlotIndex,
};

use crate::compile::{new_module, JitError};
use crate::options::CompileOptions;
use crate::reads::{input, WireReads};

/// The sink calls compiled code makes, each an index into [`StreamCtx::calls`]. Every
/// trampoline has the one signature `(ctx, sink, key, a, b, c) -> u64`; `key` is
/// `layout << 32 | slot` unless said otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
enum Call {
    /// `a`: a `bool`'s varint. Returns 0, or 1 to halt (as every value call).
    Bool,
    /// `a`: an `int32`'s bits (low 32; `sint32` zigzag-decoded, `sfixed32` as loaded).
    I32,
    /// `a`: an `int64`'s bits.
    I64,
    /// `a`: a `uint32`'s or `fixed32`'s bits (low 32).
    U32,
    /// `a`: a `uint64`'s or `fixed64`'s bits.
    U64,
    /// `a`: a `float`'s bits.
    F32,
    /// `a`: a `double`'s bits.
    F64,
    /// `a`: an open enum's number (low 32 bits).
    Enum,
    /// `a`: a closed enum's number: passed over unless declared.
    ClosedEnum,
    /// `a..b`: a `string` or `bytes` value; `c`: 0 bytes, 1 a string whose features say
    /// VERIFY, 2 another string (the options' UTF-8 policy decides which are checked).
    Text,
    /// `a..b`: a packed run.
    Packed,
    /// A message or group begins: 0 halt, 1 pass over it, 2 walk it with the sink the
    /// trampoline left in [`StreamCtx::child`].
    Begin,
    /// The message begun ends.
    End,
    /// An unknown field (or a known number in another wire type) whose tag is at `a`, in
    /// a message ending at `b`; `key`: the depth. The position after it, or 0 to halt.
    Skip,
    /// A message passed over: `key` its layout, `a..b` where its fields may lie, `c` its
    /// depth, with its group's field number in the high 32 bits (0: not a group). The
    /// position after it (a group's end tag), or 0 to halt.
    Check,
}
const CALLS: usize = Call::Check as usize + 1;

/// What every compiled function of one walk reads, by offsets below.
#[repr(C)]
struct StreamCtx {
    /// The trampolines of the walk's sink type, by [`Call`].
    calls: [usize; CALLS],
    /// The decode options' depth limit.
    max_depth: u64,
    /// The sink of the message [`Call::Begin`] said to walk.
    child: *mut u8,
    /// The walk's [`Run`].
    run: *mut u8,
}
const CTX_CALLS: i32 = std::mem::offset_of!(StreamCtx, calls) as i32;
const CTX_MAX_DEPTH: i32 = std::mem::offset_of!(StreamCtx, max_depth) as i32;
const CTX_CHILD: i32 = std::mem::offset_of!(StreamCtx, child) as i32;

/// The `end_tag` of a message that is not a group (no tag has this value).
const NOT_A_GROUP: i64 = -1;

/// Every message function: `(ctx, sink, p, end, depth, end_tag)`.
type StreamFn = unsafe extern "C" fn(*mut StreamCtx, *mut u8, *const u8, *const u8, u64, u64) -> *const u8;

/// The walk's state besides the sinks, for the trampolines.
struct Run<'a, 'c, C> {
    layouts: &'a Layouts,
    buf: &'a [u8],
    options: DecodeOptions,
    cx: &'c mut C,
    halt: Halt,
}

/// Why compiled code returned null.
enum Halt {
    /// It did not (or it found the input malformed itself).
    None,
    /// A sink returned `Break`.
    Stopped,
    /// A trampoline found the input malformed.
    Failed,
    /// A sink panicked.
    Panicked(Box<dyn Any + Send>),
}

/// Compiled streaming walks of one root message type over its layouts. `Send + Sync`.
pub struct StreamCode {
    /// Owns the code; freed on drop (behind a mutex only so that `StreamCode` is `Sync`).
    module: Mutex<Option<JITModule>>,
    root_fn: StreamFn,
    layouts: Arc<Layouts>,
    root: LayoutIndex,
    code_bytes: u32,
    compile_time: std::time::Duration,
}

/// Walks on many threads share one `StreamCode` (each walk has its own context).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<StreamCode>()
};

impl Drop for StreamCode {
    fn drop(&mut self) {
        let module = self.module.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(module) = module {
            // SAFETY: `&mut self` proves no walk is running; the function pointers die
            // with `self`.
            unsafe { module.free_memory() };
        }
    }
}

impl std::fmt::Debug for StreamCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamCode")
            .field("root", &self.layouts.get(self.root).descriptor().full_name())
            .field("code_bytes", &self.code_bytes)
            .finish()
    }
}

fn codegen(name: &str, e: impl std::fmt::Display) -> JitError {
    JitError::Codegen { message_type: format!("streaming walk of {name}"), reason: e.to_string() }
}

impl StreamCode {
    /// Compiles the walk of message type `root` and every type it reaches.
    pub fn compile(
        layouts: &Arc<Layouts>,
        root: LayoutIndex,
        options: &CompileOptions,
    ) -> Result<StreamCode, JitError> {
        let started = std::time::Instant::now();
        let types = layouts.reachable(root);
        let mut module = new_module(options, types.len())?;
        let frontend = module.isa().frontend_config();
        let ptr = frontend.pointer_type();
        let cc = frontend.default_call_conv;
        let sig = {
            let mut s = Signature::new(cc);
            s.params.extend([ptr, ptr, ptr, ptr, types::I64, types::I64].map(AbiParam::new));
            s.returns.push(AbiParam::new(ptr));
            s
        };
        // Each reachable type's function, by layout index (a dense table).
        let mut ids: Vec<Option<FuncId>> = vec![None; layouts.len()];
        for &li in &types {
            let name = format!("protojit:stream:{}", layouts.get(li).descriptor().full_name());
            let id = module.declare_function(&name, Linkage::Local, &sig).map_err(|e| codegen(&name, e))?;
            ids[li.index()] = Some(id);
        }
        let mut ctx = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut code_bytes = 0;
        for &li in &types {
            let name = layouts.get(li).descriptor().full_name();
            let id = ids[li.index()].expect("declared above");
            ctx.func.signature = sig.clone();
            ctx.func.name = UserFuncName::user(0, id.as_u32());
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let mut children: Vec<Option<FuncRef>> = vec![None; layouts.len()];
            for slot in layouts.get(li).slots() {
                if slot.kind.is_message() {
                    let child = ids[slot.child as usize].expect("reachable");
                    children[slot.child as usize] = Some(module.declare_func_in_func(child, b.func));
                }
            }
            let reads = WireReads::new(&mut b, ptr, cc);
            let call_sig = {
                let mut s = Signature::new(cc);
                s.params.extend([ptr, ptr, types::I64, types::I64, types::I64, types::I64].map(AbiParam::new));
                s.returns.push(AbiParam::new(types::I64));
                b.import_signature(s)
            };
            let tag_sig = {
                let mut s = Signature::new(cc);
                s.params.extend([ptr, ptr, ptr].map(AbiParam::new));
                s.returns.push(AbiParam::new(ptr));
                b.import_signature(s)
            };
            Lower { b: &mut b, ptr, layouts, li, children, reads, call_sig, tag_sig }.emit();
            b.seal_all_blocks();
            b.finalize(frontend);
            module.define_function(id, &mut ctx).map_err(|e| codegen(name, e))?;
            code_bytes += ctx.compiled_code().map_or(0, |c| c.code_info().total_size);
            module.clear_context(&mut ctx);
        }
        let root_name = layouts.get(root).descriptor().full_name();
        module.finalize_definitions().map_err(|e| codegen(root_name, e))?;
        let code = module.get_finalized_function(ids[root.index()].expect("the root is reachable"));
        // SAFETY: every function was defined with `sig`, `StreamFn`'s ABI.
        let root_fn = unsafe { std::mem::transmute::<*const u8, StreamFn>(code) };
        Ok(StreamCode {
            module: Mutex::new(Some(module)),
            root_fn,
            layouts: layouts.clone(),
            root,
            code_bytes,
            compile_time: started.elapsed(),
        })
    }

    /// The layouts the code was compiled over.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// The root message type.
    pub fn root(&self) -> LayoutIndex {
        self.root
    }

    /// Machine-code bytes of all its functions.
    pub fn code_bytes(&self) -> u32 {
        self.code_bytes
    }

    /// Time spent lowering and compiling it.
    pub fn compile_time(&self) -> std::time::Duration {
        self.compile_time
    }

    /// Walks `buf` as a message of the root type, handing its fields to `sink` (slots and
    /// layouts are those of [`layouts`](Self::layouts)): the same calls in the same order,
    /// the same result and the same errors as
    /// [`protojit_arena::stream::walk`] over these layouts. A panic of the sink is resumed
    /// here, after the machine code has returned.
    pub fn walk<'a, S: MessageSink<'a>>(
        &'a self,
        buf: &'a [u8],
        options: &DecodeOptions,
        sink: &mut S,
        cx: &mut S::Cx,
    ) -> Result<ControlFlow<()>, DecodeError> {
        if buf.len() > u32::MAX as usize {
            return Err(DecodeError::new(DecodeErrorKind::InputTooLarge, 0));
        }
        let layouts: &'a Layouts = &self.layouts;
        let mut run = Run { layouts, buf, options: *options, cx, halt: Halt::None };
        let mut ctx = StreamCtx {
            calls: trampolines::<'a, S>(),
            max_depth: u64::from(options.max_depth()),
            child: std::ptr::null_mut(),
            run: (&mut run as *mut Run<'a, '_, S::Cx>).cast(),
        };
        let range = buf.as_ptr_range();
        // SAFETY: the code was compiled over `self.layouts` for `self.root`; it reads only
        // `buf` (every read bounds-checked against `range.end`), writes only `ctx.child`,
        // and calls the trampolines of `S` with `ctx` and the sinks they gave it: `sink`,
        // or one a `begin` of a sink returned (in `ctx.child`), while that sink's message
        // is walked.
        let after =
            unsafe { (self.root_fn)(&mut ctx, (sink as *mut S).cast(), range.start, range.end, 0, NOT_A_GROUP as u64) };
        match std::mem::replace(&mut run.halt, Halt::None) {
            Halt::Panicked(payload) => resume_unwind(payload),
            Halt::Stopped => Ok(ControlFlow::Break(())),
            Halt::None if after == range.end => Ok(ControlFlow::Continue(())),
            // Malformed: the interpreter's walk stops at the same first error.
            Halt::None | Halt::Failed => match check_record(layouts, self.root, buf, options) {
                Err(e) => Err(e),
                Ok(()) => Err(DecodeError::new(DecodeErrorKind::Internal, after as usize - range.start as usize)),
            },
        }
    }
}

/// The trampolines of sink type `S`, by [`Call`].
fn trampolines<'a, S: MessageSink<'a>>() -> [usize; CALLS] {
    type T = unsafe extern "C" fn(*mut StreamCtx, *mut u8, u64, u64, u64, u64) -> u64;
    let calls: [T; CALLS] = [
        value::<S, { Call::Bool as u8 }>,
        value::<S, { Call::I32 as u8 }>,
        value::<S, { Call::I64 as u8 }>,
        value::<S, { Call::U32 as u8 }>,
        value::<S, { Call::U64 as u8 }>,
        value::<S, { Call::F32 as u8 }>,
        value::<S, { Call::F64 as u8 }>,
        value::<S, { Call::Enum as u8 }>,
        value::<S, { Call::ClosedEnum as u8 }>,
        text::<S>,
        packed::<S>,
        begin::<S>,
        end::<S>,
        skip::<S>,
        check::<S>,
    ];
    calls.map(|f| f as usize)
}

/// Runs a trampoline's body over the walk's state: its result, or `fallback` when the
/// body panicked (the panic is kept for [`StreamCode::walk`] to resume).
///
/// # Safety
/// `ctx` is the context of a running [`StreamCode::walk`] with sink type `S`.
#[inline(always)]
unsafe fn guarded<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    fallback: u64,
    body: impl FnOnce(&mut Run<'a, '_, S::Cx>) -> u64,
) -> u64 {
    // SAFETY: `walk` put its `Run` there; nothing else holds a reference to it while the
    // code runs (each trampoline takes it for its own call only).
    let run = unsafe { &mut *(*ctx).run.cast::<Run<'a, '_, S::Cx>>() };
    match catch_unwind(AssertUnwindSafe(|| body(run))) {
        Ok(r) => r,
        Err(payload) => {
            run.halt = Halt::Panicked(payload);
            fallback
        }
    }
}

/// `flow` as a value call's result: 0 to go on, 1 to halt (the walk stopped).
#[inline(always)]
fn go<C>(run: &mut Run<'_, '_, C>, flow: ControlFlow<()>) -> u64 {
    match flow {
        ControlFlow::Continue(()) => 0,
        ControlFlow::Break(()) => {
            run.halt = Halt::Stopped;
            1
        }
    }
}

#[inline(always)]
fn key_parts(key: u64) -> (LayoutIndex, SlotIndex) {
    (LayoutIndex::new((key >> 32) as u32), SlotIndex::new(key as u32))
}

/// `ptr`'s offset in the walk's input.
#[inline(always)]
fn offset<C>(run: &Run<'_, '_, C>, ptr: u64) -> usize {
    (ptr as usize).wrapping_sub(run.buf.as_ptr() as usize)
}

/// [`Call::Bool`] to [`Call::ClosedEnum`]: a number value, converted by its call `K`.
///
/// # Safety
/// `ctx` is the context of a running walk with sink type `S`, `sink` one of its sinks.
unsafe extern "C" fn value<'a, S: MessageSink<'a>, const K: u8>(
    ctx: *mut StreamCtx,
    sink: *mut u8,
    key: u64,
    a: u64,
    _: u64,
    _: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 1, |run| {
            let (li, si) = key_parts(key);
            let v = match K {
                k if k == Call::Bool as u8 => WireValue::Bool(a != 0),
                k if k == Call::I32 as u8 => WireValue::I32(a as i32),
                k if k == Call::I64 as u8 => WireValue::I64(a as i64),
                k if k == Call::U32 as u8 => WireValue::U32(a as u32),
                k if k == Call::U64 as u8 => WireValue::U64(a),
                k if k == Call::F32 as u8 => WireValue::F32(f32::from_bits(a as u32)),
                k if k == Call::F64 as u8 => WireValue::F64(f64::from_bits(a)),
                k if k == Call::Enum as u8 => WireValue::Enum(a as i32),
                _ => {
                    // A closed enum's undeclared value is an unknown field: passed over.
                    if !run.layouts.get(li).closed_enum_has(si, a as i32) {
                        return 0;
                    }
                    WireValue::Enum(a as i32)
                }
            };
            let flow = (*sink.cast::<S>()).value(run.cx, si, v);
            go(run, flow)
        })
    }
}

/// [`Call::Text`].
///
/// # Safety
/// As [`value`]'s; `a..b` lies in the walk's input.
unsafe extern "C" fn text<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    sink: *mut u8,
    key: u64,
    a: u64,
    b: u64,
    c: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 1, |run| {
            let (_, si) = key_parts(key);
            let (start, stop) = (offset(run, a), offset(run, b));
            let Some(bytes) = run.buf.get(start..stop) else {
                run.halt = Halt::Failed;
                return 1;
            };
            let v = if c != 0 && run.options.utf8().checks(c == 1) {
                match runtime::utf8(bytes) {
                    Some(s) => WireValue::Str(s),
                    None => {
                        run.halt = Halt::Failed;
                        return 1;
                    }
                }
            } else {
                WireValue::Bytes(bytes)
            };
            let flow = (*sink.cast::<S>()).value(run.cx, si, v);
            go(run, flow)
        })
    }
}

/// [`Call::Packed`].
///
/// # Safety
/// As [`text`]'s.
unsafe extern "C" fn packed<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    sink: *mut u8,
    key: u64,
    a: u64,
    b: u64,
    _: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 1, |run| {
            let (li, si) = key_parts(key);
            let (start, stop) = (offset(run, a), offset(run, b));
            let sink = &mut *sink.cast::<S>();
            match packed_run(run.layouts, li, si, run.buf, start, stop, &run.options, sink, run.cx) {
                Ok(flow) => go(run, flow),
                Err(_) => {
                    run.halt = Halt::Failed;
                    1
                }
            }
        })
    }
}

/// [`Call::Begin`].
///
/// # Safety
/// As [`value`]'s.
unsafe extern "C" fn begin<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    sink: *mut u8,
    key: u64,
    _: u64,
    _: u64,
    _: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 0, |run| {
            let (_, si) = key_parts(key);
            match (*sink.cast::<S>()).begin(run.cx, si) {
                ControlFlow::Break(()) => {
                    run.halt = Halt::Stopped;
                    0
                }
                ControlFlow::Continue(None) => 1,
                ControlFlow::Continue(Some(child)) => {
                    (*ctx).child = (child as *mut S).cast();
                    2
                }
            }
        })
    }
}

/// [`Call::End`].
///
/// # Safety
/// As [`value`]'s.
unsafe extern "C" fn end<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    sink: *mut u8,
    key: u64,
    _: u64,
    _: u64,
    _: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 1, |run| {
            let (_, si) = key_parts(key);
            let flow = (*sink.cast::<S>()).end(run.cx, si);
            go(run, flow)
        })
    }
}

/// [`Call::Skip`].
///
/// # Safety
/// As [`text`]'s.
unsafe extern "C" fn skip<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    _: *mut u8,
    depth: u64,
    a: u64,
    b: u64,
    _: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 0, |run| {
            let (tag_pos, end) = (offset(run, a), offset(run, b));
            let skipped = (|| {
                let buf = run.buf.get(..end).ok_or(DecodeError::new(DecodeErrorKind::Internal, 0))?;
                let (number, wt, next) = read_tag(buf, tag_pos)?;
                if wt == protojit_arena::wire::EGROUP {
                    return Err(DecodeError::new(DecodeErrorKind::UnmatchedEndGroup, tag_pos));
                }
                skip_value(buf, tag_pos, next, end, number, wt, depth as u32, run.options.max_depth())
            })();
            match skipped {
                Ok(after) => run.buf.as_ptr() as u64 + after as u64,
                Err(_) => {
                    run.halt = Halt::Failed;
                    0
                }
            }
        })
    }
}

/// [`Call::Check`].
///
/// # Safety
/// As [`text`]'s.
unsafe extern "C" fn check<'a, S: MessageSink<'a>>(
    ctx: *mut StreamCtx,
    _: *mut u8,
    li: u64,
    a: u64,
    b: u64,
    c: u64,
) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        guarded::<S>(ctx, 0, |run| {
            let (start, end) = (offset(run, a), offset(run, b));
            let (depth, number) = (c as u32, (c >> 32) as u32);
            let group = (number != 0).then_some((number, start));
            let li = LayoutIndex::new(li as u32);
            match check_fields(run.layouts, li, run.buf, start, end, depth, group, &run.options) {
                Ok(after) => run.buf.as_ptr() as u64 + after as u64,
                Err(_) => {
                    run.halt = Halt::Failed;
                    0
                }
            }
        })
    }
}

/// Reads the tag at `p` (before `end`) as the interpreter does (at most five bytes, field
/// number 1 to 2^29-1, wire type 0 to 5) into `*out` as `number << 3 | wire type`; the
/// position after it, or null if it is malformed. Called by compiled code for tags longer
/// than one byte. Never panics.
///
/// # Safety
/// `p..end` is readable and `out` writable.
unsafe extern "C" fn ps_tag(p: *const u8, end: *const u8, out: *mut u64) -> *const u8 {
    // SAFETY: the caller passes a range of the input it reads.
    let buf = unsafe { std::slice::from_raw_parts(p, end.offset_from(p) as usize) };
    match read_tag(buf, 0) {
        Ok((number, wt, n)) => {
            // SAFETY: the caller passes a writable cell.
            unsafe { out.write(u64::from(number) << 3 | u64::from(wt)) };
            // SAFETY: `n <= buf.len()`.
            unsafe { p.add(n) }
        }
        Err(_) => std::ptr::null(),
    }
}

fn context() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Lowers the walk of one message type.
struct Lower<'a, 'b, 'f> {
    b: &'f mut FunctionBuilder<'b>,
    ptr: Type,
    layouts: &'a Layouts,
    li: LayoutIndex,
    /// The functions of the message types its fields hold, by layout index.
    children: Vec<Option<FuncRef>>,
    reads: WireReads,
    call_sig: SigRef,
    tag_sig: SigRef,
}

/// The values every block of a message function uses.
#[derive(Clone, Copy)]
struct Env {
    ctx: Value,
    sink: Value,
    end: Value,
    depth: Value,
    /// `next(p)`: the loop head.
    next: Block,
    /// Return null: the walk halts (the input is malformed, or a trampoline said so).
    halt: Block,
}

impl Lower<'_, '_, '_> {
    fn emit(mut self) {
        let entry = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.b.switch_to_block(entry);
        let params = self.b.block_params(entry).to_vec();
        let (ctx, sink, p0, end, depth, end_tag) = (params[0], params[1], params[2], params[3], params[4], params[5]);
        let next = self.b.create_block();
        self.b.append_block_param(next, self.ptr);
        let halt = self.b.create_block();
        self.b.set_cold_block(halt);
        let env = Env { ctx, sink, end, depth, next, halt };
        self.b.ins().jump(next, &[BlockArg::Value(p0)]);

        // next(p): at the end, return `p` (a message's end) or halt (a group without its
        // end tag); else read the tag.
        self.b.switch_to_block(next);
        let p = self.b.block_params(next)[0];
        let at_end = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, p, end);
        let ended = self.b.create_block();
        let more = self.b.create_block();
        self.b.ins().brif(at_end, ended, &[], more, &[]);
        self.b.switch_to_block(ended);
        let is_message = self.b.ins().icmp_imm_s(IntCC::Equal, end_tag, NOT_A_GROUP);
        let done = self.b.create_block();
        self.b.ins().brif(is_message, done, &[], halt, &[]);
        self.b.switch_to_block(done);
        self.b.ins().return_(&[p]);

        // dispatch(p, q, tag): the tag at `p` ends at `q`.
        let dispatch = self.b.create_block();
        self.b.append_block_param(dispatch, self.ptr);
        self.b.append_block_param(dispatch, self.ptr);
        self.b.append_block_param(dispatch, types::I64);
        self.b.switch_to_block(more);
        let b0 = self.b.ins().uload8(types::I64, input(), p, 0);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b0, 0x80);
        let long = self.b.create_block();
        let p1 = self.b.ins().iadd_imm_s(p, 1);
        self.b.ins().brif(short, dispatch, &[BlockArg::Value(p), BlockArg::Value(p1), BlockArg::Value(b0)], long, &[]);
        // Two-byte tags (fields 16 to 2047) inline too; longer ones through `ps_tag`, which
        // checks them as the interpreter does. (A two-byte tag is never too long, and one
        // of field number 0 matches no field: `Skip` re-reads and rejects it.)
        self.b.switch_to_block(long);
        let p2 = self.b.ins().iadd_imm_s(p, 2);
        let room = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, p2, end);
        let second = self.b.create_block();
        let longer = self.b.create_block();
        self.b.set_cold_block(longer);
        self.b.ins().brif(room, second, &[], longer, &[]);
        self.b.switch_to_block(second);
        let b1 = self.b.ins().uload8(types::I64, input(), p, 1);
        let last = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, b1, 0x80);
        let two = self.b.create_block();
        self.b.ins().brif(last, two, &[], longer, &[]);
        self.b.switch_to_block(two);
        let low = self.b.ins().band_imm_u(b0, 0x7f);
        let high = self.b.ins().ishl_imm_u(b1, 7);
        let tag = self.b.ins().bor(low, high);
        self.b.ins().jump(dispatch, &[BlockArg::Value(p), BlockArg::Value(p2), BlockArg::Value(tag)]);
        self.b.switch_to_block(longer);
        let (tag, q) = self.long_tag(p, env);
        self.b.ins().jump(dispatch, &[BlockArg::Value(p), BlockArg::Value(q), BlockArg::Value(tag)]);

        // The labels: one per field and wire form. They read the value at `q`, which
        // `dispatch` defines and dominates them with.
        let layout = self.layouts.get(self.li);
        let mut labels = Vec::new();
        for (si, slot) in layout.slots().iter().enumerate() {
            labels.push((u64::from(slot.number) << 3 | slot.kind.wire_type() as u64, self.b.create_block(), si, false));
            if slot.repetition != Repetition::Singular && slot.kind.is_packable() {
                labels.push((u64::from(slot.number) << 3 | 2, self.b.create_block(), si, true));
            }
        }
        self.b.switch_to_block(dispatch);
        let (p, q, tag) = {
            let ps = self.b.block_params(dispatch);
            (ps[0], ps[1], ps[2])
        };
        let other = self.b.create_block();
        let mut switch = Switch::new();
        for &(tag, label, _, _) in &labels {
            switch.set_entry(u128::from(tag), label);
        }
        switch.emit(self.b, tag, other);

        // other: this message's group end tag returns; anything else is skipped.
        self.b.switch_to_block(other);
        let is_end = self.b.ins().icmp(IntCC::Equal, tag, end_tag);
        let group_end = self.b.create_block();
        let unknown = self.b.create_block();
        self.b.ins().brif(is_end, group_end, &[], unknown, &[]);
        self.b.switch_to_block(group_end);
        self.b.ins().return_(&[q]);
        self.b.switch_to_block(unknown);
        let after = self.call(Call::Skip, depth, &[p, end], env);
        let halted = self.b.ins().icmp_imm_u(IntCC::Equal, after, 0);
        self.b.ins().brif(halted, halt, &[], next, &[BlockArg::Value(after)]);

        for (_, label, si, packed) in labels {
            self.b.switch_to_block(label);
            self.field(SlotIndex::new(si as u32), packed, q, env);
        }

        self.b.switch_to_block(halt);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b.ins().return_(&[null]);
    }

    /// A tag of more than one byte at `p`, through `ps_tag`: its value and the position
    /// after it (halts when malformed).
    fn long_tag(&mut self, p: Value, env: Env) -> (Value, Value) {
        let slot = self.b.create_sized_stack_slot(cranelift_codegen::ir::StackSlotData::new(
            cranelift_codegen::ir::StackSlotKind::ExplicitSlot,
            8,
            3,
        ));
        let out = self.b.ins().stack_addr(self.ptr, slot, 0);
        let f = self.b.ins().iconst(self.ptr, ps_tag as *const () as usize as i64);
        let call = self.b.ins().call_indirect(self.tag_sig, f, &[p, env.end, out]);
        let after = self.b.inst_results(call)[0];
        let ok = self.b.create_block();
        self.b.ins().brif(after, ok, &[], env.halt, &[]);
        self.b.switch_to_block(ok);
        let tag = self.b.ins().stack_load(types::I64, self.ptr, slot, 0);
        (tag, after)
    }

    /// Calls trampoline `call` with `key` and up to three more arguments (zeros after
    /// them): its result.
    fn call(&mut self, call: Call, key: Value, args: &[Value], env: Env) -> Value {
        let f = self.b.ins().load(self.ptr, context(), env.ctx, CTX_CALLS + (call as i32) * self.ptr.bytes() as i32);
        let mut all = vec![env.ctx, env.sink, key];
        all.extend_from_slice(args);
        while all.len() < 6 {
            all.push(self.b.ins().iconst(types::I64, 0));
        }
        let inst = self.b.ins().call_indirect(self.call_sig, f, &all);
        self.b.inst_results(inst)[0]
    }

    /// Continues at `next(after)` when `r` is 0, else halts.
    fn go_on(&mut self, r: Value, after: Value, env: Env) {
        self.b.ins().brif(r, env.halt, &[], env.next, &[BlockArg::Value(after)]);
    }

    /// The block of slot `si` (its tag read; the value at `q`), ending with a jump to the
    /// loop head or the halt.
    fn field(&mut self, si: SlotIndex, packed: bool, q: Value, env: Env) {
        let slot = *self.layouts.get(self.li).slot(si);
        let key = self.b.ins().iconst(types::I64, ((self.li.index() as u64) << 32 | si.index() as u64) as i64);
        if packed {
            let (start, stop) = self.reads.span(self.b, q, env.end, env.halt);
            let r = self.call(Call::Packed, key, &[start, stop], env);
            self.go_on(r, stop, env);
            return;
        }
        let call = match slot.kind {
            FieldKind::Bool => Call::Bool,
            FieldKind::Int32 | FieldKind::Sint32 | FieldKind::Sfixed32 => Call::I32,
            FieldKind::Int64 | FieldKind::Sint64 | FieldKind::Sfixed64 => Call::I64,
            FieldKind::Uint32 | FieldKind::Fixed32 => Call::U32,
            FieldKind::Uint64 | FieldKind::Fixed64 => Call::U64,
            FieldKind::Float => Call::F32,
            FieldKind::Double => Call::F64,
            FieldKind::Enum if slot.closed_enum => Call::ClosedEnum,
            FieldKind::Enum => Call::Enum,
            FieldKind::String | FieldKind::Bytes => {
                let (start, stop) = self.reads.span(self.b, q, env.end, env.halt);
                let class = match slot.kind {
                    FieldKind::Bytes => 0,
                    _ if slot.validate_utf8 => 1,
                    _ => 2,
                };
                let class = self.b.ins().iconst(types::I64, class);
                let r = self.call(Call::Text, key, &[start, stop, class], env);
                self.go_on(r, stop, env);
                return;
            }
            FieldKind::Message | FieldKind::Group => {
                self.message(slot.kind == FieldKind::Group, slot.number, slot.child, key, q, env);
                return;
            }
        };
        let (v, after) = self.reads.number(self.b, slot.kind, q, env.end, env.halt);
        let call = match (call, self.layouts.get(self.li).closed_enum_range(si)) {
            // A closed enum whose values are consecutive: checked here, and an undeclared
            // value passed over (an unknown field) without a call.
            (Call::ClosedEnum, Some((lo, hi))) => {
                let x = self.b.ins().ireduce(types::I32, v);
                let below = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, i64::from(lo));
                let above = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, x, i64::from(hi));
                let out = self.b.ins().bor(below, above);
                let declared = self.b.create_block();
                self.b.ins().brif(out, env.next, &[BlockArg::Value(after)], declared, &[]);
                self.b.switch_to_block(declared);
                Call::Enum
            }
            (call, _) => call,
        };
        let r = self.call(call, key, &[v], env);
        self.go_on(r, after, env);
    }

    /// A message (its length prefix at `q`) or a group (its fields from `q`) of type
    /// `child`: the depth checked, then `begin`; walked by its function with the sink
    /// `begin` gave, then `end`; or passed over through [`Call::Check`].
    fn message(&mut self, group: bool, number: u32, child: u32, key: Value, q: Value, env: Env) {
        let (start, stop) = if group { (q, env.end) } else { self.reads.span(self.b, q, env.end, env.halt) };
        let max = self.b.ins().load(types::I64, context(), env.ctx, CTX_MAX_DEPTH);
        let deep = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, env.depth, max);
        let within = self.b.create_block();
        self.b.ins().brif(deep, env.halt, &[], within, &[]);
        self.b.switch_to_block(within);
        let depth = self.b.ins().iadd_imm_s(env.depth, 1);
        let r = self.call(Call::Begin, key, &[], env);
        let (walked, passed) = (self.b.create_block(), self.b.create_block());
        let mut switch = Switch::new();
        switch.set_entry(1, passed);
        switch.set_entry(2, walked);
        switch.emit(self.b, r, env.halt);

        self.b.switch_to_block(walked);
        let sink = self.b.ins().load(self.ptr, context(), env.ctx, CTX_CHILD);
        let end_tag = if group { i64::from(number) << 3 | 4 } else { NOT_A_GROUP };
        let end_tag = self.b.ins().iconst(types::I64, end_tag);
        let f = self.children[child as usize].expect("declared for every message field");
        let inst = self.b.ins().call(f, &[env.ctx, sink, start, stop, depth, end_tag]);
        let ended = self.b.inst_results(inst)[0];
        let ok = self.b.create_block();
        self.b.ins().brif(ended, ok, &[], env.halt, &[]);
        self.b.switch_to_block(ok);
        let r = self.call(Call::End, key, &[], env);
        let resumed = if group { ended } else { stop };
        self.go_on(r, resumed, env);

        self.b.switch_to_block(passed);
        let child_key = self.b.ins().iconst(types::I64, i64::from(child));
        let how = if group { i64::from(number) << 32 } else { 0 };
        let how = self.b.ins().iadd_imm_s(depth, how);
        let checked = self.call(Call::Check, child_key, &[start, stop, how], env);
        let halted = self.b.ins().icmp_imm_u(IntCC::Equal, checked, 0);
        let resumed = if group { checked } else { stop };
        self.b.ins().brif(halted, env.halt, &[], env.next, &[BlockArg::Value(resumed)]);
    }
}
