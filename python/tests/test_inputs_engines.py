"""Converter.to_record_batch on every input it takes (pyarrow arrays of each binary type,
chunked arrays, Arrow C interface objects, lists, Polars Series), and the batches in
Polars (protojit.polars) and DuckDB."""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import protojit
import protojit.polars
import pjtest

GM1 = "benchmarks.proto3.GoogleMessage1"
N = 300


@pytest.fixture(scope="module")
def recs(gm1_records):
    return gm1_records[:N]


@pytest.fixture(scope="module")
def conv(gm1_schema):
    return gm1_schema.converter(GM1)


@pytest.fixture(scope="module")
def expected(conv, recs):
    batch = conv.to_record_batch(pa.array(recs, pa.binary()))
    assert isinstance(batch, pa.RecordBatch)
    assert batch.num_rows == N
    assert batch.schema.equals(conv.schema)
    return batch


def test_rows_are_the_records(gm1_schema, conv, recs, expected):
    """The batch is the records, in order (checked against google.protobuf)."""
    cls = pjtest.pb_class(gm1_schema, GM1)
    msgs = [cls.FromString(r) for r in recs]
    assert expected.column("field1").to_pylist() == [m.field1 for m in msgs]
    assert expected.column("field2").to_pylist() == [m.field2 for m in msgs]
    assert expected.column("field15").to_pylist()[7]["field15"] == msgs[7].field15.field15
    assert conv.message_type == GM1
    assert conv.path in ("auto", "chunked", "compiled", "direct", "tree")


class CArray:
    """An object with only ``__arrow_c_array__`` (a producer that is not pyarrow)."""

    def __init__(self, arr):
        self._arr = arr

    def __arrow_c_array__(self, requested_schema=None):
        return self._arr.__arrow_c_array__(requested_schema)


class CStream:
    """An object with only ``__arrow_c_stream__``."""

    def __init__(self, chunked):
        self._chunked = chunked

    def __arrow_c_stream__(self, requested_schema=None):
        return self._chunked.__arrow_c_stream__(requested_schema)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda r: pa.array(r, pa.binary()), id="binary"),
        pytest.param(lambda r: pa.array(r, pa.large_binary()), id="large_binary"),
        pytest.param(lambda r: pa.array(r, pa.binary_view()), id="binary_view"),
        pytest.param(lambda r: list(r), id="list"),
        pytest.param(lambda r: tuple(r), id="tuple"),
        pytest.param(lambda r: [bytearray(x) for x in r], id="list-of-bytearray"),
        pytest.param(lambda r: pl.Series("raw", r, dtype=pl.Binary), id="polars"),
        pytest.param(lambda r: CArray(pa.array(r, pa.binary())), id="arrow_c_array"),
        pytest.param(lambda r: CArray(pa.array(r, pa.binary_view())), id="arrow_c_array-view"),
    ],
)
def test_every_array_input_gives_the_same_batch(conv, recs, expected, make):
    batch = conv.to_record_batch(make(recs))
    assert isinstance(batch, pa.RecordBatch)
    assert batch.equals(expected)


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary(), pa.binary_view()])
def test_sliced_arrays(conv, recs, expected, typ):
    arr = pa.array(recs, typ).slice(17, 101)
    assert conv.to_record_batch(arr).equals(expected.slice(17, 101))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda c: c, id="chunked"),
        pytest.param(lambda c: CStream(c), id="arrow_c_stream"),
    ],
)
def test_chunked_input_gives_a_table(conv, recs, expected, make):
    chunked = pa.chunked_array([recs[:100], recs[100:250], recs[250:]], pa.binary())
    table = conv.to_record_batch(make(chunked))
    assert isinstance(table, pa.Table)
    assert table.num_rows == N
    assert [b.num_rows for b in table.to_batches()] == [100, 150, N - 250]
    assert table.combine_chunks().equals(pa.Table.from_batches([expected]).combine_chunks())


def test_chunked_large_binary(conv, recs, expected):
    chunked = pa.chunked_array([pa.array(recs[:10], pa.large_binary()), pa.array(recs[10:], pa.large_binary())])
    table = conv.to_record_batch(chunked)
    assert table.combine_chunks().equals(pa.Table.from_batches([expected]).combine_chunks())


def test_empty_inputs(conv):
    for empty in ([], pa.array([], pa.binary()), pa.chunked_array([], pa.binary())):
        out = conv.to_record_batch(empty)
        assert out.num_rows == 0
        assert out.schema.equals(conv.schema)


def test_null_entries_become_rows_of_nulls(conv, recs, expected):
    arr = pa.array([recs[0], None, recs[1], None], pa.binary())
    batch = conv.to_record_batch(arr)
    assert batch.num_rows == 4
    for name in batch.schema.names:
        col = batch.column(name)
        assert col.is_null().to_pylist() == [False, True, False, True], name
        assert col.take([0, 2]).equals(expected.column(name).slice(0, 2)), name
    assert conv.to_record_batch([recs[0], None]).equals(batch.slice(0, 2))


