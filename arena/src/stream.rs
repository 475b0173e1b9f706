//! The streaming decoder: walks a message's wire bytes over its layouts and hands each field's value to a [`MessageSink`], building no tree.
//!
//! It accepts and rejects exactly what the tree interpreter ([`crate::interp`]) does, with
//! the same error kinds and offsets: the same tag, length, depth, group and UTF-8 checks;
//! a known number in another wire type is an unknown field (skipped here); a closed enum's
//! undeclared value goes to unknown fields (not reported). What differs is the order:
//! values come in wire order, so a singular field met twice is reported twice (the tree
//! keeps the last), a message field met twice is begun twice (the tree merges the two),
//! and a oneof member set after another is reported after it (the tree keeps the last
//! one set). A sink that wants the tree's view applies those rules itself.

use std::ops::ControlFlow;

use crate::wire::{self, read_length, read_tag, read_varint, skip_value, zigzag_decode32, zigzag_decode64};
use crate::{
    runtime, DecodeError, DecodeErrorKind as K, DecodeOptions, FieldKind, FieldSlot, LayoutIndex, Layouts,
    MessageLayout, Repetition, SlotIndex, Utf8Check,
};

/// One value as it comes off the wire, typed by its field's kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WireValue<'a> {
    /// `bool`.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32`.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64`.
    I64(i64),
    /// `uint32`, `fixed32`.
    U32(u32),
    /// `uint64`, `fixed64`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// An enum's number (declared, or any number of an open enum).
    Enum(i32),
    /// A `string` whose UTF-8 the walk checked (the decode options' policy covers the
    /// field): a view of the input.
    Str(&'a str),
    /// `bytes`, or a `string` the decode options leave unchecked: a view of the input.
    Bytes(&'a [u8]),
}

/// The variant of [`WireValue`] every element of a packed run is (runs are numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RunKind {
    /// [`WireValue::Bool`].
    Bool,
    /// [`WireValue::I32`].
    I32,
    /// [`WireValue::I64`].
    I64,
    /// [`WireValue::U32`].
    U32,
    /// [`WireValue::U64`].
    U64,
    /// [`WireValue::F32`].
    F32,
    /// [`WireValue::F64`].
    F64,
    /// [`WireValue::Enum`].
    Enum,
}

impl RunKind {
    const fn from_code(k: u8) -> RunKind {
        match k {
            0 => RunKind::Bool,
            1 => RunKind::I32,
            2 => RunKind::I64,
            3 => RunKind::U32,
            4 => RunKind::U64,
            5 => RunKind::F32,
            6 => RunKind::F64,
            _ => RunKind::Enum,
        }
    }
}

/// The elements of one packed run, for [`MessageSink::packed`]: an iterator whose elements
/// are all of the variant [`KIND`](Self::KIND), a constant of the iterator's type, so a
/// sink can pick what to do with them when it is compiled rather than per element (one
/// instance of the sink's `packed` per kind).
pub trait PackedRun<'a>: Iterator<Item = WireValue<'a>> {
    /// The variant of every element.
    const KIND: RunKind;
}

/// Receives a message's fields from [`walk`], in wire order. Slots are those of the
/// message's [`MessageLayout`]; every element of a repeated field (packed or not) is one
/// [`value`](Self::value) call. `Break` from any callback stops the walk.
pub trait MessageSink<'a> {
    /// What every callback of one walk shares besides the sink (the sinks of nested
    /// messages are other values of the sink's type; this is the walk's own state).
    type Cx;

    /// A scalar, string or bytes value of slot `si` of the current message.
    fn value(&mut self, cx: &mut Self::Cx, si: SlotIndex, value: WireValue<'a>) -> ControlFlow<()>;

    /// A message or group value of slot `si` begins: the sink that receives its fields,
    /// or `None` to have it checked and passed over. (A sink of the same type: one type
    /// walks the whole tree, so the walk is monomorphic.)
    fn begin(&mut self, cx: &mut Self::Cx, si: SlotIndex) -> ControlFlow<(), Option<&mut Self>>;

    /// The message begun by [`begin`](Self::begin) (when it returned a sink) ended.
    fn end(&mut self, cx: &mut Self::Cx, si: SlotIndex) -> ControlFlow<()>;

    /// Whether packed runs of varints and fixed-width values come to [`packed`](Self::packed)
    /// whole rather than as one [`value`](Self::value) call per element (a sink that appends
    /// a run to one buffer finds the buffer once per run).
    const WANTS_RUNS: bool = false;

    /// The elements of one packed run of slot `si`, decoded, each a `WireValue` of the slot's
    /// kind, when [`WANTS_RUNS`](Self::WANTS_RUNS) says so (the elements of a closed enum's
    /// run still come one `value` call each, its undeclared values left out). The walk
    /// checks whatever of the run the sink leaves unread; a malformed element ends the
    /// iterator, and the walk then fails with its error.
    fn packed<R: PackedRun<'a>>(&mut self, cx: &mut Self::Cx, si: SlotIndex, values: R) -> ControlFlow<()> {
        for v in values {
            self.value(cx, si, v)?;
        }
        ControlFlow::Continue(())
    }
}

