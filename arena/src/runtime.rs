//! Slow-path helpers shared by the interpreter and compiled code.

/// Whether `bytes` is valid UTF-8 (SIMD-accelerated where the host has it).
#[inline]
pub fn is_utf8(bytes: &[u8]) -> bool {
    simdutf8::basic::from_utf8(bytes).is_ok()
}