def test_an_empty_record_is_a_row_of_defaults_not_nulls(conv):
    batch = conv.to_record_batch([b""])
    assert batch.column("field1").to_pylist() == [""]
    assert batch.column("field2").to_pylist() == [0]
    assert batch.column("field15").to_pylist() == [None]


# --- Polars ---------------------------------------------------------------------------------


def test_polars_decode_series(gm1_schema, conv, recs, expected):
    s = pl.Series("raw", recs, dtype=pl.Binary)
    out = protojit.polars.decode(s, gm1_schema, GM1)
    assert isinstance(out, pl.Series)
    assert out.name == "raw"
    assert isinstance(out.dtype, pl.Struct)
    assert out.struct.unnest().equals(pl.from_arrow(expected))
    # A ready Converter instead of the schema and type.
    assert protojit.polars.decode(s, conv).equals(out)
    # The converter's keywords pass through.
    sel = protojit.polars.decode(s, gm1_schema, GM1, select=["field2", "field1"])
    assert [f.name for f in sel.dtype.fields] == ["field2", "field1"]
    assert sel.struct.field("field2").to_list() == expected.column("field2").to_pylist()


def test_polars_decode_expression(gm1_schema, recs, expected):
    df = pl.DataFrame({"id": list(range(N)), "raw": pl.Series(recs, dtype=pl.Binary)})
    out = df.select(protojit.polars.decode(pl.col("raw"), gm1_schema, GM1)).unnest("raw")
    assert out.equals(pl.from_arrow(expected))
    # In with_columns and a lazy frame, beside other columns.
    lazy = df.lazy().with_columns(msg=protojit.polars.decode(pl.col("raw"), gm1_schema, GM1)).collect()
    assert lazy["id"].to_list() == list(range(N))
    assert lazy["msg"].struct.field("field1").to_list() == expected.column("field1").to_pylist()
    # A filter before the decode: the kept rows only.
    kept = df.filter(pl.col("id") % 7 == 0).select(protojit.polars.decode(pl.col("raw"), gm1_schema, GM1))
    assert kept["raw"].struct.field("field2").to_list() == expected.column("field2").to_pylist()[::7]


def test_polars_to_frame(gm1_schema, conv, recs, expected):
    s = pl.Series("raw", recs, dtype=pl.Binary)
    assert protojit.polars.to_frame(s, gm1_schema, GM1).equals(pl.from_arrow(expected))
    assert protojit.polars.to_frame(s, conv).equals(pl.from_arrow(expected))


def test_polars_misuse(gm1_schema, conv, recs):
    s = pl.Series("raw", recs[:3], dtype=pl.Binary)
    with pytest.raises(TypeError):
        protojit.polars.decode(pl.Series("n", [1, 2, 3]), gm1_schema, GM1)
    with pytest.raises(ValueError):
        protojit.polars.decode(s, conv, GM1)
    with pytest.raises(ValueError):
        protojit.polars.decode(s, gm1_schema)
    with pytest.raises(protojit.SchemaError):
        protojit.polars.decode(s, gm1_schema, "NoSuchMessage")


def test_polars_tile_with_enums(corpus):
    """A vector tile's layers: nested lists of structs with an enum (dictionary) column."""
    schema = pjtest.corpus_schema("vector_tile.proto")
    data = pjtest.payload_bytes("vector-tile-js-14-8801-5371.vector.pbf")
    s = pl.Series("tile", [data, data], dtype=pl.Binary)
    out = protojit.polars.decode(s, schema, "vector_tile.Tile")
    batch = schema.converter("vector_tile.Tile").to_record_batch([data, data])
    assert out.struct.unnest().equals(pl.from_arrow(batch))
    layers = out.struct.field("layers").to_list()[0]
    assert len(layers) == 20
    cls = pjtest.pb_class(schema, "vector_tile.Tile")
    m = cls.FromString(data)
    assert [l["name"] for l in layers] == [l.name for l in m.layers]
    geom_types = [f["type"] for f in layers[0]["features"]]
    enum = cls.DESCRIPTOR.enum_types_by_name["GeomType"]
    assert geom_types == [enum.values_by_number[f.type].name if f.HasField("type") else None for f in m.layers[0].features]


# --- DuckDB ---------------------------------------------------------------------------------


def test_duckdb_scans_a_batch(conv, recs, expected):
    batch = conv.to_record_batch(pa.array(recs, pa.binary()))
    con = duckdb.connect()
    assert con.sql("SELECT count(*) FROM batch").fetchall() == [(N,)]
    total = con.sql("SELECT sum(field2) FROM batch").fetchall()[0][0]
    assert total == sum(expected.column("field2").to_pylist())
    (first,) = con.sql("SELECT field1, field15.field15 FROM batch LIMIT 1").fetchall()
    assert first == (expected.column("field1")[0].as_py(), expected.column("field15")[0].as_py()["field15"])


def test_duckdb_scans_a_delimited_reader(conv, recs, expected):
    reader = conv.read_delimited(pjtest.delimited(recs), batch_size=64)
    con = duckdb.connect()
    ((count, top),) = con.sql("SELECT count(*), max(field2) FROM reader").fetchall()
    assert count == N
    assert top == max(expected.column("field2").to_pylist())
