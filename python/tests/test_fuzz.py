"""Random and mutated bytes through the tree decoder (Decoder.to_dict) and the converter
(Converter.to_record_batch): a result or protojit.DecodeError, never another exception;
the two accept the same inputs; and both agree with google.protobuf (upb) where the
semantics match.

Where they do not, by design:
- UTF-8: the converter checks every ``string`` field, proto2 included (an Arrow ``Utf8``
  column must hold UTF-8); the decoder and upb check proto3 strings only. A proto2 record
  with invalid UTF-8 in a string field is accepted by to_dict and upb, rejected by the
  converter with kind "invalid_utf8".
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from google.protobuf import json_format

import protojit
import pjtest

TYPES = [
    ("corpus", "benchmark_message1_proto3.proto", "benchmarks.proto3.GoogleMessage1"),
    ("corpus", "benchmark_message1_proto2.proto", "benchmarks.proto2.GoogleMessage1"),
    ("corpus", "vector_tile.proto", "vector_tile.Tile"),
    ("data", "kinds.proto", "kinds.Kinds"),
    ("data", "kinds2.proto", "kinds2.Kinds2"),
]


@functools.lru_cache(maxsize=None)
def tools(where, proto, name):
    if where == "corpus":
        pjtest.require_corpus()
    schema = pjtest.corpus_schema(proto) if where == "corpus" else pjtest.data_schema(proto)
    ref = pjtest.reference(schema)
    cls = ref.cls(name)
    file = next(f for f in ref.fds.file if f.name == cls.DESCRIPTOR.file.name)
    proto2 = file.syntax in ("", "proto2")
    return schema.decoder(name), schema.converter(name), cls, proto2


@functools.lru_cache(maxsize=None)
def seeds(where, proto, name):
    """Valid records of the type, to mutate."""
    _, _, cls, _ = tools(where, proto, name)
    out = []
    for i in range(20):
        m = cls()
        pjtest.Generator(seed=7919 * i, max_depth=3, fill=0.5).fill_message(m)
        out.append(m.SerializeToString())
    return out


def outcome(fn):
    """("ok", value) or ("error", DecodeError); any other exception fails the test."""
    try:
        return "ok", fn()
    except protojit.DecodeError as e:
        assert isinstance(e.kind, str) and e.kind, e
        assert isinstance(e.offset, int) and e.offset >= 0
        assert isinstance(e.message, str) and e.message
        return "error", e


def check(which, data: bytes):
    where, proto, name = which
    dec, conv, cls, proto2 = tools(where, proto, name)
    tree, tree_value = outcome(lambda: dec.validate(data))
    col, col_value = outcome(lambda: conv.to_record_batch([data]))
    if tree == "error":
        assert tree_value.record is None
        with pytest.raises(protojit.DecodeError):
            dec.to_dict(data)
    if col == "error":
        assert col_value.record == 0
    else:
        assert col_value.num_rows == 1
    try:
        m = cls.FromString(data)
        upb = "ok"
    except Exception:  # google.protobuf.message.DecodeError
        upb = "error"
    proto2_utf8 = proto2 and col == "error" and col_value.kind == "invalid_utf8"
    if not proto2_utf8:
        assert tree == col, f"{data.hex()}: decoder {tree} ({_kind(tree_value)}), to_record_batch {col} ({_kind(col_value)})"
    assert tree == upb, f"{data.hex()}: decoder {tree} ({_kind(tree_value)}), google.protobuf {upb}"
    if tree == "ok":
        # A message that decodes has a dict, unless it has no JSON form (a timestamp past
        # 9999, an Any of an unknown type, ...): then EncodeError, where json_format
        # refuses it too.
        try:
            d = dec.to_dict(data)
        except protojit.EncodeError:
            with pytest.raises(Exception):
                json_format.MessageToDict(m, descriptor_pool=m.DESCRIPTOR.file.pool)
        else:
            # Whatever decodes has a canonical form that decodes to the same dict.
            assert dec.to_dict(dec.canonical(data)) == d


def _kind(v):
    return getattr(v, "kind", "")


def mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for op, pos, val in ops:
        if not b:
            b.append(val)
            continue
        pos %= len(b) + (1 if op == "insert" else 0)
        if op == "flip":
            b[pos % len(b)] ^= 1 << (val % 8)
        elif op == "set":
            b[pos % len(b)] = val
        elif op == "insert":
            b.insert(pos, val)
        elif op == "delete":
            del b[pos % len(b)]
        elif op == "truncate":
            del b[pos % len(b) :]
    return bytes(b)


mutations = st.lists(
    st.tuples(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]), st.integers(0, 10_000), st.integers(0, 255)),
    min_size=1,
    max_size=4,
)

# Deterministic (the same examples every run, no example database written to disk).
FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("which", TYPES, ids=[t[2] for t in TYPES])
@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(which, data):
    check(which, data)


@pytest.mark.parametrize("which", TYPES, ids=[t[2] for t in TYPES])
@FUZZ
@given(index=st.integers(0, 19), ops=mutations)
def test_mutated_records(which, index, ops):
    data = mutate(seeds(*which)[index], ops)
    check(which, data[:2000])


@pytest.mark.parametrize("which", TYPES, ids=[t[2] for t in TYPES])
def test_seeds_decode(which):
    """The unmutated records decode everywhere (so that the mutations start from valid data)."""
    for data in seeds(*which):
        check(which, data)
