//! The chunked path (records decoded a chunk at a time, then read column by column) and
//! the direct path (records read straight into the columns) against the tree path (each
//! record decoded, then read row by row): equal batches, equal errors, for random records of the
//! property schemas and their concatenations (which merge messages, switch oneofs and
//! repeat map keys on the wire), corrupted records, projections, every column option, and
//! the public corpus; and the records the direct path hands to the tree are counted.

#[path = "../../tests/common/mod.rs"]
mod common;

use prost::Message as _;
use protojit::{EngineOptions, Schema};
use protojit_arrow::arrow_array::RecordBatch;
use protojit_arrow::{ArrowOptions, ConvertError, ConvertPath, Converter, EnumColumns, StringColumns};

fn reflect_schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/schemas");
    let files = ["everything.proto", "everything3.proto", "reflect_wkt.proto"].map(|f| dir.join(f));
    Schema::from_proto_files(&files, &[&dir]).expect("the reflection test schemas compile")
}

/// The converters of one type and options: chunked, direct, tree, compiled (where the
/// compiled appenders read the columns; else chunked, with a note) and auto (the default:
/// the compiled appenders raced against the chunked path).
struct Paths {
    chunked: Converter,
    direct: Converter,
    tree: Converter,
    compiled: Converter,
    auto: Converter,
}

fn paths(schema: &Schema, root: &str, options: &ArrowOptions) -> Paths {
    let auto = Converter::new(schema, root, options).unwrap();
    assert!(matches!(auto.path(), ConvertPath::Auto | ConvertPath::Chunked), "{root}: {:?}", auto.path());
    assert_eq!(auto.path() == ConvertPath::Auto, auto.path_note().is_none(), "{root}");
    let with = |path| Converter::new(schema, root, &ArrowOptions { path, ..options.clone() }).unwrap();
    let chunked = with(ConvertPath::Chunked);
    assert_eq!(chunked.path(), ConvertPath::Chunked);
    let (direct, tree) = (with(ConvertPath::DirectInterpreted), with(ConvertPath::Tree));
    assert_eq!(direct.path(), ConvertPath::DirectInterpreted);
    assert_eq!(tree.path(), ConvertPath::Tree);
    let compiled = with(ConvertPath::DirectCompiled);
    // Not compiled only with the reason; compiled before the first record (it compiles in
    // the background), so the conversions below run the code.
    assert_eq!(compiled.path() == ConvertPath::DirectCompiled, compiled.path_note().is_none(), "{root}");
    assert_eq!(compiled.wait_for_appender(), compiled.path() == ConvertPath::DirectCompiled, "{root}");
    Paths { chunked, direct, tree, compiled, auto }
}

/// The batches of `records` through each path (the records that fail are skipped, and
/// must fail alike), each asserted equal to the tree's; returns how many records the
/// direct path handed to the tree. The chunked path appends them once a record at a time
/// and once in runs (`append_many`, continued past each failure).
fn convert_all(p: &Paths, records: &[Vec<u8>], what: &str) -> u64 {
    let (mut d, mut t, mut c) = (p.direct.builder(), p.tree.builder(), p.chunked.builder());
    let mut k = p.compiled.builder();
    let mut tree_errors = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let b = t.append(r);
        assert_eq!(d.append(r), b, "{what}: record {i} [{}]", hex(r));
        assert_eq!(c.append(r), b, "{what}: record {i} [{}] (chunked, one by one)", hex(r));
        assert_eq!(k.append(r), b, "{what}: record {i} [{}] (compiled, one by one)", hex(r));
        assert_eq!(d.len(), t.len(), "{what}: record {i}: rows");
        if let Err(e) = b {
            tree_errors.push((i, e));
        }
    }
    let handed = d.stats().tree_records;
    assert_eq!(t.stats().tree_records, 0);
    assert_eq!(c.stats(), t.stats(), "{what}");
    assert_eq!(d.stats().time_out_of_range, t.stats().time_out_of_range, "{what}");
    assert_eq!(k.stats().time_out_of_range, t.stats().time_out_of_range, "{what}: compiled");
    let tree = t.finish().unwrap();
    assert_eq!(d.finish().unwrap(), tree, "{what}: direct");
    assert_eq!(c.finish().unwrap(), tree, "{what}: chunked, one by one");
    assert_eq!(k.finish().unwrap(), tree, "{what}: compiled, one by one");
    for (converter, path) in [(&p.chunked, "chunked"), (&p.compiled, "compiled"), (&p.auto, "auto")] {
        let mut many = converter.builder();
        let taken = std::cell::Cell::new(0);
        let mut it = records.iter().map(|r| r.as_slice()).inspect(|_| taken.set(taken.get() + 1));
        let mut errors = Vec::new();
        loop {
            match many.append_many(&mut it) {
                Ok(ended) => {
                    assert!(ended, "{what}: the batch is not full");
                    break;
                }
                Err(e) => errors.push((taken.get() - 1, e)),
            }
        }
        assert_eq!(errors, tree_errors, "{what}: append_many's errors ({path})");
        assert_eq!(many.finish().unwrap(), tree, "{what}: {path}, in runs");
    }
    handed
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

fn options_grid() -> Vec<ArrowOptions> {
    let mut out = Vec::new();
    for (enums, strings) in [
        (EnumColumns::Dictionary, StringColumns::Offsets),
        (EnumColumns::Number, StringColumns::Views),
        (EnumColumns::Dictionary, StringColumns::Views),
    ] {
        for (well_known_types, max_recursion) in [(true, 3), (false, 1), (true, 2)] {
            out.push(ArrowOptions { enums, strings, well_known_types, max_recursion, ..ArrowOptions::default() });
        }
    }
    out
}

/// Which conversions of a grid test run: all of them, or under `PROTOJIT_CONVERSIONS=N` (the
/// valgrind subset sets it: compiling a converter under valgrind takes seconds) about `N` of
/// the `total`, spread so that each schema keeps different option sets (conversion `option`
/// of schema `schema` runs when their sum is a multiple of the stride).
struct Sample {
    stride: usize,
}

impl Sample {
    fn of(total: usize) -> Sample {
        let stride = common::env_count("PROTOJIT_CONVERSIONS").map_or(1, |n| total.div_ceil(n.max(1)));
        Sample { stride: stride.max(1) }
    }

    fn keeps(&self, schema: usize, option: usize) -> bool {
        (schema + option).is_multiple_of(self.stride)
    }
}

/// Random records, and concatenations of two or three of them: protobuf merges those
/// (singular messages merged, lists appended, the last scalar and oneof member winning,
/// map keys repeated), which is where reading in wire order differs from reading a tree.
fn records(desc: &prost_reflect::MessageDescriptor, n: usize, rng: &mut common::Rng) -> Vec<Vec<u8>> {
    let single: Vec<Vec<u8>> = (0..n).map(|_| common::random_message(desc, 3, rng).encode_to_vec()).collect();
    let mut out = single.clone();
    for _ in 0..n {
        let mut r = rng.pick(&single).clone();
        for _ in 0..1 + rng.below(2) {
            let other: &Vec<u8> = rng.pick(&single);
            r.extend_from_slice(other);
        }
        out.push(r);
    }
    out
}

#[test]
fn direct_batches_equal_tree_batches_on_random_and_merged_records() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xd1ec_0001);
    let mut handed = 0;
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let recs = records(&desc, 60, &mut rng);
        for options in options_grid() {
            handed += convert_all(&paths(&schema, root, &options), &recs, &format!("{root} {options:?}"));
        }
    }
    // Merged records repeat map keys and switch oneofs away from messages: some go to the
    // tree, and most do not.
    assert!(handed > 0, "no record was handed to the tree");
}

#[test]
fn projections_read_directly_equal_the_tree() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xd1ec_0002);
    let root = "everything.Everything";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let recs = records(&desc, 40, &mut rng);
    let names: Vec<String> = desc.fields().map(|f| f.name().to_owned()).collect();
    for k in [1usize, 2, 5, 11] {
        let select: Vec<String> = names.iter().step_by(k).cloned().collect();
        let options = ArrowOptions { select: Some(select.clone()), ..ArrowOptions::default() };
        convert_all(&paths(&schema, root, &options), &recs, &format!("{select:?}"));
    }
}

