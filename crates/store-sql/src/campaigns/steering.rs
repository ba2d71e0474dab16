//! Steering live campaigns ([`TemplateStore`](coupond_store::TemplateStore)'s pause, resume
//! and stop), on every backend.
//!
//! A pause is a row write on `templates` (or `activities` and the templates it holds): the
//! write waits for the claim batches in flight (they hold the template's row `FOR SHARE`) and
//! every claim path checks `paused_at IS NULL` under that lock, so once a pause commits no
//! claim of the template commits until its resume.

use coupond_domain::{
    Activity, ActivityId, Actor, Note, Pause, PauseScope, Template, TemplateId, TemplateSpec,
    Timestamp,
};
use coupond_store::events::kind;
use coupond_store::{StoreError, StoreResult, TemplateEdit};
use serde_json::json;

use super::{activity_row, ACTIVITY_COLS};
use crate::catalog::template_row;
use crate::scheduling::emit;
use crate::{missing_or_conflict, sql, Db, Exec, Query, Row, Work};

/// The pause on a row read with `paused_at` and `pause_reason` (and `pause_scope` when
/// `scoped`: templates; an activity's own pause is always its own).
pub(crate) fn pause_row(r: &Row, scoped: bool) -> StoreResult<Option<Pause>> {
    let Some(at) = r.opt_time("paused_at")? else {
        return Ok(None);
    };
    let reason = r
        .opt_str("pause_reason")?
        .map(|s| Note::parse("pause_reason", s).map_err(|e| StoreError::corrupt(e.message)))
        .transpose()?;
    let scope = if scoped {
        let s = r.opt_str("pause_scope")?.unwrap_or("template");
        PauseScope::parse(s).ok_or_else(|| StoreError::corrupt(format!("pause_scope {s}")))?
    } else {
        PauseScope::Template
    };
    Ok(Some(Pause { at, reason, scope }))
}

/// The body of `template.paused` / `template.resumed` and their activity forms.
fn body(
    subject: &str,
    id: i64,
    pause: Option<&Pause>,
    actor: &Actor,
    at: Timestamp,
) -> serde_json::Value {
    let mut b = json!({
        "reason": pause.and_then(|p| p.reason.as_ref()).map(Note::as_str),
        "actor": actor,
        "at": at,
    });
    b[subject] = json!(id);
    if let Some(p) = pause {
        b["scope"] = json!(p.scope.as_str());
    }
    b
}

pub async fn set_template_pause(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    pause: Option<&Pause>,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<Template> {
    let q = sql(format!(
        "UPDATE templates SET paused_at = $1, pause_reason = $2, pause_scope = $3,
             updated_at = $4, version = version + 1
         WHERE id = $5 AND version = $6 RETURNING {}",
        db.dialect().template_columns()
    ))
    .bind(pause.map(|p| p.at))
    .bind(pause.and_then(|p| p.reason.as_ref()).map(Note::as_str))
    .bind(pause.map(|p| p.scope.as_str()))
    .bind(now)
    .bind(id.get())
    .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "templates", id.get()).await);
    };
    let template = template_row(&row)?;
    let kind = if pause.is_some() {
        kind::TEMPLATE_PAUSED
    } else {
        kind::TEMPLATE_RESUMED
    };
    let b = body("template_id", id.get(), pause, actor, now);
    emit(&mut *tx, kind, now, b.to_string()).await?;
    tx.commit().await?;
    Ok(template)
}

