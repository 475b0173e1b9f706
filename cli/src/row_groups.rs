//! Parquet row groups encoded on the threads that converted the batches: each top-level
//! column is a lane that takes the batches in input order, and different lanes run on
//! different threads at once, so the file is the one a single `ArrowWriter` writes.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use protojit_arrow::arrow_schema::FieldRef;
use protojit_arrow::parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use protojit_arrow::parquet::file::writer::SerializedFileWriter;
use protojit_arrow::RecordBatch;

use crate::common::{one_line, Failure};

/// Encodes record batches into Parquet column chunks, a row group at a time, from any
/// number of threads; [`RowGroups::write_ready`] appends the finished row groups to the
/// file in order.
///
/// Batches come as numbered work items (0, 1, 2, ...), each handed to
/// [`encode`](RowGroups::encode) exactly once. A column takes item `n` only after item
/// `n - 1`, so every column sees the rows in input order, split into row groups exactly
/// where `ArrowWriter::write` splits them (after `max_rows` rows).
pub struct RowGroups {
    factory: ArrowRowGroupWriterFactory,
    fields: Vec<FieldRef>,
    /// The Parquet leaf columns of each top-level column.
    leaves: Vec<Range<usize>>,
    max_rows: usize,
    lanes: Vec<Mutex<Lane>>,
    /// The item each column takes next.
    turns: Mutex<Vec<u64>>,
    turn_taken: Condvar,
    /// Column writers made for a row group that not every column has started.
    fresh: Mutex<BTreeMap<usize, Vec<Option<ArrowColumnWriter>>>>,
    /// Closed column chunks of row groups not yet in the file.
    closed: Mutex<BTreeMap<usize, Vec<Option<ArrowColumnChunk>>>>,
    /// The first encoding error; once set, nothing more is encoded.
    failed: Mutex<Option<String>>,
}

/// One top-level column's writers in its current row group.
#[derive(Default)]
struct Lane {
    row_group: usize,
    rows: usize,
    writers: Option<Vec<ArrowColumnWriter>>,
}

