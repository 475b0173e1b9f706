//! Record streams for the columnar benchmarks (records → Arrow, Parquet, SQL): many small
//! messages of one type, as Kafka topics and delimited log files hold them, and whole public
//! payloads repeated (`gm1`, `osm_block`, `mvt_tile`), as a user converting dumps meets them.

use prost::Message as _;
use prost_reflect::{DynamicMessage, ReflectMessage, Value};
use protojit::Schema;
use protojit_corpus::Rng;

/// A set of records of one message type.
pub struct RecordSet {
    /// Benchmark id.
    pub name: &'static str,
    /// The schema the records are of.
    pub schema: Schema,
    /// Full name of their message type.
    pub message: &'static str,
    /// The serialized records.
    pub records: Vec<Vec<u8>>,
}

impl RecordSet {
    /// Total bytes of the records.
    pub fn bytes(&self) -> usize {
        self.records.iter().map(Vec::len).sum()
    }

    /// The records as one varint-delimited stream.
    pub fn delimited(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes() + 5 * self.records.len());
        for r in &self.records {
            protojit_arena::wire::write_varint(&mut out, r.len() as u64);
            out.extend_from_slice(r);
        }
        out
    }
}

/// `google_message1` (proto3, from the shared corpus) repeated `n` times.
pub fn gm1(n: usize) -> Option<RecordSet> {
    let dir = protojit_corpus::shared_corpus_dir()?;
    let bytes = std::fs::read(dir.join("google_message1_proto3.payload0.bin")).ok()?;
    Some(RecordSet {
        name: "gm1",
        schema: crate::shared_schema("benchmark_message1_proto3.proto"),
        message: "benchmarks.proto3.GoogleMessage1",
        records: vec![bytes; n],
    })
}

/// The shared corpus's OSM ways block (a whole `PrimitiveBlock`, 173 KB) repeated `n`
/// times: big nested records with packed runs inside lists of messages, converted whole.
pub fn osm_block(n: usize) -> Option<RecordSet> {
    let dir = protojit_corpus::shared_corpus_dir()?;
    let bytes = std::fs::read(dir.join("liechtenstein.block40.primitiveblock-ways.bin")).ok()?;
    Some(RecordSet {
        name: "osm_block",
        schema: crate::shared_schema("osmformat.proto"),
        message: "OSMPBF.PrimitiveBlock",
        records: vec![bytes; n],
    })
}

/// The shared corpus's Chicago vector tile (a whole `Tile`) repeated `n` times.
pub fn mvt_tile(n: usize) -> Option<RecordSet> {
    let dir = protojit_corpus::shared_corpus_dir()?;
    let bytes = std::fs::read(dir.join("mvt-chicago-13-2101-3044.mvt")).ok()?;
    Some(RecordSet {
        name: "mvt_tile",
        schema: crate::shared_schema("vector_tile.proto"),
        message: "vector_tile.Tile",
        records: vec![bytes; n],
    })
}

/// The ways of the shared corpus's OSM ways block, one record per `Way`.
pub fn osm_ways() -> Option<RecordSet> {
    let dir = protojit_corpus::shared_corpus_dir()?;
    let bytes = std::fs::read(dir.join("liechtenstein.block40.primitiveblock-ways.bin")).ok()?;
    let schema = crate::shared_schema("osmformat.proto");
    let desc = schema.pool().get_message_by_name("OSMPBF.PrimitiveBlock")?;
    let block = DynamicMessage::decode(desc, bytes.as_slice()).ok()?;
    let mut records = Vec::new();
    for group in block.get_field_by_name("primitivegroup")?.as_list()? {
        for way in group.as_message()?.get_field_by_name("ways")?.as_list()? {
            records.push(way.as_message()?.encode_to_vec());
        }
    }
    Some(RecordSet { name: "osm_ways", schema, message: "OSMPBF.Way", records })
}

