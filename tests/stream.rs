//! The streaming visitor (`Decoder::stream`): on canonical encodings it sees exactly the
//! values the tree visitor sees (as a multiset: the walk is in wire order, the tree's in
//! field-number order), it fails exactly where the decoders fail with the same error, and a
//! callback can stop it.

mod common;

use std::ops::ControlFlow;

use prost::Message as _;
use protojit::{Arena, Descend, EngineOptions, EnumValue, FieldInfo, MessageRef, Schema, StreamVisitor, Visitor};

/// Every value as `path=value`, `path` the field names from the root.
#[derive(Default)]
struct Collect {
    path: Vec<String>,
    seen: Vec<String>,
}

impl Collect {
    fn push(&mut self, field: FieldInfo<'_>, v: impl std::fmt::Debug) {
        self.seen.push(format!("{}.{}={v:?}", self.path.join("."), field.name()));
    }
    fn sorted(mut self) -> Vec<String> {
        self.seen.sort();
        self.seen
    }
}

macro_rules! both {
    ($($name:ident: $t:ty),*) => {
        impl<'a> Visitor<'a> for Collect {
            $(fn $name(&mut self, field: FieldInfo<'a>, v: $t) { self.push(field, v) })*
            fn enum_value(&mut self, field: FieldInfo<'a>, v: EnumValue<'a>) {
                self.push(field, v.number)
            }
            fn message(&mut self, field: FieldInfo<'a>, _: MessageRef<'a>) -> Descend {
                self.seen.push(format!("{}.{}{{", self.path.join("."), field.name()));
                self.path.push(field.name().to_owned());
                Descend::Yes
            }
            fn end_message(&mut self, _: FieldInfo<'a>, _: MessageRef<'a>) {
                self.path.pop();
            }
        }
        impl<'a> StreamVisitor<'a> for Collect {
            $(fn $name(&mut self, field: FieldInfo<'a>, v: $t) -> ControlFlow<()> {
                self.push(field, v);
                ControlFlow::Continue(())
            })*
            fn enum_value(&mut self, field: FieldInfo<'a>, v: EnumValue<'a>) -> ControlFlow<()> {
                self.push(field, v.number);
                ControlFlow::Continue(())
            }
            fn message(&mut self, field: FieldInfo<'a>) -> ControlFlow<(), Descend> {
                self.seen.push(format!("{}.{}{{", self.path.join("."), field.name()));
                self.path.push(field.name().to_owned());
                ControlFlow::Continue(Descend::Yes)
            }
            fn end_message(&mut self, _: FieldInfo<'a>) -> ControlFlow<()> {
                self.path.pop();
                ControlFlow::Continue(())
            }
        }
    };
}
both!(bool: bool, i32: i32, i64: i64, u32: u32, u64: u64, f32: f32, f64: f64, string: &'a str, bytes: &'a [u8]);

/// [`Collect`] with packed runs taken whole through the plural methods, reading at most
/// `.1` elements of each run (the walk checks the rest).
struct Runs(Collect, usize);

macro_rules! runs {
    ($($name:ident: $t:ty),*; $($plural:ident: $e:ty),*) => {
        impl<'a> StreamVisitor<'a> for Runs {
            $(fn $name(&mut self, field: FieldInfo<'a>, v: $t) -> ControlFlow<()> {
                StreamVisitor::$name(&mut self.0, field, v)
            })*
            $(fn $plural<I: Iterator<Item = $e>>(&mut self, field: FieldInfo<'a>, values: I) -> ControlFlow<()> {
                values.take(self.1).for_each(|v| self.0.push(field, v));
                ControlFlow::Continue(())
            })*
            fn enums<I: Iterator<Item = i32>>(&mut self, field: FieldInfo<'a>, numbers: I, _: &'a protojit::EnumType) -> ControlFlow<()> {
                numbers.take(self.1).for_each(|n| self.0.push(field, n));
                ControlFlow::Continue(())
            }
            fn enum_value(&mut self, field: FieldInfo<'a>, v: EnumValue<'a>) -> ControlFlow<()> {
                StreamVisitor::enum_value(&mut self.0, field, v)
            }
            fn message(&mut self, field: FieldInfo<'a>) -> ControlFlow<(), Descend> {
                StreamVisitor::message(&mut self.0, field)
            }
            fn end_message(&mut self, field: FieldInfo<'a>) -> ControlFlow<()> {
                StreamVisitor::end_message(&mut self.0, field)
            }
        }
    };
}
runs!(bool: bool, i32: i32, i64: i64, u32: u32, u64: u64, f32: f32, f64: f64, string: &'a str, bytes: &'a [u8];
      bools: bool, i32s: i32, i64s: i64, u32s: u32, u64s: u64, f32s: f32, f64s: f64);

fn reflect_schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas");
    let files = ["everything.proto", "everything3.proto", "reflect_wkt.proto"].map(|f| dir.join(f));
    Schema::from_proto_files(&files, &[&dir]).expect("the reflection test schemas compile")
}

fn tree_view(decoder: &protojit::Decoder, bytes: &[u8]) -> Vec<String> {
    let arena = Arena::new();
    let mut c = Collect::default();
    decoder.decode(bytes, &arena).unwrap().visit(&mut c);
    c.sorted()
}

/// The stream's values, as [`Collect`] sees them; asserted equal to those of a visitor
/// that takes packed runs whole ([`Runs`]).
fn stream_view(decoder: &protojit::Decoder, bytes: &[u8]) -> Vec<String> {
    let mut c = Collect::default();
    assert_eq!(decoder.stream(bytes, &mut c).unwrap(), ControlFlow::Continue(()));
    assert!(c.path.is_empty(), "every message ended");
    let mut runs = Runs(Collect::default(), usize::MAX);
    assert_eq!(decoder.stream(bytes, &mut runs).unwrap(), ControlFlow::Continue(()));
    assert_eq!(runs.0.seen, c.seen, "packed runs taken whole: the same values in the same order");
    c.sorted()
}

#[test]
fn the_stream_sees_what_the_tree_visitor_sees() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0x57ea_0001);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoder = schema.decoder(root).unwrap();
        for i in 0..150 {
            let bytes = common::random_message(&desc, 3, &mut rng).encode_to_vec();
            // Through protojit's encoder, which writes every map entry's key and value (the
            // tree visitor shows both always; the stream only what is on the wire, and
            // prost-reflect's encoder leaves default ones out).
            let arena = Arena::new();
            let bytes = decoder.decode(&bytes, &arena).unwrap().encode_to_vec();
            let (t, s) = (tree_view(&decoder, &bytes), stream_view(&decoder, &bytes));
            assert_eq!(s, t, "{root} message {i}");
        }
    }
}

