"""protojit: protobuf records whose schema is known only at run time, decoded by compiled
code into pyarrow record batches (and so into Polars and DuckDB), Python dicts, proto3 JSON
and text format, and encoded back.

    import protojit, pyarrow as pa
    schema = protojit.Schema.from_proto("shop.proto")
    conv = schema.converter("shop.Order")
    batch = conv.to_record_batch(pa.array(records, pa.binary()))

See the README's "Python" section, and the docstrings in ``__init__.pyi``.
"""

from ._protojit import (
    Converter,
    DecodeError,
    Decoder,
    DelimitedBatches,
    EncodeError,
    Encoder,
    Error,
    Schema,
    SchemaError,
    __version__,
    decode_raw,
)

__all__ = [
    "Converter",
    "DecodeError",
    "Decoder",
    "DelimitedBatches",
    "EncodeError",
    "Encoder",
    "Error",
    "Schema",
    "SchemaError",
    "__version__",
    "decode_raw",
]
