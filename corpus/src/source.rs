//! Test schemas from `.proto` text: files compiled in memory with protox, as every crate's tests need.

use prost_reflect::DescriptorPool;
use protox::file::{File, FileResolver, GoogleFileResolver};

/// The descriptor pool of one `.proto` file given as text ([`pool_from_sources`]).
pub fn pool_from_source(name: &str, source: &str) -> DescriptorPool {
    pool_from_sources(&[(name, source)])
}

/// The descriptor pool of `.proto` files given as (name, text), compiled in memory; they
/// may import each other and the well-known types (protox's copies). The pool is decoded
/// from the encoded set, because protox's own pool does not report some options (proto2
/// `[packed = true]`).
///
/// Panics with protox's message if a file does not compile: a test schema is the test's
/// own code.
pub fn pool_from_sources(files: &[(&str, &str)]) -> DescriptorPool {
    // The resolver must be 'static (protox boxes it), so it owns its copy of the texts.
    struct Texts {
        files: Vec<(String, String)>,
        google: GoogleFileResolver,
    }
    impl FileResolver for Texts {
        fn open_file(&self, name: &str) -> Result<File, protox::Error> {
            match self.files.iter().find(|(n, _)| n == name) {
                Some((n, text)) => File::from_source(n, text),
                None => self.google.open_file(name),
            }
        }
    }
    let texts = Texts {
        files: files.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect(),
        google: GoogleFileResolver::new(),
    };
    let mut compiler = protox::Compiler::with_file_resolver(texts);
    compiler.include_imports(true);
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    compiler.open_files(&names).unwrap_or_else(|e| panic!("{names:?}: {e}"));
    let bytes = compiler.encode_file_descriptor_set();
    DescriptorPool::decode(bytes.as_slice()).unwrap_or_else(|e| panic!("{names:?}: {e}"))
}
