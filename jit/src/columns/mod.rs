//! Compiled column appenders: a record read from the wire straight into column buffers, one row per record, with no tree.
//!
//! A [`ColumnPlan`] names the fields to read (a message type's fields, and those of the
//! messages, groups, list elements and map entries among them, each a column);
//! [`Appender::compile`] lowers it to one Cranelift function per message of the plan, and
//! [`Appender::append`] runs that code on a record, writing row `n` of a [`ChunkColumns`]:
//! a cell of eight bytes per column and row (the value's bits; for strings and bytes, where
//! they lie in the record), a presence byte per column and row, and the items of repeated
//! fields (numbers, and where strings and bytes lie). Strings and bytes outside oneofs
//! ([`PlanCell::Text`]) are written straight into their column's data, which the caller
//! lends ([`ChunkColumns::lend_text`]): their cells say where they lie there. The elements
//! of a list of messages (or a map's entries) are rows of a row space of their own, which
//! grows as they come.
//!
//! The code handles the shapes records usually have, and **declines** the rest: a
//! closed enum's undeclared value, a `string` that is not UTF-8, a known number with
//! another wire type inside a packed run's end, and anything malformed (unknown groups
//! are walked to their end tags by a helper, as the tree skips them). A declined record
//! leaves the buffers as they were; the caller reads it some other way (the tree), which also says
//! what is wrong with it. So the compiled code needs no error paths of its own, and its
//! semantics are checked against the tree's on every record it accepts.
//!
//! What accepted records mean, as the tree has it: a singular value met twice keeps the
//! last (the cell is written again); a message met twice is merged (its fields write the
//! same row); list items are appended in wire order, packed or not; a oneof member
//! clears the other members of its oneof from the row (a message member already there
//! declines the record: its fields would have to leave the row too); fields the plan does
//! not name (and numbers the message does not declare) are skipped.
//!
//! By job: `plan` (the plan and its check), `buffers` (the chunk's buffers, the context
//! compiled code runs with and its helpers), `lower` (a plan message to IR, through the
//! wire core `crate::wire` that the tree decoder's lowering shares); this file compiles a
//! plan and runs its code.

use std::sync::atomic::{AtomicU64, Ordering};

use cranelift_codegen::ir::{types, AbiParam, Signature, UserFuncName};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{Linkage, Module};
use protojit_arena::Layouts;

use crate::compile::{define_built, new_module, Code, JitError};
use crate::options::CompileOptions;

mod buffers;
mod lower;
mod plan;

use buffers::AppendFn;
pub use buffers::ChunkColumns;
use plan::{check_plan, Shape};
pub use plan::{ColumnPlan, PlanCell, PlanError, PlanField, PlanMessage};

/// Compiled code that appends records of one [`ColumnPlan`] to [`ChunkColumns`].
pub struct Appender {
    /// Owns the code.
    _code: Code,
    root: AppendFn,
    id: u64,
    shape: Shape,
    code_bytes: u32,
    compile_time: std::time::Duration,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("columns", &self.shape.space_of_col.len())
            .field("code_bytes", &self.code_bytes)
            .finish()
    }
}

/// Appender ids, so that buffers are only ever handed to the code they were made for.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Appender {
    /// Compiles `plan` over `layouts`, or says why it cannot be: a plan that is not a tree
    /// of the layouts' fields, a cell that does not fit its field's kind, more than 256
    /// messages, a closed enum of more than 1024 values, a oneof of which some message or
    /// closed-enum member is not in the plan.
    pub fn compile(layouts: &Layouts, plan: &ColumnPlan, options: &CompileOptions) -> Result<Appender, PlanError> {
        let started = std::time::Instant::now();
        let shape = check_plan(layouts, plan)?;
        let mut module = new_module(options, plan.messages.len())?;
        let frontend = module.isa().frontend_config();
        let ptr = frontend.pointer_type();
        // Every message function: `(ctx, ptr, end, row) -> the position after the message`,
        // or null when the record is declined (`AppendFn`).
        let mut sig = Signature::new(frontend.default_call_conv);
        sig.params.extend([ptr, ptr, ptr, types::I64].map(AbiParam::new));
        sig.returns.push(AbiParam::new(ptr));
        let name = |i: usize| layouts.get(plan.messages[i].layout).descriptor().full_name();
        let ids = (0..plan.messages.len())
            .map(|i| {
                let declared =
                    module.declare_function(&format!("protojit:columns:{}:{i}", name(i)), Linkage::Local, &sig);
                declared.map_err(|e| JitError::Codegen { message_type: name(i).into(), reason: e.to_string() })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut ctx = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut code_bytes = 0;
        for (i, &id) in ids.iter().enumerate() {
            ctx.func.signature = sig.clone();
            ctx.func.name = UserFuncName::user(0, id.as_u32());
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let children = ids.iter().map(|&id| module.declare_func_in_func(id, b.func)).collect();
            lower::Lower::new(&mut b, ptr, layouts, plan, &shape, i, children).emit();
            b.seal_all_blocks();
            b.finalize(frontend);
            code_bytes += define_built(&mut module, &mut ctx, id, &format!("column appender of {}", name(i)))?;
        }
        let (code, f) = Code::finalize(module, ids[0], "column appender")?;
        // SAFETY: every function was defined with `sig`, `AppendFn`'s ABI.
        let root = unsafe { std::mem::transmute::<*const u8, AppendFn>(f) };
        Ok(Appender {
            _code: code,
            root,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape,
            code_bytes,
            compile_time: started.elapsed(),
        })
    }

    /// Machine-code bytes of all its functions.
    pub fn code_bytes(&self) -> u32 {
        self.code_bytes
    }

    /// Time spent lowering and compiling it.
    pub fn compile_time(&self) -> std::time::Duration {
        self.compile_time
    }

    /// Buffers for `capacity` records of this appender's columns (the spaces of lists of
    /// messages start as large and grow as needed).
    pub fn columns(&self, capacity: usize) -> ChunkColumns {
        ChunkColumns::new(self.id, &self.shape, capacity)
    }

    /// Appends `record` as the next row of `cols`: `true`, or `false` when the code
    /// declines it (malformed, or of a shape it leaves to the tree), and `cols` is as it
    /// was. Panics if `cols` was made by another appender or is full.
    pub fn append(&self, cols: &mut ChunkColumns, record: &[u8]) -> bool {
        assert_eq!(cols.appender, self.id, "columns of another appender");
        assert!(!cols.is_full(), "the chunk is full");
        // SAFETY: `root` is this appender's code, and the columns were made for it (the
        // id matched) and are not full.
        unsafe { cols.append(self.root, record) }
    }
}
