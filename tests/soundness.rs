//! The safe API cannot be misused into undefined behaviour: each case here was a hole
//! (a safe call that could write or read through a wrong address) and is now refused.

use std::sync::Arc;

use protojit::{Arena, DecodeErrorKind, EngineKind, EngineOptions, Schema};
use protojit::{CompileOptions, Engines};
use protojit_arena::interp::Interp;
use protojit_arena::{Arena as RawArena, BlockMut, BlockRef, Layouts, SlotIndex};
use protojit_jit::{Compiled, JitError};

const SCHEMA: &str = r#"
    syntax = "proto3";
    package s;
    message Big { repeated Empty empties = 1; Big child = 2; string name = 3; int64 n = 4; bytes blob = 5; }
    message Empty {}
    message Choice {
      oneof pick { string text = 1; int64 number = 2; Empty nothing = 3; bool flag = 4; }
    }
"#;

fn schema() -> Schema {
    Schema::from_proto_source("s.proto", SCHEMA).unwrap()
}

fn slot(layouts: &Layouts, message: &str, number: u32) -> SlotIndex {
    let li = layouts.index_of(message).unwrap();
    layouts.get(li).slot_by_number(number).unwrap()
}

/// Whether `f` panics (a checked refusal, as opposed to a wrong read).
fn panics(f: impl FnOnce()) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
}

fn jit_available() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
}

#[test]
fn compiled_code_for_another_root_is_refused() {
    if !jit_available() {
        return;
    }
    let schema = schema();
    let layouts = schema.layouts().clone();
    let big = layouts.index_of("s.Big").unwrap();
    let empty = layouts.index_of("s.Empty").unwrap();
    // Code for `Empty` (a 16-byte block) would write `Big`'s fields past its end.
    let code = Compiled::compile(&layouts, empty, &CompileOptions::default()).unwrap();
    let err = code.check(&layouts, big).expect_err("code for another root is refused");
    assert!(matches!(err, JitError::WrongLayouts { .. }), "{err}");
    assert!(err.to_string().contains("compiled code for `s.Empty`"), "{err}");
    assert!(err.to_string().contains("cannot decode `s.Big`"), "{err}");
    // The right root is accepted.
    assert!(code.check(&layouts, empty).is_ok());
}

#[test]
fn compiled_code_for_other_layouts_is_refused() {
    if !jit_available() {
        return;
    }
    // The same schema loaded twice: equal text, but two sets of layouts; code only ever
    // runs over the layouts (or a clone of them) it was compiled over.
    let (a, b) = (schema(), schema());
    let root_a = a.layouts().index_of("s.Big").unwrap();
    let root_b = b.layouts().index_of("s.Big").unwrap();
    let code = Compiled::compile(a.layouts(), root_a, &CompileOptions::default()).unwrap();
    assert!(matches!(code.check(b.layouts(), root_b), Err(JitError::WrongLayouts { .. })));
    let clone = Arc::new(Layouts::clone(a.layouts()));
    assert!(code.check(&clone, root_a).is_ok());
    let engine = Engines::new(clone, CompileOptions::default())
        .engine(root_a, &EngineOptions::default().with_kind(EngineKind::Jit));
    let arena = Arena::new();
    assert!(engine.decode(&[0x20, 0x05], &arena).is_ok());
}

#[test]
fn a_block_refuses_writes_that_do_not_match_the_field_kind() {
    let schema = schema();
    let layouts: &Layouts = schema.layouts();
    let big = layouts.index_of("s.Big").unwrap();
    let arena = RawArena::new();
    let mut block = BlockMut::alloc(&arena, layouts, big);
    let (empties, child, name, n) =
        (slot(layouts, "s.Big", 1), slot(layouts, "s.Big", 2), slot(layouts, "s.Big", 3), slot(layouts, "s.Big", 4));
    // An integer where a reader expects a child block's address (the `set::<usize>` hole),
    // or a string's: refused.
    assert!(block.set(child, 0xdead_beef_u64).is_err());
    assert!(block.set(child, 1.5f64).is_err());
    assert!(block.set(name, 0x1000_i64).is_err());
    // Wrong cardinality, wrong kind.
    assert!(block.push(n, 1i64).is_err());
    assert!(block.push(empties, 1u64).is_err());
    assert!(block.child(n).is_err());
    assert!(block.push_child(child).is_err());
    assert!(block.set_bytes(n, b"x").is_err());
    let err = block.set(child, 7u64).unwrap_err();
    assert_eq!(err.to_string(), "slot 1 (field 2) is a Singular Message field: a singular number of this width");
    // The right writes go through, and the child writer carries the same arena and layouts.
    block.set(n, -3i64).unwrap();
    block.set_bytes(name, b"ok").unwrap();
    let mut kid = block.child(child).unwrap();
    kid.set(n, 9i64).unwrap();
    block.push_child(empties).unwrap();
    // SAFETY: the block is a finished tree of `s.Big` in `arena`, whose strings point at a
    // static literal.
    let view = unsafe { BlockRef::from_raw(block.as_ptr(), layouts, big) };
    assert_eq!(view.get::<i64>(n), -3);
    assert_eq!(view.get_bytes(name), b"ok");
    assert_eq!(view.child(child).unwrap().get::<i64>(n), 9);
    assert_eq!(view.vec_len(empties), 1);
}

