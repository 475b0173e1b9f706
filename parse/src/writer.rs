//! A small protobuf binary writer for the parsers: fields appended as they are read, length
//! prefixes back-patched, and each message's fields put in field-number order when it ends.
//!
//! JSON and text give fields in any order, and text may repeat a repeated field anywhere in a
//! message; protoc emits fields by number, with one packed record per packed field. So the
//! fields written in a message are recorded as runs: consecutive records of one field are
//! one run, eight bytes (its number and where it starts), however many records it holds, so
//! a field given a million times in a row costs one run, and a million interleaved fields
//! cost less than the input that gave them. When the message ends and its runs are in
//! ascending order with no packed field written twice (the common case: input written by
//! an encoder), nothing moves. Otherwise the message's bytes are rebuilt once: runs sorted
//! by number (then position, so the order within a field is kept), each run's extent found
//! by reading its records, and the packed records of one field merged into one.
//!
//! Length prefixes: a nested message reserves one byte for its length, which fits lengths
//! below 128; a longer body is shifted right by the extra bytes once it is complete.

use protojit_arena::wire::{patch_length, EGROUP, FIXED32, FIXED64, LEN, SGROUP, VARINT};

/// Appends `v` as a varint: one capacity check for values below 128, one reservation for
/// longer ones.
#[inline]
fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    out.reserve(10);
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One run of the open message: `number << 33 | packed << 32 | start`, `start` being its
/// offset from the message's first byte. Sorting the keys sorts runs by number, then by
/// position.
type Run = u64;

fn run(number: u32, packed: bool, start: u32) -> Run {
    (u64::from(number) << 33) | (u64::from(packed) << 32) | u64::from(start)
}

fn run_number(r: Run) -> u32 {
    (r >> 33) as u32
}

fn run_packed(r: Run) -> bool {
    r & (1 << 32) != 0
}

fn run_start(r: Run) -> usize {
    (r & 0xffff_ffff) as usize
}

/// The open message, saved by [`Writer::begin_message`] and restored when it ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    runs: usize,
    outer: Open,
}

/// What the writer knows of the innermost open message.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// Its first byte in the buffer.
    start: usize,
    /// Its first run in `runs`.
    runs: usize,
    /// Its runs are out of order, or a packed field has several records: rebuild it.
    rebuild: bool,
}

/// A length prefix reserved by [`Writer::begin_len_sized`]: where, and how many bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SizedLenMark {
    at: usize,
    reserved: usize,
}

/// The bytes `v` takes as a varint.
#[inline]
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// The binary writer: one output buffer and the runs of the open messages.
pub(crate) struct Writer<'o> {
    pub(crate) buf: &'o mut Vec<u8>,
    runs: Vec<Run>,
    open: Open,
    /// A message grew past 4 GiB, which runs cannot index: the parse fails.
    too_large: bool,
}

