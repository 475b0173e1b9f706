//! Which path filled the columns of the scans (for `protojit sql --verbose`): opt-in, as it keeps each scan's converter until read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use protojit_arrow::Converter;

/// Records the scans filled, by path, since [`track_scan_paths`] (see [`take_scan_paths`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanPaths {
    /// Scans counted.
    pub scans: u64,
    /// Records the compiled column appenders filled.
    pub compiled: u64,
    /// Records the chunked path filled on a scan that has compiled appenders: while they
    /// compiled, in the race between the two, or after the chunked path won it.
    pub chunked: u64,
    /// Records the appenders declined and the tree read.
    pub tree: u64,
    /// Records filled by another path than the compiled appenders' (their scans' reasons
    /// are in `notes`).
    pub other: u64,
    /// Why scans did not take the compiled appenders, each reason once.
    pub notes: Vec<String>,
}

static TRACK: AtomicBool = AtomicBool::new(false);
static SCANS: Mutex<Vec<Arc<Converter>>> = Mutex::new(Vec::new());

/// Starts (or stops) keeping each scan's converter, so that [`take_scan_paths`] can say
/// which path filled its records. Off by default: a converter is kept until it is read.
pub fn track_scan_paths(on: bool) {
    TRACK.store(on, Ordering::Relaxed);
}

/// The paths of the scans kept since [`track_scan_paths`], summed; forgets them.
pub fn take_scan_paths() -> ScanPaths {
    let scans = std::mem::take(&mut *SCANS.lock().unwrap_or_else(|e| e.into_inner()));
    let mut out = ScanPaths { scans: scans.len() as u64, ..ScanPaths::default() };
    for c in &scans {
        let (compiled, chunked, tree) = c.compiled_records();
        if compiled + chunked + tree > 0 {
            out.compiled += compiled;
            out.chunked += chunked;
            out.tree += tree;
        } else {
            out.other += c.rows_converted();
        }
        if let Some(note) = c.path_note() {
            if !out.notes.iter().any(|n| n == note) {
                out.notes.push(note.to_owned());
            }
        }
    }
    out
}

/// Keeps `converter` (a scan's) when tracking is on.
pub(crate) fn track(converter: &Arc<Converter>) {
    if TRACK.load(Ordering::Relaxed) {
        SCANS.lock().unwrap_or_else(|e| e.into_inner()).push(converter.clone());
    }
}
