//! Merchants, listings and their template bindings ([`CatalogStore`]), on every backend. The
//! listing search, with its coupon filters and the live templates of a page, is `search`.
//!
//! Also what other areas read templates with ([`push_template_status`], `template_row`).
//!
//! [`CatalogStore`]: coupond_store::CatalogStore

use coupond_domain::{
    CategoryId, CityId, Listing, ListingDraft, ListingId, Merchant, MerchantDraft, MerchantId,
    Money, Review, Template, TemplateId, TemplateStatus, Timestamp, Window,
};
use coupond_store::{codec, Conflict, MerchantQuery, StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{missing_or_conflict, sql, Db, Exec, Query, Row, Work};
use coupond_store::CatalogStore;
use coupond_store::ListingQuery;

mod search;
pub use search::{list_listings, live_templates};

pub async fn insert_merchant(
    db: &dyn Db,
    m: &MerchantDraft,
    now: Timestamp,
) -> StoreResult<Merchant> {
    let row = db
        .write_one(
            sql(
                "INSERT INTO merchants (name, short_name, cities, created_at)
                 VALUES ($1, $2, $3, $4) RETURNING *",
            )
            .bind(&m.name)
            .bind(&m.short_name)
            .bind(codec::cities_to_vec(&m.cities))
            .bind(now),
        )
        .await?;
    merchant_row(&row)
}

pub async fn merchant(db: &dyn Db, id: MerchantId) -> StoreResult<Merchant> {
    let row = db
        .read_one(sql("SELECT * FROM merchants WHERE id = $1").bind(id.get()))
        .await?;
    merchant_row(&row)
}

pub async fn list_merchants(db: &dyn Db, q: &MerchantQuery) -> StoreResult<Vec<Merchant>> {
    let d = db.dialect();
    let mut s = sql("SELECT * FROM merchants WHERE id > ");
    s.push_bind(q.page.after.unwrap_or(0));
    if let Some(c) = q.city {
        let city = s.param(c.get());
        s.push(" AND ").push(&d.list_has("merchants.cities", &city));
    }
    if let Some(name) = &q.name {
        let pattern = s.param(contains_pattern(name));
        s.push(&format!(
            " AND (LOWER(name) LIKE LOWER({pattern}) ESCAPE '!'
                  OR LOWER(short_name) LIKE LOWER({pattern}) ESCAPE '!')"
        ));
    }
    s.push(" ORDER BY id LIMIT ").push_bind(q.page.limit);
    db.read_all(s).await?.iter().map(merchant_row).collect()
}

/// A `LIKE` pattern (escape `!`) matching text that contains `needle`; the statement folds
/// both sides' case with the database's `LOWER`.
fn contains_pattern(needle: &str) -> String {
    let mut p = String::from("%");
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '!') {
            p.push('!');
        }
        p.push(c);
    }
    p.push('%');
    p
}

pub async fn update_merchant(
    db: &dyn Db,
    id: MerchantId,
    was: &MerchantDraft,
    m: &MerchantDraft,
) -> StoreResult<Merchant> {
    let mut tx = db.begin(Work::Request).await?;
    let row = tx
        .fetch_optional(
            sql(
                "UPDATE merchants SET name = $1, short_name = $2, cities = $3
                 WHERE id = $4 AND name = $5 AND short_name = $6 AND cities = $7 RETURNING *",
            )
            .bind(&m.name)
            .bind(&m.short_name)
            .bind(codec::cities_to_vec(&m.cities))
            .bind(id.get())
            .bind(&was.name)
            .bind(&was.short_name)
            .bind(codec::cities_to_vec(&was.cities)),
        )
        .await?;
    let Some(row) = row else {
        return Err(missing_or_conflict(&mut *tx, "merchants", id.get()).await);
    };
    tx.commit().await?;
    merchant_row(&row)
}

pub async fn insert_listing(
    db: &dyn Db,
    merchant: MerchantId,
    l: &ListingDraft,
    now: Timestamp,
) -> StoreResult<Listing> {
    let row = db
        .write_one(
            sql(
                "INSERT INTO listings (merchant_id, external_id, city_id, category_id, title,
                                       price, deposit, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *",
            )
            .bind(merchant.get())
            .bind(&l.external_id)
            .bind(l.city_id.get())
            .bind(l.category_id.get())
            .bind(&l.title)
            .bind(l.price.minor())
            .bind(l.deposit.minor())
            .bind(now),
        )
        .await?;
    listing_row(&row)
}

pub async fn listing(db: &dyn Db, id: ListingId) -> StoreResult<Listing> {
    let row = db
        .read_one(sql("SELECT * FROM listings WHERE id = $1").bind(id.get()))
        .await?;
    listing_row(&row)
}

