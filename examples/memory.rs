//! Memory per decoded payload: protojit's arena next to the heap bytes that prost,
//! prost-reflect and rust-protobuf hold for the same message (a counting global allocator).
//!
//! ```sh
//! cargo run --release --example memory        # prints a Markdown table (BENCHMARKS.md)
//! ```
//!
//! Per payload and decoder, live heap bytes after decoding into fresh state (what the
//! decoded message holds) and the number of allocations made. protojit's column is
//! `Arena::allocated_bytes()` (bytes held from the system, unused chunk space included) of a
//! fresh arena; the counted heap bytes of that decode are checked to match it, and decoding
//! the same payload again after `reset` allocates nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use prost_reflect::DynamicMessage;
use protojit::{Arena, EngineKind, EngineOptions};
use protojit_bench_support::{all_cases, prost_arm, RustProtobuf};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees hold; the counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Relaxed);
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Relaxed);
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Relaxed);
        LIVE.fetch_sub(l.size(), Relaxed);
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f`, keeps its result alive, and returns (live heap bytes it holds, allocations).
fn held<T>(f: impl FnOnce() -> T) -> (usize, usize, T) {
    let (live, n) = (LIVE.load(Relaxed), ALLOCS.load(Relaxed));
    let v = f();
    (LIVE.load(Relaxed).wrapping_sub(live), ALLOCS.load(Relaxed) - n, v)
}

fn kib(n: usize) -> String {
    if n < 10 * 1024 {
        format!("{n} B")
    } else {
        format!("{:.0} KiB", n as f64 / 1024.0)
    }
}

fn main() {
    let cases = all_cases();
    println!("| payload | bytes | protojit arena | ×payload | prost heap (allocs) | ×payload | prost_reflect heap (allocs) | ×payload | protobuf heap (allocs) | ×payload |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in &cases {
        let len = c.bytes.len();
        let x = |n: usize| format!("{:.2}", n as f64 / len as f64);
        let dec =
            c.schema.decoder_with_options(&c.message, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();

        let (heap, _, arena) = held(|| {
            let arena = Arena::new();
            dec.decode(&c.bytes, &arena).unwrap();
            arena
        });
        let arena_bytes = arena.allocated_bytes();
        assert!(heap.abs_diff(arena_bytes) <= 64 * 1024, "{}: counted {heap}, arena says {arena_bytes}", c.name);
        let mut arena = arena;
        arena.reset();
        let (again, _, ()) = held(|| {
            dec.decode(&c.bytes, &arena).unwrap();
        });
        assert_eq!(again, 0, "{}: decoding again after reset allocated", c.name);
        drop(arena);

        let prost = prost_arm(&c.message).map(|arm| {
            let (b, n, m) = held(|| arm.decode_hold(&c.bytes));
            drop(m);
            (b, n)
        });
        let desc = c.schema.pool().get_message_by_name(&c.message).unwrap();
        let (rb, rn, m) = held(|| DynamicMessage::decode(desc.clone(), c.bytes.as_slice()).unwrap());
        drop(m);
        let pb = RustProtobuf::new(c.schema.pool(), &c.message).ok().and_then(|rp| {
            let (b, n, m) = held(|| rp.decode(&c.bytes));
            m.ok().map(|_| (b, n))
        });
        let cell = |v: Option<(usize, usize)>| match v {
            Some((b, n)) => (format!("{} ({n})", kib(b)), x(b)),
            None => ("—".into(), "—".into()),
        };
        let (p, px) = cell(prost);
        let (r, rx) = cell(Some((rb, rn)));
        let (q, qx) = cell(pb);
        println!(
            "| {} | {len} | {} | {} | {p} | {px} | {r} | {rx} | {q} | {qx} |",
            c.name,
            kib(arena_bytes),
            x(arena_bytes)
        );
    }
}
