//! Packed varint runs: counting their terminators (eight bytes a step) and decoding a whole run into a vector's spare room (SWAR words, BMI2's `pext` where present).
//!
//! Both decoders reach this through `BlockMut::extend_varints`, which sizes the vector from
//! [`count_terminators`] and then calls [`decode_run`]; single varints and tags are
//! [`crate::wire`]'s.

use crate::error::DecodeError;
use crate::wire::{load_word, pack_groups, read_varint, varint_past_word_by};

/// The bytes of `data` below 0x80: the number of varints that end in it. Eight bytes a
/// step (the high bits, gathered by a multiply), as the runs are mostly short: the
/// iterator count it replaces widened every byte to a 64-bit lane.
#[inline]
pub(crate) fn count_terminators(data: &[u8]) -> usize {
    let mut chunks = data.chunks_exact(8);
    let mut n = 0usize;
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        // One bit per terminator at bit 0 of its byte; the multiply sums the bytes into
        // the top one (at most 8: no carry between bytes).
        let t = (!w >> 7) & 0x0101_0101_0101_0101;
        n += (t.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize;
    }
    n + chunks.remainder().iter().filter(|&&b| b < 0x80).count()
}

/// Decodes every varint of the packed run `data`, converted by `convert`, into `base[n..]`:
/// the byte loop for runs under eight bytes, else eight bytes a load, with BMI2's `pext`
/// where the CPU has a fast one ([`fast_pext`]). Returns the new element count and, on a malformed varint, its
/// error (offset relative to `data`), the elements before it kept.
///
/// # Safety
/// `base` holds `n` elements and room for [`count_terminators`]`(data)` more.
#[inline(always)]
pub(crate) unsafe fn decode_run<T>(
    base: *mut T,
    n: usize,
    data: &[u8],
    convert: impl Fn(u64) -> T,
) -> (usize, Result<(), DecodeError>) {
    if data.len() < 8 {
        // Too short for a word: the byte loop, inline (a tag list, a short geometry).
        // SAFETY: the caller's contract.
        return unsafe { fill_varints_from(base, n, data, 0, convert) };
    }
    #[cfg(target_arch = "x86_64")]
    if fast_pext() {
        // SAFETY: the CPU has BMI2 (`fast_pext` says so only then); `base` has room for `count_terminators(data)` more
        // elements (the caller's contract), which is what `fill_varints` writes at most.
        return unsafe { fill_varints_bmi2(base, n, data, convert) };
    }
    // SAFETY: as above.
    unsafe { fill_varints(base, n, data, convert, pack_groups) }
}

/// Calls `f` with each varint that ends within the word `w` (eight bytes of a buffer, the
/// first a varint's first), in order, and returns the bytes they take: 0 when the first
/// varint is longer than eight bytes. Bytes after the last terminator (the start of a
/// varint the word cuts) are left for the next word. One load serves every varint in the
/// word, so a run of 2-4-byte varints is not one load-to-load dependency per value. `pack`
/// packs a varint's 7-bit groups: [`pack_groups`], or one `pext` where the CPU has BMI2
/// (see [`decode_run`]).
#[inline(always)]
pub(crate) fn varints_in_word(w: u64, pack: impl Fn(u64) -> u64, mut f: impl FnMut(u64)) -> usize {
    let mut stops = !w & 0x8080_8080_8080_8080;
    // The bit where the next varint starts.
    let mut start = 0;
    while stops != 0 {
        // One past the terminator's top bit: the end of this varint's bytes.
        let end = stops.trailing_zeros() + 1;
        // `end - start` is 8 to 64 bits, so the shift is at most 56.
        let x = (w >> start) & (u64::MAX >> (64 - (end - start))) & 0x7f7f_7f7f_7f7f_7f7f;
        f(pack(x));
        start = end;
        stops &= stops - 1;
    }
    (start / 8) as usize
}