/// Where a packed run's varints stand: the next one's offset, and the error that ended the
/// run early, if one did.
struct RunState {
    pos: usize,
    error: Option<DecodeError>,
}

/// The varints of a packed run, each converted by `convert` to the slot kind's
/// [`WireValue`], for [`MessageSink::packed`]: ends at the run's end or at a malformed varint.
/// One type per kind (`C`, a [`RunKind`]'s code, and the conversion), so that the
/// conversion is not matched per element. The position is its own while it runs (a local
/// the sink's loop keeps in a register, not a store per element through a reference); it
/// and the error that ended the run go back to `state` when it is dropped.
struct RunVarints<'d, 's, F, const C: u8> {
    data: &'d [u8],
    pos: usize,
    error: Option<DecodeError>,
    state: &'s mut RunState,
    convert: F,
}

impl<'d, 's, F, const C: u8> RunVarints<'d, 's, F, C> {
    #[inline(always)]
    fn new(data: &'d [u8], state: &'s mut RunState, convert: F) -> Self {
        RunVarints { data, pos: state.pos, error: None, state, convert }
    }
}

impl<F, const C: u8> Drop for RunVarints<'_, '_, F, C> {
    #[inline(always)]
    fn drop(&mut self) {
        self.state.pos = self.pos;
        if let Some(e) = self.error.take() {
            self.state.error = Some(e);
        }
    }
}

impl<'d, F: Fn(u64) -> WireValue<'d>, const C: u8> PackedRun<'d> for RunVarints<'d, '_, F, C> {
    const KIND: RunKind = RunKind::from_code(C);
}

/// The fixed-width elements of a packed run, converted (`C`: a [`RunKind`]'s code).
struct FixedRun<I, const C: u8>(I);

impl<'d, I: Iterator<Item = WireValue<'d>>, const C: u8> Iterator for FixedRun<I, C> {
    type Item = WireValue<'d>;

    #[inline(always)]
    fn next(&mut self) -> Option<WireValue<'d>> {
        self.0.next()
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<'d, I: Iterator<Item = WireValue<'d>>, const C: u8> PackedRun<'d> for FixedRun<I, C> {
    const KIND: RunKind = RunKind::from_code(C);
}

impl<'d, F: Fn(u64) -> WireValue<'d>, const C: u8> Iterator for RunVarints<'d, '_, F, C> {
    type Item = WireValue<'d>;

