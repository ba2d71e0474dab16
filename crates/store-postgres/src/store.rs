//! [`PgStore`]: the SQL of every [`Store`] method on PostgreSQL.

use coupond_store::Conflict;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use coupond_domain::{
    Activity, ActivityId, ActivitySpec, ActivityStatus, Actor, CodeBatchSpec, Coupon, CouponId,
    CouponStatus, Listing, ListingDraft, ListingId, Merchant, MerchantDraft, MerchantId, OrderId,
    SharedCode, Template, TemplateId, TemplateSpec, TemplateStatus, Timestamp, Transition, UserId,
};
use coupond_store::{
    codec, ActivityQuery, ApiKey, ClaimOutcome, ClaimRequest, CodeBatch, CouponCounts, CouponEvent,
    CouponQuery, Delivery, DeliveryAttempt, DeliveryState, Event, IdempotencyKey, IdempotencyStart,
    Issuance, ListingQuery, LockOutcome, LockRequest, LockRules, Message, MessageContent,
    NewApiKey, NewDelivery, NewIssuance, NewTemplate, NewWebhook, OrderRecord, OrderStep,
    OutboxPosition, PoolStats, PromoCode, Reminder, Store, StoreError, StoreResult, StoredAnswer,
    TemplateAudit, TemplateQuery, UsageRow, Violation, Webhook,
};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, QueryBuilder};
use time::OffsetDateTime;

use crate::rows::{self, db_err};

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// A template's columns. `claimed` is the sum of its stock shards (`template_stock`, see
/// migration 0015); `id` inside that subquery is the template's (the shard table has none).
pub(crate) const TEMPLATE_COLS: &str = "id, merchant_id, spec::text AS spec, claim_start, \
     claim_end, (SELECT COALESCE(SUM(s.claimed), 0)::bigint FROM template_stock s \
     WHERE s.template_id = id) AS claimed, used, given, reserved, created_at, updated_at, \
     published_at, aborted_at, version";
pub(crate) const ACTIVITY_COLS: &str =
    "id, spec::text AS spec, created_at, updated_at, aborted_at, version, enrollment_seq";

/// The PostgreSQL store: a connection pool on one database (and schema).
#[derive(Clone, Debug)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    max: u32,
    /// Where the next claim batch starts looking for a stock shard: batches in flight at once
    /// start on different shards, so they do not wait on each other's (see `claims`).
    pub(crate) shard_cursor: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