/// Found by the `stream_visit` fuzz target (input `01 9a 05 00`: an `m_string_mood` map
/// entry with neither key nor value on the wire). protojit's encoder writes the entry's
/// default key and value (`9a 05 04 0a 00 10 00`), which the stream reports, while the tree
/// visitor left them out as defaults of fields without presence. A map entry has a key and
/// a value whether written or not: the tree visitor now shows both always, as protobuf
/// writes them and the text format prints them.
#[test]
fn a_map_entry_shows_its_default_key_and_value() {
    let schema = reflect_schema();
    let decoder = schema.decoder("everything3.Everything3").unwrap();
    let arena = Arena::new();
    let canonical = decoder.decode(&[0x9a, 0x05, 0x00], &arena).unwrap().encode_to_vec();
    assert_eq!(canonical, [0x9a, 0x05, 0x04, 0x0a, 0x00, 0x10, 0x00]);
    let want = [".m_string_mood{", "m_string_mood.key=\"\"", "m_string_mood.value=0"];
    for bytes in [&[0x9a, 0x05, 0x00][..], &canonical] {
        assert_eq!(tree_view(&decoder, bytes), want, "{bytes:02x?}");
    }
    assert_eq!(stream_view(&decoder, &canonical), want);
}

#[test]
fn the_corpus_streams_as_its_tree_visits() {
    let Some(dir) = common::corpus_dir("the_corpus_streams_as_its_tree_visits") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let decoder = schema.decoder(type_name).unwrap();
        let bytes = std::fs::read(dir.join(file)).unwrap();
        // The canonical encoding (the files are, but re-encoding makes sure).
        let arena = Arena::new();
        let canonical = decoder.decode(&bytes, &arena).unwrap().encode_to_vec();
        assert_eq!(stream_view(&decoder, &canonical), tree_view(&decoder, &canonical), "{file}");
    }
}

