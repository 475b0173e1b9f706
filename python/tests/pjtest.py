"""Helpers of protojit's Python suite (conftest.py holds the fixtures): where the shared
corpus is, its payloads and schemas, google.protobuf message classes built from protojit's
own descriptor sets (the reference every differential test compares against), varints and
delimited streams, Arrow arrays as plain Python values."""

from __future__ import annotations

import functools
import os
import re
import random
import struct
from pathlib import Path
from typing import Dict, List, Tuple

import pyarrow as pa
import pytest
from google.protobuf import descriptor as _d
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_encoding

import protojit

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
# python/tests -> python -> the repository root.
REPO = TESTS.parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
SAMPLES = REPO / "corpus" / "samples"
EXPECTED = REPO / "tests" / "expected"

# The corpus payloads, read from the one list of them (tests/common/payloads.rs): schema
# file, message type, payload file.
PAYLOADS: List[Tuple[str, str, str]] = re.findall(
    r'\("([^"]+)", "([^"]+)", "([^"]+)"\)', (REPO / "tests" / "common" / "payloads.rs").read_text()
)

PAYLOAD_IDS = [p for (_, _, p) in PAYLOADS]

# Every combination of json_format's three keywords.
JSON_KWARGS: List[Dict[str, bool]] = [
    dict(
        preserving_proto_field_name=bool(i & 1),
        use_integers_for_enums=bool(i & 2),
        always_print_fields_with_no_presence=bool(i & 4),
    )
    for i in range(8)
]


def json_kwargs_id(kw: Dict[str, bool]) -> str:
    short = {"preserving_proto_field_name": "names", "use_integers_for_enums": "enumints", "always_print_fields_with_no_presence": "defaults"}
    on = [short[k] for k, v in kw.items() if v]
    return "+".join(on) or "plain"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def require_corpus() -> Path:
    """The shared corpus directory; skips the test where it is absent, except in CI, where
    that fails (CI must not pass by skipping)."""
    if CORPUS.is_dir() and (CORPUS / "README.md").is_file():
        return CORPUS
    reason = f"the shared corpus is not at {CORPUS} (expected beside the repository, as ../shared/corpus)"
    if in_ci():
        pytest.fail(reason + "; CI=true, so this is a failure, not a skip")
    pytest.skip(reason)


# --- schemas and google.protobuf classes -------------------------------------------------


@functools.lru_cache(maxsize=None)
def corpus_schema(proto: str) -> protojit.Schema:
    """The schema of a corpus ``.proto`` file. descriptor.proto (the newest syntax, which
    protox refuses; from_proto needs protoc on PATH for it) is read from protoc's
    descriptor set of it, as the Rust tests do (tests/common/mod.rs)."""
    corpus = require_corpus()
    if proto == "descriptor.proto":
        return protojit.Schema.from_descriptor_set(corpus / "descriptor.fds.bin")
    return protojit.Schema.from_proto(corpus / proto)


@functools.lru_cache(maxsize=None)
def data_schema(proto: str) -> protojit.Schema:
    return protojit.Schema.from_proto(DATA / proto)


class Reference:
    """google.protobuf's view of a protojit schema: a fresh descriptor pool holding the
    schema's files (from ``Schema.to_descriptor_set``) and message classes from it."""

    def __init__(self, fds_bytes: bytes):
        self.fds = descriptor_pb2.FileDescriptorSet.FromString(fds_bytes)
        self.pool = descriptor_pool.DescriptorPool()
        for f in self.fds.file:
            self.pool.Add(f)
        self._classes: Dict[str, type] = {}

    def cls(self, name: str):
        if name not in self._classes:
            self._classes[name] = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))
        return self._classes[name]


_references: Dict[int, Tuple[Reference, protojit.Schema]] = {}


def reference(schema: protojit.Schema) -> Reference:
    key = id(schema)
    if key not in _references:
        # The schema is kept with its reference, so that its id is not reused.
        _references[key] = (Reference(schema.to_descriptor_set()), schema)
    return _references[key][0]


