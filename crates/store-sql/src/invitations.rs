//! Merchants' invitations ([`InvitationStore`](coupond_store::InvitationStore)) on every
//! backend (issue 61 point 8).
//!
//! An invitation and the email carrying its link are written in one transaction, so a
//! merchant is never told of an invitation whose email was not queued. Accepting one makes
//! its operator and marks it accepted in one transaction.

use coupond_domain::{
    Email, Invitation, MerchantId, Operator, OperatorDraft, OperatorRole, Timestamp,
};
use coupond_store::{Conflict, NewOutbound, StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::messaging::queue_in;
use crate::operators::insert_operator_in;
use crate::{sql, Db, Row, Work};
use coupond_store::InvitationStore;

/// A live invitation: neither accepted nor expired at `$2`.
const LIVE: &str = "SELECT * FROM operator_invitations
                     WHERE token_hash = $1 AND accepted_at IS NULL AND expires_at > $2";

pub async fn insert_invitation(
    db: &dyn Db,
    d: &OperatorDraft,
    token_hash: &[u8; 32],
    expires_at: Timestamp,
    email: &NewOutbound,
    max_pending: u32,
    now: Timestamp,
) -> StoreResult<Invitation> {
    let merchant = d
        .merchant_id()
        .ok_or_else(|| StoreError::other("an invitation is to a merchant's team"))?;
    let lock = db.dialect().lock_rows(true);
    let mut tx = db.begin(Work::Request).await?;
    // The merchant's row serialises its invitations, so racing ones cannot pass the cap.
    let q = sql(format!("SELECT id FROM merchants WHERE id = $1{lock}")).bind(merchant.get());
    if tx.fetch_optional(q).await?.is_none() {
        return Err(StoreError::Conflict(Conflict::Reference));
    }
    let pending = tx
        .fetch_one(
            sql("SELECT COUNT(*) AS n FROM operator_invitations
                  WHERE merchant_id = $1 AND accepted_at IS NULL AND expires_at > $2")
            .bind(merchant.get())
            .bind(now),
        )
        .await?
        .i64("n")?;
    if pending >= i64::from(max_pending) {
        return Err(StoreError::Conflict(Conflict::Limit));
    }
    let row = tx
        .fetch_one(
            sql("INSERT INTO operator_invitations
                        (merchant_id, email, name, role, token_hash, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *")
            .bind(merchant.get())
            .bind(d.email().as_str())
            .bind(d.name())
            .bind(d.role().as_str())
            .bind(&token_hash[..])
            .bind(now)
            .bind(expires_at),
        )
        .await?;
    let invitation = invitation_row(&row)?;
    coupond_store::audit::created(invitation.id);
    queue_in(&mut *tx, db.dialect(), std::slice::from_ref(email), now).await?;
    tx.commit().await?;
    Ok(invitation)
}

pub async fn live_invitation(
    db: &dyn Db,
    token_hash: &[u8; 32],
    now: Timestamp,
) -> StoreResult<Option<Invitation>> {
    let q = sql(LIVE).bind(&token_hash[..]).bind(now);
    db.read_optional(q)
        .await?
        .map(|r| invitation_row(&r))
        .transpose()
}

pub async fn accept_invitation(
    db: &dyn Db,
    token_hash: &[u8; 32],
    password_hash: &str,
    now: Timestamp,
) -> StoreResult<Option<Operator>> {
    let lock = db.dialect().lock_rows(true);
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!("{LIVE}{lock}")).bind(&token_hash[..]).bind(now);
    // Not live: the transaction is dropped (rolled back), so the caller's pending audit
    // change records nothing.
    let Some(row) = tx.fetch_optional(q).await? else {
        return Ok(None);
    };
    let inv = invitation_row(&row)?;
    let draft = OperatorDraft::new(inv.email, inv.name, inv.role, Some(inv.merchant_id))
        .map_err(|e| StoreError::corrupt(e.to_string()))?;
    // An address with an account by now fails here, and the transaction leaves nothing.
    let op = insert_operator_in(&mut *tx, &draft, Some(password_hash), now).await?;
    coupond_store::audit::created(op.id.get());
    let marked = tx
        .execute(
            sql(
                "UPDATE operator_invitations SET accepted_at = $1, operator_id = $2
                  WHERE id = $3 AND accepted_at IS NULL",
            )
            .bind(now)
            .bind(op.id.get())
            .bind(inv.id),
        )
        .await?;
    if marked == 0 {
        // Another accept won meanwhile; dropping the transaction undoes this one's account.
        return Ok(None);
    }
    tx.commit().await?;
    Ok(Some(op))
}

pub async fn list_invitations(
    db: &dyn Db,
    merchant: Option<MerchantId>,
    after: Option<i64>,
    limit: u32,
) -> StoreResult<Vec<Invitation>> {
    let mut s = sql("SELECT * FROM operator_invitations WHERE id > ");
    s.push_bind(after.unwrap_or(0));
    if let Some(m) = merchant {
        s.push(" AND merchant_id = ").push_bind(m.get());
    }
    s.push(" ORDER BY id LIMIT ").push_bind(limit);
    db.read_all(s).await?.iter().map(invitation_row).collect()
}

fn invitation_row(r: &Row) -> StoreResult<Invitation> {
    let id = r.i64("id")?;
    let corrupt = |what: String| StoreError::corrupt(format!("invitation {id}: {what}"));
    let role = r.str("role")?;
    Ok(Invitation {
        id,
        email: Email::parse(r.str("email")?).map_err(|e| corrupt(e.to_string()))?,
        name: r.string("name")?,
        role: OperatorRole::parse(role).ok_or_else(|| corrupt(format!("role {role:?}")))?,
        merchant_id: MerchantId::new(r.i64("merchant_id")?).map_err(corrupt)?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
        accepted_at: r.opt_time("accepted_at")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> InvitationStore for SqlStore<B> {
    async fn insert_invitation(
        &self,
        d: &OperatorDraft,
        token_hash: &[u8; 32],
        expires_at: Timestamp,
        email: &NewOutbound,
        max_pending: u32,
        now: Timestamp,
    ) -> StoreResult<Invitation> {
        insert_invitation(&self.db, d, token_hash, expires_at, email, max_pending, now).await
    }
    async fn live_invitation(
        &self,
        token_hash: &[u8; 32],
        now: Timestamp,
    ) -> StoreResult<Option<Invitation>> {
        live_invitation(&self.db, token_hash, now).await
    }
    async fn accept_invitation(
        &self,
        token_hash: &[u8; 32],
        password_hash: &str,
        now: Timestamp,
    ) -> StoreResult<Option<Operator>> {
        accept_invitation(&self.db, token_hash, password_hash, now).await
    }
    async fn list_invitations(
        &self,
        merchant: Option<MerchantId>,
        after: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Invitation>> {
        list_invitations(&self.db, merchant, after, limit).await
    }
}
