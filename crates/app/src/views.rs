//! Response bodies. Statuses are computed from the clock when the view is built. The coupon
//! centre's views of templates and activities for users are types of their own ([`OfferView`],
//! [`PublicActivityView`]).

mod centre;
mod history;
pub use centre::{OfferActivity, OfferView, PublicActivityView};
pub use history::{HeldBy, HistoryEntry, HistoryView};

use coupond_domain::{
    standing, Activity, ActivityAction, ActivityDraft, ActivityId, ActivityStatus, Coupon,
    CouponAction, CouponId, CouponStatus, CouponValue, Listing, ListingDraft, ListingId,
    MerchantId, Money, Pause, PauseScope, Priority, Reason, Review, Stacking, StackingGroup,
    Template, TemplateAction, TemplateDraft, TemplateId, TemplateStatus, TemplateUse, Timestamp,
    UserId,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An activity as the API shows it (the console reads it back).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ActivityView {
    pub id: ActivityId,
    /// Computed from the clock at read time.
    pub status: ActivityStatus,
    #[serde(flatten)]
    pub terms: ActivityDraft,
    /// When edits stop: the end of enrollment or the freeze period before the run.
    pub frozen_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted_at: Option<Timestamp>,
    /// Present while the activity is paused: its templates' claims wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<PauseView>,
    /// What the caller may do to it now (its rules, the caller's side and role): on the
    /// answers about one activity, not in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<ActivityAction>>,
}

impl ActivityView {
    pub fn new(a: Activity, now: Timestamp, freeze: time::Duration) -> Self {
        ActivityView {
            id: a.id,
            status: a.status(now, freeze),
            frozen_at: a.frozen_at(freeze),
            created_at: a.created_at,
            updated_at: a.updated_at,
            aborted_at: a.aborted_at,
            paused: a.pause.as_ref().map(PauseView::of),
            actions: None,
            terms: a.spec.into_draft(),
        }
    }
}

/// A pause in force: claims wait (409 `paused`), coupons held stay usable.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PauseView {
    pub since: Timestamp,
    /// The reason given, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `template` (paused itself) or `activity` (paused with its activity, which resumes it).
    pub scope: PauseScope,
}

impl PauseView {
    pub fn of(p: &Pause) -> Self {
        PauseView {
            since: p.at,
            reason: p.reason.as_ref().map(|r| r.as_str().to_owned()),
            scope: p.scope,
        }
    }
}

/// A template as the API shows it (the console reads it back).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplateView {
    pub id: TemplateId,
    /// The owning merchant; absent for platform-issued templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    /// Computed from the clock at read time.
    pub status: TemplateStatus,
    #[serde(flatten)]
    pub terms: TemplateDraft,
    /// Whether `claim_window` is the activity's run window and moves when the activity's run
    /// is edited.
    pub claim_window_follows_activity: bool,
    /// Coupons issued so far.
    pub claimed: i64,
    /// Coupons left to claim.
    pub remaining: i64,
    /// Less than 5 % of the stock is left.
    pub low_on_stock: bool,
    /// Coupons used by confirmed orders.
    pub used: i64,
    /// Discount given by confirmed orders (counts against `budget`).
    pub given: Money,
    /// Discount held by orders still locked (also counts against `budget` until they end).
    pub reserved: Money,
    /// The last instant any coupon of this template is usable.
    pub expires_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aborted_at: Option<Timestamp>,
    /// Where a merchant's enrollment stands with the platform's approval; absent where its
    /// activity requires none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewView>,
    /// Present while it is paused (itself or with its activity): claims wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<PauseView>,
    /// What the caller may do to it now (its rules and the caller's role): on the answers
    /// about one template (read, create, change, publish, abort), not in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<TemplateAction>>,
}

/// The platform's review of an enrollment.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReviewView {
    /// `pending`, `approved` or `rejected`.
    #[schema(example = "rejected")]
    pub decision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewed_at: Option<Timestamp>,
    /// Why it was rejected, for its merchant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ReviewView {
    fn of(r: &Review) -> Option<Self> {
        (*r != Review::NotNeeded).then(|| ReviewView {
            decision: r.as_str().to_owned(),
            reviewed_at: r.decided_at(),
            reason: r.reason().map(str::to_owned),
        })
    }
}

