//! A fixed set of worker threads for a stream of work items: each worker fills the next
//! item (in turn, under a lock) and processes it, and the calling thread takes the results
//! in input order.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Mutex;

/// Items in flight per worker: enough that a worker finds a free item when it finishes
/// one (the calling thread may be busy writing), few enough to bound memory.
const IN_FLIGHT_PER_WORKER: usize = 2;

/// The filling side, shared by the workers: one of them fills at a time, in input order.
struct Feed<F> {
    fill: F,
    /// The next item's number in input order.
    next: u64,
    /// A fill said nothing follows (or failed, or panicked): no more items.
    ended: bool,
}

/// What a worker hands back: the item's number, and the item processed, or the error or
/// panic that ended it; `last` when no item follows it.
struct Done<T, E> {
    seq: u64,
    item: std::thread::Result<Result<T, E>>,
    last: bool,
}

/// Runs a stream of items through `jobs` workers and hands them back in input order.
///
/// `fill` fills the next item (a recycled one: it must reset it) and says whether more
/// follow; `work` processes an item with the worker's own state, made once per worker by
/// `state`; `drain`, on the calling thread, takes each processed item in input order.
/// Fill runs on the workers, one at a time, so that an item's input is read by the thread
/// that processes it (into its cache, not the calling thread's). Items are reused, so their
/// buffers are allocated once per item in flight, not once per batch. The first error of
/// `fill` or `drain` ends the run (items in flight are dropped) and is returned; a panic on
/// a worker is resumed on the calling thread.
///
/// With `jobs <= 1` everything runs on the calling thread, one item at a time: the same
/// items and results, without threads.
pub fn ordered<T, S, E>(
    jobs: usize,
    mut fill: impl FnMut(&mut T) -> Result<bool, E> + Send,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &mut T) + Sync,
    mut drain: impl FnMut(&mut T) -> Result<(), E>,
) -> Result<(), E>
where
    T: Default + Send,
    E: Send,
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
    // Free items go to whichever worker asks first, so a worker that loses its core for a
    // while does not hold the others back.
    let (free_tx, free_rx) = mpsc::channel::<T>();
    let free_rx = Mutex::new(free_rx);
    let feed = Mutex::new(Feed { fill, next: 0, ended: false });
    let (done_tx, done_rx) = mpsc::channel::<Done<T, E>>();
    let (state, work, free_rx, feed) = (&state, &work, &free_rx, &feed);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let done_tx = done_tx.clone();
            scope.spawn(move || {
                let mut s = state();
                loop {
                    // A poisoned lock only means another worker panicked holding it; the
                    // receiver itself is intact (and a panicked feed has ended).
                    let next = free_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok(mut item) = next else { return };
                    let mut feed = feed.lock().unwrap_or_else(|p| p.into_inner());
                    if feed.ended {
                        return;
                    }
                    let seq = feed.next;
                    feed.next += 1;
                    // Ended until the fill says otherwise, so that a panic in it ends the feed.
                    feed.ended = true;
                    let filled = catch_unwind(AssertUnwindSafe(|| (feed.fill)(&mut item)));
                    feed.ended = !matches!(filled, Ok(Ok(true)));
                    let last = feed.ended;
                    drop(feed);
                    let item = match filled {
                        Ok(Ok(_)) => catch_unwind(AssertUnwindSafe(|| {
                            work(&mut s, &mut item);
                            Ok(item)
                        })),
                        Ok(Err(e)) => Ok(Err(e)),
                        Err(panic) => Err(panic),
                    };
                    if done_tx.send(Done { seq, item, last }).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        // Returning drops `free_tx`: workers waiting for an item end.
        let free_tx = free_tx;
        for _ in 0..IN_FLIGHT_PER_WORKER * jobs {
            free_tx.send(T::default()).expect("the workers hold the free list until it closes");
        }
        let mut ready: BTreeMap<u64, T> = BTreeMap::new();
        let (mut written, mut end) = (0u64, None);
        loop {
            if end.is_some_and(|end| written > end) {
                return Ok(());
            }
            let Done { seq, item, last } = done_rx.recv().expect("a worker answers for every item it filled");
            if last {
                end = Some(seq);
            }
            ready.insert(seq, item.unwrap_or_else(|panic| resume_unwind(panic))?);
            while let Some(mut item) = ready.remove(&written) {
                drain(&mut item)?;
                written += 1;
                // Back to the free list (which outlives this loop, so the send cannot fail;
                // after the end no worker takes it).
                let _ = free_tx.send(item);
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

    /// Numbers items from 0 until `fill` fails at `fill_fails` or `drain` at `drain_fails`:
    /// the run's result and the items drained.
    fn failing_run(jobs: usize, fill_fails: u32, drain_fails: u32) -> (Result<(), String>, Vec<u32>) {
        let mut next = 0u32;
        let mut seen = Vec::new();
        let result = ordered(
            jobs,
            |item: &mut u32| {
                if next == fill_fails {
                    return Err(format!("cannot fill {next}"));
                }
                *item = next;
                next += 1;
                Ok(true)
            },
            || (),
            |_, _| {},
            |item| {
                if *item == drain_fails {
                    return Err(format!("stop at {item}"));
                }
                seen.push(*item);
                Ok(())
            },
        );
        (result, seen)
    }

    /// An error from `drain` ends the run with that error, after the items before it; one
    /// from `fill` (which runs on the workers) with that error, the items drained a prefix
    /// of the input, in order.
    #[test]
    fn an_error_stops_the_run() {
        for jobs in [1, 2, 4] {
            let (result, seen) = failing_run(jobs, u32::MAX, 37);
            assert_eq!(result, Err("stop at 37".to_owned()), "jobs {jobs}");
            assert_eq!(seen, (0..37).collect::<Vec<_>>(), "jobs {jobs}");
            let (result, seen) = failing_run(jobs, 20, u32::MAX);
            assert_eq!(result, Err("cannot fill 20".to_owned()), "jobs {jobs}");
            assert_eq!(seen, (0..seen.len() as u32).collect::<Vec<_>>(), "jobs {jobs}");
            assert!(seen.len() <= 20, "jobs {jobs}");
        }
    }

    /// A panic in `fill` on a worker reaches the calling thread instead of hanging it.
    #[test]
    fn a_fill_panic_is_resumed() {
        let caught = std::panic::catch_unwind(|| {
            let mut next = 0u32;
            let _ = ordered::<u32, (), ()>(
                2,
                |item| {
                    assert!(next != 30, "fill 30");
                    *item = next;
                    next += 1;
                    Ok(true)
                },
                || (),
                |_, _| {},
                |_| Ok(()),
            );
        });
        assert!(caught.is_err());
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
