//! `Schema`: message types loaded at run time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost_reflect::DescriptorPool;
use protojit_arena::{DeclaredFeatures, LayoutError, Layouts, PoolFeatures};
use protojit_jit::{CompileOptions, EngineOptions, Engines};

use crate::editions::{lower_descriptor_set, EditionsError};
use crate::Decoder;

/// Why a schema could not be loaded or a type not found.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The bytes are not a valid `FileDescriptorSet`.
    #[error("{origin} is not a valid FileDescriptorSet ({source}); pass a file written by `protoc --descriptor_set_out` / `protoc -o`, or use .proto files instead")]
    DescriptorSet {
        /// Where the bytes came from.
        origin: String,
        /// The reason.
        source: prost_reflect::DescriptorError,
    },
    /// `.proto` files did not compile.
    #[error("{message}")]
    Compile {
        /// What the compiler said, with a hint.
        message: String,
    },
    /// No message type with that name.
    #[error("no message type `{name}` in the schema{hint}")]
    UnknownType {
        /// The name asked for.
        name: String,
        /// Suggestions (may be empty).
        hint: String,
    },
    /// A short name matches several types.
    #[error("message type name `{name}` is ambiguous: {candidates}; use the full name")]
    AmbiguousType {
        /// The name asked for.
        name: String,
        /// The matching full names.
        candidates: String,
    },
    /// A `FileDescriptorSet` uses something the descriptor library cannot load.
    #[error("{origin}: {reason}")]
    Unsupported {
        /// Where the bytes came from.
        origin: String,
        /// What is not supported.
        reason: String,
    },
    /// A layout could not be computed.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The editions loader refused the set: an unknown syntax, an edition or a feature
    /// value this build does not know, or bytes it cannot walk. Refused, never misread.
    #[error("{origin}: {source}")]
    Editions {
        /// Where the bytes came from.
        origin: String,
        /// What is not supported, in which file and element, and what to do (boxed: it
        /// is large, and every `Result` carrying a `SchemaError` would be as large).
        source: Box<EditionsError>,
    },
}

/// A set of message types loaded at run time, with their layouts.
#[derive(Clone, Debug)]
pub struct Schema {
    layouts: Arc<Layouts>,
    /// The schema's engines: compile options, the tiers every tiered decoder shares and the
    /// eagerly compiled code per root type, shared by clones of the schema.
    engines: Arc<Engines>,
    /// What loading had to say that is not an error (see [`Schema::notes`]).
    notes: Vec<String>,
}

impl Schema {
    /// A schema from a descriptor pool, its files read as the proto2 and proto3 files they
    /// say they are (a pool cannot hold editions files: load those with
    /// [`from_descriptor_set`](Self::from_descriptor_set)).
    pub fn from_pool(pool: &DescriptorPool) -> Result<Schema, SchemaError> {
        Self::from_pool_with(pool, &DeclaredFeatures::default())
    }

    /// A schema from a pool whose editions files the loader lowered, with their features.
    fn from_pool_with(pool: &DescriptorPool, declared: &DeclaredFeatures) -> Result<Schema, SchemaError> {
        let features = PoolFeatures::new(pool, declared).map_err(LayoutError::from)?;
        let layouts = Arc::new(Layouts::with_features(features)?);
        Ok(Schema {
            layouts: layouts.clone(),
            engines: Arc::new(Engines::new(layouts, CompileOptions::default())),
            notes: Vec::new(),
        })
    }

    /// What loading the schema had to say that is not an error, one sentence each, for the
    /// caller to show or not (the library itself never prints). Today the only note is that
    /// protox could not compile the `.proto` files (with protox's reason) and protoc was
    /// used instead; see [`from_proto_files`](Self::from_proto_files).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// A schema from the bytes of a serialized `FileDescriptorSet`.
    pub fn from_descriptor_set(bytes: &[u8]) -> Result<Schema, SchemaError> {
        Self::descriptor_set(bytes, "input")
    }

    fn descriptor_set(bytes: &[u8], origin: &str) -> Result<Schema, SchemaError> {
        let mut pool = DescriptorPool::new();
        let mut declared = DeclaredFeatures::default();
        add_descriptor_set(&mut pool, &mut declared, bytes, origin)?;
        Self::from_pool_with(&pool, &declared)
    }

