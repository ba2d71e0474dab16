//! Bulk issuance jobs ([`IssuanceStore`](coupond_store::IssuanceStore)), on every backend
//! but for their claims: inserting a job (once per idempotency key), reading it, the open
//! jobs and a job's users, and the bookkeeping of each chunk.
//!
//! `issue_chunk` runs a backend's own claim path inside the chunk's transaction, so it is a
//! [`Backend`](crate::Backend) method. Around its claims, in that transaction: [`plan_chunk`]
//! ([`chunk_start`]: the open job, locked where writers run at once, and its template; then
//! [`chunk_claims`]), then [`chunk_done`] or, when the template cannot be claimed,
//! [`chunk_stopped`].

use coupond_domain::{Template, TemplateId, Timestamp, UserId};
use coupond_store::events::{self, kind};
use coupond_store::{
    ClaimOutcome, ClaimRequest, Issuance, NewIssuance, OpenJob, Page, StoreError, StoreResult,
};

use crate::rows::{issuance as issuance_row, template as template_row, user_list};
use crate::{sql, Db, Exec, Json, Work};

/// Every column of a job but its user list (read only by [`issuance_users`]).
pub const ISSUANCE_COLS: &str = "id, template_id, actor, state, requested, next_user, issued, \
     skipped, sold_out, not_eligible, duplicates, invalid, invalid_lines, error, created_at, \
     started_at, finished_at, key_fingerprint";

/// Inserts a pending job; `false` with the job the key made before if `new.key` was used.
pub async fn insert_issuance(
    db: &dyn Db,
    new: &NewIssuance<'_>,
    now: Timestamp,
) -> StoreResult<(Issuance, bool)> {
    let users: Vec<&str> = new.users.iter().map(UserId::as_str).collect();
    let q = sql(format!(
        "INSERT INTO issuances (template_id, actor, state, users, requested, duplicates,
                                invalid, invalid_lines, created_at, idempotency_key,
                                key_fingerprint)
         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10){} RETURNING {ISSUANCE_COLS}",
        db.dialect().on_conflict_nothing("idempotency_key")
    ))
    .bind(new.template.get())
    .bind(new.actor.to_text())
    .bind(users.join("\n").into_bytes())
    .bind(new.users.len() as i64)
    .bind(new.duplicates as i64)
    .bind(new.invalid as i64)
    .bind(serde_json::to_string(new.invalid_lines).map_err(StoreError::other)?)
    .bind(now)
    .bind(new.key.map(|k| k.key))
    .bind(new.key.map(|k| k.fingerprint.to_vec()));
    insert_once(
        db,
        q,
        "issuances",
        ISSUANCE_COLS,
        new.key.map(|k| k.key),
        issuance_row,
    )
    .await
}

/// Runs `insert` (an `INSERT ... RETURNING cols` that skips a row whose `idempotency_key`
/// is taken) in one transaction; if it inserted nothing, reads the row `key` already made in
/// `table`. The row, and whether it is new. Bulk issuances and tag uploads both keep their
/// upload's key this way.
pub(crate) async fn insert_once<T>(
    db: &dyn Db,
    insert: crate::Query,
    table: &str,
    cols: &str,
    key: Option<&str>,
    row: fn(&crate::Row) -> StoreResult<T>,
) -> StoreResult<(T, bool)> {
    let mut tx = db.begin(Work::Request).await?;
    let inserted = tx.fetch_optional(insert).await?;
    let out = match (inserted, key) {
        (Some(r), _) => {
            coupond_store::audit::created(r.i64("id")?);
            (row(&r)?, true)
        }
        // The key made a row already: that row, unchanged (and no change to record).
        (None, Some(key)) => {
            coupond_store::audit::discard();
            let q = sql(format!(
                "SELECT {cols} FROM {table} WHERE idempotency_key = $1"
            ))
            .bind(key);
            (row(&tx.fetch_one(q).await?)?, false)
        }
        (None, None) => return Err(StoreError::other("an unkeyed row was not inserted")),
    };
    tx.commit().await?;
    Ok(out)
}

pub async fn issuance(db: &dyn Db, id: i64) -> StoreResult<Issuance> {
    let q = sql(format!(
        "SELECT {ISSUANCE_COLS} FROM issuances WHERE id = $1"
    ))
    .bind(id);
    issuance_row(&db.read_one(q).await?)
}

