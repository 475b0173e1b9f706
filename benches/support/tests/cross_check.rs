//! The benchmarks' cross-check, run as a test: on every payload of the shared and generated
//! corpus, each decoder arm's checksum equals the interpreter's (and `scan` walks as many
//! nested messages as the interpreter's tree holds), so `cargo test` catches an arm or a
//! checksum walk that drifts before a benchmark run would.

use prost_reflect::DynamicMessage;
use protojit::{Arena, EngineKind, EngineOptions};
use protojit_bench_support::{
    all_cases, prost_arm, reflect_checksum, rp_checksum, tree_checksum, tree_message_count, RustProtobuf, Scanner,
};

#[test]
fn every_arm_agrees_with_the_interpreter() {
    let cases = all_cases();
    assert!(cases.len() >= 22, "the generated corpus alone has 22 payloads");
    for c in &cases {
        let interp = c
            .schema
            .decoder_with_options(&c.message, &EngineOptions::default().with_kind(EngineKind::Interpreter))
            .unwrap();
        let jit =
            c.schema.decoder_with_options(&c.message, &EngineOptions::default().with_kind(EngineKind::Jit)).unwrap();
        let arena = Arena::new();
        let tree = interp.decode(&c.bytes, &arena).unwrap();
        let want = tree_checksum(&tree);
        assert_ne!(want, 0, "{}", c.name);
        assert_eq!(tree_checksum(&jit.decode(&c.bytes, &arena).unwrap()), want, "{}: jit", c.name);

        let mut arm = prost_arm(&c.message).unwrap_or_else(|| panic!("{}: no prost code for {}", c.name, c.message));
        assert_eq!(arm.decode_checksum(&c.bytes).unwrap(), want, "{}: prost", c.name);
        assert_eq!(arm.reuse_checksum(&c.bytes), want, "{}: prost_reuse", c.name);

        let desc = c.schema.pool().get_message_by_name(&c.message).unwrap();
        let dm = DynamicMessage::decode(desc.clone(), c.bytes.as_slice()).unwrap();
        assert_eq!(reflect_checksum(&dm), want, "{}: prost_reflect", c.name);

        match RustProtobuf::new(c.schema.pool(), &c.message).and_then(|rp| rp.decode(&c.bytes)) {
            Ok(m) => assert_eq!(rp_checksum(&*m), want, "{}: protobuf", c.name),
            // rust-protobuf 3 does not implement groups (GoogleMessage2).
            Err(e) => assert!(e.contains("Group"), "{}: rust-protobuf: {e}", c.name),
        }

        let n = Scanner::new(&desc).scan(&c.bytes).unwrap_or_else(|_| panic!("{}: scan", c.name));
        assert_eq!(n, tree_message_count(&tree), "{}: scan", c.name);
    }
}