/// Corrupted inputs fail with the decoders' error (kind and offset), both engines agreeing.
#[test]
fn the_stream_fails_where_the_decoders_fail() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0x57ea_0002);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoder = schema.decoder_with_options(root, &EngineOptions::default()).unwrap();
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..300 {
            let mut b = common::random_message(&desc, 3, &mut rng).encode_to_vec();
            if b.is_empty() {
                continue;
            }
            match rng.below(2) {
                0 => {
                    let i = rng.index(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
                _ => b.truncate(rng.index(b.len())),
            }
            let arena = Arena::new();
            let tree = decoder.decode(&b, &arena).map(|_| ());
            let streamed = decoder.stream(&b, &mut Collect::default()).map(|_| ());
            assert_eq!(streamed, tree, "{root}");
            // A visitor that reads one element of each packed run: the walk checks the rest.
            let streamed = decoder.stream(&b, &mut Runs(Collect::default(), 1)).map(|_| ());
            assert_eq!(streamed, tree, "{root}: runs read in part");
            if tree.is_ok() {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
        assert!(accepted > 20 && rejected > 20, "{root}: {accepted} accepted, {rejected} rejected");
    }
}

/// A byte made to continue a varint: the varint then runs past where it ended, often past
/// the end of its message into the bytes after it (the walk reads a value's varint as one
/// word that may reach past its message, and checks the message's end after). Every byte
/// of a few messages per root, each walk against the tree decoders.
#[test]
fn a_varint_continued_past_its_end_fails_where_the_decoders_fail() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0x57ea_0003);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let decoder = schema.decoder_with_options(root, &EngineOptions::default()).unwrap();
        let mut checked = 0;
        for _ in 0..12 {
            let b = common::random_message(&desc, 3, &mut rng).encode_to_vec();
            if b.len() < 24 {
                continue;
            }
            for i in 0..b.len() {
                let mut m = b.clone();
                m[i] |= 0x80;
                let arena = Arena::new();
                let tree = decoder.decode(&m, &arena).map(|_| ());
                let streamed = decoder.stream(&m, &mut Collect::default()).map(|_| ());
                assert_eq!(streamed, tree, "{root}: byte {i} of {b:02x?}");
                checked += 1;
            }
        }
        assert!(checked > 100, "{root}: {checked} mutations");
    }
}