def pb_class(schema: protojit.Schema, name: str):
    return reference(schema).cls(name)


@functools.lru_cache(maxsize=None)
def payload_bytes(name: str) -> bytes:
    return (require_corpus() / name).read_bytes()


# --- wire helpers ---------------------------------------------------------------------------


def varint(n: int) -> bytes:
    """The base-128 varint of a non-negative integer."""
    assert n >= 0
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def delimited(records) -> bytes:
    """Records as a varint-delimited stream (what ``writeDelimitedTo`` writes)."""
    return b"".join(varint(len(r)) + r for r in records)


def gm1_proto3_records(n: int) -> List[bytes]:
    """``n`` (at most 20,000) distinct benchmarks.proto3.GoogleMessage1 records: the corpus
    payload with field1 (a string) set to "record-<i>" and field2 (an int32) to i, so that
    rows differ and their order shows. A new list each call."""
    return list(_gm1_records()[:n])


@functools.lru_cache(maxsize=None)
def _gm1_records() -> Tuple[bytes, ...]:
    base = payload_bytes("google_message1_proto3.payload0.bin")
    schema = corpus_schema("benchmark_message1_proto3.proto")
    cls = pb_class(schema, "benchmarks.proto3.GoogleMessage1")
    out = []
    for i in range(20_000):
        m = cls.FromString(base)
        m.field1 = f"record-{i}"
        m.field2 = i
        out.append(m.SerializeToString())
    return tuple(out)


# --- Arrow values as plain Python -----------------------------------------------------------


def arrow_values(arr: pa.Array) -> list:
    """The values of an Arrow array as Python objects, without pyarrow's lossy or
    pandas-dependent conversions: timestamps and durations as int (their unit), dictionary
    arrays as their values, maps as lists of (key, value) tuples, structs as dicts."""
    if isinstance(arr, pa.ChunkedArray):
        out = []
        for c in arr.chunks:
            out.extend(arrow_values(c))
        return out
    t = arr.type
    valid = arr.is_valid().to_pylist() if arr.null_count else [True] * len(arr)
    if pa.types.is_struct(t):
        children = {t.field(i).name: arrow_values(c) for i, c in enumerate(arr.flatten())}
        return [
            {name: vals[i] for name, vals in children.items()} if valid[i] else None for i in range(len(arr))
        ]
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        # `.values` is the whole child (a slice does not cut it); `.offsets` index into it.
        offsets = arr.offsets.to_pylist()
        if pa.types.is_map(t):
            keys, items = (arrow_values(c) for c in arr.values.flatten())
            values = list(zip(keys, items))
        else:
            values = arrow_values(arr.values)
        return [values[offsets[i] : offsets[i + 1]] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_dictionary(t):
        return arrow_values(arr.dictionary_decode())
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return arr.cast(pa.int64()).to_pylist()
    return arr.to_pylist()


# --- random messages (google.protobuf) ------------------------------------------------------

FD = _d.FieldDescriptor
_INT_RANGES = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1),
    FD.TYPE_FIXED64: (0, 2**64 - 1),
}
_SPECIAL_DOUBLES = [0.0, -0.0, 1.0, -1.5, 0.1, 1e308, -1e-308, 5e-324, 2.0**53 + 1, float("inf"), float("-inf"), float("nan")]
# Text: ASCII with the characters text formats escape, and non-ASCII of 2, 3 and 4 UTF-8 bytes.
_CHARS = "abcXYZ019 _-\"'\\\n\t\r\x00\x01\x1f\x7f/é€\u2028\u00a0日本😀\U0010fffd"
_WKT = "google.protobuf."


def rand_text(r, n=None) -> str:
    n = r.randint(0, 12) if n is None else n
    return "".join(r.choice(_CHARS) for _ in range(n))


def _f32_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


