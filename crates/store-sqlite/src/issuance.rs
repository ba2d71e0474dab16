//! Bulk issuance jobs on SQLite: each chunk is one `BEGIN IMMEDIATE` transaction holding the
//! claims and the job's progress together, on SQLite's claim path (the claim writer's thread,
//! see `writer`). The jobs' bookkeeping and the chunk's statements are written once in
//! `coupond_store_sql::issuance`.

use coupond_domain::{Timestamp, UserId};
use coupond_store::{ClaimOutcome, Issuance, StoreError, StoreResult};
use coupond_store_sql::{issuance, sql, Db, Work};
use rusqlite::Connection;

use crate::claims::claim_in;
use crate::store::SqliteStore;
use crate::writer::{immediate, now_or_never, RawExec};

/// A chunk's answer: done, or the job's next user was not the one its users were cut for.
enum Chunk {
    Done(Option<Box<Issuance>>),
    Moved(usize),
}

/// The users a chunk starting at user `from` works on (the job's list cut to them: the writer
/// thread takes its own copy), with the list's length.
struct Window {
    from: usize,
    users: Vec<UserId>,
    total: usize,
}

fn chunk(
    c: &mut Connection,
    db: &SqliteStore,
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

coupond_store_sql::impl_issuance_store!(SqliteStore, {
    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        // Where the job stands, read first so that only this chunk's users travel to the
        // writer thread; checked again in the chunk's transaction, and cut again if another
        // chunk of the job committed in between.
        let q = sql("SELECT next_user FROM issuances WHERE id = $1").bind(id);
        let Some(row) = self.read_optional(q).await? else {
            return Ok(None);
        };
        let mut from = usize::try_from(row.i64("next_user")?).map_err(StoreError::other)?;
        loop {
            let start = from.min(users.len());
            let end = (start + max as usize).min(users.len());
            let w = Window {
                from,
                users: users[start..end].to_vec(),
                total: users.len(),
            };
            let db = self.clone();
            let done = self
                .on_writer(Work::Background, move |c| {
                    immediate(c, |c| chunk(c, &db, id, &w, now))
                })
                .await?;
            match done {
                Chunk::Done(job) => return Ok(job.map(|j| *j)),
                Chunk::Moved(next) => from = next,
            }
        }
    }
});
