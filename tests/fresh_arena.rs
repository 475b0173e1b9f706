//! Fresh arenas: once an engine has decoded a large message of its type, a decode into a
//! new arena takes one chunk of about the tree's size from the system, not a growing
//! series, and builds the same tree.
//!
//! A series of chunks freed after every decode made glibc give the heap back to the system
//! and fault it in again on the next decode (BENCHMARKS.md, the step table); this test
//! counts the large allocations of each decode with a per-thread counting allocator.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use protojit::{Arena, EngineKind, EngineOptions};

/// Counts, per thread, allocations of at least `LARGE` bytes (arena chunks; the decoders'
/// own small bookkeeping is not counted).
struct Counting;

const LARGE: usize = 4096;

thread_local! {
    // A `const` thread local without a destructor never allocates, so the allocator may use it.
    static LARGE_ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees hold; the counter is a thread-local cell that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() >= LARGE {
            let _ = LARGE_ALLOCS.try_with(|n| n.set(n.get() + 1));
        }
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Large allocations while `f` runs on this thread.
fn large_allocs<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let start = LARGE_ALLOCS.with(Cell::get);
    let v = f();
    (LARGE_ALLOCS.with(Cell::get) - start, v)
}

#[test]
fn a_fresh_arena_takes_one_chunk_once_the_engine_knows_its_trees() {
    let Some(dir) = common::corpus_dir("a_fresh_arena_takes_one_chunk_once_the_engine_knows_its_trees") else {
        return;
    };
    // A vector tile (tree ~6× its 101 KB) and an OSM block with long packed runs.
    let cases = [
        ("vector_tile.proto", "vector_tile.Tile", "mvt-sanfrancisco-15-5238-12666.mvt"),
        ("osmformat.proto", "OSMPBF.PrimitiveBlock", "liechtenstein.block40.primitiveblock-ways.bin"),
    ];
    for (proto, message, file) in cases {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let jit = schema.decoder_with_options(message, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
        let interp =
            schema.decoder_with_options(message, &EngineOptions::default().with_kind(EngineKind::Interpreter)).unwrap();
        let want = {
            let arena = Arena::new();
            interp.decode(&bytes, &arena).unwrap().to_dynamic()
        };

        let (first, ()) = large_allocs(|| {
            let arena = Arena::new();
            let tree = jit.decode(&bytes, &arena).unwrap();
            common::assert_dyn_eq(&tree.to_dynamic(), &want);
        });
        assert!(first > 1, "{file}: the first decode into a new arena took {first} chunks; the test needs a series");
        for round in 0..3 {
            let (n, held) = large_allocs(|| {
                let arena = Arena::new();
                jit.decode(&bytes, &arena).unwrap();
                arena.allocated_bytes()
            });
            assert_eq!(n, 1, "{file}, decode {round} after the first: {n} chunks (arena holds {held} bytes)");
            let arena = Arena::new();
            let tree = jit.decode(&bytes, &arena).unwrap();
            common::assert_dyn_eq(&tree.to_dynamic(), &want);
        }
    }
}