impl TemplateView {
    pub fn new(t: Template, now: Timestamp) -> Self {
        TemplateView {
            id: t.id,
            merchant_id: t.merchant_id,
            status: t.status(now),
            remaining: t.spec.total_stock - t.claimed,
            low_on_stock: t.low_on_stock(),
            used: t.used,
            given: t.given,
            reserved: t.reserved,
            claimed: t.claimed,
            expires_at: t.spec.expires_at(),
            created_at: t.created_at,
            updated_at: t.updated_at,
            published_at: t.published_at,
            aborted_at: t.aborted_at,
            review: ReviewView::of(&t.review),
            paused: t.pause.as_ref().map(PauseView::of),
            actions: None,
            claim_window_follows_activity: t.spec.follows_activity(),
            terms: TemplateDraft {
                claim_window: Some(t.spec.claim_window()),
                ..t.spec.draft().clone()
            },
        }
    }
}

/// A coupon claimable on a listing now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LiveCoupon {
    pub template_id: TemplateId,
    pub title: String,
    pub value: CouponValue,
    pub threshold: Money,
    /// Coupons left to claim.
    pub remaining: i64,
    pub sold_out: bool,
}

impl LiveCoupon {
    pub fn new(t: &Template) -> Self {
        let remaining = (t.spec.total_stock - t.claimed).max(0);
        LiveCoupon {
            template_id: t.id,
            title: t.spec.title.clone(),
            value: t.spec.value.clone(),
            threshold: t.spec.threshold,
            remaining,
            sold_out: remaining == 0,
        }
    }
}

/// A listing as the API shows it, with the coupons claimable on it now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ListingView {
    pub id: ListingId,
    pub merchant_id: MerchantId,
    #[serde(flatten)]
    pub terms: ListingDraft,
    pub coupons: Vec<LiveCoupon>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl ListingView {
    pub fn new(l: Listing, coupons: Vec<LiveCoupon>) -> Self {
        ListingView {
            id: l.id,
            merchant_id: l.merchant_id,
            terms: l.draft,
            coupons,
            created_at: l.created_at,
            updated_at: l.updated_at,
        }
    }
}

/// What a coupon holder needs to know about its template.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplateSummary {
    pub id: TemplateId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    pub title: String,
    pub value: CouponValue,
    pub threshold: Money,
    pub stacking: Stacking,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacking_group: Option<StackingGroup>,
    #[serde(default, skip_serializing_if = "Priority::is_zero")]
    pub priority: Priority,
}

impl TemplateSummary {
    pub fn new(t: &Template) -> Self {
        TemplateSummary {
            id: t.id,
            merchant_id: t.merchant_id,
            title: t.spec.title.clone(),
            value: t.spec.value.clone(),
            threshold: t.spec.threshold,
            stacking: t.spec.stacking,
            stacking_group: t.spec.stacking_group.clone(),
            priority: t.spec.priority,
        }
    }
}

/// A coupon as its holder sees it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CouponView {
    pub id: CouponId,
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// Computed at read time: an unused coupon past `valid_until` is `expired`.
    pub status: CouponStatus,
    pub claimed_at: Timestamp,
    pub valid_from: Timestamp,
    pub valid_until: Timestamp,
    /// The promotion code redeemed for it, if it came from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether it can be used on an order now, as far as anything but the order decides.
    pub usable: bool,
    /// Why not, when it cannot: `expired`, `not_yet_valid`, `locked`, `used`, `revoked`,
    /// `template_aborted` (an unused coupon of an aborted template), `budget_exhausted`.
    pub unusable_reasons: Vec<Reason>,
    pub template: TemplateSummary,
    /// What the caller may do to it now: on the platform's and its merchant's reads of a
    /// user's coupons, for a caller who may help users (`revoke`); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<CouponAction>>,
}

