//! What may be done to a template or an activity now, as the API tells callers and the console shows:
//! computed from the same `check_*` rules the workflows apply (`lifecycle`), so an action is
//! offered exactly when the engine would accept it for the state the caller read.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use time::Duration;

use crate::{
    Activity, ActivityStatus, Coupon, CouponStatus, Decision, Template, TemplateStatus, Timestamp,
};

/// An action on a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TemplateAction {
    /// Change any term (`PATCH`): until claiming can start.
    Edit,
    /// Change the stock (`PATCH total_stock`): until claiming can start, or while a standalone
    /// template is claimable (raised, or lowered to what is claimed).
    RaiseStock,
    /// Move the claim end or a fixed validity's end later (`PATCH`): as `RaiseStock`, for a
    /// standalone template (one in an activity claims in the activity's run).
    Extend,
    /// `POST /publish`: a standalone draft whose window is still ahead.
    Publish,
    /// `POST /abort`: until it is final (not while its activity is frozen, for its merchant).
    Abort,
    /// `DELETE`: a standalone draft.
    Delete,
    /// A shared code or a batch of single-use codes: until it is final.
    Codes,
    /// Bulk issuance: once approved (where needed), until claiming has ended.
    Issue,
    /// `POST /approve` (the platform): a merchant's enrollment waiting for approval.
    Approve,
    /// `POST /reject` with a reason (the platform): as `Approve`.
    Reject,
    /// `POST /pause`: scheduled or active, and not paused.
    Pause,
    /// `POST /resume`: paused itself (not with its activity).
    Resume,
    /// `POST /stop`: active; claiming ends now, coupons held stay valid.
    Stop,
}

impl TemplateAction {
    pub const ALL: [TemplateAction; 13] = [
        TemplateAction::Edit,
        TemplateAction::RaiseStock,
        TemplateAction::Extend,
        TemplateAction::Publish,
        TemplateAction::Abort,
        TemplateAction::Delete,
        TemplateAction::Codes,
        TemplateAction::Issue,
        TemplateAction::Approve,
        TemplateAction::Reject,
        TemplateAction::Pause,
        TemplateAction::Resume,
        TemplateAction::Stop,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TemplateAction::Edit => "edit",
            TemplateAction::RaiseStock => "raise_stock",
            TemplateAction::Extend => "extend",
            TemplateAction::Publish => "publish",
            TemplateAction::Abort => "abort",
            TemplateAction::Delete => "delete",
            TemplateAction::Codes => "codes",
            TemplateAction::Issue => "issue",
            TemplateAction::Approve => "approve",
            TemplateAction::Reject => "reject",
            TemplateAction::Pause => "pause",
            TemplateAction::Resume => "resume",
            TemplateAction::Stop => "stop",
        }
    }
}

impl Template {
    /// Whether its terms may change now, and how: every term until claiming can start
    /// ([`Template::check_editable`]); once a standalone template is claimable, only more
    /// stock and later ends (`TemplatePatch::apply_live`). A template in an activity is fixed
    /// once its activity runs.
    pub fn is_live_editable(&self, now: Timestamp) -> bool {
        self.status(now) == TemplateStatus::Active && self.spec.activity_id.is_none()
    }