/// `r` with one bit flipped, cut short, or with part of another record of `clean` inserted.
fn corrupted(r: &[u8], clean: &[Vec<u8>], rng: &mut common::Rng) -> Vec<u8> {
    let mut b = r.to_vec();
    match rng.below(3) {
        0 if !b.is_empty() => {
            let i = rng.index(b.len());
            b[i] ^= 1 << rng.below(8);
        }
        1 => b.truncate(rng.index(b.len() + 1)),
        _ => {
            let at = rng.index(b.len() + 1);
            let other = rng.pick(clean);
            b.splice(at..at, other[..rng.index(other.len() + 1)].iter().copied());
        }
    }
    b
}

/// Corrupted records: the same accept/reject and errors, and a record that fails leaves
/// the builders as they were (the batches of the records before and after are equal).
#[test]
fn corrupted_records_fail_alike_and_leave_no_half_row() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xd1ec_0003);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let clean = records(&desc, 30, &mut rng);
        let mut recs = Vec::new();
        for r in &clean {
            recs.push(corrupted(r, &clean, &mut rng));
            recs.push(r.clone());
        }
        for options in options_grid().into_iter().step_by(2) {
            convert_all(&paths(&schema, root, &options), &recs, &format!("{root} {options:?}"));
        }
    }
}

#[test]
fn corpus_payloads_read_directly_equal_the_tree() {
    let Some(dir) = common::corpus_dir("corpus_payloads_read_directly_equal_the_tree") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        for options in
            [ArrowOptions::default(), ArrowOptions { strings: StringColumns::Views, ..ArrowOptions::default() }]
        {
            let p = paths(&schema, type_name, &options);
            // Every public payload's type is read by the compiled appenders: no fallback.
            assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{file}: {:?}", p.compiled.path_note());
            // Eight copies: the larger payloads (OSM blocks, tiles) span more than one chunk
            // by their bytes (a chunk closes once it holds 4 MiB of input).
            let handed = convert_all(&p, &vec![bytes.clone(); 8], file);
            assert_eq!(handed, 0, "{file}: records handed to the tree");
            let mut k = p.compiled.builder();
            k.append(&bytes).unwrap();
            assert_eq!(k.stats().tree_records, 0, "{file}: declined by the compiled appenders");
        }
    }
}

/// The wire-order rules, record by record: merges, oneof switches and repeated map keys,
/// with the records the tree takes counted exactly.
#[test]
fn wire_order_cases_convert_as_the_tree_does() {
    let schema = Schema::from_proto_source(
        "d.proto",
        r#"
        syntax = "proto3";
        package d;
        import "google/protobuf/timestamp.proto";
        message Inner { int32 a = 1; repeated int32 xs = 2; string s = 3; }
        message Outer {
          Inner inner = 1;
          oneof choice { int32 n = 2; string t = 3; Inner m = 4; }
          map<string, Inner> by_name = 5;
          map<int32, int32> counts = 6;
          google.protobuf.Timestamp at = 7;
          repeated Inner list = 8;
        }
        "#,
    )
    .unwrap();
    // (what, record, records the direct path hands to the tree)
    let cases: &[(&str, &[u8], u64)] = &[
        ("inner twice: merged", b"\x0a\x04\x08\x01\x10\x02\x0a\x04\x10\x03\x1a\x00", 0),
        ("n then t: t wins", b"\x10\x05\x1a\x01z", 0),
        ("t then n: n wins", b"\x1a\x01z\x10\x05", 0),
        ("m then m: merged", b"\x22\x02\x08\x01\x22\x02\x10\x02", 0),
        ("m then n: the tree", b"\x22\x02\x10\x07\x10\x05", 1),
        ("n then m then n: the tree", b"\x10\x01\x22\x02\x10\x07\x10\x05", 1),
        ("map keys distinct", b"\x32\x04\x08\x01\x10\x02\x32\x04\x08\x02\x10\x03", 0),
        ("map key twice: the tree", b"\x32\x04\x08\x01\x10\x02\x32\x04\x08\x01\x10\x03", 1),
        ("map entry without value", b"\x32\x02\x08\x01\x2a\x03\x0a\x01k", 0),
        ("timestamp merged", b"\x3a\x02\x08\x05\x3a\x02\x10\x07", 0),
        ("list elements and an empty one", b"\x42\x02\x08\x01\x42\x00\x42\x02\x10\x09", 0),
        ("empty record", b"", 0),
    ];
    for options in options_grid() {
        let p = paths(&schema, "d.Outer", &options);
        for (what, record, tree_records) in cases {
            let handed = convert_all(&p, &[record.to_vec()], &format!("{what} {options:?}"));
            assert_eq!(handed, *tree_records, "{what}: records handed to the tree");
        }
    }
}

#[test]
fn a_failed_record_in_a_delimited_stream_is_skipped_whole() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xd1ec_0004);
    let root = "everything3.Everything3";
    let desc = schema.pool().get_message_by_name(root).unwrap();
    let mut recs = records(&desc, 20, &mut rng);
    // A record cut in the middle of its last field, between good ones.
    let mut cut = recs[3].clone();
    cut.truncate(cut.len().saturating_sub(1));
    recs.insert(4, cut);
    let mut stream = Vec::new();
    for r in &recs {
        protojit_arena::wire::write_varint(&mut stream, r.len() as u64);
        stream.extend_from_slice(r);
    }
    let p = paths(&schema, root, &ArrowOptions::default());
    let batches = |c: &Converter| -> (Vec<RecordBatch>, Vec<String>) {
        let mut it = c.convert_delimited(&stream, 8).keep_going(true);
        let batches = it.by_ref().map(|b: Result<RecordBatch, ConvertError>| b.unwrap()).collect();
        (batches, it.skipped().iter().map(|e| e.to_string()).collect())
    };
    let tree = batches(&p.tree);
    assert_eq!(batches(&p.direct), tree);
    assert_eq!(batches(&p.chunked), tree);
}

/// A projection's columns are the same columns of the whole conversion, also where the
/// records merge messages and switch oneofs (an unselected member set after a selected one
/// clears it, as in the whole message), on every path.
#[test]
fn projected_columns_equal_the_whole_conversion() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xd1ec_0005);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let recs = records(&desc, 40, &mut rng);
        let whole = Converter::new(&schema, root, &ArrowOptions::default()).unwrap();
        // Records the whole conversion takes (a projection may take more: it does not
        // check what it does not read).
        let mut b = whole.builder();
        let recs: Vec<&Vec<u8>> = recs.iter().filter(|r| b.append(r).is_ok()).collect();
        let all = b.finish().unwrap();
        let names: Vec<String> = desc.fields().map(|f| f.name().to_owned()).collect();
        for (k, path) in [(3usize, ConvertPath::Chunked), (4, ConvertPath::DirectInterpreted), (5, ConvertPath::Tree)] {
            for start in 0..k {
                let select: Vec<String> = names.iter().skip(start).step_by(k).cloned().collect();
                let options = ArrowOptions { select: Some(select.clone()), path, ..ArrowOptions::default() };
                let projected = Converter::new(&schema, root, &options).unwrap();
                let mut b = projected.builder();
                for r in &recs {
                    b.append(r).unwrap();
                }
                let batch = b.finish().unwrap();
                for name in &select {
                    let column = |b: &RecordBatch| b.column_by_name(name).cloned();
                    assert_eq!(column(&batch), column(&all), "{root} {path:?}: `{name}` of {select:?}");
                }
            }
        }
    }
}