    #[inline(always)]
    fn next(&mut self) -> Option<WireValue<'d>> {
        let pos = self.pos;
        if pos >= self.data.len() {
            return None;
        }
        // Not loaded past the run's end: a packed run's varints are short, and the byte
        // loop reads a short varint in fewer instructions than the word does.
        match fast_varint(self.data, self.data, pos) {
            Ok((v, next)) => {
                self.pos = next;
                Some((self.convert)(v))
            }
            Err(e) => {
                self.pos = self.data.len();
                self.error = Some(e);
                None
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        // Each varint takes 1 to 10 bytes.
        let left = self.data.len().saturating_sub(self.pos);
        (left.div_ceil(10), Some(left))
    }
}

/// Decodes `buf` as a message of layout `root`, handing its fields to `sink`. Returns
/// `Break` if a callback stopped the walk (the rest of the input is then not checked).
pub fn walk<'a, S: MessageSink<'a>>(
    layouts: &'a Layouts,
    root: LayoutIndex,
    buf: &'a [u8],
    options: &DecodeOptions,
    sink: &mut S,
    cx: &mut S::Cx,
) -> Result<ControlFlow<()>, DecodeError> {
    if buf.len() > u32::MAX as usize {
        return Err(DecodeError::new(K::InputTooLarge, 0));
    }
    let walk = Walk { buf, layouts, max_depth: options.max_depth(), utf8: options.utf8() };
    match walk.message(layouts.get(root), sink, cx, 0, buf.len(), 0, None) {
        Ok(_) => Ok(ControlFlow::Continue(())),
        Err(Halt::Stopped) => Ok(ControlFlow::Break(())),
        Err(Halt::Error(e)) => Err(e),
    }
}

/// Checks `buf` as the value of a length-delimited message field of layout `root` met in a
/// message at nesting depth `depth` (0: the record's own fields), as the tree decoder
/// checks it there (depth limit, tags, lengths, UTF-8, groups), keeping nothing. Error
/// offsets are within `buf`.
pub fn check_message(
    layouts: &Layouts,
    root: LayoutIndex,
    buf: &[u8],
    options: &DecodeOptions,
    depth: u32,
) -> Result<(), DecodeError> {
    if buf.len() > u32::MAX as usize {
        return Err(DecodeError::new(K::InputTooLarge, 0));
    }
    let walk = Walk { buf, layouts, max_depth: options.max_depth(), utf8: options.utf8() };
    if depth >= walk.max_depth {
        return Err(DecodeError::new(K::DepthLimitExceeded, 0));
    }
    match walk.message(layouts.get(root), &mut Check, &mut (), 0, buf.len(), depth + 1, None) {
        Ok(_) => Ok(()),
        Err(Halt::Error(e)) => Err(e),
        Err(Halt::Stopped) => unreachable!("`Check` never stops"),
    }
}

/// Checks `buf` as a whole record of layout `root`, as [`walk`] reads it (the same errors
/// at the same offsets), keeping nothing.
pub fn check_record(
    layouts: &Layouts,
    root: LayoutIndex,
    buf: &[u8],
    options: &DecodeOptions,
) -> Result<(), DecodeError> {
    walk(layouts, root, buf, options, &mut Check, &mut ()).map(drop)
}

/// Checks the fields of a message of layout `li` at nesting depth `depth` in
/// `buf[start..end]`, keeping nothing: a message's up to `end`, a group's (`group`: its
/// field number and its start tag's offset) up to its end tag. Returns where they end (after
/// the end tag). For the compiled column appenders, which leave such spans unread.
#[allow(clippy::too_many_arguments)]
pub fn check_fields(
    layouts: &Layouts,
    li: LayoutIndex,
    buf: &[u8],
    start: usize,
    end: usize,
    depth: u32,
    group: Option<(u32, usize)>,
    options: &DecodeOptions,
) -> Result<usize, DecodeError> {
    if start > end || end > buf.len() {
        return Err(DecodeError::new(K::Internal, start));
    }
    let walk = Walk { buf, layouts, max_depth: options.max_depth(), utf8: options.utf8() };
    match walk.message(layouts.get(li), &mut Check, &mut (), start, end, depth, group) {
        Ok(after) => Ok(after),
        Err(Halt::Error(e)) => Err(e),
        Err(Halt::Stopped) => unreachable!("`Check` never stops"),
    }
}

/// Why a walk ended early.
enum Halt {
    Error(DecodeError),
    Stopped,
}

impl From<DecodeError> for Halt {
    fn from(e: DecodeError) -> Halt {
        Halt::Error(e)
    }
}

#[inline]
fn go(flow: ControlFlow<()>) -> Result<(), Halt> {
    match flow {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(Halt::Stopped),
    }
}

/// A sink that takes everything and keeps nothing: walks what a sink passed over, so that
/// it is checked as the tree decoder checks it.
struct Check;

impl MessageSink<'_> for Check {
    type Cx = ();
    fn value(&mut self, _: &mut (), _: SlotIndex, _: WireValue<'_>) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn begin(&mut self, _: &mut (), _: SlotIndex) -> ControlFlow<(), Option<&mut Self>> {
        ControlFlow::Continue(Some(self))
    }
    fn end(&mut self, _: &mut (), _: SlotIndex) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

struct Walk<'a> {
    buf: &'a [u8],
    layouts: &'a Layouts,
    max_depth: u32,
    utf8: Utf8Check,
}