    /// The actions its rules allow at `now`: `activity` is its activity's status (if it is
    /// in one), `by_merchant` whether the caller is its merchant (who may not abort while the
    /// activity is frozen, [`Template::check_abortable`]). Nobody edits a template whose
    /// activity is frozen.
    pub fn actions(
        &self,
        now: Timestamp,
        activity: Option<ActivityStatus>,
        by_merchant: bool,
    ) -> Vec<TemplateAction> {
        let frozen = activity == Some(ActivityStatus::Frozen);
        let merchant_activity = activity.filter(|_| by_merchant);
        let editable = self.check_editable(now).is_ok() && !frozen;
        let standalone = self.spec.activity_id.is_none();
        let grows = editable || self.is_live_editable(now);
        let draft = self.status(now) == TemplateStatus::Draft && standalone;
        let reviewable = self.check_review(Decision::Approve, now).is_ok();
        TemplateAction::ALL
            .into_iter()
            .filter(|a| match a {
                TemplateAction::Edit => editable,
                TemplateAction::RaiseStock => grows,
                TemplateAction::Extend => grows && standalone,
                TemplateAction::Publish => self.check_publishable(now).is_ok(),
                TemplateAction::Abort => self.check_abortable(now, merchant_activity).is_ok(),
                TemplateAction::Delete => draft,
                TemplateAction::Codes => self.check_codes_open(now).is_ok(),
                TemplateAction::Issue => self.check_issuing(now).is_ok(),
                TemplateAction::Approve => !by_merchant && reviewable,
                TemplateAction::Reject => !by_merchant && reviewable,
                TemplateAction::Pause => self.check_pausable(now).is_ok(),
                TemplateAction::Resume => self.check_resumable().is_ok(),
                TemplateAction::Stop => self.check_stoppable(now).is_ok(),
            })
            .collect()
    }
}

/// An action on an activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityAction {
    /// Change its terms (`PATCH`, the platform): while scheduled or enrolling.
    Edit,
    /// `POST /abort` (the platform): until it ends.
    Abort,
    /// Create a template in it (`POST /v1/templates` with `activity_id`, a merchant): while
    /// it is enrolling.
    Enroll,
    /// `POST /pause` (the platform): until it ends, when not paused.
    Pause,
    /// `POST /resume` (the platform): when paused.
    Resume,
}

impl ActivityAction {
    pub const ALL: [ActivityAction; 5] = [
        ActivityAction::Edit,
        ActivityAction::Abort,
        ActivityAction::Enroll,
        ActivityAction::Pause,
        ActivityAction::Resume,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActivityAction::Edit => "edit",
            ActivityAction::Abort => "abort",
            ActivityAction::Enroll => "enroll",
            ActivityAction::Pause => "pause",
            ActivityAction::Resume => "resume",
        }
    }

    /// Whether the platform takes this action (a merchant takes the others).
    pub fn is_platforms(self) -> bool {
        !matches!(self, ActivityAction::Enroll)
    }
}

impl Activity {
    /// The actions its rules allow at `now` (for either side: the caller's side narrows them).
    pub fn actions(&self, now: Timestamp, freeze: Duration) -> Vec<ActivityAction> {
        ActivityAction::ALL
            .into_iter()
            .filter(|a| match a {
                ActivityAction::Edit => self.check_editable(now, freeze).is_ok(),
                ActivityAction::Abort => self.check_abortable(now, freeze).is_ok(),
                ActivityAction::Enroll => self.status(now, freeze) == ActivityStatus::Enrolling,
                ActivityAction::Pause => self.check_pausable(now, freeze).is_ok(),
                ActivityAction::Resume => self.check_resumable().is_ok(),
            })
            .collect()
    }
}

/// An action on a coupon, for the people who help its holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CouponAction {
    /// `POST /v1/coupons/{id}/revoke` with a reason: an unused or locked coupon.
    Revoke,
    /// `POST /v1/orders/{order_id}/extend` of the order holding it: a locked coupon (the
    /// platform's support, and the order service).
    ExtendLock,
}

impl Coupon {
    /// Whether revoking it changes it (`coupon_used`, `coupon_expired` otherwise; a revoked
    /// one stays as it is).
    pub fn is_revocable(&self, now: Timestamp) -> bool {
        matches!(
            self.status(now),
            CouponStatus::Unused | CouponStatus::Locked
        )
    }

    /// The actions its rules allow at `now`.
    pub fn actions(&self, now: Timestamp) -> Vec<CouponAction> {
        let mut actions = Vec::new();
        if self.is_revocable(now) {
            actions.push(CouponAction::Revoke);
        }
        if self.status(now) == CouponStatus::Locked {
            actions.push(CouponAction::ExtendLock);
        }
        actions
    }
}
