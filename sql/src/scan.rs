//! Framing and converting a delimited stream that arrives in chunks: records are cut out of the bytes as they come, and converted a batch at a time.
//!
//! Memory is bounded by one batch of records plus one chunk: a scan asks for the next chunk
//! only when fewer than a batch of complete records wait. A record is never split across
//! buffers: the bytes of a record still arriving are carried over to the next buffer (so a
//! record longer than [`MAX_RECORD`] is refused rather than collected without end).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::SchemaRef;
use protojit::delimited::{length_prefix, Prefix};
use protojit_arrow::{AppendError, Converter};

/// The longest record a scan accepts (bytes of its body): half of what one Arrow batch
/// may take in (`protojit_arrow::MAX_BATCH_INPUT`), so every record fits a batch.
pub const MAX_RECORD: u64 = 1 << 29;

/// The input a batch takes in at most (it closes after the record that reaches it), so that
/// a scan of big records (whole tiles, OSM blocks) holds a few MiB of them at a time, as it
/// does 8,192 small ones: with the row count alone, a batch of 8,192 vector tiles would
/// take in ~600 MB and make several GB of columns. The library's bound for every stream.
pub const BATCH_INPUT: usize = protojit_arrow::STREAM_BATCH_INPUT;

/// Why a scan of one file or buffer failed, with where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// A record's length prefix is not a valid varint.
    #[error("{source_name}: record {record} at byte {offset}: bad length prefix")]
    BadLength {
        /// The file (or `<memory>`).
        source_name: String,
        /// Record number in the file, from 1.
        record: u64,
        /// Byte offset of the length prefix in the (uncompressed) file.
        offset: u64,
    },
    /// A record's length prefix claims more than [`MAX_RECORD`] bytes.
    #[error("{source_name}: record {record} at byte {offset}: length {length} is more than the {max} bytes a record may have")]
    TooLong {
        /// The file.
        source_name: String,
        /// Record number, from 1.
        record: u64,
        /// Offset of its length prefix.
        offset: u64,
        /// The length claimed.
        length: u64,
        /// [`MAX_RECORD`].
        max: u64,
    },
    /// The input ends inside a record (or its length prefix).
    #[error(
        "{source_name}: record {record} at byte {offset} is truncated: the input ends {missing} byte(s) short of it"
    )]
    Truncated {
        /// The file.
        source_name: String,
        /// Record number, from 1.
        record: u64,
        /// Offset of its length prefix.
        offset: u64,
        /// Bytes missing (at least 1; for a cut length prefix, 1).
        missing: u64,
    },
    /// A record does not decode as the message type.
    #[error("{source_name}: record {record} at byte {offset}: {error}")]
    Record {
        /// The file.
        source_name: String,
        /// Record number, from 1.
        record: u64,
        /// Offset of the record's first byte after its length prefix (as
        /// `protojit_arrow::Record::offset`); the error's own offset counts from there.
        offset: u64,
        /// What is wrong: its header, or at which offset inside the message.
        error: AppendError,
    },
    /// Arrow refused the batch (a bug in the mapping if it ever happens).
    #[error("{source_name}: {error}")]
    Arrow {
        /// The file.
        source_name: String,
        /// Arrow's error.
        error: datafusion::arrow::error::ArrowError,
    },
}

/// Complete records in one frozen buffer.
struct Segment {
    buffer: Buffer,
    /// Byte ranges of the records' bodies in `buffer`, with the file offset of each body
    /// and the record's number, from the front.
    records: VecDeque<(Range<usize>, u64, u64)>,
}