/// Locks `m`, also after a panic elsewhere left it poisoned: the panic itself is
/// reported where it happened, and the state behind the lock stays usable for shutting
/// down.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RowGroups {
    /// Encodes rows for `factory` and `file` (from `ArrowWriter::into_serialized_writer`,
    /// so the file carries the Arrow schema), at most `max_rows` rows a row group.
    pub fn new(
        factory: ArrowRowGroupWriterFactory,
        file: &SerializedFileWriter<File>,
        fields: Vec<FieldRef>,
        max_rows: usize,
    ) -> Self {
        // The leaves of each top-level column, which are contiguous in the Parquet schema.
        let schema = file.schema_descr();
        let mut leaves = vec![0..0; fields.len()];
        for leaf in 0..schema.num_columns() {
            let root = schema.get_column_root_idx(leaf);
            if leaves[root].is_empty() {
                leaves[root] = leaf..leaf;
            }
            leaves[root].end = leaf + 1;
        }
        RowGroups {
            factory,
            lanes: fields.iter().map(|_| Mutex::new(Lane::default())).collect(),
            turns: Mutex::new(vec![0; fields.len()]),
            turn_taken: Condvar::new(),
            fresh: Mutex::new(BTreeMap::new()),
            closed: Mutex::new(BTreeMap::new()),
            failed: Mutex::new(None),
            fields,
            leaves,
            max_rows: max_rows.max(1),
        }
    }

    /// Encodes work item `item`'s batches (none, one or more) into every column, waiting
    /// for the columns to finish item `item - 1` first. Every item must come here once,
    /// even one without rows, or the columns wait for it forever.
    pub fn encode(&self, item: u64, batches: &[RecordBatch]) {
        let mut turn = Turn { groups: self, item, pending: (0..self.fields.len()).collect() };
        while let Some(column) = turn.next_column() {
            if lock(&self.failed).is_none() {
                let mut lane = lock(&self.lanes[column]);
                for batch in batches {
                    if let Err(e) = self.write(&mut lane, column, batch) {
                        lock(&self.failed).get_or_insert(e);
                        break;
                    }
                }
            }
            turn.pass(column);
        }
    }

    /// Appends `batch`'s column to the lane, closing the row group where it is full.
    fn write(&self, lane: &mut Lane, column: usize, batch: &RecordBatch) -> Result<(), String> {
        let field = &self.fields[column];
        let array = batch.column(column);
        let mut done = 0;
        while done < batch.num_rows() {
            let rows = (self.max_rows - lane.rows).min(batch.num_rows() - done);
            let writers = match &mut lane.writers {
                Some(w) => w,
                none => none.insert(self.take_writers(lane.row_group, column)?),
            };
            let leaves = compute_leaves(field, &array.slice(done, rows)).map_err(|e| e.to_string())?;
            for (writer, leaf) in writers.iter_mut().zip(&leaves) {
                writer.write(leaf).map_err(|e| e.to_string())?;
            }
            lane.rows += rows;
            done += rows;
            if lane.rows == self.max_rows {
                self.close_lane(lane, column)?;
            }
        }
        Ok(())
    }

    /// The writers of `column`'s leaves for `row_group`; the first column to start a row
    /// group makes the writers of all of them.
    fn take_writers(&self, row_group: usize, column: usize) -> Result<Vec<ArrowColumnWriter>, String> {
        let mut fresh = lock(&self.fresh);
        let all = match fresh.entry(row_group) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let writers = self.factory.create_column_writers(row_group).map_err(|e| e.to_string())?;
                e.insert(writers.into_iter().map(Some).collect())
            }
        };
        let mine =
            all[self.leaves[column].clone()].iter_mut().map(|w| w.take().expect("one lane per column")).collect();
        if all.iter().all(Option::is_none) {
            fresh.remove(&row_group);
        }
        Ok(mine)
    }

    /// Closes the lane's writers into the row group's chunks; the lane moves on to the
    /// next row group.
    fn close_lane(&self, lane: &mut Lane, column: usize) -> Result<(), String> {
        let chunks: Vec<ArrowColumnChunk> = match lane.writers.take() {
            Some(writers) => {
                writers.into_iter().map(|w| w.close()).collect::<Result<_, _>>().map_err(|e| e.to_string())?
            }
            None => Vec::new(),
        };
        if !chunks.is_empty() {
            let total = self.leaves.last().map_or(0, |r| r.end);
            let mut closed = lock(&self.closed);
            let group = closed.entry(lane.row_group).or_insert_with(|| (0..total).map(|_| None).collect());
            for (slot, chunk) in group[self.leaves[column].clone()].iter_mut().zip(chunks) {
                *slot = Some(chunk);
            }
        }
        lane.row_group += 1;
        lane.rows = 0;
        Ok(())
    }

    /// Whether encoding has failed (called with the turns locked, so that a waiting item
    /// sees the failure before it sleeps again).
    fn abandoned(&self, _turns: &[u64]) -> bool {
        lock(&self.failed).is_some()
    }

    /// The first encoding error, as a failure naming `target`.
    fn check(&self, target: &str) -> Result<(), Failure> {
        match &*lock(&self.failed) {
            Some(e) => Err(Failure::input(format!("cannot write {target}: {}", one_line(e)))),
            None => Ok(()),
        }
    }

    /// Appends every finished row group, in order, to `file` (on the thread that owns
    /// it); `next` is the first row group not yet in the file.
    pub fn write_ready(
        &self,
        file: &mut SerializedFileWriter<File>,
        next: &mut usize,
        target: &str,
    ) -> Result<(), Failure> {
        self.check(target)?;
        loop {
            let group = {
                let mut closed = lock(&self.closed);
                match closed.first_key_value() {
                    Some((&n, chunks)) if n == *next && chunks.iter().all(Option::is_some) => {
                        closed.remove(&n).expect("just seen")
                    }
                    _ => return Ok(()),
                }
            };
            let write_error = |e: protojit_arrow::parquet::errors::ParquetError| {
                Failure::input(format!("cannot write {target}: {}", one_line(&e.to_string())))
            };
            let mut row_group = file.next_row_group().map_err(write_error)?;
            for chunk in group.into_iter().flatten() {
                chunk.append_to_row_group(&mut row_group).map_err(write_error)?;
            }
            row_group.close().map_err(write_error)?;
            *next += 1;
        }
    }

    /// After the last item: closes the last, partly filled row group and appends what
    /// remains to `file`. Closing a column encodes and compresses its last pages (all of
    /// them, for a column whose pages never filled), so the columns close on `jobs`
    /// threads.
    pub fn finish(
        &self,
        file: &mut SerializedFileWriter<File>,
        next: &mut usize,
        target: &str,
        jobs: usize,
    ) -> Result<(), Failure> {
        let taken = AtomicUsize::new(0);
        let close = || loop {
            let column = taken.fetch_add(1, Ordering::Relaxed);
            let Some(lane) = self.lanes.get(column) else { return };
            let mut lane = lock(lane);
            if lane.rows > 0 {
                if let Err(e) = self.close_lane(&mut lane, column) {
                    lock(&self.failed).get_or_insert(e);
                }
            }
        };
        std::thread::scope(|s| {
            for _ in 1..jobs.min(self.lanes.len()) {
                s.spawn(close);
            }
            close();
        });
        self.write_ready(file, next, target)
    }
}

/// A work item's pass through the columns: which columns it has yet to take. Dropped,
/// also by a panic, it gives up its turn on the columns it did not take, so that no
/// other item waits for it forever.
struct Turn<'a> {
    groups: &'a RowGroups,
    item: u64,
    pending: Vec<usize>,
}

