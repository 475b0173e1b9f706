//! Text format output is byte-identical to `protoc --decode`, for every corpus payload and
//! for hand-made edge cases, with every engine.
//!
//! The expected outputs are never written by hand: `tests/expected/regen.sh` produced them
//! with protoc 3.21.12 (Debian `protobuf-compiler`), as
//!
//! * for each entry `(PROTO, TYPE, PAYLOAD)` of `common::PAYLOADS`:
//!   `protoc -I../shared/corpus --decode=TYPE ../shared/corpus/PROTO < ../shared/corpus/PAYLOAD
//!   > tests/expected/PAYLOAD.txt`; output over 3,000,000 bytes is stored instead as
//!   `tests/expected/PAYLOAD.digest` (`len N` and `fnv1a64 HEX`, the 64-bit FNV-1a of the
//!   output, which [`fnv1a64`] recomputes here);
//! * for each case `== NAME FILE TYPE` of `tests/schemas/textcases.cases` (hex payloads):
//!   `protoc -Itests/schemas --decode=TYPE tests/schemas/FILE < BYTES
//!   > tests/expected/textcases/NAME.txt`.
//!
//! To add an edge case, append it to `textcases.cases` (and the schemas if needed) and run
//! `tests/expected/regen.sh`. A case whose header ends in `known-divergence` documents a
//! known difference from protoc: the test requires it to still differ (and tells when it
//! no longer does).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use protojit::{Arena, EngineKind, EngineOptions, Schema};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn expected_dir() -> PathBuf {
    root().join("tests/expected")
}

/// 64-bit FNV-1a, as `regen.sh` computes it for large expected outputs.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// What protoc printed for one input: the text itself, or its length and digest.
enum Expected {
    Text(String),
    Digest { len: usize, fnv: u64 },
}

fn load_expected(stem: &Path) -> Expected {
    let txt = stem.with_file_name(format!("{}.txt", stem.file_name().unwrap().to_string_lossy()));
    let digest = stem.with_file_name(format!("{}.digest", stem.file_name().unwrap().to_string_lossy()));
    if let Ok(bytes) = std::fs::read(&txt) {
        return Expected::Text(String::from_utf8(bytes).expect("protoc prints ASCII"));
    }
    let text = std::fs::read_to_string(&digest).unwrap_or_else(|_| {
        panic!("neither {} nor {} exists; run tests/expected/regen.sh", txt.display(), digest.display())
    });
    let mut len = None;
    let mut fnv = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("len", v)) => len = Some(v.parse().expect("len")),
            Some(("fnv1a64", v)) => fnv = Some(u64::from_str_radix(v, 16).expect("fnv1a64")),
            _ => panic!("{}: unexpected line {line:?}", digest.display()),
        }
    }
    Expected::Digest { len: len.expect("len line"), fnv: fnv.expect("fnv1a64 line") }
}

/// `Err` with the first differing line when `actual` is not what protoc printed.
fn check(actual: &str, expected: &Expected) -> Result<(), String> {
    match expected {
        Expected::Text(exp) if exp == actual => Ok(()),
        Expected::Text(exp) => {
            let (mut a, mut e) = (actual.lines(), exp.lines());
            let mut line = 1;
            loop {
                match (a.next(), e.next()) {
                    (Some(x), Some(y)) if x == y => line += 1,
                    (x, y) => {
                        return Err(format!(
                            "first difference at line {line}: protojit {x:?}, protoc {y:?} ({} vs {} bytes)",
                            actual.len(),
                            exp.len()
                        ))
                    }
                }
            }
        }
        Expected::Digest { len, fnv } => {
            let got = fnv1a64(actual.as_bytes());
            if actual.len() == *len && got == *fnv {
                Ok(())
            } else {
                Err(format!(
                    "differs from protoc's output: {} bytes, fnv1a64 {got:016x}; protoc: {len} bytes, fnv1a64 {fnv:016x}",
                    actual.len()
                ))
            }
        }
    }
}

/// Decodes `bytes` with `engine` and compares the text format with protoc's. A panic
/// (in any engine) is reported as a failure of this input, so one broken engine does not
/// hide the results of the others.
fn print_and_check(
    schema: &Schema,
    type_name: &str,
    engine: EngineKind,
    bytes: &[u8],
    expected: &Expected,
) -> Result<(), String> {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let decoder = schema
            .decoder_with_options(type_name, &EngineOptions::default().with_kind(engine))
            .map_err(|e| e.to_string())?;
        let arena = Arena::new();
        let msg = decoder.decode(bytes, &arena).map_err(|e| format!("decode failed: {e}"))?;
        check(&msg.to_text_format(), expected)
    }));
    match run {
        Ok(result) => result,
        Err(panic) => Err(format!(
            "panicked: {}",
            panic.downcast_ref::<String>().map(String::as_str).or(panic.downcast_ref::<&str>().copied()).unwrap_or("?")
        )),
    }
}

