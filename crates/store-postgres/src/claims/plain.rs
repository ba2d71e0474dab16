//! Plain claim batches in one round trip: `coupond_claim_plain` (migrations 0015, 0017: the
//! tag audience, 0021: the stock taken last, 0032: channels and sources, so `template.sold_out` follows the batch's own
//! `coupon.claimed` events) does the whole batch server-side, in autocommit, so BEGIN and COMMIT cost no round trips of their
//! own. The coupons' `coupon.claimed` bodies are built here (the database sets their
//! `coupon_id`), so the event format has one author.

use std::collections::HashSet;

use coupond_domain::{CouponId, TemplateId, Timestamp};
use coupond_store::events;
use coupond_store::{failpoints, ClaimOutcome, ClaimRequest, StoreError, StoreResult};

use super::sold_out_body;
use crate::rows::db_err;
use crate::store::{dt, PgDb};

/// The SQLSTATE `coupond_claim_plain` raises when no shard holds the whole batch.
const RETRY: &str = "CPRTY";

const CALL: &str = "SELECT coupond_claim_plain($1, $2, $3, $4, $5, $6, $7, $8, \
     $9::text[]::jsonb[], $10::jsonb, $11, $12)";

/// Whether the batch can take the one-call path: no idempotency keys, no single-use codes, no
/// bulk-issuance claims, and each user once (the function counts one slot per user).
pub(crate) fn fits(claims: &[ClaimRequest]) -> bool {
    let mut users = HashSet::with_capacity(claims.len());
    claims.iter().all(|c| {
        c.idempotency.is_none()
            && c.issuance.is_none()
            && !c.code.as_ref().is_some_and(|k| k.single_use)
            && users.insert(c.user.as_str())
    })
}

impl PgDb {
    /// Runs a plain batch (see [`fits`]). `None`: no shard held the whole batch and nothing
    /// was written; the caller runs it in exact mode.
    pub(crate) async fn claim_plain(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
        start: i32,
    ) -> StoreResult<Option<Vec<ClaimOutcome>>> {
        let n = claims.len();
        let (mut users, mut froms, mut untils) = (vec![], vec![], vec![]);
        let (mut actors, mut codes, mut bodies) = (vec![], vec![], vec![]);
        let (mut channels, mut sources) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for r in claims {
            let c = r.coupon(CouponId::new(1).map_err(StoreError::other)?, template, now);
            bodies.push(events::coupon_claimed(&c, &r.actor, None).1);
            users.push(r.user.as_str());
            froms.push(dt(r.valid_from));
            untils.push(dt(r.valid_until));
            actors.push(r.actor.to_text());
            codes.push(r.code.as_ref().map(|k| k.code.as_str()));
            channels.push(r.channel.to_text());
            sources.push(r.source.as_ref().map(|s| s.as_str()));
        }
        let query = sqlx::query_scalar::<_, Option<Vec<i64>>>(CALL)
            .bind(template.get())
            .bind(dt(now))
            .bind(start)
            .bind(&users)
            .bind(&froms)
            .bind(&untils)
            .bind(&actors)
            .bind(&codes)
            .bind(&bodies)
            .bind(sold_out_body(template))
            .bind(&channels)
            .bind(&sources);
        // Failpoint builds run it in an explicit transaction, so the claim points can fire
        // between the batch's writes and its commit.
        let result = if failpoints::ENABLED {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            let ids = query.fetch_one(&mut *tx).await;
            if ids.is_ok() {
                failpoints::hit("claim.mid_batch")?;
                failpoints::hit("claim.before_commit")?;
                tx.commit().await.map_err(db_err)?;
            }
            ids
        } else {
            query.fetch_one(&self.pool).await
        };
        let ids = match result {
            Ok(ids) => ids,
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(RETRY) => return Ok(None),
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("P0002") => {
                return Err(StoreError::NotFound)
            }
            Err(e) => return Err(db_err(e)),
        };
        let Some(ids) = ids else {
            return Ok(Some(vec![ClaimOutcome::NotClaimable; n]));
        };
        if ids.len() != n {
            return Err(StoreError::other(
                "the claim function answered another batch size",
            ));
        }
        ids.iter()
            .zip(claims)
            .map(|(&id, r)| match id {
                0 => Ok(ClaimOutcome::LimitReached),
                -2 => Ok(ClaimOutcome::NotEligible),
                id => CouponId::new(id)
                    .map(|id| ClaimOutcome::Issued(r.coupon(id, template, now)))
                    .map_err(StoreError::other),
            })
            .collect::<StoreResult<Vec<_>>>()
            .map(Some)
    }
}
