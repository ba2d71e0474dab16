//! Coupon templates (seed `t_couponmeta`, `coupon_batch` + `rule`): what a coupon is, how many
//! exist, who may claim them and when; and the template's status as a function of the clock.

use std::ops::Deref;

use serde::{Deserialize, Serialize};
use time::Duration;
use utoipa::ToSchema;

use crate::activity::{Activity, ActivityStatus};
use crate::coupon::{
    Audience, CouponValue, DeductionMode, Priority, Scope, Stacking, StackingGroup, Validity,
};
use crate::error::{DomainError, Findings};
use crate::ids::{ActivityId, CitySet, MerchantId, RuleId, TemplateId};
use crate::merchant::Merchant;
use crate::money::Money;
use crate::reference::Reference;
use crate::rules::{Condition, Conditions, Rule, RuleTerms, UseLimit};
use crate::steering::Pause;
use crate::text::check_text;
use crate::time::{Timestamp, Window};

use rule::{combined, rule_terms};

/// Largest stock a template may have.
pub const MAX_STOCK: i64 = 1_000_000_000;
/// Largest per-user limit.
pub const MAX_PER_USER: u32 = 1000;
/// Largest serialized `metadata` object, in bytes.
pub const MAX_METADATA_BYTES: usize = 4096;
/// The longest reminder lead a template may ask for, in days.
pub const MAX_REMINDER_DAYS: u32 = 365;
/// A template is low on stock when less than 1/`LOW_STOCK_DIVISOR` of it (5 %) is left: the
/// console's attention list and the store's counts use the same rule.
pub const LOW_STOCK_DIVISOR: i64 = 20;

fn one() -> u32 {
    1
}

/// What a merchant (or the platform) sends to create a template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateDraft {
    /// The activity this template enrolls in; absent for a standalone template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<ActivityId>,
    /// 1 to 200 characters.
    #[schema(example = "20 off your first month")]
    pub title: String,
    /// Up to 4000 characters.
    #[serde(default)]
    pub description: String,
    pub value: CouponValue,
    /// Minimum eligible subtotal, minor units (0 = none).
    #[serde(default)]
    pub threshold: Money,
    #[serde(default)]
    pub deduction: DeductionMode,
    #[serde(default)]
    pub scope: Scope,
    /// What the order, the customer and the clock must also be for a coupon to be used: a
    /// tree of `all`, `any`, `not` and tests (see [`Condition`]); absent: nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Condition>,
    /// A named rule whose conditions must hold too (with `conditions`, both), and whose
    /// scope, if it has one, replaces `scope`. It follows the rule's changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<RuleId>,
    /// Cities the coupon is usable in; within the merchant's and the activity's cities.
    pub cities: CitySet,
    #[serde(default)]
    pub audience: Audience,
    /// How many coupons exist, 1..=10^9.
    pub total_stock: i64,
    /// How many one user may hold, 1..=1000 (default 1).
    #[serde(default = "one")]
    pub per_user_limit: u32,
    /// How many of its coupons one user may use per local day, week or month (one limit per
    /// period): a lock past one is refused with `use_limit_reached`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub use_limits: Vec<UseLimit>,
    #[serde(default)]
    pub stacking: Stacking,
    /// At most one coupon of a stacking group applies to an order; absent: no group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacking_group: Option<StackingGroup>,
    /// Discounts apply highest priority first, 0 to 1000 (default 0); a percentage is taken
    /// from what those before it left.
    #[serde(default, skip_serializing_if = "Priority::is_zero")]
    #[schema(minimum = 0, maximum = 1000)]
    pub priority: Priority,
    /// When users may claim. Inside an activity it defaults to, and must lie within, the run
    /// window; a standalone template must give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_window: Option<Window>,
    pub validity: Validity,
    /// Cap on the total discount given through this template, minor units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Money>,
    /// Free-form JSON object for the caller's own use, at most 4 KiB.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// What a refund of an order does to the coupons it used (default `return`).
    #[serde(default)]
    pub refund_policy: RefundPolicy,
    /// How many days before a coupon expires its holder is reminded, 1..=365; absent: the
    /// service's `reminder_days_before`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminder_days_before: Option<u32>,
    /// How the platform's other systems know it (its `external_id` unique per owner).
    #[serde(default, skip_serializing_if = "Reference::is_empty")]
    pub reference: Reference,
}

/// What a refund of a confirmed order does to the coupons of this template it used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefundPolicy {
    /// Back to the user: `unused`, or `expired` if its validity has ended.
    #[default]
    Return,
    /// `revoked`: a refunded order does not give the coupon back.
    Void,
}

impl RefundPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            RefundPolicy::Return => "return",
            RefundPolicy::Void => "void",
        }
    }
}