/// Every feature of the corpus's four vector tiles (Chicago, San Francisco, Astana and the
/// vector-tile-js fixture), each a `vector_tile.Tile.Feature` record: an id, packed tags and
/// geometry, a geometry type (a closed enum). A feature stream as a tile server's consumer
/// would meet it.
pub fn mvt_features() -> Option<RecordSet> {
    let dir = protojit_corpus::shared_corpus_dir()?;
    let schema = crate::shared_schema("vector_tile.proto");
    let desc = schema.pool().get_message_by_name("vector_tile.Tile")?;
    let mut records = Vec::new();
    for tile in [
        "mvt-chicago-13-2101-3044.mvt",
        "mvt-sanfrancisco-15-5238-12666.mvt",
        "mvt-osmqa-astana-12-2860-1368.mvt",
        "vector-tile-js-14-8801-5371.vector.pbf",
    ] {
        let bytes = std::fs::read(dir.join(tile)).ok()?;
        let tile = DynamicMessage::decode(desc.clone(), bytes.as_slice()).ok()?;
        for layer in tile.get_field_by_name("layers")?.as_list()? {
            for feature in layer.as_message()?.get_field_by_name("features")?.as_list()? {
                records.push(feature.as_message()?.encode_to_vec());
            }
        }
    }
    Some(RecordSet { name: "mvt_features", schema, message: "vector_tile.Tile.Feature", records })
}

/// The README's telemetry schema (`corpus/samples/telemetry.proto`).
pub fn telemetry_schema() -> Schema {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/samples");
    Schema::from_proto_files(&[dir.join("telemetry.proto")], &[&dir]).expect("telemetry.proto compiles")
}

/// `n` generated telemetry `Batch` records (seeded): a device name from a fleet of 500, a
/// status, 1-8 samples, 0-3 labels, 0-4 error codes, battery or mains power.
pub fn telemetry(n: usize) -> RecordSet {
    let schema = telemetry_schema();
    let desc = schema.pool().get_message_by_name("protojit.samples.Batch").expect("Batch");
    let sample = schema.pool().get_message_by_name("protojit.samples.Sample").expect("Sample");
    let mut rng = Rng::new(0x7e1e_3e72);
    let sites = ["north", "south", "east", "west", "lab"];
    let records = (0..n)
        .map(|_| {
            let mut m = DynamicMessage::new(desc.clone());
            m.set_field_by_name("device", Value::String(format!("sensor-{:04}", rng.below(500))));
            m.set_field_by_name("status", Value::EnumNumber(rng.below(3) as i32));
            let samples = (0..rng.range(1, 9))
                .map(|_| {
                    let mut s = DynamicMessage::new(sample.clone());
                    s.set_field_by_name("sensor_id", Value::U32(rng.below(64) as u32));
                    s.set_field_by_name("timestamp_ms", Value::U64(1_700_000_000_000 + rng.below(1 << 30)));
                    s.set_field_by_name("temperature_c", Value::F32(15.0 + 20.0 * rng.unit() as f32));
                    s.set_field_by_name("humidity", Value::F32(rng.unit() as f32));
                    s.set_field_by_name("rssi_dbm", Value::I32(-(rng.range(30, 100) as i32)));
                    Value::Message(s)
                })
                .collect();
            m.set_field_by_name("samples", Value::List(samples));
            let labels = (0..rng.below(4))
                .map(|i| (prost_reflect::MapKey::String(format!("k{i}")), Value::String(rng.pick(&sites).to_owned())))
                .collect();
            m.set_field_by_name("labels", Value::Map(labels));
            let codes = (0..rng.below(5)).map(|_| Value::U32(rng.below(1000) as u32)).collect();
            m.set_field_by_name("error_codes", Value::List(codes));
            if rng.chance(0.5) {
                m.set_field_by_name("battery_volts", Value::F32(3.0 + rng.unit() as f32));
            } else {
                m.set_field_by_name("mains", Value::Bool(true));
            }
            debug_assert_eq!(m.descriptor().full_name(), "protojit.samples.Batch");
            m.encode_to_vec()
        })
        .collect();
    RecordSet { name: "telemetry", schema, message: "protojit.samples.Batch", records }
}
