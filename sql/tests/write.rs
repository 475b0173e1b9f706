//! `COPY … TO … STORED AS PROTOBUF` and `INSERT INTO` a protobuf table: the rows written come back as the same rows and as the canonical messages.

use std::path::Path;

use datafusion::arrow::array::{Array, BinaryArray};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use protojit::Schema;
use protojit_arrow::{ArrowOptions, Converter, Encoder};
use protojit_sql::{register_protobuf_format, ProtobufFormatFactory};

const PROTO: &str = r#"
syntax = "proto3";
package t;
message Event {
  string name = 1;
  int64 at = 2;
  repeated int32 codes = 3;
  map<string, int32> counts = 4;
  Inner inner = 5;
  oneof choice { string text = 6; int32 number = 7; }
  enum Kind { KIND_UNSPECIFIED = 0; A = 1; B = 2; }
  Kind kind = 8;
  repeated Inner items = 9;
}
message Inner { bool flag = 1; double x = 2; }
"#;

fn schema(dir: &Path) -> Schema {
    let proto = dir.join("t.proto");
    std::fs::write(&proto, PROTO).unwrap();
    Schema::from_proto_files(&[proto], &[dir.to_path_buf()]).unwrap()
}

/// Delimited records of `n` events, canonical (as the encoder writes them).
fn records(schema: &Schema, n: usize) -> Vec<Vec<u8>> {
    use prost::Message;
    use prost_reflect::{DynamicMessage, MapKey, Value};
    let pool = schema.pool();
    let event = pool.get_message_by_name("t.Event").unwrap();
    let inner = pool.get_message_by_name("t.Inner").unwrap();
    (0..n)
        .map(|i| {
            let mut m = DynamicMessage::new(event.clone());
            m.set_field_by_name("name", Value::String(format!("event {i}")));
            m.set_field_by_name("at", Value::I64(1_700_000_000 + i as i64));
            m.set_field_by_name("codes", Value::List((0..i % 4).map(|c| Value::I32(c as i32 - 1)).collect()));
            if i % 3 == 0 {
                let counts = [(MapKey::String(format!("k{i}")), Value::I32(i as i32 + 1))].into_iter().collect();
                m.set_field_by_name("counts", Value::Map(counts));
            }
            if i % 2 == 0 {
                let mut x = DynamicMessage::new(inner.clone());
                x.set_field_by_name("flag", Value::Bool(true));
                x.set_field_by_name("x", Value::F64(i as f64 / 4.0));
                m.set_field_by_name("inner", Value::Message(x));
                m.set_field_by_name("text", Value::String("t".into()));
            } else {
                m.set_field_by_name("number", Value::I32(i as i32));
            }
            m.set_field_by_name("kind", Value::EnumNumber((i % 3) as i32));
            m.encode_to_vec()
        })
        .collect()
}

fn delimited(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        prost::encoding::encode_varint(r.len() as u64, &mut out);
        out.extend_from_slice(r);
    }
    out
}

/// Every delimited record in the files under `dir`, in file-name order.
fn read_back(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let len = prost::encoding::decode_varint(&mut rest).unwrap() as usize;
            out.push(rest[..len].to_vec());
            rest = &rest[len..];
        }
    }
    out
}

async fn context(schema: &Schema) -> SessionContext {
    let ctx = SessionContext::new();
    register_protobuf_format(&ctx, ProtobufFormatFactory::with_schema(schema.clone())).unwrap();
    ctx
}

/// The error `sql` fails with when run.
async fn failure(ctx: &SessionContext, sql: &str) -> String {
    ctx.sql(sql).await.unwrap().collect().await.unwrap_err().to_string()
}

async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test]
async fn copy_to_writes_the_rows_as_messages() {
    let dir = tempdir("copy");
    let schema = schema(&dir);
    let records = records(&schema, 50);
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/events.bin"), delimited(&records)).unwrap();
    let ctx = context(&schema).await;
    let input = dir.join("in");
    let out = dir.join("out");
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE events STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 't.Event')",
        input.display()
    ))
    .await
    .unwrap();
    let written = rows(
        &ctx,
        &format!(
            "COPY (SELECT * FROM events ORDER BY at) TO '{}/' STORED AS PROTOBUF OPTIONS ('message_type' 't.Event')",
            out.display()
        ),
    )
    .await;
    assert!(written.contains("| 50 "), "{written}");
    // The files hold the canonical messages of the rows (one writer: one file, in order).
    let mut back = read_back(&out);
    back.sort();
    let mut want = records.clone();
    want.sort();
    assert_eq!(back, want);
    // A table over the output gives the query's rows.
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE copied STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 't.Event')",
        out.display()
    ))
    .await
    .unwrap();
    let q = "SELECT name, at, codes, counts, inner, text, number, kind FROM {} ORDER BY at";
    assert_eq!(rows(&ctx, &q.replace("{}", "copied")).await, rows(&ctx, &q.replace("{}", "events")).await);
}

