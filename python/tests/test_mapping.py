"""The mapping keywords (oneof_case=, maps=, large=, enums="string", flatten=, any=, recursion=, explode=, extensions=): the shapes
they give, the schema known before any data, and the way back to the same records."""

from __future__ import annotations

import pyarrow as pa
import pytest

import protojit

PROTO = """
syntax = "proto3";
package m;
enum Color { RED = 0; GREEN = 1; }
message Inner { string s = 1; oneof pick { int32 x = 2; string y = 3; } }
message Top {
  int32 id = 1;
  Inner inner = 2;
  map<string, int32> tags = 3;
  repeated string names = 4;
  Color color = 5;
}
"""

# id=1, inner{s="in", x=5}, tags{"k": 7}, names ["a", "b"], color GREEN; then id=2 alone.
RECORDS = [
    b"\x08\x01\x12\x06\x0a\x02in\x10\x05\x1a\x05\x0a\x01k\x10\x07\x22\x01a\x22\x01b\x28\x01",
    b"\x08\x02",
]


@pytest.fixture
def schema():
    return protojit.Schema.from_proto_source(PROTO, "m.proto")


def convert(schema, **kw):
    conv = schema.converter("m.Top", **kw)
    batch = conv.to_record_batch(pa.array(RECORDS, pa.binary()))
    assert batch.schema == conv.schema
    assert conv.from_record_batch(batch).to_pylist() == RECORDS
    return batch


def test_oneof_case(schema):
    batch = convert(schema, oneof_case=True)
    inner = batch.schema.field("inner").type
    assert [inner.field(i).name for i in range(inner.num_fields)] == ["s", "x", "y", "pick_case"]
    assert batch.column("inner").to_pylist()[0]["pick_case"] == "x"
    assert batch.column("inner").to_pylist()[1] is None


def test_maps_as_entries(schema):
    batch = convert(schema, maps="entries")
    assert batch.schema.field("tags").type == pa.list_(
        pa.field("item", pa.struct([pa.field("key", pa.utf8(), False), pa.field("value", pa.int32(), False)]), False)
    )
    assert batch.column("tags").to_pylist() == [[{"key": "k", "value": 7}], []]


def test_large(schema):
    batch = convert(schema, large=True)
    assert batch.schema.field("names").type == pa.large_list(pa.field("item", pa.large_utf8(), False))
    assert batch.column("names").to_pylist() == [["a", "b"], []]


def test_enums_as_strings(schema):
    batch = convert(schema, enums="string")
    assert batch.schema.field("color").type == pa.utf8()
    assert batch.column("color").to_pylist() == ["GREEN", "RED"]


def test_flatten(schema):
    batch = convert(schema, flatten=True, oneof_case=True)
    assert batch.schema.names == ["id", "inner.s", "inner.x", "inner.y", "inner.pick_case", "tags", "names", "color"]
    assert batch.column("inner.s").to_pylist() == ["in", None]


def test_bad_values_say_what_to_use(schema):
    with pytest.raises(ValueError, match="entries"):
        schema.converter("m.Top", maps="list")
    with pytest.raises(ValueError, match="string"):
        schema.converter("m.Top", enums="names")


CART_PROTO = """
syntax = "proto3";
package c;
message Item { string sku = 1; int32 qty = 2; }
message Cart { int32 id = 1; repeated Item items = 2; }
"""

# id=1 with items a (qty 1) and b (qty 2); id=2 without items.
CARTS = [b"\x08\x01\x12\x05\x0a\x01a\x10\x01\x12\x05\x0a\x01b\x10\x02", b"\x08\x02"]


def test_explode():
    schema = protojit.Schema.from_proto_source(CART_PROTO, "c.proto")
    conv = schema.converter("c.Cart", explode="items")
    batch = conv.to_record_batch(pa.array(CARTS + [None], pa.binary()))
    assert batch.schema == conv.schema
    assert batch.column("id").to_pylist() == [1, 1]
    assert batch.column("items").to_pylist() == [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]
    assert conv.unexploded == 1
    with pytest.raises(protojit.EncodeError, match="explode"):
        conv.from_record_batch(batch)

    conv = schema.converter("c.Cart", explode_outer="items", flatten=True)
    batch = conv.to_record_batch(pa.array(CARTS, pa.binary()))
    assert batch.schema.names == ["id", "items.sku", "items.qty"]
    assert batch.column("id").to_pylist() == [1, 1, 2]
    assert batch.column("items.sku").to_pylist() == ["a", "b", None]
    assert conv.unexploded == 1
    # Streams explode too.
    table = conv.read_delimited(b"".join(bytes([len(r)]) + r for r in CARTS)).read_all()
    assert table.column("items.qty").to_pylist() == [1, 2, None]

    with pytest.raises(ValueError, match="not both"):
        schema.converter("c.Cart", explode="items", explode_outer="items")
    with pytest.raises(protojit.SchemaError, match="cannot explode `id`"):
        schema.converter("c.Cart", explode="id")


