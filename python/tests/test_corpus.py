"""protojit against google.protobuf (upb) on every payload of the shared corpus: dicts,
JSON, text format, encoding back from dicts and JSON, and the canonical encoding."""

from __future__ import annotations

import functools
import json

import pytest
from google.protobuf import json_format, text_format

import pjtest
from pjtest import EXPECTED, JSON_KWARGS, PAYLOAD_IDS, PAYLOADS

# Payloads whose protojit and upb canonical encodings may differ in bytes; the messages
# they parse to must still be equal. Empty: both write known fields in field-number order,
# so every corpus payload is expected byte for byte.
CANONICAL_BYTES_MAY_DIFFER: dict = {}

# The three largest payloads (0.4 to 1 MB) are checked with two keyword combinations
# (none, all) instead of all eight, and round-trip with one: each keyword is checked on
# every combination by the other payloads, and this keeps the suite fast.
BIG = {
    "mvt-osmqa-astana-12-2860-1368.mvt",
    "liechtenstein.block40.primitiveblock-ways.bin",
    "liechtenstein.block45.primitiveblock-relations.bin",
}
DICT_CASES = [
    pytest.param(payload, kw, id=f"{payload}-{pjtest.json_kwargs_id(kw)}")
    for payload in PAYLOAD_IDS
    for kw in JSON_KWARGS
    if payload not in BIG or kw in (JSON_KWARGS[0], JSON_KWARGS[7])
]


@functools.lru_cache(maxsize=4)
def case(payload: str):
    """(schema, reference, message type, bytes, parsed message) of a corpus payload."""
    proto, msg, name = next(p for p in PAYLOADS if p[2] == payload)
    schema = pjtest.corpus_schema(proto)
    ref = pjtest.reference(schema)
    data = pjtest.payload_bytes(name)
    return schema, ref, msg, data, ref.cls(msg).FromString(data)


@pytest.mark.parametrize("payload, kw", DICT_CASES)
def test_to_dict_and_to_json_match_message_to_dict(corpus, payload, kw):
    schema, ref, msg, data, m = case(payload)
    expected = json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw)
    dec = schema.decoder(msg)
    pjtest.assert_same(dec.to_dict(data, **kw), expected, "to_dict")
    pjtest.assert_same(json.loads(dec.to_json(data, **kw)), expected, "to_json")


@pytest.mark.parametrize("payload", PAYLOAD_IDS)
def test_to_text(corpus, payload):
    """to_text prints what ``protoc --decode`` prints (protoc 3.21.12's output, committed in
    tests/expected), agrees with ``text_format.MessageToString`` up to the formatting of
    floats and string escapes (where Python's printer differs from protoc's by design), and
    reads back (Encoder.from_text) into the same message."""
    schema, ref, msg, data, m = case(payload)
    text = schema.decoder(msg).to_text(data)
    assert pjtest.protoc_expected(EXPECTED, payload, text), f"no protoc output for {payload} in {EXPECTED}"
    d = pjtest.text_format_difference(text, text_format.MessageToString(m))
    assert d is None, f"to_text and text_format.MessageToString differ beyond formatting: {d}"
    back = schema.encoder(msg).from_text(text)
    assert ref.cls(msg).FromString(back) == m


@pytest.mark.parametrize("payload", PAYLOAD_IDS)
def test_from_dict_and_from_json_round_trip(corpus, payload):
    schema, ref, msg, data, m = case(payload)
    enc = schema.encoder(msg)
    cls = ref.cls(msg)
    for kw in (JSON_KWARGS[0],) if payload in BIG else (JSON_KWARGS[0], JSON_KWARGS[7]):
        d = json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw)
        assert cls.FromString(enc.from_dict(d)) == m, f"from_dict({kw})"
        j = json_format.MessageToJson(m, descriptor_pool=ref.pool, **kw)
        assert cls.FromString(enc.from_json(j)) == m, f"from_json(str, {kw})"
        if payload not in BIG:
            assert cls.FromString(enc.from_json(j.encode())) == m, f"from_json(bytes, {kw})"


@pytest.mark.parametrize("payload", PAYLOAD_IDS)
def test_canonical(corpus, payload):
    schema, ref, msg, data, m = case(payload)
    dec = schema.decoder(msg)
    canonical = dec.canonical(data)
    expected = m.SerializeToString(deterministic=True)
    if payload in CANONICAL_BYTES_MAY_DIFFER:
        assert ref.cls(msg).FromString(canonical) == m
    else:
        assert canonical == expected, f"{len(canonical)} bytes, upb's deterministic encoding has {len(expected)}"
    # Canonical bytes are their own canonical form, and decode to the same dict.
    assert dec.canonical(canonical) == canonical
    assert dec.to_dict(canonical) == dec.to_dict(data)


def test_canonical_drops_explicit_proto3_defaults(corpus):
    """The proto3 GoogleMessage1 payload sets some fields to their zero value on the wire
    (228 bytes; upb re-encodes it in 221): canonical leaves them out as upb does."""
    schema, ref, msg, data, m = case("google_message1_proto3.payload0.bin")
    assert len(data) == 228
    assert len(schema.decoder(msg).canonical(data)) == 221


@pytest.mark.parametrize("payload", PAYLOAD_IDS)
def test_validate_and_bytes_like_inputs(corpus, payload):
    schema, ref, msg, data, m = case(payload)
    dec = schema.decoder(msg)
    assert dec.validate(data) is None
    assert dec.message_type == msg
    if len(data) < 200_000:
        expected = dec.to_dict(data)
        assert dec.to_dict(bytearray(data)) == expected
        assert dec.to_dict(memoryview(data)) == expected
        # A memoryview of a slice: the bytes it shows, not its whole buffer.
        padded = b"\xff\xff" + data + b"\xff"
        assert dec.to_dict(memoryview(padded)[2:-1]) == expected
