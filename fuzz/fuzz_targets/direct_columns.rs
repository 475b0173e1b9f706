//! Fuzz target: arbitrary bytes as records of corpus types, converted to Arrow by the
//! chunked, direct, compiled (where the appenders read the type's columns; else the chunked
//! path again) and tree paths; all must accept and reject the same records with the same error
//! and build equal batches (a rejected record leaves the batch as it was).
//!
//! Run from `fuzz/`: `RUSTC_BOOTSTRAP=1 cargo fuzz run direct_columns` (needs
//! `../shared/corpus` beside the repository). The first input byte picks the type (one of
//! `common::TARGETS`) and the column options; the rest is split into records at every
//! `0xff 0xfe` pair.
//!
//! The builders are made once per converter and reused: `finish` must leave each as a new
//! one, which the comparison checks too (a path whose builder kept something of an earlier
//! input would build a different batch). Making them anew per input was a fifth of the
//! target's time (the types of `reflectwkt.Wkt` and descriptor.proto map to thousands of
//! columns).
#![no_main]

mod common;

use std::cell::RefCell;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use protojit_arrow::{ArrowOptions, BatchBuilder, ConvertPath, Converter, EnumColumns, StringColumns};

/// The converters of every path for every type of `common::TARGETS`, under two column
/// option sets.
fn converters() -> &'static Vec<[Converter; 4]> {
    static CONVERTERS: OnceLock<Vec<[Converter; 4]>> = OnceLock::new();
    CONVERTERS.get_or_init(|| {
        let mut out = Vec::new();
        for (file, type_name) in common::TARGETS {
            let schema = common::load_schema(file);
            for (enums, strings) in
                [(EnumColumns::Dictionary, StringColumns::Offsets), (EnumColumns::Number, StringColumns::Views)]
            {
                let mut options = ArrowOptions { enums, strings, max_recursion: 2, ..ArrowOptions::default() };
                options.decode = options.decode.with_max_depth(12);
                let with =
                    |path| Converter::new(&schema, type_name, &ArrowOptions { path, ..options.clone() }).unwrap();
                let compiled = with(ConvertPath::DirectCompiled);
                // It compiles in the background: every input runs the code.
                compiled.wait_for_appender();
                out.push([
                    with(ConvertPath::Chunked),
                    with(ConvertPath::DirectInterpreted),
                    with(ConvertPath::Tree),
                    compiled,
                ]);
            }
        }
        out
    })
}

thread_local! {
    /// One builder per converter of [`converters`], in the same order, made on first use.
    static BUILDERS: RefCell<Vec<Option<[BatchBuilder<'static>; 4]>>> = RefCell::new(Vec::new());
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else { return };
    let pick = pick as usize % converters().len();
    BUILDERS.with_borrow_mut(|builders| {
        builders.resize_with(converters().len(), || None);
        let [c, d, t, k] = builders[pick].get_or_insert_with(|| converters()[pick].each_ref().map(Converter::builder));
        compare(input, c, d, t, k);
    });
});

/// Appends the records of `input` to the chunked (`c`), direct (`d`), tree (`t`) and compiled
/// (`k`) builders, comparing each record's outcome and then the batches.
fn compare(input: &[u8], c: &mut BatchBuilder, d: &mut BatchBuilder, t: &mut BatchBuilder, k: &mut BatchBuilder) {
    let mut rest = input;
    loop {
        let (record, next) = match rest.windows(2).position(|w| w == [0xff, 0xfe]) {
            Some(i) => (&rest[..i], Some(&rest[i + 2..])),
            None => (rest, None),
        };
        let expected = t.append(record);
        assert_eq!(d.append(record), expected, "accept/reject or error differs (direct)");
        assert_eq!(c.append(record), expected, "accept/reject or error differs (chunked)");
        assert_eq!(k.append(record), expected, "accept/reject or error differs (compiled)");
        match next {
            Some(n) => rest = n,
            None => break,
        }
    }
    let expected = t.finish().unwrap();
    assert_eq!(d.finish().unwrap(), expected, "batches differ (direct)");
    assert_eq!(c.finish().unwrap(), expected, "batches differ (chunked)");
    assert_eq!(k.finish().unwrap(), expected, "batches differ (compiled)");
}
