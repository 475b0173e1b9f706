"""The way back: tables into messages (Converter.from_record_batch, write_delimited), against
the records they came from and google.protobuf's parse of them; bad columns raise
protojit.EncodeError naming the column and row."""

from __future__ import annotations

import io

import pyarrow as pa
import pytest

import protojit
import pjtest


def test_batches_encode_back_to_their_records(gm1_schema, gm1_records):
    conv = gm1_schema.converter("benchmarks.proto3.GoogleMessage1")
    batch = conv.to_record_batch(gm1_records)
    back = conv.from_record_batch(batch)
    assert isinstance(back, pa.BinaryArray)
    assert len(back) == len(gm1_records)
    cls = pjtest.pb_class(gm1_schema, "benchmarks.proto3.GoogleMessage1")
    for got, record in zip(back.to_pylist(), gm1_records):
        # The same message as google.protobuf reads it, in google.protobuf's own bytes.
        assert cls.FromString(got) == cls.FromString(record)
        assert got == cls.FromString(record).SerializeToString(deterministic=True)


def test_tables_and_streams_give_one_array_per_batch(gm1_schema, gm1_records):
    conv = gm1_schema.converter("benchmarks.proto3.GoogleMessage1")
    table = conv.to_record_batch(pa.chunked_array([gm1_records[:700], gm1_records[700:]], pa.binary()))
    back = conv.from_record_batch(table)
    assert isinstance(back, pa.ChunkedArray)
    assert back.num_chunks == 2
    assert back.to_pylist() == conv.from_record_batch(conv.to_record_batch(gm1_records)).to_pylist()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert conv.from_record_batch(reader).to_pylist() == back.to_pylist()


def test_write_delimited_reads_back(gm1_schema, gm1_records, tmp_path):
    conv = gm1_schema.converter("benchmarks.proto3.GoogleMessage1")
    batch = conv.to_record_batch(gm1_records)
    path = tmp_path / "out.bin"
    assert conv.write_delimited(path, batch) == len(gm1_records)
    assert conv.read_delimited(path).read_all().to_batches()[0].equals(batch)
    sink = io.BytesIO()
    assert conv.write_delimited(sink, batch) == len(gm1_records)
    assert sink.getvalue() == path.read_bytes()


def test_bad_columns_raise_encode_errors(kinds_schema):
    conv = kinds_schema.converter("kinds.Kinds")
    extra = pa.record_batch({"no_such_field": pa.array([1, 2])})
    with pytest.raises(protojit.EncodeError, match="column `no_such_field` names no field of kinds.Kinds"):
        conv.from_record_batch(extra)
    with pytest.raises(protojit.EncodeError, match="is missing"):
        conv.from_record_batch(extra, ignore_extra_columns=True)
    assert conv.from_record_batch(extra, ignore_extra_columns=True, allow_missing_columns=True).to_pylist() == [b"", b""]
    with pytest.raises(TypeError, match="from_record_batch takes a pyarrow RecordBatch or Table"):
        conv.from_record_batch([b"x"])
    wide = pa.record_batch({"f_int32": pa.array([1, 2**40], pa.int64())})
    with pytest.raises(protojit.EncodeError, match=r"column `f_int32`, row 1: 1099511627776 is out of range for int32"):
        conv.from_record_batch(wide, allow_missing_columns=True)
