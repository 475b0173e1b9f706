//! Generates the `prost` arm of protojit's benchmarks from the same `.proto` files the other
//! arms load at run time:
//!
//! 1. protox compiles the schemas into a `FileDescriptorSet` (no `protoc` needed); the
//!    shared corpus's descriptor.proto comes from its protoc-made `descriptor.fds.bin`;
//! 2. `prost_build::Config::compile_fds` generates the message structs;
//! 3. pbjson-build generates serde impls (proto3 JSON) for the shared corpus's types, the
//!    prost + pbjson arm of the parse bench;
//! 4. this script generates, per message type, a `Checksum` impl over the prost structs
//!    (the same checksum every other arm computes over its own representation) and a
//!    table from full type name to a decoder arm.
//!
//! Schemas: the project's corpus (`corpus/schemas/`: dataset, embedded, sweeps, chain10)
//! and, when present, the shared public corpus at `<workspace>/../shared/corpus/`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use heck::{ToSnakeCase, ToUpperCamelCase};

// The one shared-corpus lookup, by path: making `protojit-corpus` a build-dependency would
// build it, prost-reflect and serde once more for the host.
#[allow(dead_code)]
#[path = "../../corpus/src/shared.rs"]
mod shared;
use protox::prost::Message;
use protox::prost_reflect::prost_types::field_descriptor_proto::{Label, Type};
use protox::prost_reflect::prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
};

const SHARED_PROTOS: &[&str] = &[
    "benchmarks.proto",
    "benchmark_message1_proto2.proto",
    "benchmark_message1_proto3.proto",
    "benchmark_message2.proto",
    "fileformat.proto",
    "osmformat.proto",
    "vector_tile.proto",
];
const CORPUS_PROTOS: &[&str] = &["dataset.proto", "embedded.proto", "sweeps.proto", "chain10.proto"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../..");
    let corpus = root.join("corpus/schemas");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../../corpus/src/shared.rs");
    let mut files: Vec<FileDescriptorProto> = Vec::new();
    for p in CORPUS_PROTOS {
        println!("cargo:rerun-if-changed={}", corpus.join(p).display());
    }
    files.extend(protox_compile(&corpus, CORPUS_PROTOS));

    let mut shared_found = false;
    if let Some(shared) = shared::shared_corpus_dir_in(&root) {
        shared_found = true;
        for p in SHARED_PROTOS {
            println!("cargo:rerun-if-changed={}", shared.join(p).display());
        }
        files.extend(protox_compile(&shared, SHARED_PROTOS));
        let fds_path = shared.join("descriptor.fds.bin");
        println!("cargo:rerun-if-changed={}", fds_path.display());
        let fds = FileDescriptorSet::decode(std::fs::read(&fds_path).expect("descriptor.fds.bin").as_slice())
            .expect("descriptor.fds.bin is a FileDescriptorSet");
        files.extend(fds.file);
    } else {
        println!(
            "cargo:warning=shared corpus not found at {}: the prost arm covers the project's corpus only",
            shared::shared_corpus_path_in(&root).display()
        );
    }
    // De-duplicate (imports may repeat a file).
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.name().to_owned()));

    let fds = FileDescriptorSet { file: files };
    let mut cfg = prost_build::Config::new();
    cfg.compile_well_known_types().include_file("_all.rs").out_dir(&out);
    cfg.compile_fds(fds.clone()).expect("prost-build");

    let code = generate_arms(&fds);
    std::fs::write(out.join("_arms.rs"), code).unwrap();
    let json_types = if shared_found { generate_serde(&fds, &out) } else { Vec::new() };
    std::fs::write(out.join("_json_arms.rs"), json_arms(&json_types)).unwrap();
    std::fs::write(out.join("_shared_found.rs"), format!("{shared_found}\n")).unwrap();
}

/// The shared corpus's packages: the ones the parse bench renders as JSON.
const SHARED_PACKAGES: &[&str] =
    &["benchmarks", "benchmarks.proto2", "benchmarks.proto3", "OSMPBF", "vector_tile", "google.protobuf"];

