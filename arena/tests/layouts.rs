//! Layouts as `LayoutBuilder` makes them: every slot inside its block and aligned, slots apart (oneof members sharing one), presence bits distinct, the lookup tables agreeing with the slots; and `Layouts::find_type`, the one rule for type names.

mod support;

use protojit_arena::{FieldKind, LayoutIndex, Layouts, Repetition, SlotIndex, NO_INDEX};
use support::pool;

const PROTO2: &str = r#"
syntax = "proto2";
package p;
message Outer {
  optional int32 a = 1;
  optional string s = 2 [default = "hi"];
  repeated int64 r = 3 [packed = true];
  optional group G = 4 { optional int32 x = 5; }
  oneof choice { int32 c1 = 6; string c2 = 7; Inner c3 = 8; double c4 = 9; }
  map<string, Inner> m = 10;
  optional bool flag = 16;
  optional fixed64 big = 2047;
  optional Inner inner = 300;
  extensions 1000 to 1010;
  message Inner { optional int32 x = 1; }
}
message Other { message Inner { optional int32 y = 1; } }
extend Outer { optional sint32 ext = 1000; repeated string exts = 1001; }
"#;

fn layouts() -> Layouts {
    Layouts::new(&pool("p.proto", PROTO2)).unwrap()
}

#[test]
fn slots_lie_inside_their_block_apart_and_aligned() {
    let layouts = layouts();
    for (li, layout) in layouts.iter() {
        let name = layout.descriptor().full_name().to_owned();
        assert_eq!(layout.index(), li);
        assert_eq!(layout.size() % 8, 0, "{name}");
        let header = layout.oneof_case_offset(layout.oneofs().len() as u32);
        let mut spans: Vec<(u32, u32, u32)> = vec![(layout.unknown_offset(), 16, NO_INDEX)];
        let mut hasbits = Vec::new();
        for slot in layout.slots() {
            let size = if slot.repetition == Repetition::Singular { slot.kind.value_size() } else { 16 };
            assert_eq!(slot.offset % size.min(8), 0, "{name}.{} misaligned", slot.number);
            assert!(slot.offset >= header && slot.offset + size <= layout.size(), "{name}.{}", slot.number);
            if slot.hasbit != NO_INDEX {
                assert!(slot.hasbit < 32 * layout.hasbit_words());
                hasbits.push(slot.hasbit);
            }
            spans.push((slot.offset, size, slot.oneof));
        }
        hasbits.sort_unstable();
        assert!(hasbits.windows(2).all(|w| w[0] != w[1]), "{name}: a presence bit used twice");
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                let overlap = a.0 < b.0 + b.1 && b.0 < a.0 + a.1;
                let shared = a.2 != NO_INDEX && a.2 == b.2 && a.0 == b.0;
                assert!(!overlap || shared, "{name}: slots at {} and {} overlap", a.0, b.0);
            }
        }
    }
}

#[test]
fn oneof_members_share_one_slot_and_lookups_agree_with_the_slots() {
    let layouts = layouts();
    let outer = layouts.get(layouts.index_of("p.Outer").unwrap());
    let member = |n: u32| *outer.slot(outer.slot_by_number(n).unwrap());
    let offsets: Vec<u32> = (6..=9).map(|n| member(n).offset).collect();
    assert!(offsets.iter().all(|&o| o == offsets[0]), "{offsets:?}");
    assert!((6..=9).all(|n| member(n).oneof == 0 && member(n).hasbit == NO_INDEX));
    assert_eq!(member(4).kind, FieldKind::Group);
    assert_eq!(member(10).repetition, Repetition::Map);
    assert!(member(3).packed);
    assert!(member(1000).is_extension && member(1001).is_extension);
    assert_eq!(outer.text_name(outer.slot_by_number(4).unwrap()), "G");
    assert_eq!(outer.text_name(outer.slot_by_number(1000).unwrap()), "[p.ext]");
    match outer.slot_default(outer.slot_by_number(2).unwrap()) {
        Some(prost_reflect::Value::String(s)) => assert_eq!(s, "hi"),
        other => panic!("default of s: {other:?}"),
    }
    // Numbers: the dense table and the search agree with a scan of the slots.
    for layout in layouts.iter().map(|(_, l)| l) {
        for n in 0..2100 {
            let scan = layout.slots().iter().position(|s| s.number == n).map(|i| SlotIndex::new(i as u32));
            assert_eq!(layout.slot_by_number(n), scan, "{} #{n}", layout.descriptor().full_name());
        }
        // One-byte tags: what a tag decode and a number lookup give.
        for tag in 0u8..128 {
            let (number, wire) = ((tag >> 3) as u32, tag & 7);
            let want = layout.slot_by_number(number).and_then(|si| {
                let s = layout.slot(si);
                if (1..16).contains(&number) && wire == s.kind.wire_type() {
                    Some((si, false))
                } else if (1..16).contains(&number)
                    && wire == 2
                    && s.repetition != Repetition::Singular
                    && s.kind.is_packable()
                {
                    Some((si, true))
                } else {
                    None
                }
            });
            assert_eq!(layout.one_byte_tag(tag), want, "{} tag {tag:#x}", layout.descriptor().full_name());
        }
    }
}

