//! Activities and templates ([`ActivityStore`](coupond_store::ActivityStore),
//! [`TemplateStore`](coupond_store::TemplateStore)), on every backend.
//!
//! Templates are read with [`Db::template_columns`] (PostgreSQL derives `claimed` from its
//! stock shards), and a template's stock, once written, goes through [`Db::template_stock`]
//! (PostgreSQL splits it into those shards). Lists filter by status in SQL
//! ([`push_activity_status`], and the catalog's `push_template_status`). Templates' own
//! reads and writes are in `templates`; activities and the shared steps stay here.

use coupond_domain::{
    Activity, ActivityId, ActivitySpec, ActivityStatus, TemplateId, TemplateSpec, Timestamp,
};
use coupond_store::{codec, ActivityQuery, Conflict, Narrow, StoreError, StoreResult};

pub mod steering;
mod templates;

pub use templates::{
    abort_template, activity_templates, insert_template, list_templates, publish_template,
    review_template, template, update_template,
};

use crate::backend::{Backend, SqlStore};
use crate::{missing_or_conflict, sql, Db, Dialect, Exec, Json, Query, Row, Work};
use coupond_domain::Actor;
use coupond_domain::Pause;
use coupond_domain::Review;
use coupond_domain::Template;
use coupond_store::ActivityStore;
use coupond_store::NewTemplate;
use coupond_store::TemplateEdit;
use coupond_store::TemplateQuery;
use coupond_store::TemplateStore;

/// An activity's columns (its cities are read from `spec`), as [`activity_row`] reads them.
pub(crate) const ACTIVITY_COLS: &str = "id, spec, created_at, updated_at, aborted_at, version, \
     enrollment_seq, paused_at, pause_reason";

pub async fn insert_activity(
    db: &dyn Db,
    spec: &ActivitySpec,
    now: Timestamp,
) -> StoreResult<Activity> {
    let q = sql(format!(
        "INSERT INTO activities (title, kind, cities, enroll_start, enroll_end, run_start,
                                 run_end, spec, created_at, updated_at, external_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10) RETURNING {ACTIVITY_COLS}"
    ));
    let q = bind_activity(q, spec)?
        .bind(now)
        .bind(spec.reference.external_id.as_deref());
    let row = db.write_one(q).await?;
    activity_row(&row)
}

pub async fn activity(db: &dyn Db, id: ActivityId) -> StoreResult<Activity> {
    let q = sql(format!(
        "SELECT {ACTIVITY_COLS} FROM activities WHERE id = $1"
    ))
    .bind(id.get());
    activity_row(&db.read_one(q).await?)
}

pub async fn list_activities(db: &dyn Db, q: &ActivityQuery) -> StoreResult<Vec<Activity>> {
    let mut s = sql(format!(
        "SELECT {ACTIVITY_COLS} FROM activities WHERE id > "
    ));
    s.push_bind(q.page.after.unwrap_or(0));
    push_activity_filter(&mut s, db.dialect(), q);
    s.push(" ORDER BY id LIMIT ")
        .push_bind(i64::from(q.page.limit));
    db.read_all(s).await?.iter().map(activity_row).collect()
}

/// How many activities `q`'s filters match, every page together.
pub async fn count_activities(db: &dyn Db, q: &ActivityQuery) -> StoreResult<i64> {
    let mut s = sql("SELECT COUNT(*) AS n FROM activities WHERE 1 = 1");
    push_activity_filter(&mut s, db.dialect(), q);
    db.read_one(s).await?.i64("n")
}

/// `q`'s status and city filters, as `AND ...` conditions.
fn push_activity_filter(s: &mut Query, d: Dialect, q: &ActivityQuery) {
    if let Some(st) = q.status {
        push_activity_status(s, d, st, q.now, q.freeze.whole_microseconds() as i64);
    }
    if let Some(c) = q.city {
        let city = s.param(c.get());
        s.push(" AND ")
            .push(&d.list_has("activities.cities", &city));
    }
    if let Some(any) = &q.any_city {
        let cities = s.param(codec::cities_to_vec(any));
        s.push(" AND ")
            .push(&d.lists_overlap("activities.cities", &cities));
    }
    push_narrow(s, d, &q.narrow);
}

