//! [`PgStore`]: the SQL of every [`Store`] method on PostgreSQL.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use coupond_domain::{
    Activity, ActivityId, ActivitySpec, ActivityStatus, Coupon, CouponId, CouponStatus, Listing,
    ListingDraft, ListingId, Merchant, MerchantDraft, MerchantId, Template, TemplateId,
    TemplateSpec, TemplateStatus, Timestamp,
};
use coupond_store::{
    codec, ActivityQuery, ApiKey, ClaimOutcome, ClaimRequest, CouponQuery, IdempotencyKey,
    ListingQuery, NewApiKey, NewTemplate, PoolStats, Store, StoreError, StoreResult, TemplateAudit,
    TemplateQuery,
};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, QueryBuilder};
use time::OffsetDateTime;

use crate::rows::{self, db_err};

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_CONNECTIONS: u32 = 16;

const TEMPLATE_COLS: &str = "id, merchant_id, spec::text AS spec, claim_start, claim_end, \
     claimed, created_at, updated_at, published_at, aborted_at, version";
const ACTIVITY_COLS: &str =
    "id, spec::text AS spec, created_at, updated_at, aborted_at, version, enrollment_seq";

/// The PostgreSQL store: a connection pool on one database (and schema).
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    max: u32,
}

fn dt(t: Timestamp) -> OffsetDateTime {
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
            Ok(Some(_)) => StoreError::Conflict("version"),
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
            Err(StoreError::Conflict("version"))
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

/// Every claim of a batch on a template that is not claimable: retries of claims that
/// succeeded earlier still get their coupon.
async fn not_claimable(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    claims: &[ClaimRequest],
) -> StoreResult<Vec<ClaimOutcome>> {
    let mut out = Vec::with_capacity(claims.len());
    for c in claims {
        let earlier = match &c.idempotency {
            Some(k) => earlier_claim(tx, k).await?,
            None => None,
        };
        out.push(earlier.unwrap_or(ClaimOutcome::NotClaimable));
    }
    Ok(out)
}

/// Takes an idempotency key for a claim about to be made. `None`: the key is new (and now
/// held by this transaction; a concurrent transaction with the same key waits for it).
/// `Some(outcome)`: the key was used before.
async fn claim_key(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    k: &IdempotencyKey,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let inserted = sqlx::query(
        "INSERT INTO claim_keys (key, fingerprint, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO NOTHING",
    )
    .bind(&k.key)
    .bind(&k.fingerprint[..])
    .bind(dt(now))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    if inserted.rows_affected() == 1 {
        return Ok(None);
    }
    earlier_claim(tx, k).await
}

/// What an idempotency key did before: the coupon it issued, `KeyReused` if it was for
/// another request, `None` if it is unknown.
async fn earlier_claim(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    k: &IdempotencyKey,
) -> StoreResult<Option<ClaimOutcome>> {
    let row = sqlx::query(
        "SELECT k.fingerprint, c.* FROM claim_keys k JOIN coupons c ON c.id = k.coupon_id
         WHERE k.key = $1",
    )
    .bind(&k.key)
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    let Some(row) = row else { return Ok(None) };
    let fingerprint: Vec<u8> = sqlx::Row::try_get(&row, "fingerprint").map_err(db_err)?;
    if fingerprint != k.fingerprint {
        return Ok(Some(ClaimOutcome::KeyReused));
    }
    Ok(Some(ClaimOutcome::Replayed(rows::coupon(&row)?)))
}

async fn forget_key(
    tx: &mut sqlx::Transaction<'static, Postgres>,
    k: Option<&IdempotencyKey>,
) -> StoreResult<()> {
    if let Some(k) = k {
        sqlx::query("DELETE FROM claim_keys WHERE key = $1")
            .bind(&k.key)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
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
            return Err(StoreError::Conflict("limit"));
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
        const CLAIMABLE: &str =
            "aborted_at IS NULL AND (activity_id IS NOT NULL OR published_at IS NOT NULL) \
             AND claim_start <= $2 AND $2 < claim_end";
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // No lock yet: the per-user limit cannot change while the template is claimable, and
        // the stock is decided by the conditional update at the end.
        let row = sqlx::query(&format!(
            "SELECT per_user_limit, ({CLAIMABLE}) AS claimable FROM templates WHERE id = $1"
        ))
        .bind(template.get())
        .bind(dt(now))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        let claimable: bool = sqlx::Row::try_get(&row, "claimable").map_err(db_err)?;
        if !claimable {
            return not_claimable(&mut tx, claims).await;
        }
        let limit: i64 = sqlx::Row::try_get(&row, "per_user_limit").map_err(db_err)?;

        let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];
        // Per-user counters in user order, so two batches never wait on each other's rows in
        // opposite orders (no deadlock); the stock is handed out in arrival order below.
        let mut order: Vec<usize> = (0..claims.len()).collect();
        order.sort_by(|a, b| claims[*a].user.cmp(&claims[*b].user).then(a.cmp(b)));
        let mut accepted: Vec<usize> = Vec::new();
        for i in order {
            let c = &claims[i];
            if let Some(k) = &c.idempotency {
                if let Some(earlier) = claim_key(&mut tx, k, now).await? {
                    out[i] = Some(earlier);
                    continue;
                }
            }
            let held: Option<i32> = sqlx::query_scalar(
                "INSERT INTO holdings AS h (template_id, user_id, n) VALUES ($1, $2, 1)
                 ON CONFLICT (template_id, user_id) DO UPDATE SET n = h.n + 1 WHERE h.n < $3
                 RETURNING n",
            )
            .bind(template.get())
            .bind(c.user.as_str())
            .bind(limit as i32)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            if held.is_none() {
                // A refused claim records no key.
                forget_key(&mut tx, c.idempotency.as_ref()).await?;
                out[i] = Some(ClaimOutcome::LimitReached);
            } else {
                accepted.push(i);
            }
        }
        accepted.sort_unstable();
        let mut ids: Vec<i64> = Vec::with_capacity(accepted.len());
        for &i in &accepted {
            let c = &claims[i];
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO coupons (template_id, user_id, claimed_at, valid_from, valid_until,
                                      updated_at)
                 VALUES ($1, $2, $3, $4, $5, $3) RETURNING id",
            )
            .bind(template.get())
            .bind(c.user.as_str())
            .bind(dt(now))
            .bind(dt(c.valid_from))
            .bind(dt(c.valid_until))
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            if let Some(k) = &c.idempotency {
                sqlx::query("UPDATE claim_keys SET coupon_id = $1 WHERE key = $2")
                    .bind(id)
                    .bind(&k.key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            ids.push(id);
        }
        let wanted = accepted.len() as i64;
        let mut granted = wanted;
        if wanted > 0 {
            // Last statement before COMMIT: the hot row is locked only for this and the flush.
            let raised = sqlx::query(&format!(
                "UPDATE templates SET claimed = claimed + $3
                 WHERE id = $1 AND claimed + $3 <= total_stock AND {CLAIMABLE}"
            ))
            .bind(template.get())
            .bind(dt(now))
            .bind(wanted)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if raised.rows_affected() != 1 {
                // Fewer left than this batch holds (or the template just stopped being
                // claimable): lock the row, give out what remains, and trim the rest. NO KEY
                // UPDATE, like the UPDATE itself: a full FOR UPDATE would conflict with the
                // KEY SHARE locks other batches' coupon inserts take through the foreign key,
                // and deadlock with them.
                let row = sqlx::query(&format!(
                    "SELECT total_stock - claimed AS remaining, ({CLAIMABLE}) AS claimable
                     FROM templates WHERE id = $1 FOR NO KEY UPDATE"
                ))
                .bind(template.get())
                .bind(dt(now))
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
                let claimable: bool = sqlx::Row::try_get(&row, "claimable").map_err(db_err)?;
                if !claimable {
                    drop(tx);
                    let mut tx = self.pool.begin().await.map_err(db_err)?;
                    return not_claimable(&mut tx, claims).await;
                }
                let remaining: i64 = sqlx::Row::try_get(&row, "remaining").map_err(db_err)?;
                granted = remaining.clamp(0, wanted);
                let cut = granted as usize;
                sqlx::query("UPDATE templates SET claimed = claimed + $2 WHERE id = $1")
                    .bind(template.get())
                    .bind(granted)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                sqlx::query("DELETE FROM claim_keys WHERE coupon_id = ANY($1)")
                    .bind(&ids[cut..])
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                sqlx::query("DELETE FROM coupons WHERE id = ANY($1)")
                    .bind(&ids[cut..])
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                for &i in &accepted[cut..] {
                    sqlx::query(
                        "UPDATE holdings SET n = n - 1 WHERE template_id = $1 AND user_id = $2",
                    )
                    .bind(template.get())
                    .bind(claims[i].user.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    out[i] = Some(ClaimOutcome::SoldOut);
                }
            }
        }
        for (k, &i) in accepted.iter().enumerate().take(granted as usize) {
            let c = &claims[i];
            out[i] = Some(ClaimOutcome::Issued(Coupon {
                id: CouponId::new(ids[k]).map_err(StoreError::other)?,
                template_id: template,
                user_id: c.user.clone(),
                stored_status: CouponStatus::Unused,
                claimed_at: now,
                valid_from: c.valid_from,
                valid_until: c.valid_until,
            }));
        }
        tx.commit().await.map_err(db_err)?;
        out.into_iter()
            .map(|o| o.ok_or_else(|| StoreError::other("claim without an outcome")))
            .collect()
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
            "SELECT t.total_stock, t.claimed, t.per_user_limit,
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
}