#[test]
fn find_type_is_the_one_rule_for_type_names() {
    let layouts = layouts();
    let full = |name: &str| layouts.index_of(name).unwrap();
    let name_of = |li: LayoutIndex| layouts.get(li).descriptor().full_name().to_owned();
    // Full names, with or without the leading dot.
    assert_eq!(layouts.find_type("p.Outer"), Ok(full("p.Outer")));
    assert_eq!(layouts.find_type(".p.Outer"), Ok(full("p.Outer")));
    // A unique short name, and a partly qualified one.
    assert_eq!(layouts.find_type("Outer"), Ok(full("p.Outer")));
    assert_eq!(layouts.find_type("Other.Inner"), Ok(full("p.Other.Inner")));
    assert_eq!(layouts.find_type("Outer.Inner"), Ok(full("p.Outer.Inner")));
    // Several types end in `.Inner`: none is chosen.
    let mut both: Vec<String> = layouts.find_type("Inner").unwrap_err().into_iter().map(name_of).collect();
    both.sort();
    assert_eq!(both, ["p.Other.Inner", "p.Outer.Inner"]);
    // Map entries by full name only.
    assert_eq!(layouts.find_type("p.Outer.MEntry"), Ok(full("p.Outer.MEntry")));
    assert_eq!(layouts.find_type("MEntry"), Err(vec![]));
    // No match; a suffix must start at a dot.
    assert_eq!(layouts.find_type("ter"), Err(vec![]));
    assert_eq!(layouts.find_type("uter.Inner"), Err(vec![]));
    assert_eq!(layouts.find_type(""), Err(vec![]));
}

/// A closed enum's declared values answer `closed_enum_has` as a search of them would: by
/// two compares where they are one run (then `closed_enum_range` gives it), by a search
/// where they have gaps; aliases and negative numbers included.
#[test]
fn closed_enum_checks_agree_with_the_declared_values() {
    const ENUMS: &str = r#"
syntax = "proto2";
package e;
enum Run { R0 = 0; R1 = 1; R2 = 2; R3 = 3; }
enum Low { option allow_alias = true; LM2 = -2; LM1 = -1; L0 = 0; ALSO = 0; L1 = 1; }
enum Gap { G0 = 0; G2 = 2; G3 = 3; G9 = 9; }
enum One { ONLY = 5; }
message M { optional Run r = 1; optional Low l = 2; optional Gap g = 3; optional One o = 4; optional int32 n = 5; }
"#;
    let layouts = Layouts::new(&pool("e.proto", ENUMS)).unwrap();
    let layout = layouts.get(layouts.index_of("e.M").unwrap());
    let ranges = [Some((0, 3)), Some((-2, 1)), None, Some((5, 5))];
    for (i, range) in ranges.into_iter().enumerate() {
        let si = SlotIndex::new(i as u32);
        let values = layout.closed_enum_values(si).to_vec();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        assert_eq!(layout.closed_enum_range(si), range, "{values:?}");
        for v in [i32::MIN, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 9, 10, i32::MAX] {
            assert_eq!(layout.closed_enum_has(si, v), values.contains(&v), "{values:?} {v}");
        }
    }
    // Not a closed enum: no values, no range, nothing declared.
    let si = SlotIndex::new(4);
    assert_eq!(layout.closed_enum_range(si), None);
    assert!(!layout.closed_enum_has(si, 0));
}
