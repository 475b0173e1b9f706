"""protojit: protobuf records whose schema is known only at run time, into pyarrow record
batches (and so Polars and DuckDB), dicts, proto3 JSON and text format, and back."""

import os
from typing import Any, BinaryIO, Iterator, List, Literal, Optional, Sequence, Union

import pyarrow as pa

__version__: str
"""The version of the protojit workspace this module was built from."""

_Path = Union[str, "os.PathLike[str]"]
_Bytes = Union[bytes, bytearray, memoryview]

class Error(ValueError):
    """Base class of protojit's errors: a schema that does not load, a record that does
    not decode, a value that does not encode."""

class SchemaError(Error):
    """A schema that does not load (the message says which file and why), or a message
    type it does not have."""

class DecodeError(Error):
    """A record that does not decode."""

    record: Optional[int]
    """Index of the record in the input, from 0 (the message counts from 1, as the CLI
    does); ``None`` for a single message."""
    offset: int
    """Byte offset of the fault inside the record (for a framing fault of a delimited
    stream: of the length prefix in the stream)."""
    kind: str
    """What is wrong: ``truncated``, ``length_out_of_bounds``, ``varint_too_long``,
    ``field_number_zero``, ``invalid_wire_type``, ``unmatched_end_group``,
    ``unterminated_group``, ``depth_limit_exceeded``, ``invalid_utf8``, ``tag_too_long``,
    ``null_record``, ``framing``, ``truncated_stream``, ``bad_length_prefix``,
    ``record_too_large``, ..."""
    message: str
    """The one line the CLI prints for it."""

class EncodeError(Error):
    """A dict, JSON or text value that does not encode as the message type, a message
    that has no JSON form, or a table whose columns do not encode as the message type
    (:meth:`Converter.from_record_batch`)."""

