//! Pacing of background transactions: [`Pacer`] sizes each chunk of background work (codes
//! generated, users issued to) so its transaction takes about a target time. SQLite has one
//! writer: a claim that arrives while a background transaction holds it waits for that
//! transaction to end, so the target bounds what background work adds to a claim's latency,
//! while the work still goes as fast as chunks of that length allow.
//!
//! What is measured is the whole call, waiting for the writer included, and waiting only ever
//! adds time. So the cost of an item is taken as the lowest seen over the last few chunks:
//! a busy writer cannot make chunks shrink for good.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Chunks remembered for the cost estimate.
const WINDOW: usize = 16;
/// The smallest chunk: below it, a transaction's fixed cost (reading the job, the commit)
/// weighs more than the items.
const MIN: u32 = 50;

/// Sizes chunks of background work from how long the last ones took.
#[derive(Debug)]
pub struct Pacer {
    /// Zero: no pacing, every chunk is `max`.
    target: Duration,
    max: u32,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    size: u32,
    /// Nanoseconds per item of the last chunks, oldest first.
    costs: std::collections::VecDeque<u128>,
}

impl Pacer {
    /// Chunks of at most `max` items, sized to take about `target` (zero: always `max`).
    pub fn new(target: Duration, max: u32) -> Self {
        let max = max.max(1);
        Pacer {
            target,
            max,
            state: Mutex::new(State {
                size: max.min(MIN * 2),
                costs: std::collections::VecDeque::with_capacity(WINDOW),
            }),
        }
    }

    /// How many items the next chunk should take.
    pub fn size(&self) -> u32 {
        if self.target.is_zero() {
            return self.max;
        }
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .size
    }

    /// Learns from a chunk of `n` items that took `took` (waiting included): the next size
    /// moves halfway towards the one that would take the target at the lowest recent cost.
    pub fn record(&self, n: u32, took: Duration) {
        if self.target.is_zero() || n == 0 {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.costs.len() == WINDOW {
            s.costs.pop_front();
        }
        s.costs.push_back((took.as_nanos() / u128::from(n)).max(1));
        let cost = s.costs.iter().copied().min().unwrap_or(1);
        let ideal = u32::try_from(self.target.as_nanos() / cost).unwrap_or(u32::MAX);
        let next = s.size / 2 + ideal / 2;
        s.size = next.clamp(MIN.min(self.max), self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_converge_on_the_target_time() {
        let p = Pacer::new(Duration::from_millis(10), 5_000);
        // Items cost 20 µs each: 500 fit in 10 ms.
        for _ in 0..20 {
            let n = p.size();
            p.record(n, Duration::from_micros(20) * n);
        }
        assert!((480..=520).contains(&p.size()), "{}", p.size());
        // Cheap items grow the chunk, up to the maximum.
        for _ in 0..40 {
            let n = p.size();
            p.record(n, Duration::from_nanos(100) * n);
        }
        assert_eq!(p.size(), 5_000);
    }

    #[test]
    fn waiting_for_a_busy_writer_does_not_shrink_chunks_for_good() {
        let p = Pacer::new(Duration::from_millis(10), 5_000);
        for _ in 0..20 {
            let n = p.size();
            p.record(n, Duration::from_micros(20) * n);
        }
        let settled = p.size();
        // Most chunks now also wait 50 ms for the writer; one in four does not.
        for i in 0..40 {
            let n = p.size();
            let wait = if i % 4 == 0 {
                Duration::ZERO
            } else {
                Duration::from_millis(50)
            };
            p.record(n, Duration::from_micros(20) * n + wait);
        }
        assert!(p.size() >= settled * 9 / 10, "{} after {settled}", p.size());
        // Items that really got dearer (a slow disk) shrink it, down to the minimum.
        for _ in 0..40 {
            p.record(p.size(), Duration::from_secs(1));
        }
        assert_eq!(p.size(), MIN);
    }

    #[test]
    fn without_a_target_chunks_are_the_maximum() {
        let p = Pacer::new(Duration::ZERO, 1_000);
        p.record(1_000, Duration::from_secs(10));
        assert_eq!(p.size(), 1_000);
    }
}