/// Appends ` AND` the [`Narrow`] filters, over the columns templates and activities share
/// (`kind`, `paused_at`, `external_id`, the reference in `spec`).
fn push_narrow(s: &mut Query, d: Dialect, n: &Narrow) {
    for (key, value) in [("source", &n.source), ("type", &n.source_type)] {
        if let Some(v) = value {
            s.push(" AND ")
                .push(&d.reference("spec", key))
                .push(" = ")
                .push_bind(v.as_str());
        }
    }
    if let Some(k) = n.kind {
        s.push(" AND kind = ").push_bind(k.as_str());
    }
    match n.paused {
        Some(true) => s.push(" AND paused_at IS NOT NULL"),
        Some(false) => s.push(" AND paused_at IS NULL"),
        None => s,
    };
    if let Some(e) = &n.external_id {
        s.push(" AND external_id = ").push_bind(e.as_str());
    }
}

/// Replaces the activity's terms (checking `version` and `enrollment_seq`) and moves the
/// windows of the templates in `following` with it, in one transaction.
pub async fn update_activity(
    db: &dyn Db,
    id: ActivityId,
    version: i64,
    enrollment_seq: i64,
    spec: &ActivitySpec,
    following: &[(TemplateId, TemplateSpec)],
    now: Timestamp,
) -> StoreResult<Activity> {
    let q = sql(format!(
        "UPDATE activities SET title = $1, kind = $2, cities = $3, enroll_start = $4,
            enroll_end = $5, run_start = $6, run_end = $7, spec = $8, updated_at = $9,
            version = version + 1, external_id = $10
         WHERE id = $11 AND version = $12 AND enrollment_seq = $13 AND aborted_at IS NULL
         RETURNING {ACTIVITY_COLS}"
    ));
    let q = bind_activity(q, spec)?
        .bind(now)
        .bind(spec.reference.external_id.as_deref())
        .bind(id.get())
        .bind(version)
        .bind(enrollment_seq);
    let mut tx = db.begin(Work::Request).await?;
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "activities", id.get()).await);
    };
    for (template, t) in following {
        let w = t.claim_window();
        tx.execute(
            sql(
                "UPDATE templates SET claim_start = $1, claim_end = $2, expires_at = $3,
                    updated_at = $4, version = version + 1
                 WHERE id = $5 AND activity_id = $6",
            )
            .bind(w.start)
            .bind(w.end)
            .bind(t.expires_at())
            .bind(now)
            .bind(template.get())
            .bind(id.get()),
        )
        .await?;
    }
    let activity = activity_row(&row)?;
    tx.commit().await?;
    Ok(activity)
}

/// Aborts the activity, every template in it, and their bindings, in one transaction.
pub async fn abort_activity(
    db: &dyn Db,
    id: ActivityId,
    version: i64,
    now: Timestamp,
) -> StoreResult<Activity> {
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!(
        "UPDATE activities SET aborted_at = $1, updated_at = $1, version = version + 1
         WHERE id = $2 AND version = $3 AND aborted_at IS NULL RETURNING {ACTIVITY_COLS}"
    ))
    .bind(now)
    .bind(id.get())
    .bind(version);
    let Some(row) = tx.fetch_optional(q).await? else {
        return Err(missing_or_conflict(&mut *tx, "activities", id.get()).await);
    };
    tx.execute(
        sql(
            "UPDATE templates SET aborted_at = $1, updated_at = $1, version = version + 1
             WHERE activity_id = $2 AND aborted_at IS NULL",
        )
        .bind(now)
        .bind(id.get()),
    )
    .await?;
    unbind_templates(&mut *tx, "activity_id = $1", id.get()).await?;
    tx.commit().await?;
    activity_row(&row)
}

/// Binds `$1` to `$8` of an activity write: its columns and `spec` document.
fn bind_activity(q: Query, spec: &ActivitySpec) -> StoreResult<Query> {
    Ok(q.bind(spec.title.as_str())
        .bind(spec.kind.as_str())
        .bind(codec::cities_to_vec(&spec.cities))
        .bind(spec.enrollment.start)
        .bind(spec.enrollment.end)
        .bind(spec.run.start)
        .bind(spec.run.end)
        .bind(Json(codec::activity_to_json(spec)?)))
}

