//! `Decoder`: a prepared decoder for one root message type.

use prost_reflect::MessageDescriptor;
use protojit_arena::stream::walk;
use protojit_arena::{Arena, DecodeError};
use protojit_jit::{Engine, EngineStats};
use protojit_reflect::{MessageRef, StreamVisitor, VisitorSink};

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

    /// A decoder over an engine built by hand, e.g. by [`Engines::engine`](crate::Engines::engine)
    /// of engines chosen by the caller.
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
    /// it lives no longer than both:
    ///
    /// ```compile_fail,E0505
    /// # let schema = protojit::Schema::from_proto_source("p.proto", "syntax = \"proto3\"; message P { string s = 1; }").unwrap();
    /// # let decoder = schema.decoder("P").unwrap();
    /// let arena = protojit::Arena::new();
    /// let message = decoder.decode(b"\x0a\x02hi", &arena).unwrap();
    /// drop(arena); // error[E0505]: the message borrows the arena
    /// assert_eq!(message.get("s").unwrap().as_str(), Some("hi"));
    /// ```
    ///
    /// ```compile_fail,E0505
    /// # let schema = protojit::Schema::from_proto_source("p.proto", "syntax = \"proto3\"; message P { string s = 1; }").unwrap();
    /// # let decoder = schema.decoder("P").unwrap();
    /// # let arena = protojit::Arena::new();
    /// let input = b"\x0a\x02hi".to_vec();
    /// let message = decoder.decode(&input, &arena).unwrap();
    /// drop(input); // error[E0505]: the message borrows the input
    /// assert_eq!(message.get("s").unwrap().as_str(), Some("hi"));
    /// ```
    ///
    /// Read first, then let them go:
    ///
    /// ```
    /// # let schema = protojit::Schema::from_proto_source("p.proto", "syntax = \"proto3\"; message P { string s = 1; }").unwrap();
    /// # let decoder = schema.decoder("P").unwrap();
    /// let (input, arena) = (b"\x0a\x02hi".to_vec(), protojit::Arena::new());
    /// let message = decoder.decode(&input, &arena).unwrap();
    /// assert_eq!(message.get("s").unwrap().as_str(), Some("hi"));
    /// drop((input, arena));
    /// ```
    #[inline]
    pub fn decode<'a>(&'a self, input: &'a [u8], arena: &'a Arena) -> Result<MessageRef<'a>, DecodeError> {
        Ok(MessageRef::new(self.engine.decode(input, arena)?))
    }

    /// Reads `input` without building a tree: `visitor`'s typed callbacks get each value
    /// as it comes off the wire, in wire order, every occurrence (see [`StreamVisitor`]
    /// for how that differs from a tree's [`Visitor`](crate::Visitor)). The same checks
    /// and errors as [`decode`](Self::decode), under the same options. Returns `Break` if
    /// a callback stopped the walk.
    ///
    /// Every engine kind walks with the table interpreter's walk, generic over the visitor
    /// so that its callbacks are inlined into it (faster than compiled code calling the
    /// visitor per value was: BENCHMARKS.md, "Streaming visitor").
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use protojit::{FieldInfo, StreamVisitor};
    ///
    /// # let schema = protojit::Schema::from_proto_source("p.proto", "syntax = \"proto3\"; message P { int64 n = 1; string s = 2; }").unwrap();
    /// let decoder = schema.decoder("P").unwrap();
    /// struct Sum(i64);
    /// impl<'a> StreamVisitor<'a> for Sum {
    ///     fn i64(&mut self, _: FieldInfo<'a>, v: i64) -> ControlFlow<()> {
    ///         self.0 += v;
    ///         ControlFlow::Continue(())
    ///     }
    /// }
    /// let mut sum = Sum(0);
    /// // n = 2, s = "hi", n = 3: both values of `n` come, in wire order.
    /// decoder.stream(b"\x08\x02\x12\x02hi\x08\x03", &mut sum).unwrap();
    /// assert_eq!(sum.0, 5);
    /// ```
    pub fn stream<'a, V: StreamVisitor<'a>>(
        &'a self,
        input: &'a [u8],
        visitor: &mut V,
    ) -> Result<std::ops::ControlFlow<()>, DecodeError> {
        let engine = &self.engine;
        let (layouts, root, options) = (&**engine.layouts(), engine.root(), &engine.options().decode);
        let mut sink = VisitorSink::new(layouts, root, visitor);
        walk(layouts, root, input, options, &mut sink, &mut ())
    }
}
