//! Which path filled a scan's columns, as DataFusion metrics of the scan (shown by `EXPLAIN ANALYZE`), and their sum over an executed plan (for `protojit sql --verbose`).
//!
//! Every partition of a protobuf scan converts with a converter of its own and counts, as
//! it produces batches, the records each path filled: [`ROWS_COMPILED`], [`ROWS_CHUNKED`],
//! [`ROWS_TREE`] and [`ROWS_OTHER`] (counters of the scan's `DataSourceExec`, one per
//! partition), and why the converter did not take the compiled appenders, once per reason
//! ([`PATH_NOTE`], a counter whose [`NOTE_LABEL`] label is the reason). `EXPLAIN ANALYZE`
//! sums each counter over the partitions and drops labels, so the scan also prints its
//! reasons beside `file_type=protobuf` as `path_notes=[…]` once it has run.
//! [`ScanPaths::of_plan`] reads them back from an executed plan.

use std::sync::{Arc, Mutex};

use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, MetricCategory, MetricsSet};
use datafusion::physical_plan::ExecutionPlan;
use protojit_arrow::Converter;

/// Metric: records the compiled column appenders filled.
pub const ROWS_COMPILED: &str = "rows_compiled";
/// Metric: records the chunked path filled on a partition that has compiled appenders
/// (while they compiled, in the race between the two, or after the chunked path won it).
pub const ROWS_CHUNKED: &str = "rows_chunked";
/// Metric: records the compiled appenders declined and the tree read.
pub const ROWS_TREE: &str = "rows_tree";
/// Metric: records filled by another path than the compiled appenders' (the partition's
/// converter has none; [`PATH_NOTE`] says why).
pub const ROWS_OTHER: &str = "rows_other";
/// Metric: a reason the compiled appenders were not taken, carried by its [`NOTE_LABEL`]
/// label (1 per partition that gave it).
pub const PATH_NOTE: &str = "path_note";
/// The label of a [`PATH_NOTE`] metric that holds the reason.
pub const NOTE_LABEL: &str = "note";

/// Records the protobuf scans of a plan filled, by path (see [`ScanPaths::of_plan`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanPaths {
    /// Scan partitions counted (each converts with a converter of its own).
    pub scans: u64,
    /// Records the compiled column appenders filled ([`ROWS_COMPILED`]).
    pub compiled: u64,
    /// Records the chunked path filled on a partition that has compiled appenders: while
    /// they compiled, in the race between the two, or after the chunked path won it
    /// ([`ROWS_CHUNKED`]).
    pub chunked: u64,
    /// Records the appenders declined and the tree read ([`ROWS_TREE`]).
    pub tree: u64,
    /// Records filled by another path than the compiled appenders' (their partitions'
    /// reasons are in `notes`; [`ROWS_OTHER`]).
    pub other: u64,
    /// Why partitions did not take the compiled appenders, each reason once ([`PATH_NOTE`]).
    pub notes: Vec<String>,
}

impl ScanPaths {
    /// The paths of the protobuf scans in `plan` (and its children), summed from their
    /// metrics: the counts so far, so the whole query's once `plan` has run. Scans that ran
    /// in other processes (a Ballista cluster's executors) are not in the local plan's
    /// metrics, and count nothing.
    pub fn of_plan(plan: &dyn ExecutionPlan) -> ScanPaths {
        let mut paths = ScanPaths::default();
        paths.add_plan(plan);
        paths
    }

    /// Adds `other`'s counts and notes to these.
    pub fn add(&mut self, other: &ScanPaths) {
        self.scans += other.scans;
        self.compiled += other.compiled;
        self.chunked += other.chunked;
        self.tree += other.tree;
        self.other += other.other;
        for note in &other.notes {
            self.note(note);
        }
    }

    fn add_plan(&mut self, plan: &dyn ExecutionPlan) {
        if let Some(metrics) = protobuf_scan_metrics(plan) {
            let sum = |name: &str| metrics.sum_by_name(name).map_or(0, |v| v.as_usize() as u64);
            // Every partition registers its counters when it starts: one ROWS_COMPILED each.
            self.scans += metrics.iter().filter(|m| m.value().name() == ROWS_COMPILED).count() as u64;
            self.compiled += sum(ROWS_COMPILED);
            self.chunked += sum(ROWS_CHUNKED);
            self.tree += sum(ROWS_TREE);
            self.other += sum(ROWS_OTHER);
            for note in notes(&metrics) {
                self.note(&note);
            }
        }
        for child in plan.children() {
            self.add_plan(child.as_ref());
        }
    }

