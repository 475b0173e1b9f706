//! Hostile input for both parsers (proto3 JSON and text format): a typed `ParseError` with its
//! position, never a panic, and peak heap during the parse ≤ 4× the input + 1 MiB.
//!
//! A counting global allocator measures the heap: per thread (tests run on threads of their
//! own), live bytes and their peak, the peak reset at the start of each parse. A moving
//! `realloc` holds the old and the new block at once, so it is counted as an allocation
//! followed by a free: the bound holds for the worst case, not only for glibc's in-place
//! growth of large blocks.

#[path = "support/mod.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use protojit_parse::{json_to_binary, text_to_binary, ParseError, ParseOptions};

/// Counts the live heap bytes of each thread and their peak.
struct Counting;

thread_local! {
    // `const` thread locals without destructors never allocate, so the allocator may use them.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grow(n: usize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + n as isize);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

fn shrink(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - n as isize));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged (the
// default `realloc` goes through `alloc` and `dealloc` here), so `System`'s guarantees hold;
// the counters are thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged from our caller, who upholds `GlobalAlloc`'s contract.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grow(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grow(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        shrink(l.size());
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Clone, Copy, Debug)]
enum Format {
    Json,
    Text,
}

/// Parses `input` as `format`; the result and the peak heap the parse added (its output
/// included).
fn measured(
    format: Format,
    desc: &support::Ty,
    input: &[u8],
    options: &ParseOptions,
) -> (Result<Vec<u8>, ParseError>, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let result = {
        let mut out = Vec::new();
        match format {
            Format::Json => json_to_binary(&desc.layouts, desc.root, input, options, &mut out),
            Format::Text => text_to_binary(&desc.layouts, desc.root, input, options, &mut out),
        }
        .map(|()| out)
    };
    let peak = PEAK.with(Cell::get) - base;
    (result, peak.max(0) as usize)
}

/// Parses with the default options and checks the heap bound.
#[track_caller]
fn parse(format: Format, desc: &support::Ty, input: &[u8]) -> Result<Vec<u8>, ParseError> {
    parse_with(format, desc, input, &ParseOptions::default())
}

#[track_caller]
fn parse_with(format: Format, desc: &support::Ty, input: &[u8], options: &ParseOptions) -> Result<Vec<u8>, ParseError> {
    let (result, peak) = measured(format, desc, input, options);
    let bound = 4 * input.len() + (1 << 20);
    assert!(
        peak <= bound,
        "{format:?} input of {} bytes ({}...): peak heap {peak} bytes, over the bound of {bound}",
        input.len(),
        String::from_utf8_lossy(&input[..input.len().min(60)])
    );
    result
}

/// The error's position lies inside the input: line 1.., a column on that line (one past
/// its end at most, where the input ended early).
#[track_caller]
fn assert_inside(input: &[u8], e: &ParseError) {
    let (line, column) = e.position();
    let lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    assert!(line >= 1 && line <= lines.len(), "{e}: line outside the input's {} lines", lines.len());
    let width = String::from_utf8_lossy(lines[line - 1]).chars().count();
    assert!(column >= 1 && column <= width + 1, "{e}: column outside line {line}'s {width} characters");
}

/// The input fails with a typed error of its format, inside the input, saying `what`.
#[track_caller]
fn rejects(format: Format, desc: &support::Ty, input: &[u8], what: &str) -> ParseError {
    rejects_with(format, desc, input, &ParseOptions::default(), what)
}

#[track_caller]
fn rejects_with(format: Format, desc: &support::Ty, input: &[u8], options: &ParseOptions, what: &str) -> ParseError {
    let shown = || String::from_utf8_lossy(&input[..input.len().min(80)]).into_owned();
    let e = match parse_with(format, desc, input, options) {
        Ok(b) => panic!("{format:?} {}: accepted as {} bytes", shown(), b.len()),
        Err(e) => e,
    };
    match (format, &e) {
        (Format::Json, ParseError::Json { .. }) | (Format::Text, ParseError::Text { .. }) => {}
        _ => panic!("{format:?} {}: error of the other format: {e}", shown()),
    }
    assert!(e.message().contains(what), "{format:?} {}: {e} does not say {what:?}", shown());
    assert_inside(input, &e);
    e
}

