//! [`RuleStore`](coupond_store::RuleStore) on every backend: named rules, and the link from a
//! template to the rule it copies.
//!
//! Locks, in one order everywhere (rule, then templates), so no two writers deadlock: a
//! template write that names a rule locks the rule's row first and checks that its copy is
//! the rule's version; a rule update locks its row by updating it, then rewrites every
//! template using it; a delete locks the row, then counts its templates.

use coupond_domain::{
    Actor, MerchantId, Rule, RuleDraft, RuleId, Template, TemplateId, TemplateSpec, Timestamp,
};
use coupond_store::events::{self, kind};
use coupond_store::lifecycle::Deleted;
use coupond_store::records::RuleRecord;
use coupond_store::{codec, Conflict, RuleFollower, RuleQuery, RuleStore, StoreError, StoreResult};
use serde_json::json;

use crate::backend::{Backend, SqlStore};
use crate::catalog::template_row;
use crate::lifecycle::record_change;
use crate::scheduling::emit;
use crate::{missing_or_conflict, sql, Db, Dialect, Exec, Json, Row, Work};

const RULE_COLS: &str = "id, merchant_id, spec, version, created_at, updated_at";

fn spec_of(draft: &RuleDraft) -> StoreResult<String> {
    serde_json::to_string(&RuleRecord::of(draft)).map_err(StoreError::other)
}

pub async fn insert_rule(
    db: &dyn Db,
    merchant: Option<MerchantId>,
    draft: &RuleDraft,
    now: Timestamp,
) -> StoreResult<Rule> {
    let q = sql(format!(
        "INSERT INTO rules (merchant_id, spec, version, created_at, updated_at)
         VALUES ($1, $2, 1, $3, $3) RETURNING {RULE_COLS}"
    ))
    .bind(merchant.map(MerchantId::get))
    .bind(spec_of(draft)?)
    .bind(now);
    let mut tx = db.begin(Work::Request).await?;
    let rule = rule_row(&tx.fetch_one(q).await?)?;
    coupond_store::audit::created(rule.id.get());
    tx.commit().await?;
    Ok(rule)
}

pub async fn rule(db: &dyn Db, id: RuleId) -> StoreResult<Rule> {
    let q = sql(format!("SELECT {RULE_COLS} FROM rules WHERE id = $1")).bind(id.get());
    rule_row(&db.read_one(q).await?)
}

pub async fn list_rules(db: &dyn Db, q: &RuleQuery) -> StoreResult<Vec<Rule>> {
    let mut s = sql(format!("SELECT {RULE_COLS} FROM rules WHERE id > "));
    s.push_bind(q.after.map_or(0, RuleId::get));
    if let Some(m) = q.merchant {
        s.push(" AND (merchant_id IS NULL OR merchant_id = ")
            .push_bind(m.get())
            .push(")");
    }
    s.push(" ORDER BY id LIMIT ").push_bind(i64::from(q.limit));
    db.read_all(s).await?.iter().map(rule_row).collect()
}

pub async fn rule_templates(db: &dyn Db, id: RuleId) -> StoreResult<Vec<Template>> {
    let q = sql(format!(
        "SELECT {} FROM templates WHERE rule_id = $1 ORDER BY id",
        db.dialect().template_columns()
    ))
    .bind(id.get());
    db.read_all(q).await?.iter().map(template_row).collect()
}

/// Before a template write: locks the rule `spec` copies and checks the copy is its version
/// (`Conflict::Version` if the rule changed since, `Conflict::Reference` if it is gone).
pub(crate) async fn lock_rule<E: Exec + ?Sized>(
    ex: &mut E,
    d: Dialect,
    spec: &TemplateSpec,
) -> StoreResult<()> {
    let Some(copy) = spec.rule() else {
        return Ok(());
    };
    let q = sql(format!(
        "SELECT version FROM rules WHERE id = $1{}",
        d.lock_rows(false)
    ))
    .bind(copy.id.get());
    match ex.fetch_optional(q).await? {
        None => Err(StoreError::Conflict(Conflict::Reference)),
        Some(row) if row.i64("version")? != copy.version => {
            Err(StoreError::Conflict(Conflict::Version))
        }
        Some(_) => Ok(()),
    }
}

/// After a template write: the column that names its rule.
pub(crate) async fn link_rule<E: Exec + ?Sized>(
    ex: &mut E,
    id: TemplateId,
    spec: &TemplateSpec,
) -> StoreResult<()> {
    let q = sql("UPDATE templates SET rule_id = $1 WHERE id = $2")
        .bind(spec.rule_id.map(RuleId::get))
        .bind(id.get());
    ex.execute(q).await.map(|_| ())
}