    /// A schema from one or more `FileDescriptorSet` files (later files may depend on
    /// earlier ones).
    pub fn from_descriptor_set_files(paths: &[impl AsRef<Path>]) -> Result<Schema, SchemaError> {
        let mut pool = DescriptorPool::new();
        let mut declared = DeclaredFeatures::default();
        for path in paths {
            let path = path.as_ref();
            let bytes = std::fs::read(path).map_err(|source| SchemaError::Io { path: path.to_owned(), source })?;
            add_descriptor_set(&mut pool, &mut declared, &bytes, &path.display().to_string())?;
        }
        Self::from_pool_with(&pool, &declared)
    }

    /// A schema from `.proto` files, resolving imports through `includes` (and the
    /// well-known types). With no include directories, each file's own directory is used.
    ///
    /// Compiles with protox; when protox rejects a file (it lags protoc on the newest
    /// syntax) and a `protoc` is on `PATH` (or in `$PROTOC`), compiles with protoc instead
    /// and says so in [`notes`](Self::notes). protox cannot parse editions files
    /// (`edition = "2023";`): they always take this path, and need protoc 27 or newer
    /// (edition 2024: protoc 32), checked with `protoc --version` first; an older or missing
    /// protoc is a [`SchemaError::Compile`] that says what to install or pass instead.
    pub fn from_proto_files(files: &[impl AsRef<Path>], includes: &[impl AsRef<Path>]) -> Result<Schema, SchemaError> {
        let files: Vec<PathBuf> = files.iter().map(|f| f.as_ref().to_owned()).collect();
        let mut includes: Vec<PathBuf> = includes.iter().map(|i| i.as_ref().to_owned()).collect();
        for f in &files {
            if !f.exists() {
                return Err(SchemaError::Io {
                    path: f.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
                });
            }
        }
        if includes.is_empty() {
            for f in &files {
                let dir = f.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_owned();
                if !includes.contains(&dir) {
                    includes.push(dir);
                }
            }
        }
        let compiled = protox::Compiler::new(&includes).and_then(|mut c| {
            c.include_imports(true);
            c.open_files(&files)?;
            Ok(c.encode_file_descriptor_set())
        });
        match compiled {
            // Through the encoded set rather than protox's in-memory pool: that pool does
            // not see field options such as `[packed = ...]` (its `is_packed` follows the
            // syntax only), which the encoder and the layouts rely on.
            Ok(bytes) => Self::descriptor_set(&bytes, "protox output"),
            Err(err) => {
                let protox_msg = one_line(&format!("{err}"));
                // protox parses proto2 and proto3 only: an editions file needs a protoc that
                // knows its edition, checked first so that an old one is named, not run.
                if let Some((file, edition)) = first_edition(&files, &includes) {
                    if let Err(message) = check_protoc_for_edition(&file, &edition) {
                        return Err(SchemaError::Compile { message });
                    }
                }
                match compile_with_protoc(&files, &includes) {
                    ProtocResult::Compiled(bytes) => {
                        let mut schema = Self::descriptor_set(&bytes, "protoc output")?;
                        schema.notes.push(format!(
                            "protox could not compile the schema ({protox_msg}); compiled it with protoc instead"
                        ));
                        Ok(schema)
                    }
                    ProtocResult::Failed(protoc_msg) => Err(SchemaError::Compile {
                        message: format!("cannot compile the schema: {protoc_msg} (protox said: {protox_msg})"),
                    }),
                    ProtocResult::NotFound => Err(SchemaError::Compile {
                        message: format!(
                            "cannot compile the schema: {protox_msg}; if the file is valid for protoc, install protoc (it is used when found on PATH) or pass a descriptor set from `protoc --include_imports -o FILE.pb`"
                        ),
                    }),
                }
            }
        }
    }

