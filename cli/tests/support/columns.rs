//! Helpers of the columnar and SQL tests: a stream of sample records, one-line failures,
//! and Parquet and Arrow files read back.

use std::fs::File;
use std::path::Path;
use std::process::Output;

use protojit_arrow::arrow_array::cast::AsArray;
use protojit_arrow::arrow_array::types::Int32Type;
use protojit_arrow::arrow_array::RecordBatch;
use protojit_arrow::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{assert_fails, delimited, reading};

/// The one error line (without the `protojit: ` prefix) of a run that failed with `code`.
#[track_caller]
pub fn fails(out: &Output, code: i32) -> String {
    assert_fails(out, code).trim_start_matches("protojit: ").to_owned()
}

/// A delimited stream of `n` sample `Reading`s, ids 1 to `n`.
pub fn stream(n: u32) -> Vec<u8> {
    let records: Vec<Vec<u8>> = (1..=n).map(|id| reading(id, &format!("r{id}"), f64::from(id))).collect();
    delimited(records.iter().map(Vec::as_slice))
}

/// The batches of the Parquet file at `path`.
pub fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(Result::unwrap).collect()
}

/// The `id` column of `batches`, in order.
pub fn ids(batches: &[RecordBatch]) -> Vec<i32> {
    batches
        .iter()
        .flat_map(|b| {
            let i = b.schema().index_of("id").unwrap();
            b.column(i).as_primitive::<Int32Type>().values().to_vec()
        })
        .collect()
}