#[tokio::test]
async fn copy_to_matches_columns_by_name_and_says_which_is_wrong() {
    let dir = tempdir("columns");
    let schema = schema(&dir);
    let ctx = context(&schema).await;
    let out = dir.join("out");
    // A projection with renamed, computed columns: matched by name, the rest unset.
    let sql = format!(
        "COPY (SELECT 'x' || CAST(v AS VARCHAR) AS name, CAST(v AS BIGINT) * 10 AS at FROM (VALUES (1), (2), (3)) AS s(v)) \
         TO '{}/' STORED AS PROTOBUF OPTIONS ('message_type' 't.Event', 'allow_missing_columns' 'true')",
        out.display()
    );
    rows(&ctx, &sql).await;
    let back = read_back(&out);
    let converter = Converter::new(&schema, "t.Event", &ArrowOptions::default()).unwrap();
    let batch = converter.convert(back.iter().map(Vec::as_slice)).unwrap();
    let names = pretty_format_batches(&[batch.project(&[0, 1]).unwrap()]).unwrap().to_string();
    assert!(names.contains("| x1   | 10 |") && names.contains("| x3   | 30 |"), "{names}");

    // Without allowing them, the missing columns are an error naming one.
    let err = failure(&ctx, &sql.replace(", 'allow_missing_columns' 'true'", "")).await;
    assert!(err.contains("column"), "{err}");

    // An extra column is an error naming it, unless ignored.
    let extra = format!(
        "COPY (SELECT 'a' AS name, 1 AS bogus) TO '{}/' STORED AS PROTOBUF \
         OPTIONS ('message_type' 't.Event', 'allow_missing_columns' 'true'{{}})",
        dir.join("extra").display()
    );
    let err = failure(&ctx, &extra.replace("{}", "")).await;
    assert!(err.contains("bogus"), "{err}");
    rows(&ctx, &extra.replace("{}", ", 'ignore_extra_columns' 'true'")).await;
    assert_eq!(read_back(&dir.join("extra")).len(), 1);

    // A value out of the field's range names the column.
    let range = format!(
        "COPY (SELECT 'a' AS name, [5000000000] AS codes) TO '{}/' STORED AS PROTOBUF \
         OPTIONS ('message_type' 't.Event', 'allow_missing_columns' 'true')",
        dir.join("range").display()
    );
    let err = failure(&ctx, &range).await;
    assert!(err.contains("codes"), "{err}");
}

#[tokio::test]
async fn insert_into_appends_messages_and_mapping_options_invert() {
    let dir = tempdir("insert");
    let schema = schema(&dir);
    let records = records(&schema, 20);
    let ctx = context(&schema).await;
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.bin"), delimited(&records)).unwrap();
    std::fs::create_dir_all(dir.join("table")).unwrap();
    // The target table maps with options: its rows are written back through their inverse.
    let options = "'message_type' 't.Event', 'maps' 'entries', 'enums' 'string', 'large' 'true', 'oneof_case' 'true'";
    for (name, location) in [("source", "in"), ("target", "table")] {
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE {name} STORED AS PROTOBUF LOCATION '{}/' OPTIONS ({options})",
            dir.join(location).display()
        ))
        .await
        .unwrap();
    }
    let schema_of = rows(
        &ctx,
        "SELECT arrow_typeof(counts), arrow_typeof(kind), arrow_typeof(name), choice_case FROM source LIMIT 1",
    )
    .await;
    assert!(schema_of.contains("LargeList") && schema_of.contains("LargeUtf8"), "{schema_of}");
    rows(&ctx, "INSERT INTO target SELECT * FROM source").await;
    rows(&ctx, "INSERT INTO target SELECT * FROM source WHERE at % 2 = 0").await;
    let mut back = read_back(&dir.join("table"));
    back.sort();
    let mut want: Vec<_> = records.iter().cloned().chain(records.iter().step_by(2).cloned()).collect();
    want.sort();
    assert_eq!(back, want);
    assert_eq!(rows(&ctx, "SELECT count(*) AS n FROM target").await, rows(&ctx, "SELECT 30 AS n").await);
}

#[cfg(feature = "compression")]
#[tokio::test]
async fn copy_to_compresses_and_reads_back() {
    let dir = tempdir("gzip");
    let schema = schema(&dir);
    let records = records(&schema, 10);
    let ctx = context(&schema).await;
    let batch = Converter::new(&schema, "t.Event", &ArrowOptions::default())
        .unwrap()
        .convert(records.iter().map(Vec::as_slice))
        .unwrap();
    ctx.register_batch("events", batch).unwrap();
    let out = dir.join("out");
    rows(
        &ctx,
        &format!(
            "COPY events TO '{}/' STORED AS PROTOBUF OPTIONS ('message_type' 't.Event', 'compression' 'gzip')",
            out.display()
        ),
    )
    .await;
    let files: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.iter().all(|f| f.to_string_lossy().ends_with(".protobuf.gz")), "{files:?}");
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE back STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 't.Event')",
        out.display()
    ))
    .await
    .unwrap();
    assert_eq!(rows(&ctx, "SELECT count(*) AS n FROM back").await, rows(&ctx, "SELECT 10 AS n").await);
}