/// What a template is checked against besides itself.
#[derive(Clone, Copy, Debug)]
pub struct TemplateContext<'a> {
    /// The owning merchant; `None` for a platform-issued template.
    pub owner: Option<&'a Merchant>,
    /// The activity named by `activity_id`, loaded by the caller.
    pub activity: Option<&'a Activity>,
    pub now: Timestamp,
    /// The activity freeze period (config).
    pub freeze: Duration,
    /// The rule named by `rule_id`, loaded by the caller.
    pub rule: Option<&'a Rule>,
}

/// A [`TemplateDraft`] that passed every rule, with its claim window resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct TemplateSpec {
    draft: TemplateDraft,
    #[serde(skip)]
    claim_window: Window,
    /// The copy of the rule named by `rule_id`.
    #[serde(skip)]
    rule: Option<RuleTerms>,
    /// `draft.conditions` and the rule's, checked and ready to test.
    #[serde(skip)]
    conditions: Option<Conditions>,
}

impl Deref for TemplateSpec {
    type Target = TemplateDraft;
    fn deref(&self) -> &TemplateDraft {
        &self.draft
    }
}

/// `value` of `field` from 1 to `max`.
fn in_range<T: PartialOrd + From<u8> + std::fmt::Display>(
    field: &str,
    value: T,
    max: T,
) -> Result<(), DomainError> {
    if value >= T::from(1) && value <= max {
        return Ok(());
    }
    Err(DomainError::invalid(
        field,
        "invalid_value",
        format!("{field} must be from 1 to {max}"),
    ))
}

/// A template's metadata: at most [`MAX_METADATA_BYTES`] as JSON, and no U+0000 anywhere
/// (PostgreSQL's jsonb cannot hold it; refused on every backend alike).
fn check_metadata(
    metadata: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), DomainError> {
    let meta_len = serde_json::to_vec(metadata).map_or(usize::MAX, |v| v.len());
    if meta_len > MAX_METADATA_BYTES {
        return Err(DomainError::invalid(
            "metadata",
            "too_large",
            format!("metadata must serialize to at most {MAX_METADATA_BYTES} bytes"),
        ));
    }
    if metadata.iter().any(|(k, v)| k.contains('\0') || has_nul(v)) {
        return Err(DomainError::invalid(
            "metadata",
            "invalid_characters",
            "metadata keys and strings must not contain U+0000",
        ));
    }
    Ok(())
}

impl TemplateSpec {
    /// Checks `draft` on its own and against its owner and activity at `ctx.now`.
    pub fn validate(draft: TemplateDraft, ctx: TemplateContext<'_>) -> Result<Self, DomainError> {
        let mut draft = draft;
        // The fields' own rules, each independent of the others: a caller hears of every
        // broken one at once. The rules across fields (the activity, the windows) follow.
        let mut found = Findings::default();
        found.check(check_text("title", &draft.title, 1, 200));
        found.check(check_text("description", &draft.description, 0, 4000));
        found.check(draft.value.validate());
        found.check(in_range("total_stock", draft.total_stock, MAX_STOCK));
        found.check(in_range(
            "per_user_limit",
            draft.per_user_limit,
            MAX_PER_USER,
        ));
        if draft.budget.is_some_and(|b| b.minor() == 0) {
            found.check::<()>(Err(DomainError::invalid(
                "budget",
                "invalid_value",
                "budget must be at least 1",
            )));
        }
        found.check(check_metadata(&draft.metadata));
        if let Some(days) = draft.reminder_days_before {
            found.check(in_range("reminder_days_before", days, MAX_REMINDER_DAYS));
        }
        found.check(draft.reference.validate());
        found.check(draft.scope.validate(ctx.owner.is_some()));
        found.check(UseLimit::validate(&draft.use_limits));
        if let Some(c) = &draft.conditions {
            found.check(Conditions::compile(c).map_err(|e| e.within("conditions")));
        }
        let rule = found.check(rule_terms(&draft, ctx));
        if let Some(audience) = found.check(std::mem::take(&mut draft.audience).validate()) {
            draft.audience = audience;
        }
        found.check(draft.validity.validate());
        if let Some(owner) = ctx.owner {
            if !draft.cities.is_subset(&owner.cities) {
                found.check::<()>(Err(DomainError::invalid(
                    "cities",
                    "city_not_served",
                    "every city must be one the merchant operates in",
                )));
            }
        }
        found.done()?;

        let claim_window = match (draft.activity_id, ctx.activity) {
            (Some(id), Some(activity)) if activity.id == id => {
                Self::check_activity(&draft, ctx, activity)?;
                draft.claim_window.unwrap_or(activity.spec.run)
            }
            (Some(_), _) => {
                return Err(DomainError::invalid(
                    "activity_id",
                    "not_found",
                    "no such activity",
                ))
            }
            (None, _) => draft.claim_window.ok_or_else(|| {
                DomainError::invalid(
                    "claim_window",
                    "required",
                    "a standalone template needs a claim window",
                )
            })?,
        };
        check_validity(&draft, claim_window)?;
        // `draft.claim_window` stays as sent: `None` means "follow the activity's run window",
        // also when the activity is edited later (see `rebase`).
        let rule = rule.flatten();
        let conditions = combined(draft.conditions.as_ref(), rule.as_ref())?;
        Ok(TemplateSpec {
            draft,
            claim_window,
            rule,
            conditions,
        })
    }

