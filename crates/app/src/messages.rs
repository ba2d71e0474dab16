//! Campaign messages: a template's invitation sent to a segment of users, or a note to its
//! holders. A merchant reaches users only through the tags the platform shares with it, and
//! each owner sends at most `campaigns_per_owner_per_day` a local day.

use coupond_domain::messaging::CampaignDraft;
use coupond_domain::TemplateId;
use coupond_engine::messaging::campaigns;
use coupond_engine::{user_tags, CampaignError};
use coupond_store::{owner_key, CampaignMessage, Conflict, Page, StoreError};

use crate::caller::{Access, Principal, CAMPAIGN_READ, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may send a template's campaign messages.
pub const SEND: Access = CAMPAIGN_WORK;

/// Who may read them.
pub const READ: Access = CAMPAIGN_READ;

impl App {
    /// Records a campaign message of template `id` and wakes the sender.
    pub async fn send_campaign(
        &self,
        p: &Principal,
        id: TemplateId,
        draft: CampaignDraft,
    ) -> AppResult<CampaignMessage> {
        let t = self.visible_template(p, id).await?;
        let campaign = draft.validate()?;
        if let Some(seg) = campaign.segment() {
            let by_merchant = p.merchant().is_some();
            user_tags::check_shared(self.store(), by_merchant, "segment.any", &seg.any).await?;
        }
        let max = self.settings().campaigns_per_owner_per_day;
        let (zone, now) = (self.zone(), self.now());
        let actor = p.actor();
        let recorded = campaigns::record(
            self.store(),
            &t,
            p.merchant(),
            &actor,
            &campaign,
            max,
            zone,
            now,
        )
        .await;
        let m = recorded.map_err(|e| match e {
            CampaignError::Store(StoreError::Conflict(Conflict::Limit)) => AppError::conflict(
                "campaign_limit",
                format!(
                    "at most {max} campaign messages per owner a day ({}); try again tomorrow",
                    zone.name()
                ),
            ),
            e => e.into(),
        })?;
        self.campaign_messages().notify_one();
        Ok(m)
    }

    /// A page of template `id`'s campaign messages, newest first: for the platform every one,
    /// for a merchant those it sent (the platform's own segments may name tags it keeps to
    /// itself).
    pub async fn sent_messages(
        &self,
        p: &Principal,
        id: TemplateId,
        page: Page,
    ) -> AppResult<Vec<CampaignMessage>> {
        self.visible_template(p, id).await?;
        let sender = p.merchant().map(|m| owner_key(Some(m)));
        let rows = self.store().template_campaign_messages(id, sender, page);
        Ok(rows.await?)
    }
}