pub async fn update_rule(
    db: &dyn Db,
    id: RuleId,
    version: i64,
    draft: &RuleDraft,
    followers: &[RuleFollower],
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<Rule> {
    let q = sql(format!(
        "UPDATE rules SET spec = $1, version = version + 1, updated_at = $2
         WHERE id = $3 AND version = $4 RETURNING {RULE_COLS}"
    ))
    .bind(spec_of(draft)?)
    .bind(now)
    .bind(id.get())
    .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "rules", id.get()).await);
    };
    let rule = rule_row(&row)?;
    // A template that named the rule after the caller listed its followers: read again.
    let q = sql("SELECT COUNT(*) AS n FROM templates WHERE rule_id = $1").bind(id.get());
    if tx.fetch_one(q).await?.i64("n")? != followers.len() as i64 {
        return Err(StoreError::Conflict(Conflict::Version));
    }
    let changes = json!({"rule": {"from": {"id": id, "version": version},
                                  "to": {"id": id, "version": rule.version}}});
    for f in followers {
        let q = sql(
            "UPDATE templates SET spec = $1, updated_at = $2, version = version + 1
                     WHERE id = $3 AND version = $4 AND rule_id = $5",
        )
        .bind(Json(codec::template_to_json(&f.spec)?))
        .bind(now)
        .bind(f.id.get())
        .bind(f.version)
        .bind(id.get());
        if tx.execute(q).await? != 1 {
            return Err(StoreError::Conflict(Conflict::Version));
        }
        record_change(&mut *tx, f.id, actor, &changes, now).await?;
        let body = events::template_changed(f.id, &changes, actor, f.spec.total_stock);
        emit(&mut *tx, kind::TEMPLATE_CHANGED, now, body).await?;
    }
    tx.commit().await?;
    Ok(rule)
}

pub async fn delete_rule(db: &dyn Db, id: RuleId) -> StoreResult<Deleted> {
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!(
        "SELECT id FROM rules WHERE id = $1{}",
        db.dialect().lock_rows(false)
    ));
    tx.fetch_optional(q.bind(id.get()))
        .await?
        .ok_or(StoreError::NotFound)?;
    let q = sql("SELECT COUNT(*) AS n FROM templates WHERE rule_id = $1").bind(id.get());
    if tx.fetch_one(q).await?.i64("n")? > 0 {
        return Ok(Deleted::InUse);
    }
    tx.execute(sql("DELETE FROM rules WHERE id = $1").bind(id.get()))
        .await?;
    tx.commit().await?;
    Ok(Deleted::Done)
}

fn rule_row(r: &Row) -> StoreResult<Rule> {
    let id = r.i64("id")?;
    let record: RuleRecord = serde_json::from_str(r.str("spec")?)
        .map_err(|e| StoreError::corrupt(format!("rule {id}: {e}")))?;
    Ok(Rule {
        id: RuleId::new(id).map_err(StoreError::corrupt)?,
        merchant_id: r
            .opt_i64("merchant_id")?
            .map(MerchantId::new)
            .transpose()
            .map_err(StoreError::corrupt)?,
        draft: record.into_draft(),
        version: r.i64("version")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> RuleStore for SqlStore<B> {
    async fn insert_rule(
        &self,
        merchant: Option<MerchantId>,
        draft: &RuleDraft,
        now: Timestamp,
    ) -> StoreResult<Rule> {
        insert_rule(&self.db, merchant, draft, now).await
    }
    async fn rule(&self, id: RuleId) -> StoreResult<Rule> {
        rule(&self.db, id).await
    }
    async fn list_rules(&self, q: &RuleQuery) -> StoreResult<Vec<Rule>> {
        list_rules(&self.db, q).await
    }
    async fn rule_templates(&self, id: RuleId) -> StoreResult<Vec<Template>> {
        rule_templates(&self.db, id).await
    }
    async fn update_rule(
        &self,
        id: RuleId,
        version: i64,
        draft: &RuleDraft,
        followers: &[RuleFollower],
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Rule> {
        update_rule(&self.db, id, version, draft, followers, actor, now).await
    }
    async fn delete_rule(&self, id: RuleId) -> StoreResult<Deleted> {
        delete_rule(&self.db, id).await
    }
}
