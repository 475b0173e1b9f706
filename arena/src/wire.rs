//! Wire-format primitives shared by both decode engines and the encoders.

use crate::error::{DecodeError, DecodeErrorKind};

/// Wire type 0: varint.
pub const VARINT: u8 = 0;
/// Wire type 1: 8 bytes little-endian.
pub const FIXED64: u8 = 1;
/// Wire type 2: length-delimited.
pub const LEN: u8 = 2;
/// Wire type 3: start group.
pub const SGROUP: u8 = 3;
/// Wire type 4: end group.
pub const EGROUP: u8 = 4;
/// Wire type 5: 4 bytes little-endian.
pub const FIXED32: u8 = 5;

/// Largest valid field number.
pub const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// Reads a varint starting at `buf[pos]`; returns the value and the position after it.
/// Bits past 64 are dropped (as protobuf does for 10-byte varints).
#[inline]
pub fn read_varint(buf: &[u8], pos: usize) -> Result<(u64, usize), DecodeError> {
    if let Some(&b) = buf.get(pos) {
        if b < 0x80 {
            return Ok((b as u64, pos + 1));
        }
    }
    read_varint_slow(buf, pos)
}

/// Reads a varint at `buf[pos]` from one 8-byte load, without a loop over its bytes (SWAR:
/// the terminator is the lowest byte with its top bit clear, and the 7-bit groups are
/// packed together in three mask-and-shift steps); a 9- or 10-byte varint (a negative
/// `int32`/`int64`) takes its last one or two bytes on their own. `None` when fewer than 8
/// bytes remain, or the varint runs past the buffer or past ten bytes: then
/// [`read_varint`] decides, errors included. Same results as [`read_varint`] wherever it
/// returns `Some`.
#[inline(always)]
pub fn varint_word(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let (x, len) = varint_at_word(buf, pos, load_word(buf, pos)?)?;
    Some((x, pos + len))
}

/// [`varint_word`] for a caller that already loaded `w = load_word(buf, pos)`: the value
/// and the varint's length in bytes.
#[inline(always)]
pub fn varint_at_word(buf: &[u8], pos: usize, w: u64) -> Option<(u64, usize)> {
    match varint_in_word(w) {
        Some(v) => Some(v),
        None => varint_past_word(buf, pos, w),
    }
}

/// The eight bytes at `buf[pos..pos + 8]` as a little-endian word (`None` if fewer remain).
#[inline(always)]
pub fn load_word(buf: &[u8], pos: usize) -> Option<u64> {
    let bytes: [u8; 8] = buf.get(pos..pos.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The low 7 bits of each byte of `x` (whose top bits are clear), packed together.
#[inline(always)]
pub fn pack_groups(x: u64) -> u64 {
    let x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
    let x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
    ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff)
}

/// The varint the word `w` starts with and its length in bytes, if it ends within `w`.
#[inline(always)]
fn varint_in_word(w: u64) -> Option<(u64, usize)> {
    let stops = !w & 0x8080_8080_8080_8080;
    if stops == 0 {
        return None;
    }
    // Bits up to and including the terminator's top bit: the varint's bytes.
    let x = pack_groups(w & (stops ^ (stops - 1)) & 0x7f7f_7f7f_7f7f_7f7f);
    Some((x, (stops.trailing_zeros() / 8 + 1) as usize))
}

/// The varint at `buf[pos]` whose first eight bytes, `w`, all continue: 9 or 10 bytes long
/// (bits past 64 dropped, as [`read_varint`] does), or `None` (longer, or cut off).
#[inline(always)]
pub(crate) fn varint_past_word(buf: &[u8], pos: usize, w: u64) -> Option<(u64, usize)> {
    varint_past_word_by(buf, pos, w, pack_groups)
}

/// [`varint_past_word`] with the 7-bit groups packed by `pack` ([`pack_groups`], or one
/// `pext` where the CPU has BMI2: see `varint::decode_run`).
#[inline(always)]
pub(crate) fn varint_past_word_by(buf: &[u8], pos: usize, w: u64, pack: impl Fn(u64) -> u64) -> Option<(u64, usize)> {
    let low = pack(w & 0x7f7f_7f7f_7f7f_7f7f);
    let b8 = *buf.get(pos.checked_add(8)?)?;
    if b8 < 0x80 {
        return Some((low | (b8 as u64) << 56, 9));
    }
    let b9 = *buf.get(pos.checked_add(9)?)?;
    if b9 < 0x80 {
        return Some((low | ((b8 & 0x7f) as u64) << 56 | (b9 as u64) << 63, 10));
    }
    None
}

#[cold]
fn read_varint_slow(buf: &[u8], pos: usize) -> Result<(u64, usize), DecodeError> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = buf.get(pos + i) else {
            return Err(DecodeError::new(DecodeErrorKind::Truncated, pos));
        };
        value |= ((b & 0x7f) as u64).wrapping_shl(7 * i as u32);
        if b < 0x80 {
            return Ok((value, pos + i + 1));
        }
    }
    Err(DecodeError::new(DecodeErrorKind::VarintTooLong, pos))
}

