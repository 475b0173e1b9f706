//! `Decoder`: a prepared decoder for one root message type.

use prost_reflect::MessageDescriptor;
use protojit_arena::{Arena, DecodeError};
use protojit_jit::{Engine, EngineStats};
use protojit_reflect::MessageRef;

/// Decodes messages of one type. Cheap to share: `Send + Sync`, reusable across threads.
pub struct Decoder {
    engine: Engine,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("type", &self.descriptor().full_name())
            .field("engine", &self.engine.kind())
            .field("options", self.engine.options())
            .finish()
    }
}

impl Decoder {
    pub(crate) fn new(engine: Engine) -> Decoder {
        Decoder { engine }
    }

    /// A decoder over an engine built by hand (`raw::jit::Engine`), e.g. one sharing
    /// [`Tiers`](protojit_jit::Tiers) chosen by the caller.
    pub fn from_engine(engine: Engine) -> Decoder {
        Decoder { engine }
    }

    /// Per reachable message type: which engine decodes it (and why, for the
    /// interpreter), machine-code bytes and compile time.
    pub fn stats(&self) -> EngineStats {
        self.engine.stats()
    }

    /// The message type this decoder reads.
    pub fn descriptor(&self) -> &MessageDescriptor {
        self.engine.layouts().get(self.engine.root()).descriptor()
    }

    /// The engine underneath.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Decodes `input` into `arena`. The tree borrows strings and bytes from `input`, so
    /// it lives no longer than both.
    #[inline]
    pub fn decode<'a>(&'a self, input: &'a [u8], arena: &'a Arena) -> Result<MessageRef<'a>, DecodeError> {
        let root = self.engine.decode(input, arena)?;
        // SAFETY: the engine returned a finished root block of the root layout, allocated
        // in `arena`, pointing into `input` and `arena` only; all three outlive 'a. Strings
        // were validated iff the options say so.
        Ok(unsafe {
            MessageRef::from_raw(
                self.engine.layouts(),
                self.engine.root(),
                root,
                self.engine.options().utf8.proto3_checked(),
            )
        })
    }
}
