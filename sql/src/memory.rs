//! A table's records in memory as a scan's files carry them ([`MemoryRecords`]): what the in-memory table hands the file format's opener.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::buffer::Buffer;

/// A table's records in memory, as a scan's files carry them (a `PartitionedFile`
/// extension): the buffer, each record's body range in it, and the name errors give.
#[derive(Clone)]
pub(crate) struct MemoryRecords {
    pub(crate) name: Arc<str>,
    pub(crate) data: Buffer,
    /// Each record's body, in order; the records are contiguous (a record's length
    /// prefix starts where the one before it ends).
    pub(crate) records: Arc<[Range<usize>]>,
}

impl MemoryRecords {
    /// The name errors give (the file read, or `<memory>`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The records' bytes.
    pub(crate) fn data(&self) -> &Buffer {
        &self.data
    }

    /// Each record's body range in [`data`](Self::data).
    pub(crate) fn records(&self) -> &[Range<usize>] {
        &self.records
    }

    /// Where record `i`'s length prefix starts (for `i` = the number of records: the end).
    pub(crate) fn prefix_start(&self, i: usize) -> usize {
        match i.checked_sub(1).and_then(|before| self.records.get(before)) {
            Some(before) => before.end,
            None if i == 0 => 0,
            None => self.data.len(),
        }
    }

    /// The indexes of the records a scan of `bytes` owns (all of them for `None`): those
    /// whose length prefix starts in it, as for a file's byte range.
    pub(crate) fn owned(&self, bytes: Option<Range<u64>>) -> Range<usize> {
        let Some(bytes) = bytes else { return 0..self.records.len() };
        // The first record whose prefix starts at or after `at`: record i > 0 starts where
        // record i - 1 ends, and the ends increase.
        let first = |at: u64| match at {
            0 => 0,
            at => (self.records.partition_point(|r| (r.end as u64) < at) + 1).min(self.records.len()),
        };
        let start = first(bytes.start);
        start..first(bytes.end).max(start)
    }
}
