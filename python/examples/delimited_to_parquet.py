"""A day of telemetry records in a gzip-compressed delimited file, streamed into Parquet in
bounded memory, then summarised with DuckDB.

    python python/examples/delimited_to_parquet.py [OUT_DIR]

Run from the repository root (the schema and the sample record are in corpus/samples/).
"""

import gzip
import os
import sys
import tempfile

import duckdb
import pyarrow.parquet as pq

import protojit


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def main(out_dir: str) -> None:
    schema = protojit.Schema.from_proto("corpus/samples/telemetry.proto")
    dec = schema.decoder("protojit.samples.Batch")
    enc = schema.encoder("protojit.samples.Batch")
    sample = dec.to_dict(open("corpus/samples/batch.bin", "rb").read())

    # 5,000 records, each from another device: dicts in, protobuf out.
    path = os.path.join(out_dir, "telemetry.bin.gz")
    with gzip.open(path, "wb") as f:
        for i in range(5000):
            sample["device"] = f"greenhouse-{i % 50}"
            record = enc.from_dict(sample)
            f.write(varint(len(record)) + record)

    # Streamed: batches of 1,000 rows, never the whole file in memory.
    conv = schema.converter("protojit.samples.Batch", enums="number")
    reader = conv.read_delimited(path, batch_size=1000)
    parquet = os.path.join(out_dir, "telemetry.parquet")
    with pq.ParquetWriter(parquet, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)

    rows = duckdb.sql(
        f"SELECT device, count(*) AS records, sum(len(samples)) AS samples "
        f"FROM '{parquet}' GROUP BY device ORDER BY device LIMIT 3"
    ).fetchall()
    for row in rows:
        print(*row)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(tmp)
