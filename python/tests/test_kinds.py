"""Random messages of every field kind (python/tests/data/kinds.proto, proto3, and
kinds2.proto, proto2), built and serialized with google.protobuf, decoded by protojit:
dicts and JSON against ``json_format.MessageToDict``, Arrow rows against the documented
mapping, and encoding back.

The Arrow mapping (arrow/src/lib.rs, "The mapping") differs from the JSON one by design;
the expected rows here are MessageToDict's values (``preserving_proto_field_name``,
``always_print_fields_with_no_presence``) normalised by these documented differences:

- 64-bit integers: ``Int64``/``UInt64`` numbers, not decimal strings;
- ``float``: ``Float32`` (the exact 32-bit value), not its shortest decimal; NaN and the
  infinities are floats, not the strings "NaN", "Infinity";
- ``bytes``: ``Binary``, not base64;
- enums: dictionary of value names; an undeclared number of an open enum as its decimal
  text ("99"), where JSON has the number;
- maps: ``Map`` entries (key, value) in wire order (google.protobuf writes them sorted by
  key with ``deterministic=True``); JSON has an object with string keys;
- Timestamp / Duration: ``timestamp[ns, UTC]`` / ``duration[ns]`` (compared as integer
  nanoseconds), null outside 64-bit nanoseconds (before 1677, after 2262); JSON has RFC 3339
  text and "1.5s";
- wrappers: the wrapped value (as JSON), null when absent;
- a message without fields (kinds.Nothing): ``Boolean`` true when present, not ``{}``;
- an absent message, an absent field with presence (proto2, proto3 ``optional``, oneof
  member): null, where JSON leaves the key out; an absent proto3 field without presence:
  its default (as ``always_print_fields_with_no_presence`` prints it); repeated and map
  fields: empty lists, never null;
- Any, Struct, Value, ListValue and FieldMask: the structs they are (``type_url`` and
  ``value`` bytes; ``fields`` map; the ``kind`` oneof members; ``values``; ``paths``), not
  their special JSON forms; those columns are compared with the message's own fields;
- extensions and unknown fields: not converted (JSON prints extensions as "[pkg.ext]");
- recursive types: the field that would nest a type a fourth time (``max_recursion=3``) is
  left out of the schema, and of the expected rows.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import struct

import pyarrow as pa
import pytest
from google.protobuf import duration_pb2, json_format, text_format, timestamp_pb2

import protojit
import pjtest
from pjtest import FD, JSON_KWARGS

N_KINDS = 120
N_KINDS2 = 80
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

STRUCT_LIKE_WKT = {
    "google.protobuf.Any",
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.FieldMask",
}
WRAPPERS = {
    f"google.protobuf.{n}Value" for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
}
INT64_TYPES = {FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_SINT64, FD.TYPE_FIXED64, FD.TYPE_SFIXED64}


# --- the messages -----------------------------------------------------------------------------

TYPES = {"kinds": ("kinds.proto", "kinds.Kinds", N_KINDS), "kinds2": ("kinds2.proto", "kinds2.Kinds2", N_KINDS2)}


@functools.lru_cache(maxsize=None)
def messages(which: str):
    """(schema, reference, type name, [messages], [bytes]): an empty message, a full one,
    then random ones (seeded)."""
    proto, name, n = TYPES[which]
    schema = pjtest.data_schema(proto)
    ref = pjtest.reference(schema)
    cls = ref.cls(name)
    msgs = []
    for i in range(n):
        m = cls()
        if which == "kinds2" or i > 0:
            fill = 1.0 if i == 1 else 0.6
            pjtest.Generator(seed=1000 * i + len(which), fill=fill).fill_message(m)
        if which == "kinds2" and i % 3 == 0:
            add_extensions(ref, m, i)
        msgs.append(m)
    data = [m.SerializeToString(deterministic=True) for m in msgs]
    # The reference is what google.protobuf parses from the bytes (a message built in
    # memory can differ from it: an extension set to an empty list is "present").
    return schema, ref, name, [cls.FromString(b) for b in data], data


def add_extensions(ref, m, i):
    ext = lambda n: ref.pool.FindExtensionByName(f"kinds2.{n}")  # noqa: E731
    m.Extensions[ext("ext_int32")] = -i
    m.Extensions[ext("ext_string")] = f"ext é {i}"
    m.Extensions[ext("ext_sizes")].extend([1, 3][: i % 3])
    if i % 2:
        m.Extensions[ext("ext_part")].id = i


# --- dicts, JSON, text, encoding back -----------------------------------------------------------


@pytest.mark.parametrize("kw", JSON_KWARGS, ids=pjtest.json_kwargs_id)
@pytest.mark.parametrize("which", sorted(TYPES))
def test_to_dict_and_to_json_match_message_to_dict(which, kw):
    schema, ref, name, msgs, data = messages(which)
    dec = schema.decoder(name)
    desc = ref.pool.FindMessageTypeByName(name)
    problems = []  # every message is checked; the failure lists them all
    for i, (m, b) in enumerate(zip(msgs, data)):
        # MessageToDict, with the one documented difference (Decoder.to_dict's docstring in
        # python/protojit/__init__.pyi): a NullValue field is None, also where
        # use_integers_for_enums=True makes MessageToDict print a number.
        expected = pjtest.null_values_as_none(json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw), desc, kw, ref.pool)
        d = pjtest.first_difference(dec.to_dict(b, **kw), expected)
        if d:
            problems.append(f"message {i}: to_dict differs at {d} (bytes {b.hex()})")
        d = pjtest.first_difference(json.loads(dec.to_json(b, **kw)), expected)
        if d:
            problems.append(f"message {i}: to_json differs at {d} (bytes {b.hex()})")
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(p[:400] for p in problems)


@pytest.mark.parametrize("bits", [0x00000001, 0x00000100, 0x000FFFFF, 0x807FFFFF, 0x007FFFFF, 0x00800000, 0x3DCCCCCD, 0x7F7FFFFF])
def test_float_values_as_message_to_dict(bits):
    """``float`` values come out as json_format writes them (ToShortestFloat: at least 6
    significant digits, more until the value reads back), denormals included."""
    schema = protojit.Schema.from_proto_source('syntax = "proto3"; message M { float f = 1; }', "f.proto")
    data = b"\x0d" + struct.pack("<I", bits)
    m = pjtest.pb_class(schema, "M").FromString(data)
    expected = json_format.MessageToDict(m)
    assert schema.decoder("M").to_dict(data) == expected
    assert json.loads(schema.decoder("M").to_json(data)) == expected


NULL_SCHEMA = (
    'syntax = "proto3"; package n; import "google/protobuf/struct.proto"; import "google/protobuf/any.proto";'
    " message M {"
    "  google.protobuf.NullValue n = 1; optional google.protobuf.NullValue o = 2;"
    "  repeated google.protobuf.NullValue r = 3; map<string, google.protobuf.NullValue> mp = 4;"
    "  oneof k { google.protobuf.NullValue on = 5; int32 x = 6; }"
    "  M sub = 7; repeated M subs = 8; map<int32, M> msub = 9;"
    "  google.protobuf.Value val = 10; repeated google.protobuf.Value vals = 11;"
    "  google.protobuf.Any any = 12; int32 i = 13; }"
)
K = pjtest


def null_cases():
    """(label, bytes, what protojit gives with use_integers_for_enums=True and no other
    keyword): NullValue fields of every kind, 0 and undeclared numbers."""
    url = b"type.googleapis.com/n.M"
    return [
        ("absent", b"", {}),
        ("implicit zero on the wire", K.f_varint(1, 0), {}),
        ("implicit undeclared", K.f_varint(1, 5), {"n": None}),
        ("optional zero", K.f_varint(2, 0), {"o": None}),
        ("both", K.f_varint(1, 0) + K.f_varint(2, 0) + K.f_varint(13, 3), {"o": None, "i": 3}),
        ("repeated", K.f_bytes(3, K.packed([0, 0, 7])), {"r": [None, None, None]}),
        ("map values", K.f_bytes(4, K.f_bytes(1, b"a") + K.f_varint(2, 0)) + K.f_bytes(4, K.f_bytes(1, b"b") + K.f_varint(2, 3)), {"mp": {"a": None, "b": None}}),
        ("oneof zero", K.f_varint(5, 0), {"on": None}),
        ("oneof undeclared", K.f_varint(5, 9), {"on": None}),
        ("nested", K.f_bytes(7, K.f_varint(2, 0) + K.f_bytes(3, K.packed([0]))), {"sub": {"o": None, "r": [None]}}),
        ("repeated and map messages", K.f_bytes(8, K.f_varint(5, 0)) + K.f_bytes(9, K.f_varint(1, 1) + K.f_bytes(2, K.f_varint(2, 0))), {"subs": [{"on": None}], "msub": {"1": {"o": None}}}),
        ("in an Any", K.f_bytes(12, K.f_bytes(1, url) + K.f_bytes(2, K.f_varint(2, 0) + K.f_varint(13, 4))), {"any": {"@type": url.decode(), "o": None, "i": 4}}),
        ("Value null (not a NullValue field of the message)", K.f_bytes(10, K.f_varint(1, 0)) + K.f_bytes(11, K.f_varint(1, 0)), {"val": None, "vals": [None]}),
    ]


@pytest.mark.parametrize("kw", JSON_KWARGS, ids=pjtest.json_kwargs_id)
def test_null_value_fields_as_message_to_dict(kw):
    """A field of enum type google.protobuf.NullValue (singular, optional, oneof member,
    repeated, map value, nested, inside an Any): MessageToDict, except for the documented
    difference (Decoder.to_dict in python/protojit/__init__.pyi): protojit gives None
    whatever the keywords; MessageToDict gives the number with use_integers_for_enums."""
    schema = protojit.Schema.from_proto_source(NULL_SCHEMA, "n.proto")
    ref = pjtest.reference(schema)
    desc = ref.pool.FindMessageTypeByName("n.M")
    dec = schema.decoder("n.M")
    for label, data, _ in null_cases():
        m = ref.cls("n.M").FromString(data)
        expected = pjtest.null_values_as_none(json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw), desc, kw, ref.pool)
        pjtest.assert_same(dec.to_dict(data, **kw), expected, f"{label}: to_dict")
        pjtest.assert_same(json.loads(dec.to_json(data, **kw)), expected, f"{label}: to_json")


@pytest.mark.parametrize("label", [c[0] for c in null_cases()])
def test_null_value_fields_are_none_with_integers_for_enums(label):
    """The documented difference itself, spelled out: with use_integers_for_enums=True a
    NullValue field is None (JSON null), never a number, in every position; the JSON text
    says null."""
    _, data, want = next(c for c in null_cases() if c[0] == label)
    schema = protojit.Schema.from_proto_source(NULL_SCHEMA, "n.proto")
    dec = schema.decoder("n.M")
    assert dec.to_dict(data, use_integers_for_enums=True) == want
    assert json.loads(dec.to_json(data, use_integers_for_enums=True)) == want
    # Without the keyword MessageToDict agrees (null); with it, the normalisation is what
    # bridges MessageToDict's numbers (so it must change something where a NullValue is
    # printed, and nothing else).
    ref = pjtest.reference(schema)
    m = ref.cls("n.M").FromString(data)
    assert dec.to_dict(data) == json_format.MessageToDict(m, descriptor_pool=ref.pool)
    printed = json_format.MessageToDict(m, descriptor_pool=ref.pool, use_integers_for_enums=True)
    kw = dict(use_integers_for_enums=True)
    normalised = pjtest.null_values_as_none(printed, ref.pool.FindMessageTypeByName("n.M"), kw, ref.pool)
    assert normalised == want


def test_null_value_normalisation_is_exact():
    """pjtest.null_values_as_none changes only NullValue fields, only with
    use_integers_for_enums=True: other enum numbers, and everything without the keyword,
    stay as MessageToDict prints them."""
    schema = protojit.Schema.from_proto_source(
        'syntax = "proto3"; import "google/protobuf/struct.proto"; enum E { E0 = 0; E1 = 1; }'
        " message M { E e = 1; repeated E r = 2; map<string, E> m = 3; google.protobuf.NullValue n = 4; }",
        "e.proto",
    )
    ref = pjtest.reference(schema)
    desc = ref.pool.FindMessageTypeByName("M")
    data = K.f_varint(1, 1) + K.f_bytes(2, K.packed([0, 1, 9])) + K.f_bytes(3, K.f_bytes(1, b"k") + K.f_varint(2, 1)) + K.f_varint(4, 3)
    m = ref.cls("M").FromString(data)
    for kw in JSON_KWARGS:
        printed = json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw)
        got = pjtest.null_values_as_none(printed, desc, kw, ref.pool)
        nkey = "n"
        if kw["use_integers_for_enums"]:
            assert printed[nkey] == 3
            assert got == {**printed, nkey: None}
        else:
            assert got == printed
        assert schema.decoder("M").to_dict(data, **kw) == got


@pytest.mark.parametrize("which", sorted(TYPES))
def test_json_indent(which):
    schema, ref, name, msgs, data = messages(which)
    dec = schema.decoder(name)
    b = data[1]
    pretty = dec.to_json(b, indent=2)
    assert "\n" in pretty and "\n  \"" in pretty
    assert "\n" not in dec.to_json(b)
    assert json.loads(pretty) == json.loads(dec.to_json(b))


@pytest.mark.parametrize("which", sorted(TYPES))
def test_encoder_round_trips(which):
    """from_dict(MessageToDict(m)) and from_json(MessageToJson(m)) parse (google.protobuf)
    to what json_format.ParseDict / Parse make of the same dict and JSON (that is m, but
    where JSON loses something: an undeclared NullValue number is JSON null); and
    from_text(to_text(bytes)) parses to m. Messages compare up to the bytes inside Any
    values, which hold map entries in the writer's order."""
    schema, ref, name, msgs, data = messages(which)
    dec, enc, cls = schema.decoder(name), schema.encoder(name), ref.cls(name)
    problems = []
    for i, (m, b) in enumerate(zip(msgs, data)):
        where = f"message {i}"
        for kw in (JSON_KWARGS[0], JSON_KWARGS[3]):
            d = json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw)
            try:
                expected = json_format.ParseDict(d, cls(), descriptor_pool=ref.pool)
            except json_format.ParseError:
                # json_format refuses some of its own output (FLT_MAX written as
                # 3.4028235e+38 is "too large" for it): then the reference is the
                # original, with what JSON loses lost (a NullValue is null, read as 0,
                # unless written as a number).
                expected = cls()
                expected.CopyFrom(m)
                for f, _ in m.ListFields():
                    if f.enum_type is not None and f.enum_type.full_name == "google.protobuf.NullValue" and not kw["use_integers_for_enums"]:
                        setattr(expected, f.name, 0)
            if not pjtest.same_message(cls.FromString(enc.from_dict(d)), expected):
                problems.append(f"{where}: from_dict({kw})")
            j = json_format.MessageToJson(m, descriptor_pool=ref.pool, **kw)
            if not pjtest.same_message(cls.FromString(enc.from_json(j)), expected):
                problems.append(f"{where}: from_json({kw})")
        if not pjtest.same_message(cls.FromString(enc.from_text(dec.to_text(b))), m):
            problems.append(f"{where}: from_text(to_text)")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