class Schema:
    """A protobuf schema loaded at run time. Make converters, decoders and encoders of its
    message types from it; share it freely (it is immutable and thread-safe)."""

    @staticmethod
    def from_descriptor_set(data: Union[_Bytes, _Path]) -> "Schema":
        """A schema from a serialized ``FileDescriptorSet`` (``protoc --include_imports -o``,
        ``buf build -o``): its bytes, or the path of the file."""
    @staticmethod
    def from_proto(files: Union[_Path, Sequence[_Path]], include: Optional[Union[_Path, Sequence[_Path]]] = None) -> "Schema":
        """A schema from ``.proto`` files, resolving imports through ``include``
        (default: each file's own directory) and the well-known types. Compiled with
        protox; where protox refuses a file (editions, the newest syntax), with ``protoc``
        from ``PATH``, as :attr:`notes` then says."""
    @staticmethod
    def from_proto_source(source: str, name: str = "schema.proto") -> "Schema":
        """A schema from ``.proto`` source text (imports: the well-known types only)."""
    @staticmethod
    def from_python(descriptor: Any) -> "Schema":
        """A schema from ``google.protobuf`` descriptors: ``Msg.DESCRIPTOR.file``,
        ``Msg.DESCRIPTOR``, a generated message class, a ``_pb2`` module, or a list of
        them. Each file is taken with every file it imports."""
    def to_descriptor_set(self) -> bytes:
        """The schema as a serialized ``FileDescriptorSet`` (every file, imports first):
        what :meth:`from_descriptor_set` reads and ``descriptor_pb2.FileDescriptorSet``
        parses."""
    @property
    def message_names(self) -> List[str]:
        """Full names of every message type, sorted."""
    @property
    def notes(self) -> List[str]:
        """What loading the schema noted."""
    def resolve_type(self, name: str) -> str:
        """The full name of a message type given by its full name or a unique short name;
        :class:`SchemaError` if there is none or more than one."""
    def converter(
        self,
        message: str,
        *,
        select: Optional[Sequence[str]] = None,
        enums: Literal["dictionary", "number", "string"] = "dictionary",
        strings: Literal["offsets", "views"] = "offsets",
        max_recursion: int = 3,
        well_known_types: bool = True,
        oneof_case: bool = False,
        maps: Literal["map", "entries"] = "map",
        large: bool = False,
        flatten: bool = False,
        explode: Optional[str] = None,
        explode_outer: Optional[str] = None,
        any: Literal["struct", "json"] = "struct",
        extensions: bool = False,
        recursion: Literal["cut", "json"] = "cut",
        structs: Literal["struct", "json"] = "struct",
        framing: Literal["bare", "schema_registry"] = "bare",
        schema_id_column: Optional[str] = None,
        path: Optional[Literal["auto", "chunked", "compiled", "direct", "tree"]] = None,
        engine: Literal["auto", "jit", "interp"] = "auto",
        max_depth: int = 100,
        nulls: Literal["null", "error"] = "null",
        errors: Literal["raise", "skip"] = "raise",
        threads: int = 1,
    ) -> "Converter":
        """A converter of records of ``message`` (a full name or a unique short one) into
        Arrow record batches. Keywords (every one of the Rust ``ArrowOptions``):

        - ``select``: field paths to convert (``"id"``, ``"payload.user.name"``), in
          column order; unselected fields are skipped on the wire, not decoded.
        - ``enums``: ``"dictionary"`` (``dictionary<int32, utf8>`` of value names),
          ``"number"`` (``int32``) or ``"string"`` (plain ``utf8`` names).
        - ``strings``: ``"offsets"`` (``utf8``/``binary``) or ``"views"``
          (``utf8_view``/``binary_view``; long values point into the input array).
        - ``max_recursion``: how often one type may appear on a path before the field that
          would nest it again is left out (recursive types have no finite Arrow schema).
        - ``well_known_types``: Timestamp, Duration and the wrappers as native Arrow types
          (``True``) or as the structs they are.
        - ``oneof_case``: a ``<oneof>_case`` column per oneof (``dictionary<int8, utf8>``
          of the set member's name, null when none is), after its message's other columns;
          only members that have a column can be seen.
        - ``maps``: ``"map"`` (``map<K, V>``) or ``"entries"`` (``list<struct<key, value>>``,
          for engines without a map type).
        - ``large``: ``large_utf8``, ``large_binary`` and ``large_list`` (64-bit offsets)
          everywhere (view strings stay views; maps stay maps unless ``maps="entries"``).
        - ``flatten``: singular message fields as top-level columns named by their path
          (``"a.b.c"``), null where a parent message is absent; lists and maps stay whole.
          :meth:`Converter.from_record_batch` regroups them.
        - ``any``: ``google.protobuf.Any`` fields as a ``struct`` (``type_url``,
          ``value``) or as ``"json"``: ``utf8`` proto3 JSON of the packed message
          (``{"@type": url, ...}``, resolved through the schema; an unresolved type gives
          ``{"@type": url, "value": "<base64>"}``, counted in
          :attr:`Converter.unresolved_any`), of the ``arrow.json`` extension type
          (``pa.json_()``); :meth:`Converter.from_record_batch` parses it back.
        - ``structs``: ``google.protobuf.Struct``, ``Value`` and ``ListValue`` as the
          structs they are (``"struct"``, cut at ``max_recursion``) or as their proto3 JSON
          (``"json"``, ``pa.json_()``, whole however deep).
        - ``recursion``: where ``max_recursion`` cuts a recursive type, the field is left
          out (``"cut"``) or holds the subtree's proto3 JSON (``"json"``, ``pa.json_()``;
          null where it has no JSON form); the compiled column appenders leave such
          columns to the chunked path (:attr:`Converter.path_note` says so).
        - ``extensions``: extensions declared in the schema for a converted message as
          columns named ``"[pkg.ext]"`` after its fields (null when absent);
          :meth:`Converter.from_record_batch` refuses them.
        - ``explode``: a field path (``"items"``, ``"order.lines"``: singular messages,
          then a repeated field): one row per element, the element in the list's place
          (a struct for messages; with ``flatten``, ``"items.sku"`` columns), the record's
          other columns repeated on each of its rows; a record without an element (and a
          null entry) gives no row. ``explode_outer``: the same, and a record without an
          element keeps one row, its element null. Records without an element are counted
          in :attr:`Converter.unexploded`; :meth:`Converter.from_record_batch` refuses
          exploded rows (they are not records).
        - ``framing``: ``"schema_registry"`` checks and strips Kafka's schema-registry
          header; ``schema_id_column`` keeps the schema id as an ``int32`` column.
        - ``path``: how records become rows (``None``: the library's default, ``"auto"``:
          the compiled column appenders raced against the chunked path on the first chunks,
          the faster converting the rest); the converter may take another and say why in
          :attr:`Converter.path_note`.
        - ``engine``: ``"auto"`` (tiered: hot types compiled in the background), ``"jit"``
          (compile first), ``"interp"``; ``max_depth``: the nesting limit.
        - ``nulls``: a null entry of the input becomes a row of nulls (``"null"``; the
          schema's top-level fields are then nullable) or a :class:`DecodeError`.
        - ``errors``: a record that does not decode raises :class:`DecodeError`
          (``"raise"``) or is left out (``"skip"``), counted in the result schema's
          metadata (``protojit.skipped``) and in :attr:`Converter.skipped`.
        - ``threads``: cores to use on large inputs (the rows stay in order). Each converts
          a share of the records, then their batches are joined by a copy: it pays on
          narrow projections and expensive records; on a wide table of small records the
          copy into fresh memory takes about what the second core gains (BENCHMARKS.md,
          "Python").

        Bad values raise ``ValueError`` saying what to use; a bad path or type,
        :class:`SchemaError`."""
    def decoder(self, message: str, *, engine: Literal["auto", "jit", "interp"] = "auto", max_depth: int = 100) -> "Decoder":
        """A decoder of single messages of ``message`` into dicts, JSON and text."""
    def encoder(self, message: str, *, ignore_unknown_fields: bool = False, max_depth: int = 100) -> "Encoder":
        """An encoder of ``message`` from dicts, JSON and text into binary."""