/// pbjson-build's serde impls (proto3 JSON) for the shared corpus's packages, each included
/// at the end of prost's file for its package; returns the (full name, Rust path) of every
/// message type that has them. The shared schemas use no well-known type (descriptor.proto is
/// the only `google.protobuf` file), so pbjson-types is not needed.
fn generate_serde(fds: &FileDescriptorSet, out: &Path) -> Vec<(String, String)> {
    let prefixes: Vec<String> = SHARED_PACKAGES.iter().map(|p| format!(".{p}")).collect();
    pbjson_build::Builder::new()
        .register_descriptors(&fds.encode_to_vec())
        .expect("pbjson-build reads the descriptor set")
        .out_dir(out)
        .build(&prefixes)
        .expect("pbjson-build");
    let mut types = Vec::new();
    for package in SHARED_PACKAGES {
        // prost-build and pbjson-build both name a package's file by its snake-cased parts.
        let stem = package.split('.').map(to_snake).collect::<Vec<_>>().join(".");
        let serde = format!("{stem}.serde.rs");
        assert!(out.join(&serde).exists(), "pbjson-build wrote no {serde}");
        let prost_file = out.join(format!("{stem}.rs"));
        let mut code = std::fs::read_to_string(&prost_file).unwrap_or_else(|e| panic!("{}: {e}", prost_file.display()));
        writeln!(code, "include!(concat!(env!(\"OUT_DIR\"), \"/{serde}\"));").unwrap();
        std::fs::write(&prost_file, code).unwrap();
    }
    let mut msgs = HashMap::new();
    let mut order = Vec::new();
    for file in fds.file.iter().filter(|f| SHARED_PACKAGES.contains(&f.package())) {
        let (fq, module) = package_paths(file.package());
        collect(&mut msgs, &mut order, &fq, &module, &file.message_type, file.syntax() == "proto3");
    }
    for fq in order {
        if !msgs[&fq].map_entry {
            types.push((fq[1..].to_owned(), msgs[&fq].path.clone()));
        }
    }
    types
}

/// The table from full type name to the prost + pbjson arm.
fn json_arms(types: &[(String, String)]) -> String {
    let mut code = String::from("// Generated by benches/support/build.rs: the prost + pbjson arms.\n");
    code.push_str("/// The prost + pbjson arm for message type `full_name`, if the generated code has it.\n");
    code.push_str(
        "pub fn pbjson_arm(full_name: &str) -> Option<Box<dyn crate::parse::JsonArm>> {\n    match full_name {\n",
    );
    for (name, path) in types {
        writeln!(code, "        {name:?} => Some(Box::new(crate::parse::Pbjson::<{path}>::default())),").unwrap();
    }
    code.push_str("        _ => None,\n    }\n}\n");
    code
}

/// The fully qualified name prefix (`.pkg` or empty) and the Rust module of a package.
fn package_paths(pkg: &str) -> (String, String) {
    let mut module = "crate::gen".to_string();
    for part in pkg.split('.').filter(|s| !s.is_empty()) {
        module.push_str("::");
        module.push_str(&to_snake(part));
    }
    let fq = if pkg.is_empty() { String::new() } else { format!(".{pkg}") };
    (fq, module)
}

fn protox_compile(dir: &Path, files: &[&str]) -> Vec<FileDescriptorProto> {
    let mut c = protox::Compiler::new([dir]).unwrap_or_else(|e| panic!("protox include {}: {e}", dir.display()));
    c.include_imports(true);
    c.open_files(files).unwrap_or_else(|e| panic!("protox cannot compile {files:?} in {}: {e}", dir.display()));
    c.file_descriptor_set().file
}