/// `n` messages nested in field `child` of t.M, in each format.
fn nested(format: Format, n: usize) -> String {
    match format {
        Format::Json => format!("{}{{}}{}", r#"{"child": "#.repeat(n), "}".repeat(n)),
        Format::Text => format!("{}{}", "child { ".repeat(n), "}".repeat(n)),
    }
}

#[test]
fn the_depth_limit_is_the_decoders_in_both_formats() {
    let m = support::message("t.M");
    let mut deepest = Vec::new();
    for format in [Format::Json, Format::Text] {
        // The root is depth 0: exactly `max_depth` nested messages are accepted, as the
        // decoders accept them, one more is an error where the extra level opens.
        let ok = parse(format, &m, nested(format, 100).as_bytes()).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        deepest.push(ok);
        let e = rejects(format, &m, nested(format, 101).as_bytes(), "deeper than the limit of 100");
        assert_eq!(e.position().0, 1);
        let small = ParseOptions { max_depth: 3, ..ParseOptions::default() };
        parse_with(format, &m, nested(format, 3).as_bytes(), &small).unwrap();
        rejects_with(format, &m, nested(format, 4).as_bytes(), &small, "deeper than the limit of 3");
        // A million levels: an error long before the stack runs out.
        rejects(format, &m, nested(format, 1_000_000).as_bytes(), "deeper than the limit of 100");
    }
    assert_eq!(deepest[0], deepest[1], "JSON and text give different bytes for the same message");
}

#[test]
fn a_depth_limit_past_the_decoders_is_theirs() {
    // Options may ask for any depth; the parsers stop where the decoders do, so a million
    // levels are an error, not a stack overflow.
    let m = support::message("t.M");
    let any_depth = ParseOptions { max_depth: u32::MAX, ..ParseOptions::default() };
    let limit = protojit_arena::MAX_DEPTH_LIMIT as usize;
    parse_with(Format::Text, &m, nested(Format::Text, limit).as_bytes(), &any_depth).unwrap();
    let deeper = format!("deeper than the limit of {limit}");
    rejects_with(Format::Text, &m, nested(Format::Text, limit + 1).as_bytes(), &any_depth, &deeper);
    rejects_with(Format::Text, &m, nested(Format::Text, 1_000_000).as_bytes(), &any_depth, &deeper);
    // JSON: serde_json's own limit (128 nested arrays and objects) comes first, whichever
    // of json_to_binary's readers meets the input.
    rejects_with(Format::Json, &m, nested(Format::Json, 1_000_000).as_bytes(), &any_depth, "recursion limit");
    rejects_with(Format::Json, &m, nested(Format::Json, 150).as_bytes(), &any_depth, "recursion limit");
    let lists = format!("{}{{}}{}", r#"{"rm": ["#.repeat(70), "]}".repeat(70));
    rejects_with(Format::Json, &m, lists.as_bytes(), &any_depth, "recursion limit");
    parse_with(Format::Json, &m, nested(Format::Json, 120).as_bytes(), &any_depth).unwrap();
}

#[test]
fn deep_values_lists_and_skipped_values_end_at_a_limit() {
    let m = support::message("t.M");
    // google.protobuf.Value nests through lists and structs, each level a message.
    let lists = format!(r#"{{"va": {}1{}}}"#, "[".repeat(1_000_000), "]".repeat(1_000_000));
    let e = rejects(Format::Json, &m, lists.as_bytes(), "");
    assert!(e.message().contains("deeper than the limit") || e.message().contains("recursion limit"), "{e}");
    let structs = format!(r#"{{"st": {}1{}}}"#, r#"{"a": "#.repeat(100_000), "}".repeat(100_000));
    let e = rejects(Format::Json, &m, structs.as_bytes(), "");
    assert!(e.message().contains("deeper than the limit") || e.message().contains("recursion limit"), "{e}");
    // Inside an Any, whose body is read whole before its type is known.
    let any = format!(
        r#"{{"any": {{"@type": "type.googleapis.com/google.protobuf.Value", "value": {}1{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    rejects(Format::Json, &m, any.as_bytes(), "deeper than the limit of 100");
    // An unknown field's value is skipped: serde_json skips without recursing, so any depth
    // is fine there, within the heap bound.
    let ignore = ParseOptions { ignore_unknown_fields: true, ..ParseOptions::default() };
    let unknown = format!(r#"{{"nope": {}{}}}"#, "[".repeat(1_000_000), "]".repeat(1_000_000));
    assert_eq!(parse_with(Format::Json, &m, unknown.as_bytes(), &ignore), Ok(vec![]));
    // Text: repeated messages in lists nest through the same limit.
    let text = format!("{}{}", "rm [{ ".repeat(100_000), "}]".repeat(100_000));
    rejects(Format::Text, &m, text.as_bytes(), "deeper than the limit of 100");
    // Unbalanced openers alone.
    rejects(Format::Json, &m, "[".repeat(1 << 20).as_bytes(), "");
    rejects(Format::Text, &m, "child <".repeat(1 << 18).as_bytes(), "deeper than the limit");
}

#[test]
fn huge_numbers_are_range_errors() {
    let m = support::message("t.M");
    let nines = "9".repeat(100_000);
    for (json, what) in [
        (format!(r#"{{"u64": {nines}}}"#), "out of range"),
        (format!(r#"{{"i64": "{nines}"}}"#), "(100000 characters) is out of range for int64"),
        (format!(r#"{{"i64": {nines}}}"#), "(100000 characters) is out of range for int64"),
        (format!(r#"{{"i32": -{nines}}}"#), "out of range"),
        (format!(r#"{{"db": {nines}e999999999}}"#), "out of range"),
        (format!(r#"{{"db": 1e{nines}}}"#), "out of range"),
        (r#"{"u64": 18446744073709551616}"#.to_owned(), "out of range for uint64"),
        (r#"{"u64": "18446744073709551616"}"#.to_owned(), "out of range for uint64"),
        (r#"{"i64": "-9223372036854775809"}"#.to_owned(), "out of range for int64"),
        (r#"{"i32": 1e10}"#.to_owned(), "out of range for int32"),
        (r#"{"u32": "4294967296"}"#.to_owned(), "out of range for uint32"),
        (r#"{"u64": 1e20}"#.to_owned(), "out of range"),
        (r#"{"fl": -3.5e38}"#.to_owned(), "out of range for float"),
        (r#"{"msi": {"k": 2147483648}}"#.to_owned(), "out of range for int32"),
        (r#"{"mim": {"9223372036854775808": {}}}"#.to_owned(), "out of range for int64"),
        (format!(r#"{{"mim": {{"{nines}": {{}}}}}}"#), "not an integer"),
        (r#"{"w64": "9223372036854775808"}"#.to_owned(), "out of range for int64"),
    ] {
        rejects(Format::Json, &m, json.as_bytes(), what);
    }
    for (text, what) in [
        (format!("u64: {nines}"), "out of range"),
        (format!("i32: -{nines}"), "out of range"),
        (format!("i64: 0x{}", "f".repeat(100_000)), "out of range"),
        (format!("u32: 0{}", "7".repeat(100_000)), "out of range"),
        ("u64: 18446744073709551616".to_owned(), "out of range for uint64"),
        ("i64: -9223372036854775809".to_owned(), "out of range for int64"),
        ("u32: 0x100000000".to_owned(), "out of range for uint32"),
        ("e: 2147483648".to_owned(), "out of range for int32"),
        ("b: 2".to_owned(), "out of range for bool"),
        ("msi { key: 'k' value: 2147483648 }".to_owned(), "out of range for int32"),
    ] {
        rejects(Format::Text, &m, text.as_bytes(), what);
    }
    // Text reads huge floats as protoc does, to infinity, not as an error.
    assert!(parse(Format::Text, &m, format!("db: {nines}").as_bytes()).is_ok());
}

#[test]
fn invalid_utf8_and_escapes() {
    let m = support::message("t.M");
    let json_cases: [(&[u8], &str); 10] = [
        (b"{\"s\": \"a\xffb\"}", "invalid unicode"),
        (b"{\"s\": \"\xc3\"}", "invalid unicode"),
        (b"{\"s\xff\": 1}", "invalid unicode"),
        (b"{\"s\": \"a\" \xff}", "expected"),
        (br#"{"s": "\ud800"}"#, "escape"),
        (br#"{"s": "\udc00x"}"#, "surrogate"),
        (br#"{"s": "\u12"}"#, "escape"),
        (br#"{"s": "\x41"}"#, "escape"),
        (br#"{"s": "\"#, "EOF"),
        (b"{\"s\": \"a\nb\"}", "control character"),
    ];
    for (json, what) in json_cases {
        rejects(Format::Json, &m, json, what);
    }
    let text_cases: [(&[u8], &str); 11] = [
        (b"s: 'a\xffb'", "invalid UTF-8"),
        (b"s: '\\xff'", "invalid UTF-8"),
        (b"s: '\\303'", "invalid UTF-8"),
        (b"s: '\\xc3' '\\xa9' 'x\xff'", "invalid UTF-8"),
        (b"s: '\\ud800'", "surrogate"),
        (b"s: '\\U00110000'", "beyond the last code point"),
        (b"s: '\\u12'", "needs 4 hex digits"),
        (b"s: '\\x'", "needs a hex digit"),
        (b"s: '\\400'", "octal escape above"),
        (b"s: '\\", "not closed"),
        (b"\xff: 1", "expected an identifier"),
    ];
    for (text, what) in text_cases {
        rejects(Format::Text, &m, text, what);
    }
    // Bytes fields take any bytes in text format; adjacent strings join before the check.
    assert_eq!(parse(Format::Text, &m, b"by: '\\xff\xfe'").unwrap(), [0x7a, 2, 0xff, 0xfe]);
    assert_eq!(parse(Format::Text, &m, b"s: '\\xc3' '\\xa9'").unwrap(), [0x72, 2, 0xc3, 0xa9]);
}

#[test]
fn invalid_base64() {
    let m = support::message("t.M");
    for (json, what) in [
        (r#"{"by": "a"}"#, "invalid base64 length"),
        (r#"{"by": "abcde"}"#, "invalid base64 length"),
        (r#"{"by": "ab=c"}"#, "invalid base64 character"),
        (r#"{"by": "ab c"}"#, "invalid base64 character"),
        (r#"{"by": "ab==="}"#, "invalid base64 padding"),
        (r#"{"by": "abc=="}"#, "invalid base64 padding"),
        (r#"{"by": "a*=="}"#, "invalid base64 character"),
        (r#"{"by": "\u00e9AA"}"#, "invalid base64 character"),
        (r#"{"wb": "@@@@"}"#, "invalid base64 character"),
        (r#"{"by": 12}"#, "expected bytes"),
    ] {
        rejects(Format::Json, &m, json.as_bytes(), what);
    }
    // A 10 MB base64 value with one bad character at its end.
    let mut big = "QUJD".repeat(10 << 18);
    big.push_str("QU*=");
    rejects(Format::Json, &m, format!(r#"{{"by": "{big}"}}"#).as_bytes(), "invalid base64 character");
    big.truncate(big.len() - 4);
    let out = parse(Format::Json, &m, format!(r#"{{"by": "{big}"}}"#).as_bytes()).unwrap();
    assert_eq!(out.len(), 1 + 4 + (10 << 18) * 3);
}

#[test]
fn ten_megabyte_strings_within_the_heap_bound() {
    let m = support::message("t.M");
    let ten = 10 << 20;
    let plain = "x".repeat(ten);
    // Plain, then escaped (JSON unescapes into a scratch buffer), as a map key and in a
    // list; text format concatenating adjacent strings.
    let escaped = "\\u00e9".repeat(ten / 6);
    for (json, len) in [
        (format!(r#"{{"s": "{plain}"}}"#), ten),
        (format!(r#"{{"s": "{escaped}"}}"#), ten / 6 * 2),
        (format!(r#"{{"msi": {{"{plain}": 1}}}}"#), ten + 2),
        (format!(r#"{{"rs": ["{plain}", ""]}}"#), ten),
        (format!(r#"{{"va": "{plain}"}}"#), ten + 4),
    ] {
        let out = parse(Format::Json, &m, json.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(out.len() > len && out.len() < len + 16, "{} bytes for {len}", out.len());
    }
    let escaped = "\\303\\251".repeat(ten / 8);
    let halves = format!("'{}' \"{}\"", &plain[..ten / 2], &plain[ten / 2..]);
    for (text, len) in [
        (format!("s: '{plain}'"), ten),
        (format!("s: '{escaped}'"), ten / 8 * 2),
        (format!("s: {halves}"), ten),
        (format!("msi {{ key: '{plain}' value: 1 }}"), ten + 2),
    ] {
        let out = parse(Format::Text, &m, text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(out.len() > len && out.len() < len + 16, "{} bytes for {len}", out.len());
    }
    // Unterminated: an error where the input ends (JSON) or the string opens (text).
    let e = rejects(Format::Json, &m, format!(r#"{{"s": "{plain}"#).as_bytes(), "EOF");
    assert_eq!(e.position(), (1, ten + 7));
    let e = rejects(Format::Text, &m, format!("s: '{plain}").as_bytes(), "not closed");
    assert_eq!(e.position(), (1, ten + 5));
    // A 10 MB string where a number belongs.
    rejects(Format::Json, &m, format!(r#"{{"i32": "{plain}"}}"#).as_bytes(), "not an integer");
    rejects(Format::Text, &m, format!("i32: '{plain}'").as_bytes(), "expected a number");
}

#[test]
fn duplicate_keys_and_oneof_conflicts() {
    let m = support::message("t.M");
    for (json, what) in [
        (r#"{"i32": 1, "i32": 1}"#, "more than once"),
        (r#"{"custom": 1, "json_named": 1}"#, "more than once"),
        (r#"{"child": {}, "child": null}"#, "more than once"),
        (r#"{"ri": [1], "ri": [2]}"#, "more than once"),
        (r#"{"msi": {}, "msi": {}}"#, "more than once"),
        (r#"{"child": {"s": "a", "s": "b"}}"#, "more than once"),
        (r#"{"os": "a", "om": {}}"#, "another member of oneof o"),
        (r#"{"any": {"@type": "type.googleapis.com/t.M", "i32": 1, "i32": 2}}"#, "more than once"),
    ] {
        rejects(Format::Json, &m, json.as_bytes(), what);
    }
    // Many distinct keys then one repeated: still found, heap still bounded.
    let fields = ["i32", "i64", "u32", "u64", "s32", "s64", "f32", "f64", "sf32", "sf64"];
    let mut json = String::from("{");
    for f in fields {
        json.push_str(&format!(r#""{f}": 1, "#));
    }
    json.push_str(r#""f64": 2}"#);
    rejects(Format::Json, &m, json.as_bytes(), "field f64 is specified more than once");
    for (text, what) in [
        ("i32: 1 i32: 1", "more than once"),
        ("child {} child {}", "more than once"),
        ("child { s: 'a' s: 'b' }", "more than once"),
        ("os: 'a' om {}", "another member of oneof o"),
        ("any { [type.googleapis.com/t.M] {} type_url: 'x' }", "more than once"),
    ] {
        rejects(Format::Text, &m, text.as_bytes(), what);
    }
}

#[test]
fn a_repeated_field_given_a_million_times_within_the_heap_bound() {
    // Repeated fields may recur in text format: a million occurrences are one packed field.
    let m = support::message("t.M");
    let many = "ri: 1 ".repeat(1 << 20);
    let out = parse(Format::Text, &m, many.as_bytes()).unwrap();
    assert_eq!(out.len(), 2 + 3 + (1 << 20));
    assert_eq!(out[..6], [0x92, 0x01, 0x80, 0x80, 0x40, 1]);
    // Two repeated fields interleaved, each occurrence its own run of the message: put in
    // field order once, the packed records of each merged.
    let pairs = "re: ONE ri: 2 ".repeat(1 << 19);
    let out = parse(Format::Text, &m, pairs.as_bytes()).unwrap();
    let half = 1 << 19;
    assert_eq!(out.len(), 2 * (2 + 3 + half));
    assert_eq!(out[..5], [0x92, 0x01, 0x80, 0x80, 0x20]);
    assert!(out[5..5 + half].iter().all(|&b| b == 2));
    assert_eq!(out[5 + half..10 + half], [0xd2, 0x02, 0x80, 0x80, 0x20]);
    assert!(out[10 + half..].iter().all(|&b| b == 1));
    // Unpacked repeated messages interleaved with a packed field.
    let mixed = "rm {} ri: 3 ".repeat(1 << 19);
    let out = parse(Format::Text, &m, mixed.as_bytes()).unwrap();
    assert_eq!(out.len(), 5 + half + 3 * half);
    assert_eq!(out[..5], [0x92, 0x01, 0x80, 0x80, 0x20]);
    assert!(out[5 + half..].chunks(3).all(|c| c == [0xa2, 0x01, 0]));
}

/// The position of the end of `value` (its last character, where serde_json places an
/// error in a value) in a one-line `json`.
fn end_of(json: &str, value: &str) -> (usize, usize) {
    let at = json.rfind(value).unwrap_or_else(|| panic!("{value} not in {json}"));
    (1, at + value.len())
}

#[test]
fn integers_at_every_kinds_edges() {
    let m = support::message("t.M");
    // (field, kind, lowest, highest): one past either end is a range error, as a number
    // and as a string, in plain and exponent form; the ends themselves are values.
    let kinds: [(&str, &str, i128, i128); 10] = [
        ("i32", "int32", i32::MIN.into(), i32::MAX.into()),
        ("s32", "sint32", i32::MIN.into(), i32::MAX.into()),
        ("sf32", "sfixed32", i32::MIN.into(), i32::MAX.into()),
        ("u32", "uint32", 0, u32::MAX.into()),
        ("f32", "fixed32", 0, u32::MAX.into()),
        ("i64", "int64", i64::MIN.into(), i64::MAX.into()),
        ("s64", "sint64", i64::MIN.into(), i64::MAX.into()),
        ("sf64", "sfixed64", i64::MIN.into(), i64::MAX.into()),
        ("u64", "uint64", 0, u64::MAX.into()),
        ("f64", "fixed64", 0, u64::MAX.into()),
    ];
    for (field, kind, lo, hi) in kinds {
        for v in [lo, hi] {
            for value in [format!("{v}"), format!("\"{v}\""), format!("{v}.000"), format!("{v}e0")] {
                let json = format!(r#"{{"{field}": {value}}}"#);
                let out = parse(Format::Json, &m, json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e}"));
                let text = format!("{field}: {v}");
                assert_eq!(out, parse(Format::Text, &m, text.as_bytes()).unwrap(), "{json} and {text}");
            }
        }
        for v in [lo - 1, hi + 1] {
            for value in [format!("{v}"), format!("\"{v}\""), format!("{v}.0"), format!("\"{v}0e-1\"")] {
                let json = format!(r#"{{"{field}": {value}}}"#);
                let e = rejects(Format::Json, &m, json.as_bytes(), "");
                assert_eq!(e.message(), format!("{v} is out of range for {kind}"), "{json}");
                assert_eq!(e.position(), end_of(&json, &value), "{json}");
            }
            let text = format!("{field}: {v}");
            let e = rejects(Format::Text, &m, text.as_bytes(), "");
            assert_eq!(e.message(), format!("{v} is out of range for {kind}"), "{text}");
            assert_eq!(e.position(), (1, field.len() + 3), "{text}");
        }
    }
    // Through f64, -9223372036854775809 and -9223372036854775808.5 would both round to
    // int64's minimum, and 1.0000000000000001 to 1.
    for (json, message, value) in [
        (r#"{"i64": -9223372036854775809}"#, "-9223372036854775809 is out of range for int64", "809"),
        (r#"{"i64": "-9223372036854775809"}"#, "-9223372036854775809 is out of range for int64", "809\""),
        (r#"{"i64": -9223372036854775808.5}"#, "-9223372036854775808.5 is not an integer, as int64 needs", ".5"),
        (r#"{"i64": -9.2233720368547758085e18}"#, "-9.2233720368547758085e18 is not an integer, as int64 needs", "e18"),
        (r#"{"u64": 18446744073709551616}"#, "18446744073709551616 is out of range for uint64", "616"),
        (r#"{"u64": 1.8446744073709551616e19}"#, "18446744073709551616 is out of range for uint64", "e19"),
        (r#"{"i32": 1.0000000000000001}"#, "1.0000000000000001 is not an integer, as int32 needs", "01"),
        (r#"{"u32": -0.5}"#, "-0.5 is not an integer, as uint32 needs", ".5"),
        (r#"{"i32": 1e-400}"#, "1e-400 is not an integer, as int32 needs", "400"),
        (r#"{"i32": 1e400}"#, "1e400 is out of range for int32", "400"),
        (r#"{"u64": "1e99999999999999999999"}"#, "1e99999999999999999999 is out of range for uint64", "9\""),
        (r#"{"i32": "0x10"}"#, "\"0x10\" is not an integer", "10\""),
        (r#"{"i32": "+1"}"#, "\"+1\" is not an integer", "1\""),
        (r#"{"i32": true}"#, "expected int32, found true", "true"),
        (r#"{"i32": {}}"#, "invalid type: map, expected a JSON value for int32", "{}"),
        (r#"{"ri": [1, []]}"#, "invalid type: sequence, expected a JSON value for int32", "[]"),
    ] {
        let e = rejects(Format::Json, &m, json.as_bytes(), "");
        assert_eq!(e.message(), message, "{json}");
        assert_eq!(e.position(), end_of(json, value), "{json}");
    }
    // Exact forms of integers: exponents, trailing zeros, int64's minimum as a float.
    for (json, text) in [
        (r#"{"i64": -9.223372036854775808e18}"#, "i64: -9223372036854775808"),
        (r#"{"i64": "-9223372036854775808.000"}"#, "i64: -9223372036854775808"),
        (r#"{"u64": 1.8446744073709551615e19}"#, "u64: 18446744073709551615"),
        (r#"{"i32": 100e-2}"#, "i32: 1"),
        (r#"{"i32": "2\u003147483647"}"#, "i32: 2147483647"),
        (r#"{"u32": -0}"#, "u32: 0"),
        (r#"{"u32": 0e999999}"#, "u32: 0"),
        (r#"{"ri": [1e1, "2E1", 3.00]}"#, "ri: [10, 20, 3]"),
    ] {
        let ours = parse(Format::Json, &m, json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(ours, parse(Format::Text, &m, text.as_bytes()).unwrap(), "{json}");
    }
    // A wrapper type at the root: its value is bare, and the error still has its place.
    let w = support::message("google.protobuf.Int64Value");
    let e = rejects(Format::Json, &w, b"-9223372036854775809", "");
    assert_eq!((e.message(), e.position()), ("-9223372036854775809 is out of range for int64", (1, 20)));
    let e = rejects(Format::Json, &w, b"\n  \"1.5\"", "");
    assert_eq!((e.message(), e.position()), ("1.5 is not an integer, as int64 needs", (2, 7)));
}

#[test]
fn truncated_documents_fail_inside_the_input() {
    let m = support::message("t.M");
    let json =
        "{\n  \"s\": \"x\\u00e9\",\n  \"rm\": [{\"ri\": [1, 2]}, {\"s64\": \"-3\"}],\n  \"msi\": {\"k\": 1},\n  \
                \"any\": {\"@type\": \"type.googleapis.com/t.M\", \"i32\": 5},\n  \"ts\": \"1970-01-01T00:00:00Z\",\n  \
                \"by\": \"AAE=\", \"va\": [null, {\"a\": true}]\n}";
    parse(Format::Json, &m, json.as_bytes()).unwrap();
    for end in 0..json.len() {
        let cut = &json.as_bytes()[..end];
        match parse(Format::Json, &m, cut) {
            Ok(_) => panic!("{}: a truncated document was accepted", &json[..end]),
            Err(e) => {
                assert!(matches!(e, ParseError::Json { .. }));
                assert_inside(cut, &e);
            }
        }
    }
    let text = "s: 'x\\303\\251'\nrm [{ ri: [1, 2] }, < s64: -3 >]\nmsi { key: 'k' value: 1 }\n\
                any { [type.googleapis.com/t.M] { i32: 5 } }\nby: \"\\x00\\001\" # end\n";
    let full = parse(Format::Text, &m, text.as_bytes()).unwrap();
    for end in 0..text.len() {
        let cut = &text.as_bytes()[..end];
        // A cut between fields is a shorter message; anywhere else it is an error.
        match parse(Format::Text, &m, cut) {
            Ok(b) => assert!(b.len() <= full.len(), "{}", &text[..end]),
            Err(e) => {
                assert!(matches!(e, ParseError::Text { .. }));
                assert_inside(cut, &e);
            }
        }
    }
}

#[test]
fn an_any_is_not_buffered_as_a_tree() {
    // Any's `@type` may come last, so its object is read before its type is known; a long
    // list in it must not cost a tree node per element.
    let m = support::message("t.M");
    let items = vec!["1"; 1 << 20].join(",");
    let json = format!(r#"{{"any": {{"ri": [{items}], "@type": "type.googleapis.com/t.M"}}}}"#);
    let out = parse(Format::Json, &m, json.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.len() > 1 << 20, "{} bytes", out.len());
    let json = format!(r#"{{"any": {{"@type": "type.googleapis.com/t.M", "ri": [{items}], "ri": []}}}}"#);
    rejects(Format::Json, &m, json.as_bytes(), "more than once");
    let json = format!(r#"{{"any": {{"s": "{}", "@type": "type.googleapis.com/t.M"}}}}"#, "x".repeat(10 << 20));
    parse(Format::Json, &m, json.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
}