impl CouponView {
    /// The coupon `c` of template `t` as a wallet shows it at `now`.
    pub fn new(c: Coupon, t: &Template, now: Timestamp) -> Self {
        let reasons = standing(now, &c, TemplateUse::of(t));
        CouponView {
            id: c.id,
            usable: reasons.is_empty(),
            unusable_reasons: reasons,
            template: TemplateSummary::new(t),
            status: c.status(now),
            user_id: c.user_id,
            claimed_at: c.claimed_at,
            valid_from: c.valid_from,
            valid_until: c.valid_until,
            actions: None,
            code: c.code,
        }
    }
}

/// A template's shared promotion code.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SharedCodeView {
    pub template_id: TemplateId,
    /// As stored: upper case, without separators.
    pub code: String,
}

/// Whether a batch of codes is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CodeBatchStatus {
    /// Being generated in the background.
    Pending,
    /// Every code exists and can be downloaded.
    Done,
}

/// A batch of generated single-use codes.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CodeBatchView {
    pub id: i64,
    pub template_id: TemplateId,
    pub status: CodeBatchStatus,
    pub prefix: String,
    pub length: u32,
    pub count: u32,
    pub generated: u32,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// Where the codes are, as CSV (`code,redeemed_by,redeemed_at`).
    pub codes_url: String,
}

impl CodeBatchView {
    pub fn new(b: coupond_store::CodeBatch) -> Self {
        CodeBatchView {
            status: if b.finished_at.is_some() {
                CodeBatchStatus::Done
            } else {
                CodeBatchStatus::Pending
            },
            codes_url: format!("/v1/code-batches/{}/codes", b.id),
            id: b.id,
            template_id: b.template_id,
            prefix: b.prefix,
            length: b.length,
            count: b.count,
            generated: b.generated,
            created_at: b.created_at,
            finished_at: b.finished_at,
        }
    }
}

/// What the platform's or a merchant's support may do with coupon `c` at `now`, in the views
/// that help a user (`None` for anyone else, or a role that does not support users): revoke
/// it, and, the platform only, extend the lock that holds it.
pub fn support_actions(
    p: &crate::caller::Principal,
    c: &Coupon,
    now: Timestamp,
) -> Option<Vec<CouponAction>> {
    use crate::caller::{may_act, Principal};
    let helps = matches!(p, Principal::Platform | Principal::Merchant(_))
        && may_act(coupond_domain::Area::Support);
    let platform = matches!(p, Principal::Platform);
    helps.then(|| {
        c.actions(now)
            .into_iter()
            .filter(|a| platform || *a != CouponAction::ExtendLock)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The console reads the API's answers back into these types: what one serialises, the
    /// other reads, terms flattened in, actions and review included.
    #[test]
    fn views_read_back_what_they_write() {
        let v = serde_json::json!({
            "id": 5, "merchant_id": 2, "status": "pending_approval", "activity_id": 3,
            "title": "20 off", "description": "", "value": {"kind": "amount_off", "amount": 2000},
            "threshold": 0, "cities": [1], "total_stock": 10, "per_user_limit": 1,
            "claim_window": {"start": "2026-11-24T12:00:00Z", "end": "2026-11-30T00:00:00Z"},
            "validity": {"type": "relative", "days": 7},
            "claim_window_follows_activity": true, "claimed": 0, "remaining": 10,
            "low_on_stock": false, "used": 0, "given": 0, "reserved": 0,
            "expires_at": "2026-12-07T00:00:00Z", "created_at": "2026-11-24T12:00:00Z",
            "updated_at": "2026-11-24T12:00:00Z", "review": {"decision": "pending"},
            "actions": ["edit", "approve", "reject"]
        });
        let t: TemplateView = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(t.status, TemplateStatus::PendingApproval);
        assert_eq!(t.terms.total_stock, 10);
        assert_eq!(
            t.actions.as_deref(),
            Some(
                &[
                    TemplateAction::Edit,
                    TemplateAction::Approve,
                    TemplateAction::Reject
                ][..]
            )
        );
        let again = serde_json::to_value(&t).unwrap();
        let back: TemplateView = serde_json::from_value(again).unwrap();
        assert_eq!(back.review.unwrap().decision, "pending");
    }
}