pub async fn update_listing(
    db: &dyn Db,
    id: ListingId,
    l: &ListingDraft,
    now: Timestamp,
) -> StoreResult<Listing> {
    let row = db
        .write_one(
            sql(
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
            .bind(now)
            .bind(id.get()),
        )
        .await?;
    listing_row(&row)
}

pub async fn listing_bindings(db: &dyn Db, listing: ListingId) -> StoreResult<Vec<TemplateId>> {
    let rows = db
        .read_all(
            sql("SELECT template_id FROM bindings WHERE listing_id = $1 ORDER BY template_id")
                .bind(listing.get()),
        )
        .await?;
    rows.iter()
        .map(|r| id(r.i64("template_id")?, TemplateId::new))
        .collect()
}

pub async fn bind(
    db: &dyn Db,
    listing: ListingId,
    template: TemplateId,
    max: u32,
    now: Timestamp,
) -> StoreResult<bool> {
    let mut tx = db.begin(Work::Request).await?;
    // Lock the listing first: concurrent binds to it queue here, so the count and the
    // existence check below see every committed binding.
    let lock = db.dialect().lock_rows(true);
    let found = tx
        .fetch_optional(
            sql(format!("SELECT bound FROM listings WHERE id = $1{lock}")).bind(listing.get()),
        )
        .await?;
    if found.is_none() {
        return Err(StoreError::NotFound);
    }
    let exists = tx
        .fetch_optional(
            sql("SELECT 1 AS one FROM bindings WHERE listing_id = $1 AND template_id = $2")
                .bind(listing.get())
                .bind(template.get()),
        )
        .await?;
    if exists.is_some() {
        return Ok(false);
    }
    let count = || {
        sql("UPDATE listings SET bound = bound + 1 WHERE id = $1 AND bound < $2")
            .bind(listing.get())
            .bind(max)
    };
    let mut counted = tx.execute(count()).await?;
    if counted != 1 && release_dead_bindings(&mut *tx, listing, now).await? > 0 {
        counted = tx.execute(count()).await?;
    }
    if counted != 1 {
        return Err(StoreError::Conflict(Conflict::Limit));
    }
    tx.execute(
        sql("INSERT INTO bindings (listing_id, template_id, bound_at) VALUES ($1, $2, $3)")
            .bind(listing.get())
            .bind(template.get())
            .bind(now),
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Unbinds from `listing` (whose row the caller holds locked) every template that can no
/// longer be claimed at `now` (aborted, or its claim window over): the limit counts templates
/// that give users coupons, not dead ones. How many were released.
async fn release_dead_bindings<E: Exec + ?Sized>(
    tx: &mut E,
    listing: ListingId,
    now: Timestamp,
) -> StoreResult<u64> {
    let released = tx
        .execute(
            sql(
                "DELETE FROM bindings WHERE listing_id = $1 AND template_id IN
                 (SELECT id FROM templates WHERE aborted_at IS NOT NULL OR claim_end <= $2)",
            )
            .bind(listing.get())
            .bind(now),
        )
        .await?;
    if released > 0 {
        tx.execute(
            sql("UPDATE listings SET bound = bound - $1 WHERE id = $2")
                .bind(released as i64)
                .bind(listing.get()),
        )
        .await?;
    }
    Ok(released)
}

pub async fn unbind(db: &dyn Db, listing: ListingId, template: TemplateId) -> StoreResult<bool> {
    let mut tx = db.begin(Work::Request).await?;
    // Same lock order as `bind` (listing, then binding), so the two cannot deadlock.
    let lock = db.dialect().lock_rows(true);
    if !lock.is_empty() {
        tx.execute(
            sql(format!("SELECT 1 AS one FROM listings WHERE id = $1{lock}")).bind(listing.get()),
        )
        .await?;
    }
    let removed = tx
        .execute(
            sql("DELETE FROM bindings WHERE listing_id = $1 AND template_id = $2")
                .bind(listing.get())
                .bind(template.get()),
        )
        .await?;
    if removed == 0 {
        return Ok(false);
    }
    tx.execute(sql("UPDATE listings SET bound = bound - 1 WHERE id = $1").bind(listing.get()))
        .await?;
    tx.commit().await?;
    Ok(true)
}

/// [`Template::is_public`] and not aborted, over the `templates` columns (unqualified): in an
/// activity (and approved, where approval is needed) or published. Every read that users, the
/// order service or a claim make of templates goes through this one condition.
pub const PUBLIC: &str = "aborted_at IS NULL AND approval IN ('none', 'approved') \
     AND (activity_id IS NOT NULL OR published_at IS NOT NULL)";

/// [`PUBLIC`] and not paused: what every claim path checks under the template row's lock, so
/// that nothing is claimed (by a claim, a code or bulk issuance) while a pause is in force.
pub const CLAIMING: &str = "paused_at IS NULL AND aborted_at IS NULL \
     AND approval IN ('none', 'approved') AND (activity_id IS NOT NULL OR published_at IS NOT NULL)";

/// Appends the SQL form of [`Template::status`] at `now` (`AND ...` over the `templates`
/// columns, unqualified); the conformance suite checks both agree at every boundary.
pub fn push_template_status(q: &mut Query, s: TemplateStatus, now: Timestamp) {
    match s {
        TemplateStatus::Aborted => {
            q.push(" AND aborted_at IS NOT NULL");
            return;
        }
        TemplateStatus::Draft => {
            q.push(" AND aborted_at IS NULL AND activity_id IS NULL AND published_at IS NULL");
            return;
        }
        TemplateStatus::PendingApproval => {
            q.push(" AND aborted_at IS NULL AND approval = 'pending'");
            return;
        }
        TemplateStatus::Rejected => {
            q.push(" AND aborted_at IS NULL AND approval = 'rejected'");
            return;
        }
        _ => {}
    }
    q.push(" AND ").push(PUBLIC);
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
        TemplateStatus::Draft
        | TemplateStatus::PendingApproval
        | TemplateStatus::Rejected
        | TemplateStatus::Aborted => {}
    }
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> StoreResult<T> {
    f(v).map_err(StoreError::other)
}

fn money(v: i64) -> StoreResult<Money> {
    Money::new(v).map_err(StoreError::other)
}

fn merchant_row(r: &Row) -> StoreResult<Merchant> {
    Ok(Merchant {
        id: id(r.i64("id")?, MerchantId::new)?,
        name: r.string("name")?,
        short_name: r.string("short_name")?,
        cities: codec::cities_from_vec(r.ints("cities")?)?,
        created_at: r.time("created_at")?,
    })
}

fn listing_row(r: &Row) -> StoreResult<Listing> {
    Ok(Listing {
        id: id(r.i64("id")?, ListingId::new)?,
        merchant_id: id(r.i64("merchant_id")?, MerchantId::new)?,
        draft: ListingDraft {
            external_id: r.opt_string("external_id")?,
            city_id: id(r.i64("city_id")?, CityId::new)?,
            category_id: id(r.i64("category_id")?, CategoryId::new)?,
            title: r.string("title")?,
            price: money(r.i64("price")?)?,
            deposit: money(r.i64("deposit")?)?,
        },
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

/// A template read with [`Db::template_columns`].
pub(crate) fn template_row(r: &Row) -> StoreResult<Template> {
    let template = r.i64("id")?;
    let window =
        Window::new(r.time("claim_start")?, r.time("claim_end")?).map_err(StoreError::other)?;
    Ok(Template {
        id: id(template, TemplateId::new)?,
        merchant_id: r
            .opt_i64("merchant_id")?
            .map(|v| id(v, MerchantId::new))
            .transpose()?,
        spec: codec::template_from_json(template, r.str("spec")?, window)?,
        claimed: r.i64("claimed")?,
        used: r.i64("used")?,
        given: money(r.i64("given")?)?,
        reserved: money(r.i64("reserved")?)?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        published_at: r.opt_time("published_at")?,
        aborted_at: r.opt_time("aborted_at")?,
        review: Review::from_stored(
            r.str("approval")?,
            r.opt_time("reviewed_at")?,
            r.opt_string("review_reason")?,
        )
        .map_err(StoreError::corrupt)?,
        pause: crate::campaigns::steering::pause_row(r, true)?,
        version: r.i64("version")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> CatalogStore for SqlStore<B> {
    async fn insert_merchant(&self, m: &MerchantDraft, now: Timestamp) -> StoreResult<Merchant> {
        insert_merchant(&self.db, m, now).await
    }
    async fn merchant(&self, id: MerchantId) -> StoreResult<Merchant> {
        merchant(&self.db, id).await
    }
    async fn list_merchants(&self, q: &MerchantQuery) -> StoreResult<Vec<Merchant>> {
        list_merchants(&self.db, q).await
    }
    async fn update_merchant(
        &self,
        id: MerchantId,
        was: &MerchantDraft,
        m: &MerchantDraft,
    ) -> StoreResult<Merchant> {
        update_merchant(&self.db, id, was, m).await
    }
    async fn insert_listing(
        &self,
        merchant: MerchantId,
        l: &ListingDraft,
        now: Timestamp,
    ) -> StoreResult<Listing> {
        insert_listing(&self.db, merchant, l, now).await
    }
    async fn listing(&self, id: ListingId) -> StoreResult<Listing> {
        listing(&self.db, id).await
    }
    async fn update_listing(
        &self,
        id: ListingId,
        l: &ListingDraft,
        now: Timestamp,
    ) -> StoreResult<Listing> {
        update_listing(&self.db, id, l, now).await
    }
    async fn list_listings(&self, q: &ListingQuery) -> StoreResult<Vec<Listing>> {
        list_listings(&self.db, q).await
    }
    async fn live_templates(
        &self,
        listings: &[ListingId],
        now: Timestamp,
    ) -> StoreResult<Vec<(ListingId, Template)>> {
        live_templates(&self.db, listings, now).await
    }
    async fn listing_bindings(&self, listing: ListingId) -> StoreResult<Vec<TemplateId>> {
        listing_bindings(&self.db, listing).await
    }
    async fn bind(
        &self,
        listing: ListingId,
        template: TemplateId,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<bool> {
        bind(&self.db, listing, template, max, now).await
    }
    async fn unbind(&self, listing: ListingId, template: TemplateId) -> StoreResult<bool> {
        unbind(&self.db, listing, template).await
    }
}
