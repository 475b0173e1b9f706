//! Varint-delimited streams (`writeDelimitedTo`) read from any `io::Read`: the records one by one, each with its number and byte offset, in bounded memory.

use std::io::{BufRead, BufReader, Read};

/// Where one record sits in its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    /// Record number, from 1.
    pub number: u64,
    /// Byte offset of the record's first byte (after its length prefix) in the stream.
    pub data_offset: u64,
    /// Its length in bytes.
    pub len: usize,
}

/// Why a delimited stream does not split into records. Offsets are those of the record's
/// length prefix in the (decompressed) stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The input could not be read.
    #[error("cannot read the stream: {0}")]
    Io(#[from] std::io::Error),
    /// The stream ends inside a length prefix.
    #[error("record {number}: truncated stream: the length prefix at byte offset {offset} is cut off")]
    PrefixCutOff {
        /// Record number, from 1.
        number: u64,
        /// Byte offset of the prefix.
        offset: u64,
    },
    /// A length prefix is a varint longer than 10 bytes.
    #[error("record {number}: bad stream: the length prefix at byte offset {offset} is a varint longer than 10 bytes")]
    PrefixTooLong {
        /// Record number, from 1.
        number: u64,
        /// Byte offset of the prefix.
        offset: u64,
    },
    /// A length prefix announces more than the reader's record limit.
    #[error("record {number}: bad stream: the length prefix at byte offset {offset} announces {len} bytes, more than a record may have ({max} bytes)")]
    TooLarge {
        /// Record number, from 1.
        number: u64,
        /// Byte offset of the prefix.
        offset: u64,
        /// Announced length.
        len: u64,
        /// The reader's limit ([`RecordReader::with_max_record`]).
        max: u64,
    },
    /// The stream ends before the bytes a length prefix announces.
    #[error("record {number}: truncated stream: the length prefix at byte offset {offset} announces {len} bytes, only {got} remain")]
    Truncated {
        /// Record number, from 1.
        number: u64,
        /// Byte offset of the prefix.
        offset: u64,
        /// Announced length.
        len: u64,
        /// Bytes that arrived.
        got: u64,
    },
}

/// Largest record a reader accepts by default: 4 GiB - 1, past what a decoder takes.
pub const MAX_RECORD: u64 = u32::MAX as u64;

/// Bytes read from the input at a time: big reads, and most records found whole in the
/// buffer (see [`RecordReader::next_into`]).
const READ_BUFFER: usize = 1 << 18;

/// Reads the records of a varint-delimited stream from `R`, one at a time, into a buffer
/// the caller owns: memory stays bounded by the largest record, and a length prefix larger
/// than the input allocates no more than the bytes that arrive.
pub struct RecordReader<R: Read> {
    r: BufReader<R>,
    /// Bytes consumed so far.
    offset: u64,
    /// Records read so far.
    records: u64,
    max_record: u64,
}

impl<R: Read> std::fmt::Debug for RecordReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader").field("offset", &self.offset).field("records", &self.records).finish()
    }
}

impl<R: Read> RecordReader<R> {
    /// A reader of the records of `r`.
    pub fn new(r: R) -> Self {
        RecordReader { r: BufReader::with_capacity(READ_BUFFER, r), offset: 0, records: 0, max_record: MAX_RECORD }
    }