@pytest.mark.parametrize("which", sorted(TYPES))
def test_canonical(which):
    """canonical(bytes) is upb's deterministic encoding (the bytes were written with
    deterministic=True, so canonical leaves them as they are), except that upb writes a
    message's extensions in its own order where protojit writes every field in number
    order: there the two parse to the same message."""
    schema, ref, name, msgs, data = messages(which)
    dec, cls = schema.decoder(name), ref.cls(name)
    for i, (m, b) in enumerate(zip(msgs, data)):
        canonical = dec.canonical(b)
        numbers = [n for n, _ in pjtest.wire_fields(canonical)]
        assert numbers == sorted(numbers), f"message {i} ({b.hex()}): fields out of number order"
        if any(f.is_extension for f, _ in m.ListFields()):
            assert cls.FromString(canonical) == m, f"message {i} ({b.hex()})"
        else:
            assert canonical == b, f"message {i} ({b.hex()})"


@pytest.mark.parametrize("which", sorted(TYPES))
def test_from_text_reads_python_text_format(which):
    """Encoder.from_text reads what text_format.MessageToString writes."""
    schema, ref, name, msgs, data = messages(which)
    enc, cls = schema.encoder(name), ref.cls(name)
    for i, m in enumerate(msgs[:40]):
        text = text_format.MessageToString(m, descriptor_pool=ref.pool)
        assert pjtest.same_message(cls.FromString(enc.from_text(text)), m), f"message {i}: {text[:300]!r}"


