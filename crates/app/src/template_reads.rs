//! Templates as a caller reads them: one with the actions the caller may take on it now, and
//! lists filtered as an operator or an order service asks (merchants see only their own).

use coupond_domain::{
    ActivityId, CityId, MerchantId, Template, TemplateId, TemplateStatus, Timestamp,
};
use coupond_store::TemplateQuery;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::Principal;
use crate::context::App;
use crate::error::AppResult;
use crate::pages::{finish, slice, Narrowing, PageOf, PageRequest};
use crate::views::TemplateView;

/// Which templates to list.
#[derive(Clone, Debug, Default)]
pub struct TemplateFilter {
    /// Only this merchant's (the platform's filter; a merchant naming another gets none).
    pub merchant: Option<MerchantId>,
    /// Only those in this activity.
    pub activity: Option<ActivityId>,
    /// Only those in this status now.
    pub status: Option<TemplateStatus>,
    /// Only those offered in this city.
    pub city: Option<CityId>,
    /// Kind, pause and reference (an `external_id` is one per owner).
    pub narrowing: Narrowing,
}

/// One recorded change of a template's terms.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplateChangeView {
    /// Who: `platform`, `merchant:<id>`.
    pub actor: String,
    pub at: Timestamp,
    /// Each changed field: `{"total_stock": {"from": 100, "to": 150}}`.
    #[schema(value_type = Object)]
    pub changes: serde_json::Value,
}

impl App {
    /// A page of template `id`'s history, oldest first: every change of its terms after it
    /// was created.
    pub async fn template_history(
        &self,
        p: &Principal,
        id: TemplateId,
        page: PageRequest,
    ) -> AppResult<PageOf<TemplateChangeView>> {
        let page = page.page(self.settings())?;
        let t = self.visible_template(p, id).await?;
        let changes = self.store().template_history(t.id).await?;
        let view = |c: coupond_store::TemplateChange| TemplateChangeView {
            actor: c.actor.to_text(),
            at: c.at,
            changes: c.changes,
        };
        Ok(slice(changes, page, |c| c.id, view))
    }

    /// Template `t` as `p` sees it at `now` (the one instant a call reads the clock at), with
    /// the actions `p` may take on it ([`App::template_actions`]).
    pub async fn template_view(
        &self,
        p: &Principal,
        t: Template,
        now: Timestamp,
    ) -> AppResult<TemplateView> {
        let actions = self.template_actions(p, &t, now).await?;
        let mut v = TemplateView::new(t, now);
        v.actions = Some(actions);
        Ok(v)
    }

    /// Template `id` as `p` may see it, with its actions.
    pub async fn template(&self, p: &Principal, id: TemplateId) -> AppResult<TemplateView> {
        let t = self.visible_template(p, id).await?;
        self.template_view(p, t, self.now()).await
    }

    /// A page of the templates `filter` picks, oldest first.
    pub async fn templates(
        &self,
        p: &Principal,
        filter: TemplateFilter,
        page: PageRequest,
    ) -> AppResult<PageOf<TemplateView>> {
        let page = page.page(self.settings())?;
        let now = self.now();
        let merchant = match (p.merchant(), filter.merchant) {
            (Some(own), Some(asked)) if own != asked => {
                let none = PageOf {
                    items: Vec::new(),
                    next_cursor: None,
                };
                return Ok(none);
            }
            (own, asked) => own.or(asked),
        };
        let query = TemplateQuery {
            city: filter.city,
            narrow: filter.narrowing.checked()?,
            merchant,
            activity: filter.activity,
            status: filter.status,
            now,
            page,
        };
        let rows = self.store().list_templates(&query).await?;
        let view = |t| TemplateView::new(t, now);
        Ok(finish(rows, page, |t| t.id.get(), view))
    }
}
