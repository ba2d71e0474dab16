//! Merchants, listings and their template bindings on SQLite.

use coupond_store::CatalogStore;
use coupond_store::Conflict;

use async_trait::async_trait;
use coupond_domain::{
    Listing, ListingDraft, ListingId, Merchant, MerchantDraft, MerchantId, Template, TemplateId,
    TemplateStatus, Timestamp,
};
use coupond_store::{codec, ListingQuery, StoreError, StoreResult};
use sqlx::{QueryBuilder, Sqlite};

use crate::rows::{self, db_err};
use crate::store::{push_template_status, us, SqliteStore, TEMPLATE_COLS};

#[async_trait]
impl CatalogStore for SqliteStore {
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
}
