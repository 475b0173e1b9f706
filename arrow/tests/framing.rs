//! Schema-registry framing: headers are checked against the converter's type and stripped,
//! the schema id becomes a column on request, and bad headers are exact errors.

use protojit::Schema;
use protojit_arrow::arrow_array::cast::AsArray;
use protojit_arrow::arrow_array::types::{Int32Type, Int64Type};
use protojit_arrow::{AppendError, ArrowOptions, ConvertError, Converter, Framing, FramingError};

const PROTO: &str = r#"syntax = "proto3";
package k;
message A { int64 a = 1; }
message B {
  int64 b = 1;
  message C { int64 c = 1; }
  map<string, int64> m = 2;
  message D { int64 d = 1; }
}
"#;

fn schema() -> Schema {
    Schema::from_proto_source("k.proto", PROTO).unwrap()
}

fn zigzag(v: i64) -> u8 {
    u8::try_from((v << 1) ^ (v >> 63)).unwrap()
}

/// A framed record: header with `id` and `indexes` (`None`: the one-byte form of `[0]`),
/// then field 1 = `value`.
fn framed(id: i32, indexes: Option<&[i64]>, value: u8) -> Vec<u8> {
    let mut r = vec![0];
    r.extend_from_slice(&id.to_be_bytes());
    match indexes {
        None => r.push(0),
        Some(ix) => {
            r.push(zigzag(ix.len() as i64));
            r.extend(ix.iter().map(|&i| zigzag(i)));
        }
    }
    r.extend_from_slice(&[0x08, value]);
    r
}

fn options(column: Option<&str>) -> ArrowOptions {
    ArrowOptions {
        framing: Framing::SchemaRegistry { schema_id_column: column.map(str::to_owned) },
        ..ArrowOptions::default()
    }
}

fn record_error(e: ConvertError) -> AppendError {
    match e {
        ConvertError::Record(r) => r.source,
        e => panic!("not a record error: {e:?}"),
    }
}

#[test]
fn headers_are_stripped_and_the_schema_id_is_a_column() {
    let schema = schema();
    let a = Converter::new(&schema, "A", &options(Some("schema_id"))).unwrap();
    let records = [framed(7, None, 1), framed(-2, Some(&[0]), 2)];
    let batch = a.convert(records.iter().map(Vec::as_slice)).unwrap();
    assert_eq!(batch.schema().field(1).name(), "schema_id");
    assert_eq!(batch.column(0).as_primitive::<Int64Type>().values(), &[1, 2]);
    assert_eq!(batch.column(1).as_primitive::<Int32Type>().values(), &[7, -2]);

    // Nested types by their path: B is [1]; B.C is [1, 0]; the map entry counts among B's
    // nested types (it is one in the descriptor), so B.D is [1, 2].
    for (name, path) in [("B", vec![1]), ("B.C", vec![1, 0]), ("B.D", vec![1, 2])] {
        let c = Converter::new(&schema, &format!("k.{name}"), &options(None)).unwrap();
        let batch = c.convert([framed(1, Some(&path), 5).as_slice()]).unwrap();
        assert_eq!(batch.num_columns(), c.arrow_schema().fields().len());
        assert_eq!(batch.column(0).as_primitive::<Int64Type>().values(), &[5], "{name}");
    }

    // The column only when selected (or when everything is).
    let only_id = ArrowOptions { select: Some(vec!["schema_id".into()]), ..options(Some("schema_id")) };
    let c = Converter::new(&schema, "A", &only_id).unwrap();
    let batch = c.convert([framed(9, None, 1).as_slice()]).unwrap();
    assert_eq!(batch.num_columns(), 1);
    assert_eq!(batch.column(0).as_primitive::<Int32Type>().values(), &[9]);
    let only_a = ArrowOptions { select: Some(vec!["a".into()]), ..options(Some("schema_id")) };
    let c = Converter::new(&schema, "A", &only_a).unwrap();
    assert_eq!(c.arrow_schema().fields().len(), 1);
}

#[test]
fn bad_headers_are_exact_errors() {
    let schema = schema();
    let b = Converter::new(&schema, "B", &options(None)).unwrap();
    let cases: [(Vec<u8>, AppendError); 5] = [
        (vec![0, 0, 0], FramingError::Short { len: 3 }.into()),
        (vec![1, 0, 0, 0, 0, 0, 8, 1], FramingError::Magic { byte: 1 }.into()),
        (
            framed(1, None, 1),
            FramingError::OtherType { found: "k.A".into(), indexes: vec![0], expected: "k.B".into() }.into(),
        ),
        (
            framed(1, Some(&[1, 9]), 1),
            FramingError::OtherType {
                found: "no message type of k.proto".into(),
                indexes: vec![1, 9],
                expected: "k.B".into(),
            }
            .into(),
        ),
        (vec![0, 0, 0, 0, 1, 4, 0x80], FramingError::Indexes { offset: 6 }.into()),
    ];
    for (record, expected) in cases {
        let e = record_error(b.convert([record.as_slice()]).unwrap_err());
        assert_eq!(e, expected, "{record:?}");
    }
    let e = record_error(b.convert([framed(1, None, 1).as_slice()]).unwrap_err());
    assert_eq!(e.to_string(), "the record is framed as k.A (message indexes [0]), but its type here is k.B");
    // Bare converters do not look for a header.
    let bare = Converter::new(&schema, "A", &ArrowOptions::default()).unwrap();
    assert!(bare.convert([framed(1, None, 1).as_slice()]).is_err());
    assert_eq!(bare.convert([&[0x08, 3][..]]).unwrap().num_rows(), 1);
}
