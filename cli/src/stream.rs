//! Reading varint-length-delimited streams (`writeDelimitedTo`) record by record through `protojit::delimited`, with one-line errors that name the input, the record and the byte offset.

use std::io::Read;

use protojit::delimited::ReadError;
pub use protojit::delimited::RecordInfo;

use crate::common::Failure;

/// Reads records from a stream, naming it in its errors.
pub struct RecordReader<R: Read> {
    inner: protojit::delimited::RecordReader<R>,
    /// The input's name, for messages.
    name: String,
    /// What the records are (a message type name), for messages.
    what: String,
}

impl<R: Read> RecordReader<R> {
    pub fn new(r: R, name: &str, what: &str) -> Self {
        RecordReader { inner: protojit::delimited::RecordReader::new(r), name: name.to_owned(), what: what.to_owned() }
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.inner.offset()
    }

    /// Appends the next record's bytes to `buf`; `None` at the end of the stream.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordInfo>, Failure> {
        self.inner.next_into(buf).map_err(|e| self.failure(e))
    }

    /// Reads the next run of records into `run`, listing them in `records` (see
    /// [`protojit::delimited::RecordReader::read_run`]): returns whether more may follow,
    /// and the error that ends the stream after the listed records, if one does.
    pub fn read_run(
        &mut self,
        run: &mut Vec<u8>,
        records: &mut Vec<(RecordInfo, usize)>,
        max_records: usize,
        max_bytes: usize,
    ) -> (bool, Option<Failure>) {
        match self.inner.read_run(run, records, max_records, max_bytes) {
            Ok(more) => (more, None),
            Err(e) => (false, Some(self.failure(e))),
        }
    }

    fn failure(&self, e: ReadError) -> Failure {
        let (name, what) = (&self.name, &self.what);
        Failure::input(match e {
            ReadError::Io(e) => format!("cannot read {name}: {e}"),
            ReadError::PrefixCutOff { number, offset } => format!(
                "{name}: record {number}: truncated stream of {what}: the length prefix at byte offset {offset} is cut off"
            ),
            ReadError::PrefixTooLong { number, offset } => format!(
                "{name}: record {number}: bad stream of {what}: the length prefix at byte offset {offset} is a varint longer than 10 bytes"
            ),
            ReadError::TooLarge { number, offset, len, .. } => format!(
                "{name}: record {number}: bad stream of {what}: the length prefix at byte offset {offset} announces {len} bytes, more than a message may have (4 GiB)"
            ),
            ReadError::Truncated { number, offset, len, got } => format!(
                "{name}: record {number}: truncated stream of {what}: the length prefix at byte offset {offset} announces {len} bytes, only {got} remain"
            ),
            other => format!("{name}: {other}"),
        })
    }
}
