//! Templates' reads and writes ([`TemplateStore`](coupond_store::TemplateStore)'s template
//! half): insert, read, list, edit, publish, abort and review. Publishing, aborting and
//! reviewing announce the template's status in their own transaction.

use coupond_domain::{
    ActivityId, Actor, MerchantId, Review, Template, TemplateId, TemplateSpec, Timestamp,
};
use coupond_store::events::{self, kind};
use coupond_store::{
    codec, Conflict, NewTemplate, StoreError, StoreResult, TemplateEdit, TemplateQuery,
};

use super::{bump_enrollment, unbind_templates};
use crate::catalog::{push_template_status, template_row};
use crate::scheduling::emit;
use crate::{missing_or_conflict, sql, Db, Json, Query, Work};

/// Inserts a template (inside an activity, only if the activity still has the version the
/// caller validated against) and lays out its stock.
pub async fn insert_template(
    db: &dyn Db,
    t: &NewTemplate<'_>,
    now: Timestamp,
) -> StoreResult<Template> {
    let spec = t.spec;
    let q = sql(format!(
        "INSERT INTO templates (merchant_id, activity_id, title, kind, total_stock,
             per_user_limit, claim_start, claim_end, expires_at, spec, created_at, updated_at,
             approval, cities, owner_id, external_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13, $14, $15)
         RETURNING {}",
        db.dialect().template_columns()
    ))
    .bind(t.merchant_id.map(MerchantId::get))
    .bind(spec.activity_id.map(ActivityId::get));
    let q = bind_template(q, spec)?
        .bind(now)
        .bind(t.review.as_str())
        .bind(codec::cities_to_vec(&spec.cities))
        .bind(t.merchant_id.map_or(0, MerchantId::get))
        .bind(spec.reference.external_id.as_deref());
    let mut tx = db.begin(Work::Request).await?;
    crate::rules::lock_rule(&mut *tx, db.dialect(), spec).await?;
    if let Some(activity) = spec.activity_id {
        bump_enrollment(&mut *tx, activity, t.activity_version).await?;
    }
    let mut template = template_row(&tx.fetch_one(q).await?)?;
    crate::rules::link_rule(&mut *tx, template.id, spec).await?;
    if let Some(activity) = spec.activity_id {
        template = follow_activity_pause(db, &mut *tx, template, activity).await?;
    }
    coupond_store::audit::created(template.id.get());
    db.template_stock(&mut *tx, template.id.get(), spec.total_stock)
        .await?;
    crate::tags::write_template_tags(&mut *tx, template.id, spec).await?;
    tx.commit().await?;
    Ok(template)
}

pub async fn template(db: &dyn Db, id: TemplateId) -> StoreResult<Template> {
    let q = sql(format!(
        "SELECT {} FROM templates WHERE id = $1",
        db.dialect().template_columns()
    ))
    .bind(id.get());
    template_row(&db.read_one(q).await?)
}

pub async fn list_templates(db: &dyn Db, q: &TemplateQuery) -> StoreResult<Vec<Template>> {
    let mut s = sql(format!(
        "SELECT {} FROM templates WHERE id > ",
        db.dialect().template_columns()
    ));
    s.push_bind(q.page.after.unwrap_or(0));
    if let Some(m) = q.merchant {
        s.push(" AND merchant_id = ").push_bind(m.get());
    }
    if let Some(a) = q.activity {
        s.push(" AND activity_id = ").push_bind(a.get());
    }
    if let Some(st) = q.status {
        push_template_status(&mut s, st, q.now);
    }
    if let Some(c) = q.city {
        let city = s.param(c.get());
        let has = db.dialect().list_has("templates.cities", &city);
        s.push(" AND ").push(&has);
    }
    super::push_narrow(&mut s, db.dialect(), &q.narrow);
    s.push(" ORDER BY id LIMIT ")
        .push_bind(i64::from(q.page.limit));
    db.read_all(s).await?.iter().map(template_row).collect()
}

