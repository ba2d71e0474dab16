//! Promotion codes at the storage boundary.

use crate::{CodeBatch, Page, PromoCode, StoreResult};
use coupond_domain::{CodeBatchSpec, SharedCode, TemplateId, Timestamp};

use async_trait::async_trait;

/// Promotion codes: a template's shared code and batches of generated single-use codes.
#[async_trait]
pub trait CodeStore: Send + Sync {
    /// Replaces the template's shared code (`None` removes it). A code another template
    /// holds is `Conflict(Conflict::Unique)`.
    async fn set_shared_code(
        &self,
        template: TemplateId,
        code: Option<&SharedCode>,
    ) -> StoreResult<()>;
    /// The template's shared code, if it has one.
    async fn shared_code(&self, template: TemplateId) -> StoreResult<Option<String>>;
    /// A code by its normalized text.
    async fn promo_code(&self, code: &str) -> StoreResult<PromoCode>;
    async fn insert_code_batch(
        &self,
        template: TemplateId,
        spec: &CodeBatchSpec,
        now: Timestamp,
    ) -> StoreResult<CodeBatch>;
    async fn code_batch(&self, id: i64) -> StoreResult<CodeBatch>;
    /// A template's batches, by id.
    async fn template_code_batches(
        &self,
        template: TemplateId,
        page: Page,
    ) -> StoreResult<Vec<CodeBatch>>;
    /// Batches not finished yet, oldest first (to resume after a restart).
    async fn unfinished_code_batches(&self) -> StoreResult<Vec<CodeBatch>>;
    /// Adds fresh codes to a batch in one transaction: as many of `codes` as the batch still
    /// lacks, skipping any that already exist anywhere; counts them in `generated` and marks
    /// the batch finished when it is complete. Returns the batch as it is now. Safe to call
    /// from several processes at once: the batch row is locked for the count.
    async fn add_codes(
        &self,
        batch: i64,
        codes: &[String],
        now: Timestamp,
    ) -> StoreResult<CodeBatch>;
    /// A batch's codes in code order, after `after`, at most `limit`.
    async fn batch_codes(
        &self,
        batch: i64,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<PromoCode>>;
}