# --- hand-made wire data: what a serializer does not write but a parser must read ---------------

K = pjtest


def edge_cases():
    inner_a = K.f_varint(1, 5)
    inner_b = K.f_bytes(2, "bé".encode())
    return {
        "kinds": [
            ("unknown fields of every wire type", K.f_varint(3, 7) + K.f_varint(9999, 1) + K.f_bytes(10000, b"xyz") + K.f_fixed32(10001, b"\0\0\0\1") + K.f_fixed64(10002, b"\0" * 8) + K.tag(10003, 3) + K.f_varint(1, 1) + K.tag(10003, 4)),
            ("explicit proto3 defaults", K.f_varint(3, 0) + K.f_bytes(14, b"") + K.f_varint(13, 0) + K.f_varint(16, 0)),
            ("a packed field unpacked", K.f_varint(43, 1) + K.f_varint(43, -2) + K.f_varint(43, 3)),
            ("an unpacked field packed", K.f_bytes(61, K.packed([1, -2, 3])) + K.f_varint(61, 4)),
            ("packed runs split", K.f_bytes(43, K.packed([1, 2])) + K.f_bytes(43, K.packed([3]))),
            ("open enum: undeclared numbers", K.f_varint(16, 99) + K.f_bytes(54, K.packed([1, 77, -7, -8])) + K.f_varint(36, 12345)),
            ("oneof: the last member wins", K.f_bytes(92, b"first") + K.f_varint(93, 42)),
            ("oneof: message then scalar then message", K.f_bytes(91, inner_a) + K.f_varint(93, 1) + K.f_bytes(91, inner_b)),
            ("message split in two", K.f_bytes(101, inner_a) + K.f_bytes(101, inner_b)),
            ("scalar repeated on the wire: the last wins", K.f_varint(3, 1) + K.f_varint(3, 2) + K.f_bytes(14, b"a") + K.f_bytes(14, b"b")),
            ("int32 written as a 10-byte negative varint", K.f_varint(3, -1) + K.f_varint(5, 2**32 + 5)),
            ("map entry without key or value", K.f_bytes(71, b"") + K.f_bytes(72, K.f_varint(1, 3))),
            ("map entry value before key", K.f_bytes(71, K.f_bytes(2, b"v") + K.f_varint(1, 9))),
            ("empty message present", K.f_bytes(103, b"") + K.f_bytes(101, b"")),
            ("the largest field number", K.f_varint(536870911, 17)),
            ("unknown fields out of number order, around known ones", K.f_varint(9999, 1) + K.f_varint(3, 7) + K.f_bytes(5000, b"x") + K.f_varint(5, 2) + K.f_varint(4000, 3) + K.f_fixed32(4500, b"\0\0\0\2")),
            ("unknown fields inside a nested message", K.f_bytes(101, K.f_varint(77, 1) + K.f_bytes(2, b"x") + K.f_varint(66, 2) + K.f_varint(1, 5)) + K.f_varint(3, 1)),
            ("timestamps at the ns range ends", K.f_bytes(111, K.f_varint(1, -9223372036) + K.f_varint(2, 854775808)) + K.f_bytes(130, K.f_varint(1, 9223372036) + K.f_varint(2, 854775807)) + K.f_bytes(130, K.f_varint(1, 9223372037))),
        ],
        "kinds2": [
            ("closed enum: an undeclared number is unknown", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.f_varint(10, 99)),
            ("closed enum: undeclared numbers in a repeated field", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.f_varint(22, 1) + K.f_varint(22, 99) + K.f_varint(22, 3) + K.f_bytes(22, K.packed([2, 100, 1]))),
            ("closed enum in a oneof", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.f_bytes(50, b"s") + K.f_varint(52, 99)),
            ("group with unknown fields inside", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.tag(30, 3) + K.f_varint(31, 4) + K.f_varint(77, 1) + K.tag(30, 4)),
            ("group repeated and merged", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.tag(30, 3) + K.f_varint(31, 4) + K.tag(30, 4) + K.tag(30, 3) + K.f_bytes(32, b"b") + K.tag(30, 4)),
            ("repeated groups", K.f_varint(1, 1) + K.f_bytes(2, b"n") + (K.tag(33, 3) + K.f_varint(34, 1) + K.tag(33, 4)) * 3),
            ("extensions of every kind", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.f_varint(100, -5) + K.f_bytes(101, "é".encode()) + K.f_varint(102, 2) + K.f_varint(102, 3) + K.f_bytes(103, K.f_varint(1, 8))),
            ("unknown proto2 string is not UTF-8 checked", K.f_varint(1, 1) + K.f_bytes(2, b"n") + K.f_bytes(99, b"\xff\xfe")),
        ],
    }


