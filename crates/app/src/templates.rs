//! Templates and the activities they run in, as a caller may see and change them: merchants
//! see and change only their own templates and the activities of their cities; a merchant's
//! tag audience names only tags the platform shares with merchants. Every change tells the
//! other instances what went stale.

use coupond_domain::{
    Activity, ActivityId, Area, Merchant, MerchantId, Template, TemplateAction, TemplateContext,
    TemplateDraft, TemplateId, TemplatePatch, Timestamp,
};
use coupond_engine::shared::Notice;
use coupond_engine::{campaigns, user_tags};

use crate::caller::{may_act, Access, Principal, CAMPAIGN_READ, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may create and edit templates.
pub const EDIT: Access = CAMPAIGN_WORK;

/// Who may read a template.
pub const READ: Access = CAMPAIGN_READ;

impl App {
    /// Template `id`, if `p` may see it (merchants only their own).
    pub async fn visible_template(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.store().template(id).await?;
        match p.merchant() {
            Some(m) if t.merchant_id != Some(m) => Err(AppError::NotFound),
            _ => Ok(t),
        }
    }

    /// Activity `id`, if `p` may see it (merchants those of their cities).
    pub async fn visible_activity(&self, p: &Principal, id: ActivityId) -> AppResult<Activity> {
        let a = self.store().activity(id).await?;
        if let Some(m) = p.merchant() {
            let merchant = self.store().merchant(m).await?;
            if !a.spec.cities.intersects(&merchant.cities) {
                return Err(AppError::NotFound);
            }
        }
        Ok(a)
    }

    /// Creates a template: in an activity (merchants, while it is enrolling) or standalone (a
    /// draft until published).
    pub async fn create_template(
        &self,
        p: &Principal,
        draft: &TemplateDraft,
    ) -> AppResult<Template> {
        let owner = self.owner(p.merchant()).await?;
        let by_merchant = p.merchant().is_some();
        user_tags::check_audience(self.store(), by_merchant, Some(&draft.audience)).await?;
        let activity = self.named_activity(p, draft.activity_id).await?;
        let rule = self.named_rule(draft.rule_id).await?;
        let (now, freeze) = (self.now(), self.settings().freeze);
        let named = (activity, rule);
        let t = campaigns::create_template(self.store(), owner.as_ref(), draft, named, now, freeze)
            .await?;
        Ok(t)
    }

    /// Edits template `id` as `patch` says (a live standalone template only grows).
    pub async fn update_template(
        &self,
        p: &Principal,
        id: TemplateId,
        patch: TemplatePatch,
    ) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        let by_merchant = p.merchant().is_some();
        user_tags::check_audience(self.store(), by_merchant, patch.audience.as_ref()).await?;
        let owner = self.owner(t.merchant_id).await?;
        let activity = self.named_activity(p, t.spec.activity_id).await?;
        let rule_id = patch.rule_id.unwrap_or(t.spec.rule_id);
        let rule = self.named_rule(rule_id).await?;
        let ctx = TemplateContext {
            owner: owner.as_ref(),
            activity: activity.as_ref(),
            now: self.now(),
            freeze: self.settings().freeze,
            rule: rule.as_ref(),
        };
        let updated = campaigns::edit_template(self.store(), &t, patch, ctx, &p.actor()).await?;
        // More stock may end a sold-out: every instance forgets both at once.
        self.tell(Notice::StockRaised {
            template: id,
            stock: updated.spec.total_stock,
        });
        Ok(updated)
    }

    /// What `p` may do with `t` at `now` (nothing for users, services, and operators whose
    /// role does not manage campaigns).
    pub async fn template_actions(
        &self,
        p: &Principal,
        t: &Template,
        now: Timestamp,
    ) -> AppResult<Vec<TemplateAction>> {
        let changes =
            matches!(p, Principal::Platform | Principal::Merchant(_)) && may_act(Area::Campaigns);
        if !changes {
            return Ok(Vec::new());
        }
        let activity = match t.spec.activity_id {
            Some(a) => Some(
                self.store()
                    .activity(a)
                    .await?
                    .status(now, self.settings().freeze),
            ),
            None => None,
        };
        Ok(t.actions(now, activity, p.merchant().is_some()))
    }

    /// The merchant a template belongs to, if any.
    async fn owner(&self, merchant: Option<MerchantId>) -> AppResult<Option<Merchant>> {
        match merchant {
            Some(m) => Ok(Some(self.store().merchant(m).await?)),
            None => Ok(None),
        }
    }

    /// The activity a draft names, if the caller may see it; otherwise invalid `activity_id`.
    async fn named_activity(
        &self,
        p: &Principal,
        id: Option<ActivityId>,
    ) -> AppResult<Option<Activity>> {
        let Some(id) = id else { return Ok(None) };
        match self.visible_activity(p, id).await {
            Ok(a) => Ok(Some(a)),
            Err(AppError::NotFound) => Err(AppError::invalid(
                "not_found",
                "activity_id",
                "no such activity",
            )),
            Err(e) => Err(e),
        }
    }
}