#[test]
fn fnv1a64_matches_reference_vectors() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn corpus_payloads_print_as_protoc_decode() {
    let Some(dir) = common::corpus_dir("corpus_payloads_print_as_protoc_decode") else { return };
    let mut schemas: HashMap<&str, Schema> = HashMap::new();
    let mut failures = Vec::new();
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = schemas.entry(proto).or_insert_with(|| common::corpus_schema(&dir, proto));
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let expected = load_expected(&expected_dir().join(file));
        for engine in common::ENGINES {
            if let Err(e) = print_and_check(schema, type_name, engine, &bytes, &expected) {
                failures.push(format!("{file} ({engine:?}): {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "text format differs from protoc:\n{}", failures.join("\n"));
}

/// One hand-made case of `tests/schemas/textcases.cases`.
struct Case {
    name: String,
    file: String,
    type_name: String,
    bytes: Vec<u8>,
    /// Marked `known-divergence`: protojit must still print differently from protoc.
    known_divergence: bool,
}

fn hex_bytes(tok: &str, name: &str) -> Vec<u8> {
    assert!(tok.len().is_multiple_of(2), "case {name}: odd hex token {tok:?}");
    (0..tok.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&tok[i..i + 2], 16).unwrap_or_else(|_| panic!("case {name}: bad hex {tok:?}")))
        .collect()
}

fn load_cases() -> Vec<Case> {
    let path = root().join("tests/schemas/textcases.cases");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut cases: Vec<Case> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(head) = line.strip_prefix("==") {
            let parts: Vec<&str> = head.split_whitespace().collect();
            let known_divergence = match parts.get(3) {
                None => false,
                Some(&"known-divergence") if parts.len() == 4 => true,
                _ => panic!("bad case header {line:?}"),
            };
            assert!(parts.len() >= 3, "bad case header {line:?}");
            cases.push(Case {
                name: parts[0].to_owned(),
                file: parts[1].to_owned(),
                type_name: parts[2].to_owned(),
                bytes: Vec::new(),
                known_divergence,
            });
            continue;
        }
        let case = cases.last_mut().expect("hex before the first case header");
        for tok in line.split_whitespace() {
            let bytes = hex_bytes(tok, &case.name);
            case.bytes.extend(bytes);
        }
    }
    cases
}

#[test]
fn edge_cases_print_as_protoc_decode() {
    let cases = load_cases();
    assert!(cases.len() >= 20, "only {} cases parsed", cases.len());
    let schemas_dir = root().join("tests/schemas");
    let mut schemas: HashMap<String, Schema> = HashMap::new();
    let mut failures = Vec::new();
    for case in &cases {
        let schema = schemas.entry(case.file.clone()).or_insert_with(|| {
            Schema::from_proto_files(&[schemas_dir.join(&case.file)], &[&schemas_dir])
                .unwrap_or_else(|e| panic!("{}: {e}", case.file))
        });
        let expected = load_expected(&expected_dir().join("textcases").join(&case.name));
        for engine in common::ENGINES {
            match (print_and_check(schema, &case.type_name, engine, &case.bytes, &expected), case.known_divergence) {
                (Ok(()), false) => {}
                (Err(e), false) => failures.push(format!("{} ({engine:?}): {e}", case.name)),
                (Err(e), true) if !e.starts_with("panicked") && !e.starts_with("decode failed") => {
                    println!("known divergence {} ({engine:?}): {e}", case.name)
                }
                (Err(e), true) => failures.push(format!("{} ({engine:?}), a known divergence, now fails differently: {e}", case.name)),
                (Ok(()), true) => failures.push(format!(
                    "{} ({engine:?}) now prints as protoc does: remove `known-divergence` from its header in textcases.cases",
                    case.name
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from protoc:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every expected file belongs to a case and every case has one, so a renamed or deleted
/// case cannot leave a stale file behind or go unchecked.
#[test]
fn edge_case_expected_files_match_the_cases() {
    let names: BTreeSet<String> = load_cases().into_iter().map(|c| format!("{}.txt", c.name)).collect();
    let files: BTreeSet<String> = std::fs::read_dir(expected_dir().join("textcases"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, files, "tests/expected/textcases/ is out of date; run tests/expected/regen.sh");
}

/// Every corpus payload has exactly one expected output (text or digest).
#[test]
fn corpus_expected_files_are_complete() {
    for (_, _, file) in common::PAYLOADS {
        let txt = expected_dir().join(format!("{file}.txt")).exists();
        let digest = expected_dir().join(format!("{file}.digest")).exists();
        assert!(txt ^ digest, "{file}: expected exactly one of .txt / .digest (txt {txt}, digest {digest})");
    }
}

/// A proto3 implicit-presence `-0.0` is present (its bits are not zero): protoc 3.21.12's
/// `--decode` prints it (`f_double: -0`), and so does protojit; `+0.0` is not printed.
#[test]
fn negative_zero_without_presence_prints() {
    let schema = common::reflect_schema();
    let negative = [&[0x09][..], &(-0.0f64).to_le_bytes(), &[0x15], &(-0.0f32).to_le_bytes()].concat();
    let positive = [&[0x09][..], &0.0f64.to_le_bytes(), &[0x15], &0.0f32.to_le_bytes()].concat();
    for engine in common::ENGINES {
        let decoder = schema
            .decoder_with_options("everything3.Everything3", &EngineOptions::default().with_kind(engine))
            .unwrap();
        let arena = Arena::new();
        let text = decoder.decode(&negative, &arena).unwrap().to_text_format();
        assert_eq!(text, "f_double: -0\nf_float: -0\n", "{engine:?}");
        assert_eq!(decoder.decode(&positive, &arena).unwrap().to_text_format(), "", "{engine:?}");
    }
}
