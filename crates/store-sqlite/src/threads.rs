//! `rusqlite` connections on threads of their own, taking jobs from one queue: the claim
//! writer (one connection, see `writer`) and the wallet readers (a few read-only ones).
//!
//! Through sqlx every statement is a hop to sqlx's connection thread and back (a channel send,
//! a wake-up, a task poll), and every row returned is another. A job here runs start to finish
//! on its connection's thread: one hop, however many statements and rows.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use coupond_store::{StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};

use crate::writer::sql_err;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The handle to the threads; they end (closing their connections) when the handle is closed
/// or dropped.
pub(crate) struct ConnThreads {
    /// What the threads' jobs are called, for errors.
    name: &'static str,
    /// The job queue; `None` once closed. The mutex lets [`ConnThreads::close`] drop the
    /// sender through the shared handle; it is held for one send.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    /// The threads, joined by [`ConnThreads::close`].
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for ConnThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl ConnThreads {
    /// Starts a thread per connection, named `name`.
    pub(crate) fn spawn(name: &'static str, conns: Vec<Connection>) -> StoreResult<ConnThreads> {
        let (tx, rx) = mpsc::channel::<Job>();
        // Shared by the threads: whichever is idle takes the next job. The lock is held while
        // one idle thread waits for a job; the others wait for the lock.
        let rx = Arc::new(Mutex::new(rx));
        let threads = conns
            .into_iter()
            .map(|conn| {
                let rx = rx.clone();
                std::thread::Builder::new()
                    .name(format!("coupond-{name}"))
                    .spawn(move || serve(conn, &rx))
                    .map_err(StoreError::other)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(ConnThreads {
            name,
            jobs: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
        })
    }

    /// Runs `f` on one of the threads and waits for its answer.
    pub(crate) async fn run<R, F>(&self, f: F) -> StoreResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<R> + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |c| {
            let _ = answer.send(f(c));
        });
        let sent = match self.jobs.lock() {
            Ok(jobs) => jobs.as_ref().is_some_and(|j| j.send(job).is_ok()),
            Err(_) => false,
        };
        if !sent {
            return Err(StoreError::Unavailable("the store is closed".into()));
        }
        answered.await.map_err(|_| {
            StoreError::other(format!("the {} thread failed before answering", self.name))
        })?
    }

    /// Stops the threads once the jobs already queued have run, and waits for them: their
    /// connections are closed when this returns.
    pub(crate) async fn close(&self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        let threads = self
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        if !threads.is_empty() {
            let _ = tokio::task::spawn_blocking(move || {
                for t in threads {
                    let _ = t.join();
                }
            })
            .await;
        }
    }
}

/// A thread: jobs until the queue closes. A job that panics has its transaction rolled back
/// and its caller told; the thread goes on.
fn serve(mut conn: Connection, jobs: &Mutex<mpsc::Receiver<Job>>) {
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        if std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut conn))).is_err()
            && !conn.is_autocommit()
        {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
}

/// Statements a wallet reader keeps prepared: the wallet page in its few shapes.
const READER_STATEMENTS: usize = 16;

/// `n` read-only connections to the database at `path` (which must exist, in WAL mode), on
/// threads of their own: a user's wallet is read there (`claims::user_coupons`).
pub(crate) fn open_readers(path: &Path, n: u32, busy: Duration) -> StoreResult<ConnThreads> {
    let conns = (0..n.max(1))
        .map(|_| {
            let conn = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(sql_err)?;
            conn.busy_timeout(busy).map_err(sql_err)?;
            conn.set_prepared_statement_cache_capacity(READER_STATEMENTS);
            Ok(conn)
        })
        .collect::<StoreResult<Vec<_>>>()?;
    ConnThreads::spawn("sqlite-wallet", conns)
}
