//! [`SqliteStore`]: the SQL of every [`Store`] method on SQLite.

use std::collections::HashMap;
use std::path::Path;
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
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{self, db_err};

const READERS: u32 = 4;
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

const TEMPLATE_COLS: &str = "id, merchant_id, spec, claim_start, claim_end, claimed, \
     created_at, updated_at, published_at, aborted_at, version";
const ACTIVITY_COLS: &str = "id, spec, created_at, updated_at, aborted_at, version, enrollment_seq";

/// The SQLite store: one writer connection, a few readers, one database file.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Exactly one connection: SQLite has one writer, so writes queue here, in process,
    /// instead of failing on the file lock.
    writer: SqlitePool,
    /// Readers never block on the writer in WAL mode.
    reader: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing, with its folder) the database at `url`
    /// (`sqlite://path/to/file.db`). Does not migrate: call [`SqliteStore::migrate`].
    pub async fn connect(url: &str) -> StoreResult<Self> {
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(StoreError::other)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let file = opts.get_filename();
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !is_memory(file) {
                std::fs::create_dir_all(dir).map_err(StoreError::other)?;
            }
        }
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts.clone())
            .await
            .map_err(db_err)?;
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(opts.read_only(true))
            .await
            .map_err(db_err)?;
        Ok(SqliteStore { writer, reader })
    }

    /// Applies the embedded migrations that have not run yet.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations")
            .run(&self.writer)
            .await
            .map_err(StoreError::other)
    }

    async fn begin(&self) -> StoreResult<sqlx::Transaction<'static, Sqlite>> {
        self.writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)
    }

    /// After a conditional update touched no row: `NotFound` if the row is gone, else the
    /// condition (version) failed.
    async fn missing_or_conflict(&self, table: &str, id: i64) -> StoreError {
        let sql = format!("SELECT 1 FROM {table} WHERE id = ?");
        match sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&self.writer)
            .await
        {
            Ok(None) => StoreError::NotFound,
            Ok(Some(_)) => StoreError::Conflict("version"),
            Err(e) => db_err(e),
        }
    }
}