def edge_ids():
    return [f"{w}: {n}" for w, cases in edge_cases().items() for n, _ in cases]


@pytest.mark.parametrize("case", edge_ids())
def test_edge_cases_match_message_to_dict_and_arrow(case):
    which, _, label = case.partition(": ")
    data = dict(edge_cases()[which])[label]
    schema, ref, name, _, _ = messages(which)
    m = ref.cls(name).FromString(data)
    dec = schema.decoder(name)
    desc = ref.pool.FindMessageTypeByName(name)
    for kw in JSON_KWARGS:
        # With the documented NullValue difference (Decoder.to_dict's docstring,
        # python/protojit/__init__.pyi): with use_integers_for_enums and defaults,
        # MessageToDict prints the NullValue field's 0, protojit None.
        expected = pjtest.null_values_as_none(json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw), desc, kw, ref.pool)
        pjtest.assert_same(dec.to_dict(data, **kw), expected, f"to_dict({kw})")
    conv = schema.converter(name)
    batch = conv.to_record_batch([data])
    check_rows(batch, [m], ref, name, maps_ordered=False)


@pytest.mark.parametrize("case", edge_ids())
def test_edge_cases_canonical(case):
    """Decoder.canonical as its docstring says: "known fields in number order, as protobuf
    writes them, then the unknown fields as they came (as SerializeToString keeps them)"
    (undeclared numbers of closed enums are unknown fields too). Checked against upb: the
    bytes are upb's SerializeToString(deterministic=True), which writes that order, except
    where the message has extensions (upb writes those in its own order); the canonical
    bytes parse to the same message, unknown fields included and in the same order; the
    top-level fields are the known ones in number order, then the unknown ones as upb read
    them; and canonical bytes are their own canonical form."""
    which, _, label = case.partition(": ")
    data = dict(edge_cases()[which])[label]
    schema, ref, name, _, _ = messages(which)
    cls, dec = ref.cls(name), schema.decoder(name)
    m = cls.FromString(data)
    canonical = dec.canonical(data)
    where = f"canonical({data.hex()}) = {canonical.hex()}; upb: {m.SerializeToString(deterministic=True).hex()}"
    again = cls.FromString(canonical)
    assert again == m, where  # (upb's equality counts unknown fields, not their order)
    unknown = pjtest.unknown_fields(m)
    assert pjtest.unknown_fields(again) == unknown, where
    fields = pjtest.wire_fields(canonical)
    known, rest = fields[: len(fields) - len(unknown)], fields[len(fields) - len(unknown) :]
    assert [n for n, _ in known] == sorted(n for n, _ in known), f"known fields out of number order: {where}"
    assert rest == [(n, wt) for n, wt, _ in unknown], f"unknown fields not last, as they came: {where}"
    if not any(f.is_extension for f, _ in m.ListFields()):
        assert canonical == m.SerializeToString(deterministic=True), where
    assert dec.canonical(canonical) == canonical, where


