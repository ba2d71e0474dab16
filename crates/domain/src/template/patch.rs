//! A partial update of a template, and the draft it makes of the current one.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::activity::double_option;
use crate::coupon::{
    Audience, CouponValue, DeductionMode, Priority, Scope, Stacking, StackingGroup, Validity,
};
use crate::ids::{CitySet, RuleId};
use crate::money::Money;
use crate::reference::Reference;
use crate::rules::{Condition, UseLimit};
use crate::template::{RefundPolicy, TemplateDraft, TemplateSpec};
use crate::time::Window;

/// A partial update of a template; fields left out keep their value. `budget: null` removes
/// the budget. The activity cannot be changed.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplatePatch {
    pub title: Option<String>,
    pub description: Option<String>,
    pub value: Option<CouponValue>,
    pub threshold: Option<Money>,
    pub deduction: Option<DeductionMode>,
    pub scope: Option<Scope>,
    /// Replaces the whole tree; `null` removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Condition>)]
    pub conditions: Option<Option<Condition>>,
    /// `null` stops using a rule.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    pub rule_id: Option<Option<RuleId>>,
    pub cities: Option<CitySet>,
    pub audience: Option<Audience>,
    pub total_stock: Option<i64>,
    pub per_user_limit: Option<u32>,
    /// Replaces every limit (`[]` removes them).
    pub use_limits: Option<Vec<UseLimit>>,
    pub stacking: Option<Stacking>,
    /// `null` takes the template out of its group.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub stacking_group: Option<Option<StackingGroup>>,
    pub priority: Option<Priority>,
    pub claim_window: Option<Window>,
    pub validity: Option<Validity>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    pub budget: Option<Option<Money>>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    pub refund_policy: Option<RefundPolicy>,
    /// `null` goes back to the service's default; it may change while claiming is open.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u32>)]
    pub reminder_days_before: Option<Option<u32>>,
    /// Replaces the whole reference (`{}` clears it); it may change while claiming is open.
    pub reference: Option<Reference>,
}

impl TemplatePatch {
    /// The patched draft; validate it again with [`TemplateSpec::validate`].
    pub fn apply(self, base: &TemplateSpec) -> TemplateDraft {
        let b = base.draft.clone();
        TemplateDraft {
            activity_id: b.activity_id,
            title: self.title.unwrap_or(b.title),
            description: self.description.unwrap_or(b.description),
            value: self.value.unwrap_or(b.value),
            threshold: self.threshold.unwrap_or(b.threshold),
            deduction: self.deduction.unwrap_or(b.deduction),
            scope: self.scope.unwrap_or(b.scope),
            conditions: self.conditions.unwrap_or(b.conditions),
            rule_id: self.rule_id.unwrap_or(b.rule_id),
            cities: self.cities.unwrap_or(b.cities),
            audience: self.audience.unwrap_or(b.audience),
            total_stock: self.total_stock.unwrap_or(b.total_stock),
            per_user_limit: self.per_user_limit.unwrap_or(b.per_user_limit),
            use_limits: self.use_limits.unwrap_or(b.use_limits),
            stacking: self.stacking.unwrap_or(b.stacking),
            stacking_group: self.stacking_group.unwrap_or(b.stacking_group),
            priority: self.priority.unwrap_or(b.priority),
            claim_window: self.claim_window.or(b.claim_window),
            validity: self.validity.unwrap_or(b.validity),
            budget: self.budget.unwrap_or(b.budget),
            metadata: self.metadata.unwrap_or(b.metadata),
            refund_policy: self.refund_policy.unwrap_or(b.refund_policy),
            reminder_days_before: self.reminder_days_before.unwrap_or(b.reminder_days_before),
            reference: self.reference.unwrap_or(b.reference),
        }
    }
}