impl<'a> Walk<'a> {
    /// The fields of `buf[pos..end]` (up to the end-group tag of `group = Some((number,
    /// tag_pos))`), as [`crate::interp::Interp::message`] reads them.
    #[allow(clippy::too_many_arguments)]
    fn message<S: MessageSink<'a>>(
        &self,
        layout: &'a MessageLayout,
        sink: &mut S,
        cx: &mut S::Cx,
        mut pos: usize,
        end: usize,
        depth: u32,
        group: Option<(u32, usize)>,
    ) -> Result<usize, Halt> {
        let buf = &self.buf[..end];
        while pos < end {
            // The one-byte tag table first, as the interpreter does.
            if let Some((si, packed)) = layout.one_byte_tag(buf[pos]) {
                let slot = layout.slot(si);
                pos = if packed {
                    let (start, stop) = read_length(buf, pos + 1, end)?;
                    if S::WANTS_RUNS && !(slot.kind == FieldKind::Enum && slot.closed_enum) {
                        self.whole_run(sink, cx, si, slot.kind, start, stop)?
                    } else {
                        self.run(layout, sink, cx, si, slot, start, stop)?
                    }
                } else {
                    self.value(layout, sink, cx, si, slot, pos, pos + 1, end, depth)?
                };
                continue;
            }
            let tag_pos = pos;
            // A two-byte tag with a nonzero second byte (fields 16 to 2047: a valid number)
            // of a known field in its own wire type: its value at once. Anything else takes
            // the general path below, which reads the tag again.
            if let (b, Some(&c)) = (buf[pos], buf.get(pos + 1)) {
                if b >= 0x80 && (1..0x80).contains(&c) {
                    let number = (u32::from(b & 0x7f) | u32::from(c) << 7) >> 3;
                    if let Some(si) = layout.slot_by_number(number) {
                        let slot = layout.slot(si);
                        if b & 7 == slot.kind.wire_type() {
                            pos = self.value(layout, sink, cx, si, slot, tag_pos, pos + 2, end, depth)?;
                            continue;
                        }
                    }
                }
            }
            let (number, wt, next) = read_tag(buf, pos)?;
            if wt == wire::EGROUP {
                return match group {
                    Some((n, _)) if n == number => Ok(next),
                    _ => Err(DecodeError::new(K::UnmatchedEndGroup, tag_pos).into()),
                };
            }
            if let Some(si) = layout.slot_by_number(number) {
                let slot = layout.slot(si);
                if wt == slot.kind.wire_type() {
                    pos = self.value(layout, sink, cx, si, slot, tag_pos, next, end, depth)?;
                    continue;
                }
                if wt == wire::LEN && slot.repetition == Repetition::Repeated && slot.kind.is_packable() {
                    let (start, stop) = read_length(buf, next, end)?;
                    pos = self.run(layout, sink, cx, si, slot, start, stop)?;
                    continue;
                }
            }
            pos = skip_value(buf, tag_pos, next, end, number, wt, depth, self.max_depth)?;
        }
        match group {
            Some((_, tag_pos)) => Err(DecodeError::new(K::UnterminatedGroup, tag_pos).into()),
            None => Ok(pos),
        }
    }

    /// One non-packed value of slot `si` whose tag (at `tag_pos`) ended at `pos`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn value<S: MessageSink<'a>>(
        &self,
        layout: &'a MessageLayout,
        sink: &mut S,
        cx: &mut S::Cx,
        si: SlotIndex,
        slot: &FieldSlot,
        tag_pos: usize,
        pos: usize,
        end: usize,
        depth: u32,
    ) -> Result<usize, Halt> {
        let buf = &self.buf[..end];
        // One arm per kind, each handing the sink its own variant: with the sink's `value`
        // inlined, its match on the variant folds away, so a value costs one dispatch.
        macro_rules! give {
            ($value:expr, $next:expr) => {{
                let next = $next;
                go(sink.value(cx, si, $value))?;
                Ok(next)
            }};
        }
        macro_rules! varint_as {
            (|$v:ident| $value:expr) => {{
                let ($v, next) = fast_varint(self.buf, buf, pos)?;
                give!($value, next)
            }};
        }
        macro_rules! fixed {
            ($w:literal, |$b:ident| $value:expr) => {{
                let $b: [u8; $w] =
                    buf.get(pos..pos + $w).ok_or(DecodeError::new(K::Truncated, pos))?.try_into().unwrap();
                give!($value, pos + $w)
            }};
        }
        match slot.kind {
            FieldKind::Int32 => varint_as!(|v| WireValue::I32(v as i32)),
            FieldKind::Int64 => varint_as!(|v| WireValue::I64(v as i64)),
            FieldKind::Uint32 => varint_as!(|v| WireValue::U32(v as u32)),
            FieldKind::Uint64 => varint_as!(|v| WireValue::U64(v)),
            FieldKind::Sint32 => varint_as!(|v| WireValue::I32(zigzag_decode32(v as u32))),
            FieldKind::Sint64 => varint_as!(|v| WireValue::I64(zigzag_decode64(v))),
            FieldKind::Bool => varint_as!(|v| WireValue::Bool(v != 0)),
            FieldKind::Enum => {
                let (v, next) = fast_varint(self.buf, buf, pos)?;
                let n = v as i32;
                if slot.closed_enum && !layout.closed_enum_has(si, n) {
                    return Ok(next);
                }
                give!(WireValue::Enum(n), next)
            }
            FieldKind::Fixed32 => fixed!(4, |b| WireValue::U32(u32::from_le_bytes(b))),
            FieldKind::Sfixed32 => fixed!(4, |b| WireValue::I32(i32::from_le_bytes(b))),
            FieldKind::Float => fixed!(4, |b| WireValue::F32(f32::from_le_bytes(b))),
            FieldKind::Fixed64 => fixed!(8, |b| WireValue::U64(u64::from_le_bytes(b))),
            FieldKind::Sfixed64 => fixed!(8, |b| WireValue::I64(i64::from_le_bytes(b))),
            FieldKind::Double => fixed!(8, |b| WireValue::F64(f64::from_le_bytes(b))),
            FieldKind::String => {
                let (start, stop) = read_length(buf, pos, end)?;
                let bytes = &self.buf[start..stop];
                if !self.utf8.checks(slot.validate_utf8) {
                    return give!(WireValue::Bytes(bytes), stop);
                }
                match runtime::utf8(bytes) {
                    Some(text) => give!(WireValue::Str(text), stop),
                    None => Err(DecodeError::new(K::InvalidUtf8, pos).into()),
                }
            }
            FieldKind::Bytes => {
                let (start, stop) = read_length(buf, pos, end)?;
                give!(WireValue::Bytes(&self.buf[start..stop]), stop)
            }
            FieldKind::Message | FieldKind::Group => {
                let group = slot.kind == FieldKind::Group;
                let (start, stop) = if group { (pos, end) } else { read_length(buf, pos, end)? };
                if depth >= self.max_depth {
                    return Err(DecodeError::new(K::DepthLimitExceeded, tag_pos).into());
                }
                let child = self.layouts.get(LayoutIndex::new(slot.child));
                let g = group.then_some((slot.number, tag_pos));
                let after = match sink.begin(cx, si) {
                    ControlFlow::Break(()) => return Err(Halt::Stopped),
                    ControlFlow::Continue(Some(inner)) => {
                        let after = self.message(child, inner, cx, start, stop, depth + 1, g)?;
                        go(sink.end(cx, si))?;
                        after
                    }
                    ControlFlow::Continue(None) => {
                        self.message(child, &mut Check, &mut (), start, stop, depth + 1, g)?
                    }
                };
                Ok(if group { after } else { stop })
            }
        }
    }

    /// The values of a packed run of slot `si` filling `start..stop`.
    #[allow(clippy::too_many_arguments)]
    fn run<S: MessageSink<'a>>(
        &self,
        layout: &'a MessageLayout,
        sink: &mut S,
        cx: &mut S::Cx,
        si: SlotIndex,
        slot: &FieldSlot,
        start: usize,
        stop: usize,
    ) -> Result<usize, Halt> {
        let data = &self.buf[..stop];
        if S::WANTS_RUNS && !(slot.kind == FieldKind::Enum && slot.closed_enum) {
            return self.whole_run(sink, cx, si, slot.kind, start, stop);
        }
        match slot.kind.fixed_width() {
            4 => {
                let whole = start + (stop - start) / 4 * 4;
                for b in data[start..whole].chunks_exact(4) {
                    go(sink.value(cx, si, fixed32(slot.kind, b.try_into().unwrap())))?;
                }
                if whole != stop {
                    return Err(DecodeError::new(K::Truncated, whole).into());
                }
            }
            8 => {
                let whole = start + (stop - start) / 8 * 8;
                for b in data[start..whole].chunks_exact(8) {
                    go(sink.value(cx, si, fixed64(slot.kind, b.try_into().unwrap())))?;
                }
                if whole != stop {
                    return Err(DecodeError::new(K::Truncated, whole).into());
                }
            }
            // One loop per kind, so that the kind's conversion is not matched again per
            // element and the sink's callback can be specialised to it.
            _ => match slot.kind {
                FieldKind::Int32 => varints(data, start, |v| go(sink.value(cx, si, WireValue::I32(v as i32))))?,
                FieldKind::Int64 => varints(data, start, |v| go(sink.value(cx, si, WireValue::I64(v as i64))))?,
                FieldKind::Uint32 => varints(data, start, |v| go(sink.value(cx, si, WireValue::U32(v as u32))))?,
                FieldKind::Sint32 => {
                    varints(data, start, |v| go(sink.value(cx, si, WireValue::I32(zigzag_decode32(v as u32)))))?
                }
                FieldKind::Sint64 => {
                    varints(data, start, |v| go(sink.value(cx, si, WireValue::I64(zigzag_decode64(v)))))?
                }
                FieldKind::Bool => varints(data, start, |v| go(sink.value(cx, si, WireValue::Bool(v != 0))))?,
                FieldKind::Enum if slot.closed_enum => varints(data, start, |v| {
                    let n = v as i32;
                    if layout.closed_enum_has(si, n) {
                        go(sink.value(cx, si, WireValue::Enum(n)))
                    } else {
                        Ok(())
                    }
                })?,
                FieldKind::Enum => varints(data, start, |v| go(sink.value(cx, si, WireValue::Enum(v as i32))))?,
                _ => varints(data, start, |v| go(sink.value(cx, si, WireValue::U64(v))))?,
            },
        }
        Ok(stop)
    }
}

