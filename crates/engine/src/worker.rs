//! The one shape of a background loop. A [`Worker`] does one pass at a time and says what it
//! found; [`run`] repeats passes until shutdown, going again at once after work and otherwise
//! waiting as long as the pass asked (or until the worker is woken). `serve` runs each under
//! [`supervise`](crate::supervise::supervise), which restarts it if it panics. Loops that
//! only one instance may run at a time take a [`Lease`] at the start of each pass.

use std::time::Duration;

use coupond_domain::Timestamp;
use coupond_store::{Store, StoreResult};
use tokio::sync::{watch, Notify};

/// What a pass found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// It did some work: there may be more, so pass again at once.
    Busy,
    /// Nothing to do: wait up to this long (or until woken) before the next pass.
    Idle(Duration),
}

/// A background loop's body.
#[async_trait::async_trait]
pub trait Worker: Send + Sync + 'static {
    /// Names the loop in logs.
    fn name(&self) -> &'static str;
    /// One pass.
    async fn pass(&self) -> StoreResult<Pass>;
    /// The wait after a failed pass.
    fn retry_after(&self) -> Duration;
    /// Wakes an idle loop early (new work announced in this process), if it has one.
    fn waker(&self) -> Option<&Notify> {
        None
    }
}

/// Passes until `shutdown` turns true (or its sender is dropped). A failed pass is logged and
/// retried after [`Worker::retry_after`]; it never ends the loop.
pub async fn run<W: Worker>(w: W, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        let wait = match w.pass().await {
            Ok(Pass::Busy) => continue,
            Ok(Pass::Idle(wait)) => wait,
            Err(e) => {
                let name = w.name();
                tracing::warn!(worker = name, error = %e.chain(), "{name} pass failed; retrying");
                w.retry_after()
            }
        };
        let woken = async {
            match w.waker() {
                Some(n) => n.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = woken => {}
            // A dropped sender means nobody can stop us any more: stop now.
            changed = shutdown.changed() => if changed.is_err() { return },
        }
    }
}

/// A named lease in the database that one instance holds at a time (the scheduler, the
/// outbox dispatcher, the webhook sender), renewed as passes go; if its holder dies, another
/// instance takes over once it lapses.
///
/// A pass within the first third of the lease's time since this holder last renewed it does
/// not write it again: no other instance can take it before it lapses, so the holder still
/// has at least two thirds of it, where a write at every pass (several a second while the
/// outbox is busy) would cost a durable commit each, waiting behind claims for the one writer.
#[derive(Clone, Debug)]
pub struct Lease {
    name: &'static str,
    holder: String,
    ttl: time::Duration,
    /// When this holder last took or renewed it; shared by the clones of one loop. A std
    /// mutex: held for a read or a write of the value, never across an await.
    renewed: std::sync::Arc<std::sync::Mutex<Option<Timestamp>>>,
}

impl Lease {
    /// The lease `name`, held as `holder` (this instance) for `ttl` from each renewal.
    pub fn new(name: &'static str, holder: impl Into<String>, ttl: time::Duration) -> Self {
        Lease {
            name,
            holder: holder.into(),
            ttl,
            renewed: std::sync::Arc::default(),
        }
    }

    /// Takes or renews the lease at `now`: whether this instance holds it.
    pub async fn hold(&self, store: &dyn Store, now: Timestamp) -> StoreResult<bool> {
        let fresh = self.last_renewed().is_some_and(|at| {
            // A clock that went back counts as stale, so the lease is written again.
            at <= now && now < at.plus(self.ttl / 3)
        });
        if fresh {
            return Ok(true);
        }
        let held = store
            .try_lease(self.name, &self.holder, now, now.plus(self.ttl))
            .await?;
        *self
            .renewed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = held.then_some(now);
        Ok(held)
    }

    fn last_renewed(&self) -> Option<Timestamp> {
        *self
            .renewed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use coupond_store::StoreError;
    use tokio::sync::mpsc;

    use super::*;

    /// Fails its first pass, is busy on the second, then idles for an hour each time; every
    /// pass reports its number.
    struct Script {
        passes: AtomicUsize,
        seen: mpsc::UnboundedSender<usize>,
        wake: Arc<Notify>,
    }

    #[async_trait::async_trait]
    impl Worker for Script {
        fn name(&self) -> &'static str {
            "script"
        }
        async fn pass(&self) -> StoreResult<Pass> {
            let n = self.passes.fetch_add(1, Ordering::SeqCst) + 1;
            let _ = self.seen.send(n);
            match n {
                1 => Err(StoreError::other("first pass fails")),
                2 => Ok(Pass::Busy),
                _ => Ok(Pass::Idle(Duration::from_secs(3600))),
            }
        }
        fn retry_after(&self) -> Duration {
            Duration::from_secs(5)
        }
        fn waker(&self) -> Option<&Notify> {
            Some(&self.wake)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn failures_retry_busy_passes_repeat_and_idle_ones_wait_for_a_wake_up() {
        let (seen_tx, mut seen) = mpsc::unbounded_channel();
        let wake = Arc::new(Notify::new());
        let w = Script {
            passes: AtomicUsize::new(0),
            seen: seen_tx,
            wake: wake.clone(),
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let started = tokio::time::Instant::now();
        let loop_ = tokio::spawn(run(w, stop_rx));
        assert_eq!(seen.recv().await, Some(1));
        // The failure waits retry_after (5 s of paused time), then passes go on.
        assert_eq!(seen.recv().await, Some(2));
        assert!(started.elapsed() >= Duration::from_secs(5));
        // Busy: the next pass comes at once; it idles for an hour.
        assert_eq!(seen.recv().await, Some(3));
        let idle_from = tokio::time::Instant::now();
        wake.notify_one();
        assert_eq!(seen.recv().await, Some(4));
        assert!(
            idle_from.elapsed() < Duration::from_secs(3600),
            "woken early"
        );
        stop_tx.send(true).unwrap();
        wake.notify_one();
        loop_.await.unwrap();
    }
}