// prost-build's naming rules (prost-build 0.14 `ident.rs`, same `heck` version).
fn sanitize(ident: &str) -> String {
    match ident {
        "as" | "break" | "const" | "continue" | "else" | "enum" | "false" | "fn" | "for" | "if" | "impl" | "in"
        | "let" | "loop" | "match" | "mod" | "move" | "mut" | "pub" | "ref" | "return" | "static" | "struct"
        | "trait" | "true" | "type" | "unsafe" | "use" | "where" | "while" | "dyn" | "abstract" | "become" | "box"
        | "do" | "final" | "macro" | "override" | "priv" | "typeof" | "unsized" | "virtual" | "yield" | "async"
        | "await" | "try" | "gen" => format!("r#{ident}"),
        "_" | "super" | "self" | "Self" | "extern" | "crate" => format!("{ident}_"),
        s if s.starts_with(|c: char| c.is_numeric()) => format!("_{ident}"),
        _ => ident.to_string(),
    }
}
fn to_snake(s: &str) -> String {
    sanitize(&s.to_snake_case())
}
fn to_upper_camel(s: &str) -> String {
    sanitize(&s.to_upper_camel_case())
}

struct MsgInfo {
    /// Rust path from the crate's `gen` module, e.g. `gen::osmpbf::PrimitiveBlock`.
    path: String,
    /// Rust module holding the message's nested types and oneof enums.
    module: String,
    proto: DescriptorProto,
    proto3: bool,
    map_entry: bool,
}

fn collect(
    out: &mut HashMap<String, MsgInfo>,
    order: &mut Vec<String>,
    fq_parent: &str,
    module: &str,
    msgs: &[DescriptorProto],
    proto3: bool,
) {
    for m in msgs {
        let fq = format!("{fq_parent}.{}", m.name());
        let path = format!("{module}::{}", to_upper_camel(m.name()));
        let own_module = format!("{module}::{}", to_snake(m.name()));
        let map_entry = m.options.as_ref().is_some_and(|o| o.map_entry());
        collect(out, order, &fq, &own_module, &m.nested_type, proto3);
        order.push(fq.clone());
        out.insert(fq, MsgInfo { path, module: own_module, proto: m.clone(), proto3, map_entry });
    }
}

/// The checksum value (a `u64` expression) of scalar or message variable `x` (a reference).
fn value_expr(f: &FieldDescriptorProto, x: &str) -> String {
    match f.r#type() {
        Type::Double => format!("{x}.to_bits()"),
        Type::Float => format!("({x}.to_bits() as u64)"),
        Type::Int64 | Type::Sint64 | Type::Sfixed64 => format!("(*{x} as u64)"),
        Type::Uint64 | Type::Fixed64 => format!("(*{x})"),
        Type::Int32 | Type::Sint32 | Type::Sfixed32 | Type::Enum => format!("(*{x} as i64 as u64)"),
        Type::Uint32 | Type::Fixed32 => format!("(*{x} as u64)"),
        Type::Bool => format!("(*{x} as u64)"),
        Type::String | Type::Bytes => format!("crate::content_hash({x})"),
        Type::Message | Type::Group => format!("{x}.checksum()"),
    }
}

/// Whether scalar variable `x` (a reference) holds a non-default value (implicit presence).
fn nondefault_expr(f: &FieldDescriptorProto, x: &str) -> String {
    match f.r#type() {
        Type::Double | Type::Float => format!("{x}.to_bits() != 0"),
        Type::Bool => format!("*{x}"),
        Type::String | Type::Bytes => format!("!{x}.is_empty()"),
        Type::Message | Type::Group => "true".into(),
        _ => format!("*{x} != 0"),
    }
}

