//! Promotion codes ([`CodeStore`]), on every backend: a template's shared code, generated
//! batches, and their listing.
//!
//! [`CodeStore`]: coupond_store::CodeStore

use coupond_domain::{CodeBatchSpec, CouponId, SharedCode, TemplateId, Timestamp, UserId};
use coupond_store::{CodeBatch, Page, PromoCode, StoreError, StoreResult};

use crate::{sql, Db, Row, Work};

/// Codes inserted per statement.
const CHUNK: usize = 500;

pub async fn set_shared_code(
    db: &dyn Db,
    template: TemplateId,
    code: Option<&SharedCode>,
) -> StoreResult<()> {
    let mut tx = db.begin(Work::Request).await?;
    // Locks the template's codes against a concurrent replacement.
    let lock = db.dialect().lock_rows(true);
    let exists = tx
        .fetch_optional(
            sql(format!(
                "SELECT 1 AS one FROM templates WHERE id = $1{lock}"
            ))
            .bind(template.get()),
        )
        .await?;
    if exists.is_none() {
        return Err(StoreError::NotFound);
    }
    tx.execute(
        sql("DELETE FROM codes WHERE template_id = $1 AND batch_id IS NULL").bind(template.get()),
    )
    .await?;
    if let Some(code) = code {
        tx.execute(
            sql("INSERT INTO codes (code, template_id) VALUES ($1, $2)")
                .bind(code.as_str())
                .bind(template.get()),
        )
        .await?;
    }
    tx.commit().await
}

pub async fn shared_code(db: &dyn Db, template: TemplateId) -> StoreResult<Option<String>> {
    let row = db
        .read_optional(
            sql("SELECT code FROM codes WHERE template_id = $1 AND batch_id IS NULL")
                .bind(template.get()),
        )
        .await?;
    row.map(|r| r.string("code")).transpose()
}

pub async fn promo_code(db: &dyn Db, code: &str) -> StoreResult<PromoCode> {
    let row = db
        .read_one(sql("SELECT * FROM codes WHERE code = $1").bind(code))
        .await?;
    promo_code_row(&row)
}

pub async fn insert_code_batch(
    db: &dyn Db,
    template: TemplateId,
    spec: &CodeBatchSpec,
    now: Timestamp,
) -> StoreResult<CodeBatch> {
    let row = db
        .write_one(
            sql(
                "INSERT INTO code_batches (template_id, prefix, length, count, created_at)
                 VALUES ($1, $2, $3, $4, $5) RETURNING *",
            )
            .bind(template.get())
            .bind(spec.prefix())
            .bind(spec.length())
            .bind(spec.count())
            .bind(now),
        )
        .await?;
    code_batch_row(&row)
}

pub async fn code_batch(db: &dyn Db, id: i64) -> StoreResult<CodeBatch> {
    let row = db
        .read_one(sql("SELECT * FROM code_batches WHERE id = $1").bind(id))
        .await?;
    code_batch_row(&row)
}

pub async fn template_code_batches(
    db: &dyn Db,
    template: TemplateId,
    page: Page,
) -> StoreResult<Vec<CodeBatch>> {
    let q =
        sql("SELECT * FROM code_batches WHERE template_id = $1 AND id > $2 ORDER BY id LIMIT $3")
            .bind(template.get())
            .bind(page.after.unwrap_or(0))
            .bind(page.limit);
    db.read_all(q).await?.iter().map(code_batch_row).collect()
}

pub async fn unfinished_code_batches(db: &dyn Db) -> StoreResult<Vec<CodeBatch>> {
    let rows = db
        .read_all(sql(
            "SELECT * FROM code_batches WHERE finished_at IS NULL ORDER BY id",
        ))
        .await?;
    rows.iter().map(code_batch_row).collect()
}

pub async fn add_codes(
    db: &dyn Db,
    batch: i64,
    codes: &[String],
    now: Timestamp,
) -> StoreResult<CodeBatch> {
    let mut tx = db.begin(Work::Background).await?;
    // The batch row is locked first (SQLite's one writer already excludes the others): two
    // processes adding to one batch take turns, so `generated` never passes `count`.
    let lock = db.dialect().lock_rows(false);
    let row = tx
        .fetch_one(sql(format!("SELECT * FROM code_batches WHERE id = $1{lock}")).bind(batch))
        .await?;
    let b = code_batch_row(&row)?;
    let room = (b.count - b.generated) as usize;
    let mut added: u64 = 0;
    for chunk in codes[..codes.len().min(room)].chunks(CHUNK) {
        // `$1` and `$2` are the template and the batch of every row.
        let mut q = sql("INSERT INTO codes (code, template_id, batch_id) VALUES ")
            .bind(b.template_id.get())
            .bind(batch);
        for (i, code) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(code.as_str()).push(", $1, $2)");
        }
        q.push(&db.dialect().on_conflict_nothing("code"));
        added += tx.execute(q).await?;
    }
    let row = tx
        .fetch_one(
            // `finished_at` first: MySQL assigns left to right, reading values already set.
            sql(
                "UPDATE code_batches SET finished_at = CASE WHEN \"generated\" + $1 = count
                                                 THEN $2 END,
                     \"generated\" = \"generated\" + $1
                 WHERE id = $3 RETURNING *",
            )
            .bind(i64::try_from(added).map_err(StoreError::other)?)
            .bind(now)
            .bind(batch),
        )
        .await?;
    let b = code_batch_row(&row)?;
    tx.commit().await?;
    Ok(b)
}