    /// The same terms against an edited version of its activity: a claim window that follows
    /// the activity moves with the run window; every bound is checked again.
    pub fn rebase(&self, activity: &Activity) -> Result<TemplateSpec, DomainError> {
        fits(&self.draft, &activity.spec)?;
        let claim_window = self.draft.claim_window.unwrap_or(activity.spec.run);
        check_validity(&self.draft, claim_window)?;
        Ok(TemplateSpec {
            draft: self.draft.clone(),
            claim_window,
            rule: self.rule.clone(),
            conditions: self.conditions.clone(),
        })
    }

    /// Whether the claim window is the activity's run window, following its edits.
    pub fn follows_activity(&self) -> bool {
        self.draft.activity_id.is_some() && self.draft.claim_window.is_none()
    }

    fn check_activity(
        draft: &TemplateDraft,
        ctx: TemplateContext<'_>,
        activity: &Activity,
    ) -> Result<(), DomainError> {
        if ctx.owner.is_none() {
            return Err(DomainError::invalid(
                "activity_id",
                "merchant_only",
                "only merchants enroll templates in activities",
            ));
        }
        match activity.status(ctx.now, ctx.freeze) {
            ActivityStatus::Enrolling => {}
            ActivityStatus::Frozen => {
                return Err(DomainError::state(
                    "activity_frozen",
                    "the activity is frozen: its templates can no longer be created or changed",
                ))
            }
            ActivityStatus::Aborted => {
                return Err(DomainError::state(
                    "activity_aborted",
                    "the activity was aborted",
                ))
            }
            other => {
                return Err(DomainError::state(
                    "enrollment_closed",
                    format!("the activity is {}, not enrolling", other.as_str()),
                ))
            }
        }
        fits(draft, &activity.spec)
    }

    /// Rebuilds a spec from a stored record (validated when written) and the claim window
    /// stored beside it; its conditions are compiled again (an error means a record that
    /// breaks their rules). A template with a rule gets its stored copy with
    /// [`with_rule`](Self::with_rule).
    pub fn from_stored(draft: TemplateDraft, claim_window: Window) -> Result<Self, DomainError> {
        let conditions = draft
            .conditions
            .as_ref()
            .map(|c| Conditions::compile_stored(c).map_err(|e| e.within("conditions")))
            .transpose()?;
        Ok(TemplateSpec {
            draft,
            claim_window,
            rule: None,
            conditions,
        })
    }

    /// The template's conditions and its rule's, checked; `None` when it has none.
    pub fn conditions(&self) -> Option<&Conditions> {
        self.conditions.as_ref()
    }

    pub fn claim_window(&self) -> Window {
        self.claim_window
    }

    /// The last instant any coupon of this template can be used: the fixed validity's end, or
    /// the end of claiming plus the relative validity.
    pub fn expires_at(&self) -> Timestamp {
        match self.draft.validity {
            Validity::Fixed { until, .. } => until,
            Validity::Relative { days } => {
                self.claim_window.end.plus(Duration::days(i64::from(days)))
            }
        }
    }

    pub fn draft(&self) -> &TemplateDraft {
        &self.draft
    }
}

fn check_validity(draft: &TemplateDraft, claim_window: Window) -> Result<(), DomainError> {
    match draft.validity {
        Validity::Fixed { until, .. } if until < claim_window.end => Err(DomainError::invalid(
            "validity.until",
            "window_out_of_bounds",
            "a fixed validity must last at least until claiming ends",
        )),
        _ => Ok(()),
    }
}