    /// Refuses records longer than `max` bytes ([`ReadError::TooLarge`]); default [`MAX_RECORD`].
    pub fn with_max_record(mut self, max: u64) -> Self {
        self.max_record = max;
        self
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Appends the next record's bytes to `buf`; `None` at the end of the stream. After
    /// an error, `buf` is as it was.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordInfo>, ReadError> {
        // The common case: the length prefix and the record are both in the buffer, so
        // one copy takes them, with no read call per byte of the prefix.
        if let Some((prefix, len)) = buffered_prefix(self.r.buffer()) {
            let available = self.r.buffer().len() - prefix;
            if len <= available as u64 && len <= self.max_record {
                let len = len as usize;
                buf.extend_from_slice(&self.r.buffer()[prefix..prefix + len]);
                self.r.consume(prefix + len);
                let data_offset = self.offset + prefix as u64;
                self.offset = data_offset + len as u64;
                self.records += 1;
                return Ok(Some(RecordInfo { number: self.records, data_offset, len }));
            }
        }
        let number = self.records + 1;
        let offset = self.offset;
        let Some(len) = self.read_prefix(number)? else { return Ok(None) };
        if len > self.max_record {
            return Err(ReadError::TooLarge { number, offset, len, max: self.max_record });
        }
        let data_offset = self.offset;
        let start = buf.len();
        // Through `take`, so that a huge length prefix on a short input allocates no more
        // than the bytes that actually arrive.
        let got = match (&mut self.r).take(len).read_to_end(buf) {
            Ok(got) => got as u64,
            Err(e) => {
                buf.truncate(start);
                return Err(e.into());
            }
        };
        self.offset += got;
        if got < len {
            buf.truncate(start);
            return Err(ReadError::Truncated { number, offset, len, got });
        }
        self.records = number;
        Ok(Some(RecordInfo { number, data_offset, len: got as usize }))
    }

    /// Reads a length prefix byte by byte (across buffer refills); `None` at a clean end
    /// of the stream.
    fn read_prefix(&mut self, number: u64) -> Result<Option<u64>, ReadError> {
        let offset = self.offset;
        let mut value = 0u64;
        for i in 0..10 {
            let byte = loop {
                match self.r.fill_buf() {
                    Ok([]) if i == 0 => return Ok(None),
                    Ok([]) => return Err(ReadError::PrefixCutOff { number, offset }),
                    Ok(buf) => break buf[0],
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                }
            };
            self.r.consume(1);
            self.offset += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(Some(value));
            }
        }
        Err(ReadError::PrefixTooLong { number, offset })
    }
}

/// The length prefix at the start of `buf` (its size in bytes and its value) if `buf`
/// holds all of it and it is a varint of at most 10 bytes; otherwise `None`, and
/// [`RecordReader::read_prefix`] reads it (and reports what is wrong with it).
fn buffered_prefix(buf: &[u8]) -> Option<(usize, u64)> {
    let mut value = 0u64;
    for (i, &byte) in buf.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((i + 1, value));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(data: &[u8]) -> (Vec<Vec<u8>>, Option<ReadError>) {
        let mut r = RecordReader::new(data).with_max_record(1000);
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            match r.next_into(&mut buf) {
                Ok(Some(info)) => {
                    assert_eq!(info.len, buf.len());
                    out.push(buf)
                }
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn splits_and_reports() {
        let (ok, err) = records(b"\x02ab\x00\x01c");
        assert_eq!(ok, [b"ab".to_vec(), vec![], b"c".to_vec()]);
        assert!(err.is_none());
        let (ok, err) = records(b"\x02ab\x05xy");
        assert_eq!(ok.len(), 1);
        assert_eq!(
            err.unwrap().to_string(),
            "record 2: truncated stream: the length prefix at byte offset 3 announces 5 bytes, only 2 remain"
        );
        let (_, err) = records(b"\x80");
        assert!(matches!(err, Some(ReadError::PrefixCutOff { number: 1, offset: 0 })));
        let (_, err) = records(&[0xff; 11]);
        assert!(matches!(err, Some(ReadError::PrefixTooLong { number: 1, offset: 0 })));
        let (_, err) = records(b"\xe9\x07");
        assert!(matches!(err, Some(ReadError::TooLarge { len: 1001, max: 1000, .. })));
        // A huge prefix on a short input allocates only what arrives.
        let (_, err) = records(b"\xff\xff\xff\xff\x0fxyz");
        assert!(matches!(err, Some(ReadError::TooLarge { .. })));
    }
}