/// A callback that breaks stops the walk there.
#[test]
fn a_callback_stops_the_walk() {
    let schema = Schema::from_proto_source(
        "s.proto",
        "syntax = \"proto3\"; message S { repeated int32 xs = 1; M m = 2; } message M { int32 a = 1; }",
    )
    .unwrap();
    let decoder = schema.decoder("S").unwrap();
    struct UpTo(Vec<i32>, usize);
    impl<'a> StreamVisitor<'a> for UpTo {
        fn i32(&mut self, _: FieldInfo<'a>, v: i32) -> ControlFlow<()> {
            self.0.push(v);
            if self.0.len() == self.1 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    // xs = [1, 2, 3] packed, m { a: 4 }, then a truncated field the walk never reaches.
    let bytes = b"\x0a\x03\x01\x02\x03\x12\x02\x08\x04\x08";
    for (n, seen) in [(1, vec![1]), (3, vec![1, 2, 3]), (4, vec![1, 2, 3, 4])] {
        let mut v = UpTo(Vec::new(), n);
        assert_eq!(decoder.stream(bytes, &mut v), Ok(ControlFlow::Break(())));
        assert_eq!(v.0, seen);
    }
    // Not stopped: the truncated last field is the decoder's error (its value is missing
    // at byte 10), after every value before it.
    let mut v = UpTo(Vec::new(), 100);
    let arena = Arena::new();
    let error = decoder.decode(bytes, &arena).unwrap_err();
    assert_eq!((error.kind, error.offset), (protojit::DecodeErrorKind::Truncated, 10));
    assert_eq!(decoder.stream(bytes, &mut v), Err(error));
    assert_eq!(v.0, vec![1, 2, 3, 4]);
}

/// Decoders of `root` on both engines, under `options` otherwise: each walks with the
/// interpreter's walk, and decodes (the errors walks are held to) with its engine.
fn both_walks(schema: &Schema, root: &str, options: EngineOptions) -> [protojit::Decoder; 2] {
    let interp = schema.decoder_with_options(root, &options.with_kind(protojit::EngineKind::Interpreter)).unwrap();
    let jit = schema.decoder_with_options(root, &options.with_kind(protojit::EngineKind::Jit)).unwrap();
    [interp, jit]
}

/// What a walk called, in order, and how it ended.
fn calls<V: for<'a> StreamVisitor<'a>>(
    decoder: &protojit::Decoder,
    bytes: &[u8],
    mut visitor: V,
    seen: impl Fn(V) -> Vec<String>,
) -> (Result<ControlFlow<()>, protojit::DecodeError>, Vec<String>) {
    let r = decoder.stream(bytes, &mut visitor);
    (r, seen(visitor))
}

/// Depth: a message nested past the limit fails the walk where it fails the decoders of
/// both engines, whether the visitor walks into it or passes over it; groups end at their
/// own end tag only.
#[test]
fn the_walk_keeps_depth_and_group_rules() {
    let schema = Schema::from_proto_source(
        "d.proto",
        "syntax = \"proto2\"; message D { optional D d = 1; optional int32 v = 2; optional group G = 3 { optional int32 x = 4; } }",
    )
    .unwrap();
    struct Pass(Collect);
    impl<'a> StreamVisitor<'a> for Pass {
        fn i32(&mut self, f: FieldInfo<'a>, v: i32) -> ControlFlow<()> {
            StreamVisitor::i32(&mut self.0, f, v)
        }
        fn message(&mut self, _: FieldInfo<'a>) -> ControlFlow<(), Descend> {
            ControlFlow::Continue(Descend::No)
        }
    }
    let nest = |n: usize| {
        let mut b = vec![0x10, 0x07];
        for _ in 0..n {
            let mut outer = vec![0x0a];
            prost::encoding::encode_varint(b.len() as u64, &mut outer);
            outer.extend(b);
            b = outer;
        }
        b
    };
    let options = EngineOptions::default().with_max_depth(8);
    let [interp, jit] = both_walks(&schema, "D", options);
    let group_cases: [&[u8]; 6] = [
        b"\x1b\x20\x05\x1c\x10\x01", // G { x: 5 } v: 1
        b"\x1b\x20\x05",             // G never ends
        b"\x1b\x20\x05\x24",         // G ends with x's end tag
        b"\x14",                     // an end tag outside any group
        b"\x1b\x1b\x1c\x1c",         // G's field 3 is not in G: an unknown group inside
        b"\x1b\x9c\x00",             // G's end tag in two bytes
    ];
    let mut inputs: Vec<Vec<u8>> = (0..12).map(nest).collect();
    inputs.extend(group_cases.iter().map(|b| b.to_vec()));
    let arena = Arena::new();
    for b in &inputs {
        let decoded = interp.decode(b, &arena).map(|_| ()).err();
        assert_eq!(jit.decode(b, &arena).map(|_| ()).err(), decoded, "{b:02x?}");
        let walked = calls(&jit, b, Collect::default(), |c| c.seen);
        assert_eq!(walked.0.err(), decoded, "{b:02x?}");
        let passed = calls(&jit, b, Pass(Collect::default()), |p| p.0.seen);
        assert_eq!(passed.0.err(), decoded, "passed over: {b:02x?}");
    }
    let error = jit.stream(&nest(11), &mut Collect::default()).unwrap_err();
    assert_eq!(error.kind, protojit::DecodeErrorKind::DepthLimitExceeded);
    assert_eq!(calls(&interp, &nest(3), Collect::default(), |c| c.seen).1, [".d{", "d.d{", "d.d.d{", "d.d.d.v=7"]);
    assert_eq!(calls(&interp, group_cases[0], Collect::default(), |c| c.seen).1, [".g{", "g.x=5", ".v=1"]);
}

/// Deeper than the sink keeps parents in place (eight): after each message ends, the values
/// that follow are reported with their own message's fields, at every depth.
#[test]
fn values_after_deep_messages_belong_to_their_message() {
    const LEVELS: usize = 14;
    let mut proto = String::from("syntax = \"proto3\";\n");
    for i in 0..LEVELS {
        let child = if i + 1 < LEVELS { format!("M{} c = 1; ", i + 1) } else { String::new() };
        proto.push_str(&format!("message M{i} {{ {child}int32 v{i} = {}; }}\n", i + 2));
    }
    let schema = Schema::from_proto_source("deep.proto", &proto).unwrap();
    // The innermost message first: each level is its child (field 1), then its own value.
    let mut bytes = vec![((LEVELS + 1) << 3) as u8, 99];
    for i in (0..LEVELS - 1).rev() {
        let mut outer = vec![0x0a];
        prost::encoding::encode_varint(bytes.len() as u64, &mut outer);
        outer.extend(bytes);
        outer.extend([((i + 2) << 3) as u8, i as u8]);
        bytes = outer;
    }
    struct Names(Vec<String>);
    impl<'a> StreamVisitor<'a> for Names {
        fn i32(&mut self, f: FieldInfo<'a>, v: i32) -> ControlFlow<()> {
            self.0.push(format!("{}={v}", f.name()));
            ControlFlow::Continue(())
        }
        fn end_message(&mut self, f: FieldInfo<'a>) -> ControlFlow<()> {
            self.0.push(format!("}}{}", f.name()));
            ControlFlow::Continue(())
        }
    }
    let mut want = vec![format!("v{}=99", LEVELS - 1)];
    for i in (0..LEVELS - 1).rev() {
        want.push("}c".to_string());
        want.push(format!("v{i}={i}"));
    }
    for decoder in both_walks(&schema, "M0", EngineOptions::default()) {
        let mut names = Names(Vec::new());
        assert!(decoder.stream(&bytes, &mut names).unwrap().is_continue());
        assert_eq!(names.0, want);
    }
}

/// A visitor that panics: the panic comes out of `stream`, and the decoder walks again
/// afterwards.
#[test]
fn a_panicking_visitor_unwinds_out_of_the_walk() {
    let schema = Schema::from_proto_source(
        "p.proto",
        "syntax = \"proto3\"; message P { repeated int32 xs = 1; Q q = 2; } message Q { string s = 1; }",
    )
    .unwrap();
    let [_, jit] = both_walks(&schema, "P", EngineOptions::default());
    struct Boom;
    impl<'a> StreamVisitor<'a> for Boom {
        fn string(&mut self, _: FieldInfo<'a>, s: &'a str) -> ControlFlow<()> {
            panic!("visitor saw {s}");
        }
    }
    let bytes = b"\x0a\x02\x01\x02\x12\x03\x0a\x01z";
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| jit.stream(bytes, &mut Boom)));
    let message = caught.unwrap_err().downcast::<String>().unwrap();
    assert_eq!(*message, "visitor saw z");
    let mut c = Collect::default();
    assert_eq!(jit.stream(bytes, &mut c), Ok(ControlFlow::Continue(())));
    assert_eq!(c.seen, [".xs=1", ".xs=2", ".q{", "q.s=\"z\""]);
}