#[test]
fn reads_check_the_kind_and_the_active_oneof_member() {
    let schema = schema();
    let decoder = schema.decoder("s.Choice").unwrap();
    let layouts = schema.layouts();
    let (text, number, nothing, flag) = (
        slot(layouts, "s.Choice", 1),
        slot(layouts, "s.Choice", 2),
        slot(layouts, "s.Choice", 3),
        slot(layouts, "s.Choice", 4),
    );
    // number = 0x4141414141 then nothing = {}: the shared slot holds a child address, and
    // before that an integer that `text`'s view would have taken for a pointer.
    let arena = Arena::new();
    for input in [&[0x10, 0xc1, 0x82, 0x85, 0x8a, 0x94, 0x08][..], &[0x10, 0x05, 0x1a, 0x00][..]] {
        let msg = decoder.decode(input, &arena).unwrap();
        let block = msg.block();
        assert_eq!(block.get_bytes(text), b"", "an inactive string member reads as empty");
        assert!(!block.get::<bool>(flag), "an inactive bool member reads as false");
        assert!(block.is_set(number) || block.is_set(nothing));
    }
    // Reading a type the slot does not hold is a panic, never a reinterpretation.
    let msg = decoder.decode(&[0x0a, 0x01, b'x'], &arena).unwrap();
    let block = msg.block();
    assert_eq!(block.get_bytes(text), b"x");
    assert!(panics(|| {
        let _ = block.get::<u64>(text);
    }));
    assert!(panics(|| {
        let _ = block.get::<u32>(flag);
    }));
    assert!(panics(|| {
        let _ = block.get_bytes(number);
    }));
    assert!(panics(|| {
        let _ = block.child(text);
    }));
}

#[test]
fn repeated_message_elements_are_never_read_as_strings() {
    // An empty message's block is 16 bytes, the size of a string view: the element-size
    // check alone would have let `vec_get_bytes` read a block as a (pointer, length).
    let schema = schema();
    let decoder = schema.decoder("s.Big").unwrap();
    let arena = Arena::new();
    let msg = decoder.decode(&[0x0a, 0x00, 0x0a, 0x00], &arena).unwrap();
    let empties = slot(schema.layouts(), "s.Big", 1);
    let block = msg.block();
    assert_eq!(block.vec_len(empties), 2);
    assert!(panics(|| {
        let _ = block.vec_get_bytes(empties, 0);
    }));
    assert!(panics(|| {
        let _ = block.vec_get::<u64>(empties, 0);
    }));
    assert!(panics(|| {
        let _ = block.vec_child(empties, 2);
    }));
}

#[test]
fn the_interpreter_caps_the_depth_limit_it_is_given() {
    // 5000 levels of `child`: with an uncapped limit the recursion would overflow the
    // 2 MiB stack instead of reporting the depth.
    let mut input = vec![0x20, 0x01];
    for _ in 0..5000 {
        let mut outer = vec![0x12];
        protojit_arena::wire::write_varint(&mut outer, input.len() as u64);
        outer.extend_from_slice(&input);
        input = outer;
    }
    let err = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let schema = schema();
            let layouts = schema.layouts();
            let arena = RawArena::new();
            let mut root = BlockMut::alloc(&arena, layouts, layouts.index_of("s.Big").unwrap());
            let options = protojit::DecodeOptions::default().with_max_depth(u32::MAX);
            Interp::new(&input, &options).message(&mut root, 0, input.len(), 0, None).unwrap_err()
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(err.kind, DecodeErrorKind::DepthLimitExceeded);
}
