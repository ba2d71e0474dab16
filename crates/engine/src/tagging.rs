//! The tag worker: works through open bulk tag uploads a chunk at a time.
//!
//! Each chunk is one transaction in the store ([`TagStore::tag_chunk`](coupond_store::TagStore::tag_chunk)):
//! the pairs and the upload's progress commit together, so after a crash (kill -9 included)
//! the next chunk starts where the last committed one ended. On PostgreSQL and MariaDB an
//! upload being worked on by another instance is skipped, so instances share the open uploads.
//! Each upload's pairs are read once per upload and process ([`Lists`]).

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::{Tag, UserId};
use coupond_store::{IssuanceState, Store, StoreResult, TagUpload};
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::jobs::Lists;
use crate::pacing::Pacer;
use crate::worker::{Pass, Worker};

/// Most pairs per transaction (the [`Pacer`] may take fewer).
pub const CHUNK: u32 = 1_000;

/// How long the loop sleeps with nothing to do, unless woken.
const IDLE: Duration = Duration::from_secs(1);

/// The worker. Cheap to clone; clones share the cache and the waker.
#[derive(Clone)]
pub struct TagWorker {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    pairs: Lists<(UserId, Tag)>,
    wake: Arc<Notify>,
    pacer: Arc<Pacer>,
}

impl std::fmt::Debug for TagWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TagWorker").finish_non_exhaustive()
    }
}

fn open(u: &TagUpload) -> bool {
    matches!(u.state, IssuanceState::Pending | IssuanceState::Running)
}

impl TagWorker {
    /// Chunks are sized to take about `txn_target` each (zero: always [`CHUNK`] pairs).
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, txn_target: Duration) -> Self {
        TagWorker {
            store,
            clock,
            pairs: Lists::default(),
            wake: Arc::new(Notify::new()),
            pacer: Arc::new(Pacer::new(txn_target, CHUNK)),
        }
    }

    /// Tells the loop an upload is waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// One chunk of upload `id`; `None` if it is not open or another instance holds it now.
    pub async fn step(&self, id: i64) -> StoreResult<Option<TagUpload>> {
        let pairs = self.pairs.get(id, self.store.tag_upload_pairs(id)).await?;
        let size = self.pacer.size();
        let started = std::time::Instant::now();
        let upload = self
            .store
            .tag_chunk(id, &pairs, size, self.clock.now())
            .await?;
        match &upload {
            // A full chunk: the upload is still open after it.
            Some(u) if open(u) => self.pacer.record(size, started.elapsed()),
            _ => self.pairs.forget(id),
        }
        Ok(upload)
    }

    /// One chunk of the oldest open upload this instance can take; `None` with nothing to do.
    pub async fn run_once(&self) -> StoreResult<Option<TagUpload>> {
        for id in self.store.open_tag_uploads().await? {
            if let Some(upload) = self.step(id).await? {
                return Ok(Some(upload));
            }
        }
        Ok(None)
    }
}

/// Works chunk after chunk while uploads are open, then sleeps until woken (or [`IDLE`]).
#[async_trait::async_trait]
impl Worker for TagWorker {
    fn name(&self) -> &'static str {
        "tagging"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await? {
            Some(_) => Pass::Busy,
            None => Pass::Idle(IDLE),
        })
    }

    fn retry_after(&self) -> Duration {
        IDLE
    }

    fn waker(&self) -> Option<&Notify> {
        Some(&self.wake)
    }
}
