//! The audit trail's statements ([`AuditStore`](coupond_store::AuditStore)): the insert every
//! backend's transaction runs for its pending changes just before it commits ([`flush`]),
//! and the newest-first read. Nothing here updates or deletes an entry.

use coupond_domain::MerchantId;
use coupond_store::audit::{self, AuditEntry, AuditQuery};
use coupond_store::{StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Exec, Row};
use coupond_store::AuditStore;

/// Inserts the changes pending in this task ([`audit::take_pending`]) through `tx`, the
/// transaction about to commit. Backends call it first thing in `Tx::commit`.
pub async fn flush<E: Exec + ?Sized>(tx: &mut E) -> StoreResult<()> {
    for (ctx, c) in audit::take_pending() {
        let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
        let object = match &c.object_key {
            Some(key) => format!("{}:{key}", c.object_kind),
            None => format!("{}:{}", c.object_kind, c.object_id.unwrap_or(0)),
        };
        let q = sql(
            "INSERT INTO audit_log (at, actor, actor_name, action, object, merchant_id,
                         before_json, after_json, request_id, client)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(c.at)
        .bind(ctx.who.actor())
        .bind(ctx.who.name())
        .bind(c.action)
        .bind(object)
        .bind(c.merchant.map(MerchantId::get))
        .bind(json(&c.before))
        .bind(json(&c.after))
        .bind(ctx.request_id)
        .bind(ctx.client);
        tx.execute(q).await?;
    }
    Ok(())
}

/// Entries matching `q`, newest first.
pub async fn audit_entries(db: &dyn Db, q: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
    let mut s = sql("SELECT * FROM audit_log WHERE id < ");
    s.push_bind(q.before_id.unwrap_or(i64::MAX));
    if let Some(o) = &q.object {
        s.push(" AND object = ").push_bind(o.clone());
    }
    if let Some(a) = &q.actor {
        s.push(" AND (actor = ")
            .push_bind(a.clone())
            .push(" OR actor_name = ")
            .push_bind(a.clone())
            .push(")");
    }
    if let Some(t) = q.since {
        s.push(" AND at >= ").push_bind(t);
    }
    if let Some(m) = q.merchant {
        s.push(" AND merchant_id = ").push_bind(m.get());
    }
    s.push(" ORDER BY id DESC LIMIT ")
        .push_bind(i64::from(q.limit));
    db.read_all(s).await?.iter().map(entry_row).collect()
}

fn entry_row(r: &Row) -> StoreResult<AuditEntry> {
    let json = |col: &str| -> StoreResult<Option<serde_json::Value>> {
        r.opt_str(col)?
            .map(|s| serde_json::from_str(s).map_err(|e| StoreError::corrupt(e.to_string())))
            .transpose()
    };
    Ok(AuditEntry {
        id: r.i64("id")?,
        at: r.time("at")?,
        actor: r.string("actor")?,
        actor_name: r.string("actor_name")?,
        action: r.string("action")?,
        object: r.string("object")?,
        merchant_id: r
            .opt_i64("merchant_id")?
            .map(|m| MerchantId::new(m).map_err(|e| StoreError::corrupt(e.to_string())))
            .transpose()?,
        before: json("before_json")?,
        after: json("after_json")?,
        request_id: r.opt_string("request_id")?,
        client: r.opt_string("client")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> AuditStore for SqlStore<B> {
    async fn audit_entries(&self, q: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        audit_entries(&self.db, q).await
    }
}