impl Turn<'_> {
    /// A column whose turn it is for this item (waiting until there is one); `None`
    /// once the item has been through every column.
    fn next_column(&mut self) -> Option<usize> {
        if self.pending.is_empty() {
            return None;
        }
        let mut turns = lock(&self.groups.turns);
        loop {
            // After a panic on another thread the order is lost: nothing more is
            // written, and no item waits.
            if self.groups.abandoned(&turns) {
                return self.pending.pop();
            }
            if let Some(i) = self.pending.iter().position(|&c| turns[c] == self.item) {
                return Some(self.pending.swap_remove(i));
            }
            turns = self.groups.turn_taken.wait(turns).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The item is done with `column`: the next item may take it.
    fn pass(&mut self, column: usize) {
        lock(&self.groups.turns)[column] = self.item + 1;
        self.groups.turn_taken.notify_all();
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        // Only after a panic: the items after this one would wait for it forever, so
        // encoding stops here (the panic itself is reported by the pool).
        lock(&self.groups.failed).get_or_insert_with(|| "a thread stopped while encoding".to_owned());
        let turns = lock(&self.groups.turns);
        drop(turns);
        self.groups.turn_taken.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use protojit_arrow::arrow_array::builder::{Int64Builder, ListBuilder};
    use protojit_arrow::arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, StringArray, StructArray};
    use protojit_arrow::arrow_schema::{DataType, Field, Schema};
    use protojit_arrow::parquet::arrow::ArrowWriter;
    use protojit_arrow::parquet::file::properties::WriterProperties;

    use super::RowGroups;

    /// `n` rows from `first` on: an int, a string, a list of ints and a struct of both.
    fn batch(first: i32, n: i32) -> RecordBatch {
        let ids: Vec<i32> = (first..first + n).collect();
        let id: ArrayRef = Arc::new(Int32Array::from(ids.clone()));
        let label: ArrayRef = Arc::new(StringArray::from_iter_values(ids.iter().map(|i| format!("r{}", i % 7))));
        let mut list = ListBuilder::new(Int64Builder::new());
        for i in &ids {
            list.values().append_slice(&vec![i64::from(*i); (*i % 4) as usize]);
            list.append(i % 5 != 0);
        }
        let list: ArrayRef = Arc::new(list.finish());
        let child = StructArray::from(vec![
            (Arc::new(Field::new("a", DataType::Int32, false)), id.clone()),
            (Arc::new(Field::new("b", DataType::Utf8, false)), label.clone()),
        ]);
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("label", DataType::Utf8, false),
            Field::new("list", list.data_type().clone(), true),
            Field::new("child", child.data_type().clone(), false),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![id, label, list, Arc::new(child)]).unwrap()
    }

    /// Batches encoded on three threads, row groups of 100 rows split inside batches and
    /// at their edges (empty batches too), make the file `ArrowWriter` makes of them.
    #[test]
    fn threads_write_the_file_arrow_writer_writes() {
        let sizes = [30, 70, 0, 250, 1, 99, 100, 45, 200, 3];
        let mut first = 0;
        let batches: Vec<RecordBatch> = sizes
            .iter()
            .map(|&n| {
                let b = batch(first, n);
                first += n;
                b
            })
            .collect();
        let schema = batches[0].schema();
        let props = || WriterProperties::builder().set_max_row_group_row_count(Some(100)).build();
        let dir = std::env::temp_dir().join(format!("protojit-row-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();

        let want_path = dir.join("want.parquet");
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(&want_path).unwrap(), schema.clone(), Some(props())).unwrap();
        for b in &batches {
            writer.write(b).unwrap();
        }
        writer.close().unwrap();

        let got_path = dir.join("got.parquet");
        let writer =
            ArrowWriter::try_new(std::fs::File::create(&got_path).unwrap(), schema.clone(), Some(props())).unwrap();
        let (mut file, factory) = writer.into_serialized_writer().unwrap();
        let groups = RowGroups::new(factory, &file, schema.fields().iter().cloned().collect(), 100);
        std::thread::scope(|s| {
            for t in 0..3 {
                let (groups, batches) = (&groups, &batches);
                s.spawn(move || {
                    for (item, b) in batches.iter().enumerate().filter(|(i, _)| i % 3 == t) {
                        groups.encode(item as u64, std::slice::from_ref(b));
                    }
                });
            }
        });
        let mut next = 0;
        groups.finish(&mut file, &mut next, "got.parquet", 2).unwrap();
        file.close().unwrap();
        let (want, got) = (std::fs::read(&want_path).unwrap(), std::fs::read(&got_path).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(next, 8, "798 rows in row groups of 100");
        assert!(got == want, "the row groups differ from ArrowWriter's");
    }
}
