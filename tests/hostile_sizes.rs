//! Hostile sizes: adversarial inputs must not make either engine allocate more heap than the input justifies.
//!
//! A counting global allocator records, per thread, the peak of live heap bytes while one
//! decode runs (the arena is heap memory too: it takes its chunks from the global
//! allocator). Every case must stay within
//!
//! ```text
//! peak <= (largest block size of the schema / 2) * input length + SLACK
//! ```
//!
//! the bound protojit's design promises ("never an allocation larger than the input
//! justifies"): the worst honest input is a run of 2-byte empty submessages, each of which
//! needs one block.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use protojit::{Arena, Decoder, EngineKind, EngineOptions, Schema};

/// Counts live heap bytes and their peak per thread: the test harness runs tests on
/// several threads at once, and each case measures only its own decode.
struct Counting;

thread_local! {
    // `const` thread locals without destructors never allocate and are never torn down,
    // so the allocator may use them.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees hold; the counters are thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        add(l.size() as isize);
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        add(l.size() as isize);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        add(-(l.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // Old and new blocks may both be live during the copy.
        add(new as isize);
        add(-(l.size() as isize));
        // SAFETY: as above.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Peak heap bytes (above what was live before) while `f` runs on this thread; everything
/// `f` allocates, the arena included, is freed before it returns.
fn peak_of<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let v = f();
    ((PEAK.with(Cell::get) - start) as usize, v)
}

/// A message with a large block (200 scalar fields) that holds itself repeated, singular
/// and in a group, packed runs of both widths, and bytes. Field 1 has a one-byte tag, so an
/// empty element of `children` costs two input bytes.
fn schema_source() -> String {
    let mut s = String::from(
        r#"syntax = "proto2";
package hostile;
message Big {
  repeated Big children = 1;
  optional Big child = 2;
  repeated int64 packed_varint = 3 [packed = true];
  repeated fixed64 packed_fixed = 4 [packed = true];
  optional bytes data = 5;
  optional group G = 6 { optional Big big = 7; }
"#,
    );
    for n in 10..210 {
        s.push_str(&format!("  optional int32 f{n} = {n};\n"));
    }
    s.push_str("}\n");
    s
}

struct Fixture {
    decoders: [Decoder; 2],
    /// The largest block of any message type of the schema, in bytes.
    largest_block: usize,
    /// What the allocator holds for an arena's first chunk (none: the inline block serves it).
    first_chunk: usize,
}

fn fixture() -> Fixture {
    let schema = Schema::from_proto_source("hostile.proto", &schema_source()).unwrap();
    let largest_block = schema.layouts().iter().map(|(_, l)| l.size() as usize).max().unwrap();
    let decoders = [EngineKind::Jit, EngineKind::Interpreter]
        .map(|kind| schema.decoder_with_options("hostile.Big", &EngineOptions::default().with_kind(kind)).unwrap());
    assert_eq!(decoders[0].stats().interpreted(), 0, "Big must be compiled");
    let (first_chunk, _) = peak_of(|| {
        let arena = Arena::new();
        arena.alloc_zeroed(8);
    });
    Fixture { decoders, largest_block, first_chunk }
}

/// The bound every decode must keep, for an input of `len` bytes.
///
/// The constant: 64 KiB for the decoders' own bookkeeping outside the arena (an error
/// value, the interpreter's and the unknown-field recorder's small vectors), plus the
/// arena's first chunk, which an arena takes for its first allocation however small the
/// input is.
fn bound(fx: &Fixture, len: usize) -> usize {
    fx.largest_block / 2 * len + 64 * 1024 + fx.first_chunk
}

/// Decodes `input` with both engines into fresh arenas; checks the outcome (`ok`: decodes,
/// or is rejected) and then the bound; returns the larger peak. Prints both peaks first, so a
/// failing (or ignored) case still shows its figures.
fn check(fx: &Fixture, what: &str, input: &[u8], ok: bool) -> usize {
    let limit = bound(fx, input.len());
    let peaks = fx.decoders.each_ref().map(|decoder| {
        let (peak, result) = peak_of(|| {
            let arena = Arena::new();
            decoder.decode(input, &arena).map(|_| ()).map_err(|e| e.kind)
        });
        let engine = decoder.engine().kind();
        assert_eq!(result.is_ok(), ok, "{what} ({engine:?}): {result:?}");
        println!(
            "{what} ({engine:?}): peak {peak} bytes for {} input bytes ({:.1} x input), bound {limit} ({:.2} x bound)",
            input.len(),
            peak as f64 / input.len() as f64,
            peak as f64 / limit as f64
        );
        peak
    });
    let worst = peaks[0].max(peaks[1]);
    assert!(worst <= limit, "{what}: peak {worst} bytes exceeds the bound {limit}");
    worst
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

const TWO_GIB: u64 = 1 << 31;

#[test]
fn length_prefix_claiming_2_gib() {
    let fx = fixture();
    // Field 5 (bytes), 1 (message), 3 (packed varints), 4 (packed fixed64): a tag, a 5-byte
    // length of 2 GiB, and 4 bytes of the claimed value: 10 bytes in all.
    for (field, name) in [(5, "bytes"), (1, "message"), (3, "packed varint"), (4, "packed fixed64")] {
        let mut input = vec![(field << 3) | 2];
        varint(TWO_GIB, &mut input);
        input.extend_from_slice(b"\x08\x01\x08\x01");
        assert_eq!(input.len(), 10);
        check(&fx, &format!("{name} of 2 GiB"), &input, false);
    }
}

#[test]
fn packed_runs_claiming_more_elements_than_they_hold() {
    let fx = fixture();
    for (field, name) in [(3u8, "packed varint"), (4, "packed fixed64")] {
        // A length of 1 MiB (131,072 fixed64 elements, or up to a million varints) with 16
        // bytes behind it.
        let mut input = vec![(field << 3) | 2];
        varint(1 << 20, &mut input);
        input.extend_from_slice(&[1; 16]);
        check(&fx, &format!("{name} claiming 1 MiB"), &input, false);
        // A valid run, whose varint upper bound (one element per byte) is the most a
        // decoder may reserve: 64 Ki one-byte varints or 8 Ki fixed64s.
        let mut input = vec![(field << 3) | 2];
        varint(1 << 16, &mut input);
        input.extend(std::iter::repeat_n(1u8, 1 << 16));
        check(&fx, &format!("{name} run of 64 KiB"), &input, true);
        // Several fields each claiming the rest of the input: nothing is reserved before
        // the length is checked against the input.
        let mut input = Vec::new();
        for _ in 0..100 {
            input.push((field << 3) | 2);
            varint(TWO_GIB - 1, &mut input);
        }
        check(&fx, &format!("{name} repeated 2 GiB claims"), &input, false);
    }
}

/// `n` empty elements of `children` (2 bytes each on the wire; each points at the shared
/// zero block in the tree).
fn empty_children(n: usize) -> Vec<u8> {
    [0x0a, 0x00].repeat(n)
}

// Repeated messages are pointer vectors: one block per element, allocated on its own, and
// 8 bytes of vector per element (twice that counting the copies doubling leaves behind).
// An element whose encoding is empty takes no block at all (it points at the layouts'
// shared zero block), so 100,000 two-byte children cost only their pointers; the smallest
// non-empty child is 4 bytes on the wire (tag, length, one field), a block per 4 bytes.

#[test]
fn hundred_thousand_empty_submessages() {
    let fx = fixture();
    check(&fx, "100,000 empty submessages", &empty_children(100_000), true);
}

#[test]
fn fifty_thousand_smallest_non_empty_submessages() {
    let fx = fixture();
    // A child holding one 2-byte field (`08 00`: field 1 with a varint, which `children`
    // keeps as an unknown field): the smallest child that needs a block of its own.
    check(&fx, "50,000 one-field submessages", &[0x0a, 0x02, 0x08, 0x00].repeat(50_000), true);
}

#[test]
fn repeated_children_nested_to_the_limit() {
    let fx = fixture();
    let limit = EngineOptions::default().decode.max_depth() as usize;
    check(&fx, &format!("children nested {limit} deep"), &nested(limit, 1), true);
    check(&fx, &format!("children nested {} deep", limit + 1), &nested(limit + 1, 1), false);
}

/// `child` nested `levels` deep (innermost first, so every length is known).
fn nested(levels: usize, field: u8) -> Vec<u8> {
    let mut input = Vec::new();
    for _ in 0..levels {
        let mut outer = vec![(field << 3) | 2];
        varint(input.len() as u64, &mut outer);
        outer.extend_from_slice(&input);
        input = outer;
    }
    input
}

#[test]
fn maximal_nesting() {
    let fx = fixture();
    let limit = EngineOptions::default().decode.max_depth() as usize;
    // At the depth limit: decodes; one past it: rejected.
    check(&fx, &format!("child nested {limit} deep"), &nested(limit, 2), true);
    check(&fx, &format!("child nested {} deep", limit + 1), &nested(limit + 1, 2), false);
    // Groups of an unknown field number nested to the limit: skipped, nothing built.
    let mut input = Vec::new();
    for _ in 0..limit {
        input.extend_from_slice(&[0xfb, 0x3e]); // start group, field 1000
    }
    for _ in 0..limit {
        input.extend_from_slice(&[0xfc, 0x3e]); // end group, field 1000
    }
    check(&fx, "unknown groups nested to the limit", &input, true);
    // A nesting that claims a huge inner length at every level.
    let mut input = Vec::new();
    for _ in 0..limit {
        input.push(0x12);
        varint(TWO_GIB, &mut input);
    }
    check(&fx, "nesting with 2 GiB lengths", &input, false);
}