impl<'a> Walk<'a> {
    /// The packed run `start..stop` of slot `si` (of `kind`, not a closed enum) handed to
    /// [`MessageSink::packed`] whole: the same values and errors as the per-element loops
    /// of [`run`](Self::run). The message loop calls it directly for a sink that takes
    /// runs (a tile's short runs: the fewer arguments and dispatches, the better).
    fn whole_run<S: MessageSink<'a>>(
        &self,
        sink: &mut S,
        cx: &mut S::Cx,
        si: SlotIndex,
        kind: FieldKind,
        start: usize,
        stop: usize,
    ) -> Result<usize, Halt> {
        let data = &self.buf[..stop];
        const I32: u8 = RunKind::I32 as u8;
        const I64: u8 = RunKind::I64 as u8;
        const U32: u8 = RunKind::U32 as u8;
        const U64: u8 = RunKind::U64 as u8;
        const F32: u8 = RunKind::F32 as u8;
        const F64: u8 = RunKind::F64 as u8;
        match kind {
            FieldKind::Fixed32 => {
                fixed_run::<_, 4, U32>(sink, cx, si, data, start, |b| WireValue::U32(u32::from_le_bytes(b)))?
            }
            FieldKind::Sfixed32 => {
                fixed_run::<_, 4, I32>(sink, cx, si, data, start, |b| WireValue::I32(i32::from_le_bytes(b)))?
            }
            FieldKind::Float => {
                fixed_run::<_, 4, F32>(sink, cx, si, data, start, |b| WireValue::F32(f32::from_le_bytes(b)))?
            }
            FieldKind::Fixed64 => {
                fixed_run::<_, 8, U64>(sink, cx, si, data, start, |b| WireValue::U64(u64::from_le_bytes(b)))?
            }
            FieldKind::Sfixed64 => {
                fixed_run::<_, 8, I64>(sink, cx, si, data, start, |b| WireValue::I64(i64::from_le_bytes(b)))?
            }
            FieldKind::Double => {
                fixed_run::<_, 8, F64>(sink, cx, si, data, start, |b| WireValue::F64(f64::from_le_bytes(b)))?
            }
            _ => {
                // A run long enough to repay it is decoded whole first (eight bytes a load,
                // as the tree decoders do), and the sink reads the decoded values; a
                // malformed run goes the lazy way below, which hands over the values
                // before the malformed one and then fails, as the walk always does.
                let len = data.len() - start;
                if (DECODED_RUN_MIN..=DECODED_RUN_MAX).contains(&len) {
                    if let Some(flow) = decoded_run(sink, cx, si, kind, &data[start..]) {
                        go(flow)?;
                        return Ok(stop);
                    }
                }
                let mut state = RunState { pos: start, error: None };
                // One arm per kind: the sink's loop is specialised to the kind's conversion.
                // What the sink leaves unread is still checked.
                macro_rules! run {
                    ($k:expr, $convert:expr) => {{
                        let flow = sink.packed(cx, si, RunVarints::<_, $k>::new(data, &mut state, $convert));
                        if flow.is_continue() && state.pos < stop {
                            RunVarints::<_, $k>::new(data, &mut state, $convert).for_each(drop);
                        }
                        flow
                    }};
                }
                let flow = varint_kinds!(kind, run);
                if let Some(e) = state.error {
                    return Err(e.into());
                }
                go(flow)?;
            }
        }
        Ok(stop)
    }
}