/// Records held in an Arrow `BinaryArray` (`convert_binary`, `append_many_in`): long
/// strings become views into the array's buffer, and every path builds the same batch.
#[test]
fn binary_arrays_convert_alike_on_every_path() {
    let schema = reflect_schema();
    let mut rng = common::Rng(0xd1ec_0006);
    for root in common::REFLECT_ROOTS {
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let recs = records(&desc, 300, &mut rng);
        for strings in [StringColumns::Views, StringColumns::Offsets] {
            let p = paths(&schema, root, &ArrowOptions { strings, ..ArrowOptions::default() });
            // The records the tree takes (more than a chunk of them), as one array.
            let mut b = p.tree.builder();
            let good: Vec<&[u8]> = recs.iter().map(Vec::as_slice).filter(|r| b.append(r).is_ok()).collect();
            assert!(good.len() > 256, "{root}: {} records", good.len());
            let array = protojit_arrow::arrow_array::BinaryArray::from_iter_values(good);
            let tree = p.tree.convert_binary(&array).unwrap();
            assert_eq!(p.chunked.convert_binary(&array).unwrap(), tree, "{root} {strings:?}: chunked");
            assert_eq!(p.direct.convert_binary(&array).unwrap(), tree, "{root} {strings:?}: direct");
        }
    }
}

/// Types the compiled appenders read whole: every scalar kind with and without presence,
/// strings and bytes, nested messages two deep, packed and unpacked lists of numbers,
/// bools and enums (open, and closed with consecutive values).
const COMPILED: &str = r#"
    syntax = "proto2";
    package c;
    enum Closed { ZERO = 0; ONE = 1; TWO = 2; }
    message Leaf { optional sint32 s = 1; optional string name = 2; repeated fixed64 f = 3 [packed = true]; optional Closed e = 4; }
    message Mid { optional Leaf leaf = 1; optional bytes b = 2; repeated sint64 z = 3; optional double d = 4; optional Leaf other = 5; }
    message Row {
        optional int32 i32 = 1; optional int64 i64 = 2; optional uint32 u32 = 3; optional uint64 u64 = 4;
        optional sint32 s32 = 5; optional sint64 s64 = 6; optional fixed32 f32 = 7; optional fixed64 f64 = 8;
        optional sfixed32 sf32 = 9; optional sfixed64 sf64 = 10; optional float fl = 11; optional double db = 12;
        optional bool bo = 13; optional string st = 14; optional bytes by = 15; optional Closed cl = 16;
        optional Mid mid = 17; repeated int32 ri = 18 [packed = true]; repeated uint64 ru = 19;
        repeated bool rb = 20 [packed = true]; repeated Closed rc = 21; repeated float rf = 22 [packed = true];
        optional string far = 300; optional Leaf leaf = 2047;
    }
"#;

const COMPILED3: &str = r#"
    syntax = "proto3";
    package c3;
    enum Open { ZERO = 0; ONE = 1; }
    message Inner { int32 a = 1; string b = 2; repeated double c = 3; Open o = 4; optional int64 p = 5; }
    message Row3 {
        int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
        fixed32 f32 = 7; fixed64 f64 = 8; float fl = 11; double db = 12; bool bo = 13; string st = 14;
        bytes by = 15; Open op = 16; Inner inner = 17; repeated int64 ri = 18; repeated Open ro = 19;
        repeated bool rb = 20; optional string os = 21; optional uint32 ou = 22; repeated sfixed32 rs = 23;
        Inner second = 200;
    }
"#;

/// Oneofs (numbers, strings, bytes and message members, at the root and nested; a closed
/// enum member), and lists of strings and bytes.
const COMPILED_ONEOF: &str = r#"
    syntax = "proto2";
    package co;
    enum Closed { A = 1; B = 2; }
    message Leaf { optional int32 n = 1; repeated string names = 2; oneof pick { string s = 3; uint64 u = 4; } }
    message Row {
        oneof choice { int32 i = 1; string t = 2; bytes b = 3; Leaf leaf = 4; Leaf other = 5; double d = 6; }
        repeated string tags = 7; repeated bytes blobs = 8; optional Leaf inner = 9;
        oneof small { sint64 z = 10; Closed c = 11; fixed32 f = 12; }
        repeated string far = 300;
    }
"#;

/// Lists of messages: nested in each other, with singular messages, lists of numbers and
/// strings, and oneofs with message members in their elements.
const COMPILED_LISTS: &str = r#"
    syntax = "proto3";
    package cl;
    message Point { sint32 x = 1; sint32 y = 2; repeated string tags = 3; }
    message Part {
        string name = 1; repeated Point points = 2; Point center = 3; repeated int64 ids = 4;
        oneof kind { int32 n = 5; Point p = 6; }
    }
    message Row { repeated Part parts = 1; repeated Point points = 2; int32 id = 3; Part main = 4; repeated bytes blobs = 5; }
"#;

/// Maps of every key kind, with string, number, enum, bytes, message, timestamp and wrapper
/// values; in a list's elements and in a map's values.
const COMPILED_MAPS: &str = r#"
    syntax = "proto3";
    package cm;
    import "google/protobuf/timestamp.proto";
    import "google/protobuf/wrappers.proto";
    enum Color { RED = 0; GREEN = 1; BLUE = 2; }
    message Item { map<string, string> labels = 1; int64 n = 2; }
    message Row {
        map<string, string> labels = 1;
        map<int32, sint64> by_i32 = 2;
        map<bool, bytes> by_bool = 3;
        map<uint64, double> by_u64 = 4;
        map<sint32, Color> colors = 5;
        map<fixed64, float> by_f64 = 6;
        map<sfixed32, uint32> by_sf32 = 7;
        repeated Item items = 8;
        string name = 9;
        map<string, Item> by_name = 10;
        map<int32, google.protobuf.Timestamp> times = 11;
        map<bool, google.protobuf.StringValue> texts = 12;
    }
"#;

/// A recursive type: the options grid cuts it at 1, 2 and 3 levels (singular and repeated).
const COMPILED_NODE: &str = r#"
    syntax = "proto3";
    package cn;
    message Node { int32 v = 1; Node left = 2; repeated Node kids = 3; string s = 4; }
"#;

/// Records the compiled appenders read: equal batches and errors on random, merged and
/// corrupted records, every column option and projections; and most records are read
/// by the code (the tree takes only what it declines: a oneof member set after a message
/// member, in merged records).
#[test]
fn compiled_appenders_equal_the_tree() {
    let mut rng = common::Rng(0xd1ec_0c0d);
    let sources = [
        (COMPILED, "c.Row"),
        (COMPILED3, "c3.Row3"),
        (COMPILED_ONEOF, "co.Row"),
        (COMPILED_LISTS, "cl.Row"),
        (COMPILED_MAPS, "cm.Row"),
        (COMPILED_NODE, "cn.Node"),
    ];
    // Nine option sets and three projections per schema.
    let sample = Sample::of(sources.len() * 12);
    for (s, (source, root)) in sources.into_iter().enumerate() {
        let schema = Schema::from_proto_source("c.proto", source).unwrap();
        let desc = schema.pool().get_message_by_name(root).unwrap();
        let clean = records(&desc, 80, &mut rng);
        let mut recs = clean.clone();
        for r in &clean {
            recs.push(corrupted(r, &clean, &mut rng));
        }
        let names: Vec<String> = desc.fields().map(|f| f.name().to_owned()).collect();
        let mut grid = options_grid();
        let selections: Vec<Vec<String>> = if source == COMPILED_ONEOF {
            // A projection keeps a oneof's message members (setting one clears a selected
            // member), which the appenders do not read unselected: these select every
            // message member of `choice`, and leave scalar members unselected (`i`, `t`,
            // `b`; `z`, `f`), which only clear; or none of them (`i t`: `leaf` and `other`
            // are then unread, their spans checked, and clear the members read).
            // `leaf other z` leaves the closed enum member `c` unread: the code checks its
            // values (a declared one clears `z`; an undeclared one is an unknown field).
            [
                "leaf other d c inner.s far",
                "leaf other tags blobs",
                "leaf other c inner.s",
                "i t",
                "d inner.n",
                "leaf other z",
            ]
            .iter()
            .map(|s| s.split(' ').map(String::from).collect())
            .collect()
        } else {
            [2usize, 3, 7].iter().map(|&k| names.iter().step_by(k).cloned().collect()).collect()
        };
        for select in selections {
            grid.push(ArrowOptions { select: Some(select), ..ArrowOptions::default() });
        }
        for (o, options) in grid.into_iter().enumerate() {
            if !sample.keeps(s, o) {
                continue;
            }
            let p = paths(&schema, root, &options);
            assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{root}: {:?}", p.compiled.path_note());
            convert_all(&p, &recs, &format!("{root} {options:?}"));
            // Whole records are the code's: the tree takes none of them (of the oneof
            // schema, none of the unmerged ones).
            // Merged maps hold keys twice, which the tree takes.
            let whole = if [COMPILED_ONEOF, COMPILED_LISTS, COMPILED_MAPS].contains(&source) {
                &clean[..80]
            } else {
                &clean[..]
            };
            let mut b = p.compiled.builder();
            for r in whole {
                b.append(r).unwrap();
            }
            assert_eq!(b.stats().tree_records, 0, "{root} {options:?}: clean records declined");
        }
    }
}