fn generate_arms(fds: &FileDescriptorSet) -> String {
    let mut msgs = HashMap::new();
    let mut order = Vec::new();
    for file in &fds.file {
        let (fq, module) = package_paths(file.package());
        collect(&mut msgs, &mut order, &fq, &module, &file.message_type, file.syntax() == "proto3");
    }

    let mut code = String::new();
    code.push_str("// Generated by benches/support/build.rs: checksum walks over the prost structs.\n");
    code.push_str("#[allow(unused_imports)]\nuse crate::{contrib, Checksum};\n\n");
    for fq in &order {
        let info = &msgs[fq];
        if info.map_entry {
            continue;
        }
        let m = &info.proto;
        writeln!(code, "impl Checksum for {} {{", info.path).unwrap();
        code.push_str(
            "    #[allow(unused_mut, deprecated)]\n    fn checksum(&self) -> u64 {\n        let mut acc = 0u64;\n",
        );
        let add = |n: i32, v: String| format!("acc = acc.wrapping_add(contrib({n}, {v}));");
        for f in &m.field {
            let name = to_snake(f.name());
            let n = f.number();
            if f.oneof_index.is_some() && !f.proto3_optional() {
                continue; // emitted with its oneof below
            }
            match f.label() {
                Label::Repeated => {
                    let entry = (f.r#type() == Type::Message).then(|| msgs.get(f.type_name())).flatten();
                    if let Some(e) = entry.filter(|e| e.map_entry) {
                        let kf = &e.proto.field[0];
                        let vf = &e.proto.field[1];
                        writeln!(
                            code,
                            "        for (k, v) in self.{name}.iter() {{ let e = contrib(1, {}).wrapping_add(contrib(2, {})); {} }}",
                            value_expr(kf, "k"),
                            value_expr(vf, "v"),
                            add(n, "e".into())
                        )
                        .unwrap();
                    } else {
                        writeln!(code, "        for x in self.{name}.iter() {{ {} }}", add(n, value_expr(f, "x")))
                            .unwrap();
                    }
                }
                Label::Required => {
                    writeln!(code, "        {{ let x = &self.{name}; {} }}", add(n, value_expr(f, "x"))).unwrap();
                }
                Label::Optional => {
                    let is_msg = matches!(f.r#type(), Type::Message | Type::Group);
                    let optional = f.proto3_optional() || is_msg || !info.proto3;
                    if optional {
                        writeln!(code, "        if let Some(x) = &self.{name} {{ {} }}", add(n, value_expr(f, "x")))
                            .unwrap();
                    } else {
                        writeln!(
                            code,
                            "        {{ let x = &self.{name}; if {} {{ {} }} }}",
                            nondefault_expr(f, "x"),
                            add(n, value_expr(f, "x"))
                        )
                        .unwrap();
                    }
                }
            }
        }
        for (oi, o) in m.oneof_decl.iter().enumerate() {
            let fields: Vec<&FieldDescriptorProto> =
                m.field.iter().filter(|f| f.oneof_index == Some(oi as i32) && !f.proto3_optional()).collect();
            if fields.is_empty() {
                continue; // synthetic oneof of a proto3 `optional` field
            }
            let conflict = m
                .nested_type
                .iter()
                .map(|t| t.name())
                .chain(m.enum_type.iter().map(|e| e.name()))
                .any(|t| to_upper_camel(t) == to_upper_camel(o.name()));
            let mut ty = to_upper_camel(o.name());
            if conflict {
                ty.push_str("OneOf");
            }
            writeln!(code, "        if let Some(o) = &self.{} {{ match o {{", to_snake(o.name())).unwrap();
            for f in fields {
                writeln!(
                    code,
                    "            {}::{ty}::{}(x) => {{ {} }}",
                    info.module,
                    to_upper_camel(f.name()),
                    add(f.number(), value_expr(f, "x"))
                )
                .unwrap();
            }
            code.push_str("        } }\n");
        }
        code.push_str("        acc\n    }\n}\n\n");
    }

    code.push_str("/// The prost arm for message type `full_name`, if the generated code has it.\n");
    code.push_str("pub fn prost_arm(full_name: &str) -> Option<Box<dyn crate::ProstArm>> {\n    match full_name {\n");
    for fq in &order {
        let info = &msgs[fq];
        if info.map_entry {
            continue;
        }
        writeln!(code, "        {:?} => Some(Box::new(crate::Arm::<{}>::default())),", &fq[1..], info.path).unwrap();
    }
    code.push_str("        _ => None,\n    }\n}\n");
    code
}
