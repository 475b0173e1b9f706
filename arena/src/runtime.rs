//! Slow-path helpers shared by the interpreter and compiled code.

/// Whether `bytes` is valid UTF-8 (SIMD-accelerated where the host has it).
#[inline]
pub fn is_utf8(bytes: &[u8]) -> bool {
    utf8(bytes).is_some()
}

/// `bytes` as text if it is valid UTF-8: what a decoder that checked a string hands on,
/// so that no reader checks it again.
#[inline]
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    // Most protobuf strings are short ASCII: a word-at-a-time check settles them without
    // the SIMD validator's set-up cost.
    if is_ascii(bytes) {
        // SAFETY: every byte is below 0x80 (just checked), and ASCII is valid UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    simdutf8::basic::from_utf8(bytes).ok()
}

/// Whether every byte is below 0x80, sixteen bytes per step.
#[inline]
fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut acc = 0u64;
    let mut chunks = bytes.chunks_exact(16);
    for c in &mut chunks {
        let (a, b) = c.split_at(8);
        acc |= u64::from_le_bytes(a.try_into().unwrap()) | u64::from_le_bytes(b.try_into().unwrap());
    }
    let rest = chunks.remainder();
    if rest.len() >= 8 {
        acc |= u64::from_le_bytes(rest[..8].try_into().unwrap());
        acc |= u64::from_le_bytes(rest[rest.len() - 8..].try_into().unwrap());
    } else {
        for &b in rest {
            acc |= b as u64;
        }
    }
    acc & HIGH == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn ascii_check_sees_every_byte() {
        for len in 0..80 {
            let mut v = vec![b'a'; len];
            assert!(super::is_ascii(&v));
            for i in 0..len {
                v[i] = 0xc3;
                assert!(!super::is_ascii(&v), "len {len}, high byte at {i}");
                v[i] = b'a';
            }
        }
        assert!(super::is_utf8("héllo wörld, ünïcode".as_bytes()));
        assert!(!super::is_utf8(&[b'a', 0xff]));
        for s in ["", "ascii only", "héllo wörld, ünïcode"] {
            assert_eq!(super::utf8(s.as_bytes()), Some(s));
        }
        assert_eq!(super::utf8(&[b'a', 0xff]), None);
        assert_eq!(super::utf8(&[0xe2, 0x82]), None);
    }
}
