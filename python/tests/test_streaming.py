"""Converter.read_delimited: varint-delimited streams from paths, file objects and bytes,
compressed or not, a batch at a time; its framing errors; and threads."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct

import pyarrow as pa
import pytest

import protojit
import pjtest
from pjtest import delimited, varint

GM1 = "benchmarks.proto3.GoogleMessage1"
N = 10_000
BATCH = 1000


@pytest.fixture(scope="module")
def many(corpus):
    return pjtest.gm1_proto3_records(N)


@pytest.fixture(scope="module")
def conv(gm1_schema):
    return gm1_schema.converter(GM1)


@pytest.fixture(scope="module")
def whole(conv, many):
    return pa.Table.from_batches([conv.to_record_batch(pa.array(many, pa.binary()))])


@pytest.fixture(scope="module")
def stream(many):
    return delimited(many)


def zstd_frame(data: bytes) -> bytes:
    """A zstd frame (RFC 8878) of raw (stored) blocks: valid zstd that any decoder reads.
    Used where the ``zstandard`` module is not installed."""
    try:
        import zstandard  # type: ignore

        return zstandard.ZstdCompressor().compress(data)
    except ImportError:
        pass
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out.append(0x00)  # frame header descriptor: no content size, no checksum, no dictionary
    out.append(7 << 3)  # window descriptor: 2^(10+7) = 128 KiB
    block = 128 * 1024
    chunks = [data[i : i + block] for i in range(0, len(data), block)] or [b""]
    for i, chunk in enumerate(chunks):
        last = 1 if i == len(chunks) - 1 else 0
        header = last | (0 << 1) | (len(chunk) << 3)  # Raw_Block
        out += header.to_bytes(3, "little") + chunk
    return bytes(out)


COMPRESSORS = {
    "gzip": (".gz", gzip.compress),
    "bzip2": (".bz2", bz2.compress),
    "xz": (".xz", lzma.compress),
    "zstd": (".zst", zstd_frame),
}


def read_all(reader) -> pa.Table:
    assert isinstance(reader, pa.RecordBatchReader)
    return reader.read_all()


def same_rows(table: pa.Table, whole: pa.Table):
    assert table.num_rows == whole.num_rows
    assert table.combine_chunks().equals(whole.combine_chunks())


def test_a_batch_closes_at_8_mib_of_input(conv):
    # 24 records of 1 MiB each (field9, a string): batches of at most 8 MiB of input, plus
    # the record that reaches it, however many rows `batch_size` allows.
    big = [varint(9 << 3 | 2) + varint(1 << 20) + bytes([65 + i]) * (1 << 20) for i in range(24)]
    batches = list(conv.read_delimited(delimited(big), batch_size=1000))
    assert [b.num_rows for b in batches] == [8, 8, 8]
    texts = [s.as_py() for b in batches for s in b.column("field9")]
    assert texts == [chr(65 + i) * (1 << 20) for i in range(24)]


def test_batches_of_a_file(conv, stream, whole, tmp_path):
    path = tmp_path / "records.bin"
    path.write_bytes(stream)
    reader = conv.read_delimited(path, batch_size=BATCH)
    assert reader.schema.equals(conv.schema)
    batches = list(reader)
    assert len(batches) == N // BATCH
    assert all(b.num_rows == BATCH for b in batches)
    same_rows(pa.Table.from_batches(batches, conv.schema), whole)
    # str paths as well as PathLike.
    same_rows(read_all(conv.read_delimited(str(path), batch_size=BATCH)), whole)


def test_a_batch_size_that_does_not_divide(conv, stream, whole):
    batches = list(conv.read_delimited(stream, batch_size=3333))
    assert [b.num_rows for b in batches] == [3333, 3333, 3333, 1]
    same_rows(pa.Table.from_batches(batches), whole)


@pytest.mark.parametrize("fmt", sorted(COMPRESSORS))
def test_compressed_files(conv, stream, whole, tmp_path, fmt):
    ext, compress = COMPRESSORS[fmt]
    data = compress(stream)
    named = tmp_path / f"records.bin{ext}"
    named.write_bytes(data)
    plain_name = tmp_path / "records-compressed.bin"
    plain_name.write_bytes(data)
    # By the name, by the magic bytes, and by the keyword.
    same_rows(read_all(conv.read_delimited(named, batch_size=BATCH)), whole)
    same_rows(read_all(conv.read_delimited(plain_name, batch_size=BATCH)), whole)
    same_rows(read_all(conv.read_delimited(plain_name, batch_size=BATCH, compression=fmt)), whole)
    # A file object, and compressed bytes.
    with open(named, "rb") as f:
        same_rows(read_all(conv.read_delimited(f, batch_size=BATCH)), whole)
    same_rows(read_all(conv.read_delimited(io.BytesIO(data), batch_size=BATCH)), whole)
    same_rows(read_all(conv.read_delimited(data, batch_size=BATCH)), whole)


def test_multi_member_gzip(conv, many, whole, tmp_path):
    """A gzip file of several members (``cat a.gz b.gz``) is one stream."""
    half = N // 2
    data = gzip.compress(delimited(many[:half])) + gzip.compress(delimited(many[half:]))
    path = tmp_path / "two.gz"
    path.write_bytes(data)
    same_rows(read_all(conv.read_delimited(path, batch_size=BATCH)), whole)


def test_compression_none_on_plain_data(conv, stream, whole, tmp_path):
    path = tmp_path / "records.gz"  # a misleading name, overridden
    path.write_bytes(stream)
    same_rows(read_all(conv.read_delimited(path, batch_size=BATCH, compression="none")), whole)


def test_file_objects_and_bytes(conv, stream, whole, tmp_path):
    path = tmp_path / "records.bin"
    path.write_bytes(stream)
    with open(path, "rb") as f:
        same_rows(read_all(conv.read_delimited(f, batch_size=BATCH)), whole)
    same_rows(read_all(conv.read_delimited(io.BytesIO(stream), batch_size=BATCH)), whole)
    same_rows(read_all(conv.read_delimited(stream, batch_size=BATCH)), whole)


def test_text_mode_file_is_refused(conv, tmp_path):
    path = tmp_path / "records.bin"
    path.write_bytes(b"\x00")
    with open(path, "r", encoding="latin-1") as f:
        with pytest.raises((TypeError, OSError, ValueError)):
            read_all(conv.read_delimited(f))


def test_empty_stream(conv):
    reader = conv.read_delimited(b"")
    assert reader.schema.equals(conv.schema)
    assert list(reader) == []
    # Empty records are rows of defaults.
    table = read_all(conv.read_delimited(b"\x00\x00"))
    assert table.num_rows == 2
    assert table.column("field2").to_pylist() == [0, 0]


def test_read_errors(conv, tmp_path):
    with pytest.raises((OSError, FileNotFoundError)):
        conv.read_delimited(tmp_path / "does-not-exist.bin")
    with pytest.raises(TypeError):
        conv.read_delimited(12345)
    with pytest.raises(ValueError, match="batch_size"):
        conv.read_delimited(b"", batch_size=0)
    with pytest.raises(ValueError):
        conv.read_delimited(b"", compression="lz4")
    with pytest.raises(ValueError, match="errors"):
        conv.read_delimited(b"", errors="ignore")


# --- framing faults -------------------------------------------------------------------------


def raises_decode_error(reader_or_call):
    with pytest.raises(protojit.DecodeError) as info:
        read_all(reader_or_call)
    return info.value


def test_truncated_record(conv, many):
    rec = many[5]
    data = delimited(many[:5]) + varint(len(rec)) + rec[: len(rec) // 2]
    reader = conv.read_delimited(data, batch_size=BATCH)
    # The five whole records come first, then the error.
    first = reader.read_next_batch()
    assert first.num_rows == 5
    with pytest.raises(protojit.DecodeError) as info:
        reader.read_next_batch()
    e = info.value
    assert e.kind == "truncated_stream"
    assert e.record == 5
    assert e.offset == len(delimited(many[:5]))
    assert "record 6" in e.message
    assert isinstance(e, protojit.Error) and isinstance(e, ValueError)


def test_truncated_length_prefix(conv, many):
    data = delimited(many[:3]) + b"\xe4"  # a varint cut after its first byte
    e = raises_decode_error(conv.read_delimited(data))
    assert e.kind == "truncated_stream"
    assert e.record == 3
    assert e.offset == len(delimited(many[:3]))


def test_a_2gb_length_prefix_on_a_short_input(conv):
    data = varint(2**31) + b"only a few bytes"
    e = raises_decode_error(conv.read_delimited(data))
    assert e.record == 0
    assert e.kind in ("truncated_stream", "record_too_large")
    # From a file object too (no length known in advance).
    e = raises_decode_error(conv.read_delimited(io.BytesIO(data)))
    assert e.record == 0


def test_max_record(conv, many):
    small = b"\x10\x07"  # field2 = 7
    data = delimited([small, small, many[0], small])
    e = raises_decode_error(conv.read_delimited(data, max_record=100))
    assert e.kind == "record_too_large"
    assert e.record == 2
    assert e.offset == len(delimited([small, small]))
    assert read_all(conv.read_delimited(data, max_record=len(many[0]))).num_rows == 4


def test_overlong_length_prefix(conv):
    e = raises_decode_error(conv.read_delimited(b"\x02\x10\x07" + b"\xff" * 11))
    assert e.kind == "bad_length_prefix"
    assert e.record == 1


def test_bad_record_in_a_stream(conv, many):
    bad = b"\x0a\x05ab"  # field1 announces 5 bytes, 2 follow
    data = delimited(many[:4] + [bad] + many[4:8])
    e = raises_decode_error(conv.read_delimited(data, batch_size=3))
    assert e.record == 4
    assert e.kind in ("truncated", "length_out_of_bounds")
    # errors="skip" (from the keyword, or the converter's): left out and counted.
    table = read_all(conv.read_delimited(data, batch_size=3, errors="skip"))
    assert table.num_rows == 8
    assert table.column("field2").to_pylist() == list(range(8))


def test_skip_counts_on_the_converter(gm1_schema, many):
    conv = gm1_schema.converter(GM1, errors="skip")
    bad = b"\x0a\x05ab"
    data = delimited([bad] + many[:3] + [bad, bad] + many[3:5])
    assert conv.skipped == 0
    table = read_all(conv.read_delimited(data, batch_size=2))
    assert table.num_rows == 5
    assert conv.skipped == 3
    # errors="raise" overrides the converter's "skip".
    e = raises_decode_error(conv.read_delimited(data, errors="raise"))
    assert e.record == 0


# --- threads --------------------------------------------------------------------------------


def test_threads_give_the_same_batch(gm1_schema, corpus):
    recs = pjtest.gm1_proto3_records(20_000)
    arr = pa.array(recs, pa.binary())
    one = gm1_schema.converter(GM1, threads=1).to_record_batch(arr)
    two = gm1_schema.converter(GM1, threads=2).to_record_batch(arr)
    assert one.num_rows == 20_000
    assert two.equals(one)
    assert two.column("field2").to_pylist() == list(range(20_000))


def test_threads_with_nulls_and_errors(gm1_schema, corpus):
    recs = pjtest.gm1_proto3_records(20_000)
    bad = b"\x0a\x05ab"
    mixed = list(recs)
    for i in (3, 9_000, 15_000):
        mixed[i] = bad
    for i in (4, 12_000):
        mixed[i] = None
    arr = pa.array(mixed, pa.binary())
    batches = []
    for threads in (1, 2):
        conv = gm1_schema.converter(GM1, threads=threads, errors="skip")
        b = conv.to_record_batch(arr)
        assert b.num_rows == 20_000 - 3
        assert conv.skipped == 3
        assert b.schema.metadata[b"protojit.skipped"] == b"3"
        batches.append(b)
    assert batches[1].equals(batches[0])
    f2 = batches[0].column("field2").to_pylist()
    assert f2[3] is None and f2[11_998] is None  # the null entries, after the skipped ones
    # errors="raise": the first bad record is the one reported, however many threads.
    for threads in (1, 2):
        conv = gm1_schema.converter(GM1, threads=threads)
        with pytest.raises(protojit.DecodeError) as info:
            conv.to_record_batch(arr)
        assert info.value.record == 3
