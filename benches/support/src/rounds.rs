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

/// The process-per-measurement timing of `examples/decode_timing.rs` and
/// `examples/stream_timing.rs`: a batch of `run` calls calibrated by doubling to at least
/// 50 ms, then batches until `seconds` have passed (at least 3); the median batch
/// throughput in MB/s for `bytes` per call (the upper median for an even count).
pub fn median_batch_rate(bytes: f64, seconds: f64, mut run: impl FnMut()) -> f64 {
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            run();
        }
        if t.elapsed() >= Duration::from_millis(50) || n >= 1 << 30 {
            break;
        }
        n *= 2;
    }
    let mut rates = Vec::new();
    let start = Instant::now();
    while rates.len() < 3 || start.elapsed().as_secs_f64() < seconds {
        let t = Instant::now();
        for _ in 0..n {
            run();
        }
        rates.push(bytes * n as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
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
