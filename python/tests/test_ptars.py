"""protojit's Arrow batches against ptars' (PyPI ``ptars``, another protobuf-to-Arrow
converter in Rust) on the same records, column by column where both map a field the same
way.

Columns whose Arrow types differ are skipped (their mappings differ by design, not by
value): ptars writes enums as int32 numbers (protojit is compared with ``enums="number"``
for that reason), and its list items / map values and nullability flags differ in names
and flags only, which the comparison ignores. Every comparison must cover most columns
(``MIN_SHARED``), so that a change of mapping cannot make it vacuous.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pjtest

ptars = pytest.importorskip("ptars")

MIN_SHARED = 0.7


def shape(t: pa.DataType):
    """An Arrow type without the names of list items and map entries, without nullability."""
    if pa.types.is_struct(t):
        return ("struct", tuple((t.field(i).name, shape(t.field(i).type)) for i in range(t.num_fields)))
    if pa.types.is_map(t):
        return ("map", shape(t.key_type), shape(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list", shape(t.value_type))
    if pa.types.is_large_string(t):
        return "string"
    if pa.types.is_large_binary(t):
        return "binary"
    return str(t)


def ptars_batch(schema, message, records):
    ref = pjtest.reference(schema)
    desc = ref.pool.FindMessageTypeByName(message)
    pool = ptars.HandlerPool([desc.file])
    return pool.get_for_message(desc).list_to_record_batch(records)


def compare(schema, message, records):
    ours = schema.converter(message, enums="number").to_record_batch(records)
    theirs = ptars_batch(schema, message, records)
    assert ours.num_rows == theirs.num_rows == len(records)
    shared, skipped = [], []
    for name in ours.schema.names:
        if name not in theirs.schema.names:
            skipped.append(name)
            continue
        if shape(ours.schema.field(name).type) != shape(theirs.schema.field(name).type):
            skipped.append(name)  # mapped differently: not comparable value by value
            continue
        shared.append(name)
        got = pjtest.arrow_values(ours.column(name))
        expected = pjtest.arrow_values(theirs.column(name))
        for i, (g, e) in enumerate(zip(got, expected)):
            d = pjtest.first_difference(g, e, name)
            assert d is None, f"row {i}: {d}"
    assert len(shared) >= MIN_SHARED * len(ours.schema.names), f"only {shared} comparable; skipped {skipped}"
    return shared, skipped


def test_google_message1_proto3(gm1_schema, gm1_records):
    compare(gm1_schema, "benchmarks.proto3.GoogleMessage1", gm1_records[:100])


def test_osm_header_block(corpus):
    schema = pjtest.corpus_schema("osmformat.proto")
    compare(schema, "OSMPBF.HeaderBlock", [pjtest.payload_bytes("liechtenstein.block0.headerblock.bin")])


def test_vector_tiles(corpus):
    schema = pjtest.corpus_schema("vector_tile.proto")
    tile = pjtest.payload_bytes("vector-tile-js-14-8801-5371.vector.pbf")
    compare(schema, "vector_tile.Tile", [tile] * 10)