/// The shortest packed run (in bytes) decoded whole before the sink reads it: shorter ones
/// (a feature's tags and geometry, a way's refs) are read lazily, which costs no store and
/// reload (16 bytes cost the tiles and OSM ways 4-5%; BENCHMARKS.md, "Streaming visitor").
const DECODED_RUN_MIN: usize = 512;
/// The longest: a longer run is read lazily, so the scratch buffer stays at most this many
/// values (512 KiB).
const DECODED_RUN_MAX: usize = 64 << 10;

thread_local! {
    /// The values of the run being handed over, reused from run to run (a walk inside a
    /// sink's callback takes an empty one: the buffer is taken out while in use).
    static SCRATCH: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The decoded values of a packed run, converted to the `WireValue` of `C` (a [`RunKind`]'s
/// code) by `convert` as the sink reads them.
struct DecodedRun<'s, F, const C: u8> {
    values: std::slice::Iter<'s, u64>,
    convert: F,
}

impl<'d, F: Fn(u64) -> WireValue<'d>, const C: u8> Iterator for DecodedRun<'_, F, C> {
    type Item = WireValue<'d>;

    #[inline(always)]
    fn next(&mut self) -> Option<WireValue<'d>> {
        self.values.next().map(|&v| (self.convert)(v))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.values.size_hint()
    }
}

