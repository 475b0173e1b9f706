//! The chunked path: records decoded a chunk at a time into one arena, then each column filled from the chunk's messages in one typed loop.
//!
//! The tree path reads a record's columns row by row: for every row, every column matches
//! its builder and its slot's kind again (two indirect jumps per value, a `Value` built for
//! messages and lists). Here the decoder (compiled once its engine has compiled the type)
//! first decodes a chunk of records into one arena, and each column is then filled for the
//! whole chunk at once: its kind matched once, then a loop of one presence test, one load
//! and one push per row, over blocks that are still in cache. Messages (singular, and the
//! items of repeated ones) become the rows of their struct's own column-wise fill; lists of
//! numbers are copied a row's slice at a time. Cells whose rows
//! need more than a load (timestamps, wrappers, maps, lists of strings) append row by row
//! from the same decoded messages, as the tree path does. Values are the tree's values (the
//! same decoder, the same reads), so the tree path is this one's oracle in the tests.

use arrow_buffer::NullBufferBuilder;
use protojit::MessageRef;
use protojit_arena::field::{List, Message};
use protojit_arena::{Access, BlockRef, MessageLayout, Scalar, SlotIndex};

use crate::column::{Cell, Column, ListCol, StructCol};
use crate::values::{Data, Read, RowCx, Values};

/// Records decoded before their columns are filled: enough that each column's loop runs
/// long, few enough that the chunk's blocks stay in the core's cache.
pub(crate) const CHUNK_RECORDS: usize = 256;

/// The input a chunk holds at most (it closes after the record that reaches it; a record
/// may be larger): whole tiles or OSM blocks fill the compiled path's buffers with up to
/// eight bytes per input byte (the chunked path's arena with their trees), which a builder
/// keeps and reuses. Without it 200 tiles (14.6 MB) went into one chunk: ~100 MB of cells,
/// page-faulted in, written once and read back; with 4 MiB chunks the CLI's Parquet export
/// of them took 11% less time (60 OSM ways blocks 9% less; its items are bounded since). Not less: a batch split into
/// chunks grows its columns chunk by chunk (a copy into fresh memory each time), which for
/// 1 MiB chunks made three OSM blocks converted in-process 60% slower.
pub(crate) const CHUNK_INPUT: usize = 4 << 20;

/// A column reads messages of its own type only (the struct it belongs to).
const SAME: &str = "a column reads messages of its own type";

/// One row of a struct: its message's block, or `None` where the struct is absent.
type Row<'a> = Option<BlockRef<'a>>;