/// The loop of [`decode_run`]: decodes every varint of `data`, converted
/// by `convert`, into `base[n..]`, packing each varint's 7-bit groups with `pack`; returns
/// the new element count and, on a malformed varint, its error (offset relative to
/// `data`), the elements before it kept.
///
/// # Safety
/// `base` holds `n` elements and room for as many more as `data` has bytes below 0x80.
#[inline(always)]
unsafe fn fill_varints<T>(
    base: *mut T,
    mut n: usize,
    data: &[u8],
    convert: impl Fn(u64) -> T,
    pack: impl Fn(u64) -> u64 + Copy,
) -> (usize, Result<(), DecodeError>) {
    let mut p = 0;
    // Eight bytes at a time while eight remain: one load, no loop over bytes. A word
    // without continuation bits is eight one-byte varints (small numbers, enums,
    // bools: the common packed run), stored without decoding each.
    while let Some(w) = load_word(data, p) {
        if w & 0x8080_8080_8080_8080 == 0 {
            for i in 0..8 {
                // SAFETY: each of the eight bytes is its own varint's terminator (below
                // 0x80), so these are 8 of the elements the caller made room for.
                unsafe { base.add(n + i).write(convert((w >> (8 * i)) & 0x7f)) };
            }
            n += 8;
            p += 8;
            continue;
        }
        // Every varint that ends in the word, from the one load.
        let used = varints_in_word(w, pack, |x| {
            // SAFETY: as below: each varint ended at its own byte below 0x80.
            unsafe { base.add(n).write(convert(x)) };
            n += 1;
        });
        if used != 0 {
            p += used;
            continue;
        }
        // No terminator in the word: nine or ten bytes; longer or cut off: `read_varint`
        // reports it below.
        let Some((x, len)) = varint_past_word_by(data, p, w, pack) else { break };
        // SAFETY: as below: the varint ended at its own byte below 0x80.
        unsafe { base.add(n).write(convert(x)) };
        n += 1;
        p += len;
    }
    // SAFETY: the caller's contract; `n` counts what was written so far.
    unsafe { fill_varints_from(base, n, data, p, convert) }
}

/// The rest of [`fill_varints`] from `p`, one varint at a time: the tail of a long run
/// (fewer than eight bytes left, or a malformed varint) and the whole of a short one.
///
/// # Safety
/// As [`fill_varints`].
#[inline(always)]
unsafe fn fill_varints_from<T>(
    base: *mut T,
    mut n: usize,
    data: &[u8],
    mut p: usize,
    convert: impl Fn(u64) -> T,
) -> (usize, Result<(), DecodeError>) {
    let result = loop {
        if p >= data.len() {
            break Ok(());
        }
        match read_varint(data, p) {
            Ok((x, next)) => {
                // SAFETY: each element decoded ended at its own byte below 0x80
                // (`read_varint` returns only then), so at most as many elements as the
                // caller made room for are written after the first `n`.
                unsafe { base.add(n).write(convert(x)) };
                n += 1;
                p = next;
            }
            Err(e) => break Err(e),
        }
    };
    (n, result)
}

/// Whether the CPU has BMI2's `pext` and it is fast: not an AMD (or Hygon) CPU before Zen 3
/// (families 0x15 to 0x18), which run it in microcode, taking tens to hundreds of cycles
/// for the 56-bit mask here: on a Zen 1 EPYC, whole-run decoding with `pext` took 4× the
/// time of the SWAR packing it replaces. Asked once (CPUID), then an atomic load.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn fast_pext() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0: not asked yet; 1: no; 2: yes.
    static FAST: AtomicU8 = AtomicU8::new(0);
    match FAST.load(Ordering::Relaxed) {
        0 => {
            let fast = std::is_x86_feature_detected!("bmi2") && !slow_pext_vendor();
            FAST.store(1 + fast as u8, Ordering::Relaxed);
            fast
        }
        known => known == 2,
    }
}

