//! `protojit decode -o arrow|parquet`: files that read back (Arrow IPC and Parquet
//! readers), projections, bad records with and without --keep-going (no Parquet file that
//! looks complete after a failure), and the column flags' checks.

mod support;

use protojit_arrow::arrow_array::cast::AsArray;
use protojit_arrow::arrow_array::RecordBatch;
use protojit_arrow::arrow_ipc::reader::StreamReader;
use support::columns::{fails, ids, read_parquet, stream};
use support::*;

const N: u32 = 20_000;

fn decode(tmp: &TempDir, input: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    run(protojit().arg("decode").arg("--proto").arg(proto).args(["--type", "Reading"]).args(extra).arg(input), None)
}

#[test]
fn parquet_output_reads_back() {
    let tmp = TempDir::new("parquet-out");
    let input = tmp.write("in.bin", &stream(N));
    let target = tmp.path("out.parquet");
    let out = decode(&tmp, &input, &["--delimited", "-o", "parquet", "--output-file", target.to_str().unwrap()]);
    ok(&out);
    let batches = read_parquet(&target);
    assert_eq!(ids(&batches), (1..=N as i32).collect::<Vec<_>>());
    // Batches of --batch-size rows (row groups of as many).
    assert!(batches.iter().all(|b| b.num_rows() <= 8192));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "label", "values", "color", "counts", "child", "big"]);
    assert!(std::fs::read_dir(&tmp.0).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("partial")));
}

#[test]
fn arrow_output_with_a_projection_reads_back() {
    let tmp = TempDir::new("arrow-out");
    let input = tmp.write("in.bin", &stream(N));
    let out = decode(
        &tmp,
        &input,
        &["--delimited", "-o", "arrow", "--select", "label", "--select", "id", "--batch-size", "1000"],
    );
    let bytes = ok(&out);
    let reader = StreamReader::try_new(bytes.as_slice(), None).unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), (N as usize).div_ceil(1000));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["label", "id"]);
    assert_eq!(ids(&batches), (1..=N as i32).collect::<Vec<_>>());
    assert_eq!(batches[1].column(0).as_string::<i32>().value(0), "r1001");
}

/// `schema arrow` prints, before any data, the schema the columns commands give their
/// batches: as text, JSON, and an IPC stream that reads back to the same schema.
#[test]
fn schema_arrow_is_the_schema_of_the_batches() {
    let tmp = TempDir::new("schema-arrow");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let input = tmp.write("in.bin", &stream(10));
    let schema_of = |extra: &[&str]| {
        ok(&run(protojit().args(["schema", "arrow", "--proto"]).arg(&proto).arg("Reading").args(extra), None))
    };
    let ipc = schema_of(&["--format", "ipc", "--select", "label", "--select", "id"]);
    let from_schema = StreamReader::try_new(ipc.as_slice(), None).unwrap().schema();
    let batches = decode(&tmp, &input, &["--delimited", "-o", "arrow", "--select", "label", "--select", "id"]);
    let from_data = StreamReader::try_new(ok(&batches).as_slice(), None).unwrap().schema();
    assert_eq!(from_schema, from_data);

    let text = String::from_utf8(schema_of(&[])).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("-- ")).collect();
    assert_eq!(lines.len(), 7, "{text}");
    assert!(lines[0].starts_with("id: Int32"), "{text}");
    assert!(text.contains("-- protojit.message: "), "{text}");
    let json: serde_json::Value = serde_json::from_slice(&schema_of(&["--format", "json", "--enum-numbers"])).unwrap();
    let fields = json["fields"].as_array().unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["id", "label", "values", "color", "counts", "child", "big"]);
    assert_eq!(fields[3]["type"], "Int32", "--enum-numbers: color as numbers");

    let bad = run(protojit().args(["schema", "arrow", "--proto"]).arg(&proto).arg("NoSuchType"), None);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(stderr(&bad).matches('\n').count(), 1, "{}", stderr(&bad));
}