/// Bumps an activity's `enrollment_seq` if it still has `version` and is not aborted, inside
/// the caller's transaction: the template write and the bump commit together, and the row
/// lock this takes serialises the template write with any concurrent edit of the activity.
pub(super) async fn bump_enrollment<E: Exec + ?Sized>(
    ex: &mut E,
    activity: ActivityId,
    version: Option<i64>,
) -> StoreResult<()> {
    let bumped = ex
        .execute(
            sql("UPDATE activities SET enrollment_seq = enrollment_seq + 1
                 WHERE id = $1 AND version = $2 AND aborted_at IS NULL")
            .bind(activity.get())
            .bind(version.unwrap_or(-1)),
        )
        .await?;
    if bumped == 1 {
        Ok(())
    } else {
        Err(StoreError::Conflict(Conflict::Version))
    }
}

/// Removes the bindings of the templates matching `condition` (on `$1`, which is `param`) and
/// gives their listings the slots back, inside the caller's transaction.
pub(super) async fn unbind_templates<E: Exec + ?Sized>(
    ex: &mut E,
    condition: &str,
    param: i64,
) -> StoreResult<()> {
    let targets = format!("SELECT id FROM templates WHERE {condition}");
    ex.execute(
        sql(format!(
            "UPDATE listings SET bound = bound - (SELECT COUNT(*) FROM bindings b
                 WHERE b.listing_id = listings.id AND b.template_id IN ({targets}))
             WHERE id IN (SELECT listing_id FROM bindings WHERE template_id IN ({targets}))"
        ))
        .bind(param),
    )
    .await?;
    ex.execute(
        sql(format!(
            "DELETE FROM bindings WHERE template_id IN ({targets})"
        ))
        .bind(param),
    )
    .await?;
    Ok(())
}

pub(crate) fn activity_row(r: &Row) -> StoreResult<Activity> {
    let id = r.i64("id")?;
    Ok(Activity {
        id: ActivityId::new(id).map_err(StoreError::other)?,
        spec: codec::activity_from_json(id, r.str("spec")?)?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        aborted_at: r.opt_time("aborted_at")?,
        pause: steering::pause_row(r, false)?,
        version: r.i64("version")?,
        enrollment_seq: r.i64("enrollment_seq")?,
    })
}

/// Appends ` AND` the activity having status `s` at `now`, with a freeze period of
/// `freeze_us` microseconds before the run starts.
pub fn push_activity_status(
    q: &mut Query,
    d: Dialect,
    s: ActivityStatus,
    now: Timestamp,
    freeze_us: i64,
) {
    if s == ActivityStatus::Aborted {
        q.push(" AND aborted_at IS NOT NULL");
        return;
    }
    q.push(" AND aborted_at IS NULL");
    // Enrolment closes at its end or when the freeze before the run begins, if earlier.
    let frozen_at = |q: &mut Query| {
        let freeze = q.param(freeze_us);
        let at = d.least("enroll_end", &d.minus_micros("run_start", &freeze));
        q.push(" ").push(&at);
    };
    match s {
        ActivityStatus::Scheduled => {
            q.push(" AND ").push_bind(now).push(" < enroll_start");
        }
        ActivityStatus::Enrolling => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= enroll_start AND ")
                .push_bind(now)
                .push(" <");
            frozen_at(q);
        }
        ActivityStatus::Frozen => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= enroll_start AND ")
                .push_bind(now)
                .push(" >=");
            frozen_at(q);
            q.push(" AND ").push_bind(now).push(" < run_start");
        }
        ActivityStatus::Running => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= run_start AND ")
                .push_bind(now)
                .push(" < run_end");
        }
        ActivityStatus::Ended => {
            q.push(" AND ").push_bind(now).push(" >= run_end");
        }
        ActivityStatus::Aborted => {}
    }
}

