//! Field access on a decoded google_message2: compiled `FieldPath` evaluation next to prost-reflect field access for the same values.
//!
//! Both sides decode the payload once, before timing; each arm then reads the same values
//! (checked equal before timing):
//! - `field1`: one top-level string;
//! - `group1_field11`: a float from every element of the repeated group (sum);
//! - `group1_field31_field1`: a float one message further down in every group element.
//!
//! Arms: `protojit_path` (a `FieldPath` parsed once, `for_each`), `protojit_path_parse`
//! (`MessageRef::path`: parse + evaluate each time), `prost_reflect_by_name`
//! (`get_field_by_name` at every level, the usual dynamic access) and
//! `prost_reflect_by_descriptor` (field descriptors resolved once).
//!
//! `cargo bench --bench paths`. Needs the shared corpus (`../shared/corpus`).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use prost_reflect::{DynamicMessage, FieldDescriptor, Value as PValue};
use protojit::{Arena, FieldPath, MessageRef, Schema, Value};

/// The values an arm reads, summed as f64 (strings count their length).
fn add(sum: &mut f64, v: &Value<'_>) {
    *sum += match v {
        Value::F32(x) => f64::from(*x),
        Value::String(s) => s.len() as f64,
        other => panic!("unexpected value {other:?}"),
    }
}

fn add_p(sum: &mut f64, v: &PValue) {
    *sum += match v {
        PValue::F32(x) => f64::from(*x),
        PValue::String(s) => s.len() as f64,
        other => panic!("unexpected value {other:?}"),
    }
}

struct ReflectAccess {
    /// Field names from the root to the value; `true` where the field is repeated.
    names: &'static [(&'static str, bool)],
    descriptors: Vec<(FieldDescriptor, bool)>,
}

impl ReflectAccess {
    fn by_name(&self, msg: &DynamicMessage, level: usize, sum: &mut f64) {
        let (name, repeated) = self.names[level];
        let v = msg.get_field_by_name(name).expect("field exists");
        self.descend(&v, repeated, level, sum, &mut |m, l, s| self.by_name(m, l, s));
    }

    fn by_descriptor(&self, msg: &DynamicMessage, level: usize, sum: &mut f64) {
        let (field, repeated) = &self.descriptors[level];
        let v = msg.get_field(field);
        self.descend(&v, *repeated, level, sum, &mut |m, l, s| self.by_descriptor(m, l, s));
    }

    fn descend(
        &self,
        v: &PValue,
        repeated: bool,
        level: usize,
        sum: &mut f64,
        next: &mut dyn FnMut(&DynamicMessage, usize, &mut f64),
    ) {
        let last = level + 1 == self.names.len();
        let mut one = |v: &PValue, sum: &mut f64| {
            if last {
                add_p(sum, v)
            } else {
                next(v.as_message().expect("message"), level + 1, sum)
            }
        };
        if repeated {
            for e in v.as_list().expect("list") {
                one(e, sum);
            }
        } else {
            one(v, sum);
        }
    }
}

fn bench(c: &mut Criterion) {
    let Some(dir) = protojit_corpus::require_shared_corpus("the paths bench") else { return };
    let schema = Schema::from_proto_files(&[dir.join("benchmark_message2.proto")], &[&dir]).expect("schema");
    let bytes = std::fs::read(dir.join("google_message2.payload0.bin")).expect("payload");
    let type_name = "benchmarks.proto2.GoogleMessage2";
    let desc = schema.pool().get_message_by_name(type_name).expect("type");
    let decoder = schema.decoder(type_name).expect("decoder");
    let arena = Arena::new();
    let msg: MessageRef<'_> = decoder.decode(&bytes, &arena).expect("decodes");
    let dm = DynamicMessage::decode(desc.clone(), bytes.as_slice()).expect("prost-reflect decodes");

    // (name, path, its steps as (field, repeated)).
    type Case = (&'static str, &'static str, &'static [(&'static str, bool)]);
    let cases: [Case; 3] = [
        ("field1", "field1", &[("field1", false)]),
        ("group1_field11", "group1[*].field11", &[("group1", true), ("field11", false)]),
        (
            "group1_field31_field1",
            "group1[*].field31.field1",
            &[("group1", true), ("field31", false), ("field1", false)],
        ),
    ];

    let mut group = c.benchmark_group("paths");
    group.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(1500)).sample_size(30);
    for (id, text, names) in cases {
        let path = FieldPath::parse(&desc, text).expect("path parses");
        let mut descriptors = Vec::new();
        let mut m = desc.clone();
        for &(name, repeated) in names {
            let f = m.get_field_by_name(name).expect("field");
            if let prost_reflect::Kind::Message(child) = f.kind() {
                m = child;
            }
            descriptors.push((f, repeated));
        }
        let access = ReflectAccess { names, descriptors };

        // The arms read the same values.
        let mut want = 0.0;
        path.for_each(&msg, |v| add(&mut want, &v));
        let mut got = 0.0;
        access.by_name(&dm, 0, &mut got);
        assert_eq!(got, want, "{id}: prost-reflect by name");
        got = 0.0;
        access.by_descriptor(&dm, 0, &mut got);
        assert_eq!(got, want, "{id}: prost-reflect by descriptor");
        got = 0.0;
        for v in msg.path(text).unwrap() {
            add(&mut got, &v);
        }
        assert_eq!(got, want, "{id}: MessageRef::path");

        group.bench_function(BenchmarkId::new("protojit_path", id), |b| {
            b.iter(|| {
                let mut sum = 0.0;
                path.for_each(&msg, |v| add(&mut sum, &v));
                sum
            })
        });
        group.bench_function(BenchmarkId::new("protojit_path_parse", id), |b| {
            b.iter(|| {
                let mut sum = 0.0;
                for v in msg.path(text).unwrap() {
                    add(&mut sum, &v);
                }
                sum
            })
        });
        group.bench_function(BenchmarkId::new("prost_reflect_by_name", id), |b| {
            b.iter(|| {
                let mut sum = 0.0;
                access.by_name(&dm, 0, &mut sum);
                sum
            })
        });
        group.bench_function(BenchmarkId::new("prost_reflect_by_descriptor", id), |b| {
            b.iter(|| {
                let mut sum = 0.0;
                access.by_descriptor(&dm, 0, &mut sum);
                sum
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
