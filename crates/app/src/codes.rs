//! Promotion codes as a caller may manage them: a template's shared code (set at most
//! `code_set_rate` times a second per merchant, so it is no way to learn other merchants'
//! codes) and batches of single-use codes (small ones filled before the answer, larger ones
//! in the background, at most `max_queued_codes_per_owner` waiting per owner).

use coupond_domain::{CodeBatchSpec, SharedCode, Template, TemplateId};
use coupond_engine::codes;
use coupond_store::{CodeBatch, Conflict, Page, PromoCode, StoreError};

use crate::caller::{Access, Principal, CAMPAIGN_READ, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may set and remove shared codes and start code batches.
pub const MANAGE: Access = CAMPAIGN_WORK;

/// Who may read code batches.
pub const READ: Access = CAMPAIGN_READ;

/// A batch of codes started.
#[derive(Debug)]
pub struct StartedBatch {
    pub batch: CodeBatch,
    /// Whether its codes were all generated before the answer (else in the background).
    pub filled: bool,
}

impl App {
    /// Sets template `id`'s shared code (replacing any it had).
    pub async fn set_shared_code(
        &self,
        p: &Principal,
        id: TemplateId,
        code: &str,
    ) -> AppResult<SharedCode> {
        if let Some(m) = p.merchant() {
            self.code_set_limits().check(&m)?;
        }
        let code = SharedCode::parse(code)?;
        let t = self.open_for_codes(p, id).await?;
        match codes::set_shared_code(self.store(), &t, Some(&code), self.now()).await {
            Err(StoreError::Conflict(Conflict::Unique)) => Err(AppError::conflict(
                "code_taken",
                "another template uses this code; choose another",
            )),
            other => other.map_err(AppError::from),
        }?;
        Ok(code)
    }

    /// Removes template `id`'s shared code (coupons redeemed with it stay with their users).
    pub async fn remove_shared_code(&self, p: &Principal, id: TemplateId) -> AppResult<()> {
        let t = self.open_for_codes(p, id).await?;
        codes::set_shared_code(self.store(), &t, None, self.now()).await?;
        Ok(())
    }

    /// Starts a batch of single-use codes of template `id`: filled now when it has at most
    /// `code_batch_sync_max` codes, else by the background generator.
    pub async fn start_code_batch(
        &self,
        p: &Principal,
        id: TemplateId,
        spec: &CodeBatchSpec,
    ) -> AppResult<StartedBatch> {
        let t = self.open_for_codes(p, id).await?;
        let max = self.settings().max_queued_codes_per_owner;
        let batch = codes::start_batch(self.store(), &t, spec, max, self.now()).await?;
        if spec.count() <= self.settings().code_batch_sync_max {
            let filled = self.code_generator().finish(batch.id).await?;
            return Ok(StartedBatch {
                batch: filled.unwrap_or(batch),
                filled: true,
            });
        }
        self.code_generator().wake();
        Ok(StartedBatch {
            batch,
            filled: false,
        })
    }

    /// Code batch `id`, if `p` may see its template.
    pub async fn code_batch(&self, p: &Principal, id: i64) -> AppResult<CodeBatch> {
        let b = self.store().code_batch(id).await?;
        self.visible_template(p, b.template_id).await?;
        Ok(b)
    }

    /// Code batch `id` once all its codes are generated, if `p` may see its template; a
    /// batch still being generated is refused (`batch_pending`).
    pub(crate) async fn finished_code_batch(&self, p: &Principal, id: i64) -> AppResult<CodeBatch> {
        let b = self.code_batch(p, id).await?;
        if b.finished_at.is_none() {
            return Err(AppError::conflict(
                "batch_pending",
                format!(
                    "the batch is still being generated ({} of {})",
                    b.generated, b.count
                ),
            ));
        }
        Ok(b)
    }

    /// Up to `limit` codes of `batch` (read through [`App::finished_code_batch`]) after code
    /// `after`, in code order.
    pub(crate) async fn batch_codes(
        &self,
        batch: &CodeBatch,
        after: Option<&str>,
        limit: u32,
    ) -> AppResult<Vec<PromoCode>> {
        Ok(self.store().batch_codes(batch.id, after, limit).await?)
    }

    /// Template `id`'s shared code, if `p` may see the template and it has one.
    pub async fn shared_code(&self, p: &Principal, id: TemplateId) -> AppResult<String> {
        self.visible_template(p, id).await?;
        self.store()
            .shared_code(id)
            .await?
            .ok_or(AppError::NotFound)
    }

    /// A page of template `id`'s code batches, oldest first.
    pub async fn code_batches(
        &self,
        p: &Principal,
        id: TemplateId,
        page: Page,
    ) -> AppResult<Vec<CodeBatch>> {
        self.visible_template(p, id).await?;
        Ok(self.store().template_code_batches(id, page).await?)
    }

    /// Template `id`, if `p` may see it and its codes may change now.
    async fn open_for_codes(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        t.check_codes_open(self.now())?;
        Ok(t)
    }
}