impl<'d, F: Fn(u64) -> WireValue<'d>, const C: u8> PackedRun<'d> for DecodedRun<'_, F, C> {
    const KIND: RunKind = RunKind::from_code(C);
}

/// Decodes the packed varint run `data` (of a slot of `kind`) whole into the scratch buffer
/// and hands its values to `sink`: the sink's flow, or `None` (nothing handed over) when
/// the run is malformed.
fn decoded_run<'a, S: MessageSink<'a>>(
    sink: &mut S,
    cx: &mut S::Cx,
    si: SlotIndex,
    kind: FieldKind,
    data: &[u8],
) -> Option<ControlFlow<()>> {
    let mut values = SCRATCH.take();
    values.clear();
    let most = crate::varint::count_terminators(data);
    values.reserve(most);
    // SAFETY: `values` is empty with room for `most` values, the most `data` decodes to
    // (each varint ends in its own byte below 0x80); `decode_run` writes the first `n`.
    let (n, result) = unsafe { crate::varint::decode_run(values.as_mut_ptr(), 0, data, |v| v) };
    let flow = match result {
        Ok(()) => {
            // SAFETY: `decode_run` initialised the first `n <= most` values.
            unsafe { values.set_len(n) };
            macro_rules! hand {
                ($k:expr, $convert:expr) => {
                    sink.packed(cx, si, DecodedRun::<_, $k> { values: values.iter(), convert: $convert })
                };
            }
            Some(varint_kinds!(kind, hand))
        }
        Err(_) => None,
    };
    SCRATCH.set(values);
    flow
}

