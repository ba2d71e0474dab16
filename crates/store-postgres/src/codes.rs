//! Promotion codes on PostgreSQL: shared codes, generated batches, and their listing.

use async_trait::async_trait;
use coupond_domain::{CodeBatchSpec, SharedCode, TemplateId, Timestamp};
use coupond_store::CodeStore;
use coupond_store::{CodeBatch, PromoCode, StoreError, StoreResult};

use crate::rows::{self, db_err};
use crate::store::{dt, PgStore};

#[async_trait]
impl CodeStore for PgStore {
    async fn set_shared_code(
        &self,
        template: TemplateId,
        code: Option<&SharedCode>,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Locks the template's codes against a concurrent replacement.
        let exists = sqlx::query("SELECT 1 FROM templates WHERE id = $1 FOR NO KEY UPDATE")
            .bind(template.get())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        if exists.is_none() {
            return Err(StoreError::NotFound);
        }
        sqlx::query("DELETE FROM codes WHERE template_id = $1 AND batch_id IS NULL")
            .bind(template.get())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if let Some(code) = code {
            sqlx::query("INSERT INTO codes (code, template_id) VALUES ($1, $2)")
                .bind(code.as_str())
                .bind(template.get())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)
    }

    async fn shared_code(&self, template: TemplateId) -> StoreResult<Option<String>> {
        sqlx::query_scalar("SELECT code FROM codes WHERE template_id = $1 AND batch_id IS NULL")
            .bind(template.get())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    async fn promo_code(&self, code: &str) -> StoreResult<PromoCode> {
        let row = sqlx::query("SELECT * FROM codes WHERE code = $1")
            .bind(code)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::promo_code(&row)
    }

    async fn insert_code_batch(
        &self,
        template: TemplateId,
        spec: &CodeBatchSpec,
        now: Timestamp,
    ) -> StoreResult<CodeBatch> {
        let row = sqlx::query(
            "INSERT INTO code_batches (template_id, prefix, length, count, created_at)
             VALUES ($1, $2, $3, $4, $5) RETURNING *",
        )
        .bind(template.get())
        .bind(spec.prefix())
        .bind(spec.length() as i32)
        .bind(spec.count() as i32)
        .bind(dt(now))
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::code_batch(&row)
    }

    async fn code_batch(&self, id: i64) -> StoreResult<CodeBatch> {
        let row = sqlx::query("SELECT * FROM code_batches WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        rows::code_batch(&row)
    }

    async fn unfinished_code_batches(&self) -> StoreResult<Vec<CodeBatch>> {
        let rows = sqlx::query("SELECT * FROM code_batches WHERE finished_at IS NULL ORDER BY id")
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(rows::code_batch).collect()
    }

    async fn add_codes(
        &self,
        batch: i64,
        codes: &[String],
        now: Timestamp,
    ) -> StoreResult<CodeBatch> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // The batch row is locked first: two processes adding to one batch take turns, so
        // `generated` never passes `count`.
        let row = sqlx::query("SELECT * FROM code_batches WHERE id = $1 FOR UPDATE")
            .bind(batch)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound)?;
        let b = rows::code_batch(&row)?;
        let room = (b.count - b.generated) as usize;
        let fresh = &codes[..codes.len().min(room)];
        let added = sqlx::query(
            "INSERT INTO codes (code, template_id, batch_id)
             SELECT c, $2, $3 FROM unnest($1::text[]) AS c
             ON CONFLICT (code) DO NOTHING",
        )
        .bind(fresh)
        .bind(b.template_id.get())
        .bind(batch)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected();
        let row = sqlx::query(
            "UPDATE code_batches SET generated = generated + $1,
                 finished_at = CASE WHEN generated + $1 = count THEN $2 END
             WHERE id = $3 RETURNING *",
        )
        .bind(added as i32)
        .bind(dt(now))
        .bind(batch)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let b = rows::code_batch(&row)?;
        tx.commit().await.map_err(db_err)?;
        Ok(b)
    }

    async fn batch_codes(
        &self,
        batch: i64,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<PromoCode>> {
        let rows = sqlx::query(
            "SELECT * FROM codes WHERE batch_id = $1 AND code > $2 ORDER BY code LIMIT $3",
        )
        .bind(batch)
        .bind(after.unwrap_or(""))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(rows::promo_code).collect()
    }
}
