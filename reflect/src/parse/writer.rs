//! A small protobuf binary writer for the parsers: fields appended as they are read, length
//! prefixes back-patched, and each message's fields put in field-number order when it ends.
//!
//! JSON and text give fields in any order, and text may repeat a repeated field anywhere in a
//! message; protoc emits fields by number, with one packed record per packed field. So every
//! field written in a message is recorded as a span of the buffer; when the message ends and
//! its spans are already in ascending order (the common case: input written by an encoder),
//! nothing moves. Otherwise the message's bytes are rebuilt once, spans stably sorted by
//! number and packed runs of one field merged into one record.
//!
//! Length prefixes: a nested message reserves one byte for its length, which fits lengths
//! below 128; a longer body is shifted right by the extra bytes once it is complete.

use protojit_arena::wire::{varint_len, write_varint, LEN};

/// One field written into the current message: `buf[start..end]` holds its tag and value.
#[derive(Clone, Copy, Debug)]
struct Span {
    number: u32,
    start: usize,
    end: usize,
    /// A packed record (tag, length, payload): records of one field are merged on rebuild.
    packed: bool,
}

/// The open message: where its bytes and its spans start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    start: usize,
    spans: usize,
}

/// The binary writer: one output buffer and the span stack of the open messages.
pub(crate) struct Writer<'o> {
    pub(crate) buf: &'o mut Vec<u8>,
    spans: Vec<Span>,
}

/// A reserved one-byte length prefix (its position), patched by [`Writer::end_len`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct LenMark(usize);

impl<'o> Writer<'o> {
    pub(crate) fn new(buf: &'o mut Vec<u8>) -> Writer<'o> {
        Writer { buf, spans: Vec::new() }
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
    pub(crate) fn end_len(&mut self, mark: LenMark) {
        let body = mark.0 + 1;
        let len = self.buf.len() - body;
        if len < 0x80 {
            self.buf[mark.0] = len as u8;
            return;
        }
        let extra = varint_len(len as u64) - 1;
        self.buf.resize(self.buf.len() + extra, 0);
        self.buf.copy_within(body..body + len, body + extra);
        let mut prefix = Vec::with_capacity(10);
        write_varint(&mut prefix, len as u64);
        self.buf[mark.0..mark.0 + prefix.len()].copy_from_slice(&prefix);
    }

    /// Opens a message whose fields are written from here on.
    #[inline]
    pub(crate) fn begin_message(&mut self) -> Frame {
        Frame { start: self.buf.len(), spans: self.spans.len() }
    }

    /// Records that field `number` was written at `buf[start..]` (its tag and value).
    #[inline]
    pub(crate) fn field_done(&mut self, number: u32, start: usize, packed: bool) {
        if self.buf.len() > start {
            self.spans.push(Span { number, start, end: self.buf.len(), packed });
        }
    }

    /// Closes the message opened at `frame`: its fields end up in field-number order, the
    /// packed records of one field merged into one.
    pub(crate) fn end_message(&mut self, frame: Frame) {
        let spans = &self.spans[frame.spans..];
        let ordered = spans
            .windows(2)
            .all(|w| w[0].number < w[1].number || (w[0].number == w[1].number && !w[0].packed && !w[1].packed));
        if !ordered {
            self.rebuild(frame);
        }
        self.spans.truncate(frame.spans);
    }

    fn rebuild(&mut self, frame: Frame) {
        let body = self.buf[frame.start..].to_vec();
        self.buf.truncate(frame.start);
        let spans = &mut self.spans[frame.spans..];
        spans.sort_by_key(|s| s.number);
        let mut i = 0;
        while i < spans.len() {
            let s = spans[i];
            let mut j = i + 1;
            while j < spans.len() && spans[j].number == s.number {
                j += 1;
            }
            if s.packed && j - i > 1 {
                // One record: the tag once, then every run's payload.
                let payloads: Vec<&[u8]> = spans[i..j].iter().map(|p| packed_payload(&body, frame.start, p)).collect();
                let total: usize = payloads.iter().map(|p| p.len()).sum();
                write_varint(self.buf, (u64::from(s.number) << 3) | u64::from(LEN));
                write_varint(self.buf, total as u64);
                for p in payloads {
                    self.buf.extend_from_slice(p);
                }
            } else {
                for p in &spans[i..j] {
                    self.buf.extend_from_slice(&body[p.start - frame.start..p.end - frame.start]);
                }
            }
            i = j;
        }
    }
}

/// The payload of a packed record span (after its tag and length).
fn packed_payload<'b>(body: &'b [u8], base: usize, span: &Span) -> &'b [u8] {
    let rec = &body[span.start - base..span.end - base];
    let mut p = 0;
    // The tag, then the length: two varints.
    for _ in 0..2 {
        while rec[p] & 0x80 != 0 {
            p += 1;
        }
        p += 1;
    }
    &rec[p..]
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
}