ANY_PROTO = """
syntax = "proto3";
package a;
import "google/protobuf/any.proto";
message Payload { string name = 1; int64 n = 2; }
message Env { int32 id = 1; google.protobuf.Any body = 2; }
"""


def test_any_as_json():
    schema = protojit.Schema.from_proto_source(ANY_PROTO, "a.proto")
    url = b"type.googleapis.com/a.Payload"
    payload = b"\x0a\x01x\x10\x05"
    body = b"\x0a" + bytes([len(url)]) + url + b"\x12" + bytes([len(payload)]) + payload
    unknown = b"\x0a\x09x/no.Type\x12\x02\x08\x01"
    records = [
        b"\x08\x01\x12" + bytes([len(body)]) + body,
        b"\x08\x02\x12" + bytes([len(unknown)]) + unknown,
        b"\x08\x03",
    ]
    conv = schema.converter("a.Env", any="json")
    batch = conv.to_record_batch(pa.array(records, pa.binary()))
    assert batch.schema == conv.schema
    # The canonical JSON extension type, as pyarrow knows it.
    assert batch.schema.field("body").type == pa.json_(pa.utf8())
    body_json = [None if v is None else str(v) for v in batch.column("body").to_pylist()]
    assert body_json == [
        '{"@type":"type.googleapis.com/a.Payload","name":"x","n":"5"}',
        '{"@type":"x/no.Type","value":"CAE="}',
        None,
    ]
    assert conv.unresolved_any == 1
    assert conv.from_record_batch(batch).to_pylist() == records
    with pytest.raises(ValueError, match="json"):
        schema.converter("a.Env", any="text")


EXT_PROTO = """
syntax = "proto2";
package e;
message M { optional int32 id = 1; extensions 100 to 199; }
extend M { optional string tag = 100; repeated int32 nums = 101; }
"""


def test_extensions():
    schema = protojit.Schema.from_proto_source(EXT_PROTO, "e.proto")
    records = [b"\x08\x01\xa2\x06\x01x\xa8\x06\x05", b"\x08\x02"]
    conv = schema.converter("e.M", extensions=True)
    batch = conv.to_record_batch(pa.array(records, pa.binary()))
    assert batch.schema.names == ["id", "[e.tag]", "[e.nums]"]
    assert batch.column("[e.tag]").to_pylist() == ["x", None]
    assert batch.column("[e.nums]").to_pylist() == [[5], []]
    assert schema.converter("e.M").schema.names == ["id"]
    with pytest.raises(protojit.EncodeError, match="extensions"):
        conv.from_record_batch(batch)


TREE_PROTO = """
syntax = "proto3";
package t;
message Node { string name = 1; Node child = 2; }
"""


def test_recursion_as_json():
    schema = protojit.Schema.from_proto_source(TREE_PROTO, "t.proto")
    # a > b > c > d
    d = b"\x0a\x01d"
    c = b"\x0a\x01c\x12" + bytes([len(d)]) + d
    b = b"\x0a\x01b\x12" + bytes([len(c)]) + c
    a = b"\x0a\x01a\x12" + bytes([len(b)]) + b
    conv = schema.converter("t.Node", recursion="json", max_recursion=2)
    batch = conv.to_record_batch(pa.array([a, b"\x0a\x01z"], pa.binary()))
    assert batch.schema == conv.schema
    assert conv.schema.field("child").type.field("child").type == pa.json_(pa.utf8())
    children = batch.column("child").to_pylist()
    assert str(children[0]["child"]) == '{"name":"c","child":{"name":"d"}}'
    assert children[1] is None
    assert conv.from_record_batch(batch).to_pylist() == [a, b"\x0a\x01z"]
    with pytest.raises(ValueError, match="json"):
        schema.converter("t.Node", recursion="text")


STRUCT_PROTO = """
syntax = "proto3";
package s;
import "google/protobuf/struct.proto";
message Doc { google.protobuf.Struct attrs = 1; }
"""


def test_structs_as_json():
    schema = protojit.Schema.from_proto_source(STRUCT_PROTO, "s.proto")
    record = schema.encoder("s.Doc").from_json('{"attrs": {"a": {"b": [1, "x"]}}}')
    conv = schema.converter("s.Doc", structs="json")
    batch = conv.to_record_batch(pa.array([record], pa.binary()))
    assert conv.schema.field("attrs").type == pa.json_(pa.utf8())
    assert str(batch.column("attrs")[0]) == '{"a":{"b":[1.0,"x"]}}'
    assert conv.from_record_batch(batch).to_pylist() == [record]
