//! Varint-delimited streams (`writeDelimitedTo`): one length-prefix reader, and the records of a stream held in memory, fed in chunks, or read from any `io::Read` in bounded memory, each with its number and byte offset.
//!
//! Every reader of delimited records in protojit goes through [`length_prefix`]: the
//! Arrow converter's in-memory streams ([`DelimitedRecords`]), the SQL scans, which are fed
//! a file's bytes in chunks, and [`RecordReader`] (the CLI and Python).

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
    /// A length prefix is a varint longer than 10 bytes (or of more than 64 bits).
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

/// A record's length prefix at the start of some bytes (see [`length_prefix`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// The record's length, after a prefix of `size` bytes.
    Length {
        /// The prefix's size in bytes (1 to 10).
        size: usize,
        /// The length it announces.
        len: u64,
    },
    /// The bytes end inside the prefix (more may come).
    Incomplete,
    /// Not a length: a varint longer than 10 bytes, or of more than 64 bits.
    Invalid,
}

/// The length prefix at the start of `bytes`: a varint of at most 10 bytes whose tenth
/// holds at most the top bit of 64, as protobuf reads its own varints.
#[inline]
pub fn length_prefix(bytes: &[u8]) -> Prefix {
    let mut len = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 1 {
            return Prefix::Invalid;
        }
        len |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Prefix::Length { size: i + 1, len };
        }
    }
    if bytes.len() >= 10 {
        Prefix::Invalid
    } else {
        Prefix::Incomplete
    }
}

/// One record of a delimited stream held in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Record number, from 1.
    pub number: u64,
    /// Byte offset of the record's first byte (after its length prefix) in the stream.
    pub offset: usize,
    /// The record's bytes.
    pub bytes: &'a [u8],
}

/// A delimited stream held in memory that does not split into records.
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

/// The records of a delimited stream held in memory, borrowed from it. Stops after the
/// first error.
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
        let (number, start) = (self.number + 1, self.pos);
        let Prefix::Length { size, len } = length_prefix(&self.data[start..]) else {
            self.failed = true;
            return Some(Err(StreamError::BadPrefix { number, offset: start }));
        };
        let body = start + size;
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
        if let Prefix::Length { size: prefix, len } = length_prefix(self.r.buffer()) {
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
            if i == 9 && byte > 1 {
                break;
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(Some(value));
            }
        }
        Err(ReadError::PrefixTooLong { number, offset })
    }
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

    #[test]
    fn length_prefixes_and_records_in_memory() {
        assert_eq!(length_prefix(b"\x05abc"), Prefix::Length { size: 1, len: 5 });
        assert_eq!(length_prefix(b"\xe9\x07"), Prefix::Length { size: 2, len: 1001 });
        assert_eq!(length_prefix(b"\x80\x80"), Prefix::Incomplete);
        assert_eq!(length_prefix(b""), Prefix::Incomplete);
        assert_eq!(length_prefix(&[0xff; 11]), Prefix::Invalid);
        let mut max = [0xff; 10];
        max[9] = 0x01;
        assert_eq!(length_prefix(&max), Prefix::Length { size: 10, len: u64::MAX });
        max[9] = 0x02;
        assert_eq!(length_prefix(&max), Prefix::Invalid);
        let records: Vec<_> = DelimitedRecords::new(b"\x02ab\x00\x01c").collect();
        assert_eq!(
            records,
            [
                Ok(Record { number: 1, offset: 1, bytes: b"ab" }),
                Ok(Record { number: 2, offset: 4, bytes: b"" }),
                Ok(Record { number: 3, offset: 5, bytes: b"c" }),
            ]
        );
        let records: Vec<_> = DelimitedRecords::new(b"\x02ab\x05xy").collect();
        assert_eq!(records[1], Err(StreamError::Truncated { number: 2, offset: 3, len: 5, left: 2 }));
        assert_eq!(records.len(), 2);
        let records: Vec<_> = DelimitedRecords::new(b"\x01a\x80").collect();
        assert_eq!(records[1], Err(StreamError::BadPrefix { number: 2, offset: 2 }));
    }
}
