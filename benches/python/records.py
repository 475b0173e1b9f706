"""The record sets of the Python benchmark (benches/python/bench.py), made as the Rust benches
make them (benches/support/src/records.rs), plus the public corpus payloads
(tests/common/payloads.rs) and the google.protobuf message classes of a protojit schema.

Everything here is deterministic: the same bytes on every run (telemetry: the same splitmix64
draws as records.rs; see `telemetry`).
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SAMPLES = REPO / "corpus" / "samples"


def default_corpus_dir() -> Path:
    """`<repo>/../shared/corpus`, where the Rust tests and benches look for it
    (corpus/src/shared.rs); `PROTOJIT_SHARED_CORPUS` overrides it."""
    env = os.environ.get("PROTOJIT_SHARED_CORPUS")
    return Path(env) if env else (REPO / ".." / "shared" / "corpus").resolve()


# The shared corpus payloads, read from the one list of them (tests/common/payloads.rs):
# schema file, message type, payload file. The "13 public" of BENCHMARKS.md are these
# without the three `dataset.*` wrappers.
PAYLOADS: List[Tuple[str, str, str]] = re.findall(
    r'\("([^"]+)", "([^"]+)", "([^"]+)"\)', (REPO / "tests" / "common" / "payloads.rs").read_text()
)

# Short names, as the Rust benches print them (benches/support/src/lib.rs, benches/results/rounds.txt).
PAYLOAD_NAMES: Dict[str, str] = {
    "google_message1_proto2.payload0.bin": "gm1_proto2",
    "google_message1_proto3.payload0.bin": "gm1_proto3",
    "google_message2.payload0.bin": "gm2",
    "dataset.google_message1_proto2.pb": "dataset_gm1_proto2",
    "dataset.google_message1_proto3.pb": "dataset_gm1_proto3",
    "dataset.google_message2.pb": "dataset_gm2",
    "liechtenstein.block0.headerblock.bin": "osm_header",
    "liechtenstein.block1.primitiveblock-dense.bin": "osm_dense",
    "liechtenstein.block40.primitiveblock-ways.bin": "osm_ways",
    "liechtenstein.block45.primitiveblock-relations.bin": "osm_relations",
    "mvt-chicago-13-2101-3044.mvt": "mvt_chicago",
    "mvt-osmqa-astana-12-2860-1368.mvt": "mvt_astana",
    "mvt-sanfrancisco-15-5238-12666.mvt": "mvt_sanfrancisco",
    "vector-tile-js-14-8801-5371.vector.pbf": "mvt_vtjs",
    "descriptor.fds.bin": "descriptor_fds",
    "descriptor_with_source_info.fds.bin": "descriptor_fds_srcinfo",
}


def public13() -> List[Tuple[str, str, str]]:
    """The 13 public payloads: PAYLOADS without the `dataset.*` wrappers."""
    return [p for p in PAYLOADS if not p[2].startswith("dataset.")]


@dataclass
class Schemas:
    """protojit schemas and google.protobuf descriptor pools, loaded once per .proto file."""

    corpus: Path
    _pj: Dict[Path, object] = field(default_factory=dict)
    _pools: Dict[Path, object] = field(default_factory=dict)

    def protojit(self, proto: Path):
        import protojit

        proto = Path(proto)
        if proto not in self._pj:
            if proto.name == "descriptor.proto":
                # As the Rust tests (tests/common/mod.rs `corpus_schema`): protox refuses the
                # corpus's descriptor.proto (newer syntax), so it is read from the descriptor
                # set it describes.
                self._pj[proto] = protojit.Schema.from_descriptor_set(str(proto.parent / "descriptor.fds.bin"))
            else:
                self._pj[proto] = protojit.Schema.from_proto(str(proto), include=str(proto.parent))
        return self._pj[proto]

    def pool(self, proto: Path):
        """A google.protobuf DescriptorPool of the protojit schema's descriptor set."""
        from google.protobuf import descriptor_pb2, descriptor_pool

        proto = Path(proto)
        if proto not in self._pools:
            fds = descriptor_pb2.FileDescriptorSet.FromString(self.protojit(proto).to_descriptor_set())
            pool = descriptor_pool.DescriptorPool()
            for f in fds.file:  # imports first
                pool.Add(f)
            self._pools[proto] = pool
        return self._pools[proto]

    def descriptor(self, proto: Path, message: str):
        return self.pool(proto).FindMessageTypeByName(message)

    def message_class(self, proto: Path, message: str):
        from google.protobuf import message_factory

        return message_factory.GetMessageClass(self.descriptor(proto, message))


@dataclass
class RecordSet:
    """Records of one message type, as records.rs's RecordSet."""

    name: str
    label: str  # for the tables
    proto: Path  # schema file (its directory is the include path)
    message: str
    records: List[bytes]

    @property
    def nbytes(self) -> int:
        return sum(len(r) for r in self.records)


# ---------------------------------------------------------------------------------------
# telemetry: records.rs's `telemetry(n)`, draw for draw.