pub async fn set_activity_pause(
    db: &dyn Db,
    id: ActivityId,
    version: i64,
    pause: Option<&Pause>,
    actor: &Actor,
    now: Timestamp,
) -> StoreResult<Activity> {
    let q = sql(format!(
        "UPDATE activities SET paused_at = $1, pause_reason = $2, updated_at = $3,
             version = version + 1
         WHERE id = $4 AND version = $5 AND aborted_at IS NULL RETURNING {ACTIVITY_COLS}"
    ))
    .bind(pause.map(|p| p.at))
    .bind(pause.and_then(|p| p.reason.as_ref()).map(Note::as_str))
    .bind(now)
    .bind(id.get())
    .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    // The activity's row first: template writes in it lock that row too (enrollment), so the
    // templates read below are all it holds until this commits.
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "activities", id.get()).await);
    };
    let activity = activity_row(&row)?;
    let templates = pause_templates(&mut *tx, id, pause, now).await?;
    let (kind, each) = match pause {
        Some(_) => (kind::ACTIVITY_PAUSED, kind::TEMPLATE_PAUSED),
        None => (kind::ACTIVITY_RESUMED, kind::TEMPLATE_RESUMED),
    };
    let mut b = body("activity_id", id.get(), pause, actor, now);
    b["template_ids"] = json!(templates);
    emit(&mut *tx, kind, now, b.to_string()).await?;
    let scoped = pause.map(|p| Pause {
        scope: PauseScope::Activity,
        ..p.clone()
    });
    for t in templates {
        let mut tb = body("template_id", t, scoped.as_ref(), actor, now);
        tb["activity_id"] = json!(id.get());
        emit(&mut *tx, each, now, tb.to_string()).await?;
    }
    tx.commit().await?;
    Ok(activity)
}

/// Pauses (or resumes) the templates of activity `id` that follow its pause: on a pause,
/// those not paused, aborted or past their claim window; on a resume, those its pause
/// paused. Their ids.
async fn pause_templates<E: Exec + ?Sized>(
    ex: &mut E,
    id: ActivityId,
    pause: Option<&Pause>,
    now: Timestamp,
) -> StoreResult<Vec<i64>> {
    let which = |q: &mut Query| {
        q.push(" WHERE activity_id = ").push_bind(id.get());
        match pause {
            Some(_) => q
                .push(" AND paused_at IS NULL AND aborted_at IS NULL AND claim_end > ")
                .push_bind(now),
            None => q.push(" AND pause_scope = 'activity'"),
        };
    };
    let mut q = sql("SELECT id FROM templates");
    which(&mut q);
    q.push(" ORDER BY id");
    let rows = ex.fetch_all(q).await?;
    let ids = rows
        .iter()
        .map(|r| r.i64("id"))
        .collect::<StoreResult<Vec<_>>>()?;
    if ids.is_empty() {
        return Ok(ids);
    }
    let mut q = sql(
        "UPDATE templates SET paused_at = $1, pause_reason = $2, pause_scope = $3,
             updated_at = $4, version = version + 1",
    )
    .bind(pause.map(|p| p.at))
    .bind(pause.and_then(|p| p.reason.as_ref()).map(Note::as_str))
    .bind(pause.map(|_| PauseScope::Activity.as_str()))
    .bind(now);
    which(&mut q);
    ex.execute(q).await?;
    Ok(ids)
}

pub async fn stop_template(
    db: &dyn Db,
    id: TemplateId,
    version: i64,
    spec: &TemplateSpec,
    edit: TemplateEdit<'_>,
    now: Timestamp,
) -> StoreResult<Template> {
    let w = spec.claim_window();
    let q = sql(format!(
        "UPDATE templates SET claim_end = $1, expires_at = $2, spec = $3, updated_at = $4,
             version = version + 1
         WHERE id = $5 AND version = $6 RETURNING {}",
        db.dialect().template_columns()
    ))
    .bind(w.end)
    .bind(spec.expires_at())
    .bind(crate::Json(coupond_store::codec::template_to_json(spec)?))
    .bind(now)
    .bind(id.get())
    .bind(version);
    let mut tx = db.begin(Work::Request).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "templates", id.get()).await);
    };
    let template = template_row(&row)?;
    let (actor, changes) = (edit.actor, edit.changes);
    crate::lifecycle::record_change(&mut *tx, id, actor, changes, now).await?;
    let b = coupond_store::events::template_changed(id, changes, actor, spec.total_stock);
    emit(&mut *tx, kind::TEMPLATE_CHANGED, now, b).await?;
    crate::scheduling::announce_template_now(&mut *tx, &template, now).await?;
    tx.commit().await?;
    Ok(template)
}
