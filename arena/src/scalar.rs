//! What a slot holds, as the writer and the readers check it: the number types stored inline (`Scalar`), and the error a writer gives for a slot of another kind or cardinality (`SlotMismatch`).

use crate::layout::{FieldKind, Repetition};

/// A number stored inline in a block or vector: `bool`, 32/64-bit integers and floats.
/// Sealed. Strings, bytes and child blocks have their own methods, because their slots
/// hold pointers that readers follow: nothing but the decoder may put an address there.
pub trait Scalar: Copy + sealed::Sealed {
    /// The value an absent field (or an inactive oneof member) reads as.
    const ZERO: Self;
    /// Whether a slot of `kind` holds values of this type's width and representation:
    /// any number kind of the same width (`u32` reads a `float`'s bits, `i64` a `uint64`),
    /// `bool` only `bool`, and never a kind whose slot holds a pointer.
    fn fits(kind: FieldKind) -> bool;
}
mod sealed {
    pub trait Sealed {}
}
macro_rules! scalar {
    ($($t:ty => $zero:expr, [$($k:ident)|*];)*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const ZERO: Self = $zero;
            #[inline]
            fn fits(kind: FieldKind) -> bool {
                matches!(kind, $(FieldKind::$k)|*)
            }
        }
    )*};
}
scalar! {
    bool => false, [Bool];
    u32 => 0, [Uint32 | Fixed32 | Int32 | Sint32 | Sfixed32 | Enum | Float];
    i32 => 0, [Uint32 | Fixed32 | Int32 | Sint32 | Sfixed32 | Enum | Float];
    f32 => 0.0, [Uint32 | Fixed32 | Int32 | Sint32 | Sfixed32 | Enum | Float];
    u64 => 0, [Uint64 | Fixed64 | Int64 | Sint64 | Sfixed64 | Double];
    i64 => 0, [Uint64 | Fixed64 | Int64 | Sint64 | Sfixed64 | Double];
    f64 => 0.0, [Uint64 | Fixed64 | Int64 | Sint64 | Sfixed64 | Double];
}

/// Why a [`BlockMut`] refused a write: the slot is not of the kind or cardinality the
/// method writes. A decoder never hits this (it writes what the layout says); it stops
/// a caller from storing, say, an integer where a reader expects an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("slot {slot} (field {number}) is a {repetition:?} {kind:?} field: {wanted}")]
pub struct SlotMismatch {
    /// The slot written.
    pub slot: u32,
    /// Its field number.
    pub number: u32,
    /// Its kind.
    pub kind: FieldKind,
    /// Its cardinality.
    pub repetition: Repetition,
    /// What the write needed.
    pub wanted: &'static str,
}