# 0, -0, 1, -1.5, 0.1, FLT_MAX, -FLT_MAX, the smallest and largest denormals, FLT_MIN,
# the infinities and NaN, as 32-bit floats.
_SPECIAL_FLOATS = [
    _f32_bits(b)
    for b in (0, 0x80000000, 0x3F800000, 0xBFC00000, 0x3DCCCCCD, 0x7F7FFFFF, 0xFF7FFFFF, 1, 0x007FFFFF, 0x00800000, 0x7F800000, 0xFF800000, 0x7FC00000)
]


def rand_float32(r) -> float:
    if r.random() < 0.3:
        return r.choice(_SPECIAL_FLOATS)
    v = struct.unpack("<f", bytes(r.getrandbits(8) for _ in range(4)))[0]
    # One NaN only (JSON and text keep no NaN payload; round trips compare messages).
    return float("nan") if v != v else v


def rand_double(r) -> float:
    if r.random() < 0.3:
        return r.choice(_SPECIAL_DOUBLES)
    v = struct.unpack("<d", bytes(r.getrandbits(8) for _ in range(8)))[0]
    return float("nan") if v != v else v


def rand_int(r, t) -> int:
    lo, hi = _INT_RANGES[t]
    x = r.random()
    if x < 0.2:
        return r.choice([lo, hi, 0, 1, -1 if lo < 0 else 2, 127, 128, 16383, 16384])
    if x < 0.6:
        return max(lo, min(hi, r.randint(-300, 300 if lo < 0 else 300)))
    return r.randint(lo, hi)