#[test]
fn encoder_is_the_inverse_the_sink_uses() {
    // The sink's serializer is `Encoder::encode_delimited`: one record per row.
    let dir = tempdir("encoder");
    let schema = schema(&dir);
    let records = records(&schema, 5);
    let converter = Converter::new(&schema, "t.Event", &ArrowOptions::default()).unwrap();
    let batch = converter.convert(records.iter().map(Vec::as_slice)).unwrap();
    let encoded: BinaryArray =
        Encoder::new(&schema, "t.Event", &ArrowOptions::default()).unwrap().encode(&batch).unwrap();
    assert_eq!(encoded.len(), 5);
    assert_eq!(encoded.value(3), &records[3][..]);
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("protojit-sql-write-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn explode_as_a_table_option_gives_a_row_per_element() {
    use prost::Message;
    use prost_reflect::{DynamicMessage, Value};
    let dir = tempdir("explode");
    let schema = schema(&dir);
    let event = schema.pool().get_message_by_name("t.Event").unwrap();
    let inner = schema.pool().get_message_by_name("t.Inner").unwrap();
    // Record i has i items (0, 1, 2, 3): 6 elements, one record without any.
    let records: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            let mut m = DynamicMessage::new(event.clone());
            m.set_field_by_name("name", Value::String(format!("r{i}")));
            let items = (0..i)
                .map(|k| {
                    let mut x = DynamicMessage::new(inner.clone());
                    x.set_field_by_name("x", Value::F64(f64::from(k)));
                    Value::Message(x)
                })
                .collect();
            m.set_field_by_name("items", Value::List(items));
            m.encode_to_vec()
        })
        .collect();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.bin"), delimited(&records)).unwrap();
    let ctx = context(&schema).await;
    for (name, option) in [("e", "explode"), ("o", "explode_outer")] {
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE {name} STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 't.Event', '{option}' 'items')",
            dir.join("in").display()
        ))
        .await
        .unwrap();
    }
    // The rows are the elements (with the record's other columns), read or not.
    assert_eq!(rows(&ctx, "SELECT COUNT(*) AS n FROM e").await, rows(&ctx, "SELECT 6 AS n").await);
    assert_eq!(rows(&ctx, "SELECT COUNT(*) AS n FROM o").await, rows(&ctx, "SELECT 7 AS n").await);
    let sums = rows(&ctx, "SELECT name, SUM(items['x']) AS x FROM e GROUP BY name ORDER BY name").await;
    assert_eq!(
        sums,
        rows(&ctx, "SELECT * FROM (VALUES ('r1', 0.0), ('r2', 1.0), ('r3', 3.0)) AS t(name, x) ORDER BY name")
            .await
            .replace("column1", "name")
            .replace("column2", "x")
    );
}

#[tokio::test]
async fn extensions_as_a_table_option_are_columns() {
    use prost::Message;
    use prost_reflect::{DynamicMessage, Value};
    let dir = tempdir("extensions");
    let proto = dir.join("x.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto2\"; package x; message M { optional int32 id = 1; extensions 100 to 199; } \
         extend M { optional string note = 100; }",
    )
    .unwrap();
    let schema = Schema::from_proto_files(&[proto], std::slice::from_ref(&dir)).unwrap();
    let m = schema.pool().get_message_by_name("x.M").unwrap();
    let note = schema.pool().get_extension_by_name("x.note").unwrap();
    let records: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            let mut r = DynamicMessage::new(m.clone());
            r.set_field_by_name("id", Value::I32(i));
            if i != 1 {
                r.set_extension(&note, Value::String(format!("n{i}")));
            }
            r.encode_to_vec()
        })
        .collect();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.bin"), delimited(&records)).unwrap();
    let ctx = context(&schema).await;
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE m STORED AS PROTOBUF LOCATION '{}/' OPTIONS ('message_type' 'x.M', 'extensions' 'true')",
        dir.join("in").display()
    ))
    .await
    .unwrap();
    // A query that reads the extension's column, and one that does not.
    let got = rows(&ctx, "SELECT id, \"[x.note]\" AS note FROM m ORDER BY id").await;
    let want = rows(&ctx, "SELECT * FROM (VALUES (0, 'n0'), (1, NULL), (2, 'n2')) AS t(id, note)").await;
    assert_eq!(got, want);
    assert_eq!(rows(&ctx, "SELECT SUM(id) AS s FROM m").await, rows(&ctx, "SELECT 3 AS s").await);
}
