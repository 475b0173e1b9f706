//! Test schemas from `.proto` text: one file compiled in memory with protox, as every crate's tests need.

use prost_reflect::DescriptorPool;
use protox::file::{File, FileResolver, GoogleFileResolver};

/// The descriptor pool of one `.proto` file given as text, compiled in memory (imports:
/// protox's copies of the well-known types). The pool is decoded from the encoded set,
/// because protox's own pool does not report some options (proto2 `[packed = true]`).
///
/// Panics with protox's message if the file does not compile: a test schema is the
/// test's own code.
pub fn pool_from_source(name: &str, source: &str) -> DescriptorPool {
    // The resolver must be 'static (protox boxes it), so it owns its copy of the text.
    struct One {
        name: String,
        source: String,
        google: GoogleFileResolver,
    }
    impl FileResolver for One {
        fn open_file(&self, name: &str) -> Result<File, protox::Error> {
            if name == self.name {
                File::from_source(name, &self.source)
            } else {
                self.google.open_file(name)
            }
        }
    }
    let mut compiler = protox::Compiler::with_file_resolver(One {
        name: name.to_owned(),
        source: source.to_owned(),
        google: GoogleFileResolver::new(),
    });
    compiler.include_imports(true);
    compiler.open_file(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes = compiler.encode_file_descriptor_set();
    DescriptorPool::decode(bytes.as_slice()).unwrap_or_else(|e| panic!("{name}: {e}"))
}
