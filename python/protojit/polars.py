"""Polars: serialized protobuf records in a ``Binary`` Series (or column expression) decoded
into a ``Struct`` Series, or a DataFrame, through Arrow without copying the records."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import polars as pl
import pyarrow as pa

from ._protojit import Converter, Schema

__all__ = ["decode", "to_frame"]


def _converter(schema: Union[Schema, Converter], message: Optional[str], options: dict) -> Converter:
    if isinstance(schema, Converter):
        if message is not None or options:
            raise ValueError("pass either a Converter, or a Schema with the message type and its keywords")
        return schema
    if message is None:
        raise ValueError("the message type is missing: decode(series, schema, 'pkg.Msg')")
    return schema.converter(message, **options)


def _batch(series: pl.Series, conv: Converter) -> pa.RecordBatch:
    if series.dtype != pl.Binary:
        raise TypeError(f"expected a Binary Series of serialized messages, got {series.dtype}")
    return conv.to_record_batch(series.to_arrow())


def to_frame(
    series: pl.Series,
    schema: Union[Schema, Converter],
    message: Optional[str] = None,
    **options: Any,
) -> pl.DataFrame:
    """The records of a ``Binary`` Series as a DataFrame, one column per field."""
    conv = _converter(schema, message, options)
    return pl.from_arrow(_batch(series, conv))


def decode(
    series_or_expr: Union[pl.Series, pl.Expr],
    schema: Union[Schema, Converter],
    message: Optional[str] = None,
    **options: Any,
) -> Union[pl.Series, pl.Expr]:
    """The records of a ``Binary`` Series as a ``Struct`` Series named like it (one field
    per protobuf field); for an expression, the expression that does so, for
    ``df.select`` / ``with_columns`` (unnest it with ``.struct.unnest()``).

    ``schema`` is a :class:`protojit.Schema` with ``message`` and the converter's keywords
    (``select=``, ``enums=``, ...), or a ready :class:`protojit.Converter`.
    """
    conv = _converter(schema, message, options)
    dtype = pl.from_arrow(pa.table({"_": pa.array([], pa.struct(list(conv.schema)))}))["_"].dtype

    def run(series: pl.Series) -> pl.Series:
        batch = _batch(series, conv)
        return pl.Series(series.name, pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema)))

    if isinstance(series_or_expr, pl.Expr):
        return series_or_expr.map_batches(run, return_dtype=dtype)
    return run(series_or_expr)