/// The `W`-byte values of the packed run `data[start..]` (`data` ends where the run does),
/// each converted by `convert`, handed to `sink` whole; a partial last value is `Truncated`
/// at its offset, after the whole ones.
fn fixed_run<'a, S: MessageSink<'a>, const W: usize, const C: u8>(
    sink: &mut S,
    cx: &mut S::Cx,
    si: SlotIndex,
    data: &'a [u8],
    start: usize,
    convert: impl Fn([u8; W]) -> WireValue<'a>,
) -> Result<(), Halt> {
    let whole = start + (data.len() - start) / W * W;
    let values = data[start..whole].chunks_exact(W).map(|b| convert(b.try_into().unwrap()));
    go(sink.packed(cx, si, FixedRun::<_, C>(values)))?;
    if whole != data.len() {
        return Err(DecodeError::new(K::Truncated, whole).into());
    }
    Ok(())
}

/// `$go!(K, convert)` for the varint field kind `$kind`: its [`RunKind`]'s code and the
/// conversion of a varint's bits to its [`WireValue`] (the one table of both packed varint
/// walks, lazy and decoded whole; a kind not listed reads as `uint64`).
macro_rules! varint_kinds {
    ($kind:expr, $go:ident) => {
        match $kind {
            FieldKind::Int32 => $go!({ RunKind::I32 as u8 }, |v: u64| WireValue::I32(v as i32)),
            FieldKind::Int64 => $go!({ RunKind::I64 as u8 }, |v: u64| WireValue::I64(v as i64)),
            FieldKind::Uint32 => $go!({ RunKind::U32 as u8 }, |v: u64| WireValue::U32(v as u32)),
            FieldKind::Sint32 => $go!({ RunKind::I32 as u8 }, |v: u64| WireValue::I32(zigzag_decode32(v as u32))),
            FieldKind::Sint64 => $go!({ RunKind::I64 as u8 }, |v: u64| WireValue::I64(zigzag_decode64(v))),
            FieldKind::Bool => $go!({ RunKind::Bool as u8 }, |v: u64| WireValue::Bool(v != 0)),
            FieldKind::Enum => $go!({ RunKind::Enum as u8 }, |v: u64| WireValue::Enum(v as i32)),
            _ => $go!({ RunKind::U64 as u8 }, |v: u64| WireValue::U64(v)),
        }
    };
}
use varint_kinds;

/// Reads a varint at `within[pos]`, as [`read_varint`] does (same values, same errors),
/// where `within` is `whole[..stop]` (the input up to the end of the varint's message or
/// run): one and two bytes inline, then the 8-byte SWAR read where 8 bytes of `whole`
/// remain (past `stop` too: a value near the end of its message or run is read whole, and
/// only then checked against `stop`), then the byte loop. (Two bytes inline: the short
/// packed runs of map tiles are mostly one- and two-byte varints.)
#[inline(always)]
fn fast_varint(whole: &[u8], within: &[u8], pos: usize) -> Result<(u64, usize), DecodeError> {
    if let Some(&b) = within.get(pos) {
        if b < 0x80 {
            return Ok((u64::from(b), pos + 1));
        }
        if let Some(&c) = within.get(pos + 1) {
            if c < 0x80 {
                return Ok((u64::from(b & 0x7f) | u64::from(c) << 7, pos + 2));
            }
        }
    }
    match wire::varint_word(whole, pos) {
        Some((v, next)) if next <= within.len() => Ok((v, next)),
        _ => read_varint(within, pos),
    }
}

/// Each varint of the packed run `data[start..]` (`data` ends where the run does), handed
/// to `f` (read within the run, as [`RunVarints`] does).
#[inline(always)]
fn varints(data: &[u8], start: usize, mut f: impl FnMut(u64) -> Result<(), Halt>) -> Result<(), Halt> {
    let mut p = start;
    while p < data.len() {
        let (v, next) = fast_varint(data, data, p)?;
        f(v)?;
        p = next;
    }
    Ok(())
}

#[inline]
fn fixed32(kind: FieldKind, b: [u8; 4]) -> WireValue<'static> {
    match kind {
        FieldKind::Fixed32 => WireValue::U32(u32::from_le_bytes(b)),
        FieldKind::Sfixed32 => WireValue::I32(i32::from_le_bytes(b)),
        _ => WireValue::F32(f32::from_le_bytes(b)),
    }
}

#[inline]
fn fixed64(kind: FieldKind, b: [u8; 8]) -> WireValue<'static> {
    match kind {
        FieldKind::Fixed64 => WireValue::U64(u64::from_le_bytes(b)),
        FieldKind::Sfixed64 => WireValue::I64(i64::from_le_bytes(b)),
        _ => WireValue::F64(f64::from_le_bytes(b)),
    }
}