class Generator:
    """Random messages of a google.protobuf message class, every field kind included.

    ``open_enums``: undeclared enum numbers for open enums, sometimes. Timestamps stay in
    the range Arrow's nanoseconds hold unless ``wide_times`` (then some are outside it)."""

    def __init__(self, seed: int, max_depth: int = 4, wide_times: bool = True, fill: float = 0.6):
        self.r = random.Random(seed)
        self.max_depth = max_depth
        self.wide_times = wide_times
        self.fill = fill

    # Scalars ----------------------------------------------------------------------------
    def scalar(self, f):
        r, t = self.r, f.type
        if t in _INT_RANGES:
            return rand_int(r, t)
        if t == FD.TYPE_DOUBLE:
            return rand_double(r)
        if t == FD.TYPE_FLOAT:
            return rand_float32(r)
        if t == FD.TYPE_BOOL:
            return r.random() < 0.5
        if t == FD.TYPE_STRING:
            return rand_text(r)
        if t == FD.TYPE_BYTES:
            return bytes(r.getrandbits(8) for _ in range(r.randint(0, 10)))
        if t == FD.TYPE_ENUM:
            values = [v.number for v in f.enum_type.values]
            if not f.enum_type.is_closed and r.random() < 0.15:
                return r.choice([5, 99, 1000, -1, 2**31 - 1, -(2**31)])
            return r.choice(values)
        raise AssertionError(f"no scalar generator for {f.full_name}")

    # Well-known types -------------------------------------------------------------------
    def wkt(self, m, depth):
        r = self.r
        name = m.DESCRIPTOR.full_name[len(_WKT):]
        if name == "Timestamp":
            if self.wide_times and r.random() < 0.1:
                m.seconds = r.choice([-62135596800, 253402300799, -9300000000, 9300000000])
            else:
                m.seconds = r.randint(-9_000_000_000, 9_000_000_000)
            m.nanos = r.choice([0, 0, 1000000, 500, r.randint(0, 999_999_999)])
            return True
        if name == "Duration":
            s = r.choice([0, 1, -1, r.randint(-9_000_000_000, 9_000_000_000)])
            n = r.choice([0, 1000, r.randint(0, 999_999_999)])
            if self.wide_times and r.random() < 0.1:
                s = r.choice([315576000000, -315576000000])
            if s < 0:
                n = -n
            elif s == 0 and r.random() < 0.5:
                n = -n
            m.seconds, m.nanos = s, n
            return True
        if name.endswith("Value") and name not in ("Value", "ListValue"):
            m.value = self.scalar(m.DESCRIPTOR.fields_by_name["value"])
            return True
        if name == "Struct":
            for _ in range(r.randint(0, 3)):
                self.json_value(m.fields[rand_text(r, r.randint(0, 5))], depth + 1)
            return True
        if name == "Value":
            self.json_value(m, depth)
            return True
        if name == "ListValue":
            for _ in range(r.randint(0, 3)):
                self.json_value(m.values.add(), depth + 1)
            return True
        if name == "FieldMask":
            words = ["a", "foo", "foo_bar", "x1", "inner", "leaf_y"]
            for _ in range(r.randint(0, 3)):
                m.paths.append(".".join(r.choice(words) for _ in range(r.randint(1, 3))))
            return True
        if name == "Any":
            pool = m.DESCRIPTOR.file.pool
            choices = [n for n in ("kinds.Leaf", "kinds.Inner", _WKT + "Timestamp", _WKT + "Int64Value", _WKT + "Struct", _WKT + "Duration", _WKT + "Empty") if _has_type(pool, n)]
            inner_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(r.choice(choices)))
            inner = inner_cls()
            self.fill_message(inner, depth + 1)
            m.Pack(inner)
            return True
        if name == "Empty":
            return True
        return False

    def json_value(self, v, depth):
        r = self.r
        k = r.randint(0, 5 if depth < self.max_depth else 3)
        if k == 0:
            v.null_value = 0
        elif k == 1:
            v.number_value = r.choice([0.0, -2.5, 1e100, float(r.randint(-(10**6), 10**6)), 0.1])
        elif k == 2:
            v.string_value = rand_text(r)
        elif k == 3:
            v.bool_value = r.random() < 0.5
        elif k == 4:
            v.struct_value.Clear()
            for _ in range(r.randint(0, 2)):
                self.json_value(v.struct_value.fields[rand_text(r, 3)], depth + 1)
        else:
            v.list_value.Clear()
            for _ in range(r.randint(0, 2)):
                self.json_value(v.list_value.values.add(), depth + 1)

    # Messages ---------------------------------------------------------------------------
    def fill_message(self, m, depth=0):
        """Fills ``m`` at random (required fields always). Returns ``m``."""
        r = self.r
        desc = m.DESCRIPTOR
        if desc.full_name.startswith(_WKT) and self.wkt(m, depth):
            return m
        oneofs_done = set()
        for f in desc.fields:
            required = f.is_required
            if f.containing_oneof is not None and not f.containing_oneof.name.startswith("_"):
                if f.containing_oneof.name in oneofs_done or r.random() < 0.5:
                    continue
            if not required and r.random() > self.fill:
                continue
            if f.message_type is not None and depth >= self.max_depth and not required:
                continue
            if f.message_type is not None and f.message_type.GetOptions().map_entry:
                self.fill_map(getattr(m, f.name), f, depth)
            elif f.is_repeated:
                container = getattr(m, f.name)
                for _ in range(r.randint(0, 4)):
                    if f.message_type is not None:
                        self.fill_message(container.add(), depth + 1)
                    else:
                        container.append(self.scalar(f))
            elif f.message_type is not None:
                sub = getattr(m, f.name)
                sub.SetInParent()
                self.fill_message(sub, depth + 1)
            else:
                setattr(m, f.name, self.scalar(f))
            if f.containing_oneof is not None:
                oneofs_done.add(f.containing_oneof.name)
        return m

    def fill_map(self, container, f, depth):
        r = self.r
        kf = f.message_type.fields_by_name["key"]
        vf = f.message_type.fields_by_name["value"]
        for _ in range(r.randint(0, 3)):
            k = self.scalar(kf)
            if vf.message_type is not None:
                self.fill_message(container[k], depth + 1)
            else:
                container[k] = self.scalar(vf)


def _has_type(pool, name) -> bool:
    try:
        pool.FindMessageTypeByName(name)
        return True
    except KeyError:
        return False


# --- comparing big values ---------------------------------------------------------------------