/// A long packed run (decoded whole before the visitor reads it) gives the visitor its
/// values; a malformed one gives the values before the malformed varint and then fails with
/// the decoders' error, in both walks, however much of the run the visitor reads.
#[test]
fn a_long_packed_run_malformed_at_its_end_gives_the_values_before() {
    let schema = Schema::from_proto_source(
        "r.proto",
        "syntax = \"proto3\"; message R { repeated int64 xs = 1; repeated sint32 zs = 2; }",
    )
    .unwrap();
    let values: Vec<i64> = (0..300).map(|i| if i % 7 == 0 { -i } else { i * 1000 }).collect();
    let mut run = Vec::new();
    for &v in &values {
        prost::encoding::encode_varint(v as u64, &mut run);
    }
    let whole = |run: &[u8]| {
        let mut b = vec![0x0a];
        prost::encoding::encode_varint(run.len() as u64, &mut b);
        b.extend_from_slice(run);
        b
    };
    for decoder in both_walks(&schema, "R", EngineOptions::default()) {
        let mut c = Collect::default();
        assert_eq!(decoder.stream(&whole(&run), &mut c), Ok(ControlFlow::Continue(())));
        let want: Vec<String> = values.iter().map(|v| format!(".xs={v}")).collect();
        assert_eq!(c.seen, want);
        // The last varint left unterminated at the run's end.
        let mut bad = run.clone();
        *bad.last_mut().unwrap() |= 0x80;
        let bytes = whole(&bad);
        let arena = Arena::new();
        let error = decoder.decode(&bytes, &arena).unwrap_err();
        for n in [usize::MAX, 5] {
            let mut r = Runs(Collect::default(), n);
            assert_eq!(decoder.stream(&bytes, &mut r), Err(error), "reading up to {n}");
            assert_eq!(r.0.seen, want[..want.len().min(n).min(values.len() - 1)], "reading up to {n}");
        }
    }
}