class Converter:
    """Converts serialized records of one message type into Arrow. Thread-safe; the GIL
    is released while it converts."""

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of what it returns, known before any data."""
    @property
    def message_type(self) -> str:
        """The full name of the message type."""
    @property
    def path(self) -> str:
        """How records become rows: ``"auto"`` (while its race is undecided),
        ``"chunked"``, ``"compiled"``, ``"direct"`` or ``"tree"``."""
    @property
    def path_note(self) -> Optional[str]:
        """Why :attr:`path` is not the path asked for, if it is not; on the auto path, the
        race's times once it is decided."""
    @property
    def notes(self) -> List[str]:
        """Fields left out where recursive types were cut, one line each."""
    @property
    def skipped(self) -> int:
        """Records left out (``errors="skip"``) by every call so far, streams included."""
    @property
    def unresolved_any(self) -> int:
        """Under ``any="json"``: the ``Any`` values so far whose type the schema does not
        resolve; 0 without it."""
    @property
    def unexploded(self) -> int:
        """Under ``explode`` / ``explode_outer``: the records so far that had nothing to
        explode (an empty list, or a message on the path absent); 0 without them."""
    def to_record_batch(self, data: Any) -> Union[pa.RecordBatch, pa.Table]:
        """The records of ``data``, one row each, in order: a ``pa.RecordBatch`` for an
        array, a ``pa.Table`` (a batch per chunk) for a ``pa.ChunkedArray`` or another
        Arrow stream. ``data``: a ``pyarrow`` ``binary``, ``large_binary`` or
        ``binary_view`` array (read in place, not copied), a ``ChunkedArray`` of them, a
        Polars ``Binary`` Series, a ``list`` of ``bytes`` (``None`` for a null entry), or
        any object with ``__arrow_c_array__`` / ``__arrow_c_stream__``. The result is
        handed over through the Arrow C data interface, not copied."""
    def read_delimited(
        self,
        source: Union[_Path, BinaryIO, bytes],
        *,
        batch_size: int = 65536,
        compression: Literal["auto", "none", "gzip", "zstd", "bzip2", "xz"] = "auto",
        errors: Optional[Literal["raise", "skip"]] = None,
        max_record: Optional[int] = None,
    ) -> pa.RecordBatchReader:
        """A ``pa.RecordBatchReader`` over the varint-delimited records
        (``writeDelimitedTo``) of a file (a path or a binary file object) or of bytes,
        read as the batches are: memory stays bounded however large the file (a batch
        closes at ``batch_size`` records or once it holds 8 MiB of input). With
        ``compression="auto"`` a ``.gz``, ``.zst``, ``.bz2`` or ``.xz`` name, else the
        first bytes, say how to decompress. ``errors`` overrides the converter's;
        ``max_record`` refuses records longer than that many bytes (default 4 GiB - 1).
        ``.read_all()`` gives a ``pa.Table``."""
    def from_record_batch(
        self,
        data: Any,
        *,
        ignore_extra_columns: bool = False,
        allow_missing_columns: bool = False,
    ) -> Union[pa.BinaryArray, pa.ChunkedArray]:
        """The way back: one canonical message per row of ``data`` (a ``pa.RecordBatch``,
        a ``pa.Table`` or another Arrow stream, a Polars DataFrame), as a
        ``pa.BinaryArray`` (a ``pa.ChunkedArray``, one array per batch, for a table or a
        stream). Columns are matched to fields by name; besides the shapes
        :meth:`to_record_batch` makes, wider integers (checked), large and view strings,
        large lists, other time units and enums as names or numbers are read. A column
        that names no field is an error unless ``ignore_extra_columns``; a missing column
        of a field this converter always writes (no presence, repeated, map) is an error
        unless ``allow_missing_columns``. Raises :class:`EncodeError` naming the column
        (and the row, for a bad value)."""
    def write_delimited(
        self,
        sink: Union[_Path, BinaryIO],
        data: Any,
        *,
        ignore_extra_columns: bool = False,
        allow_missing_columns: bool = False,
    ) -> int:
        """Writes one varint-delimited message per row of ``data`` (what
        :meth:`from_record_batch` takes) to ``sink`` (a path, created or truncated, or a
        binary file object); returns the number of records. :meth:`read_delimited` reads
        them back."""

