"""protojit's errors: which exception, and what it says (the record, the offset, the kind)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import protojit
import pjtest
from pjtest import f_bytes, f_varint, tag

GM1 = "benchmarks.proto3.GoogleMessage1"


@pytest.fixture(scope="module")
def good(gm1_records):
    return gm1_records[:5]


def test_exception_hierarchy():
    assert issubclass(protojit.Error, ValueError)
    for cls in (protojit.SchemaError, protojit.DecodeError, protojit.EncodeError):
        assert issubclass(cls, protojit.Error)
    assert not issubclass(protojit.DecodeError, protojit.SchemaError)


# --- names ---------------------------------------------------------------------------------


def test_unknown_message_type(gm1_schema):
    for make in (gm1_schema.converter, gm1_schema.decoder, gm1_schema.encoder, gm1_schema.resolve_type):
        with pytest.raises(protojit.SchemaError, match="NoSuchMessage"):
            make("benchmarks.proto3.NoSuchMessage")


def test_resolve_type():
    schema = protojit.Schema.from_proto_source(
        'syntax = "proto3"; package a.b; message X { message Y {} } message Z { message Y {} }', "names.proto"
    )
    assert schema.resolve_type("a.b.X") == "a.b.X"
    assert schema.resolve_type("X") == "a.b.X"
    assert schema.resolve_type("a.b.X.Y") == "a.b.X.Y"
    assert schema.message_names == sorted(["a.b.X", "a.b.X.Y", "a.b.Z", "a.b.Z.Y"])
    with pytest.raises(protojit.SchemaError):
        schema.resolve_type("Y")  # two types have that short name
    with pytest.raises(protojit.SchemaError):
        schema.resolve_type("Q")
    # The short name works wherever a type is named.
    assert schema.converter("X").message_type == "a.b.X"
    assert schema.decoder("Z").message_type == "a.b.Z"
    assert schema.encoder("X").message_type == "a.b.X"


def test_bad_proto_source():
    with pytest.raises(protojit.SchemaError):
        protojit.Schema.from_proto_source('syntax = "proto3"; message X { int32 a = 1; string a = 2; }')
    with pytest.raises(protojit.SchemaError):
        protojit.Schema.from_proto_source('syntax = "proto3"; message X { Missing m = 1; }')
    with pytest.raises(protojit.SchemaError):
        protojit.Schema.from_descriptor_set(b"\x0a\x05\xff\xff\xff\xff\xff")


# --- inputs of the wrong type --------------------------------------------------------------


def test_decoder_takes_bytes(gm1_schema):
    dec = gm1_schema.decoder(GM1)
    for method in (dec.to_dict, dec.to_json, dec.to_text, dec.validate, dec.canonical):
        with pytest.raises(TypeError):
            method("\x10\x07")
        with pytest.raises(TypeError):
            method(None)
        with pytest.raises(TypeError):
            method(7)
    with pytest.raises(TypeError):
        protojit.decode_raw("\x08\x01")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(pa.array([1, 2], pa.int64()), id="int64-array"),
        pytest.param(pa.array(["a"], pa.string()), id="string-array"),
        pytest.param(pa.record_batch([pa.array([b"\x10\x07"], pa.binary())], names=["raw"]), id="record-batch"),
        pytest.param(pa.table({"raw": pa.array([b"\x10\x07"], pa.binary())}), id="table"),
        pytest.param(pa.chunked_array([pa.array([1], pa.int32())]), id="int-chunked-array"),
        pytest.param(b"\x10\x07", id="one-bytes-object"),
        pytest.param("\x10\x07", id="str"),
        pytest.param([b"\x10\x07", "\x10\x07"], id="list-with-a-str"),
        pytest.param([1, 2], id="list-of-int"),
        pytest.param(42, id="int"),
        pytest.param({"a": b""}, id="dict"),
    ],
)
def test_converter_refuses_what_is_not_records(gm1_schema, data):
    with pytest.raises(TypeError):
        gm1_schema.converter(GM1).to_record_batch(data)


# --- records that do not decode ------------------------------------------------------------


BAD = f_varint(2, 7) + tag(1, 2) + b"\x05ab"  # field2 = 7, then field1 announces 5 bytes, 2 follow


def test_bad_record_in_a_batch(gm1_schema, good):
    conv = gm1_schema.converter(GM1)
    with pytest.raises(protojit.DecodeError) as info:
        conv.to_record_batch(good[:3] + [BAD] + good[3:])
    e = info.value
    assert e.record == 3
    assert e.kind in ("truncated", "length_out_of_bounds")
    assert 2 <= e.offset <= len(BAD)
    assert "record 4" in e.message
    assert str(e) == e.message or e.message in str(e)
    # The same record alone through the decoder: no record index, the same fault.
    with pytest.raises(protojit.DecodeError) as info:
        gm1_schema.decoder(GM1).to_dict(BAD)
    assert info.value.record is None
    assert info.value.kind == e.kind
    assert info.value.offset == e.offset


def test_errors_skip(gm1_schema, good):
    conv = gm1_schema.converter(GM1, errors="skip")
    batch = conv.to_record_batch([BAD] + good[:2] + [BAD, BAD] + good[2:])
    assert batch.num_rows == len(good)
    assert batch.schema.metadata[b"protojit.skipped"] == b"3"
    assert conv.skipped == 3
    expected = gm1_schema.converter(GM1).to_record_batch(good)
    assert batch.equals(expected)
    # Counted over every call; each batch says its own count.
    batch = conv.to_record_batch(good)
    assert batch.schema.metadata[b"protojit.skipped"] == b"0"
    table = conv.to_record_batch(pa.chunked_array([[BAD], [b"\x10\x01", BAD]], pa.binary()))
    assert table.num_rows == 1
    assert table.schema.metadata[b"protojit.skipped"] == b"2"
    assert conv.skipped == 5
    # errors="raise" puts no count in the metadata.
    plain = gm1_schema.converter(GM1).to_record_batch(good)
    assert b"protojit.skipped" not in (plain.schema.metadata or {})


def test_nulls(gm1_schema, good):
    batch = gm1_schema.converter(GM1).to_record_batch([good[0], None])
    assert batch.num_rows == 2
    assert all(batch.column(i)[1].as_py() is None for i in range(batch.num_columns))
    conv = gm1_schema.converter(GM1, nulls="error")
    with pytest.raises(protojit.DecodeError) as info:
        conv.to_record_batch(pa.array([good[0], good[1], None], pa.binary()))
    assert info.value.kind == "null_record"
    assert info.value.record == 2
    assert conv.to_record_batch(good).num_rows == len(good)


@pytest.mark.parametrize(
    "data, kinds",
    [
        pytest.param(b"\x10", {"truncated"}, id="varint-cut"),
        pytest.param(b"\x10" + b"\xff" * 10 + b"\x01", {"varint_too_long"}, id="varint-too-long"),
        pytest.param(b"\x00\x01", {"field_number_zero"}, id="field-zero"),
        pytest.param(b"\x0e\x01", {"invalid_wire_type"}, id="wire-type-6"),
        pytest.param(b"\x0f\x01", {"invalid_wire_type"}, id="wire-type-7"),
        pytest.param(tag(1000, 4), {"unmatched_end_group"}, id="end-group-at-top"),
        pytest.param(tag(1000, 3) + f_varint(1, 1), {"unterminated_group", "truncated"}, id="unterminated-group"),
        pytest.param(tag(1000, 3) + tag(1001, 4), {"unmatched_end_group"}, id="mismatched-end-group"),
        pytest.param(f_bytes(1, b"\xff\xfe"), {"invalid_utf8"}, id="invalid-utf8-proto3"),
        pytest.param(tag(1, 2) + b"\xff\xff\xff\xff\x0f", {"length_out_of_bounds", "truncated"}, id="length-past-end"),
        pytest.param(b"\x80\x80\x80\x80\x80\x01", {"tag_too_long", "varint_too_long"}, id="tag-too-long"),
        pytest.param(f_bytes(15, b"\x10"), {"truncated"}, id="nested-truncated"),
    ],
)
def test_decode_error_kinds(gm1_schema, data, kinds):
    with pytest.raises(protojit.DecodeError) as info:
        gm1_schema.decoder(GM1).validate(data)
    assert info.value.kind in kinds, info.value.message
    assert info.value.record is None
    assert 0 <= info.value.offset <= len(data)
    with pytest.raises(protojit.DecodeError) as info:
        gm1_schema.converter(GM1).to_record_batch([b"", data])
    assert info.value.kind in kinds, info.value.message
    assert info.value.record == 1


def test_depth_limit(kinds_schema):
    node = b""
    for depth in range(6):
        node = f_varint(1, depth) + (f_bytes(2, node) if node else b"")
    data = f_bytes(104, node)  # kinds.Kinds.node: 7 messages deep with the root
    assert kinds_schema.decoder("kinds.Kinds").to_dict(data)["node"]["next"]["value"] == 4
    with pytest.raises(protojit.DecodeError) as info:
        kinds_schema.decoder("kinds.Kinds", max_depth=3).to_dict(data)
    assert info.value.kind == "depth_limit_exceeded"
    with pytest.raises(protojit.DecodeError) as info:
        kinds_schema.converter("kinds.Kinds", max_depth=3).to_record_batch([data])
    assert info.value.kind == "depth_limit_exceeded"


# --- keywords ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        dict(enums="x"),
        dict(strings="x"),
        dict(threads=0),
        dict(max_recursion=0),
        dict(path="x"),
        dict(framing="x"),
        dict(engine="x"),
        dict(nulls="x"),
        dict(errors="x"),
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
def test_bad_keyword_values_name_the_keyword(gm1_schema, kw):
    (name,) = kw
    with pytest.raises(ValueError, match=name) as info:
        gm1_schema.converter(GM1, **kw)
    assert not isinstance(info.value, protojit.SchemaError)


@pytest.mark.parametrize("keyword", ["threads", "max_recursion", "max_depth"])
def test_negative_numbers_are_value_errors_naming_the_keyword(gm1_schema, keyword):
    """"Bad values raise ValueError saying what to use": a negative count too."""
    with pytest.raises(ValueError, match=keyword):
        gm1_schema.converter(GM1, **{keyword: -1})


@pytest.mark.parametrize("keyword", ["batch_size", "max_record"])
def test_negative_read_delimited_numbers_are_value_errors(gm1_schema, keyword):
    with pytest.raises(ValueError, match=keyword):
        gm1_schema.converter(GM1).read_delimited(b"", **{keyword: -1})


def test_schema_id_column_needs_schema_registry(gm1_schema):
    with pytest.raises(ValueError, match="schema_id_column"):
        gm1_schema.converter(GM1, schema_id_column="sid")


def test_decoder_bad_engine(gm1_schema):
    with pytest.raises(ValueError, match="engine"):
        gm1_schema.decoder(GM1, engine="x")


def test_unknown_keyword_is_a_type_error(gm1_schema):
    with pytest.raises(TypeError):
        gm1_schema.converter(GM1, no_such_keyword=1)


# --- encoding ------------------------------------------------------------------------------


def test_encoder_errors(gm1_schema):
    enc = gm1_schema.encoder(GM1)
    with pytest.raises(protojit.EncodeError):
        enc.from_json('{"noSuchField": 1}')
    with pytest.raises(protojit.EncodeError):
        enc.from_dict({"noSuchField": 1})
    with pytest.raises(protojit.EncodeError):
        enc.from_json("{not json")
    with pytest.raises(protojit.EncodeError):
        enc.from_json('{"field2": "not a number"}')
    with pytest.raises(protojit.EncodeError):
        enc.from_dict({"field2": 2**40})  # an int32 out of range
    with pytest.raises(protojit.EncodeError):
        enc.from_text("no_such_field: 1")
    with pytest.raises(protojit.EncodeError):
        enc.from_text("field2: ")
    with pytest.raises(TypeError):
        enc.from_json(123)
    # Unknown fields are ignored where asked.
    lenient = gm1_schema.encoder(GM1, ignore_unknown_fields=True)
    assert lenient.from_json('{"noSuchField": 1, "field2": 7}') == b"\x10\x07"
    assert lenient.from_dict({"noSuchField": [1, {"a": None}], "field2": 7}) == b"\x10\x07"


def test_from_dict_value_types(gm1_schema):
    enc = gm1_schema.encoder(GM1)
    with pytest.raises(TypeError):
        enc.from_dict({"field1": {1, 2}})
    with pytest.raises(TypeError):
        enc.from_dict({"field1": object()})
    with pytest.raises(TypeError):
        enc.from_dict({1.5: "x"})
    # What from_dict takes: the values MessageToDict returns.
    assert enc.from_dict({"field2": 7, "field1": "x"}) == enc.from_json('{"field2": 7, "field1": "x"}')
    assert enc.from_dict({"field2": 7.0}) == b"\x10\x07"


def test_self_containing_values_are_an_error_not_a_crash(gm1_schema):
    enc = gm1_schema.encoder(GM1)
    d: dict = {"field2": 1}
    d["field15"] = d
    with pytest.raises(protojit.EncodeError):
        enc.from_dict(d)
    lst: list = []
    lst.append(lst)
    with pytest.raises(protojit.EncodeError):
        enc.from_dict({"field1": lst})
    with pytest.raises(protojit.EncodeError):
        enc.from_dict({"unknown": lst})
    with pytest.raises(protojit.EncodeError):
        gm1_schema.encoder(GM1, ignore_unknown_fields=True).from_dict({"unknown": lst})
    # A top level that is not an object.
    for value in (123, [], "x", None):
        with pytest.raises((protojit.EncodeError, TypeError)):
            enc.from_dict(value)


def nested_nodes(depth: int) -> dict:
    node: dict = {"value": depth}
    for i in range(depth - 1):
        node = {"value": i + 1, "next": node}
    return {"node": node}


def test_encoder_max_depth(kinds_schema):
    """Deep but finite nesting: encoded up to max_depth, an EncodeError past it (and past
    the default), not a crash."""
    enc = kinds_schema.encoder("kinds.Kinds")
    data = enc.from_dict(nested_nodes(50))
    assert kinds_schema.decoder("kinds.Kinds").to_dict(data) == nested_nodes(50)
    with pytest.raises(protojit.EncodeError):
        kinds_schema.encoder("kinds.Kinds", max_depth=10).from_dict(nested_nodes(50))
    with pytest.raises(protojit.EncodeError):
        enc.from_dict(nested_nodes(300))
    with pytest.raises(protojit.EncodeError):
        enc.from_dict(nested_nodes(100_000))
    with pytest.raises(protojit.EncodeError):
        enc.from_json('{"node":' * 100_000 + "{}" + "}" * 100_000)


def test_decoder_default_depth_limit(kinds_schema):
    """The default nesting limit (100) holds on every path: a DecodeError, not a crash."""
    deep = b""
    for _ in range(5000):
        deep = pjtest.f_bytes(2, deep)
    data = pjtest.f_bytes(104, deep)
    with pytest.raises(protojit.DecodeError) as info:
        kinds_schema.decoder("kinds.Kinds").validate(data)
    assert info.value.kind == "depth_limit_exceeded"
    for path in ("auto", "chunked", "compiled", "direct", "tree"):
        with pytest.raises(protojit.DecodeError) as info:
            kinds_schema.converter("kinds.Kinds", path=path).to_record_batch([data])
        assert info.value.kind == "depth_limit_exceeded", path


@pytest.mark.parametrize(
    "label, data",
    [
        ("timestamp after 9999", f_bytes(111, f_varint(1, 253402300800))),
        ("timestamp before 0001", f_bytes(111, f_varint(1, -62135596801))),
        ("timestamp nanos out of range", f_bytes(111, f_varint(2, 1_000_000_000))),
        ("duration past 10000 years", f_bytes(112, f_varint(1, 315576000001))),
        ("any of an unknown type", f_bytes(113, f_bytes(1, b"type.googleapis.com/no.such.Type") + f_bytes(2, b"\x08\x01"))),
        ("any with a type url without a slash", f_bytes(113, f_bytes(1, b"type.googleapis.com.kinds.Leaf"))),
        ("value that is NaN", f_bytes(115, pjtest.f_fixed64(2, b"\x00\x00\x00\x00\x00\x00\xf8\x7f"))),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_messages_without_json_form(kinds_schema, label, data):
    """A message that has no proto3 JSON form (json_format.MessageToDict refuses it too):
    EncodeError, from to_json and to_dict alike."""
    ref = pjtest.reference(kinds_schema)
    from google.protobuf import json_format

    with pytest.raises(Exception):
        json_format.MessageToDict(ref.cls("kinds.Kinds").FromString(data), descriptor_pool=ref.pool)
    dec = kinds_schema.decoder("kinds.Kinds")
    dec.validate(data)  # the binary is fine
    with pytest.raises(protojit.EncodeError):
        dec.to_json(data)
    with pytest.raises(protojit.EncodeError):
        dec.to_dict(data)