/// A closed enum's undeclared values are passed over (unknown fields), declared ones seen,
/// in both walks: consecutive values (the compiled walk's range check), values with gaps
/// (its call), singular and repeated, packed and not, 64-bit varints truncated to int32.
#[test]
fn closed_enums_pass_over_undeclared_values_in_both_walks() {
    let schema = Schema::from_proto_source(
        "e.proto",
        "syntax = \"proto2\"; enum E { A = 1; B = 2; C = 3; } enum G { X = -5; Y = 0; Z = 7; }
         message M { optional E e = 1; repeated E es = 2; optional G g = 3; repeated G gs = 4 [packed = true]; }",
    )
    .unwrap();
    let values: [u64; 9] = [0, 1, 3, 4, u64::MAX, (1 << 32) + 2, 7, (-5i64) as u64, 6];
    let mut bytes = Vec::new();
    for &v in &values {
        for tag in [0x08u8, 0x10, 0x18] {
            bytes.push(tag);
            prost::encoding::encode_varint(v, &mut bytes);
        }
    }
    let mut run = Vec::new();
    for &v in &values {
        prost::encoding::encode_varint(v, &mut run);
    }
    bytes.push(0x22);
    prost::encoding::encode_varint(run.len() as u64, &mut bytes);
    bytes.extend_from_slice(&run);
    let [interp, jit] = both_walks(&schema, "M", EngineOptions::default());
    let walked = |d: &protojit::Decoder| calls(d, &bytes, Collect::default(), |c| c.seen);
    let (want, got) = (walked(&interp), walked(&jit));
    assert_eq!(got, want);
    let e = |v: i64| [format!(".e={v}"), format!(".es={v}")];
    let mut expected: Vec<String> = Vec::new();
    for &v in &values {
        let n = v as i64 as i32;
        if (1..=3).contains(&n) {
            expected.extend(e(n as i64));
        }
        if [-5, 0, 7].contains(&n) {
            expected.push(format!(".g={n}"));
        }
    }
    for &v in &values {
        let n = v as i64 as i32;
        if [-5, 0, 7].contains(&n) {
            expected.push(format!(".gs={n}"));
        }
    }
    assert_eq!(want, (Ok(ControlFlow::Continue(())), expected));
}

