//! protojit's own benchmark corpus: deterministic payload generators over the schemas in
//! `corpus/schemas/` (written for this project).
//!
//! Families:
//! - *dataset*: ~2000 mixed service records (strings, nested and repeated messages, maps,
//!   packed scalar arrays), several hundred KB;
//! - *embedded*: small device messages (7-field telemetry, a batch of 20 samples, a
//!   configuration with a oneof per peripheral and an optional scalar, a command/ack pair
//!   with oneofs, a 256-byte firmware chunk);
//! - *sweeps*: packed arrays of 1-byte, 10-byte and mixed-width varints, zigzag and enum
//!   values, "many messages with tiny arrays" and "few messages with big arrays", each at
//!   1 KiB and 1 MiB;
//! - *growth*: schemas of 1, 5, 20 and 200 message types of one shape (plus a root that
//!   holds one of each) and a 10-deep nesting chain (which also has a payload).
//!
//! Everything is seeded from fixed constants through an in-crate splitmix64, so every run
//! produces the same bytes. Payloads are encoded with prost-reflect's `DynamicMessage`
//! (no code generation); map entries are appended by hand, in wire order, because
//! `DynamicMessage` keeps maps in a randomly seeded `HashMap`.

use std::path::PathBuf;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, ReflectMessage, Value};

mod payload;
mod shared;
mod source;
mod sweeps;

use payload::*;
pub use payload::{full_varint_value, varint_of_len, Payload, Rng};
pub use source::{pool_from_source, pool_from_sources};
pub use sweeps::{sweeps, SWEEP_SIZES};

pub use shared::in_ci;