pub(crate) fn dt(t: Timestamp) -> OffsetDateTime {
    t.datetime()
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host/db`). Does not migrate: call
    /// [`PgStore::migrate`].
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_in_schema(url, None).await
    }

    /// Connects with `search_path` set to `schema` (created if missing), so that several
    /// independent coupond databases (tests, tenants) can share one PostgreSQL database.
    pub async fn connect_in_schema(url: &str, schema: Option<&str>) -> StoreResult<Self> {
        let mut opts = PgConnectOptions::from_str(url).map_err(StoreError::other)?;
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(StoreError::other("schema names are letters, digits and _"));
            }
            let admin = PgPoolOptions::new()
                .max_connections(1)
                .connect_with(opts.clone())
                .await
                .map_err(db_err)?;
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .execute(&admin)
                .await
                .map_err(db_err)?;
            admin.close().await;
            opts = opts.options([("search_path", schema)]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(DEFAULT_MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts)
            .await
            .map_err(db_err)?;
        Ok(PgStore {
            pool,
            max: DEFAULT_MAX_CONNECTIONS,
            // Processes start at different shards too.
            shard_cursor: std::sync::Arc::new(std::sync::atomic::AtomicU32::new(
                std::process::id().wrapping_mul(7),
            )),
        })
    }

    /// Applies the embedded migrations that have not run yet. Safe to run from several
    /// instances at once: sqlx serialises them with an advisory lock.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations")
            .run(&self.pool)
            .await
            .map_err(StoreError::other)
    }

    async fn missing_or_conflict(&self, table: &str, id: i64) -> StoreError {
        let sql = format!("SELECT 1 FROM {table} WHERE id = $1");
        match sqlx::query(&sql).bind(id).fetch_optional(&self.pool).await {
            Ok(None) => StoreError::NotFound,
            Ok(Some(_)) => StoreError::Conflict(Conflict::Version),
            Err(e) => db_err(e),
        }
    }

    /// Bumps an activity's `enrollment_seq` if it still has `version`; the row lock this takes
    /// serialises the template write with any concurrent edit of the activity.
    async fn bump_enrollment(
        tx: &mut sqlx::Transaction<'static, Postgres>,
        activity: ActivityId,
        version: Option<i64>,
    ) -> StoreResult<()> {
        let bumped = sqlx::query(
            "UPDATE activities SET enrollment_seq = enrollment_seq + 1
             WHERE id = $1 AND version = $2 AND aborted_at IS NULL",
        )
        .bind(activity.get())
        .bind(version.unwrap_or(-1))
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        if bumped.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict(Conflict::Version))
        }
    }

    async fn update_one_template(
        &self,
        sql: &str,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let row = sqlx::query(sql)
            .bind(dt(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        match row {
            Some(r) => rows::template(&r),
            None => Err(self.missing_or_conflict("templates", id.get()).await),
        }
    }
}

/// Removes the bindings of the templates matching `condition` (one `$1` parameter) and gives
/// their listings the slots back, inside the caller's transaction.
async fn unbind_templates(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    condition: &str,
    param: i64,
) -> StoreResult<()> {
    let targets = format!("SELECT id FROM templates WHERE {condition}");
    sqlx::query(&format!(
        "UPDATE listings SET bound = bound - (SELECT COUNT(*) FROM bindings b
             WHERE b.listing_id = listings.id AND b.template_id IN ({targets}))
         WHERE id IN (SELECT listing_id FROM bindings WHERE template_id IN ({targets}))"
    ))
    .bind(param)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    sqlx::query(&format!(
        "DELETE FROM bindings WHERE template_id IN ({targets})"
    ))
    .bind(param)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Appends the SQL form of [`Activity::status`] at `now`.
fn push_activity_status(
    q: &mut QueryBuilder<'_, Postgres>,
    s: ActivityStatus,
    now: OffsetDateTime,
    freeze_us: i64,
) {
    if s == ActivityStatus::Aborted {
        q.push(" AND aborted_at IS NOT NULL");
        return;
    }
    q.push(" AND aborted_at IS NULL");
    let frozen_at = |q: &mut QueryBuilder<'_, Postgres>| {
        q.push(" LEAST(enroll_end, run_start - ")
            .push_bind(freeze_us)
            .push(" * INTERVAL '1 microsecond')");
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

/// Appends the SQL form of [`Template::status`] at `now`.
fn push_template_status(
    q: &mut QueryBuilder<'_, Postgres>,
    s: TemplateStatus,
    now: OffsetDateTime,
) {
    match s {
        TemplateStatus::Aborted => {
            q.push(" AND aborted_at IS NOT NULL");
            return;
        }
        TemplateStatus::Draft => {
            q.push(" AND aborted_at IS NULL AND activity_id IS NULL AND published_at IS NULL");
            return;
        }
        _ => {}
    }
    q.push(" AND aborted_at IS NULL AND (activity_id IS NOT NULL OR published_at IS NOT NULL)");
    match s {
        TemplateStatus::Scheduled => {
            q.push(" AND ").push_bind(now).push(" < claim_start");
        }
        TemplateStatus::Active => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= claim_start AND ")
                .push_bind(now)
                .push(" < claim_end");
        }
        TemplateStatus::Ended => {
            q.push(" AND ")
                .push_bind(now)
                .push(" >= claim_end AND ")
                .push_bind(now)
                .push(" < expires_at");
        }
        TemplateStatus::Expired => {
            q.push(" AND ").push_bind(now).push(" >= expires_at");
        }
        TemplateStatus::Draft | TemplateStatus::Aborted => {}
    }
}

#[async_trait]
impl Store for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.pool.size(),
            idle: self.pool.num_idle() as u32,
            max: self.max,
        }
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn setting_or_init(&self, key: &str, init: &str) -> StoreResult<String> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
        )
        .bind(key)
        .bind(init)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)
    }

    async fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn insert_api_key(&self, k: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey> {
        let row = sqlx::query(
            "INSERT INTO api_keys (hash, prefix, role, merchant_id, label, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
        )
        .bind(&k.hash[..])
        .bind(&k.prefix)
        .bind(k.role.as_str())
        .bind(k.merchant_id.map(MerchantId::get))
        .bind(&k.label)
        .bind(dt(now))
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn api_key_by_hash(&self, hash: &[u8; 32]) -> StoreResult<ApiKey> {
        let row = sqlx::query("SELECT * FROM api_keys WHERE hash = $1")
            .bind(&hash[..])
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query("SELECT * FROM api_keys ORDER BY id")
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::api_key).collect()
    }

    async fn revoke_api_key(&self, id: i64, now: Timestamp) -> StoreResult<ApiKey> {
        let row = sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING *",
        )
        .bind(dt(now))
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn insert_merchant(&self, m: &MerchantDraft, now: Timestamp) -> StoreResult<Merchant> {
        let row = sqlx::query(
            "INSERT INTO merchants (name, short_name, cities, created_at)
             VALUES ($1, $2, $3, $4) RETURNING *",
        )
        .bind(&m.name)
        .bind(&m.short_name)
        .bind(codec::cities_to_vec(&m.cities))
        .bind(dt(now))
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::merchant(&row)
    }

    async fn merchant(&self, id: MerchantId) -> StoreResult<Merchant> {
        let row = sqlx::query("SELECT * FROM merchants WHERE id = $1")
            .bind(id.get())
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        rows::merchant(&row)
    }

    async fn insert_listing(
        &self,
        merchant: MerchantId,
        l: &ListingDraft,
        now: Timestamp,
    ) -> StoreResult<Listing> {
        let row = sqlx::query(
            "INSERT INTO listings (merchant_id, external_id, city_id, category_id, title, price,
                                   deposit, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *",
        )
        .bind(merchant.get())
        .bind(&l.external_id)
        .bind(l.city_id.get())
        .bind(l.category_id.get())
        .bind(&l.title)
        .bind(l.price.minor())
        .bind(l.deposit.minor())
        .bind(dt(now))
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::listing(&row)
    }

    async fn listing(&self, id: ListingId) -> StoreResult<Listing> {
        let row = sqlx::query("SELECT * FROM listings WHERE id = $1")
            .bind(id.get())
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        rows::listing(&row)
    }

    async fn update_listing(
        &self,
        id: ListingId,
        l: &ListingDraft,
        now: Timestamp,
    ) -> StoreResult<Listing> {
        let row = sqlx::query(
            "UPDATE listings SET external_id = $1, city_id = $2, category_id = $3, title = $4,
                price = $5, deposit = $6, updated_at = $7
             WHERE id = $8 RETURNING *",
        )
        .bind(&l.external_id)
        .bind(l.city_id.get())
        .bind(l.category_id.get())
        .bind(&l.title)
        .bind(l.price.minor())
        .bind(l.deposit.minor())
        .bind(dt(now))
        .bind(id.get())
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::listing(&row)
    }

    async fn list_listings(&self, q: &ListingQuery) -> StoreResult<Vec<Listing>> {
        let mut b = QueryBuilder::<Postgres>::new("SELECT * FROM listings WHERE id > ");
        b.push_bind(q.page.after.unwrap_or(0));
        if let Some(m) = q.merchant {
            b.push(" AND merchant_id = ").push_bind(m.get());
        }
        if let Some(c) = q.city {
            b.push(" AND city_id = ").push_bind(c.get());
        }
        if let Some(c) = q.category {
            b.push(" AND category_id = ").push_bind(c.get());
        }
        // A template or an activity names few listings: start from its bindings rather than
        // walk every listing (the EXISTS below still checks the template is live).
        if let Some(t) = q.template {
            b.push(" AND id IN (SELECT listing_id FROM bindings WHERE template_id = ")
                .push_bind(t.get())
                .push(")");
        } else if let Some(a) = q.activity {
            b.push(
                " AND id IN (SELECT b.listing_id FROM bindings b \
                 JOIN templates t ON t.id = b.template_id WHERE t.activity_id = ",
            )
            .push_bind(a.get())
            .push(")");
        }
        if q.wants_coupon() || q.has_coupon == Some(false) {
            b.push(if q.has_coupon == Some(false) {
                " AND NOT EXISTS"
            } else {
                " AND EXISTS"
            });
            b.push(
                " (SELECT 1 FROM bindings b JOIN templates t ON t.id = b.template_id \
                 WHERE b.listing_id = listings.id",
            );
            push_template_status(&mut b, TemplateStatus::Active, dt(q.now));
            if let Some(k) = q.kind {
                b.push(" AND t.kind = ").push_bind(k.as_str());
            }
            if let Some(a) = q.activity {
                b.push(" AND t.activity_id = ").push_bind(a.get());
            }
            if let Some(t) = q.template {
                b.push(" AND t.id = ").push_bind(t.get());
            }
            b.push(")");
        }
        b.push(" ORDER BY id LIMIT ")
            .push_bind(i64::from(q.page.limit));
        let rows = b.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(rows::listing).collect()
    }

    async fn live_templates(
        &self,
        listings: &[ListingId],
        now: Timestamp,
    ) -> StoreResult<Vec<(ListingId, Template)>> {
        if listings.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = listings.iter().map(|l| l.get()).collect();
        let mut b = QueryBuilder::<Postgres>::new(format!(
            "SELECT b.listing_id, {TEMPLATE_COLS} FROM bindings b \
             JOIN templates t ON t.id = b.template_id WHERE b.listing_id = ANY("
        ));
        b.push_bind(ids).push(")");
        push_template_status(&mut b, TemplateStatus::Active, dt(now));
        b.push(" ORDER BY b.listing_id, t.id");
        let rows = b.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((rows::listing_id(r)?, rows::template(r)?)))
            .collect()
    }

    async fn listing_bindings(&self, listing: ListingId) -> StoreResult<Vec<TemplateId>> {
        let ids: Vec<i64> = sqlx::query_scalar(
            "SELECT template_id FROM bindings WHERE listing_id = $1 ORDER BY template_id",
        )
        .bind(listing.get())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        ids.into_iter()
            .map(|i| TemplateId::new(i).map_err(StoreError::other))
            .collect()
    }

    async fn bind(
        &self,
        listing: ListingId,
        template: TemplateId,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Lock the listing first: concurrent binds to it queue here, so the count and the
        // existence check below see every committed binding. (NO KEY UPDATE: compatible with
        // the KEY SHARE locks foreign keys take.)
        let found = sqlx::query("SELECT bound FROM listings WHERE id = $1 FOR NO KEY UPDATE")
            .bind(listing.get())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        if found.is_none() {
            return Err(StoreError::NotFound);
        }
        let exists =
            sqlx::query("SELECT 1 FROM bindings WHERE listing_id = $1 AND template_id = $2")
                .bind(listing.get())
                .bind(template.get())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
        if exists.is_some() {
            return Ok(false);
        }
        let counted =
            sqlx::query("UPDATE listings SET bound = bound + 1 WHERE id = $1 AND bound < $2")
                .bind(listing.get())
                .bind(i64::from(max))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if counted.rows_affected() != 1 {
            return Err(StoreError::Conflict(Conflict::Limit));
        }
        sqlx::query("INSERT INTO bindings (listing_id, template_id, bound_at) VALUES ($1, $2, $3)")
            .bind(listing.get())
            .bind(template.get())
            .bind(dt(now))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn unbind(&self, listing: ListingId, template: TemplateId) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Same lock order as `bind` (listing, then binding), so the two cannot deadlock.
        sqlx::query("SELECT 1 FROM listings WHERE id = $1 FOR NO KEY UPDATE")
            .bind(listing.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let removed =
            sqlx::query("DELETE FROM bindings WHERE listing_id = $1 AND template_id = $2")
                .bind(listing.get())
                .bind(template.get())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if removed.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("UPDATE listings SET bound = bound - 1 WHERE id = $1")
            .bind(listing.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

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

    async fn claim_batch(
        &self,
        template: TemplateId,
        claims: &[ClaimRequest],
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimOutcome>> {
        self.claim_batch_tx(template, claims, now).await
    }

    fn claim_lanes(&self) -> usize {
        // A quarter of the pool: batches of one hot template take different stock shards and
        // overlap their round trips and commits; the rest of the pool serves everything else.
        (self.max as usize / 4).clamp(1, 8)
    }

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        let mut b = QueryBuilder::<Postgres>::new("SELECT * FROM coupons WHERE user_id = ");
        b.push_bind(q.user.as_str().to_owned());
        let now = dt(q.now);
        match q.status {
            None => {}
            Some(CouponStatus::Unused) => {
                b.push(" AND status = 'unused' AND valid_until > ")
                    .push_bind(now);
            }
            Some(CouponStatus::Expired) => {
                b.push(" AND (status = 'expired' OR (status = 'unused' AND valid_until <= ")
                    .push_bind(now)
                    .push("))");
            }
            Some(s) => {
                b.push(" AND status = ").push_bind(s.as_str());
            }
        }
        if let Some((vu, id)) = q.after {
            b.push(" AND (valid_until, id) > (")
                .push_bind(dt(vu))
                .push(", ")
                .push_bind(id)
                .push(")");
        }
        b.push(" ORDER BY valid_until, id LIMIT ")
            .push_bind(i64::from(q.limit));
        let rows = b.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(rows::coupon).collect()
    }

    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit> {
        let row = sqlx::query(
            "SELECT t.total_stock, t.per_user_limit,
                    (SELECT COALESCE(SUM(s.claimed), 0)::bigint FROM template_stock s
                     WHERE s.template_id = t.id) AS claimed,
                    (SELECT COUNT(*) FROM coupons c WHERE c.template_id = t.id) AS coupons,
                    (SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM coupons c
                        WHERE c.template_id = t.id GROUP BY c.user_id) per_user) AS max_per_user
             FROM templates t WHERE t.id = $1",
        )
        .bind(template.get())
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        let get = |col: &str| -> StoreResult<i64> { sqlx::Row::try_get(&row, col).map_err(db_err) };
        Ok(TemplateAudit {
            total_stock: get("total_stock")?,
            claimed: get("claimed")?,
            coupons: get("coupons")?,
            per_user_limit: get("per_user_limit")?,
            max_per_user: get("max_per_user")?,
        })
    }

    async fn count_coupons(&self, template: TemplateId) -> StoreResult<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM coupons WHERE template_id = $1")
            .bind(template.get())
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)
    }

    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64> {
        let ids: Vec<i64> = coupons.iter().map(|c| c.get()).collect();
        sqlx::query_scalar("SELECT COUNT(*) FROM coupons WHERE template_id = $1 AND id = ANY($2)")
            .bind(template.get())
            .bind(ids)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)
    }

    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon> {
        let row = sqlx::query("SELECT * FROM coupons WHERE id = $1")
            .bind(id.get())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::coupon(&row)
    }

    async fn coupon_owners(&self, template: TemplateId) -> StoreResult<Vec<(CouponId, UserId)>> {
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, user_id FROM coupons WHERE template_id = $1 ORDER BY id")
                .bind(template.get())
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
        rows.into_iter()
            .map(|(id, user)| {
                Ok((
                    CouponId::new(id).map_err(StoreError::other)?,
                    UserId::parse(&user).map_err(StoreError::other)?,
                ))
            })
            .collect()
    }

    async fn coupon_history(&self, coupon: CouponId) -> StoreResult<Vec<CouponEvent>> {
        let rows = sqlx::query("SELECT * FROM coupon_events WHERE coupon_id = $1 ORDER BY id")
            .bind(coupon.get())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::coupon_event).collect()
    }

    async fn events_after(&self, after: i64, limit: u32) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query("SELECT * FROM outbox WHERE id > $1 ORDER BY id LIMIT $2")
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::event).collect()
    }

    async fn set_shared_code(
        &self,
        template: TemplateId,
        code: Option<&SharedCode>,
    ) -> StoreResult<()> {
        self.set_shared_code_tx(template, code).await
    }

    async fn shared_code(&self, template: TemplateId) -> StoreResult<Option<String>> {
        self.shared_code_of(template).await
    }

    async fn promo_code(&self, code: &str) -> StoreResult<PromoCode> {
        self.promo_code_by_text(code).await
    }

    async fn insert_code_batch(
        &self,
        template: TemplateId,
        spec: &CodeBatchSpec,
        now: Timestamp,
    ) -> StoreResult<CodeBatch> {
        self.insert_code_batch_tx(template, spec, now).await
    }

    async fn code_batch(&self, id: i64) -> StoreResult<CodeBatch> {
        self.code_batch_by_id(id).await
    }

    async fn unfinished_code_batches(&self) -> StoreResult<Vec<CodeBatch>> {
        self.unfinished_batches().await
    }

    async fn add_codes(
        &self,
        batch: i64,
        codes: &[String],
        now: Timestamp,
    ) -> StoreResult<CodeBatch> {
        self.add_codes_tx(batch, codes, now).await
    }

    async fn batch_codes(
        &self,
        batch: i64,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<PromoCode>> {
        self.codes_of_batch(batch, after, limit).await
    }

    async fn coupons_by_ids(&self, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
        self.coupons_with_ids(ids).await
    }

    async fn templates_by_ids(&self, ids: &[TemplateId]) -> StoreResult<Vec<Template>> {
        self.templates_with_ids(ids).await
    }

    async fn lock_order(
        &self,
        req: &LockRequest<'_>,
        rules: &LockRules<'_>,
    ) -> StoreResult<LockOutcome> {
        self.lock_order_tx(req, rules).await
    }

    async fn confirm_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        self.confirm_order_tx(order, actor, now).await
    }

    async fn cancel_order(
        &self,
        order: &OrderId,
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<OrderStep> {
        self.cancel_order_tx(order, actor, now).await
    }

    async fn expire_locks(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<OrderId>> {
        self.expire_locks_tx(now, limit).await
    }

    async fn order(&self, order: &OrderId) -> StoreResult<OrderRecord> {
        self.order_by_id(order).await
    }

    async fn order_coupons(&self, order: &OrderId) -> StoreResult<Vec<Coupon>> {
        self.coupons_of_order(order).await
    }

    async fn idempotency_start(
        &self,
        key: &IdempotencyKey,
        now: Timestamp,
        stale_before: Timestamp,
        expires: Timestamp,
    ) -> StoreResult<IdempotencyStart> {
        self.idempotency_start_tx(key, now, stale_before, expires)
            .await
    }

    async fn idempotency_finish(&self, key: &str, answer: &StoredAnswer) -> StoreResult<()> {
        self.idempotency_finish_tx(key, answer).await
    }

    async fn idempotency_abandon(&self, key: &str) -> StoreResult<()> {
        self.idempotency_abandon_tx(key).await
    }

    async fn idempotency_purge(&self, now: Timestamp) -> StoreResult<u64> {
        self.idempotency_purge_tx(now).await
    }

    async fn try_lease(
        &self,
        name: &str,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        self.try_lease_tx(name, holder, now, until).await
    }

    async fn unannounced_activities(&self) -> StoreResult<Vec<(Activity, Option<ActivityStatus>)>> {
        self.unannounced_activities_q().await
    }

    async fn due_templates(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<(Template, Option<TemplateStatus>)>> {
        self.due_templates_q(now, limit).await
    }

    async fn announce_activity(
        &self,
        id: ActivityId,
        from: Option<ActivityStatus>,
        transitions: &[Transition<ActivityStatus>],
    ) -> StoreResult<bool> {
        self.announce_activity_tx(id, from, transitions).await
    }

    async fn announce_template(
        &self,
        id: TemplateId,
        from: Option<TemplateStatus>,
        transitions: &[Transition<TemplateStatus>],
    ) -> StoreResult<bool> {
        self.announce_template_tx(id, from, transitions).await
    }

    async fn expire_coupons(&self, now: Timestamp, limit: u32) -> StoreResult<u64> {
        self.expire_coupons_tx(now, limit).await
    }

    async fn next_due(&self, now: Timestamp) -> StoreResult<Option<Timestamp>> {
        self.next_due_q(now).await
    }

    async fn outbox_read(&self, after: OutboxPosition, limit: u32) -> StoreResult<Vec<Event>> {
        self.outbox_read_q(after, limit).await
    }

    async fn outbox_head(&self) -> StoreResult<OutboxPosition> {
        self.outbox_head_q().await
    }

    async fn sink_position(&self, sink: &str) -> StoreResult<OutboxPosition> {
        self.sink_position_q(sink).await
    }

    async fn sink_ack(&self, sink: &str, at: OutboxPosition) -> StoreResult<()> {
        self.sink_ack_q(sink, at).await
    }

    async fn plan_reminders(&self, reminders: &[Reminder]) -> StoreResult<()> {
        self.plan_reminders_tx(reminders).await
    }

    async fn cancel_reminder(
        &self,
        user: &UserId,
        template: TemplateId,
        day: i64,
    ) -> StoreResult<()> {
        self.cancel_reminder_tx(user, template, day).await
    }

    async fn due_reminders(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<Reminder>> {
        self.due_reminders_q(now, limit).await
    }

    async fn send_reminder(
        &self,
        r: &Reminder,
        content: &MessageContent,
        now: Timestamp,
    ) -> StoreResult<bool> {
        self.send_reminder_tx(r, content, now).await
    }

    async fn deliver_messages(
        &self,
        content: &MessageContent,
        recipients: &[(UserId, String)],
        now: Timestamp,
    ) -> StoreResult<u64> {
        self.deliver_messages_tx(content, recipients, now).await
    }

    async fn user_messages(
        &self,
        user: &UserId,
        after: Option<(bool, i64)>,
        limit: u32,
    ) -> StoreResult<Vec<Message>> {
        self.user_messages_q(user, after, limit).await
    }

    async fn mark_read(&self, user: &UserId, id: i64, now: Timestamp) -> StoreResult<Message> {
        self.mark_read_tx(user, id, now).await
    }

    async fn insert_issuance(
        &self,
        new: &NewIssuance<'_>,
        now: Timestamp,
    ) -> StoreResult<(Issuance, bool)> {
        self.insert_issuance_q(new, now).await
    }

    async fn issuance(&self, id: i64) -> StoreResult<Issuance> {
        self.issuance_q(id).await
    }

    async fn open_issuances(&self) -> StoreResult<Vec<i64>> {
        self.open_issuances_q().await
    }

    async fn issuance_users(&self, id: i64) -> StoreResult<Vec<UserId>> {
        self.issuance_users_q(id).await
    }

    async fn issue_chunk(
        &self,
        id: i64,
        users: &[UserId],
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Option<Issuance>> {
        self.issue_chunk_tx(id, users, max, now).await
    }

    async fn coupon_counts(
        &self,
        templates: &[TemplateId],
        now: Timestamp,
        hours: u32,
    ) -> StoreResult<Vec<(TemplateId, CouponCounts)>> {
        self.coupon_counts_q(templates, now, hours).await
    }

    async fn usage_between(&self, from: Timestamp, to: Timestamp) -> StoreResult<Vec<UsageRow>> {
        self.usage_between_q(from, to).await
    }

    async fn insert_webhook(
        &self,
        new: &NewWebhook<'_>,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<Webhook> {
        self.insert_webhook_q(new, max, now).await
    }

    async fn webhook(&self, id: i64) -> StoreResult<Webhook> {
        self.webhook_q(id).await
    }

    async fn list_webhooks(&self, merchant: Option<MerchantId>) -> StoreResult<Vec<Webhook>> {
        self.list_webhooks_q(merchant).await
    }

    async fn disable_webhook(&self, id: i64, now: Timestamp) -> StoreResult<Webhook> {
        self.disable_webhook_tx(id, now).await
    }

    async fn enqueue_deliveries(&self, d: &[NewDelivery], now: Timestamp) -> StoreResult<u64> {
        self.enqueue_deliveries_q(d, now).await
    }

    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: u32,
        skip: &[i64],
    ) -> StoreResult<Vec<Delivery>> {
        self.due_deliveries_q(now, limit, skip).await
    }

    async fn record_attempt(
        &self,
        delivery: i64,
        attempt: &DeliveryAttempt,
        state: DeliveryState,
        next: Timestamp,
    ) -> StoreResult<()> {
        self.record_attempt_tx(delivery, attempt, state, next).await
    }

    async fn deliveries(
        &self,
        webhook: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>> {
        self.deliveries_q(webhook, before, limit).await
    }

    async fn audit(&self, now: Timestamp, grace: time::Duration) -> StoreResult<Vec<Violation>> {
        self.audit_q(now, grace).await
    }
}

/// Splits template `id`'s stock into its shards (migration 0015), keeping what was claimed.
async fn split_stock(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    id: TemplateId,
    total: i64,
) -> StoreResult<()> {
    sqlx::query("SELECT coupond_split_stock($1, $2)")
        .bind(id.get())
        .bind(total)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}