#[test]
fn columns_the_compiled_appenders_do_not_read_take_the_chunked_path_and_say_why() {
    let schema = reflect_schema();
    let options = ArrowOptions { path: ConvertPath::DirectCompiled, ..ArrowOptions::default() };
    let c = Converter::new(&schema, "reflectwkt.Wkt", &options).unwrap();
    assert_eq!(c.path(), ConvertPath::Chunked);
    assert_eq!(
        c.path_note(),
        Some("compiled column appenders cannot read these columns (504 messages (at most 256)): chunked path instead")
    );
    // Columns nested deeper than the decoder's depth limit (which the tree would enforce).
    let schema = Schema::from_proto_source("c.proto", COMPILED_NODE).unwrap();
    let decode = ArrowOptions::default().decode;
    let decode = EngineOptions { decode: decode.decode.with_max_depth(1), ..decode };
    let c = Converter::new(&schema, "cn.Node", &ArrowOptions { decode, max_recursion: 3, ..options.clone() }).unwrap();
    assert_eq!(c.path(), ConvertPath::Chunked);
    let note = c.path_note().unwrap();
    assert!(note.contains("messages 2 deep in the columns exceed the depth limit (1)"), "{note}");
}

/// Timestamps, durations (out of range too), wrappers, `Empty`, lists of timestamps, and
/// the same one level down (`child`), read by the compiled appenders, equal the tree's.
#[test]
fn compiled_appenders_read_well_known_types() {
    let schema = reflect_schema();
    let desc = schema.pool().get_message_by_name("reflectwkt.Wkt").unwrap();
    let mut rng = common::Rng(0x77c7);
    let clean = records(&desc, 60, &mut rng);
    let mut recs = clean.clone();
    for r in &clean {
        recs.push(corrupted(r, &clean, &mut rng));
    }
    let wkt = "ts dur empty w_double w_float w_int64 w_uint64 w_int32 w_uint32 w_bool w_string w_bytes r_ts level";
    let select: Vec<String> = wkt.split(' ').flat_map(|f| [f.to_owned(), format!("child.{f}")]).collect();
    let sample = Sample::of(options_grid().len());
    for (o, options) in options_grid().into_iter().enumerate() {
        if !sample.keeps(0, o) {
            continue;
        }
        let options = ArrowOptions { select: Some(select.clone()), ..options };
        let p = paths(&schema, "reflectwkt.Wkt", &options);
        assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{:?}", p.compiled.path_note());
        convert_all(&p, &recs, &format!("well-known types {options:?}"));
        let mut b = p.compiled.builder();
        for r in &clean[..60] {
            b.append(r).unwrap();
        }
        assert_eq!(b.stats().tree_records, 0, "{options:?}: clean records declined");
    }
    // Seconds whose nanoseconds overflow 64 bits: null, counted alike.
    let far = [0x0a, 0x0c, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x10, 0x01];
    let options = ArrowOptions { select: Some(select), ..ArrowOptions::default() };
    let p = paths(&schema, "reflectwkt.Wkt", &options);
    let mut k = p.compiled.builder();
    k.append(&far).unwrap();
    assert_eq!(k.stats().time_out_of_range, 1);
    convert_all(&p, &[far.to_vec()], "a timestamp out of range");
}

