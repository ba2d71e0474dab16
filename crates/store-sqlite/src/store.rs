//! [`SqliteStore`]: the SQL of every [`Store`] method on SQLite.

use coupond_store::Conflict;
use std::path::Path;
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
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite};

use crate::gate::Gate;
use crate::rows::{self, db_err};

const READERS: u32 = 4;
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) const TEMPLATE_COLS: &str = "id, merchant_id, spec, claim_start, claim_end, claimed, \
     used, given, reserved, created_at, updated_at, published_at, aborted_at, version";
pub(crate) const ACTIVITY_COLS: &str =
    "id, spec, created_at, updated_at, aborted_at, version, enrollment_seq";

/// The SQLite store: one writer connection, a few readers, one database file.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Exactly one connection: SQLite has one writer, so writes queue here, in process,
    /// instead of failing on the file lock.
    pub(crate) writer: SqlitePool,
    /// Readers never block on the writer in WAL mode.
    pub(crate) reader: SqlitePool,
    /// Requests before background work on the writer.
    pub(crate) gate: std::sync::Arc<Gate>,
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
        Ok(SqliteStore {
            writer,
            reader,
            gate: std::sync::Arc::default(),
        })
    }

    /// Applies the embedded migrations that have not run yet.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations")
            .run(&self.writer)
            .await
            .map_err(StoreError::other)
    }

    /// A write transaction for a request: it goes before background work waiting for the
    /// writer.
    pub(crate) async fn begin(&self) -> StoreResult<sqlx::Transaction<'static, Sqlite>> {
        let _waiting = self.gate.request();
        self.writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)
    }

    /// A write transaction for background work, with its turn (keep it until the transaction
    /// ends): one background transaction at a time, and requests waiting for the writer go
    /// first (see [`Gate`]).
    pub(crate) async fn begin_background(
        &self,
    ) -> StoreResult<(
        Option<tokio::sync::SemaphorePermit<'_>>,
        sqlx::Transaction<'static, Sqlite>,
    )> {
        let turn = self.gate.background_turn().await;
        let tx = self
            .writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)?;
        Ok((turn, tx))
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
            Ok(Some(_)) => StoreError::Conflict(Conflict::Version),
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
        Err(StoreError::Conflict(Conflict::Version))
    }
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

pub(crate) fn us(t: Timestamp) -> i64 {
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
            return Err(StoreError::Conflict(Conflict::Limit));
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
        self.claim_batch_tx(template, claims, now).await
    }

    async fn user_coupons(&self, q: &CouponQuery) -> StoreResult<Vec<Coupon>> {
        // One row for the whole page (see `rows::COUPON_JSON`); sorted again here rather than
        // in the aggregate, which would build a temporary b-tree for what the index gave sorted.
        let mut b = QueryBuilder::<Sqlite>::new(format!(
            "SELECT json_group_array({}) FROM \
             (SELECT * FROM coupons WHERE user_id = ",
            rows::COUPON_JSON
        ));
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
            .push_bind(i64::from(q.limit))
            .push(")");
        let page: String = b
            .build_query_scalar()
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        let mut page = rows::coupons_json(&page)?;
        page.sort_by_key(|c| (c.valid_until, c.id));
        Ok(page)
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

    async fn coupon(&self, id: CouponId) -> StoreResult<Coupon> {
        let row = sqlx::query("SELECT * FROM coupons WHERE id = ?")
            .bind(id.get())
            .fetch_optional(&self.reader)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::coupon(&row)
    }

    async fn coupon_owners(&self, template: TemplateId) -> StoreResult<Vec<(CouponId, UserId)>> {
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, user_id FROM coupons WHERE template_id = ? ORDER BY id")
                .bind(template.get())
                .fetch_all(&self.reader)
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
        let rows = sqlx::query("SELECT * FROM coupon_events WHERE coupon_id = ? ORDER BY id")
            .bind(coupon.get())
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::coupon_event).collect()
    }

    async fn events_after(&self, after: i64, limit: u32) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query("SELECT * FROM outbox WHERE id > ? ORDER BY id LIMIT ?")
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.reader)
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