/// Reads a length prefix at `buf[pos]` of a value that must end by `end`: the value's
/// `(start, end)`, or `LengthOutOfBounds` at the prefix.
#[inline]
pub fn read_length(buf: &[u8], pos: usize, end: usize) -> Result<(usize, usize), DecodeError> {
    let (len, start) = read_varint(buf, pos)?;
    if len > (end - start) as u64 {
        return Err(DecodeError::new(DecodeErrorKind::LengthOutOfBounds, pos));
    }
    Ok((start, start + len as usize))
}

/// Reads a tag at `buf[pos]`: `(field number, wire type, next position)`, checking the
/// number (1..=2^29-1) and the wire type (0..=5).
#[inline]
pub fn read_tag(buf: &[u8], pos: usize) -> Result<(u32, u8, usize), DecodeError> {
    // Two-byte tags (fields 16 to 2047) inline too: schemas number fields past 15 often.
    let (tag, next) = match (buf.get(pos), buf.get(pos + 1)) {
        (Some(&b), _) if b < 0x80 => (u64::from(b), pos + 1),
        (Some(&b), Some(&c)) if c < 0x80 => (u64::from(b & 0x7f) | u64::from(c) << 7, pos + 2),
        _ => read_varint(buf, pos)?,
    };
    // protobuf's parsers read at most 5 bytes of a tag; an overlong tag is malformed even
    // when its value is small (conformance: BadTag_OverlongVarint).
    if next - pos > 5 {
        return Err(DecodeError::new(DecodeErrorKind::TagTooLong, pos));
    }
    let wire_type = (tag & 7) as u8;
    let number = tag >> 3;
    if number == 0 {
        return Err(DecodeError::new(DecodeErrorKind::FieldNumberZero, pos));
    }
    if number > MAX_FIELD_NUMBER as u64 {
        return Err(DecodeError::new(DecodeErrorKind::FieldNumberTooLarge, pos));
    }
    if wire_type > 5 {
        return Err(DecodeError::new(DecodeErrorKind::InvalidWireType, pos));
    }
    Ok((number as u32, wire_type, next))
}

/// Zigzag-decodes a `sint32` as read from the wire (its varint's low 32 bits).
#[inline]
pub const fn zigzag_decode32(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// Zigzag-decodes a `sint64` as read from the wire.
#[inline]
pub const fn zigzag_decode64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Zigzag-encodes a `sint32` for the wire (the inverse of [`zigzag_decode32`]).
#[inline]
pub const fn zigzag_encode32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// Zigzag-encodes a `sint64` for the wire (the inverse of [`zigzag_decode64`]).
#[inline]
pub const fn zigzag_encode64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends `v` as a varint. One- and two-byte varints (tags, lengths, small numbers: most
/// of what an encoder writes) inline, without a loop; longer ones out of line.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
    } else if v < 0x4000 {
        out.extend_from_slice(&[(v as u8) | 0x80, (v >> 7) as u8]);
    } else {
        write_long_varint(out, v);
    }
}

/// [`write_varint`] of three bytes or more: up to eight as one word ([`varint_bytes`]).
fn write_long_varint(out: &mut Vec<u8>, v: u64) {
    if v >= 1 << 56 {
        return write_longest_varint(out, v);
    }
    // Eight bytes stored at once, then the ones past the varint dropped again: one capacity
    // check and one store, where a byte at a time is one of each per byte.
    let len = varint_len(v);
    out.extend_from_slice(&varint_bytes(v, len).to_le_bytes());
    out.truncate(out.len() - (8 - len));
}

/// [`write_varint`] of nine or ten bytes (negative `int32`s and `int64`s, the largest
/// `uint64`s), apart so that the common lengths' path stays short.
#[cold]
fn write_longest_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint of `v < 2^56`, `len` (its [`varint_len`]) bytes long, as the low bytes of a
/// little-endian word: each 7-bit group spread to a byte of its own (the inverse of
/// [`pack_groups`]), then the continuation bit set on every byte but the last.
#[inline(always)]
fn varint_bytes(v: u64, len: usize) -> u64 {
    debug_assert!(v < 1 << 56 && (1..=8).contains(&len));
    let x = (v & 0x0000_0000_0fff_ffff) | ((v & 0x00ff_ffff_f000_0000) << 4);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x0fff_c000_0fff_c000) << 2);
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x3f80_3f80_3f80_3f80) << 1);
    x | (0x8080_8080_8080_8080 & ((1u64 << (8 * (len - 1))) - 1))
}

