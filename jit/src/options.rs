//! The engine's settings: which engine decodes ([`EngineKind`]), when tiering compiles
//! ([`Tiering`]), how Cranelift compiles ([`CompileOptions`]), and one engine's choice of
//! all that with the wire limits it decodes under ([`EngineOptions`]).

use protojit_arena::{DecodeOptions, LayoutIndex, Layouts, UnknownFields, Utf8Check};

/// Which engine decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EngineKind {
    /// Tiered (the default): every message type starts on the interpreter; a type whose
    /// interpreted decodes pass [`Tiering`]'s thresholds is compiled on a background
    /// thread and swapped in. No decode ever waits for the compiler, so one-shot work
    /// costs what the interpreter costs and long streams reach compiled speed.
    #[default]
    Auto,
    /// Every message type reachable from the root compiled before the first decode
    /// (benchmarks, tests). Types the lowering cannot handle, or a host without a
    /// backend, fall back to the interpreter; the engine's stats say which and why.
    Jit,
    /// The table interpreter only; nothing is compiled.
    #[cfg_attr(feature = "clap", value(alias = "interp"))]
    Interpreter,
}

/// When a tiered engine ([`EngineKind::Auto`]) compiles a message type: once the
/// interpreter has decoded `after_decodes` messages of that type, or `after_bytes` bytes
/// of them, whichever comes first.
///
/// The defaults queue a type early, so that most of a long stream runs compiled: the
/// compile runs on a background thread, and a one-shot decode never waits for it. Counting
/// stops when the type is queued. What a compile costs and saves (release build, one core
/// of an AMD EPYC, BENCHMARKS.md): about 0.3 ms per field of the type (0.2-0.65 ms; a
/// tiered root is compiled twice, alone and then with its children as one module), against
/// 0.1-0.8 ns saved per decoded byte (0.37 ns on google_message1), so a 40-field type
/// repays its compile only after tens of megabytes. When every core decodes, the compile
/// takes its time from them; where the caller knows how much input its decodes will read,
/// [`for_input`](Self::for_input) leaves out compiles that input cannot repay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tiering {
    /// Interpreted decodes of one type that make it hot.
    pub after_decodes: u64,
    /// Interpreted bytes of one type that make it hot.
    pub after_bytes: u64,
}

impl Default for Tiering {
    fn default() -> Self {
        Tiering { after_decodes: 1_000, after_bytes: 256 << 10 }
    }
}

/// Estimated compile time per field of a type, tiered (alone, then again in its root's
/// direct-call module): see [`Tiering`].
const COMPILE_NANOS_PER_FIELD: u64 = 2 * 300_000;

/// Estimated decode time saved per input byte by compiled code over the interpreter, in
/// thousandths of a nanosecond (0.4 ns: the middle of the corpus's 0.1-0.8 ns).
const SAVED_PICOS_PER_BYTE: u64 = 400;

impl Tiering {
    /// Thresholds no type reaches: every type stays on the interpreter.
    pub const NEVER: Tiering = Tiering { after_decodes: u64::MAX, after_bytes: u64::MAX };

    /// These thresholds for decodes that together read `input_bytes` bytes of `root`
    /// messages (a file whose size is known), or [`NEVER`](Self::NEVER) when that input is
    /// smaller than [`repaying_bytes`](Self::repaying_bytes): then compiling would cost
    /// more CPU time than the compiled code could save, and on a machine whose cores all
    /// decode it would make the run slower.
    ///
    /// ```
    /// # use protojit_jit::Tiering;
    /// // A message of 40 int32 fields.
    /// let fields: String = (1..=40).map(|n| format!("int32 f{n} = {n}; ")).collect();
    /// let source = format!("syntax = \"proto3\"; message M {{ {fields} }}");
    /// let layouts = protojit_arena::Layouts::new(&protojit_corpus::pool_from_source("m.proto", &source))?;
    /// let root = layouts.index_of("M").unwrap();
    /// // Compiling it repays itself only after some 60 MB of records.
    /// assert_eq!(Tiering::repaying_bytes(&layouts, root), 60_000_000);
    /// assert_eq!(Tiering::default().for_input(&layouts, root, 23_000_000), Tiering::NEVER);
    /// assert_eq!(Tiering::default().for_input(&layouts, root, 230_000_000), Tiering::default());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_input(self, layouts: &Layouts, root: LayoutIndex, input_bytes: u64) -> Tiering {
        if input_bytes >= Self::repaying_bytes(layouts, root) {
            self
        } else {
            Self::NEVER
        }
    }

    /// Bytes of `root` messages a tiered engine must decode before compiling the root type
    /// can pay for itself, by the estimates in [`Tiering`]'s description. It counts the
    /// root's own fields only: a lower bound, as the child types it reaches cost more.
    pub fn repaying_bytes(layouts: &Layouts, root: LayoutIndex) -> u64 {
        let fields = layouts.get(root).slots().len() as u64;
        (fields * COMPILE_NANOS_PER_FIELD).saturating_mul(1000) / SAVED_PICOS_PER_BYTE
    }
}