    fn note(&mut self, note: &str) {
        if !self.notes.iter().any(|n| n == note) {
            self.notes.push(note.to_owned());
        }
    }
}

/// The `FileSource::file_type` of protojit's scans: format.rs's `FORMAT_NAME` (named here
/// rather than imported: format.rs imports this module).
const PROTOBUF_FILE_TYPE: &str = "protobuf";

/// The metrics of `plan` if it is a scan through protojit's `FileSource` (files or a
/// [`ProtobufTable`](crate::ProtobufTable)'s records in memory).
fn protobuf_scan_metrics(plan: &dyn ExecutionPlan) -> Option<MetricsSet> {
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let conf = exec.data_source().downcast_ref::<FileScanConfig>()?;
    (conf.file_source().file_type() == PROTOBUF_FILE_TYPE).then(|| plan.metrics()).flatten()
}

/// The reasons in `metrics`' [`PATH_NOTE`] metrics, each once, in the order first seen.
pub(crate) fn notes(metrics: &MetricsSet) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let labelled = metrics.iter().filter(|m| m.value().name() == PATH_NOTE).flat_map(|m| m.labels().iter());
    for label in labelled.filter(|l| l.name() == NOTE_LABEL) {
        if !out.iter().any(|n| n == label.value()) {
            out.push(label.value().to_owned());
        }
    }
    out
}

/// One scan partition's path counters, fed from its converter as batches are produced.
///
/// The converter's counts are cumulative over every batch it built, and a partition may
/// read two files at once (DataFusion opens the next file while the current one is
/// read), so the counters get the difference from the counts last reported, under a lock.
pub(crate) struct PathMetrics {
    converter: Arc<Converter>,
    metrics: ExecutionPlanMetricsSet,
    partition: usize,
    /// `[compiled, chunked, tree, other]`, in [`ROWS_COMPILED`]… order.
    counters: [Count; 4],
    reported: Mutex<Reported>,
}

/// What a [`PathMetrics`] has added to its counters so far.
#[derive(Default)]
struct Reported {
    counts: [u64; 4],
    notes: Vec<String>,
}

impl PathMetrics {
    /// Registers the counters of `partition` in `metrics` (at zero, so that `EXPLAIN
    /// ANALYZE` shows them for every partition), fed from `converter`.
    pub(crate) fn new(metrics: &ExecutionPlanMetricsSet, partition: usize, converter: Arc<Converter>) -> PathMetrics {
        let counter = |name: &'static str| {
            MetricBuilder::new(metrics).with_category(MetricCategory::Rows).counter(name, partition)
        };
        PathMetrics {
            converter,
            metrics: metrics.clone(),
            partition,
            counters: [counter(ROWS_COMPILED), counter(ROWS_CHUNKED), counter(ROWS_TREE), counter(ROWS_OTHER)],
            reported: Mutex::new(Reported::default()),
        }
    }

    /// The converter this partition converts with.
    pub(crate) fn converter(&self) -> &Arc<Converter> {
        &self.converter
    }

    /// Brings the counters up to the converter's counts, and registers a reason not seen
    /// before. Called after each batch and at the end of each file.
    pub(crate) fn update(&self) {
        let c = &self.converter;
        let (compiled, chunked, tree) = c.compiled_records();
        // A converter without compiled appenders counts none of the three: its rows went
        // by another path. (One with them counts each record as it appends it, before the
        // batch is finished and counted in `rows_converted`.)
        let other = if compiled + chunked + tree == 0 { c.rows_converted() } else { 0 };
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        for ((now, seen), counter) in
            [compiled, chunked, tree, other].into_iter().zip(&mut reported.counts).zip(&self.counters)
        {
            if now > *seen {
                counter.add(usize::try_from(now - *seen).unwrap_or(usize::MAX));
                *seen = now;
            }
        }
        if let Some(note) = c.path_note() {
            if !reported.notes.iter().any(|n| n == note) {
                reported.notes.push(note.to_owned());
                MetricBuilder::new(&self.metrics)
                    .with_new_label(NOTE_LABEL, note.to_owned())
                    .counter(PATH_NOTE, self.partition)
                    .add(1);
            }
        }
    }
}
