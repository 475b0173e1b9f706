//! The table interpreter: decodes any message over its [`MessageLayout`](crate::MessageLayout), the oracle for
//! the compiled decoder and its fallback.
//!
//! Positions are absolute offsets into the whole input, so an error's offset is always
//! relative to the start of the input, and compiled code can hand any sub-range over.

use crate::wire::{self, read_length, read_tag, read_varint, skip_value, zigzag_decode32, zigzag_decode64};
use crate::{
    runtime, Arena, BlockMut, DecodeError, DecodeErrorKind as K, FieldKind, FieldSlot, Repetition, SlotIndex,
    SlotMismatch,
};

use crate::DecodeOptions;

/// What decoding one field led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Continue with the next field at this position.
    Next(usize),
    /// The enclosing group ended; its fields resume after this position.
    GroupEnd(usize),
}

/// One decode run of the interpreter over one input. The blocks it writes carry their own
/// arena and layouts ([`BlockMut`]); the input must live as long as their tree, since
/// strings and unknown fields are views of it.
pub struct Interp<'a> {
    buf: &'a [u8],
    max_depth: u32,
    utf8: crate::Utf8Check,
    /// Whether unknown fields are stored ([`crate::UnknownFields::Keep`]).
    keep_unknown: bool,
    children: Option<&'a dyn ChildDecoder>,
}

/// Other code that may decode a child message in the interpreter's place: a tiered
/// engine's compiled code for the child's type, once it exists. Asked for every nested
/// message and group.
pub trait ChildDecoder {
    /// Decodes the child's fields in `pos..end` into `child`, a block of layout `layout`
    /// (with `group = Some((number, tag_pos))`, up to the matching end-group tag) and
    /// returns the position after them, as [`Interp::message`] would; or `None` when it
    /// has no code for that type and the interpreter should decode it itself.
    fn decode_child(
        &self,
        child: &mut BlockMut<'_>,
        layout: crate::LayoutIndex,
        pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Option<Result<usize, DecodeError>>;
}

/// A block refused a write the layout said it takes: a broken internal invariant.
fn internal(_: SlotMismatch) -> DecodeError {
    DecodeError::new(K::Internal, 0)
}

impl<'a> Interp<'a> {
    /// An interpreter run over `buf`.
    #[inline]
    pub fn new(buf: &'a [u8], opts: &DecodeOptions) -> Self {
        // The limit is at most `MAX_DEPTH_LIMIT` (`DecodeOptions` clamps it): the
        // interpreter recurses once per level.
        Interp {
            buf,
            max_depth: opts.max_depth(),
            utf8: opts.utf8(),
            keep_unknown: opts.unknown_fields() == crate::UnknownFields::Keep,
            children: None,
        }
    }

    /// The same run, offering every nested message to `children` first.
    #[inline]
    pub fn with_children(self, children: &'a dyn ChildDecoder) -> Self {
        Interp { children: Some(children), ..self }
    }

