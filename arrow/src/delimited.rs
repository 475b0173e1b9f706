//! Varint-delimited streams (`writeDelimitedTo`) in memory: the records one by one, each with its number and byte offset.

/// One record of a delimited stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Record number, from 1.
    pub number: u64,
    /// Byte offset of the record's first byte (after its length prefix) in the stream.
    pub offset: usize,
    /// The record's bytes.
    pub bytes: &'a [u8],
}

/// A delimited stream that does not split into records.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The length prefix of record `number` is cut off or longer than 10 bytes.
    #[error("record {number}: bad length prefix at byte offset {offset}")]
    BadPrefix {
        /// Record number, from 1.
        number: u64,
        /// Byte offset of the prefix.
        offset: usize,
    },
    /// Record `number` announces more bytes than the stream has left.
    #[error("record {number}: the length prefix at byte offset {offset} announces {len} bytes, only {left} remain")]
    Truncated {
        /// Record number, from 1.
        number: u64,
        /// Byte offset of the prefix.
        offset: usize,
        /// Announced length.
        len: u64,
        /// Bytes left after the prefix.
        left: usize,
    },
}

/// The records of a delimited stream held in memory. Stops after the first error.
#[derive(Clone, Debug)]
pub struct DelimitedRecords<'a> {
    data: &'a [u8],
    pos: usize,
    number: u64,
    failed: bool,
}

impl<'a> DelimitedRecords<'a> {
    /// The records of `data`.
    pub fn new(data: &'a [u8]) -> DelimitedRecords<'a> {
        DelimitedRecords { data, pos: 0, number: 0, failed: false }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for DelimitedRecords<'a> {
    type Item = Result<Record<'a>, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let number = self.number + 1;
        let start = self.pos;
        let mut len = 0u64;
        let mut i = 0;
        loop {
            let Some(&b) = self.data.get(start + i) else {
                self.failed = true;
                return Some(Err(StreamError::BadPrefix { number, offset: start }));
            };
            len |= u64::from(b & 0x7f) << (7 * i);
            i += 1;
            if b < 0x80 {
                break;
            }
            if i == 10 {
                self.failed = true;
                return Some(Err(StreamError::BadPrefix { number, offset: start }));
            }
        }
        let body = start + i;
        let left = self.data.len() - body;
        if len > left as u64 {
            self.failed = true;
            return Some(Err(StreamError::Truncated { number, offset: start, len, left }));
        }
        let end = body + len as usize;
        self.pos = end;
        self.number = number;
        Some(Ok(Record { number, offset: body, bytes: &self.data[body..end] }))
    }
}
