"""Polars: ``Binary`` Series of serialized protobuf records into ``Struct`` Series and DataFrames."""

from typing import Any, Optional, Union

import polars as pl

from . import Converter, Schema

def decode(
    series_or_expr: Union[pl.Series, pl.Expr],
    schema: Union[Schema, Converter],
    message: Optional[str] = None,
    **options: Any,
) -> Union[pl.Series, pl.Expr]:
    """The records of a ``Binary`` Series as a ``Struct`` Series (one field per protobuf
    field), or, for an expression, the expression that does so. ``schema``: a
    :class:`protojit.Schema` with ``message`` and the converter's keywords, or a
    :class:`protojit.Converter`."""

def to_frame(series: pl.Series, schema: Union[Schema, Converter], message: Optional[str] = None, **options: Any) -> pl.DataFrame:
    """The records of a ``Binary`` Series as a DataFrame, one column per field."""
