//! Fuzz target: the field-path parser (`FieldPath::parse`, `FieldPath::parse_in`,
//! `MessageRef::path`) with arbitrary text against fixed schemas: no panic, the three agree,
//! and errors print.
//!
//! Input: `[schema pick][path text][0x00][message bytes]`; the message (decoded with the
//! picked type, if it decodes) is what compiled paths are evaluated on.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use protojit::{Arena, FieldPath};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let (text, message) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else { return };
    let decoders = common::decoders();
    let (jit, _) = &decoders[pick as usize % decoders.len()];
    let layouts = jit.engine().layouts();
    let root = jit.engine().root();

    let by_descriptor = FieldPath::parse(jit.descriptor(), text);
    let by_layouts = FieldPath::parse_in(layouts, root, text);
    match (&by_descriptor, &by_layouts) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "parse and parse_in compile different paths"),
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "parse and parse_in report different errors");
            // Every error prints (its message slices the segment text).
            let shown = a.to_string();
            assert!(!shown.is_empty());
            assert!(a.offset <= text.len(), "error offset {} past the path ({})", a.offset, text.len());
        }
        (a, b) => panic!("parse {a:?} vs parse_in {b:?}"),
    }

    let arena = Arena::new();
    let msg = jit.decode(message, &arena).unwrap_or_else(|_| jit.decode(&[], &arena).unwrap());
    match (msg.path(text), &by_layouts) {
        (Ok(values), Ok(path)) => {
            // `Value` has no `PartialEq`; its `Debug` form shows everything (same tree, same
            // blocks).
            let show = |vs: &[protojit::Value<'_>]| vs.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>();
            assert_eq!(show(&values), show(&path.eval(&msg)), "MessageRef::path and FieldPath::eval differ");
            let first = path.first(&msg);
            assert_eq!(show(&values[..values.len().min(1)]), show(first.as_slice()), "first() is not the first value");
            let mut n = 0;
            path.for_each(&msg, |_| n += 1);
            assert_eq!(n, values.len(), "for_each yields a different count");
        }
        (Err(a), Err(b)) => assert_eq!(&a, b),
        (a, b) => panic!("path {:?} vs parse_in {:?}", a.map(|v| v.len()), b),
    }
});