/// Which of a visitor's string callbacks a value reached, by field name.
#[derive(Default)]
struct Strings {
    raw: bool,
    seen: Vec<String>,
}

macro_rules! string_callbacks {
    ($visitor:ident, $ret:ty, $ok:expr) => {
        fn string(&mut self, f: FieldInfo<'a>, v: &'a str) -> $ret {
            self.seen.push(format!("string {}={v}", f.name()));
            $ok
        }
        fn bytes(&mut self, f: FieldInfo<'a>, v: &'a [u8]) -> $ret {
            self.seen.push(format!("bytes {}={v:?}", f.name()));
            $ok
        }
        fn unchecked_string(&mut self, f: FieldInfo<'a>, v: &'a [u8]) -> $ret {
            if !self.raw {
                // The default: text when it is text.
                return match std::str::from_utf8(v) {
                    Ok(s) => $visitor::string(self, f, s),
                    Err(_) => $visitor::bytes(self, f, v),
                };
            }
            self.seen.push(format!("unchecked {}={v:?}", f.name()));
            $ok
        }
    };
}

impl<'a> StreamVisitor<'a> for Strings {
    string_callbacks!(StreamVisitor, ControlFlow<()>, ControlFlow::Continue(()));
}

impl<'a> Visitor<'a> for Strings {
    string_callbacks!(Visitor, (), ());
}

/// A proto2 `string` is not checked for UTF-8 (its features say NONE): both visitors hand
/// it to `unchecked_string` as bytes, whose default is `string` for text and `bytes` for
/// the rest; a proto3 `string` is checked, and goes to `string`. In both walks.
#[test]
fn unchecked_strings_reach_the_visitors_as_bytes() {
    let schema = Schema::from_proto_source(
        "s.proto",
        "syntax = \"proto2\"; message P { optional string a = 1; repeated string b = 2; optional bytes c = 3; }",
    )
    .unwrap();
    let bytes = [&[0x0a, 2, b'o', b'k', 0x12, 1, 0xff, 0x12, 1, b'x', 0x1a, 1, 0xfe][..]].concat();
    let [interp, jit] = both_walks(&schema, "P", EngineOptions::default());
    for raw in [false, true] {
        let want = if raw {
            ["unchecked a=[111, 107]", "unchecked b=[255]", "unchecked b=[120]", "bytes c=[254]"]
        } else {
            ["string a=ok", "bytes b=[255]", "string b=x", "bytes c=[254]"]
        };
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        for d in [&interp, &jit] {
            let (r, seen) = calls(d, &bytes, Strings { raw, seen: Vec::new() }, |s| s.seen);
            assert_eq!((r.unwrap(), seen), (ControlFlow::Continue(()), want.clone()));
            let arena = Arena::new();
            let msg = d.decode(&bytes, &arena).unwrap();
            let mut tree = Strings { raw, seen: Vec::new() };
            msg.visit(&mut tree);
            assert_eq!(tree.seen, want, "the tree visitor");
        }
    }
    // Checked strings (proto3) go to `string`.
    let schema = Schema::from_proto_source(
        "s3.proto",
        "syntax = \"proto3\"; message Q { string a = 1; repeated string b = 2; }",
    )
    .unwrap();
    let bytes = [0x0a, 2, b'o', b'k', 0x12, 1, b'x'];
    let [interp, jit] = both_walks(&schema, "Q", EngineOptions::default());
    for d in [&interp, &jit] {
        let (r, seen) = calls(d, &bytes, Strings { raw: true, seen: Vec::new() }, |s| s.seen);
        assert_eq!(
            (r.unwrap(), seen),
            (ControlFlow::Continue(()), vec!["string a=ok".to_owned(), "string b=x".to_owned()])
        );
        let arena = Arena::new();
        let mut tree = Strings { raw: true, seen: Vec::new() };
        d.decode(&bytes, &arena).unwrap().visit(&mut tree);
        assert_eq!(tree.seen, ["string a=ok", "string b=x"]);
    }
}