#[async_trait::async_trait]
impl<B: Backend> ActivityStore for SqlStore<B> {
    async fn insert_activity(&self, spec: &ActivitySpec, now: Timestamp) -> StoreResult<Activity> {
        insert_activity(&self.db, spec, now).await
    }
    async fn activity(&self, id: ActivityId) -> StoreResult<Activity> {
        activity(&self.db, id).await
    }
    async fn list_activities(&self, q: &ActivityQuery) -> StoreResult<Vec<Activity>> {
        list_activities(&self.db, q).await
    }
    async fn count_activities(&self, q: &ActivityQuery) -> StoreResult<i64> {
        count_activities(&self.db, q).await
    }
    async fn update_activity(
        &self,
        id: ActivityId,
        version: i64,
        enrollment_seq: i64,
        spec: &ActivitySpec,
        following: &[(TemplateId, TemplateSpec)],
        now: Timestamp,
    ) -> StoreResult<Activity> {
        update_activity(&self.db, id, version, enrollment_seq, spec, following, now).await
    }
    async fn abort_activity(
        &self,
        id: ActivityId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Activity> {
        abort_activity(&self.db, id, version, now).await
    }
    async fn set_activity_pause(
        &self,
        id: ActivityId,
        version: i64,
        pause: Option<&Pause>,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Activity> {
        steering::set_activity_pause(&self.db, id, version, pause, actor, now).await
    }
}

#[async_trait::async_trait]
impl<B: Backend> TemplateStore for SqlStore<B> {
    async fn insert_template(&self, t: &NewTemplate<'_>, now: Timestamp) -> StoreResult<Template> {
        insert_template(&self.db, t, now).await
    }
    async fn template(&self, id: TemplateId) -> StoreResult<Template> {
        template(&self.db, id).await
    }
    async fn list_templates(&self, q: &TemplateQuery) -> StoreResult<Vec<Template>> {
        list_templates(&self.db, q).await
    }
    async fn activity_templates(&self, id: ActivityId) -> StoreResult<Vec<Template>> {
        activity_templates(&self.db, id).await
    }
    async fn update_template(
        &self,
        id: TemplateId,
        version: i64,
        activity_version: Option<i64>,
        spec: &TemplateSpec,
        edit: Option<TemplateEdit<'_>>,
        now: Timestamp,
    ) -> StoreResult<Template> {
        update_template(&self.db, id, version, activity_version, spec, edit, now).await
    }
    async fn publish_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        publish_template(&self.db, id, version, now).await
    }
    async fn abort_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        abort_template(&self.db, id, version, now).await
    }
    async fn review_template(
        &self,
        id: TemplateId,
        version: i64,
        review: &Review,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Template> {
        review_template(&self.db, id, version, review, actor, now).await
    }
    async fn set_template_pause(
        &self,
        id: TemplateId,
        version: i64,
        pause: Option<&Pause>,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Template> {
        steering::set_template_pause(&self.db, id, version, pause, actor, now).await
    }
    async fn stop_template(
        &self,
        id: TemplateId,
        version: i64,
        spec: &TemplateSpec,
        edit: TemplateEdit<'_>,
        now: Timestamp,
    ) -> StoreResult<Template> {
        steering::stop_template(&self.db, id, version, spec, edit, now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_freeze_is_written_in_each_dialect() {
        let now = Timestamp::from_unix_micros(1_700_000_000_000_000).unwrap();
        let mut q = sql("SELECT 1 FROM activities WHERE id > $1").bind(0_i64);
        push_activity_status(&mut q, Dialect::Sqlite, ActivityStatus::Enrolling, now, 5);
        assert!(q.text().ends_with("$3 < MIN(enroll_end, run_start - $4)"));
        let mut q = sql("SELECT 1 FROM activities WHERE id > $1").bind(0_i64);
        push_activity_status(&mut q, Dialect::Postgres, ActivityStatus::Frozen, now, 5);
        let pg = "$3 >= LEAST(enroll_end, run_start - $4 * INTERVAL '1 microsecond') AND $5 <";
        assert!(q.text().contains(pg), "{}", q.text());
        assert_eq!(q.args().len(), 5);
    }
}