thread_local! {
    static SPARE_RUNS: std::cell::Cell<Vec<Run>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A reserved one-byte length prefix (its position), patched by [`Writer::end_len`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct LenMark(usize);

impl<'o> Writer<'o> {
    pub(crate) fn new(buf: &'o mut Vec<u8>) -> Writer<'o> {
        let start = buf.len();
        // The runs list of this thread's last parse, so that small parses allocate nothing.
        let runs = SPARE_RUNS.take();
        Writer { buf, runs, open: Open { start, runs: 0, rebuild: false }, too_large: false }
    }

    /// Hands the runs list back for the thread's next parse (unless it grew large).
    pub(crate) fn recycle(&mut self) {
        if self.runs.capacity() <= 1 << 12 {
            let mut runs = std::mem::take(&mut self.runs);
            runs.clear();
            SPARE_RUNS.set(runs);
        }
    }

    /// Whether a message outgrew what the writer indexes (its bytes are then unordered).
    pub(crate) fn too_large(&self) -> bool {
        self.too_large
    }

    /// Current end of the buffer (a field's start, for [`Writer::field_done`]).
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.buf.len()
    }

    /// Drops everything written from `pos` on (a value that turned out absent).
    #[inline]
    pub(crate) fn truncate(&mut self, pos: usize) {
        self.buf.truncate(pos);
    }

    #[inline]
    pub(crate) fn tag(&mut self, number: u32, wire_type: u8) {
        write_varint(self.buf, (u64::from(number) << 3) | u64::from(wire_type));
    }

    #[inline]
    pub(crate) fn varint(&mut self, v: u64) {
        write_varint(self.buf, v);
    }

    #[inline]
    pub(crate) fn fixed32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    #[inline]
    pub(crate) fn fixed64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A length-delimited value: length, then the bytes.
    #[inline]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        write_varint(self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// Reserves a one-byte length prefix for a body that follows.
    #[inline]
    pub(crate) fn begin_len(&mut self) -> LenMark {
        self.buf.push(0);
        LenMark(self.buf.len() - 1)
    }

    /// The body's length since `mark`.
    #[inline]
    pub(crate) fn len_since(&self, mark: LenMark) -> usize {
        self.buf.len() - mark.0 - 1
    }

    /// Writes the body's length at `mark`, moving the body right when the length needs more
    /// than the one byte reserved.
    #[inline]
    pub(crate) fn end_len(&mut self, mark: LenMark) {
        patch_length(self.buf, mark.0);
    }

    /// Reserves a length prefix of the size a body of about `estimate` bytes needs, for a
    /// long body whose length is guessed well ahead (a packed array from its text), so that
    /// [`Writer::end_len_sized`] rarely moves it.
    #[inline]
    pub(crate) fn begin_len_sized(&mut self, estimate: usize) -> SizedLenMark {
        let reserved = varint_len(estimate as u64);
        let at = self.buf.len();
        self.buf.resize(at + reserved, 0);
        SizedLenMark { at, reserved }
    }

    /// The body's length since `mark`.
    #[inline]
    pub(crate) fn len_since_sized(&self, mark: SizedLenMark) -> usize {
        self.buf.len() - mark.at - mark.reserved
    }

    /// Writes the body's length at `mark`, moving the body when its length needs another
    /// number of bytes than were reserved.
    pub(crate) fn end_len_sized(&mut self, mark: SizedLenMark) {
        let len = self.len_since_sized(mark);
        let need = varint_len(len as u64);
        let body = mark.at + mark.reserved;
        match need.cmp(&mark.reserved) {
            std::cmp::Ordering::Less => drop(self.buf.drain(mark.at + need..body)),
            std::cmp::Ordering::Greater => {
                drop(self.buf.splice(body..body, std::iter::repeat_n(0, need - mark.reserved)))
            }
            std::cmp::Ordering::Equal => {}
        }
        let mut v = len as u64;
        for b in &mut self.buf[mark.at..mark.at + need] {
            *b = (v as u8 & 0x7f) | if v >= 0x80 { 0x80 } else { 0 };
            v >>= 7;
        }
    }

    /// Ends the packed record of field `number` whose tag is at `start` and whose length
    /// `mark` reserved: recorded as the field's ([`Writer::field_done`]), or dropped when it
    /// holds no value (protoc writes no empty packed record).
    pub(crate) fn end_packed(&mut self, number: u32, start: usize, mark: LenMark) {
        if self.len_since(mark) == 0 {
            self.truncate(start);
        } else {
            self.end_len(mark);
            self.field_done(number, start, true);
        }
    }

    /// Opens a message whose fields are written from here on.
    #[inline]
    pub(crate) fn begin_message(&mut self) -> Frame {
        let frame = Frame { runs: self.runs.len(), outer: self.open };
        self.open = Open { start: self.buf.len(), runs: self.runs.len(), rebuild: false };
        frame
    }

    /// Records that field `number` was written at `buf[start..]` (its tag and value; a
    /// packed record when `packed`). Records of the open message are contiguous, so a run
    /// is known by its start alone.
    #[inline]
    pub(crate) fn field_done(&mut self, number: u32, start: usize, packed: bool) {
        if self.buf.len() <= start {
            return;
        }
        let open = &mut self.open;
        if let Some(&last) = self.runs[open.runs..].last() {
            let last_number = run_number(last);
            if last_number == number {
                // The same field again: the run grows; a packed field's records merge.
                open.rebuild |= packed;
                return;
            }
            open.rebuild |= number < last_number;
        }
        match u32::try_from(start - open.start) {
            Ok(offset) => self.runs.push(run(number, packed, offset)),
            Err(_) => self.too_large = true,
        }
    }

    /// Closes the message opened at `frame`: its fields end up in field-number order, the
    /// packed records of one field merged into one.
    pub(crate) fn end_message(&mut self, frame: Frame) {
        if self.open.rebuild && !self.too_large {
            self.rebuild();
        }
        self.runs.truncate(frame.runs);
        self.open = frame.outer;
    }

    fn rebuild(&mut self) {
        let base = self.open.start;
        let body = self.buf[base..].to_vec();
        self.buf.truncate(base);
        let runs = &mut self.runs[self.open.runs..];
        runs.sort_unstable();
        let mut i = 0;
        while i < runs.len() {
            let number = run_number(runs[i]);
            let mut j = i + 1;
            while j < runs.len() && run_number(runs[j]) == number {
                j += 1;
            }
            let group = &runs[i..j];
            if run_packed(group[0]) {
                // One record: the tag once, then every record's payload.
                let payloads =
                    || group.iter().flat_map(|&r| Records::new(&body, run_start(r), number).map(|rec| rec.payload));
                let total: usize = payloads().map(|p| p.len()).sum();
                write_varint(self.buf, (u64::from(number) << 3) | u64::from(LEN));
                write_varint(self.buf, total as u64);
                for p in payloads() {
                    self.buf.extend_from_slice(&body[p]);
                }
            } else {
                for &r in group {
                    let start = run_start(r);
                    let end = Records::new(&body, start, number).last().map_or(start, |rec| rec.end);
                    self.buf.extend_from_slice(&body[start..end]);
                }
            }
            i = j;
        }
    }
}

/// One record of a message body as this writer wrote it.
struct Record {
    /// Its value after the tag (a length-delimited one after its length too).
    payload: std::ops::Range<usize>,
    /// Just past the record.
    end: usize,
}

/// The records of field `number` from `pos` of `body` until another field's record (the
/// next run) or the end: the bytes were written here, so they are well formed.
struct Records<'b> {
    body: &'b [u8],
    pos: usize,
    number: u32,
}

impl<'b> Records<'b> {
    fn new(body: &'b [u8], pos: usize, number: u32) -> Records<'b> {
        Records { body, pos, number }
    }

    fn varint(&mut self) -> u64 {
        let mut v = 0;
        let mut shift = 0;
        while let Some(&b) = self.body.get(self.pos) {
            self.pos += 1;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        v
    }

    /// Skips a value of `wire_type` (a group up to and past its end tag).
    fn skip(&mut self, wire_type: u8) {
        match wire_type {
            VARINT => {
                self.varint();
            }
            FIXED64 => self.pos += 8,
            FIXED32 => self.pos += 4,
            LEN => {
                let len = self.varint() as usize;
                self.pos = self.pos.saturating_add(len);
            }
            SGROUP => loop {
                if self.pos >= self.body.len() {
                    break;
                }
                let tag = self.varint();
                if tag as u8 & 7 == EGROUP {
                    break;
                }
                self.skip(tag as u8 & 7);
            },
            _ => {}
        }
        self.pos = self.pos.min(self.body.len());
    }
}

impl Iterator for Records<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.pos >= self.body.len() {
            return None;
        }
        let at = self.pos;
        let tag = self.varint();
        if (tag >> 3) != u64::from(self.number) {
            self.pos = at;
            return None;
        }
        let wire_type = tag as u8 & 7;
        let value = self.pos;
        let payload_start = if wire_type == LEN {
            let len = self.varint() as usize;
            let start = self.pos;
            self.pos = start.saturating_add(len).min(self.body.len());
            start
        } else {
            self.skip(wire_type);
            value
        };
        let end = self.pos;
        Some(Record { payload: payload_start..end, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_bodies_are_shifted_under_their_length() {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.tag(1, LEN);
        let m = w.begin_len();
        w.buf.extend(std::iter::repeat_n(7u8, 300));
        w.end_len(m);
        assert_eq!(&out[..3], &[0x0a, 0xac, 0x02]);
        assert_eq!(out.len(), 303);
        assert!(out[3..].iter().all(|&b| b == 7));
    }

    #[test]
    fn sized_length_prefixes_move_the_body_only_when_the_guess_was_wrong() {
        for (estimate, len) in [(0, 0), (10, 127), (10, 128), (200, 5), (200, 300), (20_000, 16_384), (1 << 20, 3)] {
            let mut out = vec![0xee];
            let mut w = Writer::new(&mut out);
            let m = w.begin_len_sized(estimate);
            w.buf.extend((0..len).map(|i| i as u8));
            w.end_len_sized(m);
            let mut want = vec![0xee];
            write_varint(&mut want, len as u64);
            want.extend((0..len).map(|i| i as u8));
            assert_eq!(out, want, "{estimate} {len}");
        }
        assert_eq!([0, 1, 127, 128, 16_383, 16_384, u64::MAX].map(varint_len), [1, 1, 1, 2, 2, 3, 10]);
    }

    #[test]
    fn fields_are_sorted_and_packed_runs_merged() {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        let f = w.begin_message();
        for (number, packed, bytes) in [
            (3u32, true, &[0x1a, 1, 5][..]),
            (1, false, &[0x08, 1]),
            (3, true, &[0x1a, 2, 6, 7]),
            (2, false, &[0x10, 9]),
        ] {
            let s = w.pos();
            w.buf.extend_from_slice(bytes);
            w.field_done(number, s, packed);
        }
        w.end_message(f);
        assert_eq!(out, [0x08, 1, 0x10, 9, 0x1a, 3, 5, 6, 7]);
    }

    #[test]
    fn runs_of_groups_and_nested_messages_keep_their_order_within_a_field() {
        let mut out = vec![0xee];
        let mut w = Writer::new(&mut out);
        let f = w.begin_message();
        // Group 3 (holding a group 1 of its own), field 1, group 3 again, then two records
        // of field 2 in one run, then a nested message whose own fields are out of order.
        for (number, bytes) in [
            (3u32, &[0x1b, 0x0b, 0x08, 1, 0x0c, 0x1c][..]),
            (1, &[0x08, 7]),
            (3, &[0x1b, 0x1c]),
            (2, &[0x10, 1]),
            (2, &[0x10, 2]),
        ] {
            let s = w.pos();
            w.buf.extend_from_slice(bytes);
            w.field_done(number, s, false);
        }
        let s = w.pos();
        w.tag(4, LEN);
        let m = w.begin_len();
        let inner = w.begin_message();
        for (number, bytes) in [(2u32, &[0x10, 5][..]), (1, &[0x08, 6])] {
            let at = w.pos();
            w.buf.extend_from_slice(bytes);
            w.field_done(number, at, false);
        }
        w.end_message(inner);
        w.end_len(m);
        w.field_done(4, s, false);
        w.end_message(f);
        assert_eq!(
            out,
            [0xee, 0x08, 7, 0x10, 1, 0x10, 2, 0x1b, 0x0b, 0x08, 1, 0x0c, 0x1c, 0x1b, 0x1c, 0x22, 4, 0x08, 6, 0x10, 5]
        );
    }
}
