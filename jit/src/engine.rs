//! The engine: decodes one root message type into an arena, choosing compiled code or
//! the interpreter per message type.

use std::ptr::NonNull;
use std::sync::Arc;

use protojit_arena::{Arena, BlockMut, DecodeError, DecodeErrorKind, LayoutIndex, Layouts};

use crate::interp::Interp;
use crate::DecodeOptions;

/// Which engine decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EngineKind {
    /// Compiled code where the host is supported, the interpreter elsewhere.
    #[default]
    Auto,
    /// Compiled code (messages the lowering cannot handle fall back, counted in stats).
    Jit,
    /// The table interpreter only.
    Interpreter,
}

/// A ready decoder for one root message type.
pub struct Engine {
    layouts: Arc<Layouts>,
    root: LayoutIndex,
    options: DecodeOptions,
    kind: EngineKind,
}

impl Engine {
    /// An engine for `root` over `layouts`.
    pub fn new(layouts: Arc<Layouts>, root: LayoutIndex, options: DecodeOptions, kind: EngineKind) -> Engine {
        Engine { layouts, root, options, kind }
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

    /// Decodes `input` into a fresh root block in `arena`.
    pub fn decode(&self, input: &[u8], arena: &Arena) -> Result<NonNull<u8>, DecodeError> {
        if input.len() > u32::MAX as usize {
            return Err(DecodeError::new(DecodeErrorKind::InputTooLarge, 0));
        }
        let mut root = BlockMut::alloc(arena, self.layouts.get(self.root));
        let interp = Interp::new(&self.layouts, arena, input, &self.options);
        interp.message(&mut root, 0, input.len(), 0, None)?;
        Ok(root.as_ptr())
    }
}
