//! A template's or an activity's course: publishing, pausing, resuming, stopping, aborting,
//! approving or rejecting an enrollment, and deleting a draft. A front door that offers
//! several of them names one as a [`TemplateStep`] and applies it with [`App::steer_template`].
//! Each loads what the caller may see, applies the engine's workflow in one transaction and
//! then tells every instance what went stale (its cached templates, the coupon centre's
//! shelf), here in one place. Pauses and resumes of one template count against
//! `pause_rate` (each has every instance read it again).

use coupond_domain::{Activity, ActivityId, Area, Decision, Note, Template, TemplateId};
use coupond_engine::shared::Notice;
use coupond_engine::{campaigns, lifecycle, steering};

use crate::caller::{roles, Access, Principal, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::AppResult;

/// Who may approve or reject an enrollment: the platform's campaign work.
pub const REVIEW: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Campaigns,
};

/// One step of a template's course, as a person picks it.
#[derive(Clone, Debug)]
pub enum TemplateStep {
    Publish,
    Abort,
    /// With the reason, if one is given.
    Pause(Option<Note>),
    Resume,
    Stop,
    Approve,
    /// With the reason its merchant reads.
    Reject(Note),
}

impl TemplateStep {
    /// Who may take it.
    pub fn access(&self) -> Access {
        match self {
            TemplateStep::Approve | TemplateStep::Reject(_) => REVIEW,
            _ => CAMPAIGN_WORK,
        }
    }

    /// What it did, in a word (`published`, `paused`, ...).
    pub fn done(&self) -> &'static str {
        match self {
            TemplateStep::Publish => "published",
            TemplateStep::Abort => "aborted",
            TemplateStep::Pause(_) => "paused",
            TemplateStep::Resume => "resumed",
            TemplateStep::Stop => "stopped",
            TemplateStep::Approve => "approved",
            TemplateStep::Reject(_) => "rejected",
        }
    }
}

impl App {
    /// Publishes standalone draft `id`: claimable when its claim window opens.
    pub async fn publish_template(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        let published = campaigns::publish_template(self.store(), &t, self.now()).await?;
        // A copy read while it was a draft answers claims `not_found`: every instance forgets
        // it.
        Ok(self.changed(published))
    }

    /// Aborts template `id`: no more claims or redemptions. Final.
    pub async fn abort_template(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        let (by_merchant, freeze) = (p.merchant().is_some(), self.settings().freeze);
        let aborted =
            campaigns::abort_template(self.store(), &t, by_merchant, self.now(), freeze).await?;
        // Claims of it are refused at once on every instance, not after `cache_ttl`.
        Ok(self.changed(aborted))
    }

    /// Pauses template `id` (claims and redemptions answer `paused`).
    pub async fn pause_template(
        &self,
        p: &Principal,
        id: TemplateId,
        reason: Option<Note>,
    ) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        self.pause_limits().check(&id)?;
        let paused =
            steering::pause_template(self.store(), &t, reason, &p.actor(), self.now()).await?;
        Ok(self.changed(paused))
    }

    /// Resumes template `id`, paused itself.
    pub async fn resume_template(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        self.pause_limits().check(&id)?;
        let resumed = steering::resume_template(self.store(), &t, &p.actor(), self.now()).await?;
        Ok(self.changed(resumed))
    }

    /// Stops active template `id`'s claiming for good (its coupons stay valid).
    pub async fn stop_template(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        let stopped = steering::stop_template(self.store(), &t, &p.actor(), self.now()).await?;
        Ok(self.changed(stopped))
    }

    /// Pauses activity `id` and every template in it not paused itself.
    pub async fn pause_activity(
        &self,
        p: &Principal,
        id: ActivityId,
        reason: Option<Note>,
    ) -> AppResult<Activity> {
        let a = self.visible_activity(p, id).await?;
        let (now, freeze) = (self.now(), self.settings().freeze);
        let actor = p.actor();
        let paused =
            steering::pause_activity(self.store(), &a, reason, &actor, now, freeze).await?;
        self.forget_activity_templates(id).await?;
        Ok(paused)
    }

    /// Resumes activity `id` and the templates its pause paused.
    pub async fn resume_activity(&self, p: &Principal, id: ActivityId) -> AppResult<Activity> {
        let a = self.visible_activity(p, id).await?;
        let resumed = steering::resume_activity(self.store(), &a, &p.actor(), self.now()).await?;
        self.forget_activity_templates(id).await?;
        Ok(resumed)
    }

    /// Takes `step` on template `id`.
    pub async fn steer_template(
        &self,
        p: &Principal,
        id: TemplateId,
        step: TemplateStep,
    ) -> AppResult<Template> {
        match step {
            TemplateStep::Publish => self.publish_template(p, id).await,
            TemplateStep::Abort => self.abort_template(p, id).await,
            TemplateStep::Pause(reason) => self.pause_template(p, id, reason).await,
            TemplateStep::Resume => self.resume_template(p, id).await,
            TemplateStep::Stop => self.stop_template(p, id).await,
            TemplateStep::Approve => self.review_template(p, id, Decision::Approve).await,
            TemplateStep::Reject(why) => self.review_template(p, id, Decision::Reject(why)).await,
        }
    }

    /// Approves or rejects enrollment `id`, waiting for approval.
    pub async fn review_template(
        &self,
        p: &Principal,
        id: TemplateId,
        decision: Decision,
    ) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        let (actor, now) = (p.actor(), self.now());
        let reviewed = campaigns::review_template(self.store(), &t, decision, &actor, now).await?;
        // An approved template may be claimable at once: every instance reads it again.
        Ok(self.changed(reviewed))
    }

    /// Deletes standalone draft `id`, never published, with its bindings and codes.
    pub async fn delete_template(&self, p: &Principal, id: TemplateId) -> AppResult<()> {
        let t = self.visible_template(p, id).await?;
        lifecycle::delete_template(self.store(), &t, self.now()).await?;
        Ok(())
    }

    /// Every instance forgets its copies of `t`, which just changed.
    fn changed(&self, t: Template) -> Template {
        self.tell(Notice::TemplateChanged { template: t.id });
        t
    }
}
