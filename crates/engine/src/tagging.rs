//! The tag worker: a kind of chunked job ([`Tagging`], run by [`Jobs`]) that works through
//! open bulk tag uploads a chunk at a time, their uploaders taking turns.
//!
//! Each chunk is one transaction in the store ([`TagStore::tag_chunk`](coupond_store::TagStore::tag_chunk)):
//! the pairs and the upload's progress commit together, so after a crash (kill -9 included)
//! the next chunk starts where the last committed one ended. On PostgreSQL and MariaDB an
//! upload being worked on by another instance is skipped, so instances share the open uploads.
//! Each upload's pairs are read once per upload and process ([`Lists`]).

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::{Tag, Timestamp, UserId};
use coupond_store::{IssuanceState, OpenJob, Store, StoreResult, TagUpload};

use crate::jobs::{JobKind, Jobs, Lists};

/// Most pairs per transaction (the pacer may take fewer).
pub const CHUNK: u32 = 1_000;

/// How long the loop sleeps with nothing to do, unless woken.
const IDLE: Duration = Duration::from_secs(1);

/// Bulk tag uploads as a kind of chunked job ([`Jobs`]): each upload's pairs are read once
/// per upload and process ([`Lists`]).
#[derive(Debug, Default)]
pub struct Tagging {
    pairs: Lists<(UserId, Tag)>,
}

/// The tag worker.
pub type TagWorker = Jobs<Tagging>;

#[async_trait::async_trait]
impl JobKind for Tagging {
    type Job = TagUpload;
    const NAME: &'static str = "tagging";
    const CHUNK: u32 = CHUNK;
    const IDLE: Duration = IDLE;

    async fn open(&self, store: &Arc<dyn Store>) -> StoreResult<Vec<OpenJob>> {
        store.open_tag_uploads().await
    }

    async fn chunk(
        &self,
        store: &Arc<dyn Store>,
        id: i64,
        size: u32,
        now: Timestamp,
    ) -> StoreResult<Option<TagUpload>> {
        let pairs = self.pairs.get(id, store.tag_upload_pairs(id)).await?;
        store.tag_chunk(id, &pairs, size, now).await
    }

    fn is_open(u: &TagUpload) -> bool {
        matches!(u.state, IssuanceState::Pending | IssuanceState::Running)
    }

    fn forget(&self, id: i64) {
        self.pairs.forget(id);
    }
}