pub async fn activity_templates(db: &dyn Db, id: ActivityId) -> StoreResult<Vec<Template>> {
    let q = sql(format!(
        "SELECT {} FROM templates WHERE activity_id = $1 ORDER BY id",
        db.dialect().template_columns()
    ))
    .bind(id.get());
    db.read_all(q).await?.iter().map(template_row).collect()
}

/// Replaces the template's terms, checking its version and, inside an activity, the
/// activity's; lays its stock out again; records `edit` in the history, with its event.
pub async fn update_template(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    activity_version: Option<i64>,
    spec: &TemplateSpec,
    edit: Option<TemplateEdit<'_>>,
    now: Timestamp,
) -> StoreResult<Template> {
    let q = sql(format!(
        "UPDATE templates SET title = $1, kind = $2, total_stock = $3, per_user_limit = $4,
            claim_start = $5, claim_end = $6, expires_at = $7, spec = $8, updated_at = $9,
            version = version + 1, cities = $10, external_id = $11
         WHERE id = $12 AND version = $13 RETURNING {}",
        db.dialect().template_columns()
    ));
    let q = bind_template(q, spec)?
        .bind(now)
        .bind(codec::cities_to_vec(&spec.cities))
        .bind(spec.reference.external_id.as_deref())
        .bind(id.get())
        .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    crate::rules::lock_rule(&mut *tx, db.dialect(), spec).await?;
    if let Some(activity) = spec.activity_id {
        bump_enrollment(&mut *tx, activity, activity_version).await?;
    }
    check_stock_holds_claims(db, &mut *tx, id, spec.total_stock).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "templates", id.get()).await);
    };
    crate::rules::link_rule(&mut *tx, id, spec).await?;
    let mut template = template_row(&row)?;
    db.template_stock(&mut *tx, id.get(), spec.total_stock)
        .await?;
    crate::tags::write_template_tags(&mut *tx, id, spec).await?;
    if let Some(e) = edit {
        if e.review != template.review {
            // Only ever back to `pending` (Review::after_edit): the decision is cleared.
            let q = sql("UPDATE templates SET approval = $1, reviewed_at = NULL,
                             review_reason = NULL WHERE id = $2");
            tx.execute(q.bind(e.review.as_str()).bind(id.get())).await?;
            template.review = e.review.clone();
        }
        if let Some((old, new)) = e.coupons_until {
            let q = sql("UPDATE coupons SET valid_until = $1, updated_at = $2
                         WHERE template_id = $3 AND valid_until = $4");
            tx.execute(q.bind(new).bind(now).bind(id.get()).bind(old))
                .await?;
        }
        crate::lifecycle::record_change(&mut *tx, id, e.actor, e.changes, now).await?;
        let body = events::template_changed(id, e.changes, e.actor, spec.total_stock);
        emit(&mut *tx, kind::TEMPLATE_CHANGED, now, body).await?;
    }
    tx.commit().await?;
    Ok(template)
}

pub async fn publish_template(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    now: Timestamp,
) -> StoreResult<Template> {
    stamp(db, id, version, "published_at", now).await
}

/// Aborts the template and removes its bindings, in one transaction.
pub async fn abort_template(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    now: Timestamp,
) -> StoreResult<Template> {
    stamp(db, id, version, "aborted_at", now).await
}

/// Sets the template's `column` (`published_at` or `aborted_at`) to `now` if it is still at
/// `version`; an abort also removes its bindings. Its status events go in the same
/// transaction, so a claim committed after this comes after them.
async fn stamp(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    column: &'static str,
    now: Timestamp,
) -> StoreResult<Template> {
    let q = sql(format!(
        "UPDATE templates SET {column} = $1, updated_at = $1, version = version + 1
         WHERE id = $2 AND version = $3 RETURNING {}",
        db.dialect().template_columns()
    ))
    .bind(now)
    .bind(id.get())
    .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "templates", id.get()).await);
    };
    if column == "aborted_at" {
        unbind_templates(&mut *tx, "id = $1", id.get()).await?;
    }
    let template = template_row(&row)?;
    crate::scheduling::announce_template_now(&mut *tx, &template, now).await?;
    tx.commit().await?;
    Ok(template)
}