class DelimitedBatches(Iterator[pa.RecordBatch]):
    """The batches of a delimited stream (what :meth:`Converter.read_delimited` reads)."""

    def __iter__(self) -> "DelimitedBatches": ...
    def __next__(self) -> pa.RecordBatch: ...

class Decoder:
    """Decodes single messages of one type."""

    @property
    def message_type(self) -> str:
        """The full name of the message type."""
    def to_dict(
        self,
        data: _Bytes,
        *,
        preserving_proto_field_name: bool = False,
        use_integers_for_enums: bool = False,
        always_print_fields_with_no_presence: bool = False,
    ) -> dict:
        """The message as ``json_format.MessageToDict`` returns it, with its keywords and
        their meanings (64-bit integers as ``str``, bytes as base64, enums as names,
        ``float`` fields rounded to the shortest of 6 or more digits that reads back as the
        same 32-bit float). One deliberate difference: a field of enum type
        ``google.protobuf.NullValue`` is ``None`` whatever the keywords say, as the proto3
        JSON mapping writes it; ``MessageToDict(use_integers_for_enums=True)`` gives ``0``
        (``ParseDict`` reads both). A message with no JSON form (a Timestamp past year
        9999, an ``Any`` of a type the schema lacks, a NaN in a ``Value``) raises
        :class:`EncodeError`."""
    def to_json(
        self,
        data: _Bytes,
        *,
        preserving_proto_field_name: bool = False,
        use_integers_for_enums: bool = False,
        always_print_fields_with_no_presence: bool = False,
        indent: Optional[int] = None,
    ) -> str:
        """The message as proto3 JSON text: one line, or ``indent`` spaces per level."""
    def to_text(self, data: _Bytes) -> str:
        """The message in protobuf's text format, as ``protoc --decode`` prints it."""
    def validate(self, data: _Bytes) -> None:
        """Raises :class:`DecodeError` if ``data`` does not decode."""
    def canonical(self, data: _Bytes) -> bytes:
        """The message's canonical binary encoding: known fields in number order, as
        protobuf writes them, then the unknown fields as they came (as ``SerializeToString``
        keeps them)."""
    @staticmethod
    def decode_raw(data: _Bytes) -> str:
        """Bytes without a schema, as ``protoc --decode_raw`` prints them."""

class Encoder:
    """Encodes messages of one type from dicts, JSON and text format into binary."""

    @property
    def message_type(self) -> str:
        """The full name of the message type."""
    def from_dict(self, value: dict) -> bytes:
        """Binary from a dict in the form ``json_format.MessageToDict`` returns and
        ``json_format.ParseDict`` reads."""
    def from_json(self, text: Union[str, bytes]) -> bytes:
        """Binary from proto3 JSON text."""
    def from_text(self, text: Union[str, bytes]) -> bytes:
        """Binary from protobuf's text format (what ``protoc --encode`` reads)."""

def decode_raw(data: _Bytes) -> str:
    """Bytes without a schema, as ``protoc --decode_raw`` prints them."""
