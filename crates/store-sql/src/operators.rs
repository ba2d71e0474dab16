//! Operator accounts and password resets ([`OperatorStore`](coupond_store::OperatorStore)) on
//! every backend (issue 32).
//!
//! Disabling an operator and setting its password end its console sessions in the same
//! transaction, so no instance serves a session of a disabled operator or of a replaced
//! password once the call returns.

use coupond_domain::{
    Email, MerchantId, Operator, OperatorDraft, OperatorId, OperatorRole, Timestamp,
};
use coupond_store::{StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Exec, Row, Work};
use coupond_store::OperatorStore;

pub async fn insert_operator(
    db: &dyn Db,
    d: &OperatorDraft,
    password_hash: Option<&str>,
    now: Timestamp,
) -> StoreResult<Operator> {
    operator_row(&db.write_one(insert(d, password_hash, now)).await?)
}

/// Inserts operator `d` in the caller's transaction (an invitation accepted).
pub(crate) async fn insert_operator_in<E: Exec + ?Sized>(
    tx: &mut E,
    d: &OperatorDraft,
    password_hash: Option<&str>,
    now: Timestamp,
) -> StoreResult<Operator> {
    operator_row(&tx.fetch_one(insert(d, password_hash, now)).await?)
}

fn insert(d: &OperatorDraft, password_hash: Option<&str>, now: Timestamp) -> crate::Query {
    sql(
        "INSERT INTO operators (email, name, role, merchant_id, password_hash,
                                created_at, updated_at, version)
         VALUES ($1, $2, $3, $4, $5, $6, $6, 1) RETURNING *",
    )
    .bind(d.email().as_str())
    .bind(d.name())
    .bind(d.role().as_str())
    .bind(d.merchant_id().map(MerchantId::get))
    .bind(password_hash)
    .bind(now)
}

pub async fn operator(db: &dyn Db, id: OperatorId) -> StoreResult<Operator> {
    let row = db
        .read_one(sql("SELECT * FROM operators WHERE id = $1").bind(id.get()))
        .await?;
    operator_row(&row)
}

pub async fn operator_by_email(
    db: &dyn Db,
    email: &Email,
) -> StoreResult<Option<(Operator, Option<String>)>> {
    let row = db
        .read_optional(sql("SELECT * FROM operators WHERE email = $1").bind(email.as_str()))
        .await?;
    row.map(|r| Ok((operator_row(&r)?, r.opt_string("password_hash")?)))
        .transpose()
}

pub async fn list_operators(
    db: &dyn Db,
    merchant: Option<MerchantId>,
    after: Option<i64>,
    limit: u32,
) -> StoreResult<Vec<Operator>> {
    let mut s = sql("SELECT * FROM operators WHERE id > ");
    s.push_bind(after.unwrap_or(0));
    if let Some(m) = merchant {
        s.push(" AND merchant_id = ").push_bind(m.get());
    }
    s.push(" ORDER BY id LIMIT ").push_bind(limit);
    db.read_all(s).await?.iter().map(operator_row).collect()
}

pub async fn set_operator_disabled(
    db: &dyn Db,
    id: OperatorId,
    disabled: bool,
    now: Timestamp,
) -> StoreResult<Operator> {
    // The version and `updated_at` move on only when the state changes. They are set before
    // `disabled_at`: MySQL reads columns assigned earlier in the same `SET` as assigned.
    let update = if disabled {
        "UPDATE operators
            SET version = CASE WHEN disabled_at IS NULL THEN version + 1 ELSE version END,
                updated_at = CASE WHEN disabled_at IS NULL THEN $1 ELSE updated_at END,
                disabled_at = COALESCE(disabled_at, $1)
          WHERE id = $2 RETURNING *"
    } else {
        "UPDATE operators
            SET version = CASE WHEN disabled_at IS NULL THEN version ELSE version + 1 END,
                updated_at = CASE WHEN disabled_at IS NULL THEN updated_at ELSE $1 END,
                disabled_at = NULL
          WHERE id = $2 RETURNING *"
    };
    let mut tx = db.begin(Work::Request).await?;
    let row = tx.fetch_one(sql(update).bind(now).bind(id.get())).await?;
    if disabled {
        end_sessions(&mut *tx, id).await?;
    }
    tx.commit().await?;
    operator_row(&row)
}