/// Reserves a one-byte length prefix for a length-delimited body written next; returns
/// where it is, for [`patch_length`].
#[inline]
pub fn reserve_length(out: &mut Vec<u8>) -> usize {
    out.push(0);
    out.len() - 1
}

/// Writes the length of the body written since `mark` (from [`reserve_length`]) into its
/// prefix, moving the body right when the length needs more than the byte reserved (bodies
/// under 128 bytes, the common case, move nothing).
#[inline]
pub fn patch_length(out: &mut Vec<u8>, mark: usize) {
    let len = out.len() - (mark + 1);
    if len < 0x80 {
        out[mark] = len as u8;
    } else {
        patch_long_length(out, mark, len);
    }
}

/// [`patch_length`] of a body of 128 bytes or more: moved right to make room for its length.
fn patch_long_length(out: &mut Vec<u8>, mark: usize, len: usize) {
    let body = mark + 1;
    let extra = varint_len(len as u64) - 1;
    out.resize(out.len() + extra, 0);
    out.copy_within(body..body + len, body + extra);
    let mut v = len as u64;
    let mut at = mark;
    while v >= 0x80 {
        out[at] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    out[at] = v as u8;
}

/// Encoded length of a varint.
pub const fn varint_len(v: u64) -> usize {
    // ceil(bits / 7) for bits = log2 + 1 in 1..=64, as a multiply and a shift (`log2` is
    // the bit scan's own result): exact over that range.
    let log2 = 63 - (v | 1).leading_zeros() as usize;
    (log2 * 9 + 73) / 64
}

/// Skips the value of a field of `wire_type` whose tag ended at `pos`, within `buf[..end]`.
/// Groups are skipped to their matching end tag; `depth` counts toward `max_depth`.
/// Returns the position after the value (after the end-group tag for groups).
// The decoders' hot skip: plain arguments in registers, no struct to build per call.
#[allow(clippy::too_many_arguments)]
pub fn skip_value(
    buf: &[u8],
    tag_pos: usize,
    pos: usize,
    end: usize,
    number: u32,
    wire_type: u8,
    depth: u32,
    max_depth: u32,
) -> Result<usize, DecodeError> {
    let buf = &buf[..end];
    match wire_type {
        VARINT => Ok(read_varint(buf, pos)?.1),
        FIXED64 => {
            if end - pos < 8 {
                Err(DecodeError::new(DecodeErrorKind::Truncated, pos))
            } else {
                Ok(pos + 8)
            }
        }
        FIXED32 => {
            if end - pos < 4 {
                Err(DecodeError::new(DecodeErrorKind::Truncated, pos))
            } else {
                Ok(pos + 4)
            }
        }
        LEN => {
            let (len, next) = read_varint(buf, pos)?;
            if len > (end - next) as u64 {
                return Err(DecodeError::new(DecodeErrorKind::LengthOutOfBounds, pos));
            }
            Ok(next + len as usize)
        }
        SGROUP => {
            if depth >= max_depth {
                return Err(DecodeError::new(DecodeErrorKind::DepthLimitExceeded, tag_pos));
            }
            let mut p = pos;
            loop {
                if p >= end {
                    return Err(DecodeError::new(DecodeErrorKind::UnterminatedGroup, tag_pos));
                }
                let (n, wt, next) = read_tag(buf, p)?;
                if wt == EGROUP {
                    if n != number {
                        return Err(DecodeError::new(DecodeErrorKind::UnmatchedEndGroup, p));
                    }
                    return Ok(next);
                }
                p = skip_value(buf, p, next, end, n, wt, depth + 1, max_depth)?;
            }
        }
        _ => Err(DecodeError::new(DecodeErrorKind::UnmatchedEndGroup, tag_pos)),
    }
}

#[cfg(test)]
mod tests {
    use super::{read_tag, read_varint, varint_len, varint_word, write_varint, MAX_FIELD_NUMBER};
    use crate::{DecodeError, DecodeErrorKind};

    /// A tag read the plain way: the varint, then the checks.
    fn tag_by_varint(buf: &[u8]) -> Result<(u32, u8, usize), DecodeError> {
        let (tag, next) = read_varint(buf, 0)?;
        let error = |kind| Err(DecodeError::new(kind, 0));
        match (tag >> 3, (tag & 7) as u8) {
            _ if next > 5 => error(DecodeErrorKind::TagTooLong),
            (0, _) => error(DecodeErrorKind::FieldNumberZero),
            (n, _) if n > MAX_FIELD_NUMBER as u64 => error(DecodeErrorKind::FieldNumberTooLarge),
            (_, wt) if wt > 5 => error(DecodeErrorKind::InvalidWireType),
            (n, wt) => Ok((n as u32, wt, next)),
        }
    }

    /// Tags of one and two bytes (read inline) read as the varint loop reads them, and so
    /// do the inputs that end inside them or go on past two bytes.
    #[test]
    fn short_tags_read_as_varints() {
        for b in 0..=255u8 {
            for c in 0..=255u8 {
                for buf in [&[b][..], &[b, c], &[b, c, 0x01], &[b, c, 0x80]] {
                    assert_eq!(read_tag(buf, 0), tag_by_varint(buf), "{buf:02x?}");
                }
            }
        }
    }

    /// The word decoder agrees with the byte loop on every varint length and bit pattern
    /// it takes, on overlong encodings, and on random bytes (where it must say `None`
    /// rather than differ).
    #[test]
    fn varint_word_agrees_with_read_varint() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        // The reference: one byte at a time, written out here (`read_varint` is checked
        // against it too).
        let byte_loop = |buf: &[u8], pos: usize| -> Result<(u64, usize), DecodeErrorKind> {
            let mut value = 0u64;
            for i in 0..10 {
                let &b = buf.get(pos + i).ok_or(DecodeErrorKind::Truncated)?;
                value |= ((b & 0x7f) as u64).wrapping_shl(7 * i as u32);
                if b < 0x80 {
                    return Ok((value, pos + i + 1));
                }
            }
            Err(DecodeErrorKind::VarintTooLong)
        };
        let check = |buf: &[u8]| {
            for pos in 0..buf.len() {
                let want = byte_loop(buf, pos);
                assert_eq!(read_varint(buf, pos).map_err(|e| e.kind), want, "{buf:02x?} at {pos}");
                if let Some(got) = varint_word(buf, pos) {
                    assert_eq!(Ok(got), want, "{buf:02x?} at {pos}");
                }
            }
        };
        for bits in 0..=64u32 {
            for _ in 0..64 {
                let v = if bits == 64 { next() } else { next() & ((1u64 << bits) - 1) | (1u64 << bits >> 1) };
                let mut buf = Vec::new();
                write_varint(&mut buf, v);
                let len = buf.len();
                buf.extend((0..9).map(|_| next() as u8));
                assert!(len <= 10 && varint_word(&buf, 0).is_some(), "{v:#x}");
                check(&buf);
            }
        }
        // Overlong: zero groups with continuation bits, up to the ten bytes allowed; an
        // eleventh is read_varint's error to report.
        for len in 1..=10 {
            let mut buf = vec![0x80u8; len - 1];
            buf.push(0);
            buf.extend([0u8; 8]);
            assert_eq!(varint_word(&buf, 0), Some((0, len)));
        }
        assert_eq!(varint_word(&[0x80; 16], 0), None);
        // A tenth byte's bits past the 64th are dropped.
        let mut buf = vec![0xffu8; 9];
        buf.push(0x7f);
        assert_eq!(varint_word(&buf, 0), Some((u64::MAX, 10)));
        assert_eq!(read_varint(&buf, 0), Ok((u64::MAX, 10)));
        // Cut off after eight or nine continuing bytes.
        assert_eq!(varint_word(&[0xff; 8], 0), None);
        assert_eq!(varint_word(&[0xff; 9], 0), None);
        for _ in 0..2000 {
            let buf: Vec<u8> = (0..24).map(|_| next() as u8 | if next() % 3 == 0 { 0 } else { 0x80 }).collect();
            check(&buf);
        }
    }

    /// `write_varint` writes each value as the byte loop does (every bit length, both
    /// ends of each, so every path: one, two, up to eight bytes as a word, nine and ten),
    /// after whatever the buffer held.
    #[test]
    fn write_varint_writes_the_canonical_bytes() {
        let byte_loop = |mut v: u64| {
            let mut out = Vec::new();
            while v >= 0x80 {
                out.push((v as u8) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
            out
        };
        for bits in 0..=64u32 {
            let top = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            for v in [top, top >> 1, (top >> 1) + 1, top & 0x5555_5555_5555_5555, top & 0xaaaa_aaaa_aaaa_aaaa] {
                let mut out = vec![0xee; bits as usize % 5];
                let before = out.len();
                write_varint(&mut out, v);
                assert_eq!(&out[before..], byte_loop(v).as_slice(), "{v:#x}");
                assert_eq!(out.len() - before, varint_len(v), "{v:#x}");
                assert_eq!(read_varint(&out, before), Ok((v, out.len())), "{v:#x}");
            }
        }
    }
}
