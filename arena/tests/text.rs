//! Strings read as text: without a check only where the decoder checked them (proto3 strings under a policy that checks them), checked on read everywhere else, and never trusted in a tree a writer built.

mod support;

use protojit_arena::field::Bytes;
use protojit_arena::wire::write_varint;
use protojit_arena::{Arena, BlockMut, Layouts, SlotIndex, Utf8Check};
use support::{decode, pool};

const PROTO3: &str = r#"
syntax = "proto3";
package t3;
message M { string s = 1; repeated string list = 2; bytes b = 3; }
"#;
const PROTO2: &str = r#"
syntax = "proto2";
package t2;
message M { optional string s = 1; repeated string list = 2; optional bytes b = 3; }
"#;

fn field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    write_varint(out, (number << 3 | 2) as u64);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

const BAD: &[u8] = b"\xff\xfe";

#[test]
fn checked_proto3_strings_read_as_text_and_unchecked_ones_are_checked_on_read() {
    let layouts = Layouts::new(&pool("t3.proto", PROTO3)).unwrap();
    let s = SlotIndex::new(0);
    let list = SlotIndex::new(1);
    let mut good = Vec::new();
    field(&mut good, 1, "héllo".as_bytes());
    field(&mut good, 2, b"a");
    field(&mut good, 2, "ü".as_bytes());
    field(&mut good, 3, BAD);
    let arena = Arena::new();
    let tree = decode(&layouts, "t3.M", &good, &arena, Utf8Check::Features).unwrap();
    assert_eq!(tree.get_str(s), Ok("héllo"));
    assert_eq!(tree.vec_get_str(list, 1), Ok("ü"));
    assert_eq!(tree.vec_strs(list).texts().collect::<Vec<_>>(), [Ok("a"), Ok("ü")]);
    assert_eq!(tree.vec_strs(list).strs().unwrap().collect::<Vec<_>>(), ["a", "ü"]);
    // A bytes field read as text is checked.
    assert_eq!(tree.get_str(SlotIndex::new(2)), Err(BAD));
    let access = tree.layout().access::<Bytes>(s).unwrap();
    assert_eq!(tree.get_str_at(&access), Some((true, Ok("héllo"))));

    // The decoder refuses a bad proto3 string when it checks them ...
    let mut bad = Vec::new();
    field(&mut bad, 1, BAD);
    field(&mut bad, 2, b"ok");
    field(&mut bad, 2, BAD);
    assert!(decode(&layouts, "t3.M", &bad, &arena, Utf8Check::Features).is_err());
    // ... and with checking off, the reads check: the bytes come back as `Err`.
    let tree = decode(&layouts, "t3.M", &bad, &arena, Utf8Check::Off).unwrap();
    assert_eq!(tree.get_str(s), Err(BAD));
    assert_eq!(tree.vec_get_str(list, 1), Err(BAD));
    assert_eq!(tree.vec_strs(list).texts().collect::<Vec<_>>(), [Ok("ok"), Err(BAD)]);
    assert!(tree.vec_strs(list).strs().is_none());
    let access = tree.layout().access::<Bytes>(s).unwrap();
    assert_eq!(tree.get_str_at(&access), Some((true, Err(BAD))));
}

#[test]
fn proto2_strings_are_checked_on_read_whatever_the_tree_says() {
    let layouts = Layouts::new(&pool("t2.proto", PROTO2)).unwrap();
    let mut input = Vec::new();
    field(&mut input, 1, BAD);
    field(&mut input, 2, BAD);
    field(&mut input, 2, b"fine");
    let arena = Arena::new();
    // Proto3's policy does not check proto2 strings, so the tree holds these bytes.
    let tree = decode(&layouts, "t2.M", &input, &arena, Utf8Check::Features).unwrap();
    assert_eq!(tree.get_str(SlotIndex::new(0)), Err(BAD));
    assert_eq!(tree.vec_strs(SlotIndex::new(1)).texts().collect::<Vec<_>>(), [Err(BAD), Ok("fine")]);
    assert!(tree.vec_strs(SlotIndex::new(1)).strs().is_none());
    // Checking every string, the decoder refuses them.
    assert!(decode(&layouts, "t2.M", &input, &arena, Utf8Check::All).is_err());
}

#[test]
fn a_tree_a_writer_built_is_checked_on_read() {
    let layouts = Layouts::new(&pool("t3.proto", PROTO3)).unwrap();
    let arena = Arena::new();
    let mut block = BlockMut::alloc(&arena, &layouts, layouts.index_of("t3.M").unwrap());
    // A writer stores any bytes, even in a proto3 string slot ...
    block.set_bytes(SlotIndex::new(0), BAD).unwrap();
    block.push_bytes(SlotIndex::new(1), BAD).unwrap();
    let tree = block.into_ref();
    // ... so its reader does not take them for text.
    assert_eq!(tree.get_str(SlotIndex::new(0)), Err(BAD));
    assert_eq!(tree.vec_get_str(SlotIndex::new(1), 0), Err(BAD));
    assert!(tree.vec_strs(SlotIndex::new(1)).strs().is_none());
}