    /// A schema from `.proto` source text held in memory (imports resolve to the
    /// well-known types only).
    pub fn from_proto_source(name: &str, source: &str) -> Result<Schema, SchemaError> {
        let dir = std::env::temp_dir().join(format!("protojit-src-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).map_err(|source| SchemaError::Io { path: dir.clone(), source })?;
        let path = dir.join(name);
        let result = std::fs::write(&path, source)
            .map_err(|source| SchemaError::Io { path: path.clone(), source })
            .and_then(|()| Self::from_proto_files(&[&path], &[&dir]));
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    /// The descriptor pool.
    pub fn pool(&self) -> &DescriptorPool {
        self.layouts.pool()
    }

    /// The layouts of every message type.
    pub fn layouts(&self) -> &Arc<Layouts> {
        &self.layouts
    }

    /// Full names of every message type (map entries excluded).
    pub fn message_names(&self) -> Vec<String> {
        self.pool().all_messages().filter(|m| !m.is_map_entry()).map(|m| m.full_name().to_owned()).collect()
    }

    /// Resolves a full name (leading dot optional) or a unique short name, by the rule of
    /// [`Layouts::find_type`] (which typed handles follow too).
    pub fn resolve_type(&self, name: &str) -> Result<String, SchemaError> {
        let name = name.trim_start_matches('.');
        let matches: Vec<String> = match self.layouts.find_type(name) {
            Ok(li) => return Ok(self.layouts.get(li).descriptor().full_name().to_owned()),
            Err(found) => found.iter().map(|&li| self.layouts.get(li).descriptor().full_name().to_owned()).collect(),
        };
        match matches.len() {
            0 => {
                let names = self.message_names();
                let mut scored: Vec<(usize, &String)> = names
                    .iter()
                    .map(|n| {
                        (
                            edit_distance(&n.to_lowercase(), &name.to_lowercase())
                                .min(edit_distance(n.rsplit('.').next().unwrap_or(n), name)),
                            n,
                        )
                    })
                    .collect();
                scored.sort();
                let close: Vec<String> = scored
                    .iter()
                    .take(3)
                    .filter(|(d, _)| *d <= name.len().max(3) / 2 + 1)
                    .map(|(_, n)| format!("`{n}`"))
                    .collect();
                let hint =
                    if close.is_empty() { String::new() } else { format!("; did you mean {}?", close.join(", ")) };
                Err(SchemaError::UnknownType { name: name.to_owned(), hint })
            }
            _ => Err(SchemaError::AmbiguousType {
                name: name.to_owned(),
                candidates: matches.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// A decoder for message type `name` (full or unique short name), default options:
    /// tiered ([`EngineKind::Auto`](crate::EngineKind::Auto)), so it is ready at once and
    /// compiles the types that turn out hot in the background.
    pub fn decoder(&self, name: &str) -> Result<Decoder, SchemaError> {
        self.decoder_with_options(name, &EngineOptions::default())
    }

    /// A decoder for message type `name` with the engine kind, tiering thresholds, depth
    /// limit and UTF-8 checking of `options`.
    pub fn decoder_with_options(&self, name: &str, options: &EngineOptions) -> Result<Decoder, SchemaError> {
        let full = self.resolve_type(name)?;
        let root = self.layouts.index_of(&full).expect("resolved names exist");
        Ok(Decoder::new(self.engines.engine(root, options)))
    }

    /// The same schema compiling with `options` (Cranelift's settings, IR kept or not, the
    /// field limit): its decoders get new tiers and code, compiled with them.
    pub fn with_compile_options(self, options: CompileOptions) -> Schema {
        let engines = Arc::new(Engines::new(self.layouts.clone(), options));
        Schema { engines, ..self }
    }

    /// The compile options its decoders' code is compiled with.
    pub fn compile_options(&self) -> &CompileOptions {
        self.engines.compile_options()
    }

    /// The schema's engines: the tiers and compiled code its decoders share.
    pub fn engines(&self) -> &Arc<Engines> {
        &self.engines
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + (ca != *cb) as usize).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The first file among `files` and what they import (transitively, resolved against
/// `includes` as protoc resolves them) that declares an edition, and the edition: a proto3
/// file that imports an editions file needs an editions-capable protoc as much as the
/// editions file does. Imports that resolve to no file are left to the compiler to report.
fn first_edition(files: &[PathBuf], includes: &[PathBuf]) -> Option<(PathBuf, String)> {
    let mut queue: std::collections::VecDeque<PathBuf> = files.iter().cloned().collect();
    let mut seen: std::collections::HashSet<PathBuf> = queue.iter().cloned().collect();
    while let Some(path) = queue.pop_front() {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        if let Some(edition) = declared_edition(&text) {
            return Some((path, edition));
        }
        for import in imports(&text) {
            let found = includes.iter().map(|dir| dir.join(&import)).find(|p| p.is_file());
            if let Some(found) = found {
                if seen.insert(found.clone()) {
                    queue.push_back(found);
                }
            }
        }
    }
    None
}

/// The paths a `.proto` file's `import` statements name (`import "a.proto";`, `import
/// public …`, `import weak …`), statement by statement outside comments.
fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for statement in statements(text) {
        let Some(rest) = statement.strip_prefix("import") else { continue };
        if !rest.starts_with(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            continue;
        }
        let rest = rest.trim_start();
        let rest = ["public", "weak", "option"]
            .iter()
            .find_map(|w| rest.strip_prefix(w).filter(|r| r.starts_with(char::is_whitespace)))
            .map_or(rest, str::trim_start);
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
        if let Some(end) = rest[1..].find(quote) {
            out.push(rest[1..1 + end].to_owned());
        }
    }
    out
}

/// The lines of `text` with comments removed, trimmed, empty ones skipped: enough to find
/// the `syntax`/`edition` and `import` statements, which protoc requires at the top level.
fn statements(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut line = line.trim();
        if in_block {
            let Some(end) = line.find("*/") else { continue };
            line = line[end + 2..].trim();
            in_block = false;
        }
        while let Some(start) = line.find("/*") {
            match line[start + 2..].find("*/") {
                Some(end) if start == 0 => line = line[start + 2 + end + 2..].trim(),
                Some(_) => break,
                None => {
                    in_block = true;
                    line = line[..start].trim();
                    break;
                }
            }
        }
        if let Some(i) = line.find("//") {
            line = line[..i].trim();
        }
        if !line.is_empty() {
            out.push(line);
        }
    }
    out
}

/// The edition a `.proto` file's text declares (`edition = "2023";`), if it declares one:
/// the first statement that is not a comment says `edition` or `syntax`.
fn declared_edition(text: &str) -> Option<String> {
    let line = *statements(text).first()?;
    let rest = line.strip_prefix("edition")?.trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    Some(value[..value.find(quote)?].to_owned())
}

/// The oldest protoc that compiles `edition` without `--experimental_editions`: 2023 became
/// generally available in protoc 27.0, 2024 in 32.0. An edition this table does not know
/// needs at least the newest known minimum (protoc then decides, and the loader refuses an
/// edition it does not implement).
fn min_protoc_for(edition: &str) -> u32 {
    match edition {
        "2023" => 27,
        _ => 32,
    }
}

/// The `libprotoc X.Y` version `protoc --version` prints, as (major, minor); the 3.x series
/// (before protoc 22) reads as major 3.
fn protoc_version(protoc: &Path) -> Result<Option<(u32, u32, String)>, String> {
    let out = match std::process::Command::new(protoc).arg("--version").output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} could not run: {e}", protoc.display())),
        Ok(o) => o,
    };
    let text = one_line(&String::from_utf8_lossy(&out.stdout));
    let version = text.strip_prefix("libprotoc ").unwrap_or(&text);
    let mut parts = version.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty());
    match (parts.next().and_then(|p| p.parse().ok()), parts.next().and_then(|p| p.parse().ok())) {
        (Some(major), minor) => Ok(Some((major, minor.unwrap_or(0), text))),
        _ => Err(format!("`{} --version` printed {text:?}, not a protoc version", protoc.display())),
    }
}

/// The protoc of `$PROTOC` (else `protoc` on `PATH`).
fn protoc_path() -> PathBuf {
    std::env::var_os("PROTOC").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("protoc"))
}

/// Whether the protoc [`compile_with_protoc`] would run can compile `file`, written in
/// `edition`; else the one line that says what to install or do instead.
fn check_protoc_for_edition(file: &Path, edition: &str) -> Result<(), String> {
    let need = min_protoc_for(edition);
    let protoc = protoc_path();
    let instead = format!(
        "install protoc {need} or newer (or point $PROTOC at one; the grpcio-tools Python package bundles one: \
         `python -m grpc_tools.protoc`), or load a descriptor set made by such a protoc or by buf \
         (`protoc --include_imports -o set.pb {}`)",
        file.display()
    );
    let found = match protoc_version(&protoc)? {
        None if std::env::var_os("PROTOC").is_some() => {
            format!("$PROTOC names {}, which does not exist", protoc.display())
        }
        None => "no protoc on PATH".to_owned(),
        Some((major, _, _)) if major >= need => return Ok(()),
        Some((_, _, text)) => format!("found {text} at {}", protoc.display()),
    };
    Err(format!(
        "{} uses edition {edition}, which protox cannot parse and which needs protoc {need} or newer ({found}): {instead}",
        file.display()
    ))
}

enum ProtocResult {
    Compiled(Vec<u8>),
    Failed(String),
    NotFound,
}

/// Compiles with `protoc` from `PATH` (or `$PROTOC`) into a temporary descriptor set.
fn compile_with_protoc(files: &[PathBuf], includes: &[PathBuf]) -> ProtocResult {
    let protoc = protoc_path();
    let out = std::env::temp_dir().join(format!("protojit-protoc-{}-{}.pb", std::process::id(), unique()));
    let mut cmd = std::process::Command::new(&protoc);
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    cmd.arg("--include_imports").arg(format!("--descriptor_set_out={}", out.display())).args(files);
    match cmd.output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => ProtocResult::NotFound,
        Err(e) => ProtocResult::Failed(format!("protoc could not run: {e}")),
        Ok(o) if o.status.success() => match std::fs::read(&out) {
            Ok(bytes) => {
                let _ = std::fs::remove_file(&out);
                ProtocResult::Compiled(bytes)
            }
            Err(e) => ProtocResult::Failed(format!("protoc wrote no descriptor set: {e}")),
        },
        Ok(o) => ProtocResult::Failed(format!("protoc: {}", one_line(&String::from_utf8_lossy(&o.stderr)))),
    }
}

/// Adds the files of a serialized `FileDescriptorSet` to `pool`, and the features of its
/// editions files to `declared`.
///
/// prost-reflect 0.16 knows proto2 and proto3 only (it panics on `syntax = "editions"`), so
/// the set goes through the editions loader first: it refuses unknown syntaxes, editions
/// and feature values, and rewrites each editions file as proto2, its features kept beside
/// in `declared` (see `editions.rs`). Any other panic of the descriptor library is caught
/// and reported as the set being unsupported, never passed on to the caller.
fn add_descriptor_set(
    pool: &mut DescriptorPool,
    declared: &mut DeclaredFeatures,
    bytes: &[u8],
    origin: &str,
) -> Result<(), SchemaError> {
    let lowered = match lower_descriptor_set(bytes) {
        Ok(lowered) => lowered,
        // Bytes the walk finds malformed go to the descriptor library, whose error says more
        // (or which is laxer), unless a file in them declares a syntax it panics on.
        Err(source @ EditionsError::Malformed { .. }) if declares_other_syntax(bytes) => {
            return Err(SchemaError::Editions { origin: origin.to_owned(), source: Box::new(source) })
        }
        Err(EditionsError::Malformed { .. }) => return decode_into(pool, bytes, origin),
        Err(source) => return Err(SchemaError::Editions { origin: origin.to_owned(), source: Box::new(source) }),
    };
    decode_into(pool, &lowered.bytes, origin)?;
    let d = lowered.declared;
    declared.files.extend(d.files);
    declared.messages.extend(d.messages);
    declared.enums.extend(d.enums);
    declared.extensions.extend(d.extensions);
    Ok(())
}

/// Whether a file of `bytes`, as prost-types reads them, declares a syntax other than proto2
/// and proto3 (prost-reflect 0.16 panics on those, "editions" included). Bytes prost-types
/// cannot read are no risk: prost-reflect cannot read them either, and says why.
fn declares_other_syntax(bytes: &[u8]) -> bool {
    use prost::Message;
    prost_types::FileDescriptorSet::decode(bytes)
        .is_ok_and(|s| s.file.iter().any(|f| !matches!(f.syntax.as_deref(), None | Some("proto2" | "proto3"))))
}

fn decode_into(pool: &mut DescriptorPool, bytes: &[u8], origin: &str) -> Result<(), SchemaError> {
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.decode_file_descriptor_set(bytes)));
    match decoded {
        Ok(result) => result.map_err(|source| SchemaError::DescriptorSet { origin: origin.to_owned(), source }),
        Err(_) => Err(SchemaError::Unsupported {
            origin: origin.to_owned(),
            reason: "the descriptor library failed on this FileDescriptorSet (a bug it has); check the set with \
                     `protoc --decode=google.protobuf.FileDescriptorSet`"
                .to_owned(),
        }),
    }
}