@pytest.mark.parametrize("which", sorted(TYPES))
def test_canonical_keeps_unknown_fields_as_they_came(which):
    """Random messages with unknown fields of every wire type, out of number order, before,
    between and after the known ones: canonical is upb's SerializeToString
    (deterministic=True) of them (the known fields in number order, the unknown ones
    after them in the order they came), or, where the message has extensions, parses to
    the same message with the same unknown fields in the same order."""
    schema, ref, name, msgs, data = messages(which)
    dec, cls = schema.decoder(name), ref.cls(name)
    r = random.Random(len(which))
    unknowns = [
        K.f_varint(9001, 5),
        K.f_bytes(3000, b"abc"),
        K.f_fixed32(8000, b"\x01\x02\x03\x04"),
        K.f_fixed64(2500, b"\xff" * 8),
        K.tag(7000, 3) + K.f_varint(1, 1) + K.f_bytes(2, b"g") + K.tag(7000, 4),
        K.f_varint(9001, 1),
        K.f_bytes(4000, b""),
    ]
    problems = []
    for i, (m0, b) in enumerate(zip(msgs, data)):
        extra = r.sample(unknowns, r.randint(1, len(unknowns)))
        cut = r.randint(0, len(extra))
        with_unknown = b"".join(extra[:cut]) + b + b"".join(extra[cut:])
        m = cls.FromString(with_unknown)
        canonical = dec.canonical(with_unknown)
        if any(f.is_extension for f, _ in m.ListFields()):
            again = cls.FromString(canonical)
            ok = again == m and pjtest.unknown_fields(again) == pjtest.unknown_fields(m)
        else:
            ok = canonical == m.SerializeToString(deterministic=True)
        if not ok:
            problems.append(f"message {i}: canonical({with_unknown.hex()[:200]}...)")
    assert not problems, "\n".join(problems)


def test_map_entries_keep_wire_order():
    """Map entries come in wire order (the documented mapping), not sorted."""
    schema, ref, name, _, _ = messages("kinds")
    keys = [5, -1, 300, 2]
    data = b"".join(K.f_bytes(71, K.f_varint(1, k) + K.f_bytes(2, str(k).encode())) for k in keys)
    data += b"".join(K.f_bytes(82, K.f_bytes(1, k.encode()) + K.f_bytes(2, K.f_varint(1, i))) for i, k in enumerate(["z", "a", "m"]))
    batch = schema.converter(name, select=["m_int32", "m_string"]).to_record_batch([data, data])
    assert pjtest.arrow_values(batch.column("m_int32")) == [[(k, str(k)) for k in keys]] * 2
    got = pjtest.arrow_values(batch.column("m_string"))[0]
    assert [(k, v["a"]) for k, v in got] == [("z", 0), ("a", 1), ("m", 2)]


