//! What the Ballista tests share: telemetry records written to files, and result comparison.

use std::fs;
use std::path::Path;

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, RecordBatch};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::array_value_to_string;
use prost::Message;
use prost_reflect::{DynamicMessage, MapKey, Value};
use protojit::Schema;
use protojit_ballista::plain_type;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A file of `n` delimited telemetry `Batch` records (devices from a fleet of 60).
pub fn write_records(schema: &Schema, path: &Path, n: usize, seed: u64) {
    let batch = schema.pool().get_message_by_name("protojit.samples.Batch").expect("Batch");
    let sample = schema.pool().get_message_by_name("protojit.samples.Sample").expect("Sample");
    let mut rng = Rng(seed | 1);
    let sites = ["north", "south", "east", "west"];
    let mut out = Vec::new();
    for _ in 0..n {
        let mut m = DynamicMessage::new(batch.clone());
        m.set_field_by_name("device", Value::String(format!("sensor-{:02}", rng.below(60))));
        m.set_field_by_name("status", Value::EnumNumber(rng.below(3) as i32));
        let samples = (0..1 + rng.below(5))
            .map(|_| {
                let mut s = DynamicMessage::new(sample.clone());
                s.set_field_by_name("sensor_id", Value::U32(rng.below(64) as u32));
                s.set_field_by_name("timestamp_ms", Value::U64(1_700_000_000_000 + rng.below(1 << 30)));
                s.set_field_by_name("temperature_c", Value::F32(15.0 + 20.0 * rng.unit() as f32));
                s.set_field_by_name("rssi_dbm", Value::I32(-30 - rng.below(70) as i32));
                Value::Message(s)
            })
            .collect();
        m.set_field_by_name("samples", Value::List(samples));
        let labels = (0..rng.below(3))
            .map(|i| (MapKey::String(format!("k{i}")), Value::String(sites[rng.below(4) as usize].into())))
            .collect();
        m.set_field_by_name("labels", Value::Map(labels));
        let codes = (0..rng.below(4)).map(|_| Value::U32(rng.below(1000) as u32)).collect();
        m.set_field_by_name("error_codes", Value::List(codes));
        if rng.below(2) == 0 {
            m.set_field_by_name("battery_volts", Value::F32(3.0 + rng.unit() as f32));
        } else {
            m.set_field_by_name("mains", Value::Bool(true));
        }
        m.encode_length_delimited(&mut out).expect("a Vec grows");
    }
    fs::write(path, out).expect("write records");
}

/// Every column of `batches` as one array each.
fn columns(batches: &[RecordBatch]) -> (Vec<String>, Vec<ArrayRef>) {
    let schema = batches.first().expect("at least one batch").schema();
    let all = concat_batches(&schema, batches).expect("batches share a schema");
    // Types compare without dictionaries: a cluster's results arrive over Arrow Flight,
    // which hydrates them (see ProtobufClusterTable).
    let fields = schema.fields().iter().map(|f| format!("{}: {}", f.name(), plain_type(f.data_type()))).collect();
    (fields, all.columns().to_vec())
}

/// Asserts the cluster's result equals the local one: same columns (up to dictionary
/// encoding), integers and strings exactly, floats within 1e-9 relative.
pub fn assert_same(query: &str, cluster: &[RecordBatch], local: &[RecordBatch]) {
    let rows = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
    assert!(rows(local) > 0, "{query}: the local result is empty, so the comparison would prove nothing");
    assert_eq!(rows(cluster), rows(local), "{query}: row counts differ");
    let (cluster_fields, cluster_columns) = columns(cluster);
    let (local_fields, local_columns) = columns(local);
    assert_eq!(cluster_fields, local_fields, "{query}: schemas differ");
    for ((field, c), l) in local_fields.iter().zip(&cluster_columns).zip(&local_columns) {
        match c.data_type() {
            DataType::Float32 | DataType::Float64 => {
                let as_f64 = |a: &ArrayRef| cast(a, &DataType::Float64).expect("floats widen");
                let (c, l) = (as_f64(c), as_f64(l));
                let (c, l) = (
                    c.as_any().downcast_ref::<Float64Array>().expect("f64"),
                    l.as_any().downcast_ref::<Float64Array>().expect("f64"),
                );
                for row in 0..l.len() {
                    assert_eq!(c.is_null(row), l.is_null(row), "{query}: {field} row {row}: null in one result only");
                    if l.is_valid(row) {
                        let (x, y) = (c.value(row), l.value(row));
                        let scale = x.abs().max(y.abs()).max(f64::MIN_POSITIVE);
                        assert!((x - y).abs() / scale <= 1e-9, "{query}: {field} row {row}: cluster {x}, local {y}");
                    }
                }
            }
            _ => {
                for row in 0..l.len() {
                    let c = array_value_to_string(c, row).expect("printable");
                    let l = array_value_to_string(l, row).expect("printable");
                    assert_eq!(c, l, "{query}: {field} row {row}");
                }
            }
        }
    }
}