/// Cuts varint-delimited records out of chunks of one stream and converts them to batches.
pub struct RecordScanner {
    converter: Arc<Converter>,
    /// The schema batches are labelled with (the scan's projected file schema).
    schema: SchemaRef,
    batch_size: usize,
    source_name: String,
    /// Complete records, oldest first.
    segments: VecDeque<Segment>,
    ready: usize,
    /// The bytes of the `ready` records' bodies.
    ready_bytes: usize,
    /// Bytes after the last complete record: a record (or a length prefix) still arriving.
    tail: Vec<u8>,
    /// File offset of `tail[0]`.
    tail_offset: u64,
    /// Records framed so far (walked over or kept).
    framed: u64,
    /// The byte range of the file this scan owns, when it scans part of one: the records
    /// whose length prefix starts in it. Records before it are walked over (framed, counted,
    /// never converted); the first record at or after its end stops the scan.
    window: Option<Range<u64>>,
    /// The scan reached its window's end: later bytes are not its own.
    done: bool,
}

impl RecordScanner {
    /// A scanner converting with `converter`, labelling batches `schema` (which must have the
    /// converter's columns), at most `batch_size` rows each.
    pub fn new(converter: Arc<Converter>, schema: SchemaRef, batch_size: usize, source_name: String) -> RecordScanner {
        RecordScanner {
            converter,
            schema,
            batch_size: batch_size.max(1),
            source_name,
            segments: VecDeque::new(),
            ready: 0,
            ready_bytes: 0,
            tail: Vec::new(),
            tail_offset: 0,
            framed: 0,
            window: None,
            done: false,
        }
    }

    /// This scanner, owning only the records whose length prefix starts in `range` (byte
    /// offsets of the uncompressed file): what a partition of a file split by byte ranges
    /// converts. The stream is still pushed from the file's first byte: record boundaries
    /// are found by walking the length prefixes before the range (no decoding), never
    /// guessed, so the ranges of one file together convert each record exactly once, and
    /// record numbers and offsets in errors stay the file's.
    pub fn with_window(mut self, range: Range<u64>) -> RecordScanner {
        self.window = Some(range);
        self
    }

    /// Whether the scan has passed the end of its window (see [`with_window`](Self::with_window)):
    /// the stream's remaining bytes need not be pushed.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// A scanner over records already framed in one buffer: `records` are the bodies' byte
    /// ranges in `buffer` (which are also their offsets), numbered from `first_number`.
    pub fn from_records(
        converter: Arc<Converter>,
        schema: SchemaRef,
        batch_size: usize,
        source_name: String,
        buffer: Buffer,
        records: &[Range<usize>],
        first_number: u64,
    ) -> RecordScanner {
        let mut scanner = RecordScanner::new(converter, schema, batch_size, source_name);
        let records: VecDeque<_> =
            records.iter().zip(first_number..).map(|(r, n)| (r.clone(), r.start as u64, n)).collect();
        scanner.ready = records.len();
        scanner.ready_bytes = records.iter().map(|(r, _, _)| r.len()).sum();
        scanner.framed = first_number.saturating_sub(1) + records.len() as u64;
        scanner.segments.push_back(Segment { buffer, records });
        scanner
    }

    /// Whether a whole batch of records is waiting (so no more input is needed for now):
    /// `batch_size` records, or [`BATCH_INPUT`] bytes of them.
    pub fn has_batch(&self) -> bool {
        self.ready >= self.batch_size || self.ready_bytes >= BATCH_INPUT
    }