/// Whether the CPU is an AMD or Hygon one of a family before Zen 3 (0x19).
#[cfg(target_arch = "x86_64")]
#[cold]
fn slow_pext_vendor() -> bool {
    use std::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 CPU; leaves 0 and 1 always do.
    #[allow(unused_unsafe)]
    let (vendor, signature) = unsafe { (__cpuid(0), __cpuid(1).eax) };
    let mut name = [0u8; 12];
    name[..4].copy_from_slice(&vendor.ebx.to_le_bytes());
    name[4..8].copy_from_slice(&vendor.edx.to_le_bytes());
    name[8..].copy_from_slice(&vendor.ecx.to_le_bytes());
    let base = (signature >> 8) & 0xf;
    let family = if base == 0xf { base + ((signature >> 20) & 0xff) } else { base };
    matches!(&name, b"AuthenticAMD" | b"HygonGenuine") && family < 0x19
}

/// [`fill_varints`] compiled for BMI2, packing a varint's 7-bit groups with one `pext`
/// (12 dependent shift-and-mask operations otherwise).
///
/// # Safety
/// As [`fill_varints`], and the CPU has BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn fill_varints_bmi2<T>(
    base: *mut T,
    n: usize,
    data: &[u8],
    convert: impl Fn(u64) -> T,
) -> (usize, Result<(), DecodeError>) {
    // SAFETY: the caller's contract (BMI2 present, room in `base`).
    unsafe { fill_varints(base, n, data, convert, |x| std::arch::x86_64::_pext_u64(x, 0x7f7f_7f7f_7f7f_7f7f)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::write_varint;

    /// The run decoder's loop gives what a byte-at-a-time loop gives, with the portable
    /// packing and (where the CPU has it) the BMI2 one: values, element count, and the
    /// error and its offset on a malformed tail. Runs of every length class, so words hold
    /// one to eight varints or none (9- and 10-byte varints).
    #[test]
    fn fill_varints_agrees_with_read_varint_for_both_packings() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..400 {
            let mut data = Vec::new();
            for _ in 0..(next() % 40) {
                let bits = next() % 65;
                let v = if bits == 64 { next() } else { next() & ((1u64 << bits) - 1) };
                write_varint(&mut data, v);
            }
            if round % 5 == 0 {
                // A malformed or cut-off tail: continuation bytes to the end.
                data.extend((0..next() % 12).map(|_| 0x80 | next() as u8));
            }
            let mut want = Vec::new();
            let mut p = 0;
            let want_result = loop {
                if p >= data.len() {
                    break Ok(());
                }
                match read_varint(&data, p) {
                    Ok((x, q)) => {
                        want.push(x);
                        p = q;
                    }
                    Err(e) => break Err(e),
                }
            };
            let room = data.iter().filter(|&&b| b < 0x80).count();
            // The count that sizes the reservation the decoders write into: exact, for
            // every length and alignment of the tail.
            for cut in 0..data.len().min(20) {
                let part = &data[cut..];
                assert_eq!(count_terminators(part), part.iter().filter(|&&b| b < 0x80).count(), "from {cut}");
            }
            let run = |bmi2: bool| {
                let mut out = vec![0u64; room + 1];
                out[0] = 7;
                // SAFETY: `out` holds 1 element and room for `room` more; `run(true)` is
                // called only where the CPU has BMI2.
                let (n, result) = unsafe {
                    if bmi2 {
                        #[cfg(target_arch = "x86_64")]
                        {
                            fill_varints_bmi2(out.as_mut_ptr(), 1, &data, |x| x)
                        }
                        #[cfg(not(target_arch = "x86_64"))]
                        unreachable!()
                    } else {
                        fill_varints(out.as_mut_ptr(), 1, &data, |x| x, pack_groups)
                    }
                };
                out.truncate(n);
                (out, result)
            };
            let mut expected = vec![7];
            expected.extend(&want);
            let portable = run(false);
            assert_eq!(portable, (expected.clone(), want_result), "round {round}: {data:02x?}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("bmi2") {
                assert_eq!(run(true), portable, "round {round}: {data:02x?}");
            }
        }
    }
}