fn has_nul(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(items) => items.iter().any(has_nul),
        serde_json::Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

fn fits(draft: &TemplateDraft, spec: &crate::activity::ActivitySpec) -> Result<(), DomainError> {
    if draft.value.kind() != spec.kind {
        return Err(DomainError::invalid(
            "value.kind",
            "kind_mismatch",
            format!("this activity only takes {} coupons", spec.kind.as_str()),
        ));
    }
    let m = draft.value.magnitude();
    if m < spec.value_min || m > spec.value_max {
        return Err(DomainError::invalid(
            "value",
            "value_out_of_bounds",
            format!(
                "this activity takes values from {} ({} to {} {})",
                spec.kind.bounds_in_words(spec.value_min, spec.value_max),
                spec.value_min,
                spec.value_max,
                spec.kind.bound_unit()
            ),
        ));
    }
    if !draft.cities.is_subset(&spec.cities) {
        return Err(DomainError::invalid(
            "cities",
            "cities_out_of_bounds",
            "every city must be one the activity covers",
        ));
    }
    if let Some(w) = draft.claim_window {
        if !spec.run.covers(&w) {
            return Err(DomainError::invalid(
                "claim_window",
                "window_out_of_bounds",
                "the claim window must lie within the activity's run window",
            ));
        }
    }
    Ok(())
}

/// Where a template is in its life. A pure function of the record and the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TemplateStatus {
    /// A standalone template not yet published.
    Draft,
    /// A merchant's enrollment waiting for the platform's approval; not claimable.
    PendingApproval,
    /// A merchant's enrollment the platform turned down (with a reason); not claimable until
    /// its merchant edits it, which asks again.
    Rejected,
    /// Published (or in an activity) but claiming has not started.
    Scheduled,
    /// Claimable.
    Active,
    /// Claiming is over; issued coupons are still usable.
    Ended,
    /// Every coupon's validity is over.
    Expired,
    /// Stopped by its owner or with its activity; final.
    Aborted,
}

impl TemplateStatus {
    pub const ALL: [TemplateStatus; 8] = [
        TemplateStatus::Draft,
        TemplateStatus::PendingApproval,
        TemplateStatus::Rejected,
        TemplateStatus::Scheduled,
        TemplateStatus::Active,
        TemplateStatus::Ended,
        TemplateStatus::Expired,
        TemplateStatus::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TemplateStatus::Draft => "draft",
            TemplateStatus::PendingApproval => "pending_approval",
            TemplateStatus::Rejected => "rejected",
            TemplateStatus::Scheduled => "scheduled",
            TemplateStatus::Active => "active",
            TemplateStatus::Ended => "ended",
            TemplateStatus::Expired => "expired",
            TemplateStatus::Aborted => "aborted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether the template's terms may still change (nobody could have claimed yet).
    pub fn is_editable(self) -> bool {
        matches!(
            self,
            TemplateStatus::Draft
                | TemplateStatus::PendingApproval
                | TemplateStatus::Rejected
                | TemplateStatus::Scheduled
        )
    }
}

/// A stored template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub id: TemplateId,
    /// `None` for a platform-issued template.
    pub merchant_id: Option<MerchantId>,
    pub spec: TemplateSpec,
    /// Coupons issued so far; never above `total_stock`.
    pub claimed: i64,
    /// Coupons used by confirmed orders; never above `claimed`.
    pub used: i64,
    /// Discount given by confirmed orders; never above the budget.
    pub given: Money,
    /// Discount planned by orders still holding a lock; with `given`, never above the budget.
    pub reserved: Money,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub published_at: Option<Timestamp>,
    pub aborted_at: Option<Timestamp>,
    /// Where it stands with the platform's approval of enrollments.
    pub review: Review,
    /// Set while it is paused (itself or with its activity): claims wait.
    pub pause: Option<Pause>,
    pub version: i64,
}

impl Template {
    /// Whether users and the order service may know the template exists: it was published
    /// (templates in an activity are, from their creation). Anyone else asking about one that
    /// is not gets the answer a missing template gets.
    pub fn is_public(&self) -> bool {
        let listed = self.spec.activity_id.is_some() || self.published_at.is_some();
        listed && matches!(self.review, Review::NotNeeded | Review::Approved { .. })
    }

    /// Whether less than 1/[`LOW_STOCK_DIVISOR`] of the stock is left.
    pub fn low_on_stock(&self) -> bool {
        let stock = self.spec.total_stock;
        stock > 0 && (stock - self.claimed) * LOW_STOCK_DIVISOR < stock
    }

    /// The status at `now`. Storage backends translate the same boundaries into SQL for list
    /// filters; the conformance suite checks that both agree.
    pub fn status(&self, now: Timestamp) -> TemplateStatus {
        let w = self.spec.claim_window();
        if self.aborted_at.is_some() {
            TemplateStatus::Aborted
        } else if self.review == Review::Pending {
            TemplateStatus::PendingApproval
        } else if let Review::Rejected { .. } = self.review {
            TemplateStatus::Rejected
        } else if self.spec.activity_id.is_none() && self.published_at.is_none() {
            TemplateStatus::Draft
        } else if now < w.start {
            TemplateStatus::Scheduled
        } else if now < w.end {
            TemplateStatus::Active
        } else if now < self.spec.expires_at() {
            TemplateStatus::Ended
        } else {
            TemplateStatus::Expired
        }
    }
}

mod live;
mod patch;
mod review;
mod rule;

pub use patch::TemplatePatch;

pub use review::{Decision, Review};
#[cfg(test)]
pub(crate) mod tests;