/// Bumps an activity's `enrollment_seq` if it still has `version` and is not aborted; inside
/// the caller's write transaction, so the template write and the bump commit together.
async fn bump_enrollment(
    tx: &mut sqlx::Transaction<'static, Sqlite>,
    activity: ActivityId,
    version: Option<i64>,
) -> StoreResult<()> {
    let bumped = sqlx::query(
        "UPDATE activities SET enrollment_seq = enrollment_seq + 1
         WHERE id = ? AND version = ? AND aborted_at IS NULL",
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

/// Takes an idempotency key for a claim about to be made. `None`: the key is new (and now
/// held by this transaction). `Some(outcome)`: the key was used before.
async fn claim_key(
    tx: &mut sqlx::Transaction<'static, Sqlite>,
    k: &IdempotencyKey,
    now: Timestamp,
) -> StoreResult<Option<ClaimOutcome>> {
    let inserted = sqlx::query(
        "INSERT INTO claim_keys (key, fingerprint, created_at) VALUES (?, ?, ?)
         ON CONFLICT (key) DO NOTHING",
    )
    .bind(&k.key)
    .bind(&k.fingerprint[..])
    .bind(us(now))
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
    tx: &mut sqlx::Transaction<'static, Sqlite>,
    k: &IdempotencyKey,
) -> StoreResult<Option<ClaimOutcome>> {
    let row = sqlx::query(
        "SELECT k.fingerprint, c.* FROM claim_keys k JOIN coupons c ON c.id = k.coupon_id
         WHERE k.key = ?",
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
    tx: &mut sqlx::Transaction<'static, Sqlite>,
    k: Option<&IdempotencyKey>,
) -> StoreResult<()> {
    if let Some(k) = k {
        sqlx::query("DELETE FROM claim_keys WHERE key = ?")
            .bind(&k.key)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// Removes the bindings of the templates matching `condition` (one `?` parameter) and gives
/// their listings the slots back, inside the caller's transaction.
async fn unbind_templates(
    tx: &mut sqlx::Transaction<'static, Sqlite>,
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

fn is_memory(p: &Path) -> bool {
    p.as_os_str() == ":memory:" || p.as_os_str().is_empty()
}

fn us(t: Timestamp) -> i64 {
    t.unix_micros()
}

/// Appends the SQL form of [`Activity::status`] at `now`; the conformance suite checks both
/// agree at every boundary.
fn push_activity_status(
    q: &mut QueryBuilder<'_, Sqlite>,
    s: ActivityStatus,
    now: i64,
    freeze: i64,
) {
    if s == ActivityStatus::Aborted {
        q.push(" AND aborted_at IS NOT NULL");
        return;
    }
    q.push(" AND aborted_at IS NULL");
    let frozen_at = |q: &mut QueryBuilder<'_, Sqlite>| {
        q.push(" MIN(enroll_end, run_start - ")
            .push_bind(freeze)
            .push(")");
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
fn push_template_status(q: &mut QueryBuilder<'_, Sqlite>, s: TemplateStatus, now: i64) {
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
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.reader)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    fn pool_stats(&self) -> PoolStats {
        PoolStats {
            size: self.writer.size() + self.reader.size(),
            idle: (self.writer.num_idle() + self.reader.num_idle()) as u32,
            max: 1 + READERS,
        }
    }

    async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }

    async fn setting_or_init(&self, key: &str, init: &str) -> StoreResult<String> {
        sqlx::query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING")
            .bind(key)
            .bind(init)
            .execute(&self.writer)
            .await
            .map_err(db_err)?;
        sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_one(&self.writer)
            .await
            .map_err(db_err)
    }

    async fn put_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES (?, ?)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn insert_api_key(&self, k: &NewApiKey, now: Timestamp) -> StoreResult<ApiKey> {
        let row = sqlx::query(
            "INSERT INTO api_keys (hash, prefix, role, merchant_id, label, created_at)
             VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
        )
        .bind(&k.hash[..])
        .bind(&k.prefix)
        .bind(k.role.as_str())
        .bind(k.merchant_id.map(MerchantId::get))
        .bind(&k.label)
        .bind(us(now))
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn api_key_by_hash(&self, hash: &[u8; 32]) -> StoreResult<ApiKey> {
        let row = sqlx::query("SELECT * FROM api_keys WHERE hash = ?")
            .bind(&hash[..])
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query("SELECT * FROM api_keys ORDER BY id")
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::api_key).collect()
    }

    async fn revoke_api_key(&self, id: i64, now: Timestamp) -> StoreResult<ApiKey> {
        let row = sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING *",
        )
        .bind(us(now))
        .bind(id)
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::api_key(&row)
    }

    async fn insert_merchant(&self, m: &MerchantDraft, now: Timestamp) -> StoreResult<Merchant> {
        let row = sqlx::query(
            "INSERT INTO merchants (name, short_name, cities, created_at)
             VALUES (?, ?, ?, ?) RETURNING *",
        )
        .bind(&m.name)
        .bind(&m.short_name)
        .bind(codec::cities_to_json(&m.cities))
        .bind(us(now))
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::merchant(&row)
    }

    async fn merchant(&self, id: MerchantId) -> StoreResult<Merchant> {
        let row = sqlx::query("SELECT * FROM merchants WHERE id = ?")
            .bind(id.get())
            .fetch_one(&self.reader)
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
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
        )
        .bind(merchant.get())
        .bind(&l.external_id)
        .bind(l.city_id.get())
        .bind(l.category_id.get())
        .bind(&l.title)
        .bind(l.price.minor())
        .bind(l.deposit.minor())
        .bind(us(now))
        .bind(us(now))
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::listing(&row)
    }

    async fn listing(&self, id: ListingId) -> StoreResult<Listing> {
        let row = sqlx::query("SELECT * FROM listings WHERE id = ?")
            .bind(id.get())
            .fetch_one(&self.reader)
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
            "UPDATE listings SET external_id = ?, city_id = ?, category_id = ?, title = ?,
                price = ?, deposit = ?, updated_at = ?
             WHERE id = ? RETURNING *",
        )
        .bind(&l.external_id)
        .bind(l.city_id.get())
        .bind(l.category_id.get())
        .bind(&l.title)
        .bind(l.price.minor())
        .bind(l.deposit.minor())
        .bind(us(now))
        .bind(id.get())
        .fetch_one(&self.writer)
        .await
        .map_err(db_err)?;
        rows::listing(&row)
    }

    async fn list_listings(&self, q: &ListingQuery) -> StoreResult<Vec<Listing>> {
        let mut b = QueryBuilder::<Sqlite>::new("SELECT * FROM listings WHERE id > ");
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
            push_template_status(&mut b, TemplateStatus::Active, us(q.now));
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
        let rows = b.build().fetch_all(&self.reader).await.map_err(db_err)?;
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
        let mut b = QueryBuilder::<Sqlite>::new(format!(
            "SELECT b.listing_id, {TEMPLATE_COLS} FROM bindings b \
             JOIN templates t ON t.id = b.template_id WHERE b.listing_id IN ("
        ));
        let mut ids = b.separated(", ");
        for l in listings {
            ids.push_bind(l.get());
        }
        b.push(")");
        push_template_status(&mut b, TemplateStatus::Active, us(now));
        b.push(" ORDER BY b.listing_id, t.id");
        let rows = b.build().fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((rows::listing_id(r)?, rows::template(r)?)))
            .collect()
    }

    async fn listing_bindings(&self, listing: ListingId) -> StoreResult<Vec<TemplateId>> {
        let ids: Vec<i64> = sqlx::query_scalar(
            "SELECT template_id FROM bindings WHERE listing_id = ? ORDER BY template_id",
        )
        .bind(listing.get())
        .fetch_all(&self.reader)
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
        let mut tx = self.begin().await?;
        let found = sqlx::query("SELECT bound FROM listings WHERE id = ?")
            .bind(listing.get())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        if found.is_none() {
            return Err(StoreError::NotFound);
        }
        let exists = sqlx::query("SELECT 1 FROM bindings WHERE listing_id = ? AND template_id = ?")
            .bind(listing.get())
            .bind(template.get())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        if exists.is_some() {
            return Ok(false);
        }
        let counted =
            sqlx::query("UPDATE listings SET bound = bound + 1 WHERE id = ? AND bound < ?")
                .bind(listing.get())
                .bind(i64::from(max))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if counted.rows_affected() != 1 {
            return Err(StoreError::Conflict("limit"));
        }
        sqlx::query("INSERT INTO bindings (listing_id, template_id, bound_at) VALUES (?, ?, ?)")
            .bind(listing.get())
            .bind(template.get())
            .bind(us(now))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn unbind(&self, listing: ListingId, template: TemplateId) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let removed = sqlx::query("DELETE FROM bindings WHERE listing_id = ? AND template_id = ?")
            .bind(listing.get())
            .bind(template.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if removed.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("UPDATE listings SET bound = bound - 1 WHERE id = ?")
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
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {ACTIVITY_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(&spec.title)
            .bind(spec.kind.as_str())
            .bind(codec::cities_to_json(&spec.cities))
            .bind(us(spec.enrollment.start))
            .bind(us(spec.enrollment.end))
            .bind(us(spec.run.start))
            .bind(us(spec.run.end))
            .bind(codec::activity_to_json(spec)?)
            .bind(us(now))
            .bind(us(now))
            .fetch_one(&self.writer)
            .await
            .map_err(db_err)?;
        rows::activity(&row)
    }

    async fn activity(&self, id: ActivityId) -> StoreResult<Activity> {
        let sql = format!("SELECT {ACTIVITY_COLS} FROM activities WHERE id = ?");
        let row = sqlx::query(&sql)
            .bind(id.get())
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        rows::activity(&row)
    }

    async fn list_activities(&self, q: &ActivityQuery) -> StoreResult<Vec<Activity>> {
        let mut b = QueryBuilder::<Sqlite>::new(format!(
            "SELECT {ACTIVITY_COLS} FROM activities WHERE id > "
        ));
        b.push_bind(q.page.after.unwrap_or(0));
        if let Some(s) = q.status {
            push_activity_status(&mut b, s, us(q.now), q.freeze.whole_microseconds() as i64);
        }
        if let Some(c) = q.city {
            b.push(" AND EXISTS (SELECT 1 FROM json_each(activities.cities) WHERE value = ")
                .push_bind(c.get())
                .push(")");
        }
        if let Some(any) = &q.any_city {
            b.push(
                " AND EXISTS (SELECT 1 FROM json_each(activities.cities) a \
                 JOIN json_each(",
            )
            .push_bind(codec::cities_to_json(any))
            .push(") m ON a.value = m.value)");
        }
        b.push(" ORDER BY id LIMIT ")
            .push_bind(i64::from(q.page.limit));
        let rows = b.build().fetch_all(&self.reader).await.map_err(db_err)?;
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
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE activities SET title = ?, kind = ?, cities = ?, enroll_start = ?,
                enroll_end = ?, run_start = ?, run_end = ?, spec = ?, updated_at = ?,
                version = version + 1
             WHERE id = ? AND version = ? AND enrollment_seq = ? AND aborted_at IS NULL
             RETURNING {ACTIVITY_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(&spec.title)
            .bind(spec.kind.as_str())
            .bind(codec::cities_to_json(&spec.cities))
            .bind(us(spec.enrollment.start))
            .bind(us(spec.enrollment.end))
            .bind(us(spec.run.start))
            .bind(us(spec.run.end))
            .bind(codec::activity_to_json(spec)?)
            .bind(us(now))
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
                "UPDATE templates SET claim_start = ?, claim_end = ?, expires_at = ?,
                    updated_at = ?, version = version + 1
                 WHERE id = ? AND activity_id = ?",
            )
            .bind(us(w.start))
            .bind(us(w.end))
            .bind(us(t.expires_at()))
            .bind(us(now))
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
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE activities SET aborted_at = ?, updated_at = ?, version = version + 1
             WHERE id = ? AND version = ? AND aborted_at IS NULL RETURNING {ACTIVITY_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(us(now))
            .bind(us(now))
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
            "UPDATE templates SET aborted_at = ?, updated_at = ?, version = version + 1
             WHERE activity_id = ? AND aborted_at IS NULL",
        )
        .bind(us(now))
        .bind(us(now))
        .bind(id.get())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        unbind_templates(&mut tx, "activity_id = ?", id.get()).await?;
        tx.commit().await.map_err(db_err)?;
        rows::activity(&row)
    }

    async fn insert_template(&self, t: &NewTemplate<'_>, now: Timestamp) -> StoreResult<Template> {
        let spec = t.spec;
        let mut tx = self.begin().await?;
        if let Some(activity) = spec.activity_id {
            bump_enrollment(&mut tx, activity, t.activity_version).await?;
        }
        let w = spec.claim_window();
        let sql = format!(
            "INSERT INTO templates (merchant_id, activity_id, title, kind, total_stock,
                 per_user_limit, claim_start, claim_end, expires_at, spec, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {TEMPLATE_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(t.merchant_id.map(MerchantId::get))
            .bind(spec.activity_id.map(ActivityId::get))
            .bind(&spec.title)
            .bind(spec.value.kind().as_str())
            .bind(spec.total_stock)
            .bind(i64::from(spec.per_user_limit))
            .bind(us(w.start))
            .bind(us(w.end))
            .bind(us(spec.expires_at()))
            .bind(codec::template_to_json(spec)?)
            .bind(us(now))
            .bind(us(now))
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        let template = rows::template(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(template)
    }

    async fn template(&self, id: TemplateId) -> StoreResult<Template> {
        let sql = format!("SELECT {TEMPLATE_COLS} FROM templates WHERE id = ?");
        let row = sqlx::query(&sql)
            .bind(id.get())
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        rows::template(&row)
    }

    async fn list_templates(&self, q: &TemplateQuery) -> StoreResult<Vec<Template>> {
        let mut b = QueryBuilder::<Sqlite>::new(format!(
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
            push_template_status(&mut b, s, us(q.now));
        }
        b.push(" ORDER BY id LIMIT ")
            .push_bind(i64::from(q.page.limit));
        let rows = b.build().fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter().map(rows::template).collect()
    }

    async fn activity_templates(&self, id: ActivityId) -> StoreResult<Vec<Template>> {
        let sql =
            format!("SELECT {TEMPLATE_COLS} FROM templates WHERE activity_id = ? ORDER BY id");
        let rows = sqlx::query(&sql)
            .bind(id.get())
            .fetch_all(&self.reader)
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
        let mut tx = self.begin().await?;
        if let Some(activity) = spec.activity_id {
            bump_enrollment(&mut tx, activity, activity_version).await?;
        }
        let w = spec.claim_window();
        let sql = format!(
            "UPDATE templates SET title = ?, kind = ?, total_stock = ?, per_user_limit = ?,
                claim_start = ?, claim_end = ?, expires_at = ?, spec = ?, updated_at = ?,
                version = version + 1
             WHERE id = ? AND version = ? RETURNING {TEMPLATE_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(&spec.title)
            .bind(spec.value.kind().as_str())
            .bind(spec.total_stock)
            .bind(i64::from(spec.per_user_limit))
            .bind(us(w.start))
            .bind(us(w.end))
            .bind(us(spec.expires_at()))
            .bind(codec::template_to_json(spec)?)
            .bind(us(now))
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
            "UPDATE templates SET published_at = ?, updated_at = ?, version = version + 1
             WHERE id = ? AND version = ? RETURNING {TEMPLATE_COLS}"
        );
        self.update_one_template(&sql, id, version, now).await
    }

    async fn abort_template(
        &self,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE templates SET aborted_at = ?, updated_at = ?, version = version + 1
             WHERE id = ? AND version = ? RETURNING {TEMPLATE_COLS}"
        );
        let row = sqlx::query(&sql)
            .bind(us(now))
            .bind(us(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let Some(row) = row else {
            drop(tx);
            return Err(self.missing_or_conflict("templates", id.get()).await);
        };
        unbind_templates(&mut tx, "id = ?", id.get()).await?;
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
        let mut tx = self.begin().await?;
        // Inside BEGIN IMMEDIATE nothing else writes until commit: what is read here stays
        // true for the whole batch.
        let row = sqlx::query(
            "SELECT total_stock - claimed AS remaining, per_user_limit,
                    (aborted_at IS NULL AND (activity_id IS NOT NULL OR published_at IS NOT NULL)
                     AND claim_start <= ?1 AND ?1 < claim_end) AS claimable
             FROM templates WHERE id = ?2",
        )
        .bind(us(now))
        .bind(template.get())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound)?;
        let claimable: bool = sqlx::Row::try_get(&row, "claimable").map_err(db_err)?;
        if !claimable {
            // Retries of claims that succeeded earlier still get their coupon.
            let mut out = Vec::with_capacity(claims.len());
            for c in claims {
                let earlier = match &c.idempotency {
                    Some(k) => earlier_claim(&mut tx, k).await?,
                    None => None,
                };
                out.push(earlier.unwrap_or(ClaimOutcome::NotClaimable));
            }
            return Ok(out);
        }
        let remaining: i64 = sqlx::Row::try_get(&row, "remaining").map_err(db_err)?;
        let limit: i64 = sqlx::Row::try_get(&row, "per_user_limit").map_err(db_err)?;
        let mut out: Vec<Option<ClaimOutcome>> = vec![None; claims.len()];

        // 1. Idempotency keys: retries get their earlier answer; new keys are taken.
        for (i, c) in claims.iter().enumerate() {
            if let Some(k) = &c.idempotency {
                out[i] = claim_key(&mut tx, k, now).await?;
            }
        }
        let candidates: Vec<usize> = (0..claims.len()).filter(|i| out[*i].is_none()).collect();

        // 2. Per-user counters. Users appearing once in the batch take their slot in one
        //    multi-row upsert; a user appearing several times goes one claim at a time, in
        //    arrival order, so the limit counts earlier claims of the same batch.
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for &i in &candidates {
            *seen.entry(claims[i].user.as_str()).or_insert(0) += 1;
        }
        let mut holds = vec![false; claims.len()];
        let single: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|i| seen[claims[*i].user.as_str()] == 1)
            .collect();
        for chunk in single.chunks(400) {
            let mut b =
                QueryBuilder::<Sqlite>::new("INSERT INTO holdings (template_id, user_id, n) ");
            b.push_values(chunk, |mut row, &i| {
                row.push_bind(template.get())
                    .push_bind(claims[i].user.as_str().to_owned())
                    .push("1");
            });
            b.push(" ON CONFLICT (template_id, user_id) DO UPDATE SET n = n + 1 WHERE n < ")
                .push_bind(limit)
                .push(" RETURNING user_id");
            let taken: Vec<String> = b
                .build_query_scalar()
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
            let taken: std::collections::HashSet<String> = taken.into_iter().collect();
            for &i in chunk {
                holds[i] = taken.contains(claims[i].user.as_str());
            }
        }
        for &i in candidates
            .iter()
            .filter(|i| seen[claims[**i].user.as_str()] > 1)
        {
            let held: Option<i64> = sqlx::query_scalar(
                "INSERT INTO holdings (template_id, user_id, n) VALUES (?1, ?2, 1)
                 ON CONFLICT (template_id, user_id) DO UPDATE SET n = n + 1 WHERE n < ?3
                 RETURNING n",
            )
            .bind(template.get())
            .bind(claims[i].user.as_str())
            .bind(limit)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            holds[i] = held.is_some();
        }

        // 3. Stock, first come first served; refused claims give back what they took.
        let mut granted: Vec<usize> = Vec::new();
        for &i in &candidates {
            let c = &claims[i];
            let outcome = if !holds[i] {
                ClaimOutcome::LimitReached
            } else if (granted.len() as i64) < remaining {
                granted.push(i);
                continue;
            } else {
                sqlx::query("UPDATE holdings SET n = n - 1 WHERE template_id = ? AND user_id = ?")
                    .bind(template.get())
                    .bind(c.user.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                ClaimOutcome::SoldOut
            };
            // A refused claim records no key.
            forget_key(&mut tx, c.idempotency.as_ref()).await?;
            out[i] = Some(outcome);
        }

        // 4. Coupons, in multi-row inserts. Ids are handed out here: inside BEGIN IMMEDIATE
        //    this transaction is the only writer, so max(id) + 1.. is free.
        if !granted.is_empty() {
            let first_id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM coupons")
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
            for (n, chunk) in granted.chunks(400).enumerate() {
                let mut b = QueryBuilder::<Sqlite>::new(
                    "INSERT INTO coupons (id, template_id, user_id, claimed_at, valid_from, \
                     valid_until, updated_at) ",
                );
                b.push_values(chunk.iter().enumerate(), |mut row, (k, &i)| {
                    let c = &claims[i];
                    row.push_bind(first_id + (n * 400 + k) as i64)
                        .push_bind(template.get())
                        .push_bind(c.user.as_str().to_owned())
                        .push_bind(us(now))
                        .push_bind(us(c.valid_from))
                        .push_bind(us(c.valid_until))
                        .push_bind(us(now));
                });
                b.build().execute(&mut *tx).await.map_err(db_err)?;
            }
            for (k, &i) in granted.iter().enumerate() {
                let c = &claims[i];
                let id = first_id + k as i64;
                if let Some(key) = &c.idempotency {
                    sqlx::query("UPDATE claim_keys SET coupon_id = ? WHERE key = ?")
                        .bind(id)
                        .bind(&key.key)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                out[i] = Some(ClaimOutcome::Issued(Coupon {
                    id: CouponId::new(id).map_err(StoreError::other)?,
                    template_id: template,
                    user_id: c.user.clone(),
                    stored_status: CouponStatus::Unused,
                    claimed_at: now,
                    valid_from: c.valid_from,
                    valid_until: c.valid_until,
                }));
            }
            // Conditional all the same: the stock check lives in the database, not in the
            // arithmetic above.
            let raised = sqlx::query(
                "UPDATE templates SET claimed = claimed + ?1
                 WHERE id = ?2 AND claimed + ?1 <= total_stock",
            )
            .bind(granted.len() as i64)
            .bind(template.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if raised.rows_affected() != 1 {
                return Err(StoreError::other(
                    "stock changed inside a write transaction",
                ));
            }
        }
        tx.commit().await.map_err(db_err)?;
        out.into_iter()
            .map(|o| o.ok_or_else(|| StoreError::other("claim without an outcome")))
            .collect()
    }

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        let mut b = QueryBuilder::<Sqlite>::new("SELECT * FROM coupons WHERE user_id = ");
        b.push_bind(q.user.as_str().to_owned());
        let now = us(q.now);
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
            b.push(" AND (valid_until > ")
                .push_bind(us(vu))
                .push(" OR (valid_until = ")
                .push_bind(us(vu))
                .push(" AND id > ")
                .push_bind(id)
                .push("))");
        }
        b.push(" ORDER BY valid_until, id LIMIT ")
            .push_bind(i64::from(q.limit));
        let rows = b.build().fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter().map(rows::coupon).collect()
    }

    async fn audit_template(&self, template: TemplateId) -> StoreResult<TemplateAudit> {
        let row = sqlx::query(
            "SELECT t.total_stock, t.claimed, t.per_user_limit,
                    (SELECT COUNT(*) FROM coupons c WHERE c.template_id = t.id) AS coupons,
                    (SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM coupons c
                        WHERE c.template_id = t.id GROUP BY c.user_id) per_user) AS max_per_user
             FROM templates t WHERE t.id = ?",
        )
        .bind(template.get())
        .fetch_one(&self.reader)
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
        sqlx::query_scalar("SELECT COUNT(*) FROM coupons WHERE template_id = ?")
            .bind(template.get())
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)
    }

    async fn count_coupons_among(
        &self,
        template: TemplateId,
        coupons: &[CouponId],
    ) -> StoreResult<i64> {
        let mut total = 0;
        for chunk in coupons.chunks(500) {
            let mut b =
                QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM coupons WHERE template_id = ");
            b.push_bind(template.get()).push(" AND id IN (");
            let mut ids = b.separated(", ");
            for c in chunk {
                ids.push_bind(c.get());
            }
            b.push(")");
            let n: i64 = b
                .build_query_scalar()
                .fetch_one(&self.reader)
                .await
                .map_err(db_err)?;
            total += n;
        }
        Ok(total)
    }
}

impl SqliteStore {
    /// Runs a versioned single-template update whose first two parameters are `now`.
    async fn update_one_template(
        &self,
        sql: &str,
        id: TemplateId,
        version: i64,
        now: Timestamp,
    ) -> StoreResult<Template> {
        let row = sqlx::query(sql)
            .bind(us(now))
            .bind(us(now))
            .bind(id.get())
            .bind(version)
            .fetch_optional(&self.writer)
            .await
            .map_err(db_err)?;
        match row {
            Some(r) => rows::template(&r),
            None => Err(self.missing_or_conflict("templates", id.get()).await),
        }
    }
}