def test_map_duplicate_keys_keep_the_last_value():
    schema, ref, name, _, _ = messages("kinds")
    data = b"".join(K.f_bytes(71, K.f_varint(1, k) + K.f_bytes(2, v.encode())) for k, v in [(1, "a"), (2, "b"), (1, "c")])
    m = ref.cls(name).FromString(data)
    assert dict(m.m_int32) == {1: "c", 2: "b"}
    assert schema.decoder(name).to_dict(data)["mInt32"] == {"1": "c", "2": "b"}
    row = pjtest.arrow_values(schema.converter(name, select=["m_int32"]).to_record_batch([data]).column(0))[0]
    assert sorted(row) == [(1, "c"), (2, "b")]


# --- Arrow ---------------------------------------------------------------------------------------


def shape(t: pa.DataType):
    """An Arrow type without field names of lists/maps and without nullability."""
    if pa.types.is_struct(t):
        return ("struct", tuple((t.field(i).name, shape(t.field(i).type)) for i in range(t.num_fields)))
    if pa.types.is_map(t):
        return ("map", shape(t.key_type), shape(t.item_type))
    if pa.types.is_list(t):
        return ("list", shape(t.value_type))
    return str(t)


SCALAR_ARROW = {
    FD.TYPE_DOUBLE: "double",
    FD.TYPE_FLOAT: "float",
    FD.TYPE_INT32: "int32",
    FD.TYPE_SINT32: "int32",
    FD.TYPE_SFIXED32: "int32",
    FD.TYPE_INT64: "int64",
    FD.TYPE_SINT64: "int64",
    FD.TYPE_SFIXED64: "int64",
    FD.TYPE_UINT32: "uint32",
    FD.TYPE_FIXED32: "uint32",
    FD.TYPE_UINT64: "uint64",
    FD.TYPE_FIXED64: "uint64",
    FD.TYPE_BOOL: "bool",
    FD.TYPE_STRING: "string",
    FD.TYPE_BYTES: "binary",
    FD.TYPE_ENUM: "dictionary<values=string, indices=int32, ordered=0>",
}


def expected_shape(desc, path=(), max_recursion=3):
    """The documented Arrow shape of a message type's columns, recursive types cut."""
    path = path + (desc.full_name,)
    out = []
    for f in desc.fields:
        nested = f.message_type
        if nested is not None and nested.GetOptions().map_entry:
            nested = nested.fields_by_name["value"].message_type  # a map of messages nests its values
        if nested is not None and path.count(nested.full_name) >= max_recursion:
            continue  # the field that would nest the type once more is left out
        out.append((f.name, field_shape(f, path, max_recursion)))
    return ("struct", tuple(out))


def field_shape(f, path, max_recursion):
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return ("map", value_shape(k, path, max_recursion), value_shape(v, path, max_recursion))
    s = value_shape(f, path, max_recursion)
    return ("list", s) if f.is_repeated else s


def value_shape(f, path, max_recursion):
    if f.message_type is None:
        return SCALAR_ARROW[f.type]
    name = f.message_type.full_name
    if name == "google.protobuf.Timestamp":
        return "timestamp[ns, tz=UTC]"
    if name == "google.protobuf.Duration":
        return "duration[ns]"
    if name in WRAPPERS:
        return value_shape(f.message_type.fields_by_name["value"], path, max_recursion)
    s = expected_shape(f.message_type, path, max_recursion)
    return "bool" if not s[1] else s


@pytest.mark.parametrize("which", sorted(TYPES))
def test_arrow_schema_follows_the_mapping(which):
    schema, ref, name, _, _ = messages(which)
    conv = schema.converter(name)
    got = shape(pa.struct(list(conv.schema)))
    expected = expected_shape(ref.pool.FindMessageTypeByName(name))
    if got != expected:
        names = [n for n, _ in expected[1]]
        for (gn, gs), (en, es) in zip(got[1], expected[1]):
            assert (gn, gs) == (en, es), f"column {gn}"
        assert [n for n, _ in got[1]] == names
    assert conv.message_type == name
    # Cut recursion is noted; kinds2 has none.
    assert bool(conv.notes) == (which == "kinds"), conv.notes


@pytest.mark.parametrize("which", sorted(TYPES))
def test_arrow_nullability(which):
    """With nulls="error" the schema is the mapping's own: fields with presence nullable,
    proto3 fields without presence and repeated fields not; with nulls="null" (the
    default) every top-level field is nullable (a null entry becomes a row of nulls)."""
    schema, ref, name, _, _ = messages(which)
    desc = ref.pool.FindMessageTypeByName(name)
    strict = schema.converter(name, nulls="error").schema
    for f in desc.fields:
        nullable = strict.field(f.name).nullable
        if f.is_repeated:
            assert not nullable, f.name
        else:
            assert nullable == f.has_presence, f.name
    assert all(fld.nullable for fld in schema.converter(name).schema)


