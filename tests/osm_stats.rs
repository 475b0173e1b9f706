//! The OSM PBF example (`examples/osm_stats.rs`) on the shared corpus's Liechtenstein extract
//! and OSM-binary sample: counts as the corpus README states them.

#[allow(dead_code)]
#[path = "../examples/osm_stats.rs"]
mod osm_stats;

use osm_stats::{stats, OsmDecoders, Timing};

fn corpus_file(name: &str) -> Option<Vec<u8>> {
    let path = osm_stats::shared_corpus().join(name);
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("skipped: {} not readable ({e})", path.display());
            None
        }
    }
}

#[test]
fn liechtenstein_counts() {
    let Some(bytes) = corpus_file("liechtenstein.osm.pbf") else { return };
    let dec = OsmDecoders::load(&osm_stats::shared_corpus()).unwrap();
    let c = stats(&bytes, &dec, &mut Timing::default()).unwrap();
    assert_eq!((c.header_blobs, c.data_blobs), (1, 45));
    assert_eq!(c.dense_nodes, 306_700);
    assert_eq!(c.nodes, 0);
    assert_eq!(c.ways, 32_585);
    assert_eq!(c.relations, 890);
    assert!(c.tags > 0 && c.way_refs > 0 && c.relation_members > 0, "{c:?}");
}

#[test]
fn osm_binary_sample_counts() {
    let Some(bytes) = corpus_file("osm-binary-sample.osm.pbf") else { return };
    let dec = OsmDecoders::load(&osm_stats::shared_corpus()).unwrap();
    let c = stats(&bytes, &dec, &mut Timing::default()).unwrap();
    assert_eq!((c.dense_nodes + c.nodes, c.ways, c.relations), (290, 44, 5), "{c:?}");
}
