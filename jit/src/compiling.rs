//! `Compiling<T>`: a compiled product made on the background compiler (or on its caller), there once compiled or with why it could not be.

use std::sync::OnceLock;

use protojit_arena::Layouts;

use crate::columns::{Appender, ColumnPlan};
use crate::options::CompileOptions;

/// A compiled product made on the background compiler (or on the caller): there once
/// compiled, or why it could not be.
pub struct Compiling<T> {
    cell: OnceLock<Result<T, String>>,
}

impl<T> std::fmt::Debug for Compiling<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.cell.get() {
            None => "compiling",
            Some(Ok(_)) => "compiled",
            Some(Err(_)) => "failed",
        };
        f.debug_struct("Compiling").field("state", &state).finish()
    }
}

impl<T> Compiling<T> {
    pub(crate) fn new() -> Compiling<T> {
        Compiling { cell: OnceLock::new() }
    }

    /// The product once compiled (or why compiling it failed); `None` while it compiles.
    pub fn get(&self) -> Option<Result<&T, &str>> {
        self.cell.get().map(|r| r.as_ref().map_err(String::as_str))
    }

    /// Waits until it is compiled (or failed).
    pub fn wait(&self) -> Result<&T, &str> {
        self.cell.wait().as_ref().map_err(String::as_str)
    }
}

impl Compiling<Appender> {
    /// Compiles the appenders of `plan` into this cell, unless it holds them already. A
    /// panic in the compiler leaves the reason, never an empty cell a caller would wait on.
    pub(crate) fn compile_appender(&self, layouts: &Layouts, plan: &ColumnPlan, options: &CompileOptions) {
        if self.cell.get().is_some() {
            return;
        }
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Appender::compile(layouts, plan, options).map_err(|e| format!("compiling the column appenders failed: {e}"))
        }));
        let _ = self.cell.set(compiled.unwrap_or_else(|_| Err("compiling the column appenders panicked".to_owned())));
    }
}
