//! Differential test: every corpus payload decodes with every engine to the same tree as
//! prost-reflect's `DynamicMessage::decode`.

mod common;

use prost_reflect::DynamicMessage;
use protojit::{Arena, EngineOptions};

#[test]
fn corpus_payloads_match_prost_reflect() {
    let Some(dir) = common::corpus_dir("corpus_payloads_match_prost_reflect") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let desc = schema.pool().get_message_by_name(type_name).unwrap();
        let expected = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
        for engine in common::ENGINES {
            let decoder = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(engine)).unwrap();
            if engine == protojit::EngineKind::Jit && cfg!(target_arch = "x86_64") {
                let stats = decoder.stats();
                assert_eq!(stats.interpreted(), 0, "{file}: {:?}", stats.types);
                assert!(stats.code_bytes() > 0);
            }
            let arena = Arena::new();
            let msg = decoder.decode(&bytes, &arena).unwrap_or_else(|e| panic!("{file} ({engine:?}): {e}"));
            assert_eq!(msg.to_dynamic_lossy_count(), 0, "{file}");
            if let Some(path) = common::dyn_diff(&msg.to_dynamic(), &expected) {
                panic!("{file} ({engine:?}): differs from prost-reflect at {path}");
            }
        }
    }
}

/// Every reader of the read API (`fields()`, the visitor, typed handles, typed slices)
/// reports the same values for every corpus payload, and both engines' trees read the same.
#[test]
fn corpus_readers_agree_across_engines() {
    let Some(dir) = common::corpus_dir("corpus_readers_agree_across_engines") else { return };
    for (proto, type_name, file) in common::PAYLOADS {
        let schema = common::corpus_schema(&dir, proto);
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let mut dumps = Vec::new();
        for engine in common::ENGINES {
            let decoder = schema.decoder_with_options(type_name, &EngineOptions::default().with_kind(engine)).unwrap();
            let arena = Arena::new();
            let msg = decoder.decode(&bytes, &arena).unwrap();
            dumps.push(common::read_api::check_readers_agree(&msg, &format!("{file} ({engine:?})")));
        }
        assert!(dumps[0] == dumps[1], "{file}: the engines' trees read differently");
        assert!(!dumps[0].is_empty(), "{file}");
    }
}
