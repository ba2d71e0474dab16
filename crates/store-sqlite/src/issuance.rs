//! Bulk issuance jobs on SQLite: each chunk is one `BEGIN IMMEDIATE` transaction holding the
//! claims and the job's progress together, on SQLite's claim path (the claim writer's thread,
//! see `writer`). The jobs' bookkeeping and the chunk's statements are written once in
//! `coupond_store_sql::issuance`.

use coupond_domain::{Timestamp, UserId};
use coupond_store::{ClaimOutcome, Issuance, StoreError, StoreResult};
use coupond_store_sql::issuance;
use rusqlite::Connection;

use crate::claims::claim_in;
use crate::store::SqliteDb;
use crate::writer::{now_or_never, RawExec};

/// A chunk's answer: done, or the job's next user was not the one its users were cut for.
pub(crate) enum Chunk {
    Done(Option<Box<Issuance>>),
    Moved(usize),
}

/// The users a chunk starting at user `from` works on (the job's list cut to them: the writer
/// thread takes its own copy), with the list's length.
pub(crate) struct Window {
    pub(crate) from: usize,
    pub(crate) users: Vec<UserId>,
    pub(crate) total: usize,
}

pub(crate) fn chunk(
    c: &mut Connection,
    db: &SqliteDb,
    id: i64,
    w: &Window,
    now: Timestamp,
) -> StoreResult<Chunk> {
    let Some((job, template)) = now_or_never(issuance::chunk_start(&mut RawExec(c), db, id))?
    else {
        return Ok(Chunk::Done(None));
    };
    if w.total as u64 != job.requested {
        return Err(StoreError::other("the users given are not the job's"));
    }
    if job.next_user as usize != w.from {
        return Ok(Chunk::Moved(job.next_user as usize));
    }
    let to = w.from + w.users.len();
    let (claims, not_eligible) = issuance::chunk_claims(&job, &template, &w.users, now);
    let out = claim_in(c, template.id, &claims, now)?;
    // The chunk's coupons written, the job's progress not yet.
    coupond_store::failpoints::hit("issuance.mid_chunk")?;
    let mut ex = RawExec(c);
    let job = if out.contains(&ClaimOutcome::NotClaimable) {
        // Nothing of this chunk was written; the job stops here.
        now_or_never(issuance::chunk_stopped(&mut ex, id, &template, now))?
    } else {
        let done = to == w.total;
        let job = issuance::chunk_done(&mut ex, id, to, done, &out, not_eligible, now);
        Some(now_or_never(job)?)
    };
    Ok(Chunk::Done(job.map(Box::new)))
}