    /// Takes in the next bytes of the stream.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), ScanError> {
        if chunk.is_empty() || self.done {
            return Ok(());
        }
        // Appending to the carried-over tail keeps every record in one buffer; the tail is at
        // most one record long (checked against MAX_RECORD below).
        let mut bytes = std::mem::take(&mut self.tail);
        bytes.extend_from_slice(chunk);
        let base = self.tail_offset;
        let mut records = VecDeque::new();
        let mut at = 0usize;
        loop {
            let offset = base + at as u64;
            if self.window.as_ref().is_some_and(|w| offset >= w.end) {
                self.done = true;
                break;
            }
            let (length, prefix) = match length_prefix(&bytes[at..]) {
                Prefix::Length { size, len } => (len, size),
                Prefix::Incomplete => break,
                Prefix::Invalid => {
                    return Err(ScanError::BadLength {
                        source_name: self.source_name.clone(),
                        record: self.framed + 1,
                        offset,
                    })
                }
            };
            if length > MAX_RECORD {
                return Err(ScanError::TooLong {
                    source_name: self.source_name.clone(),
                    record: self.framed + 1,
                    offset,
                    length,
                    max: MAX_RECORD,
                });
            }
            let start = at + prefix;
            let end = start + length as usize;
            if end > bytes.len() {
                break;
            }
            self.framed += 1;
            if self.window.as_ref().is_none_or(|w| offset >= w.start) {
                records.push_back((start..end, base + start as u64, self.framed));
            }
            at = end;
        }
        // Past the window, the bytes left are other partitions' records: none is carried.
        self.tail = if self.done { Vec::new() } else { bytes[at..].to_vec() };
        self.tail_offset = base + at as u64;
        if !records.is_empty() {
            bytes.truncate(at);
            self.ready += records.len();
            self.ready_bytes += records.iter().map(|(r, _, _)| r.len()).sum::<usize>();
            self.segments.push_back(Segment { buffer: Buffer::from_vec(bytes), records });
        }
        Ok(())
    }

    /// The next batch if a whole one is waiting, or at the end of the input (`at_end`) the
    /// last, shorter one; `None` when there is nothing to convert. At the end, bytes left of a
    /// record that never completed are [`ScanError::Truncated`].
    pub fn next_batch(&mut self, at_end: bool) -> Result<Option<RecordBatch>, ScanError> {
        if !self.has_batch() && !at_end {
            return Ok(None);
        }
        if self.ready == 0 {
            if at_end && !self.tail.is_empty() {
                return Err(self.truncated());
            }
            return Ok(None);
        }
        let mut builder = self.converter.builder();
        // The rows this batch will hold, so that its columns are sized once.
        builder.reserve(self.ready.min(self.batch_size));
        // The batch's input so far: it closes at `BATCH_INPUT`.
        let mut input = 0;
        while builder.len() < self.batch_size && !builder.is_full() && input < BATCH_INPUT {
            let Some(segment) = self.segments.front_mut() else { break };
            // The segment's records a chunk at a time (`append_many_in`); the last one
            // taken is the one an error is about.
            let want = self.batch_size - builder.len();
            let before = builder.len();
            let mut last = None;
            let queue = &mut segment.records;
            let mut took = 0;
            let mut taken = std::iter::from_fn(|| {
                if input + took >= BATCH_INPUT {
                    return None;
                }
                let (range, offset, record) = queue.pop_front()?;
                took += range.len();
                last = Some((offset, record));
                Some(range)
            })
            .take(want);
            let appended = builder.append_many_in(&segment.buffer, &mut taken);
            drop(taken);
            input += took;
            self.ready_bytes -= took;
            self.ready -= builder.len() - before;
            if let Err(error) = appended {
                self.ready -= 1;
                let (offset, record) = last.expect("a record failed, so one was taken");
                return Err(ScanError::Record { source_name: self.source_name.clone(), record, offset, error });
            }
            if segment.records.is_empty() {
                self.segments.pop_front();
            }
        }
        let arrow = |error| ScanError::Arrow { source_name: self.source_name.clone(), error };
        let batch = builder.finish().map_err(arrow)?;
        // The converter's batches carry its own schema metadata; the scan's schema is the
        // table's, projected. A column a mapping option derives (a oneof's case) is converted
        // with the fields it is made from, which the scan may not have asked for: columns
        // are taken by name.
        let have = batch.schema();
        let same = have.fields().len() == self.schema.fields().len()
            && have.fields().iter().zip(self.schema.fields()).all(|(a, b)| a.name() == b.name());
        let columns = if same {
            batch.columns().to_vec()
        } else {
            self.schema
                .fields()
                .iter()
                .map(|f| have.index_of(f.name()).map(|i| batch.column(i).clone()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(arrow)?
        };
        let batch = RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            // A batch's rows: its records', or more or fewer under `explode`.
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )
        .map_err(arrow)?;
        Ok(Some(batch))
    }

    fn truncated(&self) -> ScanError {
        let missing = match length_prefix(&self.tail) {
            Prefix::Length { size, len } => (size as u64 + len).saturating_sub(self.tail.len() as u64).max(1),
            _ => 1,
        };
        ScanError::Truncated {
            source_name: self.source_name.clone(),
            record: self.framed + 1,
            offset: self.tail_offset,
            missing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protojit::Schema;
    use protojit_arrow::ArrowOptions;

    fn scanner(batch: usize) -> RecordScanner {
        let schema =
            Schema::from_proto_source("t.proto", "syntax = \"proto3\"; message T { int64 a = 1; string s = 2; }")
                .unwrap();
        let converter = Converter::new(&schema, "T", &ArrowOptions::default()).unwrap();
        let arrow = converter.arrow_schema().clone();
        RecordScanner::new(Arc::new(converter), arrow, batch, "f.bin".into())
    }

    /// `n` records `{a: i, s: "x…"}`, delimited.
    fn stream(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            let s = "x".repeat(i % 20);
            let mut body = vec![0x08, (i % 100) as u8, 0x12, s.len() as u8];
            body.extend_from_slice(s.as_bytes());
            out.push(body.len() as u8);
            out.extend_from_slice(&body);
        }
        out
    }

    fn rows_in_chunks(data: &[u8], chunk: usize, batch: usize) -> Result<Vec<usize>, ScanError> {
        let mut s = scanner(batch);
        let mut rows = Vec::new();
        for c in data.chunks(chunk) {
            s.push(c)?;
            while let Some(b) = s.next_batch(false)? {
                rows.push(b.num_rows());
            }
        }
        while let Some(b) = s.next_batch(true)? {
            rows.push(b.num_rows());
        }
        Ok(rows)
    }

    #[test]
    fn every_chunking_gives_the_same_rows_in_full_batches() {
        let data = stream(100);
        for chunk in [1, 2, 3, 7, 64, 1000, data.len()] {
            let rows = rows_in_chunks(&data, chunk, 32).unwrap();
            assert_eq!(rows, vec![32, 32, 32, 4], "chunk {chunk}");
        }
    }

    /// Big records make batches by their bytes: 1.5 MiB each, a batch closes after the
    /// sixth (9 MiB), whatever the chunking; every record is converted once, in order.
    #[test]
    fn a_batch_closes_at_its_input_limit() {
        use datafusion::arrow::array::{cast::AsArray, types::Int64Type};
        let varint = |out: &mut Vec<u8>, v: usize| protojit_arena::wire::write_varint(out, v as u64);
        let s = "x".repeat(3 << 19);
        let mut data = Vec::new();
        for i in 0..10u8 {
            let mut body = vec![0x08, i, 0x12];
            varint(&mut body, s.len());
            body.extend_from_slice(s.as_bytes());
            varint(&mut data, body.len());
            data.extend_from_slice(&body);
        }
        for chunk in [1 << 16, 5 << 20, data.len()] {
            let mut scan = scanner(8192);
            let (mut rows, mut a) = (Vec::new(), Vec::new());
            let mut take = |b: RecordBatch| {
                rows.push(b.num_rows());
                a.extend(b.column(0).as_primitive::<Int64Type>().values().iter().copied());
            };
            for c in data.chunks(chunk) {
                scan.push(c).unwrap();
                while let Some(b) = scan.next_batch(false).unwrap() {
                    take(b);
                }
            }
            while let Some(b) = scan.next_batch(true).unwrap() {
                take(b);
            }
            assert_eq!(rows, vec![6, 4], "chunk {chunk}");
            assert_eq!(a, (0..10).collect::<Vec<i64>>(), "chunk {chunk}");
        }
    }

    /// The `a` column of every batch of a windowed scan of `data`.
    fn window_values(data: &[u8], window: Range<u64>, chunk: usize) -> Result<Vec<i64>, ScanError> {
        use datafusion::arrow::array::{cast::AsArray, types::Int64Type};
        let mut s = scanner(7).with_window(window);
        let mut values = Vec::new();
        let mut take = |b: RecordBatch| values.extend(b.column(0).as_primitive::<Int64Type>().values().iter());
        for c in data.chunks(chunk) {
            if s.is_done() {
                break;
            }
            s.push(c)?;
            while let Some(b) = s.next_batch(false)? {
                take(b);
            }
        }
        while let Some(b) = s.next_batch(true)? {
            take(b);
        }
        Ok(values)
    }

    #[test]
    fn byte_ranges_split_a_file_into_its_records_exactly_once() {
        let data = stream(100);
        let whole: Vec<i64> = (0..100).map(|i| i % 100).collect();
        let len = data.len() as u64;
        for parts in [1u64, 2, 3, 5, 16, len] {
            for chunk in [1, 5, 64, data.len()] {
                let mut got = Vec::new();
                for k in 0..parts {
                    let range = len * k / parts..len * (k + 1) / parts;
                    got.extend(window_values(&data, range, chunk).unwrap());
                }
                assert_eq!(got, whole, "{parts} ranges, chunks of {chunk}");
            }
        }
        // A range past every record's start owns none; the file's errors keep their numbers.
        assert!(window_values(&data, len - 1..len, 8).unwrap().is_empty());
        let mut bad = data.clone();
        bad.extend_from_slice(&[2, 0x08, 0x80]);
        let e = window_values(&bad, len..len + 3, 4).unwrap_err().to_string();
        assert!(e.starts_with(&format!("f.bin: record 101 at byte {}: ", len + 1)), "{e}");
        let e = window_values(&bad[..bad.len() - 1], len..len + 3, 4).unwrap_err().to_string();
        assert!(e.starts_with(&format!("f.bin: record 101 at byte {len} is truncated")), "{e}");
        // A range before the bad record never reads it.
        assert_eq!(
            window_values(&bad, 0..len / 2, 4).unwrap(),
            whole[..window_values(&data, 0..len / 2, 4).unwrap().len()]
        );
    }

    #[test]
    fn a_cut_record_is_an_error_naming_it() {
        let data = stream(3);
        let cut = &data[..data.len() - 2];
        let e = rows_in_chunks(cut, 4, 8).unwrap_err().to_string();
        let last = stream(2).len();
        assert_eq!(e, format!("f.bin: record 3 at byte {last} is truncated: the input ends 2 byte(s) short of it"));
        let e = rows_in_chunks(&[0x80], 4, 8).unwrap_err().to_string();
        assert_eq!(e, "f.bin: record 1 at byte 0 is truncated: the input ends 1 byte(s) short of it");
    }

    #[test]
    fn bad_and_huge_length_prefixes_are_refused() {
        let e = rows_in_chunks(&[0xff; 11], 3, 8).unwrap_err().to_string();
        assert_eq!(e, "f.bin: record 1 at byte 0: bad length prefix");
        let mut data = stream(1);
        data.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
        let e = rows_in_chunks(&data, 2, 8).unwrap_err().to_string();
        let at = stream(1).len();
        assert!(e.starts_with(&format!("f.bin: record 2 at byte {at}: length 2147483648 is more than")), "{e}");
    }

    #[test]
    fn a_record_that_does_not_decode_names_its_number_and_offset() {
        let mut data = stream(2);
        let at = data.len() + 1;
        data.extend_from_slice(&[2, 0x08, 0x80]); // varint cut inside the record
        let e = rows_in_chunks(&data, 5, 8).unwrap_err().to_string();
        assert!(e.starts_with(&format!("f.bin: record 3 at byte {at}: ")), "{e}");
    }
}