impl StructCol {
    /// Appends one row per entry of `rows` (an absent struct is null; its columns get
    /// their fill).
    pub(crate) fn gather(&mut self, rows: &[Row<'_>], cx: &mut RowCx) {
        for c in &mut self.columns {
            c.gather(rows, cx);
        }
        match &mut self.nulls {
            Some(n) => rows.iter().for_each(|r| n.append(r.is_some())),
            None => debug_assert!(rows.iter().all(Option::is_some), "only nullable structs are absent"),
        }
        self.len += rows.len();
    }
}

impl Column {
    fn gather(&mut self, rows: &[Row<'_>], cx: &mut RowCx) {
        let si = self.si;
        // The struct's layout, for the accesses made per chunk (all rows share it).
        let Some(layout) = rows.iter().flatten().next().map(BlockRef::layout) else {
            rows.iter().for_each(|_| self.cell.push_absent());
            return;
        };
        match (&self.read, &mut self.cell) {
            (Some(read), Cell::Values(v)) => v.gather(rows, read, cx),
            (_, Cell::Struct(s)) => {
                let a: Access<Message> = layout.access(si).expect("a struct column's slot is a message");
                let children: Vec<Row<'_>> =
                    rows.iter().map(|r| r.as_ref().and_then(|b| b.child_at(&a).expect(SAME))).collect();
                s.gather(&children, cx);
            }
            (_, Cell::List(l)) if matches!(l.item, Cell::Struct(_)) => {
                let a: Access<List<Message>> = layout.access(si).expect("a list of structs is a repeated message");
                l.gather_structs(rows, &a, cx);
            }
            (_, cell) => {
                if let Cell::List(l) = cell {
                    if l.gather_numbers(rows, layout, si) {
                        return;
                    }
                }
                for r in rows {
                    match r {
                        Some(b) => cell.push_field(&MessageRef::new(*b), si, cx),
                        None => cell.push_absent(),
                    }
                }
            }
        }
    }
}

/// Appends each row's repeated number field `a` (empty where the row's message is absent)
/// to the list's offsets and its item values.
#[inline(always)]
fn number_lists<T: Scalar>(offsets: &mut Vec<i32>, out: &mut Vec<T>, rows: &[Row<'_>], a: &Access<List<T>>) {
    offsets.reserve(rows.len());
    let (base, start) = (*offsets.last().expect("offsets start with 0"), out.len());
    for r in rows {
        if let Some(b) = r {
            out.extend_from_slice(b.slice_at(a).expect(SAME));
        }
        // A batch's items are bounded by its input (`MAX_BATCH_INPUT`), so they fit.
        offsets.push(base + (out.len() - start) as i32);
    }
}

impl ListCol {
    /// Appends the repeated message field `a` of each row: the items of the whole chunk
    /// become one column-wise fill of the item struct.
    fn gather_structs(&mut self, rows: &[Row<'_>], a: &Access<List<Message>>, cx: &mut RowCx) {
        let Cell::Struct(items) = &mut self.item else { unreachable!("a list of structs") };
        // Item rows so far: this chunk's items are numbered on from there.
        let base = *self.offsets.last().expect("offsets start with 0");
        let mut children = Vec::new();
        for r in rows {
            if let Some(b) = r {
                children.extend(b.children_at(a).expect(SAME).map(Some));
            }
            // A batch's items are bounded by its input (`MAX_BATCH_INPUT`), so they fit.
            self.offsets.push(base + children.len() as i32);
        }
        items.gather(&children, cx);
    }

    /// Appends repeated number field `si` of each row when the items are numbers (not
    /// enum keys, bools or text): each row's slice copied whole. `false` (nothing
    /// appended) for other items.
    fn gather_numbers(&mut self, rows: &[Row<'_>], layout: &MessageLayout, si: SlotIndex) -> bool {
        let Cell::Values(items) = &mut self.item else { return false };
        if items.is_nullable() {
            return false; // list items are never null; no validity to keep
        }
        let offsets = &mut self.offsets;
        macro_rules! lists {
            ($v:expr, $t:ty) => {{
                let Ok(a) = layout.access::<List<$t>>(si) else { return false };
                number_lists::<$t>(offsets, $v, rows, &a)
            }};
        }
        match &mut items.data {
            Data::I32(v) => lists!(v, i32),
            Data::I64(v) => lists!(v, i64),
            Data::U32(v) => lists!(v, u32),
            Data::U64(v) => lists!(v, u64),
            Data::F32(v) => lists!(v, f32),
            Data::F64(v) => lists!(v, f64),
            _ => return false,
        }
        true
    }
}

/// Pushes one value per row read through `a` (the type's zero where the row's message is
/// absent), and each row's validity when the column has it.
#[inline(always)]
fn numbers<T: Scalar>(out: &mut Vec<T>, nulls: &mut Option<NullBufferBuilder>, rows: &[Row<'_>], a: &Access<T>) {
    out.reserve(rows.len());
    let read = |r: &Row<'_>| match r {
        Some(b) => b.get_at(a).expect(SAME),
        None => (false, T::ZERO),
    };
    match nulls {
        None => out.extend(rows.iter().map(|r| read(r).1)),
        Some(n) => {
            for r in rows {
                let (set, x) = read(r);
                out.push(x);
                n.append(set);
            }
        }
    }
}

impl Values {
    /// Appends slot `read` of each row's message, one loop per column kind.
    fn gather(&mut self, rows: &[Row<'_>], read: &Read, cx: &RowCx) {
        let nulls = &mut self.nulls;
        match (read, &mut self.data) {
            (Read::I32(a), Data::I32(v)) => numbers(v, nulls, rows, a),
            (Read::I64(a), Data::I64(v)) => numbers(v, nulls, rows, a),
            (Read::U32(a), Data::U32(v)) => numbers(v, nulls, rows, a),
            (Read::U64(a), Data::U64(v)) => numbers(v, nulls, rows, a),
            (Read::F32(a), Data::F32(v)) => numbers(v, nulls, rows, a),
            (Read::F64(a), Data::F64(v)) => numbers(v, nulls, rows, a),
            (Read::Bool(a), Data::Bool(out)) => {
                for r in rows {
                    let (set, x) = r.as_ref().map_or((false, false), |b| b.get_at(a).expect(SAME));
                    out.append(x);
                    if let Some(n) = nulls {
                        n.append(set);
                    }
                }
            }
            (Read::I32(a), Data::Enum(keys, dict)) => {
                let fill = dict.fill(nulls.is_some());
                for r in rows {
                    let (set, key) = match r {
                        Some(b) => {
                            let (set, x) = b.get_at(a).expect(SAME);
                            (set, dict.key(x))
                        }
                        None => (false, fill),
                    };
                    keys.push(key);
                    if let Some(n) = nulls {
                        n.append(set);
                    }
                }
            }
            (Read::Str(a), Data::Text { offsets, data, expect, .. }) => {
                // Converters decode with UTF-8 checked on every string, so `string` bytes
                // are text.
                offsets.reserve(rows.len());
                for r in rows {
                    let (set, bytes) = r.as_ref().map_or((false, &[][..]), |b| b.get_bytes_at(a).expect(SAME));
                    data.extend_from_slice(bytes);
                    offsets.push(data.len() as i32);
                    if let Some(n) = nulls {
                        n.append(set);
                    }
                }
                // Size the data for the rows still expected at the bytes per row so far (a
                // sixteenth spare), so that it is copied a few times per batch instead of at
                // every doubling. At most 8× what it holds: a few long strings early on
                // must not reserve memory the rest of the batch will not fill. `reserve`,
                // not `reserve_exact`: at least doubling, so that while the cap binds the
                // buffer is not copied at every chunk (with `reserve_exact` a batch of
                // 200,000 google_message1 records copied its text ~18 times over).
                let done = offsets.len() - 1;
                if done > 0 && *expect > done {
                    let more = (data.len() / done).saturating_mul(*expect - done);
                    if data.capacity() - data.len() < more {
                        let more = more.min(8 * data.len());
                        data.reserve(more + more / 16);
                    }
                }
            }
            (Read::Str(a), Data::View(views)) => {
                for r in rows {
                    let (set, bytes) = r.as_ref().map_or((false, &[][..]), |b| b.get_bytes_at(a).expect(SAME));
                    views.push(bytes, cx.source);
                    if let Some(n) = nulls {
                        n.append(set);
                    }
                }
            }
            _ => unreachable!("a read of another kind than its column"),
        }
    }
}
