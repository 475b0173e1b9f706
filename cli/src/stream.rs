//! Reading varint-length-delimited streams (`writeDelimitedTo`) record by record, with
//! one-line errors that name the input, the record and the byte offset.

use std::io::{BufRead, BufReader, Read};

use crate::common::Failure;

/// Where one record sits in the stream.
#[derive(Clone, Copy, Debug)]
pub struct RecordInfo {
    /// Record number, from 1.
    pub number: u64,
    /// Byte offset of its first byte in the stream.
    pub data_offset: u64,
    /// Its length.
    pub len: usize,
}

/// Largest record a decoder accepts (4 GiB - 1).
const MAX_RECORD: u64 = u32::MAX as u64;

/// Bytes read from the input at a time: big reads, and most records found whole in the
/// buffer (see [`RecordReader::next_into`]).
const READ_BUFFER: usize = 1 << 18;

/// Reads records from a stream.
pub struct RecordReader<R: Read> {
    r: BufReader<R>,
    /// Bytes consumed so far.
    offset: u64,
    /// Records read so far.
    records: u64,
    /// The input's name, for messages.
    name: String,
    /// What the records are (a message type name), for messages.
    what: String,
}

impl<R: Read> RecordReader<R> {
    pub fn new(r: R, name: &str, what: &str) -> Self {
        RecordReader {
            r: BufReader::with_capacity(READ_BUFFER, r),
            offset: 0,
            records: 0,
            name: name.to_owned(),
            what: what.to_owned(),
        }
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Appends the next record's bytes to `buf`; `None` at the end of the stream.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordInfo>, Failure> {
        // The common case: the length prefix and the record are both in the buffer, so
        // one copy takes them, with no read call per byte of the prefix.
        if let Some((prefix, len)) = buffered_prefix(self.r.buffer()) {
            let available = self.r.buffer().len() - prefix;
            if len <= available as u64 {
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
        let prefix_offset = self.offset;
        let Some(len) = self.read_prefix(number)? else { return Ok(None) };
        if len > MAX_RECORD {
            return Err(Failure::input(format!(
                "{}: record {number}: bad stream of {}: the length prefix at byte offset {prefix_offset} announces {len} bytes, more than a message may have (4 GiB)",
                self.name, self.what
            )));
        }
        let data_offset = self.offset;
        let start = buf.len();
        // Through `take`, so that a huge length prefix on a short input allocates no more
        // than the bytes that actually arrive.
        let got = (&mut self.r)
            .take(len)
            .read_to_end(buf)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", self.name)))?;
        self.offset += got as u64;
        if (got as u64) < len {
            buf.truncate(start);
            return Err(Failure::input(format!(
                "{}: record {number}: truncated stream of {}: the length prefix at byte offset {prefix_offset} announces {len} bytes, only {got} remain",
                self.name, self.what
            )));
        }
        self.records = number;
        Ok(Some(RecordInfo { number, data_offset, len: got }))
    }

    /// Reads a length prefix byte by byte (across buffer refills); `None` at a clean end
    /// of the stream.
    fn read_prefix(&mut self, number: u64) -> Result<Option<u64>, Failure> {
        let start = self.offset;
        let mut value = 0u64;
        for i in 0..10 {
            let byte = loop {
                match self.r.fill_buf() {
                    Ok([]) if i == 0 => return Ok(None),
                    Ok([]) => {
                        return Err(Failure::input(format!(
                            "{}: record {number}: truncated stream of {}: the length prefix at byte offset {start} is cut off",
                            self.name, self.what
                        )))
                    }
                    Ok(buf) => break buf[0],
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Failure::input(format!("cannot read {}: {e}", self.name))),
                }
            };
            self.r.consume(1);
            self.offset += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(Some(value));
            }
        }
        Err(Failure::input(format!(
            "{}: record {number}: bad stream of {}: the length prefix at byte offset {start} is a varint longer than 10 bytes",
            self.name, self.what
        )))
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
