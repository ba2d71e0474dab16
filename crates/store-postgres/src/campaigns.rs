//! Activities and templates on PostgreSQL.

use coupond_store::CampaignStore;

use async_trait::async_trait;
use coupond_domain::{
    Activity, ActivityId, ActivitySpec, MerchantId, Template, TemplateId, TemplateSpec, Timestamp,
};
use coupond_store::{codec, ActivityQuery, NewTemplate, StoreResult, TemplateQuery};
use sqlx::{Postgres, QueryBuilder};

use crate::rows::{self, db_err};
use crate::store::{
    dt, push_activity_status, push_template_status, split_stock, unbind_templates, PgStore,
    ACTIVITY_COLS, TEMPLATE_COLS,
};

#[async_trait]
impl CampaignStore for PgStore {
    async fn insert_activity(&self, spec: &ActivitySpec, now: Timestamp) -> StoreResult<Activity> {
        let sql = format!(
            "INSERT INTO activities (title, kind, cities, enroll_start, enroll_end, run_start,
                                     run_end, spec, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $9) RETURNING {ACTIVITY_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(&spec.title)
            .bind(spec.kind.as_str())
            .bind(codec::cities_to_vec(&spec.cities))
            .bind(dt(spec.enrollment.start))
            .bind(dt(spec.enrollment.end))
            .bind(dt(spec.run.start))
            .bind(dt(spec.run.end))
            .bind(codec::activity_to_json(spec)?)
            .bind(dt(now))
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        rows::activity(&row)
    }

    async fn activity(&self, id: ActivityId) -> StoreResult<Activity> {
        let sql = format!("SELECT {ACTIVITY_COLS} FROM activities WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(id.get())
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        rows::activity(&row)
    }

    async fn list_activities(&self, q: &ActivityQuery) -> StoreResult<Vec<Activity>> {
        let mut b = QueryBuilder::<Postgres>::new(format!(
            "SELECT {ACTIVITY_COLS} FROM activities WHERE id > "
        ));
        b.push_bind(q.page.after.unwrap_or(0));
        if let Some(s) = q.status {
            push_activity_status(&mut b, s, dt(q.now), q.freeze.whole_microseconds() as i64);
        }
        if let Some(c) = q.city {
            b.push(" AND ").push_bind(c.get()).push(" = ANY(cities)");
        }
        if let Some(any) = &q.any_city {
            b.push(" AND cities && ")
                .push_bind(codec::cities_to_vec(any));
        }
        b.push(" ORDER BY id LIMIT ")
            .push_bind(i64::from(q.page.limit));
        let rows = b.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(rows::activity).collect()
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let sql = format!(
            "UPDATE activities SET title = $1, kind = $2, cities = $3, enroll_start = $4,
                enroll_end = $5, run_start = $6, run_end = $7, spec = $8::jsonb, updated_at = $9,
                version = version + 1
             WHERE id = $10 AND version = $11 AND enrollment_seq = $12 AND aborted_at IS NULL
             RETURNING {ACTIVITY_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(&spec.title)
            .bind(spec.kind.as_str())
            .bind(codec::cities_to_vec(&spec.cities))
            .bind(dt(spec.enrollment.start))
            .bind(dt(spec.enrollment.end))
            .bind(dt(spec.run.start))
            .bind(dt(spec.run.end))
            .bind(codec::activity_to_json(spec)?)
            .bind(dt(now))
            .bind(id.get())
            .bind(version)
            .bind(enrollment_seq)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            drop(tx);
            return Err(self.missing_or_conflict("activities", id.get()).await);
        };
        for (template, t) in following {
            let w = t.claim_window();
            sqlx::query(
                "UPDATE templates SET claim_start = $1, claim_end = $2, expires_at = $3,
                    updated_at = $4, version = version + 1
                 WHERE id = $5 AND activity_id = $6",
            )
            .bind(dt(w.start))
            .bind(dt(w.end))
            .bind(dt(t.expires_at()))
            .bind(dt(now))
            .bind(template.get())
            .bind(id.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        let activity = rows::activity(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(activity)
    }

    async fn abort_activity(
        &self,
        id: ActivityId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Activity> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let sql = format!(
            "UPDATE activities SET aborted_at = $1, updated_at = $1, version = version + 1
             WHERE id = $2 AND version = $3 AND aborted_at IS NULL RETURNING {ACTIVITY_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(dt(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            drop(tx);
            return Err(self.missing_or_conflict("activities", id.get()).await);
        };
        sqlx::query(
            "UPDATE templates SET aborted_at = $1, updated_at = $1, version = version + 1
             WHERE activity_id = $2 AND aborted_at IS NULL",
        )
        .bind(dt(now))
        .bind(id.get())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        unbind_templates(&mut tx, "activity_id = $1", id.get()).await?;
        tx.commit().await.map_err(db_err)?;
        rows::activity(&row)
    }

    async fn insert_template(&self, t: &NewTemplate<'_>, now: Timestamp) -> StoreResult<Template> {
        let spec = t.spec;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        if let Some(activity) = spec.activity_id {
            Self::bump_enrollment(&mut tx, activity, t.activity_version).await?;
        }
        let w = spec.claim_window();
        let sql = format!(
            "INSERT INTO templates (merchant_id, activity_id, title, kind, total_stock,
                 per_user_limit, claim_start, claim_end, expires_at, spec, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $11)
             RETURNING {TEMPLATE_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(t.merchant_id.map(MerchantId::get))
            .bind(spec.activity_id.map(ActivityId::get))
            .bind(&spec.title)
            .bind(spec.value.kind().as_str())
            .bind(spec.total_stock)
            .bind(i64::from(spec.per_user_limit))
            .bind(dt(w.start))
            .bind(dt(w.end))
            .bind(dt(spec.expires_at()))
            .bind(codec::template_to_json(spec)?)
            .bind(dt(now))
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        let template = rows::template(&row)?;
        split_stock(&mut tx, template.id, spec.total_stock).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(template)
    }

    async fn template(&self, id: TemplateId) -> StoreResult<Template> {
        let sql = format!("SELECT {TEMPLATE_COLS} FROM templates WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(id.get())
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        rows::template(&row)
    }

    async fn list_templates(&self, q: &TemplateQuery) -> StoreResult<Vec<Template>> {
        let mut b = QueryBuilder::<Postgres>::new(format!(
            "SELECT {TEMPLATE_COLS} FROM templates WHERE id > "
        ));
        b.push_bind(q.page.after.unwrap_or(0));
        if let Some(m) = q.merchant {
            b.push(" AND merchant_id = ").push_bind(m.get());
        }
        if let Some(a) = q.activity {
            b.push(" AND activity_id = ").push_bind(a.get());
        }
        if let Some(s) = q.status {
            push_template_status(&mut b, s, dt(q.now));
        }
        b.push(" ORDER BY id LIMIT ")
            .push_bind(i64::from(q.page.limit));
        let rows = b.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(rows::template).collect()
    }

    async fn activity_templates(&self, id: ActivityId) -> StoreResult<Vec<Template>> {
        let sql =
            format!("SELECT {TEMPLATE_COLS} FROM templates WHERE activity_id = $1 ORDER BY id");
        let rows = sqlx::query(&sql)
            .bind(id.get())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::template).collect()
    }

    async fn update_template(
        &self,
        id: TemplateId,
        version: i64,
        activity_version: Option<i64>,
        spec: &TemplateSpec,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        if let Some(activity) = spec.activity_id {
            Self::bump_enrollment(&mut tx, activity, activity_version).await?;
        }
        let w = spec.claim_window();
        let sql = format!(
            "UPDATE templates SET title = $1, kind = $2, total_stock = $3, per_user_limit = $4,
                claim_start = $5, claim_end = $6, expires_at = $7, spec = $8::jsonb,
                updated_at = $9, version = version + 1
             WHERE id = $10 AND version = $11 RETURNING {TEMPLATE_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(&spec.title)
            .bind(spec.value.kind().as_str())
            .bind(spec.total_stock)
            .bind(i64::from(spec.per_user_limit))
            .bind(dt(w.start))
            .bind(dt(w.end))
            .bind(dt(spec.expires_at()))
            .bind(codec::template_to_json(spec)?)
            .bind(dt(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            drop(tx);
            return Err(self.missing_or_conflict("templates", id.get()).await);
        };
        let template = rows::template(&row)?;
        split_stock(&mut tx, id, spec.total_stock).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(template)
    }

    async fn publish_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let sql = format!(
            "UPDATE templates SET published_at = $1, updated_at = $1, version = version + 1
             WHERE id = $2 AND version = $3 RETURNING {TEMPLATE_COLS}"
        );
        self.update_one_template(&sql, id, version, now).await
    }

    async fn abort_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let sql = format!(
            "UPDATE templates SET aborted_at = $1, updated_at = $1, version = version + 1
             WHERE id = $2 AND version = $3 RETURNING {TEMPLATE_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(dt(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            drop(tx);
            return Err(self.missing_or_conflict("templates", id.get()).await);
        };
        unbind_templates(&mut tx, "id = $1", id.get()).await?;
        let template = rows::template(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(template)
    }
}