pub async fn template_issuances(
    db: &dyn Db,
    template: TemplateId,
    page: Page,
) -> StoreResult<Vec<Issuance>> {
    let q = sql(format!(
        "SELECT {ISSUANCE_COLS} FROM issuances WHERE template_id = $1 AND id > $2
         ORDER BY id LIMIT $3"
    ))
    .bind(template.get())
    .bind(page.after.unwrap_or(0))
    .bind(page.limit);
    db.read_all(q).await?.iter().map(issuance_row).collect()
}

/// The jobs not finished yet, oldest first, with their owners.
pub async fn open_issuances(db: &dyn Db) -> StoreResult<Vec<OpenJob>> {
    let q = sql("SELECT i.id, COALESCE(t.merchant_id, 0) AS owner
         FROM issuances i JOIN templates t ON t.id = i.template_id
         WHERE i.state IN ('pending', 'running') ORDER BY i.id");
    db.read_all(q)
        .await?
        .iter()
        .map(crate::codes::open_job)
        .collect()
}

/// Users still to be issued by `owner`'s open jobs.
pub async fn queued_issuance_users(db: &dyn Db, owner: i64) -> StoreResult<i64> {
    let q = sql(format!(
        "SELECT COALESCE({}, 0) AS n
         FROM issuances i JOIN templates t ON t.id = i.template_id
         WHERE i.state IN ('pending', 'running') AND COALESCE(t.merchant_id, 0) = $1",
        db.dialect().sum("i.requested - i.next_user")
    ))
    .bind(owner);
    db.read_one(q).await?.i64("n")
}

pub async fn issuance_users(db: &dyn Db, id: i64) -> StoreResult<Vec<UserId>> {
    let q = sql("SELECT users FROM issuances WHERE id = $1").bind(id);
    user_list(db.read_one(q).await?.bytes("users")?)
}

/// The next chunk of a running job, planned in the chunk's transaction.
#[derive(Debug)]
pub struct ChunkPlan {
    pub job: Issuance,
    pub template: Template,
    /// The claims of the chunk's users in the template's audience.
    pub claims: Vec<ClaimRequest>,
    /// The chunk's users outside the audience.
    pub not_eligible: u64,
    /// Where the job's list stands once the chunk is done.
    pub to: usize,
}

/// The next chunk of job `id`, at most `max` of `users` (the job's list), in the chunk's
/// transaction (see [`chunk_start`]); `None` if the job is no longer open.
pub async fn plan_chunk<E: Exec + ?Sized>(
    ex: &mut E,
    db: &dyn Db,
    id: i64,
    users: &[UserId],
    max: u32,
    now: Timestamp,
) -> StoreResult<Option<ChunkPlan>> {
    let Some((job, template)) = chunk_start(ex, db, id).await? else {
        return Ok(None);
    };
    if users.len() as u64 != job.requested {
        return Err(StoreError::other("the users given are not the job's"));
    }
    let from = job.next_user as usize;
    let to = (from + max as usize).min(users.len());
    let (claims, not_eligible) = chunk_claims(&job, &template, &users[from..to], now);
    Ok(Some(ChunkPlan {
        job,
        template,
        claims,
        not_eligible,
        to,
    }))
}

/// The job `id` if it is still open, with its template, in the chunk's transaction. Where
/// writers run at once the job's row is taken `FOR UPDATE SKIP LOCKED`: instances share the
/// open jobs, and one job's chunks never run at once.
pub async fn chunk_start<E: Exec + ?Sized>(
    ex: &mut E,
    db: &dyn Db,
    id: i64,
) -> StoreResult<Option<(Issuance, Template)>> {
    let lock = db.dialect().lock_rows_skip_locked();
    let q = sql(format!(
        "SELECT {ISSUANCE_COLS} FROM issuances WHERE id = $1 AND state IN ('pending', 'running'){lock}"
    ))
    .bind(id);
    let Some(row) = ex.fetch_optional(q).await? else {
        return Ok(None);
    };
    let job = issuance_row(&row)?;
    let q = sql(format!(
        "SELECT {} FROM templates WHERE id = $1",
        db.dialect().template_columns()
    ))
    .bind(job.template_id.get());
    let template = template_row(&ex.fetch_one(q).await?)?;
    Ok(Some((job, template)))
}

/// The claims of a chunk (`users`, the job's next ones) for the users in the template's
/// audience, and how many are not.
pub fn chunk_claims(
    job: &Issuance,
    template: &Template,
    users: &[UserId],
    now: Timestamp,
) -> (Vec<ClaimRequest>, u64) {
    let (valid_from, valid_until) = template.spec.validity.for_claim(now);
    let mut not_eligible = 0;
    let claims = users
        .iter()
        .filter(|u| {
            // A tag audience is checked by the claim path, in the chunk's transaction.
            let ok = template.spec.audience.admits(u) != Some(false);
            not_eligible += u64::from(!ok);
            ok
        })
        .map(|u| ClaimRequest {
            user: u.clone(),
            actor: job.actor.clone(),
            valid_from,
            valid_until,
            idempotency: None,
            code: None,
            issuance: Some(job.id),
            channel: coupond_domain::Channel::Issuance(job.id),
            source: None,
        })
        .collect();
    (claims, not_eligible)
}

/// Fails open job `id` because `template` is not claimable at `now`; the job as it ends, or
/// `None` if it was no longer open, or if the template is only paused: the job waits, and
/// goes on after the resume.
pub async fn chunk_stopped<E: Exec + ?Sized>(
    ex: &mut E,
    id: i64,
    template: &Template,
    now: Timestamp,
) -> StoreResult<Option<Issuance>> {
    let why = format!(
        "template {} is {}, not claimable: issuance stopped",
        template.id,
        template.status(now).as_str()
    );
    let q = sql(format!(
        "UPDATE issuances SET state = 'failed', error = $1, finished_at = $2,
             started_at = COALESCE(started_at, $2)
         WHERE id = $3 AND state IN ('pending', 'running')
           AND NOT EXISTS (SELECT 1 FROM templates WHERE id = $4 AND paused_at IS NOT NULL
                           AND aborted_at IS NULL AND claim_end > $2)
         RETURNING {ISSUANCE_COLS}"
    ))
    .bind(why)
    .bind(now)
    .bind(id)
    .bind(template.id.get());
    ex.fetch_optional(q)
        .await?
        .map(|r| issuance_row(&r))
        .transpose()
}

/// Records a chunk's outcomes `out` (and `not_eligible` users passed over before the claims,
/// besides those the claim path found outside a tag audience) on job `id`, whose
/// next user is now `to`, finishing it (with its `issuance.finished` event) if `done`.
pub async fn chunk_done<E: Exec + ?Sized>(
    ex: &mut E,
    id: i64,
    to: usize,
    done: bool,
    out: &[ClaimOutcome],
    not_eligible: u64,
    now: Timestamp,
) -> StoreResult<Issuance> {
    let count = |k: fn(&ClaimOutcome) -> bool| out.iter().filter(|o| k(o)).count() as i64;
    let q = sql(format!(
        "UPDATE issuances SET next_user = $1, issued = issued + $2, skipped = skipped + $3,
             sold_out = sold_out + $4, not_eligible = not_eligible + $5,
             state = $6, started_at = COALESCE(started_at, $7), finished_at = $8
         WHERE id = $9 RETURNING {ISSUANCE_COLS}"
    ))
    .bind(to as i64)
    .bind(count(|o| matches!(o, ClaimOutcome::Issued(_))))
    .bind(count(|o| *o == ClaimOutcome::LimitReached))
    .bind(count(|o| *o == ClaimOutcome::SoldOut))
    .bind(not_eligible as i64 + count(|o| *o == ClaimOutcome::NotEligible))
    .bind(if done { "done" } else { "running" })
    .bind(now)
    .bind(done.then_some(now))
    .bind(id);
    let job = issuance_row(&ex.fetch_one(q).await?)?;
    if done {
        ex.execute(
            sql("INSERT INTO outbox (kind, at, body) VALUES ($1, $2, $3)")
                .bind(kind::ISSUANCE_FINISHED)
                .bind(now)
                .bind(Json(events::issuance_finished(&job))),
        )
        .await?;
    }
    Ok(job)
}