/// One engine's settings: the engine kind, the tiering thresholds (for
/// [`EngineKind::Auto`]) and the wire limits of its decodes. How code is compiled is the
/// schema-wide [`CompileOptions`] of [`Engines`](crate::Engines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Which engine decodes (default [`EngineKind::Auto`]: tiered).
    pub kind: EngineKind,
    /// When [`EngineKind::Auto`] compiles a message type (other kinds do not read it).
    pub tiering: Tiering,
    /// Depth limit and UTF-8 policy, which both engines honour.
    pub decode: DecodeOptions,
}

impl EngineOptions {
    /// The same options with another engine kind.
    pub fn with_kind(self, kind: EngineKind) -> Self {
        EngineOptions { kind, ..self }
    }

    /// The same options with other tiering thresholds.
    pub fn with_tiering(self, tiering: Tiering) -> Self {
        EngineOptions { tiering, ..self }
    }

    /// The same options with another UTF-8 policy.
    pub fn with_utf8(self, utf8: Utf8Check) -> Self {
        EngineOptions { decode: self.decode.with_utf8(utf8), ..self }
    }

    /// The same options with another depth limit (see [`DecodeOptions::with_max_depth`]).
    pub fn with_max_depth(self, max_depth: u32) -> Self {
        EngineOptions { decode: self.decode.with_max_depth(max_depth), ..self }
    }

    /// The same options with other wire limits.
    pub fn with_decode(self, decode: DecodeOptions) -> Self {
        EngineOptions { decode, ..self }
    }

    /// The same options with another unknown-field policy
    /// ([`DecodeOptions::with_unknown_fields`]).
    pub fn with_unknown_fields(self, unknown: UnknownFields) -> Self {
        EngineOptions { decode: self.decode.with_unknown_fields(unknown), ..self }
    }
}

/// Cranelift's optimisation level.
///
/// The lowering emits the code it wants (no redundant loads, constants folded by hand), so
/// Cranelift's e-graph pass finds little in it: [`OptLevel::None`] is the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    /// No optimisation passes.
    #[default]
    None,
    /// Optimise for speed.
    Speed,
    /// Optimise for speed and size.
    SpeedAndSize,
}

impl OptLevel {
    /// Cranelift's name for the level (its `opt_level` setting).
    pub fn as_str(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }
}

/// Cranelift's register allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Regalloc {
    /// The backtracking allocator: slower to compile, the faster code.
    #[default]
    Backtracking,
    /// The single-pass allocator: faster to compile; its code spills in hot loops.
    SinglePass,
}

impl Regalloc {
    /// Cranelift's name for the allocator (its `regalloc_algorithm` setting).
    pub fn as_str(self) -> &'static str {
        match self {
            Regalloc::Backtracking => "backtracking",
            Regalloc::SinglePass => "single_pass",
        }
    }
}

/// Settings for compilation, shared by every engine of one [`Engines`](crate::Engines).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Cranelift optimisation level.
    pub opt_level: OptLevel,
    /// Cranelift register allocator.
    pub regalloc: Regalloc,
    /// Keep each function's Cranelift IR in the stats. Also turned on by the environment
    /// variable `PROTOJIT_DUMP_CLIF` (any value), which prints it to stderr as well.
    pub keep_clif: bool,
    /// Message types with more fields than this run on the interpreter (bounds compile
    /// time and code size for huge generated schemas).
    pub max_fields: usize,
    /// Run Cranelift's IR verifier on every function. It catches lowering bugs at compile
    /// time, at a few percent of compile cost: on by default where debug assertions are
    /// (tests, fuzzing builds), off in release builds.
    pub verify: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            opt_level: OptLevel::None,
            regalloc: Regalloc::Backtracking,
            keep_clif: false,
            max_fields: 4096,
            verify: cfg!(debug_assertions),
        }
    }
}