/// The compiled code checks strings of up to 16 bytes for ASCII inline (two words), the
/// rest by the validator (16 bytes a step, then the SIMD one): a byte that is not UTF-8 at
/// every position of strings of every length up to 20, and around every 16-byte step of
/// longer ones, fails the record as the tree fails it; valid multi-byte text there converts
/// alike.
#[test]
fn compiled_appenders_check_utf8_at_every_position() {
    let schema = Schema::from_proto_source("c.proto", COMPILED3).unwrap();
    let options = ArrowOptions { select: Some(vec!["st".into(), "i32".into()]), ..ArrowOptions::default() };
    let p = paths(&schema, "c3.Row3", &options);
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    let mut recs = Vec::new();
    for text in texts_not_ascii() {
        let mut r = vec![0x08, 0x07, 0x72, text.len() as u8];
        r.extend_from_slice(&text);
        recs.push(r);
    }
    convert_all(&p, &recs, "strings with a byte that is not ASCII");
    // The same texts replaced by a later value: every occurrence is checked, as the tree
    // decodes every one.
    let recs: Vec<Vec<u8>> = (texts_not_ascii().iter())
        .map(|text| [&[0x72, text.len() as u8][..], text, &[0x72, 0x01, b'a']].concat())
        .collect();
    convert_all(&p, &recs, "strings with a byte that is not ASCII, replaced");
    // The same texts as the second item of a list of strings (`tags`, 7), and in a oneof
    // (`t`, 2), after a row whose items are all ASCII.
    let schema = Schema::from_proto_source("c.proto", COMPILED_ONEOF).unwrap();
    let p = paths(&schema, "co.Row", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    let mut recs = Vec::new();
    for r in texts_not_ascii() {
        recs.push(vec![0x3a, 0x01, b'x', 0x3a, 0x01, b'y']);
        let mut item = vec![0x3a, 0x01, b'x', 0x3a, r.len() as u8];
        item.extend_from_slice(&r);
        recs.push(item);
        let mut member = vec![0x12, r.len() as u8];
        member.extend_from_slice(&r);
        recs.push(member);
    }
    convert_all(&p, &recs, "strings in lists and oneofs with a byte that is not ASCII");
    // The same texts in a oneof member a projection leaves unread (`t`): it clears the
    // selected members, and is `bytes` in the projection's schema (unchecked on every path).
    let select = ["leaf", "other", "tags", "blobs"].map(String::from).to_vec();
    let p = paths(&schema, "co.Row", &ArrowOptions { select: Some(select), ..ArrowOptions::default() });
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    let recs: Vec<Vec<u8>> =
        texts_not_ascii().iter().map(|text| [&[0x12, text.len() as u8][..], text].concat()).collect();
    convert_all(&p, &recs, "an unread oneof string with a byte that is not ASCII");
    // The same texts as the name of a list's second element (`parts`, 1; `name`, 1).
    let schema = Schema::from_proto_source("c.proto", COMPILED_LISTS).unwrap();
    let p = paths(&schema, "cl.Row", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    let mut recs = Vec::new();
    for r in texts_not_ascii() {
        let mut rec = vec![0x0a, 0x03, 0x0a, 0x01, b'x', 0x0a, r.len() as u8 + 2, 0x0a, r.len() as u8];
        rec.extend_from_slice(&r);
        recs.push(rec);
    }
    convert_all(&p, &recs, "strings in elements of a list of messages with a byte that is not ASCII");
}

/// Strings and bytes outside oneofs the compiled code writes straight into their columns'
/// data (no cell moved): values of every length to 40 at the record's end and before
/// other fields; a value met again, longer or shorter, replacing its row's bytes (also in
/// a message met twice); a record failing after its strings leaving none of its bytes
/// behind, and one the map check hands to the tree neither: all as the tree converts
/// them, the clean ones all the code's.
#[test]
fn compiled_appenders_write_strings_straight_into_their_columns() {
    let schema = Schema::from_proto_source("c.proto", COMPILED3).unwrap();
    let p = paths(&schema, "c3.Row3", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    // `st` 14, `by` 15, `i32` 1, `inner` 17 { `b` 2 }.
    let st = |t: &[u8]| [&[0x72, t.len() as u8][..], t].concat();
    let by = |t: &[u8]| [&[0x7a, t.len() as u8][..], t].concat();
    let inner_b = |t: &[u8]| [&[0x8a, 0x01, t.len() as u8 + 2, 0x12, t.len() as u8][..], t].concat();
    let (mut clean, mut failing) = (Vec::new(), Vec::new());
    for len in 0..=40 {
        let text: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        clean.push(st(&text));
        clean.push([st(&text), vec![0x08, 0x01], by(&[0xff, 0x00]), inner_b(&text)].concat());
        clean.push([st(&text), st(b"xyz"), by(&text), by(b"")].concat());
        clean.push([st(b"xyz"), st(&text), inner_b(b"xyz"), inner_b(&text)].concat());
        clean.push([inner_b(&text), vec![0x08, 0x02], inner_b(b"q")].concat());
        // The same strings, then a field that is malformed (a length past the end).
        failing.push([st(&text), by(&text), inner_b(&text), vec![0x72, 0x7f]].concat());
    }
    let mut recs = Vec::new();
    for (c, f) in clean.iter().zip(&failing) {
        recs.push(c.clone());
        recs.push(f.clone());
    }
    convert_all(&p, &recs, "strings straight into their columns");
    let mut b = p.compiled.builder();
    for r in &clean {
        b.append(r).unwrap();
    }
    assert_eq!(b.stats().tree_records, 0, "clean records declined");
    // A record whose map holds a key twice: the code writes its `name`, then the map check
    // hands it to the tree, which writes it again.
    let schema = Schema::from_proto_source("c.proto", COMPILED_MAPS).unwrap();
    let p = paths(&schema, "cm.Row", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    let name = |t: &[u8]| [&[0x4a, t.len() as u8][..], t].concat();
    let label = |k: u8, v: u8| vec![0x0a, 0x06, 0x0a, 0x01, k, 0x12, 0x01, v];
    let recs = vec![
        name(b"first"),
        [name(b"twice"), label(b'k', b'a'), label(b'k', b'b')].concat(),
        [name(b"after"), label(b'k', b'a')].concat(),
        [label(b'k', b'a'), name(b"x"), label(b'k', b'b'), name(b"a longer name than sixteen bytes")].concat(),
        name(b""),
    ];
    convert_all(&p, &recs, "a map key twice after a name");
    let mut b = p.compiled.builder();
    for r in &recs {
        b.append(r).unwrap();
    }
    assert_eq!(b.stats().tree_records, 2, "the two records with a key twice");
}

/// A map holding a key twice goes to the tree (one entry per distinct key, the last): keys
/// equal as their type reads them, not as written (an `int32` in 5 or 10 bytes; an absent
/// key and the empty string), counted; distinct keys stay the code's.
#[test]
fn compiled_appenders_send_a_map_key_met_twice_to_the_tree() {
    let schema = Schema::from_proto_source("c.proto", COMPILED_MAPS).unwrap();
    let p = paths(&schema, "cm.Row", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    let entry = |field: u8, body: &[u8]| {
        let mut e = vec![field << 3 | 2, body.len() as u8];
        e.extend_from_slice(body);
        e
    };
    let minus_one_10 = [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x02];
    let minus_one_5 = [0x08, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x10, 0x04];
    let twice: Vec<(&str, Vec<u8>)> = vec![
        ("a string key", [entry(1, b"\x0a\x01a\x12\x011"), entry(1, b"\x0a\x01a\x12\x012")].concat()),
        ("an int32 key in 10 and 5 bytes", [entry(2, &minus_one_10), entry(2, &minus_one_5)].concat()),
        ("an absent key and the empty one", [entry(1, b"\x12\x01x"), entry(1, b"\x0a\x00\x12\x01y")].concat()),
        ("a bool key", [entry(3, b"\x08\x01\x12\x00"), entry(3, b"\x08\x01")].concat()),
        ("in a list's element", entry(8, &[entry(1, b"\x0a\x01k"), entry(1, b"\x0a\x01k")].concat())),
        (
            "among 20 distinct keys",
            (0..21u8).flat_map(|k| entry(4, &[0x08, k % 20, 0x21, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f])).collect(),
        ),
    ];
    let distinct: Vec<u8> = [
        entry(1, b"\x0a\x01a\x12\x011"),
        entry(1, b"\x0a\x01b"),
        entry(2, &minus_one_10),
        entry(2, b"\x08\x01"),
        entry(8, &entry(1, b"\x0a\x01k")),
        entry(8, &entry(1, b"\x0a\x01k")),
    ]
    .concat();
    let mut all: Vec<Vec<u8>> = twice.iter().map(|(_, r)| r.clone()).collect();
    all.push(distinct.clone());
    convert_all(&p, &all, "maps holding a key twice");
    for (what, r) in &twice {
        let mut k = p.compiled.builder();
        k.append(r).unwrap();
        assert_eq!(k.stats().tree_records, 1, "{what}");
    }
    let mut k = p.compiled.builder();
    k.append(&distinct).unwrap();
    assert_eq!(k.stats().tree_records, 0, "distinct keys, and one key in each of two maps");
}

/// A message cut at `max_recursion` has no column but is checked as the tree checks it:
/// a string that is not UTF-8 or nesting past the depth limit below the cut fails the
/// record alike (whether met once, twice as a singular field, or in a list); well-formed
/// ones stay the code's.
#[test]
fn compiled_appenders_check_messages_cut_at_max_recursion_as_the_tree_does() {
    let schema = Schema::from_proto_source("c.proto", COMPILED_NODE).unwrap();
    let nest = |field: u8, n: usize, leaf: &[u8]| {
        let mut m = leaf.to_vec();
        for _ in 0..n {
            let mut outer = vec![field << 3 | 2, m.len() as u8];
            outer.extend_from_slice(&m);
            m = outer;
        }
        m
    };
    let (good, bad) = ([0x22, 0x01, b'a'], [0x22, 0x01, 0xff]);
    let options = ArrowOptions {
        max_recursion: 1,
        decode: EngineOptions {
            decode: ArrowOptions::default().decode.decode.with_max_depth(6),
            ..ArrowOptions::default().decode
        },
        ..ArrowOptions::default()
    };
    let p = paths(&schema, "cn.Node", &options);
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{:?}", p.compiled.path_note());
    let well_formed =
        vec![nest(2, 4, &good), nest(3, 4, &good), [nest(2, 3, &good), nest(2, 3, &good)].concat(), nest(2, 6, &[])];
    let malformed = vec![
        nest(2, 4, &bad),
        nest(3, 3, &bad),
        // The bad one first: a singular field met twice keeps both spans.
        [nest(2, 3, &bad), nest(2, 3, &good)].concat(),
        [nest(3, 1, &good), nest(3, 2, &bad)].concat(),
        // Seven levels below the record: past the limit of 6.
        nest(2, 7, &[]),
        nest(3, 7, &good),
    ];
    good_and_bad_alike(&p, &well_formed, &malformed, "messages cut at max_recursion");
}

/// `good` and `bad` records through every path alike (`convert_all`); then through the
/// compiled appenders, every good one read by the code (none handed to the tree) and every
/// bad one failing.
fn good_and_bad_alike(p: &Paths, good: &[Vec<u8>], bad: &[Vec<u8>], what: &str) {
    let all: Vec<Vec<u8>> = good.iter().chain(bad).cloned().collect();
    convert_all(p, &all, what);
    let mut k = p.compiled.builder();
    for (i, r) in good.iter().enumerate() {
        k.append(r).unwrap_or_else(|e| panic!("{what}: good record {i}: {e}"));
    }
    assert_eq!(k.stats().tree_records, 0, "{what}: well-formed records stay the code's");
    for (i, r) in bad.iter().enumerate() {
        assert!(k.append(r).is_err(), "{what}: bad record {i} [{}]", hex(r));
    }
}

/// Closed enums whose declared values have gaps (and an alias): an undeclared value is an
/// unknown field, which the tree takes (counted); declared ones stay the code's; groups,
/// singular and repeated, read by the code.
#[test]
fn compiled_appenders_read_sparse_closed_enums_and_groups_as_the_tree_does() {
    let schema = Schema::from_proto_source(
        "s.proto",
        r#"
        syntax = "proto2";
        package se;
        enum Sparse { option allow_alias = true; S1 = 1; S5 = 5; FIVE = 5; S900 = 900; SNEG = -3; }
        message Row {
            optional Sparse s = 1;
            repeated Sparse many = 2;
            optional group G = 3 { optional int32 a = 4; optional Sparse e = 5; }
            repeated group R = 6 { optional string t = 7; }
        }
        "#,
    )
    .unwrap();
    let p = paths(&schema, "se.Row", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{:?}", p.compiled.path_note());
    let value = |v: i64| {
        let mut out = vec![0x08];
        let mut u = v as u64;
        while u >= 0x80 {
            out.push(u as u8 | 0x80);
            u >>= 7;
        }
        out.push(u as u8);
        out
    };
    let declared = [1, 5, 900, -3];
    let undeclared = [0, 2, 4, 6, 899, 901, -1, -4];
    let mut recs: Vec<Vec<u8>> = declared.iter().chain(&undeclared).map(|&v| value(v)).collect();
    // Groups: G { a: 7, e: S5 }, two R, an unterminated R, and an end tag of another group.
    recs.push(vec![0x1b, 0x20, 0x07, 0x28, 0x05, 0x1c, 0x33, 0x3a, 0x01, b'x', 0x34, 0x33, 0x34]);
    recs.push(vec![0x33, 0x3a, 0x01, b'x']);
    recs.push(vec![0x1b, 0x20, 0x07, 0x34]);
    recs.push(vec![0x1b, 0x28, 0x02, 0x1c]);
    convert_all(&p, &recs, "sparse closed enums and groups");
    let mut k = p.compiled.builder();
    for r in &recs[..declared.len()] {
        k.append(r).unwrap();
    }
    k.append(&recs[declared.len() + undeclared.len()]).unwrap();
    assert_eq!(k.stats().tree_records, 0, "declared values and whole groups stay the code's");
    for r in &recs[declared.len()..declared.len() + undeclared.len()] {
        k.append(r).unwrap();
    }
    assert_eq!(k.stats().tree_records, undeclared.len() as u64, "undeclared values go to the tree");
}

/// A record declined inside an element of a list of messages, after the element's string
/// was written, leaves no row behind: the next record's element (without a name) reads
/// as absent, not as the declined one's name.
#[test]
fn compiled_appenders_leave_no_row_of_a_record_declined_inside_a_list_element() {
    let schema = Schema::from_proto_source("c.proto", COMPILED_LISTS).unwrap();
    let p = paths(&schema, "cl.Row", &ArrowOptions::default());
    assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled);
    // parts: [{ids: [1]}, {name: "é", then field 3 (a message) as a truncated varint}]
    let declined = [0x0a, 0x02, 0x20, 0x01, 0x0a, 0x06, 0x0a, 0x02, 0xc3, 0xa9, 0x18, 0x8d];
    // parts: [{}, {ids: [7]}], id: 3
    let next = [0x0a, 0x00, 0x0a, 0x02, 0x20, 0x07, 0x18, 0x03];
    convert_all(&p, &[declined.to_vec(), next.to_vec()], "a record declined inside a list element");
    let mut k = p.compiled.builder();
    assert!(k.append(&declined).is_err());
    k.append(&next).unwrap();
    assert_eq!(k.stats().tree_records, 0, "the code reads the next record");
}

/// Texts with a byte that is not UTF-8, or a valid two-byte character: at every position of
/// every length up to 20, and around the 16-byte steps of lengths to 120 (a one-byte length
/// prefix).
fn texts_not_ascii() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // Every position to 20 bytes (the inline two-word check, and past it); longer, the
    // positions around the validator's 16-byte steps, and the last 16.
    for len in (1..=20usize).chain([31, 32, 33, 47, 63, 64, 65, 100, 120]) {
        let positions: Vec<usize> = if len <= 20 {
            (0..len).collect()
        } else {
            (0..len).filter(|at| [0, 7, 8, 15].contains(&(at % 16)) || at + 17 > len).collect()
        };
        for at in positions {
            for bad in [&[0xffu8][..], &[0xc3], &[0xc3, 0xa9]] {
                let mut text = vec![b'a'; len];
                text.splice(at..at + 1, bad.iter().copied());
                out.push(text);
            }
        }
    }
    out
}

/// With the default engine the appenders compile in the background: the chunked path fills
/// the rows until they are there (counted), then the code; the batch is the same.
#[test]
fn rows_converted_while_the_appenders_compile_take_the_chunked_path() {
    let schema = Schema::from_proto_source("c.proto", COMPILED).unwrap();
    let desc = schema.pool().get_message_by_name("c.Row").unwrap();
    let recs = records(&desc, 200, &mut common::Rng(0xd1ec_0b9d));
    let options = ArrowOptions { path: ConvertPath::DirectCompiled, ..ArrowOptions::default() };
    let tree = Converter::new(&schema, "c.Row", &ArrowOptions { path: ConvertPath::Tree, ..options.clone() }).unwrap();
    let mut t = tree.builder();
    recs.iter().for_each(|r| t.append(r).unwrap());
    let want = t.finish().unwrap();
    let compiled = Converter::new(&schema, "c.Row", &options).unwrap();
    let mut b = compiled.builder();
    // Whatever the compiler's progress, each record is converted by one path or the other.
    recs.iter().for_each(|r| b.append(r).unwrap());
    assert_eq!(b.finish().unwrap(), want);
    let (code, chunked, tree) = compiled.compiled_records();
    assert_eq!((code + chunked, tree), (recs.len() as u64, 0));
    assert!(compiled.wait_for_appender());
    let mut b = compiled.builder();
    recs.iter().for_each(|r| b.append(r).unwrap());
    assert_eq!(b.finish().unwrap(), want);
    assert_eq!(compiled.compiled_records(), (code + recs.len() as u64, chunked, 0));
    // The interpreter engine compiles nothing.
    let interp = ArrowOptions { decode: options.decode.with_kind(protojit::EngineKind::Interpreter), ..options };
    let c = Converter::new(&schema, "c.Row", &interp).unwrap();
    assert_eq!(
        (c.path(), c.path_note()),
        (ConvertPath::Chunked, Some("the interpreter engine compiles nothing: chunked path instead"))
    );
}

/// A random schema's source: messages `g.M0..M2` (which may name each other, so recursion
/// cuts come up), proto2 or proto3, with fields of every scalar kind, an enum (proto2: closed,
/// with gaps), singular, optional, repeated, maps of scalar and message values, oneofs,
/// timestamps and wrappers, at short and long field numbers; in proto2, groups and
/// extensions of every kind.
fn generated_schema(rng: &mut common::Rng) -> String {
    let proto2 = rng.below(2) == 0;
    let scalars = [
        "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64",
        "float", "double", "bool", "string", "bytes", "E",
    ];
    let keys = ["int32", "int64", "uint32", "bool", "string", "sint64", "fixed32"];
    let wkt = ["google.protobuf.Timestamp", "google.protobuf.Int64Value", "google.protobuf.StringValue"];
    let mut src = format!(
        "syntax = \"{}\";\npackage g;\nimport \"google/protobuf/timestamp.proto\";\nimport \"google/protobuf/wrappers.proto\";\n",
        if proto2 { "proto2" } else { "proto3" }
    );
    src += "enum E { E0 = 0; E1 = 1; E7 = 7; }\n";
    for m in 0..3 {
        src += &format!("message M{m} {{\n");
        let mut number = 0u32;
        let mut next = |rng: &mut common::Rng| {
            number += 1 + if rng.below(4) == 0 { 40 + rng.below(300) as u32 } else { 0 };
            number
        };
        let mut oneof: Vec<String> = Vec::new();
        for f in 0..2 + rng.below(6) {
            let ty = match rng.below(10) {
                0 | 1 => format!("M{}", rng.below(3)),
                2 => rng.pick(&wkt).to_string(),
                _ => rng.pick(&scalars).to_string(),
            };
            let n = next(rng);
            match rng.below(8) {
                0 => {
                    let value =
                        if rng.below(3) == 0 { format!("M{}", rng.below(3)) } else { rng.pick(&scalars).to_string() };
                    src += &format!("  map<{}, {value}> f{f} = {n};\n", rng.pick(&keys));
                }
                1 | 2 => src += &format!("  repeated {ty} f{f} = {n};\n"),
                3 => oneof.push(format!("    {ty} f{f} = {n};\n")),
                4 if !ty.starts_with('M') && !ty.starts_with("google") || proto2 => {
                    src += &format!("  optional {ty} f{f} = {n};\n")
                }
                _ if proto2 => src += &format!("  optional {ty} f{f} = {n};\n"),
                _ => src += &format!("  {ty} f{f} = {n};\n"),
            }
        }
        if !oneof.is_empty() {
            src += &format!("  oneof pick {{\n{}  }}\n", oneof.concat());
        }
        if proto2 && rng.below(2) == 0 {
            // A group (which may hold a message that recurses, cut with it).
            let label = if rng.below(2) == 0 { "optional" } else { "repeated" };
            let inner = format!("optional int32 a = 1; optional string s = 2; optional M{} m = 3;", rng.below(3));
            src += &format!("  {label} group G{m} = {} {{ {inner} }}\n", next(rng));
        }
        if proto2 {
            src += "  extensions 20000 to 20010;\n";
        }
        src += "}\n";
    }
    if proto2 {
        // Extensions, which have no columns but which the tree decodes (and checks).
        let m = rng.below(3);
        src += &format!(
            "extend M{m} {{\n  optional string e1 = 20000;\n  repeated sint32 e2 = 20001 [packed = true];\n  \
             optional M{} e3 = 20002;\n  optional group X{m} = 20003 {{ optional string u = 1; }}\n  \
             repeated fixed64 e4 = 20004;\n}}\n",
            rng.below(3)
        );
    }
    src
}

/// Generated schemas (see [`generated_schema`]) with random, merged and corrupted records:
/// the compiled appenders' batches and errors equal the tree's under several option sets and
/// a projection, and the code reads every generated type whose plan is not too large.
#[test]
fn compiled_appenders_equal_the_tree_on_generated_schemas() {
    let mut rng = common::Rng(0x5c4e_3a11);
    let (mut compiled, mut ran) = (0, 0);
    let sample = Sample::of(24 * 3);
    for round in 0..24 {
        let source = generated_schema(&mut rng);
        let schema = Schema::from_proto_source("g.proto", &source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        let desc = schema.pool().get_message_by_name("g.M0").unwrap();
        let clean = records(&desc, 30, &mut rng);
        let mut recs = clean.clone();
        for r in &clean {
            recs.push(corrupted(r, &clean, &mut rng));
        }
        let names: Vec<String> = desc.fields().map(|f| f.name().to_owned()).collect();
        let grid = [
            ArrowOptions::default(),
            ArrowOptions {
                strings: StringColumns::Views,
                enums: EnumColumns::Number,
                max_recursion: 1,
                ..ArrowOptions::default()
            },
            ArrowOptions { select: Some(names.iter().step_by(2).cloned().collect()), ..ArrowOptions::default() },
        ];
        for (o, options) in grid.into_iter().enumerate() {
            if !sample.keeps(round, o) {
                continue;
            }
            ran += 1;
            let p = paths(&schema, "g.M0", &options);
            let what = format!("round {round} {options:?}\n{source}");
            match p.compiled.path_note() {
                None => compiled += 1,
                // Recursive types expand once per path: a plan may be too large.
                Some(note) => assert!(note.contains("(at most 256)"), "{what}: {note}"),
            }
            convert_all(&p, &recs, &what);
        }
    }
    assert!(compiled * 6 >= ran * 5, "only {compiled} of {ran} generated conversions took the compiled path");
}

/// Extensions of every kind (no column; the tree still checks them), groups with and
/// without columns, and unknown groups (in a projection, every unselected group).
const COMPILED_EXTENDED: &str = r#"
    syntax = "proto2";
    package cx;
    message Sub { optional string s = 1; repeated sint32 v = 2 [packed = true]; }
    message Row {
        optional int32 id = 1;
        optional group G = 2 { optional string t = 3; repeated fixed32 f = 4; }
        repeated group R = 5 { optional int64 n = 6; }
        extensions 100 to 200;
    }
    extend Row {
        optional string ext_s = 100;
        repeated int32 ext_n = 101 [packed = true];
        optional Sub ext_m = 102;
        optional group ExtG = 103 { optional string u = 104; optional Sub sub = 105; }
        repeated fixed64 ext_f = 106;
        optional uint32 ext_u = 107;
    }
"#;

/// A recursive message field encoded as a group (what editions' DELIMITED encoding makes
/// of a field: `kid` is turned into `TYPE_GROUP` in the descriptor), cut at
/// `max_recursion`: the cut field is a group without columns, walked by the code and
/// checked as the tree checks it.
fn delimited_node_schema() -> Schema {
    use prost_reflect::prost_types::{field_descriptor_proto::Type, FileDescriptorSet};
    let source = r#"
        syntax = "proto2";
        package cd;
        message Node { optional int32 v = 1; optional Node kid = 2; optional string s = 3; }
    "#;
    let schema = Schema::from_proto_source("d.proto", source).unwrap();
    let mut files: Vec<_> = schema.pool().file_descriptor_protos().cloned().collect();
    let file = files.iter_mut().find(|f| f.package() == "cd").unwrap();
    let kid = file.message_type[0].field.iter_mut().find(|f| f.name() == "kid").unwrap();
    kid.set_type(Type::Group);
    Schema::from_descriptor_set(&FileDescriptorSet { file: files }.encode_to_vec()).unwrap()
}

/// A tag's bytes.
fn tag(number: u32, wire_type: u8) -> Vec<u8> {
    let mut v = u64::from(number) << 3 | u64::from(wire_type);
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// A length-delimited field (shorter than 128 bytes).
fn len_field(number: u32, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 128);
    [tag(number, 2), vec![payload.len() as u8], payload.to_vec()].concat()
}

/// A group field: its start tag, `body`, its end tag.
fn group_field(number: u32, body: &[u8]) -> Vec<u8> {
    [tag(number, 3), body.to_vec(), tag(number, 4)].concat()
}

#[test]
fn compiled_appenders_read_past_extensions_and_groups_as_the_tree_does() {
    let schema = Schema::from_proto_source("x.proto", COMPILED_EXTENDED).unwrap();
    let sub = |s: &[u8]| [len_field(1, s), len_field(2, &[0x02, 0x01])].concat();
    let good: Vec<Vec<u8>> = vec![
        [tag(1, 0), vec![7], len_field(100, b"ok")].concat(),
        [len_field(101, &[0x01, 0xac, 0x02]), tag(101, 0), vec![5]].concat(),
        len_field(102, &sub(b"x")),
        group_field(103, &[len_field(104, "é".as_bytes()), len_field(105, &sub(b"y"))].concat()),
        [tag(106, 1), vec![1; 8], len_field(106, &[2; 16]), tag(107, 0), vec![0x80, 0x01]].concat(),
        // The group with columns, an unknown group inside it and at the root (nested).
        [
            group_field(
                2,
                &[len_field(3, b"t"), group_field(50, &group_field(51, &[tag(52, 0), vec![1]].concat()))].concat(),
            ),
            group_field(60, &[]),
            group_field(5, &[tag(6, 0), vec![9]].concat()),
            group_field(5, &[]),
        ]
        .concat(),
        // Unknown groups nested to the limit (6: the record's own fields are at depth 0,
        // `G`'s at 1).
        (0..6).rev().fold(Vec::new(), |inner, n| group_field(70 + n, &inner)),
        group_field(2, &(0..5).rev().fold(Vec::new(), |inner, n| group_field(70 + n, &inner))),
    ];
    let bad: Vec<Vec<u8>> = vec![
        len_field(100, &[0xff]),
        len_field(101, &[0x80]),
        len_field(106, &[0; 5]),
        len_field(102, &sub(&[0xc3])),
        len_field(102, &[0x12, 0x01, 0x80]),
        group_field(103, &len_field(104, &[0xff])),
        group_field(103, &len_field(105, &sub(&[0xff]))),
        [tag(103, 3), len_field(104, b"u")].concat(),
        [tag(103, 3), tag(104, 4)].concat(),
        [tag(60, 3), tag(1, 0), vec![1]].concat(),
        [tag(60, 3), tag(61, 4)].concat(),
        group_field(2, &[tag(50, 3), tag(51, 4)].concat()),
        (0..7).rev().fold(Vec::new(), |inner, n| group_field(70 + n, &inner)),
        group_field(2, &(0..6).rev().fold(Vec::new(), |inner, n| group_field(70 + n, &inner))),
        group_field(103, &(0..6).rev().fold(Vec::new(), |inner, n| group_field(70 + n, &inner))),
    ];
    let decode = ArrowOptions::default().decode;
    let decode = EngineOptions { decode: decode.decode.with_max_depth(6), ..decode };
    for select in [None, Some(vec!["id".to_owned()]), Some(vec!["r".to_owned()])] {
        let options = ArrowOptions { decode, select, ..ArrowOptions::default() };
        let p = paths(&schema, "cx.Row", &options);
        assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{:?}", p.compiled.path_note());
        good_and_bad_alike(&p, &good, &bad, &format!("extensions and groups, {:?}", options.select));
    }
}

#[test]
fn compiled_appenders_check_delimited_messages_cut_at_max_recursion_as_the_tree_does() {
    let schema = delimited_node_schema();
    let kid = schema.pool().get_message_by_name("cd.Node").unwrap().get_field_by_name("kid").unwrap();
    assert!(kid.is_group(), "the descriptor says `kid` is a group");
    let nest = |n: usize, leaf: &[u8]| (0..n).fold(leaf.to_vec(), |inner, _| group_field(2, &inner));
    let (good, bad) = (len_field(3, b"a"), len_field(3, &[0xff]));
    let decode = ArrowOptions::default().decode;
    let decode = EngineOptions { decode: decode.decode.with_max_depth(6), ..decode };
    for max_recursion in [1, 2] {
        let p = paths(&schema, "cd.Node", &ArrowOptions { decode, max_recursion, ..ArrowOptions::default() });
        assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{:?}", p.compiled.path_note());
        let well_formed = vec![nest(4, &good), [nest(3, &good), nest(2, &good)].concat(), nest(6, &[])];
        let malformed = vec![
            nest(4, &bad),
            [nest(3, &bad), nest(3, &good)].concat(),
            nest(7, &[]),
            [tag(2, 3), good.clone()].concat(),
            [nest(3, &good), tag(2, 4)].concat(),
        ];
        good_and_bad_alike(&p, &well_formed, &malformed, &format!("delimited messages cut at {max_recursion}"));
    }
}

/// The auto path (the default) races the compiled appenders against the chunked path once
/// both are compiled, and the faster converts the rest: the race decides on enough input,
/// says so with each arm's time, both arms fill rows, and the batch is the tree path's.
#[test]
fn auto_path_races_and_keeps_the_faster_with_the_tree_batch() {
    let mut rng = common::Rng(0x0a07_0ace);
    let schema = Schema::from_proto_source("c.proto", COMPILED_LISTS).unwrap();
    let desc = schema.pool().get_message_by_name("cl.Row").unwrap();
    let distinct = records(&desc, 200, &mut rng);
    // Past both arms' share of the race (a few chunks and a MiB of input each).
    let mut recs = Vec::new();
    while recs.iter().map(Vec::len).sum::<usize>() < 6 << 20 {
        recs.extend(distinct.iter().cloned());
    }
    let jit = ArrowOptions {
        decode: ArrowOptions::default().decode.with_kind(protojit::EngineKind::Jit),
        ..ArrowOptions::default()
    };
    let auto = Converter::new(&schema, "cl.Row", &jit).unwrap();
    assert_eq!(auto.path(), ConvertPath::Auto);
    let tree = Converter::new(&schema, "cl.Row", &ArrowOptions { path: ConvertPath::Tree, ..jit.clone() }).unwrap();
    let batch = |c: &Converter| {
        let mut b = c.builder();
        assert!(b.append_many(&mut recs.iter().map(Vec::as_slice)).unwrap());
        b.finish().unwrap()
    };
    assert_eq!(batch(&auto), batch(&tree));
    assert!(matches!(auto.path(), ConvertPath::DirectCompiled | ConvertPath::Chunked), "{:?}", auto.path());
    let note = auto.path_note().unwrap_or_default();
    assert!(note.starts_with("raced on the first chunks: compiled column appenders "), "{note}");
    let (compiled, chunked, tree_rows) = auto.compiled_records();
    assert!(compiled > 0 && chunked > 0, "{compiled} {chunked}");
    assert_eq!(compiled + chunked + tree_rows, recs.len() as u64);
}

/// Varints of every length (one to ten bytes, padded with continuation bytes, a tenth byte
/// with high bits set), eleven bytes, and cut short, in every kind of varint field and in
/// length prefixes, alone and inside an embedded message: every path gives the tree's rows
/// and errors. (Compiled code reads up to three bytes inline, two for lengths, tags, enums
/// and bools, 64-bit fields' varints up to eight from one word, and longer ones out of line:
/// each boundary is a length here.)
#[test]
fn varints_of_every_length_convert_alike() {
    const SCHEMA: &str = r#"
        syntax = "proto2";
        package v;
        enum E { A = 0; B = 1; C = 2; }
        message M {
            optional int32 a = 1; optional uint32 b = 2; optional sint32 c = 3; optional E d = 4;
            optional bool e = 5; optional int64 f = 6; optional uint64 g = 7; optional sint64 h = 8;
            optional string s = 9; optional bytes y = 10; optional M child = 11;
            repeated int32 p = 12 [packed = true]; repeated uint64 q = 13;
        }
    "#;
    let varint = protojit_corpus::varint_of_len;
    let mut records: Vec<Vec<u8>> = Vec::new();
    for len in 1..=11 {
        let full = protojit_corpus::full_varint_value(len);
        for number in [1u8, 2, 3, 4, 5, 6, 7, 8, 13] {
            for v in [varint(full, len), varint(1, len)] {
                let field = [&[number << 3][..], &v].concat();
                records.push(field.clone());
                records.push([&[0x4a, 0x01, b'x'][..], &field, &[0x52, 0x01, 0xab]].concat());
                records.push([&[0x5a, field.len() as u8][..], &field, &[0x08, 0x01]].concat());
                records.push(field[..field.len() - 1].to_vec());
            }
        }
        for (number, body) in [(9u8, &b"abc"[..]), (10, &[0xfe, 0xff, 0x00][..]), (11, &[0x08, 0x05][..])] {
            let field = [&[number << 3 | 2][..], &varint(body.len() as u64, len), body].concat();
            records.push(field.clone());
            records.push([&[0x5a, field.len() as u8][..], &field, &[0x08, 0x01]].concat());
            records.push(field[..field.len() - 1].to_vec());
        }
        let items: Vec<u8> = (1..=10).flat_map(|l| varint(u64::MAX, l)).collect();
        records.push([&[0x62][..], &varint(items.len() as u64, len), &items].concat());
        // Tags of every length: field 1's (padded), and an unknown field's past 2047.
        let tag = [varint(1 << 3, len), vec![0x05]].concat();
        records.push(tag.clone());
        records.push([&tag[..], &[0x10, 0x07]].concat());
        records.push([varint(5000 << 3, len), vec![0x01, 0x08, 0x02]].concat());
    }
    let schema = Schema::from_proto_source("v.proto", SCHEMA).unwrap();
    for enums in [EnumColumns::Dictionary, EnumColumns::Number] {
        let p = paths(&schema, "v.M", &ArrowOptions { enums, max_recursion: 2, ..ArrowOptions::default() });
        assert_eq!(p.compiled.path(), ConvertPath::DirectCompiled, "{:?}", p.compiled.path_note());
        convert_all(&p, &records, &format!("varints, {enums:?}"));
    }
}
