//! The interleaved-rounds method shared by the `rounds` and `parse` benches: a timed arm, its calibration to a batch time, and the statistics the reports print.

use std::time::{Duration, Instant};

/// One arm of a bench: a closure timed in batches.
pub type Run<'a> = Box<dyn FnMut() + 'a>;

/// Iterations of `run` that take about `batch`.
pub fn calibrate(run: &mut Run<'_>, batch: Duration) -> u64 {
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            run();
        }
        let e = t.elapsed();
        if e >= batch / 4 || n >= 1 << 30 {
            let per = e.as_secs_f64() / n as f64;
            return ((batch.as_secs_f64() / per).ceil() as u64).max(1);
        }
        n *= 4;
    }
}

/// The median of `v` (sorted in place; the mean of the middle two for an even length).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The geometric mean of `v`.
pub fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}
