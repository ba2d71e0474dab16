//! Bulk issuance jobs on SQLite: each chunk is one `BEGIN IMMEDIATE` transaction holding the
//! claims and the job's progress together.

use async_trait::async_trait;
use coupond_domain::{Timestamp, UserId};
use coupond_store::events::{self, kind};
use coupond_store::IssuanceStore;
use coupond_store::{ClaimOutcome, ClaimRequest, Issuance, NewIssuance, StoreError, StoreResult};

use crate::claims::claim_in;
use crate::rows::{self, db_err};
use crate::store::{us, SqliteStore, TEMPLATE_COLS};

/// Every column of a job but its user list (read only by `issuance_users`).
const ISSUANCE_COLS: &str =
    "id, template_id, actor, state, requested, next_user, issued, skipped, sold_out, not_eligible, duplicates, invalid, invalid_lines, error, created_at, started_at, finished_at, key_fingerprint";

#[async_trait]
impl IssuanceStore for SqliteStore {
    async fn insert_issuance(
        &self,
        new: &NewIssuance<'_>,
        now: Timestamp,
    ) -> StoreResult<(Issuance, bool)> {
        let users: Vec<&str> = new.users.iter().map(UserId::as_str).collect();
        let row = sqlx::query(&format!(
            "INSERT INTO issuances (template_id, actor, state, users, requested, duplicates,
                                    invalid, invalid_lines, created_at, idempotency_key,
                                    key_fingerprint)
             VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (idempotency_key) DO NOTHING RETURNING {ISSUANCE_COLS}"
        ))
        .bind(new.template.get())
        .bind(new.actor.to_text())
        .bind(users.join("\n").into_bytes())
        .bind(new.users.len() as i64)
        .bind(new.duplicates as i64)
        .bind(new.invalid as i64)
        .bind(serde_json::to_string(new.invalid_lines).map_err(StoreError::other)?)
        .bind(us(now))
        .bind(new.key.map(|k| k.key))
        .bind(new.key.map(|k| k.fingerprint.to_vec()))
        .fetch_optional(&self.writer)
        .await
        .map_err(db_err)?;
        match (row, new.key) {
            (Some(row), _) => Ok((rows::issuance(&row)?, true)),
            // The key made a job already: that job, unchanged.
            (None, Some(key)) => {
                let row = sqlx::query(&format!(
                    "SELECT {ISSUANCE_COLS} FROM issuances WHERE idempotency_key = ?"
                ))
                .bind(key.key)
                .fetch_one(&self.writer)
                .await
                .map_err(db_err)?;
                Ok((rows::issuance(&row)?, false))
            }
            (None, None) => Err(StoreError::other("an unkeyed job was not inserted")),
        }
    }

    async fn issuance(&self, id: i64) -> StoreResult<Issuance> {
        let row = sqlx::query(&format!(
            "SELECT {ISSUANCE_COLS} FROM issuances WHERE id = ?"
        ))
        .bind(id)
        .fetch_optional(&self.reader)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        rows::issuance(&row)
    }

    async fn open_issuances(&self) -> StoreResult<Vec<i64>> {
        sqlx::query_scalar(
            "SELECT id FROM issuances WHERE state IN ('pending', 'running') ORDER BY id",
        )
        .fetch_all(&self.reader)
        .await
        .map_err(db_err)
    }

    async fn issuance_users(&self, id: i64) -> StoreResult<Vec<UserId>> {
        let blob: Vec<u8> = sqlx::query_scalar("SELECT users FROM issuances WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::user_list(&blob)
    }

    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        let (_turn, mut tx) = self.begin_background().await?;
        let Some(row) =
            sqlx::query(&format!("SELECT {ISSUANCE_COLS} FROM issuances WHERE id = ? AND state IN ('pending', 'running')"))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?
        else {
            return Ok(None);
        };
        let job = rows::issuance(&row)?;
        if users.len() as u64 != job.requested {
            return Err(StoreError::other("the users given are not the job's"));
        }
        let row = sqlx::query(&format!(
            "SELECT {TEMPLATE_COLS} FROM templates WHERE id = ?"
        ))
        .bind(job.template_id.get())
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let template = rows::template(&row)?;
        let from = job.next_user as usize;
        let to = (from + max as usize).min(users.len());
        let (valid_from, valid_until) = template.spec.validity.for_claim(now);
        let mut not_eligible = 0;
        let claims: Vec<ClaimRequest> = users[from..to]
            .iter()
            .filter(|u| {
                let ok = template.spec.audience.admits(u);
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
                issuance: Some(id),
            })
            .collect();
        let out = claim_in(&mut tx, template.id, &claims, now).await?;
        // The chunk's coupons written, the job's progress not yet.
        coupond_store::failpoints::hit("issuance.mid_chunk")?;
        if out.contains(&ClaimOutcome::NotClaimable) {
            // Nothing of this chunk was written; the job stops here.
            let why = format!(
                "template {} is {}, not claimable: issuance stopped",
                template.id,
                template.status(now).as_str()
            );
            let row = sqlx::query(&format!(
                "UPDATE issuances SET state = 'failed', error = ?, finished_at = ?,
                     started_at = COALESCE(started_at, ?)
                 WHERE id = ? RETURNING {ISSUANCE_COLS}"
            ))
            .bind(why)
            .bind(us(now))
            .bind(us(now))
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            let failed = rows::issuance(&row)?;
            tx.commit().await.map_err(db_err)?;
            return Ok(Some(failed));
        }
        let count = |k: fn(&ClaimOutcome) -> bool| out.iter().filter(|o| k(o)).count() as i64;
        let done = to == users.len();
        let row = sqlx::query(&format!(
            "UPDATE issuances SET next_user = ?, issued = issued + ?, skipped = skipped + ?,
                 sold_out = sold_out + ?, not_eligible = not_eligible + ?,
                 state = ?, started_at = COALESCE(started_at, ?), finished_at = ?
             WHERE id = ? RETURNING {ISSUANCE_COLS}"
        ))
        .bind(to as i64)
        .bind(count(|o| matches!(o, ClaimOutcome::Issued(_))))
        .bind(count(|o| *o == ClaimOutcome::LimitReached))
        .bind(count(|o| *o == ClaimOutcome::SoldOut))
        .bind(not_eligible as i64)
        .bind(if done { "done" } else { "running" })
        .bind(us(now))
        .bind(done.then(|| us(now)))
        .bind(id)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let job = rows::issuance(&row)?;
        if done {
            sqlx::query("INSERT INTO outbox (kind, at, body) VALUES (?, ?, ?)")
                .bind(kind::ISSUANCE_FINISHED)
                .bind(us(now))
                .bind(events::issuance_finished(&job))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(Some(job))
    }
}