class Rng:
    """splitmix64, as protojit_corpus::Rng (corpus/src/payload.rs)."""

    M = (1 << 64) - 1

    def __init__(self, seed: int):
        self.s = seed & self.M

    def next_u64(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & self.M
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.M
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return (self.next_u64() * n) >> 64

    def range(self, lo: int, hi: int) -> int:  # lo..=hi
        return lo + self.below(hi - lo + 1)

    def unit(self) -> float:
        return (self.next_u64() >> 11) / float(1 << 53)

    def chance(self, p: float) -> bool:
        return self.unit() < p

    def pick(self, items):
        return items[self.below(len(items))]


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def telemetry(schemas: Schemas, n: int) -> RecordSet:
    """`n` telemetry `Batch` records, seeded as records.rs (0x7e1e_3e72), with the same draws
    in the same order, the float arithmetic in f32 as Rust does it. Encoded by upb with
    `deterministic=True`: fields in number order as prost-reflect writes them, default values
    of proto3 fields left out as prost-reflect leaves them out; map entries sorted by key
    (k0, k1, k2: insertion order), where prost-reflect writes its HashMap's order. So the
    records have the Rust bench's sizes; the order of map entries inside a record may differ."""
    proto = SAMPLES / "telemetry.proto"
    Batch = schemas.message_class(proto, "protojit.samples.Batch")
    rng = Rng(0x7E1E3E72)
    sites = ["north", "south", "east", "west", "lab"]
    out = []
    for _ in range(n):
        m = Batch()
        m.device = "sensor-%04d" % rng.below(500)
        m.status = rng.below(3)
        for _ in range(rng.range(1, 9)):
            s = m.samples.add()
            s.sensor_id = rng.below(64)
            s.timestamp_ms = 1_700_000_000_000 + rng.below(1 << 30)
            s.temperature_c = _f32(15.0 + _f32(20.0 * _f32(rng.unit())))
            s.humidity = _f32(rng.unit())
            s.rssi_dbm = -rng.range(30, 100)
        for i in range(rng.below(4)):
            m.labels["k%d" % i] = rng.pick(sites)
        m.error_codes.extend(rng.below(1000) for _ in range(rng.below(5)))
        if rng.chance(0.5):
            m.battery_volts = _f32(3.0 + _f32(rng.unit()))
        else:
            m.mains = True
        out.append(m.SerializeToString(deterministic=True))
    return RecordSet("telemetry", "telemetry", proto, "protojit.samples.Batch", out)


# ---------------------------------------------------------------------------------------
# The corpus-derived sets.


def gm1(schemas: Schemas, n: int) -> RecordSet:
    """google_message1 (proto3) repeated n times (records.rs `gm1(n)`)."""
    c = schemas.corpus
    b = (c / "google_message1_proto3.payload0.bin").read_bytes()
    return RecordSet("gm1", "gm1", c / "benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1", [b] * n)


def osm_ways(schemas: Schemas) -> RecordSet:
    """Each `Way` of the OSM ways block as its own `OSMPBF.Way` record (records.rs
    `osm_ways()`: the Way message itself, re-encoded, not wrapped in a PrimitiveBlock)."""
    c = schemas.corpus
    proto = c / "osmformat.proto"
    Block = schemas.message_class(proto, "OSMPBF.PrimitiveBlock")
    block = Block.FromString((c / "liechtenstein.block40.primitiveblock-ways.bin").read_bytes())
    out = [w.SerializeToString() for g in block.primitivegroup for w in g.ways]
    return RecordSet("osm_ways", "OSM ways", proto, "OSMPBF.Way", out)


MVT_TILES = [
    "mvt-chicago-13-2101-3044.mvt",
    "mvt-sanfrancisco-15-5238-12666.mvt",
    "mvt-osmqa-astana-12-2860-1368.mvt",
    "vector-tile-js-14-8801-5371.vector.pbf",
]


def mvt_features(schemas: Schemas) -> RecordSet:
    """Every feature of the four tiles, each a `vector_tile.Tile.Feature` record (records.rs
    `mvt_features()`, same tiles, same order)."""
    c = schemas.corpus
    proto = c / "vector_tile.proto"
    Tile = schemas.message_class(proto, "vector_tile.Tile")
    out = []
    for name in MVT_TILES:
        tile = Tile.FromString((c / name).read_bytes())
        out.extend(f.SerializeToString() for layer in tile.layers for f in layer.features)
    return RecordSet("mvt_features", "tile features", proto, "vector_tile.Tile.Feature", out)


def copies(schemas: Schemas, proto: str, message: str, payload: str, n: int, name: str, label: str) -> RecordSet:
    """A whole corpus payload, n copies."""
    c = schemas.corpus
    return RecordSet(name, label, c / proto, message, [(c / payload).read_bytes()] * n)


def record_set(schemas: Schemas, name: str, quick: bool) -> RecordSet:
    """The record set `name` at full size, or tiny under --quick."""
    if name == "gm1":
        return gm1(schemas, 500 if quick else 10_000)
    if name == "telemetry":
        return telemetry(schemas, 500 if quick else 10_000)
    if name == "osm_ways":
        s = osm_ways(schemas)
    elif name == "mvt_features":
        s = mvt_features(schemas)
    elif name == "osm_block":
        return copies(schemas, "osmformat.proto", "OSMPBF.PrimitiveBlock",
                      "liechtenstein.block40.primitiveblock-ways.bin", 1 if quick else 3,
                      "osm_block", "OSM ways block ×%d" % (1 if quick else 3))
    elif name == "mvt_chicago":
        return copies(schemas, "vector_tile.proto", "vector_tile.Tile", "mvt-chicago-13-2101-3044.mvt",
                      2 if quick else 10, "mvt_chicago", "tile mvt-chicago ×%d" % (2 if quick else 10))
    else:
        raise ValueError(f"unknown record set {name!r}")
    if quick:
        s.records = s.records[:500]
    return s


RECORD_SETS = ["gm1", "telemetry", "osm_ways", "mvt_features", "osm_block", "mvt_chicago"]
