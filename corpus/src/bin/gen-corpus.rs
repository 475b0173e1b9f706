//! Writes protojit's generated benchmark corpus.
//!
//! `gen-corpus OUT_DIR` writes every payload as `OUT_DIR/<name>.bin` and an index,
//! `OUT_DIR/index.tsv` (name, family, schema file, message type, bytes).
//! `gen-corpus --write-schemas` regenerates the generated schema files (growth schemas and
//! the nesting chain) in `corpus/schemas/`.

use std::io::Write;
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: gen-corpus OUT_DIR | gen-corpus --write-schemas");
        std::process::exit(if args.is_empty() { 2 } else { 0 });
    }
    if args[0] == "--write-schemas" {
        for (name, text) in protojit_corpus::generated_schemas() {
            let path = protojit_corpus::schemas_dir().join(&name);
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            println!("wrote {}", path.display());
        }
        return;
    }
    let dir = PathBuf::from(&args[0]);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let mut index = std::fs::File::create(dir.join("index.tsv")).expect("index.tsv");
    writeln!(index, "name\tfamily\tproto\tmessage\tbytes").unwrap();
    let payloads = protojit_corpus::payloads();
    for p in &payloads {
        std::fs::write(dir.join(format!("{}.bin", p.name)), &p.bytes).expect("write payload");
        writeln!(index, "{}\t{}\t{}\t{}\t{}", p.name, p.family, p.proto, p.message, p.bytes.len()).unwrap();
    }
    println!("wrote {} payloads and index.tsv to {}", payloads.len(), dir.display());
}