def expect_rows(msgs, ref, name, arrow_schema, maps_ordered=True):
    desc = ref.pool.FindMessageTypeByName(name)
    rows = []
    for m in msgs:
        d = json_format.MessageToDict(
            m, descriptor_pool=ref.pool, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        rows.append(expect_message(d, m, desc, pa.struct(list(arrow_schema)), maps_ordered))
    return rows


MISSING = object()


def expect_message(d, m, desc, atype, maps_ordered):
    out = {}
    for i in range(atype.num_fields):
        af = atype.field(i)
        f = desc.fields_by_name[af.name]
        out[af.name] = expect_field(d.get(f.name, MISSING), getattr(m, f.name), m, f, af.type, maps_ordered)
    return out


def expect_field(v, mv, parent, f, atype, maps_ordered):
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        entries = []
        for k in mv:
            key = expect_scalar(k, kf)
            jv = (v if v is not MISSING else {}).get(json_map_key(k), MISSING)
            entries.append((key, expect_value(jv, mv[k], vf, atype.item_type, maps_ordered)))
        # google.protobuf writes map entries sorted by key (deterministic=True), so that is
        # their wire order.
        entries.sort(key=lambda kv: kv[0].encode() if isinstance(kv[0], str) else kv[0])
        return entries if maps_ordered else sorted(entries, key=lambda kv: repr(kv[0]))
    if f.is_repeated:
        vs = v if v is not MISSING else []
        assert len(vs) == len(mv)
        return [expect_value(x, y, f, atype.value_type, maps_ordered) for x, y in zip(vs, mv)]
    if f.has_presence and not parent.HasField(f.name):
        return None
    return expect_value(v, mv, f, atype, maps_ordered)


def json_map_key(k):
    return ("true" if k else "false") if isinstance(k, bool) else str(k)


def expect_value(v, mv, f, atype, maps_ordered):
    """The Arrow value of one value ``mv`` of field ``f`` whose MessageToDict form is ``v``."""
    if f.message_type is None:
        if f.type == FD.TYPE_ENUM or v is MISSING:
            return expect_scalar(mv, f)  # (JSON writes a NullValue as null: no name there)
        return expect_json_scalar(v, f)
    name = f.message_type.full_name
    if name == "google.protobuf.Timestamp":
        t = timestamp_pb2.Timestamp()
        t.FromJsonString(v)
        n = t.ToNanoseconds()
        return n if I64_MIN <= n <= I64_MAX else None
    if name == "google.protobuf.Duration":
        t = duration_pb2.Duration()
        t.FromJsonString(v)
        n = t.ToNanoseconds()
        return n if I64_MIN <= n <= I64_MAX else None
    if name in WRAPPERS:
        return expect_json_scalar(v, f.message_type.fields_by_name["value"])
    if pa.types.is_boolean(atype):
        return True
    if name in STRUCT_LIKE_WKT:
        return expect_from_message(mv, atype)
    return expect_message(v, mv, f.message_type, atype, maps_ordered)


def expect_json_scalar(v, f):
    t = f.type
    if t in INT64_TYPES:
        return int(v)
    if t in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        x = float({"Infinity": "inf", "-Infinity": "-inf"}.get(v, v)) if isinstance(v, str) else float(v)
        return struct.unpack("<f", struct.pack("<f", x))[0] if t == FD.TYPE_FLOAT else x
    if t == FD.TYPE_BYTES:
        return base64.b64decode(v)
    if t == FD.TYPE_ENUM:
        return str(v)  # a name, or an undeclared number as its decimal text
    return v


def expect_scalar(v, f):
    if f.type == FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else str(v)
    return v


def expect_from_message(m, atype):
    """The Arrow value of a message from its own fields (for the types whose JSON form is
    not their struct: Any, Struct, Value, ListValue, FieldMask)."""
    if pa.types.is_boolean(atype):
        return True
    desc = m.DESCRIPTOR
    out = {}
    for i in range(atype.num_fields):
        af = atype.field(i)
        f = desc.fields_by_name[af.name]
        mv = getattr(m, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            entries = [(expect_scalar(k, kf), expect_message_value(mv[k], vf, af.type.item_type)) for k in mv]
            out[af.name] = sorted(entries, key=lambda kv: kv[0].encode() if isinstance(kv[0], str) else kv[0])
        elif f.is_repeated:
            out[af.name] = [expect_message_value(x, f, af.type.value_type) for x in mv]
        elif f.has_presence and not m.HasField(f.name):
            out[af.name] = None
        else:
            out[af.name] = expect_message_value(mv, f, af.type)
    return out


def expect_message_value(v, f, atype):
    if f.message_type is None:
        return expect_scalar(v, f)
    return expect_from_message(v, atype)


def check_rows(batch, msgs, ref, name, maps_ordered=True, where=""):
    expected = expect_rows(msgs, ref, name, batch.schema, maps_ordered)
    assert batch.num_rows == len(msgs)
    for col in batch.schema.names:
        got = pjtest.arrow_values(batch.column(col))
        want = [r[col] for r in expected]
        if not maps_ordered:
            got, want = [_sort_maps(g) for g in got], [_sort_maps(w) for w in want]
        for i, (g, e) in enumerate(zip(got, want)):
            d = pjtest.first_difference(g, e, f"{col}")
            assert d is None, f"{where}row {i} ({msgs[i].SerializeToString().hex()}): {d}"


def _sort_maps(v):
    if isinstance(v, dict):
        return {k: _sort_maps(x) for k, x in v.items()}
    if isinstance(v, list):
        items = [_sort_maps(x) for x in v]
        if items and all(isinstance(x, tuple) for x in items):
            return sorted(items, key=lambda kv: repr(kv[0]))
        return items
    return v


@pytest.mark.parametrize("which", sorted(TYPES))
def test_record_batch_rows_follow_the_mapping(which):
    schema, ref, name, msgs, data = messages(which)
    batch = schema.converter(name).to_record_batch(pa.array(data, pa.binary()))
    assert isinstance(batch, pa.RecordBatch)
    # google.protobuf writes map entries in its own order, which its parsed messages do
    # not tell: map entries are compared by key here, their wire order in
    # test_map_entries_keep_wire_order.
    check_rows(batch, msgs, ref, name, maps_ordered=False)


@pytest.mark.parametrize("path", ["chunked", "compiled", "direct", "tree"])
@pytest.mark.parametrize("which", sorted(TYPES))
def test_every_path_and_engine_gives_the_same_batch(which, path):
    schema, ref, name, msgs, data = messages(which)
    arr = pa.array(data, pa.binary())
    reference_batch = schema.converter(name, path="tree", engine="interp").to_record_batch(arr)
    for engine in ("auto", "jit", "interp"):
        conv = schema.converter(name, path=path, engine=engine)
        assert conv.path in ("chunked", "compiled", "direct", "tree")
        if conv.path != path:
            assert conv.path_note, f"path {path} asked, {conv.path} taken, and no note says why"
        batch = conv.to_record_batch(arr)
        pjtest.assert_batches_equal(batch, reference_batch, f"path={path} engine={engine} ({conv.path})")


def test_enums_as_numbers(kinds_schema):
    schema, ref, name, msgs, data = messages("kinds")
    batch = schema.converter(name, enums="number", select=["f_color", "r_color", "o_color", "m_uint32"]).to_record_batch(data)
    assert batch.schema.field("f_color").type == pa.int32()
    assert batch.column("f_color").to_pylist() == [m.f_color for m in msgs]
    assert batch.column("r_color").to_pylist() == [list(m.r_color) for m in msgs]
    assert batch.column("o_color").to_pylist() == [m.o_color if m.HasField("o_color") else None for m in msgs]
    assert [sorted(e) for e in pjtest.arrow_values(batch.column("m_uint32"))] == [sorted(m.m_uint32.items()) for m in msgs]


def test_strings_as_views(kinds_schema):
    schema, ref, name, msgs, data = messages("kinds")
    cols = ["f_string", "f_bytes", "r_string", "r_bytes", "o_string"]
    views = schema.converter(name, strings="views", select=cols).to_record_batch(pa.array(data, pa.binary()))
    offsets = schema.converter(name, select=cols).to_record_batch(pa.array(data, pa.binary()))
    assert views.schema.field("f_string").type == pa.string_view()
    assert views.schema.field("f_bytes").type == pa.binary_view()
    assert views.schema.field("r_string").type.value_type == pa.string_view()
    for c in cols:
        assert views.column(c).to_pylist() == offsets.column(c).to_pylist(), c
    assert views.column("f_string").to_pylist() == [m.f_string for m in msgs]


def test_well_known_types_as_structs(kinds_schema):
    schema, ref, name, msgs, data = messages("kinds")
    batch = schema.converter(name, well_known_types=False, select=["ts", "dur", "w_int64", "w_string"]).to_record_batch(data)
    assert shape(batch.schema.field("ts").type) == ("struct", (("seconds", "int64"), ("nanos", "int32")))
    assert batch.column("ts").to_pylist() == [
        {"seconds": m.ts.seconds, "nanos": m.ts.nanos} if m.HasField("ts") else None for m in msgs
    ]
    assert batch.column("dur").to_pylist() == [
        {"seconds": m.dur.seconds, "nanos": m.dur.nanos} if m.HasField("dur") else None for m in msgs
    ]
    assert batch.column("w_int64").to_pylist() == [{"value": m.w_int64.value} if m.HasField("w_int64") else None for m in msgs]
    assert batch.column("w_string").to_pylist() == [{"value": m.w_string.value} if m.HasField("w_string") else None for m in msgs]


def test_select(kinds_schema):
    """select= picks columns in its order, and nested paths keep only the named fields."""
    schema, ref, name, msgs, data = messages("kinds")
    conv = schema.converter(name, select=["f_string", "inner.leaf.x", "f_int32", "r_inner.b"])
    batch = conv.to_record_batch(data)
    assert batch.schema.names == ["f_string", "inner", "f_int32", "r_inner"]
    assert shape(batch.schema.field("inner").type) == ("struct", (("leaf", ("struct", (("x", "double"),))),))
    assert shape(batch.schema.field("r_inner").type) == ("list", ("struct", (("b", "string"),)))
    assert batch.column("f_int32").to_pylist() == [m.f_int32 for m in msgs]
    assert batch.column("inner").to_pylist() == [
        ({"leaf": {"x": m.inner.leaf.x} if m.inner.HasField("leaf") else None} if m.HasField("inner") else None)
        for m in msgs
    ]
    assert batch.column("r_inner").to_pylist() == [[{"b": x.b} for x in m.r_inner] for m in msgs]
    with pytest.raises(protojit.SchemaError, match="no_such"):
        schema.converter(name, select=["f_int32", "no_such"])


def test_max_recursion(kinds_schema):
    schema, ref, name, msgs, data = messages("kinds")
    for depth in (1, 2, 5):
        conv = schema.converter(name, select=["node"], max_recursion=depth)
        t = conv.schema.field("node").type
        levels = 0
        while pa.types.is_struct(t):
            levels += 1
            names = [t.field(i).name for i in range(t.num_fields)]
            if "next" not in names:
                break
            t = t.field(names.index("next")).type
        assert levels == depth, f"max_recursion={depth}: {levels} levels of Node"
        assert conv.notes
        batch = conv.to_record_batch(data)
        assert batch.num_rows == len(data)
