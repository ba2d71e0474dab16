//! What each status allows: the state rules of editing, publishing and aborting templates and
//! activities, and the re-check of enrolled templates when their activity changes. Every front
//! door (the API, the console) goes through these, via the engine's workflows.

use time::Duration;

use crate::{
    Activity, ActivityStatus, Decision, DomainError, Review, Template, TemplateId, TemplateSpec,
    TemplateStatus, Timestamp,
};

impl Template {
    /// Its terms may change only while no claim can have happened (`not_editable`).
    pub fn check_editable(&self, now: Timestamp) -> Result<(), DomainError> {
        let status = self.status(now);
        if status.is_editable() {
            return Ok(());
        }
        Err(DomainError::state(
            "not_editable",
            format!(
                "the template is {}; its terms are fixed once claiming can start",
                status.as_str()
            ),
        ))
    }

    /// Only a standalone draft whose claim window is still ahead is published
    /// (`not_standalone`, `not_draft`, `claim_window_passed`).
    pub fn check_publishable(&self, now: Timestamp) -> Result<(), DomainError> {
        if self.spec.activity_id.is_some() {
            return Err(DomainError::state(
                "not_standalone",
                "templates in an activity go active with the activity",
            ));
        }
        let status = self.status(now);
        if status != TemplateStatus::Draft {
            return Err(DomainError::state(
                "not_draft",
                format!(
                    "only drafts are published; this template is {}",
                    status.as_str()
                ),
            ));
        }
        if now >= self.spec.claim_window().end {
            return Err(DomainError::state(
                "claim_window_passed",
                "the claim window is already over; change it before publishing",
            ));
        }
        Ok(())
    }

    /// Whether it may be aborted now (`already_final`, `activity_frozen`). `merchant_activity`
    /// is the status of its activity when a merchant asks: a merchant's enrollment is fixed
    /// while its activity is frozen (the platform may still stop it); once the activity runs,
    /// the merchant may stop its own template.
    pub fn check_abortable(
        &self,
        now: Timestamp,
        merchant_activity: Option<ActivityStatus>,
    ) -> Result<(), DomainError> {
        if let st @ (TemplateStatus::Aborted | TemplateStatus::Expired) = self.status(now) {
            return Err(DomainError::state(
                "already_final",
                format!("the template is already {}", st.as_str()),
            ));
        }
        if merchant_activity == Some(ActivityStatus::Frozen) {
            return Err(DomainError::state(
                "activity_frozen",
                "the activity is frozen: its templates cannot change until it runs",
            ));
        }
        Ok(())
    }

    /// Its codes (shared code, generated batches) may change until it is final
    /// (`already_final`).
    pub fn check_codes_open(&self, now: Timestamp) -> Result<(), DomainError> {
        match self.status(now) {
            st @ (TemplateStatus::Aborted | TemplateStatus::Expired) => Err(DomainError::state(
                "already_final",
                format!("the template is {}: its codes cannot change", st.as_str()),
            )),
            _ => Ok(()),
        }
    }

    /// It may still issue coupons (bulk issuance): not before the platform approved it
    /// (`not_approved`), not once claiming has ended (`not_claimable`).
    pub fn check_issuing(&self, now: Timestamp) -> Result<(), DomainError> {
        match self.status(now) {
            st @ (TemplateStatus::PendingApproval | TemplateStatus::Rejected) => {
                Err(DomainError::state(
                    "not_approved",
                    format!(
                        "the template is {}: it issues nothing until approved",
                        st.as_str()
                    ),
                ))
            }
            st @ (TemplateStatus::Aborted | TemplateStatus::Expired | TemplateStatus::Ended) => {
                Err(DomainError::state(
                    "not_claimable",
                    format!("the template is {}: it issues no more coupons", st.as_str()),
                ))
            }
            _ => Ok(()),
        }
    }

    /// A message may invite users to claim it only while they can (`not_claimable`):
    /// active, not before its claim window, not paused or ended.
    pub fn check_inviting(&self, now: Timestamp) -> Result<(), DomainError> {
        match self.status(now) {
            TemplateStatus::Active if self.pause.is_none() => Ok(()),
            st => Err(DomainError::state(
                "not_claimable",
                format!(
                    "the template is {}{}: a message to a segment invites users to claim it, \
                     so it must be claimable now",
                    st.as_str(),
                    if self.pause.is_some() {
                        " and paused"
                    } else {
                        ""
                    }
                ),
            )),
        }
    }

    /// It may be bound to a listing until it is final (`template_not_bindable`).
    pub fn check_bindable(&self, now: Timestamp) -> Result<(), DomainError> {
        match self.status(now) {
            st @ (TemplateStatus::Aborted | TemplateStatus::Expired) => Err(DomainError::state(
                "template_not_bindable",
                format!("the template is {}", st.as_str()),
            )),
            _ => Ok(()),
        }
    }
}

impl Template {
    /// What `decision` at `now` makes of its review: only a template waiting for approval
    /// (`not_pending`) and not aborted (`already_final`) is decided on.
    pub fn check_review(&self, decision: Decision, now: Timestamp) -> Result<Review, DomainError> {
        if self.aborted_at.is_some() {
            return Err(DomainError::state(
                "already_final",
                "the template is aborted",
            ));
        }
        self.review.decide(decision, now)
    }
}

impl Activity {
    /// Its terms may change while it is scheduled or enrolling (`activity_aborted`,
    /// `activity_frozen`).
    pub fn check_editable(&self, now: Timestamp, freeze: Duration) -> Result<(), DomainError> {
        match self.status(now, freeze) {
            ActivityStatus::Aborted => Err(DomainError::state(
                "activity_aborted",
                "the activity was aborted",
            )),
            st if !st.is_editable() => Err(DomainError::state(
                "activity_frozen",
                format!(
                    "the activity is {}; edits stopped at {}",
                    st.as_str(),
                    self.frozen_at(freeze)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// It may be aborted until it ends (`already_aborted`, `activity_ended`).
    pub fn check_abortable(&self, now: Timestamp, freeze: Duration) -> Result<(), DomainError> {
        match self.status(now, freeze) {
            ActivityStatus::Aborted => Err(DomainError::state(
                "already_aborted",
                "the activity is already aborted",
            )),
            ActivityStatus::Ended => Err(DomainError::state(
                "activity_ended",
                "the activity has ended",
            )),
            _ => Ok(()),
        }
    }

    /// Checks that every live template of this (edited) activity still fits it
    /// (`templates_conflict` naming the first that does not), and returns those whose claim
    /// window moves with the run window, with their new terms.
    pub fn rebase_enrolled(
        &self,
        templates: &[Template],
    ) -> Result<Vec<(TemplateId, TemplateSpec)>, DomainError> {
        let mut following = Vec::new();
        for t in templates.iter().filter(|t| t.aborted_at.is_none()) {
            let rebased = t.spec.rebase(self).map_err(|e| {
                DomainError::state(
                    "templates_conflict",
                    format!("template {} would no longer fit: {e}", t.id),
                )
            })?;
            if rebased.claim_window() != t.spec.claim_window() {
                following.push((t.id, rebased));
            }
        }
        Ok(following)
    }
}
