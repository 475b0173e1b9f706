"""Loading schemas (descriptor sets, .proto files, google.protobuf descriptors, editions),
the module's version, and decode_raw against protoc."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from google.protobuf import descriptor_pb2, json_format, timestamp_pb2

import protojit
import pjtest
from pjtest import EXPECTED, PAYLOADS, REPO, SAMPLES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = None


def test_version_is_the_workspace_version():
    assert tomllib is not None, "Python 3.11+ reads Cargo.toml with tomllib"
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert protojit.__version__ == cargo["workspace"]["package"]["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", protojit.__version__)


def test_payload_list_is_read_from_the_rust_one():
    """pjtest.PAYLOADS is parsed from tests/common/payloads.rs: all 16 of them, each a file."""
    assert len(PAYLOADS) == 16
    assert len({p for (_, _, p) in PAYLOADS}) == 16
    for proto, message, payload in PAYLOADS:
        assert proto.endswith(".proto") and "." in message and not payload.endswith(".proto")


# --- descriptor sets ----------------------------------------------------------------------


def test_descriptor_set_from_bytes_and_path(corpus):
    path = corpus / "descriptor.fds.bin"
    a = protojit.Schema.from_descriptor_set(path.read_bytes())
    b = protojit.Schema.from_descriptor_set(path)
    c = protojit.Schema.from_descriptor_set(str(path))
    d = protojit.Schema.from_descriptor_set(bytearray(path.read_bytes()))
    assert a.message_names == b.message_names == c.message_names == d.message_names
    assert "google.protobuf.FileDescriptorSet" in a.message_names
    # Every message of descriptor.proto, nested ones included.
    fds = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
    names = []

    def walk(prefix, msgs):
        for m in msgs:
            names.append(f"{prefix}.{m.name}")
            walk(f"{prefix}.{m.name}", m.nested_type)

    for f in fds.file:
        walk(f.package, f.message_type)
    assert sorted(names) == sorted(a.message_names)
    assert len(a.message_names) == len(names)
    assert "protojit.Schema" in repr(a)


@pytest.mark.parametrize("proto", ["vector_tile.proto", "osmformat.proto", "descriptor.proto"])
def test_message_names_are_sorted(corpus, proto):
    """``message_names``: "Full names of every message type, sorted." """
    names = pjtest.corpus_schema(proto).message_names
    assert names == sorted(names)


def test_descriptor_set_round_trip(corpus):
    schema = protojit.Schema.from_descriptor_set(corpus / "descriptor.fds.bin")
    out = schema.to_descriptor_set()
    fds = descriptor_pb2.FileDescriptorSet.FromString(out)
    assert [f.name for f in fds.file] == ["google/protobuf/descriptor.proto"]
    again = protojit.Schema.from_descriptor_set(out)
    assert again.message_names == schema.message_names


def test_missing_descriptor_set(tmp_path):
    with pytest.raises((protojit.SchemaError, OSError)):
        protojit.Schema.from_descriptor_set(tmp_path / "nope.fds")
    with pytest.raises(TypeError):
        protojit.Schema.from_descriptor_set(42)


# --- .proto files --------------------------------------------------------------------------


def test_from_proto_equals_protoc_descriptor_set(corpus):
    """descriptor.proto compiled by protojit describes the same messages and fields as
    protoc's descriptor set of it (descriptor.fds.bin). protox refuses its newest syntax:
    without protoc on PATH that is a SchemaError that says to install protoc."""
    if shutil.which("protoc") is None:
        with pytest.raises(protojit.SchemaError, match="protoc"):
            protojit.Schema.from_proto(corpus / "descriptor.proto")
        pytest.skip("protoc is not on PATH: descriptor.proto does not compile without it")
    schema = protojit.Schema.from_proto(corpus / "descriptor.proto")
    assert any("protoc" in n for n in schema.notes), schema.notes
    ours = descriptor_pb2.FileDescriptorSet.FromString(schema.to_descriptor_set())
    theirs = descriptor_pb2.FileDescriptorSet.FromString((corpus / "descriptor.fds.bin").read_bytes())

    def fields(fds):
        out = {}

        def walk(prefix, msgs):
            for m in msgs:
                name = f"{prefix}.{m.name}"
                out[name] = [(f.name, f.number, f.label, f.type, f.type_name, f.json_name) for f in m.field]
                walk(name, m.nested_type)

        for f in fds.file:
            if f.name.endswith("descriptor.proto"):
                walk(f.package, f.message_type)
        return out

    assert fields(ours) == fields(theirs)


def test_from_proto_with_include(corpus, tmp_path):
    # A file that imports a corpus schema by a path relative to an include directory.
    main = tmp_path / "proj" / "wrapper.proto"
    main.parent.mkdir()
    main.write_text(
        'syntax = "proto2";\npackage wrap;\nimport "osmformat.proto";\n'
        "message Wrapped { optional OSMPBF.HeaderBlock header = 1; }\n"
    )
    with pytest.raises(protojit.SchemaError):
        protojit.Schema.from_proto(main)  # osmformat.proto is not beside it
    schema = protojit.Schema.from_proto(main, include=[main.parent, corpus])
    assert "wrap.Wrapped" in schema.message_names
    assert "OSMPBF.HeaderBlock" in schema.message_names
    schema = protojit.Schema.from_proto([str(main)], include=(str(main.parent), str(corpus)))
    assert "wrap.Wrapped" in schema.message_names
    # The wrapped header block decodes as the corpus payload does.
    header = pjtest.payload_bytes("liechtenstein.block0.headerblock.bin")
    data = pjtest.f_bytes(1, header)
    got = schema.decoder("wrap.Wrapped").to_dict(data)
    assert got == {"header": pjtest.corpus_schema("osmformat.proto").decoder("OSMPBF.HeaderBlock").to_dict(header)}


def test_from_proto_several_files(corpus):
    schema = protojit.Schema.from_proto([corpus / "fileformat.proto", corpus / "osmformat.proto"])
    assert {"OSMPBF.Blob", "OSMPBF.BlobHeader", "OSMPBF.HeaderBlock"} <= set(schema.message_names)


def test_from_proto_missing_file_names_it(tmp_path):
    missing = tmp_path / "no_such_file.proto"
    with pytest.raises(protojit.SchemaError, match="no_such_file"):
        protojit.Schema.from_proto(missing)


def test_from_proto_bad_import_names_it(tmp_path):
    p = tmp_path / "a.proto"
    p.write_text('syntax = "proto3";\nimport "not_there.proto";\nmessage A {}\n')
    with pytest.raises(protojit.SchemaError, match="not_there"):
        protojit.Schema.from_proto(p)


def test_from_proto_well_known_types_and_source(kinds_schema):
    assert "google.protobuf.Timestamp" in kinds_schema.message_names
    assert "kinds.Kinds.Nested.Deeper" in kinds_schema.message_names
    s = protojit.Schema.from_proto_source(
        'syntax = "proto3"; package p; import "google/protobuf/timestamp.proto";'
        " message M { google.protobuf.Timestamp t = 1; }",
        name="m.proto",
    )
    assert s.decoder("p.M").to_dict(b"\x0a\x02\x08\x01") == {"t": "1970-01-01T00:00:01Z"}
    fds = descriptor_pb2.FileDescriptorSet.FromString(s.to_descriptor_set())
    assert [f.name for f in fds.file][-1] == "m.proto"
    assert "google/protobuf/timestamp.proto" in [f.name for f in fds.file]


def test_from_proto_arguments():
    with pytest.raises(TypeError):
        protojit.Schema.from_proto(42)
    with pytest.raises(TypeError):
        protojit.Schema.from_proto(["a.proto", 42])


# --- google.protobuf descriptors ------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(lambda: descriptor_pb2, id="module"),
        pytest.param(lambda: descriptor_pb2.FileDescriptorSet.DESCRIPTOR, id="message-descriptor"),
        pytest.param(lambda: descriptor_pb2.FileDescriptorSet.DESCRIPTOR.file, id="file-descriptor"),
        pytest.param(lambda: descriptor_pb2.FileDescriptorSet, id="class"),
        pytest.param(lambda: [descriptor_pb2, timestamp_pb2.Timestamp], id="list"),
    ],
)
def test_from_python_decodes_descriptor_sets(corpus, source):
    schema = protojit.Schema.from_python(source())
    dec = schema.decoder("google.protobuf.FileDescriptorSet")
    for name in ("descriptor.fds.bin", "descriptor_with_source_info.fds.bin"):
        data = (corpus / name).read_bytes()
        m = descriptor_pb2.FileDescriptorSet.FromString(data)
        for kw in (pjtest.JSON_KWARGS[0], pjtest.JSON_KWARGS[7]):
            pjtest.assert_same(dec.to_dict(data, **kw), json_format.MessageToDict(m, **kw), f"{name} {kw}")


def test_from_python_timestamp():
    schema = protojit.Schema.from_python(timestamp_pb2.Timestamp)
    assert schema.message_names == ["google.protobuf.Timestamp"]
    t = timestamp_pb2.Timestamp(seconds=1_700_000_000, nanos=5_000)
    data = t.SerializeToString()
    assert schema.decoder("google.protobuf.Timestamp").to_dict(data) == json_format.MessageToDict(t)
    batch = schema.converter("google.protobuf.Timestamp", well_known_types=False).to_record_batch([data])
    assert batch.to_pylist() == [{"seconds": 1_700_000_000, "nanos": 5_000}]


def test_from_python_takes_imports_along(kinds_schema):
    """A file is taken with the files it imports (here: kinds.proto, loaded into a
    google.protobuf pool, with its well-known-type imports)."""
    ref = pjtest.reference(kinds_schema)
    desc = ref.pool.FindMessageTypeByName("kinds.Kinds")
    schema = protojit.Schema.from_python(desc)
    assert set(kinds_schema.message_names) <= set(schema.message_names)
    assert "google.protobuf.Any" in schema.message_names


def test_from_python_refuses_other_objects():
    with pytest.raises(TypeError):
        protojit.Schema.from_python(42)
    with pytest.raises(TypeError):
        protojit.Schema.from_python("descriptor.proto")


# --- editions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fds, name",
    [
        ("test_messages_edition2023.fds", "protobuf_test_messages.editions.TestAllTypesEdition2023"),
        ("test_messages_proto2_editions.fds", "protobuf_test_messages.editions.proto2.TestAllTypesProto2"),
        ("test_messages_proto3_editions.fds", "protobuf_test_messages.editions.proto3.TestAllTypesProto3"),
    ],
)
def test_editions_descriptor_sets(corpus, fds, name):
    schema = protojit.Schema.from_descriptor_set(corpus / "editions" / fds)
    assert name in schema.message_names
    ref = pjtest.Reference((corpus / "editions" / fds).read_bytes())
    cls = ref.cls(name)
    dec = schema.decoder(name)
    conv = schema.converter(name)
    desc = ref.pool.FindMessageTypeByName(name)
    problems = []
    for i in range(12):
        m = cls()
        pjtest.Generator(seed=31 * i + len(fds), max_depth=2, fill=0.3).fill_message(m)
        data = m.SerializeToString(deterministic=True)
        m = cls.FromString(data)
        where = f"message {i}"
        for kw in (pjtest.JSON_KWARGS[0], pjtest.JSON_KWARGS[7]):
            # MessageToDict with the documented NullValue difference (Decoder.to_dict's
            # docstring, python/protojit/__init__.pyi): TestAllTypesProto3's
            # optional_null_value and oneof_null_value are None in protojit's dict, where
            # MessageToDict(use_integers_for_enums=True) prints 0.
            expected = pjtest.null_values_as_none(json_format.MessageToDict(m, descriptor_pool=ref.pool, **kw), desc, kw, ref.pool)
            d = pjtest.first_difference(dec.to_dict(data, **kw), expected)
            if d:
                problems.append(f"{where} {kw}: to_dict differs at {d} (bytes {data.hex()[:300]})")
        if dec.canonical(data) != data:
            problems.append(f"{where}: canonical differs")
        if conv.to_record_batch([data]).num_rows != 1:
            problems.append(f"{where}: no row")
    assert not problems, "\n".join(problems)


# --- decode_raw -------------------------------------------------------------------------------


def test_decode_raw_sample_batch():
    data = (SAMPLES / "batch.bin").read_bytes()
    text = protojit.decode_raw(data)
    assert text == protojit.Decoder.decode_raw(data)
    # What protoc 3.21.12 prints for its first fields (the sample's README says how it
    # was encoded: device "greenhouse-7", status STATUS_OK, three samples).
    assert text.startswith('1: "greenhouse-7"\n2: 1\n3 {\n  1: 1\n  2: 1764489600000\n  3: 0x41ac0000\n')
    # The labels map, the packed error codes (a length-delimited field protoc shows as
    # bytes), and the oneof's float.
    assert '4 {\n  1: "site"\n  2: "north field"\n}\n' in text
    assert text.endswith("6: 0x406ccccd\n")


def test_decode_raw_sample_batch_against_protoc():
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.skip("protoc is not on PATH (test_decode_raw_sample_batch compares a known part)")
    data = (SAMPLES / "batch.bin").read_bytes()
    out = subprocess.run([protoc, "--decode_raw"], input=data, capture_output=True, check=True).stdout.decode()
    assert pjtest.text_difference(protojit.decode_raw(data), out) is None


@pytest.mark.parametrize("payload", [p for p in pjtest.PAYLOAD_IDS if (EXPECTED / "raw" / f"{p}.txt").is_file()])
def test_decode_raw_corpus_matches_protoc(corpus, payload):
    """decode_raw of the corpus payloads against ``protoc --decode_raw`` (3.21.12; the
    committed outputs in tests/expected/raw)."""
    text = protojit.decode_raw(pjtest.payload_bytes(payload))
    assert pjtest.protoc_expected(EXPECTED / "raw", payload, text)


def test_decode_raw_edge_cases():
    """The raw edge cases of tests/expected/raw/cases: protoc's output where it prints one,
    a DecodeError where it fails."""
    cases = sorted((EXPECTED / "raw" / "cases").glob("*.bin"))
    assert cases
    for case in cases:
        data = case.read_bytes()
        txt, fails = case.with_suffix(".txt"), case.with_suffix(".fails")
        if txt.is_file():
            d = pjtest.text_difference(protojit.decode_raw(data), txt.read_text(encoding="utf-8"))
            assert d is None, f"{case.name}: {d}"
        else:
            assert fails.is_file(), case
            with pytest.raises(protojit.DecodeError):
                protojit.decode_raw(data)