    /// Decodes a nested message or group: through `children` if it takes it.
    #[inline]
    fn child(
        &self,
        child: &mut BlockMut<'a>,
        layout: u32,
        pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Result<usize, DecodeError> {
        if let Some(c) = self.children {
            if let Some(r) = c.decode_child(child, crate::LayoutIndex::new(layout), pos, end, depth, group) {
                // The next field starts where the child ended: inside the input, and not
                // before the child's start (a hook that says otherwise is refused).
                return match r {
                    Ok(next) if next < pos || next > self.buf.len() => Err(DecodeError::new(K::Internal, pos)),
                    r => r,
                };
            }
        }
        self.message(child, pos, end, depth, group)
    }

    /// Decodes `buf[pos..end]` as the fields of `block` (merging into what it holds).
    /// `depth` is the block's nesting depth (root = 0). With `group = Some((number,
    /// tag_pos))` the fields end at the matching end-group tag instead of at `end`;
    /// returns the position after the fields (after the end-group tag for groups).
    pub fn message(
        &self,
        block: &mut BlockMut<'a>,
        mut pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Result<usize, DecodeError> {
        let layout = block.layout();
        while pos < end {
            // A one-byte tag (field numbers 1 to 15, most fields of most messages) goes
            // straight to its slot through the layout's tag table, in either form;
            // anything else takes `field`'s tag decode and number lookup.
            if let Some((si, packed)) = layout.one_byte_tag(self.buf[pos]) {
                let slot = layout.slot(si);
                pos = if packed {
                    // The table's packed form is a repeated packable slot.
                    let (start, stop) = read_length(&self.buf[..end], pos + 1, end)?;
                    self.run(block, si, slot, start, stop)?
                } else {
                    self.value(block, si, slot, pos, pos + 1, end, depth)?
                };
                continue;
            }
            // A two-byte tag (field numbers 16 to 2047) of a value in its slot's own wire
            // type: the number looked up directly, without `field`'s general tag decode.
            if pos + 1 < end && self.buf[pos] >= 0x80 && self.buf[pos + 1] < 0x80 {
                let tag = (self.buf[pos] & 0x7f) as u32 | (self.buf[pos + 1] as u32) << 7;
                if let Some(si) = layout.slot_by_number(tag >> 3) {
                    let slot = layout.slot(si);
                    if (tag & 7) as u8 == slot.kind.wire_type() {
                        pos = self.value(block, si, slot, pos, pos + 2, end, depth)?;
                        continue;
                    }
                }
            }
            match self.field(block, pos, end, depth, group.map(|g| g.0))? {
                Step::Next(next) => pos = next,
                Step::GroupEnd(next) => return Ok(next),
            }
        }
        match group {
            Some((_, tag_pos)) => Err(DecodeError::new(K::UnterminatedGroup, tag_pos)),
            None => Ok(pos),
        }
    }

    /// Decodes the one field whose tag starts at `pos` (< `end`) into `block`: a known
    /// field, an unknown field (kept as raw bytes), or the end-group tag `group` names.
    #[inline]
    pub fn field(
        &self,
        block: &mut BlockMut<'a>,
        pos: usize,
        end: usize,
        depth: u32,
        group: Option<u32>,
    ) -> Result<Step, DecodeError> {
        let buf = &self.buf[..end];
        let layout = block.layout();
        let tag_pos = pos;
        let (number, wt, pos) = read_tag(buf, pos)?;
        if wt == wire::EGROUP {
            return match group {
                Some(n) if n == number => Ok(Step::GroupEnd(pos)),
                _ => Err(DecodeError::new(K::UnmatchedEndGroup, tag_pos)),
            };
        }
        if let Some(si) = layout.slot_by_number(number) {
            let slot = layout.slot(si);
            if wt == slot.kind.wire_type() {
                return self.value(block, si, slot, tag_pos, pos, end, depth).map(Step::Next);
            }
            if wt == wire::LEN && slot.repetition == Repetition::Repeated && slot.kind.is_packable() {
                return self.packed(block, si, pos, end).map(Step::Next);
            }
        }
        // Unknown number, or a known number with the wrong wire type: kept as raw bytes
        // (checked and dropped when discarding).
        let after = skip_value(buf, tag_pos, pos, end, number, wt, depth, self.max_depth)?;
        if self.keep_unknown {
            block.push_unknown(&self.buf[tag_pos..after]);
        }
        Ok(Step::Next(after))
    }

    /// Decodes one non-packed value of slot `si` whose tag ended at `pos`. `slot` is
    /// `block.layout().slot(si)`: the stores below rely on it (hence not public).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn value(
        &self,
        block: &mut BlockMut<'a>,
        si: SlotIndex,
        slot: &FieldSlot,
        tag_pos: usize,
        pos: usize,
        end: usize,
        depth: u32,
    ) -> Result<usize, DecodeError> {
        let buf = &self.buf[..end];
        let repeated = slot.repetition != Repetition::Singular;
        debug_assert!(std::ptr::eq(slot, block.layout().slot(si)), "slot {si:?} of another layout");
        macro_rules! put {
            ($v:expr) => {{
                // SAFETY: `slot` is slot `si` of the block's layout (the callers take it from
                // there), and each arm below stores the type its kind holds.
                unsafe { block.put_unchecked(slot, $v) }
            }};
        }
        match slot.kind {
            FieldKind::Int32
            | FieldKind::Int64
            | FieldKind::Uint32
            | FieldKind::Uint64
            | FieldKind::Sint32
            | FieldKind::Sint64
            | FieldKind::Bool
            | FieldKind::Enum => {
                let (v, next) = read_varint(buf, pos)?;
                match slot.kind {
                    FieldKind::Int32 => put!(v as i32),
                    FieldKind::Int64 => put!(v as i64),
                    FieldKind::Uint32 => put!(v as u32),
                    FieldKind::Uint64 => put!(v),
                    FieldKind::Sint32 => put!(zigzag_decode32(v as u32)),
                    FieldKind::Sint64 => put!(zigzag_decode64(v)),
                    FieldKind::Bool => put!(v != 0),
                    _ => {
                        if slot.closed_enum && !block.layout().closed_enum_has(si, v as i32) {
                            // protobuf keeps the value as the enum's int32, sign-extended
                            // (so 2^32+7 is kept as 7), not the raw varint.
                            let _ = tag_pos;
                            if self.keep_unknown {
                                let span = unknown_varint(block.arena(), slot.number, v as i32 as i64 as u64);
                                block.push_unknown(span);
                            }
                        } else {
                            put!(v as i32)
                        }
                    }
                }
                Ok(next)
            }
            FieldKind::Fixed32 | FieldKind::Sfixed32 | FieldKind::Float => {
                let b: [u8; 4] = buf.get(pos..pos + 4).ok_or(DecodeError::new(K::Truncated, pos))?.try_into().unwrap();
                match slot.kind {
                    FieldKind::Fixed32 => put!(u32::from_le_bytes(b)),
                    FieldKind::Sfixed32 => put!(i32::from_le_bytes(b)),
                    _ => put!(f32::from_le_bytes(b)),
                }
                Ok(pos + 4)
            }
            FieldKind::Fixed64 | FieldKind::Sfixed64 | FieldKind::Double => {
                let b: [u8; 8] = buf.get(pos..pos + 8).ok_or(DecodeError::new(K::Truncated, pos))?.try_into().unwrap();
                match slot.kind {
                    FieldKind::Fixed64 => put!(u64::from_le_bytes(b)),
                    FieldKind::Sfixed64 => put!(i64::from_le_bytes(b)),
                    _ => put!(f64::from_le_bytes(b)),
                }
                Ok(pos + 8)
            }
            FieldKind::String | FieldKind::Bytes => {
                let (start, stop) = read_length(buf, pos, end)?;
                let bytes = &self.buf[start..stop];
                if slot.kind == FieldKind::String && self.utf8.checks(slot.validate_utf8) && !runtime::is_utf8(bytes) {
                    return Err(DecodeError::new(K::InvalidUtf8, pos));
                }
                // SAFETY: as `put!`: a string or bytes slot of the block's layout.
                unsafe { block.put_bytes_unchecked(slot, bytes) };
                Ok(stop)
            }
            FieldKind::Message => {
                let (start, stop) = read_length(buf, pos, end)?;
                if depth >= self.max_depth {
                    return Err(DecodeError::new(K::DepthLimitExceeded, tag_pos));
                }
                if repeated && start == stop {
                    // An empty element: the shared zero block, no allocation.
                    block.push_empty_child(si).map_err(internal)?;
                    return Ok(stop);
                }
                // SAFETY: as `put!`: a message slot of the block's layout, either cardinality.
                let mut child = unsafe { block.value_child_unchecked(slot) };
                self.child(&mut child, slot.child, start, stop, depth + 1, None)
            }
            FieldKind::Group => {
                if depth >= self.max_depth {
                    return Err(DecodeError::new(K::DepthLimitExceeded, tag_pos));
                }
                // SAFETY: as above: a group slot of the block's layout.
                let mut child = unsafe { block.value_child_unchecked(slot) };
                self.child(&mut child, slot.child, pos, end, depth + 1, Some((slot.number, tag_pos)))
            }
        }
    }

    /// Decodes a packed run of slot `si` whose length prefix is at `pos`.
    pub fn packed(
        &self,
        block: &mut BlockMut<'a>,
        si: SlotIndex,
        pos: usize,
        end: usize,
    ) -> Result<usize, DecodeError> {
        let slot = block.layout().slot(si);
        if slot.repetition == Repetition::Singular || !slot.kind.is_packable() {
            return Err(DecodeError::new(K::Internal, pos));
        }
        let (start, stop) = read_length(&self.buf[..end], pos, end)?;
        self.run(block, si, slot, start, stop)
    }

    /// Decodes the values of a packed run of slot `si` that fill exactly `start..stop`
    /// (after its length prefix; compiled code hands over the rest of a run it started).
    pub fn packed_run(
        &self,
        block: &mut BlockMut<'a>,
        si: SlotIndex,
        start: usize,
        stop: usize,
    ) -> Result<usize, DecodeError> {
        let slot = block.layout().slot(si);
        if slot.repetition == Repetition::Singular || !slot.kind.is_packable() || start > stop || stop > self.buf.len()
        {
            return Err(DecodeError::new(K::Internal, start));
        }
        self.run(block, si, slot, start, stop)
    }

    /// [`packed_run`](Self::packed_run) once checked: `slot` is `block.layout().slot(si)`,
    /// repeated and packable, and `start <= stop <= buf.len()`.
    fn run(
        &self,
        block: &mut BlockMut<'a>,
        si: SlotIndex,
        slot: &FieldSlot,
        start: usize,
        stop: usize,
    ) -> Result<usize, DecodeError> {
        debug_assert!(std::ptr::eq(slot, block.layout().slot(si)), "slot {si:?} of another layout");
        let width = slot.kind.fixed_width() as usize;
        if let Some(count) = (stop - start).checked_div(width) {
            let whole = count * width;
            block.extend_fixed(si, &self.buf[start..start + whole]).map_err(internal)?;
            if start + whole != stop {
                return Err(DecodeError::new(K::Truncated, start + whole));
            }
            return Ok(stop);
        }
        let data = &self.buf[start..stop];
        macro_rules! extend {
            ($convert:expr) => {
                // SAFETY: `slot` is a repeated slot of the block's layout (the contract
                // above), and each arm below converts to the type its kind holds.
                unsafe { block.extend_varints(slot, data, $convert) }
            };
        }
        let run = match slot.kind {
            FieldKind::Int32 => extend!(|v| v as i32),
            FieldKind::Int64 => extend!(|v| v as i64),
            FieldKind::Uint32 => extend!(|v| v as u32),
            FieldKind::Uint64 => extend!(|v| v),
            FieldKind::Sint32 => extend!(|v| zigzag_decode32(v as u32)),
            FieldKind::Sint64 => extend!(zigzag_decode64),
            FieldKind::Bool => extend!(|v| v != 0),
            FieldKind::Enum if !slot.closed_enum => extend!(|v| v as i32),
            // A closed enum whose declared values are one run below 128 (most), in a run of
            // one-byte varints all declared: the word-at-a-time decode, after one pass
            // over the bytes.
            FieldKind::Enum if one_byte_enum_run(block.layout().closed_enum_range(si), data) => {
                extend!(|v| v as i32)
            }
            _ => {
                // Closed enums: undeclared values go to unknown fields, one by one.
                let data = &self.buf[..stop];
                let mut p = start;
                while p < stop {
                    let (v, next) = read_varint(data, p)?;
                    if block.layout().closed_enum_has(si, v as i32) {
                        // SAFETY: as `extend!`: a repeated enum slot holds `i32`s.
                        unsafe { block.put_unchecked(slot, v as i32) }
                    } else {
                        // protoc keeps a packed run's undeclared value as the raw varint
                        // (unlike a single value, kept as the sign-extended int32); golden
                        // tests pin this. Re-encoding then re-decoding can therefore turn
                        // such a value (e.g. 2^33 + 42) into a declared one (42), in protoc
                        // as here.
                        if self.keep_unknown {
                            let span = unknown_varint(block.arena(), slot.number, v);
                            block.push_unknown(span);
                        }
                    }
                    p = next;
                }
                Ok(())
            }
        };
        run.map_err(|e| DecodeError::new(e.kind, start + e.offset))?;
        Ok(stop)
    }
}

/// Whether every byte of `data` is a one-byte varint inside `range` (declared values
/// `lo..=hi` of a closed enum).
fn one_byte_enum_run(range: Option<(i32, i32)>, data: &[u8]) -> bool {
    match range {
        Some((lo, hi)) if lo >= 0 && hi < 0x80 => {
            let (lo, hi) = (lo as u8, hi as u8);
            data.iter().all(|&b| (lo..=hi).contains(&b))
        }
        _ => false,
    }
}

/// Wire bytes of an unknown varint field synthesised in the arena: a closed enum's
/// unknown value found inside a packed run has no bytes of its own in the input.
pub fn unknown_varint(arena: &Arena, number: u32, value: u64) -> &[u8] {
    let mut tmp = Vec::with_capacity(20);
    wire::write_varint(&mut tmp, (number as u64) << 3);
    wire::write_varint(&mut tmp, value);
    arena.alloc_bytes(&tmp)
}