/// Records the decision on a pending enrollment, its event, and (approved) the status it
/// enters now, in one transaction.
pub async fn review_template(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    review: &Review,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<Template> {
    let q = sql(format!(
        "UPDATE templates SET approval = $1, reviewed_at = $2, review_reason = $3,
             updated_at = $2, version = version + 1
         WHERE id = $4 AND version = $5 AND approval = 'pending' RETURNING {}",
        db.dialect().template_columns()
    ))
    .bind(review.as_str())
    .bind(now)
    .bind(review.reason())
    .bind(id.get())
    .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "templates", id.get()).await);
    };
    let template = template_row(&row)?;
    let kind = match review {
        Review::Approved { .. } => kind::TEMPLATE_APPROVED,
        _ => kind::TEMPLATE_REJECTED,
    };
    emit(
        &mut *tx,
        kind,
        now,
        events::template_reviewed(&template, actor),
    )
    .await?;
    crate::scheduling::announce_template_now(&mut *tx, &template, now).await?;
    tx.commit().await?;
    Ok(template)
}

/// Refuses a stock below what template `id` has claimed (`Conflict::BelowClaimed`). The
/// template's row is locked first (SQLite's one writer holds it already), which waits for the
/// claim batches in flight (each holds it `FOR SHARE`) and keeps new ones out until the
/// commit; the count is read after, in a statement of its own, so it sees every claim
/// committed.
async fn check_stock_holds_claims(
    db: &dyn Db,
    tx: &mut dyn crate::Tx,
    id: TemplateId,
    stock: i64,
) -> StoreResult<()> {
    let lock = db.dialect().lock_rows(true);
    if !lock.is_empty() {
        let q = sql(format!(
            "SELECT 1 AS one FROM templates WHERE id = $1{lock}"
        ));
        tx.fetch_optional(q.bind(id.get())).await?;
    }
    let q = sql(format!(
        "SELECT {} AS claimed FROM templates WHERE id = $1",
        db.dialect().claimed_column()
    ));
    let Some(row) = tx.fetch_optional(q.bind(id.get())).await? else {
        return Ok(()); // the update finds it missing
    };
    let claimed = row.i64("claimed")?;
    if stock < claimed {
        return Err(StoreError::Conflict(Conflict::BelowClaimed(claimed)));
    }
    Ok(())
}

/// A template just created in `activity` while the activity is paused is paused with it.
async fn follow_activity_pause(
    db: &dyn Db,
    tx: &mut dyn crate::Tx,
    template: Template,
    activity: ActivityId,
) -> StoreResult<Template> {
    let q = sql(format!(
        "UPDATE templates SET paused_at = (SELECT paused_at FROM activities WHERE id = $1),
             pause_reason = (SELECT pause_reason FROM activities WHERE id = $1),
             pause_scope = 'activity'
         WHERE id = $2 AND EXISTS (SELECT 1 FROM activities WHERE id = $1
                                   AND paused_at IS NOT NULL)
         RETURNING {}",
        db.dialect().template_columns()
    ))
    .bind(activity.get())
    .bind(template.id.get());
    match tx.fetch_optional(q).await? {
        Some(row) => template_row(&row),
        None => Ok(template),
    }
}

/// Binds the next eight parameters of a template write (title to `spec`), after any the
/// statement bound before.
fn bind_template(q: Query, spec: &TemplateSpec) -> StoreResult<Query> {
    let w = spec.claim_window();
    Ok(q.bind(spec.title.as_str())
        .bind(spec.value.kind().as_str())
        .bind(spec.total_stock)
        .bind(i64::from(spec.per_user_limit))
        .bind(w.start)
        .bind(w.end)
        .bind(spec.expires_at())
        .bind(Json(codec::template_to_json(spec)?)))
}
