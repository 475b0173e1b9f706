//! A fixed set of worker threads for a stream of work items: the calling thread fills
//! items and takes the results in input order, the workers process them in between.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Mutex;

/// Items in flight per worker: enough that a worker finds the next item queued when it
/// finishes one (the calling thread may be busy writing), few enough to bound memory.
const IN_FLIGHT_PER_WORKER: usize = 2;

/// Runs a stream of items through `jobs` workers and hands them back in input order.
///
/// On the calling thread, `fill` fills the next item (a recycled one: it must reset it)
/// and says whether more follow; `drain` takes each processed item in input order. On a
/// worker, `work` processes an item with that worker's own state, made once per worker by
/// `state`. Items are reused, so their buffers are allocated once per item in flight, not
/// once per batch. The first error of `fill` or `drain` ends the run (items in flight are
/// dropped) and is returned; a panic on a worker is resumed on the calling thread.
///
/// With `jobs <= 1` everything runs on the calling thread, one item at a time: the same
/// items and results, without threads.
pub fn ordered<T, S, E>(
    jobs: usize,
    mut fill: impl FnMut(&mut T) -> Result<bool, E>,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &mut T) + Sync,
    mut drain: impl FnMut(&mut T) -> Result<(), E>,
) -> Result<(), E>
where
    T: Default + Send,
{
    if jobs <= 1 {
        let mut s = state();
        let mut item = T::default();
        loop {
            let more = fill(&mut item)?;
            work(&mut s, &mut item);
            drain(&mut item)?;
            if !more {
                return Ok(());
            }
        }
    }
    let (job_tx, job_rx) = mpsc::channel::<(u64, T)>();
    // One queue that idle workers take from in turn: an item goes to whichever worker is
    // free, so a worker that loses its core for a while does not hold the others back.
    let job_rx = Mutex::new(job_rx);
    let (done_tx, done_rx) = mpsc::channel::<(u64, std::thread::Result<T>)>();
    let (state, work, job_rx) = (&state, &work, &job_rx);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                let mut s = state();
                loop {
                    // A poisoned lock only means another worker panicked holding it; the
                    // receiver itself is intact.
                    let next = job_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok((seq, mut item)) = next else { return };
                    let done = catch_unwind(AssertUnwindSafe(|| {
                        work(&mut s, &mut item);
                        item
                    }));
                    if done_tx.send((seq, done)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let cap = IN_FLIGHT_PER_WORKER * jobs;
        let mut spare: Vec<T> = Vec::new();
        let mut ready: BTreeMap<u64, T> = BTreeMap::new();
        let (mut sent, mut written, mut more) = (0u64, 0u64, true);
        // Returning drops `job_tx`: the workers' queue closes and they end.
        let job_tx = job_tx;
        loop {
            while more && sent - written < cap as u64 {
                let mut item = spare.pop().unwrap_or_default();
                more = fill(&mut item)?;
                job_tx.send((sent, item)).expect("the workers hold the queue until it closes");
                sent += 1;
            }
            if written == sent {
                return Ok(());
            }
            let (seq, done) = done_rx.recv().expect("a worker answers for every item it took");
            ready.insert(seq, done.unwrap_or_else(|panic| resume_unwind(panic)));
            while let Some(mut item) = ready.remove(&written) {
                drain(&mut item)?;
                written += 1;
                spare.push(item);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::ordered;

    /// Every item is processed once and drained in input order, whatever the number of
    /// workers, with work of uneven length so that items finish out of order.
    #[test]
    fn results_come_back_in_input_order() {
        for jobs in [1, 2, 3, 8] {
            let mut next = 0u64;
            let mut seen = Vec::new();
            let result: Result<(), ()> = ordered(
                jobs,
                |item: &mut (u64, u64)| {
                    *item = (next, 0);
                    next += 1;
                    Ok(next < 500)
                },
                || (),
                |_, item| {
                    // Uneven work, so that later items often finish first.
                    for _ in 0..(item.0 * 7919) % 2000 {
                        std::hint::black_box(item.0);
                    }
                    item.1 = item.0 * 2;
                },
                |item| {
                    seen.push(*item);
                    Ok(())
                },
            );
            assert_eq!(result, Ok(()));
            let want: Vec<(u64, u64)> = (0..500).map(|i| (i, i * 2)).collect();
            assert_eq!(seen, want, "jobs {jobs}");
        }
    }

    /// An error from `drain` ends the run with that error, after the items before it.
    #[test]
    fn a_drain_error_stops_the_run() {
        for jobs in [1, 2, 4] {
            let mut next = 0u32;
            let mut seen = Vec::new();
            let result = ordered(
                jobs,
                |item: &mut u32| {
                    *item = next;
                    next += 1;
                    Ok(true)
                },
                || (),
                |_, _| {},
                |item| {
                    if *item == 37 {
                        return Err(format!("stop at {item}"));
                    }
                    seen.push(*item);
                    Ok(())
                },
            );
            assert_eq!(result, Err("stop at 37".to_owned()), "jobs {jobs}");
            assert_eq!(seen, (0..37).collect::<Vec<_>>(), "jobs {jobs}");
        }
    }

    /// A panic on a worker reaches the calling thread instead of hanging it.
    #[test]
    fn a_worker_panic_is_resumed() {
        let caught = std::panic::catch_unwind(|| {
            let mut next = 0u32;
            let _ = ordered::<u32, (), ()>(
                2,
                |item| {
                    *item = next;
                    next += 1;
                    Ok(next < 100)
                },
                || (),
                |_, item| assert!(*item != 50, "item 50"),
                |_| Ok(()),
            );
        });
        assert!(caught.is_err());
    }
}
