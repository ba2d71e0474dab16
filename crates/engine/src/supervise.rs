//! The supervisor every background loop runs under: a loop that panics is logged, counted
//! (`coupond_worker_restarts_total{worker}`) and started again after a backoff, instead of
//! vanishing until shutdown with nobody noticing.
//!
//! A loop that returns has seen the shutdown signal, and is not restarted. The backoff starts
//! at [`FIRST_BACKOFF`] and doubles up to [`MAX_BACKOFF`]; a loop that ran for
//! [`MAX_BACKOFF`] before it panicked starts over from the first backoff.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The wait before the first restart.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What the supervisor saw of one loop: how often it was restarted and its last panic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerRestarts {
    pub restarts: u64,
    pub last_panic: String,
}

/// The restarts of every supervised loop, by worker name, for `/readyz`. Cheap to clone (one
/// map behind a lock, written only when a loop panics).
#[derive(Clone, Debug, Default)]
pub struct Workers(Arc<Mutex<BTreeMap<&'static str, WorkerRestarts>>>);

impl Workers {
    /// Counts a restart of `worker` after `panic`.
    pub fn record_panic(&self, worker: &'static str, panic: String) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map.entry(worker).or_default();
        entry.restarts += 1;
        entry.last_panic = panic;
    }

    /// Every loop restarted at least once, by name.
    pub fn restarted(&self) -> BTreeMap<&'static str, WorkerRestarts> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Runs `make()` as a task, and again after each panic (see the module; each restart is
/// recorded in `workers`), until it returns or `stop` turns true. The returned handle ends
/// when the loop has ended for good.
pub fn supervise<F, Fut>(
    worker: &'static str,
    workers: Workers,
    stop: watch::Receiver<bool>,
    make: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    // Exported at zero from the start, so "never restarted" reads as 0, not as absent.
    metrics::counter!("coupond_worker_restarts_total", "worker" => worker).increment(0);
    tokio::spawn(async move {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let started = tokio::time::Instant::now();
            let Err(e) = tokio::spawn(make()).await else {
                return;
            };
            if *stop.borrow() || !e.is_panic() {
                return;
            }
            if started.elapsed() >= MAX_BACKOFF {
                backoff = FIRST_BACKOFF;
            }
            let message = panic_message(e);
            tracing::error!(worker, error = %message, ?backoff, "a background loop panicked; restarting it");
            metrics::counter!("coupond_worker_restarts_total", "worker" => worker).increment(1);
            workers.record_panic(worker, message);
            let mut stop = stop.clone();
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    })
}

/// What a panicking task said, when it said it with a string.
fn panic_message(e: tokio::task::JoinError) -> String {
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A loop that panics on its first two runs is run a third time, after the backoffs (in
    /// paused time), and the supervisor ends when that run returns on shutdown.
    #[tokio::test(start_paused = true)]
    async fn a_panicking_loop_is_restarted_until_shutdown() {
        let runs = Arc::new(AtomicUsize::new(0));
        let workers = Workers::default();
        let (stop_tx, stop_rx) = watch::channel(false);
        let (third_tx, mut third_rx) = tokio::sync::mpsc::channel::<()>(1);
        let handle = {
            let (runs, stop_rx) = (runs.clone(), stop_rx.clone());
            supervise("test", workers.clone(), stop_rx.clone(), move || {
                let (runs, mut stop, third) = (runs.clone(), stop_rx.clone(), third_tx.clone());
                async move {
                    if runs.fetch_add(1, Ordering::SeqCst) < 2 {
                        panic!("boom");
                    }
                    third.send(()).await.unwrap();
                    let _ = stop.wait_for(|s| *s).await;
                }
            })
        };
        let started = tokio::time::Instant::now();
        third_rx.recv().await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert!(
            started.elapsed() >= FIRST_BACKOFF * 3,
            "backed off 1 s, then 2 s"
        );
        let seen = workers.restarted();
        assert_eq!(seen["test"].restarts, 2);
        assert_eq!(seen["test"].last_panic, "boom");
        stop_tx.send(true).unwrap();
        handle.await.unwrap();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "not restarted after shutdown"
        );
    }
}