def first_difference(got, expected, path="$"):
    """Where two JSON-like values first differ (a short description), or None. pytest's own
    diff of two megabyte dicts takes minutes; this stops at the first difference. Floats
    compare by value with NaN equal to NaN; bool is not int."""
    if isinstance(expected, bool) or isinstance(got, bool):
        if type(got) is not type(expected) or got != expected:
            return f"{path}: got {got!r}, expected {expected!r}"
        return None
    if isinstance(expected, float) and isinstance(got, (int, float)):
        if expected != expected and got != got:
            return None
        if got != expected or type(got) is not type(expected):
            return f"{path}: got {got!r} ({type(got).__name__}), expected {expected!r} ({type(expected).__name__})"
        return None
    if isinstance(got, dict) and isinstance(expected, dict):
        pass  # dict and OrderedDict (json_format returns both) compare alike
    elif type(got) is not type(expected):
        return f"{path}: got {type(got).__name__} {_short(got)}, expected {type(expected).__name__} {_short(expected)}"
    if isinstance(expected, dict):
        missing = [k for k in expected if k not in got]
        extra = [k for k in got if k not in expected]
        if missing or extra:
            return f"{path}: keys missing {missing[:5]}, unexpected {extra[:5]}"
        for k in expected:
            d = first_difference(got[k], expected[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(expected, (list, tuple)):
        for i, (g, e) in enumerate(zip(got, expected)):
            d = first_difference(g, e, f"{path}[{i}]")
            if d:
                return d
        if len(got) != len(expected):
            return f"{path}: {len(got)} items, expected {len(expected)}"
        return None
    if got != expected:
        return f"{path}: got {_short(got)}, expected {_short(expected)}"
    return None


NULL_VALUE = "google.protobuf.NullValue"
# Well-known types whose JSON form is not an object of their fields (none of them has a
# field of enum type NullValue that MessageToDict prints as a number: Value's null_value
# is always JSON null).
_JSON_SPECIAL_WKT = {
    _WKT + n
    for n in ("Timestamp", "Duration", "FieldMask", "Struct", "Value", "ListValue", "Empty")
    + tuple(f"{t}Value" for t in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"))
}


def _is_null_value_enum(f) -> bool:
    return f.enum_type is not None and f.enum_type.full_name == NULL_VALUE


def null_values_as_none(expected, desc, kw, pool=None):
    """``json_format.MessageToDict(m, **kw)`` (``expected``, of message type ``desc``) with
    protojit's one documented difference from it applied (python/protojit/__init__.pyi,
    ``Decoder.to_dict``): "a field of enum type ``google.protobuf.NullValue`` is ``None``
    whatever the keywords say ...; ``MessageToDict(use_integers_for_enums=True)`` gives
    ``0``". MessageToDict prints such a field as JSON null unless
    ``use_integers_for_enums``, and then as its number (``0``, or an undeclared number as
    it is), also in a repeated field (a list of numbers) and as a map value. So with
    ``use_integers_for_enums=True`` exactly those values become ``None``: singular,
    repeated (each item) and map values, at any depth (nested messages, repeated and map
    message values, extensions, the fields of a message inside an Any). Nothing else
    changes; a key MessageToDict leaves out stays out. Returns a new value."""
    if not kw.get("use_integers_for_enums"):
        return expected
    pool = pool or desc.file.pool
    return _nulls(expected, desc, bool(kw.get("preserving_proto_field_name")), pool)


def _nulls(d, desc, names, pool):
    if desc.full_name == _WKT + "Any":
        if not isinstance(d, dict) or "@type" not in d:
            return d
        inner = pool.FindMessageTypeByName(d["@type"].rpartition("/")[2])
        if inner.full_name in _JSON_SPECIAL_WKT or inner.full_name == _WKT + "Any":
            return d  # {"@type": ..., "value": <the special form>}
        return _nulls(d, inner, names, pool)  # the message's fields, beside "@type"
    if desc.full_name in _JSON_SPECIAL_WKT or not isinstance(d, dict):
        return d
    out = dict(d)
    for f in list(desc.fields) + list(pool.FindAllExtensions(desc)):
        key = f"[{f.full_name}]" if f.is_extension else (f.name if names else f.json_name)
        if key not in out:
            continue
        v, mt = out[key], f.message_type
        if mt is not None and mt.GetOptions().map_entry:
            vf = mt.fields_by_name["value"]
            if _is_null_value_enum(vf):
                out[key] = {k: None for k in v}
            elif vf.message_type is not None:
                out[key] = {k: _nulls(x, vf.message_type, names, pool) for k, x in v.items()}
        elif _is_null_value_enum(f):
            out[key] = [None] * len(v) if f.is_repeated else None
        elif mt is not None:
            out[key] = [_nulls(x, mt, names, pool) for x in v] if f.is_repeated else _nulls(v, mt, names, pool)
    return out


def _short(v, n=200):
    r = repr(v)
    return r if len(r) <= n else r[:n] + "..."


def assert_same(got, expected, what="value"):
    d = first_difference(got, expected)
    assert d is None, f"{what} differs at {d}"


def text_difference(got: str, expected: str):
    """The first differing line of two texts (with its number), or None."""
    if got == expected:
        return None
    g, e = got.splitlines(), expected.splitlines()
    for i, (a, b) in enumerate(zip(g, e)):
        if a != b:
            return f"line {i + 1}: got {a!r}, expected {b!r}"
    return f"{len(g)} lines, expected {len(e)} (or a difference in line ends)"


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def protoc_expected(kind_dir: Path, payload: str, output: str):
    """Checks ``output`` against protoc's committed output for ``payload`` in
    tests/expected (``<payload>.txt``, or ``.digest``: its length and FNV-1a 64). Returns
    False if there is none."""
    txt = kind_dir / f"{payload}.txt"
    digest = kind_dir / f"{payload}.digest"
    if txt.is_file():
        d = text_difference(output, txt.read_text(encoding="utf-8"))
        assert d is None, f"differs from protoc's output ({txt}): {d}"
        return True
    if digest.is_file():
        lines = dict(line.split(" ", 1) for line in digest.read_text().splitlines() if line)
        data = output.encode("utf-8")
        assert (len(data), fnv1a64(data)) == (int(lines["len"]), lines["fnv1a64"].strip()), f"differs from protoc's output ({digest})"
        return True
    return False


def text_format_difference(got: str, python: str):
    """Where protobuf text ``got`` differs from Python's ``text_format`` output of the same
    message beyond formatting, or None. Allowed: a float written another way that reads as
    the same number (``1e+10`` / ``10000000000.0``), a string escaped another way that
    unescapes to the same bytes (octal / hex / UTF-8)."""
    g, p = got.splitlines(), python.splitlines()
    if len(g) != len(p):
        return f"{len(g)} lines, Python's text has {len(p)}"
    for i, (a, b) in enumerate(zip(g, p)):
        if a == b:
            continue
        ka, _, va = a.partition(": ")
        kb, _, vb = b.partition(": ")
        if ka != kb:
            return f"line {i + 1}: {a!r} / Python: {b!r}"
        if va.startswith('"') and vb.startswith('"') and va.endswith('"') and vb.endswith('"'):
            if text_encoding.CUnescape(va[1:-1]) == text_encoding.CUnescape(vb[1:-1]):
                continue
        else:
            try:
                fa, fb = _text_float(va), _text_float(vb)
            except ValueError:
                pass
            else:
                if fa == fb or (fa != fa and fb != fb) or _f32(fa) == _f32(fb):
                    # Equal, or the same 32-bit float (protoc writes floats with up to 9
                    # digits, Python with the shortest that reads back).
                    continue
        return f"line {i + 1}: {a!r} / Python: {b!r}"
    return None


def _f32(x: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return x


def _text_float(v: str) -> float:
    v = v.lower().rstrip("f") if not v.lower().startswith(("inf", "-inf")) else v.lower()
    return float({"inf": "inf", "-inf": "-inf", "infinity": "inf", "-infinity": "-inf", "nan": "nan"}.get(v, v))


# --- hand-made wire data -------------------------------------------------------------------


def tag(number: int, wire_type: int) -> bytes:
    return varint((number << 3) | wire_type)


def f_varint(number: int, value: int) -> bytes:
    """A varint field (negative values as 64-bit two's complement)."""
    return tag(number, 0) + varint(value & 0xFFFFFFFFFFFFFFFF)


def f_bytes(number: int, data: bytes) -> bytes:
    """A length-delimited field."""
    return tag(number, 2) + varint(len(data)) + data


def f_fixed32(number: int, data: bytes) -> bytes:
    assert len(data) == 4
    return tag(number, 5) + data


def f_fixed64(number: int, data: bytes) -> bytes:
    assert len(data) == 8
    return tag(number, 1) + data


def packed(values) -> bytes:
    return b"".join(varint(v & 0xFFFFFFFFFFFFFFFF) for v in values)


# --- message equality up to Any bytes; top-level wire fields -----------------------------------


def normalized(m):
    """A copy of ``m`` with the ``value`` bytes of every Any re-serialized
    deterministically. An Any's bytes are the writer's: they hold map entries in its order,
    so two writers of the same message may put different bytes there."""
    c = type(m)()
    c.CopyFrom(m)
    _normalize_any(c)
    return c


def _normalize_any(m):
    desc = m.DESCRIPTOR
    if desc.full_name == "google.protobuf.Any":
        try:
            inner_desc = desc.file.pool.FindMessageTypeByName(m.type_url.rpartition("/")[2])
        except KeyError:
            return
        inner = message_factory.GetMessageClass(inner_desc)()
        inner.ParseFromString(m.value)
        _normalize_any(inner)
        m.value = inner.SerializeToString(deterministic=True)
        return
    for f, v in m.ListFields():
        if f.message_type is None:
            continue
        if f.message_type.GetOptions().map_entry:
            if f.message_type.fields_by_name["value"].message_type is not None:
                for k in v:
                    _normalize_any(v[k])
        elif f.is_repeated:
            for x in v:
                _normalize_any(x)
        else:
            _normalize_any(v)


def same_message(a, b) -> bool:
    """google.protobuf equality, up to the bytes inside Any values (see ``normalized``)."""
    return a == b or normalized(a) == normalized(b)


def wire_fields(data: bytes):
    """The top-level fields of a message: [(number, wire type)], a group as one field."""
    out, pos = [], 0

    def read_varint():
        nonlocal pos
        shift = value = 0
        while True:
            b = data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    depth = 0
    while pos < len(data):
        key = read_varint()
        number, wt = key >> 3, key & 7
        if depth == 0 and wt != 4:
            out.append((number, wt))
        if wt == 0:
            read_varint()
        elif wt == 1:
            pos += 8
        elif wt == 2:
            n = read_varint()  # (not `pos += read_varint()`: that adds to the old pos)
            pos += n
        elif wt == 5:
            pos += 4
        elif wt == 3:
            depth += 1
        elif wt == 4:
            depth -= 1
    return out


def unknown_fields(m) -> list:
    """The unknown fields google.protobuf (upb) keeps for ``m`` at its top level, in the
    order it read them: [(number, wire type, value)], a group's value as such a list.
    (upb's message equality counts unknown fields but not their order.)"""
    from google.protobuf import unknown_fields as _uf

    def items(ufs):
        return [(u.field_number, u.wire_type, items(u.data) if u.wire_type == 3 else u.data) for u in ufs]

    return items(_uf.UnknownFieldSet(m))


def assert_batches_equal(got, expected, what=""):
    """Same schema and the same values column by column: NaN equals NaN (Arrow's
    ``equals`` says it does not), and a dictionary column compares by its values (the
    dictionary itself may hold other, unused entries)."""
    assert got.schema.equals(expected.schema), f"{what}: schemas differ:\n{got.schema}\n{expected.schema}"
    assert got.num_rows == expected.num_rows, what
    for name in expected.schema.names:
        d = first_difference(arrow_values(got.column(name)), arrow_values(expected.column(name)), name)
        assert d is None, f"{what}: {d}"