#[test]
fn bad_records_fail_without_leaving_a_parquet_file() {
    let tmp = TempDir::new("parquet-bad");
    let mut records: Vec<Vec<u8>> = (1..=100).map(|id| reading(id, "x", 1.0)).collect();
    records[41] = b"\x12\x09short".to_vec(); // record 42: a length past its end
    let input = tmp.write("in.bin", &delimited(records.iter().map(Vec::as_slice)));
    let target = tmp.path("out.parquet");
    let out = decode(&tmp, &input, &["--delimited", "-o", "parquet", "--output-file", target.to_str().unwrap()]);
    let line = fails(&out, 1);
    assert!(line.contains("record 42: cannot decode as sample.Reading"), "{line}");
    assert!(line.contains("byte offset"), "{line}");
    assert!(std::fs::read_dir(&tmp.0).unwrap().all(|e| {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        !name.contains("out.parquet")
    }));

    // --keep-going: reported (number and offset), skipped, exit 1 at the end, file complete.
    let out = decode(
        &tmp,
        &input,
        &["--delimited", "--keep-going", "-o", "parquet", "--output-file", target.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("record 42: cannot decode") && err.contains("1 record(s) did not decode"), "{err}");
    let got = ids(&read_parquet(&target));
    assert_eq!(got.len(), 99);
    assert!(!got.contains(&42));
}

#[test]
fn column_flags_are_checked() {
    let tmp = TempDir::new("arrow-usage");
    let input = tmp.write("in.bin", &stream(3));
    let line = fails(&decode(&tmp, &input, &["--delimited", "-o", "parquet"]), 2);
    assert_eq!(line, "--output parquet needs --output-file FILE");
    let line = fails(&decode(&tmp, &input, &["--delimited", "-o", "arrow", "--select", "values[0]"]), 2);
    assert!(line.starts_with("--select values[0]: with --output arrow or parquet"), "{line}");
    let line = fails(&decode(&tmp, &input, &["--delimited", "-o", "arrow", "--select", "nope"]), 2);
    assert_eq!(line, "cannot select `nope`: `sample.Reading` has no field `nope`");
    for off in [&["--utf8", "off"][..], &["--no-utf8-check"]] {
        let line = fails(&decode(&tmp, &input, &[&["--delimited", "-o", "arrow"][..], off].concat()), 2);
        assert!(line.starts_with("--utf8 off does not apply to --output arrow or parquet"), "{line}");
    }
    let line = fails(&decode(&tmp, &input, &["--delimited", "--output-file", "x"]), 2);
    assert!(line.starts_with("--output-file applies to --output arrow and parquet"), "{line}");
}

/// `--verbose` says which path fills the columns (by default the compiled appenders raced
/// against the chunked path, which also converts while they compile) and how many records
/// each filled.
#[test]
fn verbose_names_the_columns_path() {
    let tmp = TempDir::new("arrow-path");
    let input = tmp.write("in.bin", &stream(50));
    let out = decode(&tmp, &input, &["--verbose", "--delimited", "-o", "arrow"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let path = "protojit: note: records become columns by the auto path (the compiled column appenders raced against the chunked path)";
    assert!(stderr.lines().any(|l| l == path), "{stderr}");
    let counts = "protojit: note: records filled by the compiled column appenders: ";
    let line = stderr.lines().find(|l| l.starts_with(counts)).unwrap_or_default();
    let numbers: Vec<u64> = line.split([':', ';']).filter_map(|part| part.trim().parse().ok()).collect();
    assert_eq!((numbers.len(), numbers.iter().sum::<u64>()), (3, 50), "{stderr}");
    // And, at the end, which engine decodes each type (no silent fallback).
    let engines = "protojit: note: at the end, each message type decodes by: sample.Reading ";
    assert_eq!(stderr.lines().filter(|l| l.starts_with(engines)).count(), 1, "{stderr}");
    let forced = decode(&tmp, &input, &["--verbose", "--delimited", "-o", "arrow", "--engine", "jit"]);
    let stderr = String::from_utf8_lossy(&forced.stderr);
    let line = stderr.lines().find(|l| l.starts_with(engines)).unwrap_or_default();
    assert!(line.starts_with(&format!("{engines}jit")) && !line.contains("interpreter"), "{stderr}");
}

/// With every core converting (`--jobs 0`), a stream too small to repay compiling its type
/// converts on the interpreter and `-v` says so; with `--jobs 1` the compile may run on an
/// idle core, so nothing is said. The output is the same.
#[test]
fn columns_compile_only_what_the_input_repays_when_every_core_converts() {
    let tmp = TempDir::new("arrow-tiering");
    let input = tmp.write("in.bin", &stream(50));
    let cannot = "bytes of input cannot repay compiling ";
    let all = decode(&tmp, &input, &["--verbose", "--delimited", "-o", "arrow", "--jobs", "0"]);
    assert!(all.status.success(), "{all:?}");
    let notes = String::from_utf8_lossy(&all.stderr);
    assert_eq!(notes.lines().filter(|l| l.contains(cannot)).count(), 1, "{notes}");
    assert!(notes.lines().any(|l| l.ends_with("would): decoding on the interpreter")), "{notes}");
    let one = decode(&tmp, &input, &["--verbose", "--delimited", "-o", "arrow", "--jobs", "1"]);
    assert!(one.status.success(), "{one:?}");
    let one_cores = std::thread::available_parallelism().map_or(1, |n| n.get()) == 1;
    assert_eq!(String::from_utf8_lossy(&one.stderr).contains(cannot), one_cores, "{:?}", one.stderr);
    assert_eq!(all.stdout, one.stdout);
}

/// With `--engine jit` the compiled column appenders fill the columns (of a projection, and
/// of the whole type with its map and recursion cut), with the output of the chunked path on
/// the interpreter; `-v` says which path ran.
#[test]
fn compiled_appenders_convert_as_the_chunked_path_does() {
    let tmp = TempDir::new("arrow-compiled");
    let input = tmp.write("in.bin", &stream(N));
    let select = ["--select", "id", "--select", "label", "--select", "values", "--select", "color", "--select", "big"];
    let with = |engine: &str| {
        let args: Vec<&str> =
            ["--verbose", "--delimited", "-o", "arrow", "--engine", engine].iter().chain(&select).copied().collect();
        decode(&tmp, &input, &args)
    };
    let (compiled, chunked) = (with("jit"), with("interp"));
    assert!(compiled.status.success() && chunked.status.success(), "{compiled:?} {chunked:?}");
    assert!(!compiled.stdout.is_empty());
    assert_eq!(compiled.stdout, chunked.stdout);
    let notes = String::from_utf8_lossy(&compiled.stderr);
    let path = "protojit: note: records become columns by the auto path (the compiled column appenders raced against the chunked path)";
    assert!(notes.lines().any(|l| l == path), "{notes}");
    let counts = "protojit: note: records filled by the compiled column appenders: ";
    let line = notes.lines().find(|l| l.starts_with(counts)).unwrap_or_default();
    let compiled_rows: u64 = line[counts.len()..].split(';').next().unwrap_or_default().trim().parse().unwrap_or(0);
    assert!(compiled_rows > 0, "the compiled appenders filled no record: {notes}");
    // The whole type, with its map and `child` cut at `max_recursion`: compiled too.
    let whole = |engine: &str| decode(&tmp, &input, &["--verbose", "--delimited", "-o", "arrow", "--engine", engine]);
    let (compiled, chunked) = (whole("jit"), whole("interp"));
    assert!(compiled.status.success() && chunked.status.success(), "{compiled:?} {chunked:?}");
    assert_eq!(compiled.stdout, chunked.stdout);
    let notes = String::from_utf8_lossy(&compiled.stderr);
    assert!(notes.lines().any(|l| l == path), "{notes}");
}

/// The way back: `decode -o parquet` then `encode --from parquet` gives the records back
/// (canonical records come back byte for byte), from a file and from stdin; an Arrow IPC
/// stream on stdin too.
#[test]
fn parquet_and_arrow_tables_encode_back_to_the_records() {
    let tmp = TempDir::new("encode-back");
    let records = stream(3000);
    let input = tmp.write("in.bin", &records);
    let table = tmp.path("t.parquet");
    ok(&decode(&tmp, &input, &["--delimited", "-o", "parquet", "--output-file", table.to_str().unwrap()]));
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let encode = |from: &str| {
        let mut cmd = protojit();
        cmd.arg("encode").arg("--proto").arg(&proto).args(["--type", "Reading", "--from", from]);
        cmd
    };
    assert!(ok(&run(encode("parquet").arg(&table), None)) == records, "from a Parquet file");
    let parquet = std::fs::read(&table).unwrap();
    assert!(ok(&run(&mut encode("parquet"), Some(&parquet))) == records, "from a Parquet file on stdin");
    let arrow = ok(&decode(&tmp, &input, &["--delimited", "-o", "arrow", "--batch-size", "700"]));
    assert!(ok(&run(&mut encode("arrow"), Some(&arrow))) == records, "from an Arrow IPC stream on stdin");

    // A projection lacks columns the type always has: an error naming one, unless allowed.
    let some = tmp.path("some.parquet");
    let args = ["--delimited", "-o", "parquet", "--select", "id", "--output-file", some.to_str().unwrap()];
    ok(&decode(&tmp, &input, &args));
    let e = fails(&run(encode("parquet").arg(&some), None), 1);
    assert!(e.contains("column `label` (a field of sample.Reading) is missing"), "{e}");
    let only_ids = ok(&run(encode("parquet").arg(&some).arg("--allow-missing-columns"), None));
    let back = ok(&run(
        protojit().arg("decode").arg("--proto").arg(&proto).args([
            "--type",
            "Reading",
            "--delimited",
            "--select",
            "id",
        ]),
        Some(&only_ids),
    ));
    assert_eq!(String::from_utf8(back).unwrap().lines().count(), 3000);

    // A Parquet file read as Arrow IPC: one line that says what the file is not.
    let e = fails(&run(encode("arrow").arg(&table), None), 1);
    assert!(e.contains("not a readable Arrow IPC table"), "{e}");
}

/// The mapping flags: `schema arrow` gives the shape they ask for, `decode -o arrow` writes
/// batches of that schema, `encode --from arrow` turns them back into the records, and
/// flags that do not go together (or with other outputs) are usage errors.
#[test]
fn mapping_flags_shape_the_columns_and_encode_back() {
    let tmp = TempDir::new("mapping-flags");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let records = stream(500);
    let input = tmp.write("in.bin", &records);
    let flags = ["--oneof-case", "--maps", "entries", "--large", "--enums", "string", "--flatten"];
    let schema_of = |extra: &[&str]| {
        ok(&run(protojit().args(["schema", "arrow", "--proto"]).arg(&proto).arg("Reading").args(extra), None))
    };
    let json: serde_json::Value =
        serde_json::from_slice(&schema_of(&[&flags[..], &["--format", "json"]].concat())).unwrap();
    let fields = json["fields"].as_array().unwrap();
    let field = |name: &str| fields.iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("{name}: {json}"));
    assert_eq!(field("label")["type"], "LargeUtf8");
    assert_eq!(field("color")["type"], "LargeUtf8", "--enums string, large");
    assert!(field("counts")["type"].as_str().unwrap().starts_with("LargeList("), "{json}");
    assert!(field("values")["type"].as_str().unwrap().starts_with("LargeList("), "{json}");
    assert_eq!(field("child.id")["type"], "Int32");
    assert_eq!(field("child.id")["nullable"], true, "null where the child is absent");
    assert!(fields.iter().all(|f| !f["type"].as_str().unwrap().starts_with("Struct")), "{json}");

    // decode -o arrow under the flags: the schema printed before, and the records back.
    let ipc = schema_of(&[&flags[..], &["--format", "ipc"]].concat());
    let from_schema = StreamReader::try_new(ipc.as_slice(), None).unwrap().schema();
    let arrow = ok(&decode(&tmp, &input, &[&["--delimited", "-o", "arrow"][..], &flags].concat()));
    let from_data = StreamReader::try_new(arrow.as_slice(), None).unwrap().schema();
    assert_eq!(from_schema, from_data);
    let mut encode = protojit();
    encode.arg("encode").arg("--proto").arg(&proto).args(["--type", "Reading", "--from", "arrow"]);
    assert!(ok(&run(&mut encode, Some(&arrow))) == records, "the flattened, large, string-enum table encodes back");

    // --enum-numbers is --enums number.
    let json: serde_json::Value =
        serde_json::from_slice(&schema_of(&["--format", "json", "--enums", "number"])).unwrap();
    assert_eq!(json["fields"][3]["type"], "Int32");
    let bad = run(
        protojit().args(["schema", "arrow", "--proto"]).arg(&proto).arg("Reading").args([
            "--enum-numbers",
            "--enums",
            "string",
        ]),
        None,
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--enum-numbers is --enums number"), "{}", stderr(&bad));
    let line = fails(&decode(&tmp, &input, &["--delimited", "--flatten"]), 2);
    assert!(line.contains("apply to --output arrow and parquet"), "{line}");
}

/// `--explode PATH` / `--explode-outer PATH`: a row per element (the schema `schema arrow`
/// prints first), the records without one counted in a note; a path that names no list
/// and a non-columnar output are usage errors.
#[test]
fn explode_flags_make_a_row_per_element() {
    let tmp = TempDir::new("explode-flags");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    // Readings of 2 items, of none, of 3.
    let readings: Vec<Vec<u8>> = [vec![1, 2], vec![], vec![3, 4, 5]]
        .iter()
        .map(|ids: &Vec<u32>| {
            let mut r = Vec::new();
            for &id in ids {
                let m = reading(id, &format!("r{id}"), f64::from(id));
                r.push(0x0a);
                varint(&mut r, m.len() as u64);
                r.extend_from_slice(&m);
            }
            r
        })
        .collect();
    let input = tmp.write("readings.bin", &delimited(readings.iter().map(Vec::as_slice)));
    let decode = |extra: &[&str]| {
        run(
            protojit()
                .args(["decode", "--proto"])
                .arg(&proto)
                .args(["--type", "Readings", "--delimited", "-o", "arrow"])
                .args(extra)
                .arg(&input),
            None,
        )
    };
    for (flag, rows) in [("--explode", 5), ("--explode-outer", 6)] {
        let out = decode(&[flag, "items", "--flatten", "-v"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let arrow = out.stdout.clone();
        let batches: Vec<RecordBatch> =
            StreamReader::try_new(arrow.as_slice(), None).unwrap().map(Result::unwrap).collect();
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), rows, "{flag}");
        let schema = batches[0].schema();
        assert_eq!(schema.field(0).name(), "items.id", "{flag}");
        assert!(stderr(&out).contains("1 record(s) had nothing to explode at `items`"), "{}", stderr(&out));
        let ipc = ok(&run(
            protojit().args(["schema", "arrow", "--proto"]).arg(&proto).args([
                "Readings",
                flag,
                "items",
                "--flatten",
                "--format",
                "ipc",
            ]),
            None,
        ));
        assert_eq!(StreamReader::try_new(ipc.as_slice(), None).unwrap().schema(), schema, "{flag}");
    }
    let line = fails(&decode(&["--explode", "items.values"]), 2);
    assert!(line.contains("cannot explode `items.values`"), "{line}");
    let mut json = protojit();
    json.args(["decode", "--proto"]).arg(&proto).args(["--type", "Readings", "--delimited", "--explode", "items"]);
    let line = fails(&run(json.arg(&input), None), 2);
    assert!(line.contains("apply to --output arrow and parquet"), "{line}");
}

/// `--any json`: an `Any` as the JSON of the packed message (`arrow.json`), read back by
/// `encode --from arrow`.
#[test]
fn any_json_flag_prints_the_packed_message() {
    let tmp = TempDir::new("any-json");
    let proto = tmp.write(
        "env.proto",
        br#"syntax = "proto3";
package a;
import "google/protobuf/any.proto";
message Payload { string name = 1; }
message Env { int32 id = 1; google.protobuf.Any body = 2; }
"#,
    );
    let url = b"type.googleapis.com/a.Payload";
    let mut body = vec![0x0a, url.len() as u8];
    body.extend_from_slice(url);
    body.extend_from_slice(b"\x12\x03\x0a\x01x");
    let mut record = vec![0x08, 0x01, 0x12, body.len() as u8];
    record.extend_from_slice(&body);
    let records = delimited([record.as_slice(), b"\x08\x02"]);
    let input = tmp.write("env.bin", &records);
    let mut decode = protojit();
    decode.args(["decode", "--proto"]).arg(&proto);
    decode.args(["--type", "Env", "--delimited", "-o", "arrow", "--any", "json"]).arg(&input);
    let arrow = ok(&run(&mut decode, None));
    let batches: Vec<RecordBatch> =
        StreamReader::try_new(arrow.as_slice(), None).unwrap().map(Result::unwrap).collect();
    let schema = batches[0].schema();
    let field = schema.field_with_name("body").unwrap();
    assert_eq!(field.metadata().get("ARROW:extension:name").map(String::as_str), Some("arrow.json"));
    let text = batches[0].column(1).as_string::<i32>();
    assert_eq!(text.value(0), r#"{"@type":"type.googleapis.com/a.Payload","name":"x"}"#);
    assert_eq!(text.iter().nth(1), Some(None));
    let mut encode = protojit();
    encode.arg("encode").arg("--proto").arg(&proto).args(["--type", "Env", "--from", "arrow"]);
    assert!(ok(&run(&mut encode, Some(&arrow))) == records, "the JSON column encodes back");
}

/// `--extensions`: the schema's extensions of the type as `[pkg.ext]` columns, in `schema
/// arrow` and in `decode -o arrow`'s batches; with another output, a usage error.
#[test]
fn extensions_flag_adds_extension_columns() {
    let tmp = TempDir::new("extensions");
    let proto = tmp.write(
        "e.proto",
        b"syntax = \"proto2\"; package e; message M { optional int32 id = 1; extensions 100 to 199; }\n\
          extend M { optional string tag = 100; }\n",
    );
    let input = tmp.write("m.bin", &delimited([&b"\x08\x01\xa2\x06\x01x"[..], b"\x08\x02"]));
    let mut schema = protojit();
    schema.args(["schema", "arrow", "--proto"]).arg(&proto).args(["M", "--extensions"]);
    let text = String::from_utf8(ok(&run(&mut schema, None))).unwrap();
    assert!(text.contains("[e.tag]: Utf8"), "{text}");
    let mut decode = protojit();
    decode.args(["decode", "--proto"]).arg(&proto).args(["--type", "M", "--delimited", "-o", "arrow", "--extensions"]);
    let arrow = ok(&run(decode.arg(&input), None));
    let batches: Vec<RecordBatch> =
        StreamReader::try_new(arrow.as_slice(), None).unwrap().map(Result::unwrap).collect();
    let tags = batches[0].column_by_name("[e.tag]").unwrap().as_string::<i32>().iter().collect::<Vec<_>>();
    assert_eq!(tags, [Some("x"), None]);
    let mut json = protojit();
    json.args(["decode", "--proto"]).arg(&proto).args(["--type", "M", "--delimited", "--extensions"]);
    let line = fails(&run(json.arg(&input), None), 2);
    assert!(line.contains("--extensions"), "{line}");
}

/// `--recursion json`: the field where the recursive type is cut holds the subtree's JSON,
/// in `schema arrow` and in the batches, and `encode --from arrow` reads it back.
#[test]
fn recursion_json_flag_keeps_the_subtree() {
    let tmp = TempDir::new("recursion-json");
    let proto = tmp.write("sample.proto", SAMPLE_PROTO.as_bytes());
    let mut schema = protojit();
    schema.args(["schema", "arrow", "--proto"]).arg(&proto).args(["Reading", "--recursion", "json", "--flatten"]);
    let text = String::from_utf8(ok(&run(&mut schema, None))).unwrap();
    assert!(text.contains("child.child.child: Utf8"), "{text}");
    // A reading four deep: the fourth comes back from the JSON column.
    let mut record = reading(4, "d", 4.0);
    for id in [3, 2, 1] {
        let mut parent = reading(id, "p", 1.0);
        parent.push(0x32);
        varint(&mut parent, record.len() as u64);
        parent.extend_from_slice(&record);
        record = parent;
    }
    let input = tmp.write("deep.bin", &delimited([record.as_slice()]));
    let mut decode = protojit();
    decode.args(["decode", "--proto"]).arg(&proto);
    decode.args(["--type", "Reading", "--delimited", "-o", "arrow", "--recursion", "json"]).arg(&input);
    let arrow = ok(&run(&mut decode, None));
    let mut encode = protojit();
    encode.arg("encode").arg("--proto").arg(&proto).args(["--type", "Reading", "--from", "arrow"]);
    let back = tmp.write("back.bin", &ok(&run(&mut encode, Some(&arrow))));
    // (The record above has its child after field 7: compared as JSON, not bytes.)
    let json = |path: &std::path::Path| {
        let mut d = protojit();
        d.args(["decode", "--proto"]).arg(&proto).args(["--type", "Reading", "--delimited", "-o", "json"]).arg(path);
        ok(&run(&mut d, None))
    };
    let want = json(&input);
    assert!(String::from_utf8_lossy(&want).contains("\"label\":\"d\""), "four deep");
    assert_eq!(json(&back), want, "the subtree comes back");
}

/// `--structs json`: google.protobuf.Struct as one JSON column in `schema arrow`.
#[test]
fn structs_json_flag_makes_one_json_column() {
    let tmp = TempDir::new("structs-json");
    let proto = tmp.write(
        "s.proto",
        b"syntax = \"proto3\"; package s; import \"google/protobuf/struct.proto\";\n\
          message Doc { google.protobuf.Struct attrs = 1; }\n",
    );
    let schema_of = |extra: &[&str]| {
        let mut c = protojit();
        c.args(["schema", "arrow", "--proto"]).arg(&proto).arg("Doc").args(extra);
        String::from_utf8(ok(&run(&mut c, None))).unwrap()
    };
    assert!(schema_of(&["--structs", "json"]).starts_with("attrs: Utf8\n"), "{}", schema_of(&["--structs", "json"]));
    assert!(schema_of(&[]).starts_with("attrs: Struct("), "{}", schema_of(&[]));
}
