//! Priority on the one writer: a request (a claim, a checkout step, an edit) waiting for the
//! writer goes before background work (code generation, issuance chunks, the outbox
//! consumers' writes). Background work waits until no request is waiting, then queues for the
//! writer like anyone else; a request that arrives after that waits for at most that one
//! background transaction, which the engine keeps short (`background_txn_target`).
//!
//! Background work also takes turns ([`Gate::background_turn`]): one background transaction
//! at a time is queued for or holds the writer, so a request never finds several of them
//! ahead of it. So that background work is not starved by a continuous stream of requests, it
//! waits at most [`MAX_YIELD`] before queueing regardless.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, SemaphorePermit};

/// The longest background work stands aside for requests.
const MAX_YIELD: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct Gate {
    /// Requests waiting for the writer now.
    waiting: AtomicUsize,
    /// Signalled when `waiting` drops to zero.
    clear: Notify,
    /// One permit: the background transaction whose turn it is.
    background: Semaphore,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            waiting: AtomicUsize::new(0),
            clear: Notify::new(),
            background: Semaphore::new(1),
        }
    }
}

/// A request waiting for the writer; it stops counting when dropped (once it has the writer,
/// or gave up).
#[derive(Debug)]
pub(crate) struct Waiting<'a>(&'a Gate);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.0.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.clear.notify_waiters();
        }
    }
}

impl Gate {
    /// Counts a request as waiting for the writer until the guard is dropped.
    pub(crate) fn request(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::AcqRel);
        Waiting(self)
    }

    /// Waits for this background transaction's turn (hold the permit until it ends), then
    /// until no request is waiting for the writer.
    pub(crate) async fn background_turn(&self) -> Option<SemaphorePermit<'_>> {
        // The semaphore is never closed, so this is always a permit.
        let turn = self.background.acquire().await.ok();
        self.yield_to_requests().await;
        turn
    }

    /// Waits until no request is waiting for the writer (or [`MAX_YIELD`] has passed).
    pub(crate) async fn yield_to_requests(&self) {
        let deadline = tokio::time::Instant::now() + MAX_YIELD;
        loop {
            let cleared = self.clear.notified();
            tokio::pin!(cleared);
            // Registered before the check, so a drop to zero in between is not missed.
            cleared.as_mut().enable();
            if self.waiting.load(Ordering::Acquire) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, cleared).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn background_waits_for_requests_to_clear() {
        let gate = std::sync::Arc::new(Gate::default());
        gate.yield_to_requests().await; // nobody waiting: at once
        let request = gate.request();
        let g = gate.clone();
        let background = tokio::spawn(async move { g.yield_to_requests().await });
        tokio::task::yield_now().await;
        assert!(!background.is_finished());
        drop(request);
        background.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn background_is_not_starved_for_long() {
        let gate = Gate::default();
        let _forever = gate.request();
        let started = tokio::time::Instant::now();
        gate.yield_to_requests().await;
        assert_eq!(started.elapsed(), MAX_YIELD);
    }
}