/// The workspace root (this crate is `<root>/corpus`).
fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the shared public corpus is expected (`../shared/corpus` beside the workspace
/// root), whether it is there or not: for messages, and for tools given a default path.
pub fn shared_corpus_path() -> PathBuf {
    shared::shared_corpus_path_in(&workspace_root())
}

/// The shared public corpus directory (canonicalized), if it is there (it holds its
/// `README.md`). Tests and benchmarks that need it call [`require_shared_corpus`].
pub fn shared_corpus_dir() -> Option<PathBuf> {
    shared::shared_corpus_dir_in(&workspace_root())
}

/// The shared public corpus for `user` (the test or benchmark that needs it), if it is
/// there. When it is not: under `CI=true` (see [`in_ci`]) this panics, saying what to do,
/// because a CI run must not pass by skipping; otherwise it prints `SKIPPED <user>: ...`
/// and returns `None`, and the caller returns early.
///
/// ```no_run
/// let Some(dir) = protojit_corpus::require_shared_corpus("my_test") else { return };
/// let bytes = std::fs::read(dir.join("google_message2.payload0.bin")).unwrap();
/// ```
pub fn require_shared_corpus(user: &str) -> Option<PathBuf> {
    shared::require_shared_corpus_in(&workspace_root(), user)
}

/// The directory holding the corpus schemas (`.proto` files).
pub fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

/// Sizes of the growth schemas: number of message types of the common shape.
pub const GROWTH_SIZES: [usize; 4] = [1, 5, 20, 200];

/// Depth of the nesting chain schema.
pub const CHAIN_DEPTH: usize = 10;

/// File names (in [`schemas_dir`]) of the schemas with payloads.
pub const PAYLOAD_SCHEMAS: [&str; 4] = ["dataset.proto", "embedded.proto", "sweeps.proto", "chain10.proto"];

/// File name of growth schema `n`.
pub fn growth_file(n: usize) -> String {
    format!("growth_{n}.proto")
}

/// Every schema file of the corpus, payload schemas first.
pub fn schema_files() -> Vec<String> {
    let mut v: Vec<String> = PAYLOAD_SCHEMAS.iter().map(|s| s.to_string()).collect();
    v.extend(GROWTH_SIZES.iter().map(|&n| growth_file(n)));
    v
}

/// Compiles every corpus schema into one pool.
pub fn pool() -> DescriptorPool {
    let files = schema_files();
    let mut c = protox::Compiler::new([schemas_dir()]).expect("corpus schema dir");
    c.include_imports(true);
    c.open_files(&files).unwrap_or_else(|e| panic!("corpus schemas do not compile: {e}"));
    c.descriptor_pool()
}

/// Every payload of the corpus, in a fixed order (dataset, embedded, sweeps, chain).
pub fn payloads() -> Vec<Payload> {
    let pool = pool();
    let mut out = vec![dataset(&pool)];
    out.extend(embedded(&pool));
    out.extend(sweeps(&pool));
    out.push(chain(&pool));
    out
}

// ---------------------------------------------------------------------------------------
// Dataset.

const FIRST: &[&str] = &[
    "Ada",
    "Grace",
    "Alan",
    "Edsger",
    "Barbara",
    "Donald",
    "Margaret",
    "Ken",
    "Dennis",
    "Frances",
    "John",
    "Radia",
    "Leslie",
    "Niklaus",
    "Tony",
    "Shafi",
    "Whitfield",
    "Sophie",
    "Guido",
    "Bjarne",
    "Anders",
    "Yukihiro",
];
const LAST: &[&str] = &[
    "Lovelace",
    "Hopper",
    "Turing",
    "Dijkstra",
    "Liskov",
    "Knuth",
    "Hamilton",
    "Thompson",
    "Ritchie",
    "Allen",
    "McCarthy",
    "Perlman",
    "Lamport",
    "Wirth",
    "Hoare",
    "Goldwasser",
    "Diffie",
    "Wilson",
    "van Rossum",
    "Stroustrup",
    "Hejlsberg",
    "Matsumoto",
];
const STREETS: &[&str] = &["Main", "Oak", "Pine", "Maple", "Cedar", "Elm", "Lake", "Hill", "Station", "Church", "Mill"];
const CITIES: &[&str] = &[
    "Vaduz",
    "Zürich",
    "München",
    "Wien",
    "Amsterdam",
    "København",
    "Lisboa",
    "Kraków",
    "Tallinn",
    "Reykjavík",
    "Montréal",
    "São Paulo",
    "Osaka",
    "Auckland",
];
const COUNTRIES: &[&str] = &["LI", "CH", "DE", "AT", "NL", "DK", "PT", "PL", "EE", "IS", "CA", "BR", "JP", "NZ"];
const WORDS: &[&str] = &[
    "red",
    "blue",
    "green",
    "fragile",
    "express",
    "gift",
    "bulk",
    "refurbished",
    "organic",
    "limited",
    "sale",
    "clearance",
    "eco",
    "premium",
    "sample",
];
const ATTR_KEYS: &[&str] =
    &["plan", "locale", "referrer", "segment", "theme", "timezone", "newsletter", "device", "campaign"];

/// The dataset payload: a `Dataset` of 2000 records.
pub fn dataset(pool: &DescriptorPool) -> Payload {
    let mut rng = Rng::new(0x0DA7_A5E7);
    let ds = desc(pool, "protojit.bench.dataset.Dataset");
    let mut out =
        msg(&ds, vec![("source", s("crm-export/eu-central")), ("generated_at", Value::U64(1_785_000_000_000))])
            .encode_to_vec();
    for i in 0..2000u64 {
        let rec = record(pool, &mut rng, i);
        put_len_delimited(&mut out, 3, &rec);
    }
    Payload {
        family: "dataset",
        name: "dataset".into(),
        proto: "dataset.proto",
        message: ds.full_name().into(),
        bytes: out,
    }
}

fn address(pool: &DescriptorPool, rng: &mut Rng) -> DynamicMessage {
    let d = desc(pool, "protojit.bench.dataset.Address");
    let city = rng.below(CITIES.len() as u64) as usize;
    msg(
        &d,
        vec![
            ("street", s(format!("{} {} Street", rng.range(1, 400), rng.pick(STREETS)))),
            ("city", s(CITIES[city])),
            ("country", s(COUNTRIES[city])),
            ("postal_code", Value::U32(rng.range(1000, 99999) as u32)),
            ("lat", Value::F64(rng.unit() * 180.0 - 90.0)),
            ("lon", Value::F64(rng.unit() * 360.0 - 180.0)),
        ],
    )
}

fn record(pool: &DescriptorPool, rng: &mut Rng, i: u64) -> Vec<u8> {
    let rd = desc(pool, "protojit.bench.dataset.Record");
    let od = desc(pool, "protojit.bench.dataset.Order");
    let ld = desc(pool, "protojit.bench.dataset.LineItem");
    let first = rng.pick(FIRST);
    let last = rng.pick(LAST);
    let mut head = vec![
        ("id", Value::U64(1_000_000 + i * 7 + rng.below(7))),
        ("name", s(format!("{first} {last}"))),
        (
            "email",
            s(format!(
                "{}.{}{}@example.org",
                first.to_lowercase(),
                last.to_lowercase().replace(' ', ""),
                rng.below(100)
            )),
        ),
        ("age", Value::I32(rng.range(18, 90) as i32)),
        ("verified", Value::Bool(rng.chance(0.7))),
        ("status", Value::EnumNumber(if rng.chance(0.8) { 1 } else { rng.range(0, 3) as i32 })),
        ("address", Value::Message(address(pool, rng))),
    ];
    let n_orders = rng.below(4);
    let mut orders = Vec::new();
    for _ in 0..n_orders {
        let mut items = Vec::new();
        for _ in 0..rng.range(1, 4) {
            let tags = (0..rng.below(3)).map(|_| s(rng.pick(WORDS))).collect();
            items.push(Value::Message(msg(
                &ld,
                vec![
                    ("sku", s(format!("SKU-{:06}", rng.below(1_000_000)))),
                    ("quantity", Value::U32(rng.range(1, 12) as u32)),
                    ("price_cents", Value::I64(rng.range(99, 250_000) as i64)),
                    ("tags", list(tags)),
                ],
            )));
        }
        let mut fields = vec![
            ("order_id", Value::U64(rng.next_u64() >> 20)),
            ("created_at", Value::I64(1_700_000_000 + rng.below(90_000_000) as i64)),
            ("items", list(items)),
            ("status", Value::EnumNumber(rng.range(0, 3) as i32)),
        ];
        if rng.chance(0.4) {
            fields.push(("shipping", Value::Message(address(pool, rng))));
        }
        if rng.chance(0.2) {
            fields.push(("coupon", s(format!("SAVE{}", rng.range(5, 50)))));
        }
        orders.push(Value::Message(msg(&od, fields)));
    }
    head.push(("orders", list(orders)));
    let mut out = msg(&rd, head).encode_to_vec();

    let attrs: Vec<(Value, Value)> = {
        let n = rng.below(4) as usize;
        let start = rng.below(ATTR_KEYS.len() as u64) as usize;
        (0..n).map(|k| (s(ATTR_KEYS[(start + k) % ATTR_KEYS.len()]), s(rng.pick(WORDS)))).collect()
    };
    put_map(&mut out, &rd, "attributes", attrs);
    let counters: Vec<(Value, Value)> = {
        let n = rng.below(5);
        (0..n)
            .map(|k| (Value::U32((k * 3 + rng.below(3)) as u32), Value::I64(rng.below(1 << 20) as i64 - 1000)))
            .collect()
    };
    put_map(&mut out, &rd, "counters", counters);

    let mut tail = vec![
        ("scores", list((0..rng.below(8)).map(|_| Value::F32(rng.unit() as f32 * 5.0)).collect())),
        ("deltas", list((0..rng.below(10)).map(|_| Value::I64(rng.below(20_000) as i64 - 10_000)).collect())),
        ("flags", list((0..rng.below(4)).map(|_| Value::U32(rng.next_u64() as u32)).collect())),
        ("balance", Value::F64((rng.unit() * 10_000.0 * 100.0).round() / 100.0)),
    ];
    if rng.chance(0.5) {
        let n = if rng.chance(0.5) { 16 } else { 32 };
        tail.push(("avatar_hash", Value::Bytes((0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>().into())));
    }
    match rng.below(3) {
        0 => {
            tail.push(("phone", s(format!("+423 {:03} {:02} {:02}", rng.below(1000), rng.below(100), rng.below(100)))))
        }
        1 => tail.push(("pager", s(format!("{}", rng.below(1_000_000))))),
        _ => {}
    }
    out.extend(msg(&rd, tail).encode_to_vec());
    out
}

// ---------------------------------------------------------------------------------------
// Embedded.

fn telemetry(pool: &DescriptorPool, rng: &mut Rng, device: u32, t: u64) -> DynamicMessage {
    let d = desc(pool, "protojit.bench.embedded.Telemetry");
    msg(
        &d,
        vec![
            ("device_id", Value::U32(device)),
            ("timestamp_ms", Value::U64(t)),
            ("temperature_c", Value::F32(18.0 + rng.unit() as f32 * 8.0)),
            ("humidity_pct", Value::F32(30.0 + rng.unit() as f32 * 40.0)),
            ("battery_mv", Value::U32(rng.range(3300, 4200) as u32)),
            ("state", Value::EnumNumber(if rng.chance(0.9) { 0 } else { rng.range(1, 2) as i32 })),
            ("rssi_dbm", Value::I32(-(rng.range(40, 110) as i32))),
        ],
    )
}

/// The embedded payloads: telemetry, batch, config, command, ack, firmware chunk.
pub fn embedded(pool: &DescriptorPool) -> Vec<Payload> {
    let mut rng = Rng::new(0xE3BE_DDED);
    let p = |name: &str, m: DynamicMessage| Payload {
        family: "embedded",
        name: name.into(),
        proto: "embedded.proto",
        message: m.descriptor().full_name().into(),
        bytes: m.encode_to_vec(),
    };
    let t0 = 1_785_000_000_000u64;
    let mut out = vec![p("emb_telemetry", telemetry(pool, &mut rng, 4711, t0))];

    let samples = (0..20).map(|k| Value::Message(telemetry(pool, &mut rng, 4711, t0 + k * 1000))).collect();
    let bd = desc(pool, "protojit.bench.embedded.TelemetryBatch");
    out.push(p(
        "emb_batch",
        msg(&bd, vec![("device_id", Value::U32(4711)), ("sequence", Value::U32(90_210)), ("samples", list(samples))]),
    ));

    let e = |n: &str| desc(pool, &format!("protojit.bench.embedded.{n}"));
    let periph = |name: &str, field: &str, cfg: DynamicMessage| {
        Value::Message(msg(&e("Peripheral"), vec![("name", s(name)), (field, Value::Message(cfg))]))
    };
    let peripherals = vec![
        periph(
            "uart0",
            "uart",
            msg(
                &e("UartConfig"),
                vec![("baud", Value::U32(115_200)), ("data_bits", Value::U32(8)), ("parity", Value::Bool(false))],
            ),
        ),
        periph("spi1", "spi", msg(&e("SpiConfig"), vec![("clock_hz", Value::U32(8_000_000)), ("mode", Value::U32(3))])),
        periph(
            "i2c0",
            "i2c",
            msg(&e("I2cConfig"), vec![("address", Value::U32(0x48)), ("fast_mode", Value::Bool(true))]),
        ),
        periph(
            "gpio",
            "gpio",
            msg(&e("GpioConfig"), vec![("pin_mask", Value::U32(0x0000_F00F)), ("pull_up", Value::Bool(true))]),
        ),
    ];
    out.push(p(
        "emb_config",
        msg(
            &e("DeviceConfig"),
            vec![
                ("device_id", Value::U32(4711)),
                ("firmware_version", s("2.4.1+build.318")),
                ("sample_interval_ms", Value::U32(5000)),
                ("peripherals", list(peripherals)),
            ],
        ),
    ));
    out.push(p(
        "emb_command",
        msg(
            &e("Command"),
            vec![
                ("command_id", Value::U32(77)),
                ("device_id", Value::U32(4711)),
                ("set_interval", Value::Message(msg(&e("SetInterval"), vec![("interval_ms", Value::U32(1000))]))),
            ],
        ),
    ));
    out.push(p(
        "emb_ack",
        msg(
            &e("Ack"),
            vec![
                ("command_id", Value::U32(77)),
                ("error_code", Value::U32(3)),
                ("completed_at_ms", Value::U64(t0 + 20_412)),
            ],
        ),
    ));
    let data: Vec<u8> = (0..256).map(|_| rng.next_u64() as u8).collect();
    out.push(p(
        "emb_firmware",
        msg(
            &e("FirmwareChunk"),
            vec![
                ("image_id", Value::U32(12)),
                ("offset", Value::U32(256 * 41)),
                ("data", Value::Bytes(data.into())),
                ("crc32", Value::U32(rng.next_u64() as u32)),
                ("last", Value::Bool(false)),
            ],
        ),
    ));
    out
}

// ---------------------------------------------------------------------------------------
// Growth and the nesting chain.

/// The growth schema with `n` message types `T0..T{n-1}` of one shape and a `Root` with
/// one field of each.
pub fn growth_proto(n: usize) -> String {
    let mut s = format!(
        "// Growth schema for protojit's compile-cost benchmark: {n} message type(s) of one shape\n\
         // and a Root holding one of each. Generated by `gen-corpus --write-schemas`; do not edit.\n\
         syntax = \"proto3\";\n\npackage protojit.bench.growth{n};\n\n"
    );
    for i in 0..n {
        s.push_str(&format!(
            "message T{i} {{\n  uint32 a = 1;\n  uint64 b = 2;\n  sint32 c = 3;\n  string d = 4;\n  bytes e = 5;\n  \
             double f = 6;\n  bool g = 7;\n  repeated uint32 h = 8;\n  fixed64 i = 9;\n  float j = 10;\n}}\n\n"
        ));
    }
    s.push_str("message Root {\n");
    for i in 0..n {
        s.push_str(&format!("  T{i} t{i} = {};\n", i + 1));
    }
    s.push_str("}\n");
    s
}

/// The nesting chain schema: `L0` holds `L1`s, ... down to `L{depth-1}`.
pub fn chain_proto(depth: usize) -> String {
    let mut s = format!(
        "// A {depth}-deep nesting chain for protojit's benchmarks (L0 holds L1s, and so on).\n\
         // Generated by `gen-corpus --write-schemas`; do not edit.\n\
         syntax = \"proto3\";\n\npackage protojit.bench.chain;\n\n"
    );
    for i in 0..depth {
        s.push_str(&format!("message L{i} {{\n  uint32 v = 1;\n  string label = 2;\n"));
        if i + 1 < depth {
            s.push_str(&format!("  repeated L{} children = 3;\n", i + 1));
        }
        s.push_str("}\n\n");
    }
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}

/// The chain payload: a tree of fan-out 2 down all [`CHAIN_DEPTH`] levels (1023 messages).
pub fn chain(pool: &DescriptorPool) -> Payload {
    fn level(pool: &DescriptorPool, rng: &mut Rng, i: usize) -> DynamicMessage {
        let d = desc(pool, &format!("protojit.bench.chain.L{i}"));
        let mut fields =
            vec![("v", Value::U32(rng.below(100_000) as u32)), ("label", s(format!("node-{i}-{}", rng.below(1000))))];
        if i + 1 < CHAIN_DEPTH {
            fields.push(("children", list((0..2).map(|_| Value::Message(level(pool, rng, i + 1))).collect())));
        }
        msg(&d, fields)
    }
    let mut rng = Rng::new(0xC4A1);
    let m = level(pool, &mut rng, 0);
    Payload {
        family: "growth",
        name: "chain10".into(),
        proto: "chain10.proto",
        message: m.descriptor().full_name().into(),
        bytes: m.encode_to_vec(),
    }
}

/// Generated schema texts: (file name, content), for `gen-corpus --write-schemas`.
pub fn generated_schemas() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = GROWTH_SIZES.iter().map(|&n| (growth_file(n), growth_proto(n))).collect();
    v.push(("chain10.proto".into(), chain_proto(CHAIN_DEPTH)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_schemas_are_current() {
        for (name, text) in generated_schemas() {
            let on_disk = std::fs::read_to_string(schemas_dir().join(&name)).unwrap();
            assert_eq!(
                on_disk, text,
                "{name} is stale: run `cargo run -p protojit-corpus --bin gen-corpus -- --write-schemas`"
            );
        }
    }

    #[test]
    fn deterministic_and_sized() {
        let a = payloads();
        let b = payloads();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.bytes, y.bytes, "{} is not deterministic", x.name);
        }
        let pool = pool();
        for p in &a {
            let d = pool.get_message_by_name(&p.message).unwrap();
            let m = DynamicMessage::decode(d, p.bytes.as_slice()).unwrap();
            assert!(m.unknown_fields().next().is_none(), "{}", p.name);
        }
        let ds = &a[0];
        assert!(ds.bytes.len() > 200_000 && ds.bytes.len() < 1_000_000, "dataset is {} bytes", ds.bytes.len());
        for p in a.iter().filter(|p| p.family == "sweeps") {
            let want = if p.name.ends_with("_1k") { 1 << 10 } else { 1 << 20 };
            let got = p.bytes.len();
            assert!(got >= want * 9 / 10 && got <= want * 11 / 10, "{} is {got} bytes, want about {want}", p.name);
        }
        let fw = a.iter().find(|p| p.name == "emb_firmware").unwrap();
        assert!(fw.bytes.len() > 256 && fw.bytes.len() < 300);
    }
}
