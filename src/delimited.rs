//! Varint-delimited streams (`writeDelimitedTo`): one length-prefix reader, and the records of a stream held in memory, fed in chunks, or read from any `io::Read` in bounded memory, each with its number and byte offset.
//!
//! Every reader of delimited records in protojit goes through [`length_prefix`]: the
//! Arrow converter's in-memory streams ([`DelimitedRecords`]), the SQL scans, which are fed
//! a file's bytes in chunks, and [`RecordReader`] (the CLI and Python).

use std::io::Read;

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

/// Bytes read from the input at a time by [`RecordReader::next_into`]: big reads, and most
/// records found whole in the buffer.
const READ_BUFFER: usize = 1 << 18;

/// The least [`RecordReader::read_run`] reads at a time: a page, so that the read that
/// completes a run's last record takes little of the next run (which copies it back).
const MIN_RUN_READ: usize = 1 << 12;

/// Reads the records of a varint-delimited stream from `R`, one at a time
/// ([`next_into`](Self::next_into)) or a run at a time straight into a caller's buffer
/// ([`read_run`](Self::read_run)): memory stays bounded by the largest record (or run), and
/// a length prefix larger than the input allocates no more than the bytes that arrive.
pub struct RecordReader<R: Read> {
    r: R,
    /// Bytes read from `r` and not yet consumed: `buf[pos..end]`. `buf` stays initialized
    /// to its full length, so that a read fills it in place.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
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
        RecordReader { r, buf: Vec::new(), pos: 0, end: 0, offset: 0, records: 0, max_record: MAX_RECORD }
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
        let number = self.records + 1;
        let offset = self.offset;
        loop {
            let (size, len) = match length_prefix(&self.buf[self.pos..self.end]) {
                Prefix::Length { size, len } => (size, len),
                Prefix::Invalid => return Err(ReadError::PrefixTooLong { number, offset }),
                Prefix::Incomplete => {
                    if self.read_some()? == 0 {
                        if self.pos == self.end {
                            return Ok(None);
                        }
                        return Err(ReadError::PrefixCutOff { number, offset });
                    }
                    continue;
                }
            };
            if len > self.max_record {
                return Err(ReadError::TooLarge { number, offset, len, max: self.max_record });
            }
            let body = self.pos + size;
            let data_offset = offset + size as u64;
            let available = self.end - body;
            if len <= available as u64 {
                // The common case: the record is in the buffer, so one copy takes it.
                let len = len as usize;
                buf.extend_from_slice(&self.buf[body..body + len]);
                self.consume(size + len);
                self.records = number;
                return Ok(Some(RecordInfo { number, data_offset, len }));
            }
            // The rest of a long record goes straight into `buf`, through `take`, so that a
            // huge length prefix on a short input allocates no more than the bytes that
            // actually arrive.
            let start = buf.len();
            buf.extend_from_slice(&self.buf[body..self.end]);
            let got = match (&mut self.r).take(len - available as u64).read_to_end(buf) {
                Ok(got) => (available + got) as u64,
                Err(e) => {
                    buf.truncate(start);
                    return Err(e.into());
                }
            };
            self.consume(size + available);
            self.offset += got - available as u64;
            if got < len {
                buf.truncate(start);
                return Err(ReadError::Truncated { number, offset, len, got });
            }
            self.records = number;
            return Ok(Some(RecordInfo { number, data_offset, len: got as usize }));
        }
    }

    /// Reads the next run of records into `run` (emptied first), straight from the input
    /// where it can (so no second copy, and the bytes land in the cache of the thread that
    /// will use them), and lists each record with its start in `run` in `records` (emptied
    /// first): `max_records` records at most, and no more once they hold `max_bytes` bytes
    /// (at least one record when any remain). Returns whether more may follow. On an
    /// error, the records listed before it stay in `run` and `records`.
    ///
    /// `run` may hold bytes past the last record's end (the start of the next one, which
    /// the reader keeps too); only the listed ranges are records.
    pub fn read_run(
        &mut self,
        run: &mut Vec<u8>,
        records: &mut Vec<(RecordInfo, usize)>,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<bool, ReadError> {
        run.clear();
        records.clear();
        // What an earlier read left over starts the run.
        run.extend_from_slice(&self.buf[self.pos..self.end]);
        self.consume_all();
        // The next record's length prefix in `run`.
        let mut at = 0;
        let result = loop {
            if records.len() >= max_records.max(1) || at >= max_bytes.max(1) {
                break Ok(true);
            }
            let number = self.records + 1;
            let need = match length_prefix(&run[at..]) {
                Prefix::Length { size, len } => {
                    if len > self.max_record {
                        break Err(ReadError::TooLarge { number, offset: self.offset, len, max: self.max_record });
                    }
                    let body = at + size;
                    let available = run.len() - body;
                    if len <= available as u64 {
                        let len = len as usize;
                        records.push((RecordInfo { number, data_offset: self.offset + size as u64, len }, body));
                        self.offset += (size + len) as u64;
                        self.records = number;
                        at = body + len;
                        continue;
                    }
                    len as usize - available
                }
                Prefix::Incomplete => 1,
                Prefix::Invalid => break Err(ReadError::PrefixTooLong { number, offset: self.offset }),
            };
            // Read about what the rest of the run needs (judged by its records so far), so
            // that little is left over for the next run to copy.
            let budget = max_bytes.saturating_sub(at);
            let by_records = match records.len() {
                0 => READ_BUFFER,
                n => (at / n).saturating_mul(max_records - n),
            };
            let want = need.max(budget.min(by_records)).max(MIN_RUN_READ);
            match (&mut self.r).take(want as u64).read_to_end(run) {
                Ok(0) => {
                    // The end of the stream: clean between records, else inside one.
                    break match length_prefix(&run[at..]) {
                        _ if at == run.len() => Ok(false),
                        Prefix::Length { size, len } => Err(ReadError::Truncated {
                            number,
                            offset: self.offset,
                            len,
                            got: (run.len() - at - size) as u64,
                        }),
                        _ => Err(ReadError::PrefixCutOff { number, offset: self.offset }),
                    };
                }
                Ok(_) => {}
                Err(e) => break Err(e.into()),
            }
        };
        // The start of the next record stays with the reader.
        if result.is_ok() && at < run.len() {
            self.keep(&run[at..]);
        }
        result
    }

    /// Reads what one read call gives (at most [`READ_BUFFER`] bytes) after the unconsumed
    /// bytes; 0 at the end of the input.
    fn read_some(&mut self) -> std::io::Result<usize> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() < self.end + READ_BUFFER {
            self.buf.resize(self.end + READ_BUFFER, 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Consumes `n` unconsumed bytes.
    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
        if self.pos == self.end {
            self.consume_all();
        }
    }

    /// Forgets the unconsumed bytes (they have been taken elsewhere).
    fn consume_all(&mut self) {
        self.pos = 0;
        self.end = 0;
    }

    /// Keeps `bytes` as the unconsumed bytes (there are none).
    fn keep(&mut self, bytes: &[u8]) {
        debug_assert_eq!(self.pos, self.end);
        if self.buf.len() < bytes.len() {
            self.buf.resize(bytes.len(), 0);
        }
        self.buf[..bytes.len()].copy_from_slice(bytes);
        self.pos = 0;
        self.end = bytes.len();
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

    /// Gives at most `step` bytes per read call (cycling through 1..=step), as pipes do.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        n: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.n = self.n % self.step + 1;
            let k = self.n.min(buf.len()).min(self.data.len());
            buf[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    /// The records and the final error (as text) of `data` read one at a time.
    fn one_by_one(data: &[u8], step: usize) -> (Vec<(RecordInfo, Vec<u8>)>, Option<String>) {
        let mut r = RecordReader::new(Trickle { data, step, n: 0 }).with_max_record(100_000);
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            match r.next_into(&mut buf) {
                Ok(Some(info)) => out.push((info, buf)),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    /// The same, read a run at a time (one run reused, as the CLI reuses its items).
    fn by_runs(
        data: &[u8],
        step: usize,
        max_records: usize,
        max_bytes: usize,
    ) -> (Vec<(RecordInfo, Vec<u8>)>, Option<String>) {
        let mut r = RecordReader::new(Trickle { data, step, n: 0 }).with_max_record(100_000);
        let (mut run, mut records, mut out) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            let result = r.read_run(&mut run, &mut records, max_records, max_bytes);
            assert!(records.len() <= max_records.max(1));
            for &(info, start) in &records {
                out.push((info, run[start..start + info.len].to_vec()));
            }
            assert_eq!(r.records(), out.len() as u64);
            match result {
                Ok(true) => assert!(!records.is_empty(), "a run that says more follow has records"),
                Ok(false) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    proptest::proptest! {
        /// Runs give the records, offsets and errors that single records give, for any
        /// stream (well formed or cut anywhere or with a bad prefix), read sizes and limits.
        #[test]
        fn runs_read_what_single_records_read(
            lens in proptest::collection::vec(0usize..3000, 0..40),
            cut in proptest::option::of(0usize..100_000),
            bad in proptest::option::of((0usize..40, 0u8..3)),
            step in 1usize..70_000,
            max_records in 0usize..20,
            max_bytes in 0usize..20_000,
        ) {
            let mut data = Vec::new();
            for (i, &len) in lens.iter().enumerate() {
                match bad {
                    Some((at, 0)) if at == i => data.extend_from_slice(&[0xff; 11]),
                    Some((at, 1)) if at == i => data.extend_from_slice(b"\x80\xb5\x18"),
                    _ => {}
                }
                let mut n = len as u64;
                while n >= 0x80 {
                    data.push(n as u8 | 0x80);
                    n >>= 7;
                }
                data.push(n as u8);
                data.extend((0..len).map(|j| (i * 31 + j) as u8));
            }
            if let Some(cut) = cut {
                data.truncate(cut.min(data.len()));
            }
            let want = one_by_one(&data, 4096);
            proptest::prop_assert_eq!(&by_runs(&data, step, max_records, max_bytes), &want);
            proptest::prop_assert_eq!(&one_by_one(&data, step), &want);
        }
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