pub async fn batch_codes(
    db: &dyn Db,
    batch: i64,
    after: Option<&str>,
    limit: u32,
) -> StoreResult<Vec<PromoCode>> {
    let rows = db
        .read_all(
            sql("SELECT * FROM codes WHERE batch_id = $1 AND code > $2 ORDER BY code LIMIT $3")
                .bind(batch)
                .bind(after.unwrap_or(""))
                .bind(limit),
        )
        .await?;
    rows.iter().map(promo_code_row).collect()
}

fn code_batch_row(r: &Row) -> StoreResult<CodeBatch> {
    let n =
        |col: &str| -> StoreResult<u32> { u32::try_from(r.i64(col)?).map_err(StoreError::other) };
    Ok(CodeBatch {
        id: r.i64("id")?,
        template_id: TemplateId::new(r.i64("template_id")?).map_err(StoreError::other)?,
        prefix: r.string("prefix")?,
        length: n("length")?,
        count: n("count")?,
        generated: n("generated")?,
        created_at: r.time("created_at")?,
        finished_at: r.opt_time("finished_at")?,
    })
}

fn promo_code_row(r: &Row) -> StoreResult<PromoCode> {
    Ok(PromoCode {
        code: r.string("code")?,
        template_id: TemplateId::new(r.i64("template_id")?).map_err(StoreError::other)?,
        batch_id: r.opt_i64("batch_id")?,
        redeemed_by: r
            .opt_str("redeemed_by")?
            .map(|u| UserId::parse(u).map_err(StoreError::other))
            .transpose()?,
        redeemed_at: r.opt_time("redeemed_at")?,
        coupon_id: r
            .opt_i64("coupon_id")?
            .map(|v| CouponId::new(v).map_err(StoreError::other))
            .transpose()?,
    })
}

/// Implements [`CodeStore`](coupond_store::CodeStore) for a backend type that is a [`Db`],
/// with the statements above.
#[macro_export]
macro_rules! impl_code_store {
    ($t:ty) => {
        #[$crate::async_trait]
        impl $crate::reexport::store::CodeStore for $t {
            async fn set_shared_code(
                &self,
                template: $crate::reexport::domain::TemplateId,
                code: Option<&$crate::reexport::domain::SharedCode>,
            ) -> $crate::reexport::store::StoreResult<()> {
                $crate::codes::set_shared_code(self, template, code).await
            }
            async fn shared_code(
                &self,
                template: $crate::reexport::domain::TemplateId,
            ) -> $crate::reexport::store::StoreResult<Option<String>> {
                $crate::codes::shared_code(self, template).await
            }
            async fn promo_code(
                &self,
                code: &str,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::PromoCode> {
                $crate::codes::promo_code(self, code).await
            }
            async fn insert_code_batch(
                &self,
                template: $crate::reexport::domain::TemplateId,
                spec: &$crate::reexport::domain::CodeBatchSpec,
                now: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::CodeBatch> {
                $crate::codes::insert_code_batch(self, template, spec, now).await
            }
            async fn code_batch(
                &self,
                id: i64,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::CodeBatch> {
                $crate::codes::code_batch(self, id).await
            }
            async fn template_code_batches(
                &self,
                template: $crate::reexport::domain::TemplateId,
                page: $crate::reexport::store::Page,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::CodeBatch>> {
                $crate::codes::template_code_batches(self, template, page).await
            }
            async fn unfinished_code_batches(
                &self,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::CodeBatch>> {
                $crate::codes::unfinished_code_batches(self).await
            }
            async fn add_codes(
                &self,
                batch: i64,
                codes: &[String],
                now: $crate::reexport::domain::Timestamp,
            ) -> $crate::reexport::store::StoreResult<$crate::reexport::store::CodeBatch> {
                $crate::codes::add_codes(self, batch, codes, now).await
            }
            async fn batch_codes(
                &self,
                batch: i64,
                after: Option<&str>,
                limit: u32,
            ) -> $crate::reexport::store::StoreResult<Vec<$crate::reexport::store::PromoCode>> {
                $crate::codes::batch_codes(self, batch, after, limit).await
            }
        }
    };
}