pub async fn update_operator(
    db: &dyn Db,
    id: OperatorId,
    name: Option<&str>,
    role: Option<OperatorRole>,
    now: Timestamp,
) -> StoreResult<Operator> {
    let lock = db.dialect().lock_rows(true);
    let mut tx = db.begin(Work::Request).await?;
    let current = tx
        .fetch_one(sql(format!("SELECT role FROM operators WHERE id = $1{lock}")).bind(id.get()))
        .await?;
    if let Some(to) = role {
        // The caller checked this and answered with the domain error; a change reaching here
        // anyway is a bug, and the row's merchant would no longer match its role.
        role_of(&current, id)?
            .check_change(to)
            .map_err(StoreError::other)?;
    }
    let row = tx
        .fetch_one(
            sql("UPDATE operators
                    SET name = COALESCE($1, name), role = COALESCE($2, role), updated_at = $3,
                        version = version + 1
                  WHERE id = $4 RETURNING *")
            .bind(name)
            .bind(role.map(OperatorRole::as_str))
            .bind(now)
            .bind(id.get()),
        )
        .await?;
    tx.commit().await?;
    operator_row(&row)
}

pub async fn set_operator_password(
    db: &dyn Db,
    id: OperatorId,
    hash: &str,
    now: Timestamp,
) -> StoreResult<()> {
    let mut tx = db.begin(Work::Request).await?;
    let changed = tx
        .execute(
            sql(
                "UPDATE operators SET password_hash = $1, updated_at = $2, version = version + 1
                  WHERE id = $3",
            )
            .bind(hash)
            .bind(now)
            .bind(id.get()),
        )
        .await?;
    if changed == 0 {
        return Err(StoreError::NotFound);
    }
    end_sessions(&mut *tx, id).await?;
    // A reset link sent before the change must not replace the password just chosen.
    tx.execute(sql("DELETE FROM password_resets WHERE operator_id = $1").bind(id.get()))
        .await?;
    tx.commit().await
}

pub async fn insert_password_reset(
    db: &dyn Db,
    token_hash: &[u8; 32],
    id: OperatorId,
    expires_at: Timestamp,
) -> StoreResult<()> {
    db.write(
        sql(
            "INSERT INTO password_resets (token_hash, operator_id, expires_at)
             VALUES ($1, $2, $3)",
        )
        .bind(&token_hash[..])
        .bind(id.get())
        .bind(expires_at),
    )
    .await
    .map(drop)
}

pub async fn take_password_reset(
    db: &dyn Db,
    token_hash: &[u8; 32],
    now: Timestamp,
) -> StoreResult<Option<OperatorId>> {
    let mut tx = db.begin(Work::Request).await?;
    // Expired tokens go first, this one included: what is left is valid.
    tx.execute(sql("DELETE FROM password_resets WHERE expires_at <= $1").bind(now))
        .await?;
    let row = tx
        .fetch_optional(
            sql("SELECT operator_id FROM password_resets WHERE token_hash = $1")
                .bind(&token_hash[..]),
        )
        .await?;
    let Some(row) = row else {
        tx.commit().await?;
        return Ok(None);
    };
    // Of two takes racing, only the one whose delete removed the row has it.
    let deleted = tx
        .execute(sql("DELETE FROM password_resets WHERE token_hash = $1").bind(&token_hash[..]))
        .await?;
    tx.commit().await?;
    if deleted == 0 {
        return Ok(None);
    }
    let id = row.i64("operator_id")?;
    OperatorId::new(id).map(Some).map_err(StoreError::corrupt)
}

pub async fn set_operator_totp(
    db: &dyn Db,
    id: OperatorId,
    secret: Option<&str>,
    now: Timestamp,
) -> StoreResult<Operator> {
    let q = sql(
        "UPDATE operators SET totp_secret = $1, totp_last_step = NULL, updated_at = $2,
                        version = version + 1
                  WHERE id = $3 RETURNING *",
    )
    .bind(secret)
    .bind(now)
    .bind(id.get());
    operator_row(&db.write_one(q).await?)
}

pub async fn operator_totp(db: &dyn Db, id: OperatorId) -> StoreResult<Option<String>> {
    let q = sql("SELECT totp_secret FROM operators WHERE id = $1").bind(id.get());
    db.read_one(q).await?.opt_string("totp_secret")
}

pub async fn use_totp_step(db: &dyn Db, id: OperatorId, step: i64) -> StoreResult<bool> {
    let q = sql("UPDATE operators SET totp_last_step = $1
                  WHERE id = $2 AND totp_secret IS NOT NULL
                    AND (totp_last_step IS NULL OR totp_last_step < $1)")
    .bind(step)
    .bind(id.get());
    Ok(db.write(q).await? == 1)
}

/// Ends operator `id`'s console sessions, in the caller's transaction.
async fn end_sessions<E: Exec + ?Sized>(tx: &mut E, id: OperatorId) -> StoreResult<()> {
    tx.execute(sql("DELETE FROM console_sessions WHERE operator_id = $1").bind(id.get()))
        .await
        .map(drop)
}

fn role_of(r: &Row, id: OperatorId) -> StoreResult<OperatorRole> {
    let role = r.str("role")?;
    OperatorRole::parse(role)
        .ok_or_else(|| StoreError::corrupt(format!("operator {id}: unknown role {role:?}")))
}

/// An operator read with `SELECT *` (its password hash read only as whether there is one).
pub fn operator_row(r: &Row) -> StoreResult<Operator> {
    let id = OperatorId::new(r.i64("id")?).map_err(StoreError::corrupt)?;
    let corrupt = |what: String| StoreError::corrupt(format!("operator {id}: {what}"));
    Ok(Operator {
        id,
        email: Email::parse(r.str("email")?).map_err(|e| corrupt(e.to_string()))?,
        name: r.string("name")?,
        role: role_of(r, id)?,
        merchant_id: r
            .opt_i64("merchant_id")?
            .map(|v| MerchantId::new(v).map_err(corrupt))
            .transpose()?,
        has_password: r.opt_str("password_hash")?.is_some(),
        has_totp: r.has("totp_secret") && r.opt_str("totp_secret")?.is_some(),
        disabled_at: r.opt_time("disabled_at")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        version: r.i64("version")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> OperatorStore for SqlStore<B> {
    async fn insert_operator(
        &self,
        d: &OperatorDraft,
        password_hash: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Operator> {
        insert_operator(&self.db, d, password_hash, now).await
    }
    async fn operator(&self, id: OperatorId) -> StoreResult<Operator> {
        operator(&self.db, id).await
    }
    async fn operator_by_email(
        &self,
        email: &Email,
    ) -> StoreResult<Option<(Operator, Option<String>)>> {
        operator_by_email(&self.db, email).await
    }
    async fn list_operators(
        &self,
        merchant: Option<MerchantId>,
        after: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Operator>> {
        list_operators(&self.db, merchant, after, limit).await
    }
    async fn set_operator_disabled(
        &self,
        id: OperatorId,
        disabled: bool,
        now: Timestamp,
    ) -> StoreResult<Operator> {
        set_operator_disabled(&self.db, id, disabled, now).await
    }
    async fn update_operator(
        &self,
        id: OperatorId,
        name: Option<&str>,
        role: Option<OperatorRole>,
        now: Timestamp,
    ) -> StoreResult<Operator> {
        update_operator(&self.db, id, name, role, now).await
    }
    async fn set_operator_password(
        &self,
        id: OperatorId,
        hash: &str,
        now: Timestamp,
    ) -> StoreResult<()> {
        set_operator_password(&self.db, id, hash, now).await
    }
    async fn insert_password_reset(
        &self,
        token_hash: &[u8; 32],
        id: OperatorId,
        expires_at: Timestamp,
    ) -> StoreResult<()> {
        insert_password_reset(&self.db, token_hash, id, expires_at).await
    }
    async fn take_password_reset(
        &self,
        token_hash: &[u8; 32],
        now: Timestamp,
    ) -> StoreResult<Option<OperatorId>> {
        take_password_reset(&self.db, token_hash, now).await
    }
    async fn set_operator_totp(
        &self,
        id: OperatorId,
        secret: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Operator> {
        set_operator_totp(&self.db, id, secret, now).await
    }
    async fn operator_totp(&self, id: OperatorId) -> StoreResult<Option<String>> {
        operator_totp(&self.db, id).await
    }
    async fn use_totp_step(&self, id: OperatorId, step: i64) -> StoreResult<bool> {
        use_totp_step(&self.db, id, step).await
    }
}
