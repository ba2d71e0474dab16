//! Stored records: the JSON documents in the `spec` columns, as their own versioned types.
//!
//! The API's request types (`TemplateDraft`, `ActivityDraft` and the values nested in them)
//! refuse fields they do not know, as a request should. A stored row must not: a row written by
//! a newer coupond (one that added a field) has to stay readable by this one after a rollback.
//! So what is stored is a record type of its own that ignores unknown fields, and turns into
//! the domain value only through the domain's invariant checks, so a row that breaks one is
//! reported ([`StoreError::Corrupt`]) rather than served as valid.
//!
//! Version 1 is the JSON every coupond so far has written; a record without `"v"` is version 1,
//! and version 1 is written without `"v"`, so the previous binary reads what this one writes.
//! A later version adds its fields with defaults, or bumps `v` and converts here, in one place.

use coupond_domain::rules::{Period, UseLimit};
use coupond_domain::{
    ActivityDraft, ActivityId, ActivitySpec, Approval, Audience, BasisPoints, CategoryId, CitySet,
    Condition, CouponKind, CouponValue, Coverage, DeductionMode, DomainError, Exclusions, FundedBy,
    Funding, Gift, ListingId, MerchantId, Money, Priority, Reference, RefundPolicy, RuleId, Scope,
    Stacking, StackingGroup, Tag, TemplateDraft, TemplateSpec, Timestamp, UserId, Validity, Window,
};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// The record version this binary writes.
pub const VERSION: u32 = 1;

fn v1() -> u32 {
    1
}

fn is_v1(v: &u32) -> bool {
    *v == 1
}

fn one() -> u32 {
    1
}

/// The `spec` column of `templates`.
#[derive(Debug, Serialize, Deserialize)]
pub struct TemplateRecord {
    #[serde(default = "v1", skip_serializing_if = "is_v1")]
    v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    activity_id: Option<ActivityId>,
    title: String,
    #[serde(default)]
    description: String,
    value: ValueRecord,
    #[serde(default)]
    threshold: Money,
    #[serde(default)]
    deduction: DeductionMode,
    #[serde(default)]
    scope: ScopeRecord,
    /// The condition tree as written; absent when the template has none. Read strictly: a
    /// fact or operator this binary does not know makes the row unreadable (`Corrupt`), so a
    /// coupon is never used without a condition it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conditions: Option<Condition>,
    /// The named rule it uses, and the copy of the version it was last written with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rule_id: Option<RuleId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rule: Option<RuleTermsRecord>,
    cities: CitySet,
    #[serde(default)]
    audience: AudienceRecord,
    total_stock: i64,
    #[serde(default = "one")]
    per_user_limit: u32,
    /// Absent in rows written before use limits existed: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    use_limits: Vec<UseLimitRecord>,
    #[serde(default)]
    stacking: Stacking,
    /// Absent in rows written before stacking groups existed: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stacking_group: Option<StackingGroup>,
    /// Absent in rows written before priorities existed: 0.
    #[serde(default, skip_serializing_if = "Priority::is_zero")]
    priority: Priority,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claim_window: Option<WindowRecord>,
    validity: ValidityRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget: Option<Money>,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
    /// Absent in rows written before refunds existed: `return`.
    #[serde(default, skip_serializing_if = "RefundPolicyRecord::is_return")]
    refund_policy: RefundPolicyRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reminder_days_before: Option<u32>,
    #[serde(default, skip_serializing_if = "Reference::is_empty")]
    reference: Reference,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RefundPolicyRecord {
    #[default]
    Return,
    Void,
}

impl RefundPolicyRecord {
    fn is_return(&self) -> bool {
        *self == RefundPolicyRecord::Return
    }
}

impl From<RefundPolicy> for RefundPolicyRecord {
    fn from(p: RefundPolicy) -> Self {
        match p {
            RefundPolicy::Return => RefundPolicyRecord::Return,
            RefundPolicy::Void => RefundPolicyRecord::Void,
        }
    }
}

impl From<RefundPolicyRecord> for RefundPolicy {
    fn from(p: RefundPolicyRecord) -> Self {
        match p {
            RefundPolicyRecord::Return => RefundPolicy::Return,
            RefundPolicyRecord::Void => RefundPolicy::Void,
        }
    }
}

/// The `spec` column of `activities`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ActivityRecord {
    #[serde(default = "v1", skip_serializing_if = "is_v1")]
    v: u32,
    title: String,
    #[serde(default)]
    description: String,
    cities: CitySet,
    kind: CouponKind,
    value_min: i64,
    value_max: i64,
    enrollment: WindowRecord,
    run: WindowRecord,
    /// Written before the split: read as 10000 or 0 when `funding` is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    funded_by: Option<FundedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    funding: Option<Funding>,
    #[serde(default, skip_serializing_if = "is_no_approval")]
    approval: Approval,
    #[serde(default, skip_serializing_if = "Reference::is_empty")]
    reference: Reference,
}

fn is_no_approval(a: &Approval) -> bool {
    *a == Approval::None
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct WindowRecord {
    start: Timestamp,
    end: Timestamp,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ValueRecord {
    AmountOff {
        amount: Money,
    },
    PercentOff {
        bps: BasisPoints,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<Money>,
    },
    FreeDays {
        days: u32,
    },
    DepositWaiver {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<Money>,
    },
    SpecialPrice {
        price: Money,
    },
    FreeShipping {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap: Option<Money>,
    },
    #[serde(rename = "buy_x_get_y")]
    BuyXGetY {
        buy: u32,
        get: u32,
        #[serde(default)]
        gift: GiftRecord,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_applications: Option<u32>,
    },
}

/// A `buy_x_get_y` gift, tolerant like the other records (unknown fields are ignored).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum GiftRecord {
    #[default]
    Cheapest,
    Product {
        product_id: String,
    },
    Listing {
        id: ListingId,
    },
    Category {
        id: CategoryId,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct UseLimitRecord {
    period: Period,
    max: u32,
}

impl From<&UseLimit> for UseLimitRecord {
    fn from(l: &UseLimit) -> Self {
        UseLimitRecord {
            period: l.period,
            max: l.max,
        }
    }
}

impl From<UseLimitRecord> for UseLimit {
    fn from(l: UseLimitRecord) -> Self {
        UseLimit {
            period: l.period,
            max: l.max,
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ScopeRecord {
    #[serde(flatten)]
    coverage: CoverageRecord,
    /// Absent in rows written before exclusions existed: none.
    #[serde(default, skip_serializing_if = "ExclusionsRecord::is_empty")]
    exclude: ExclusionsRecord,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ExclusionsRecord {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    product_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    category_ids: Vec<CategoryId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    listing_ids: Vec<ListingId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    merchant_ids: Vec<MerchantId>,
}

impl ExclusionsRecord {
    fn is_empty(&self) -> bool {
        self.product_ids.is_empty()
            && self.category_ids.is_empty()
            && self.listing_ids.is_empty()
            && self.merchant_ids.is_empty()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CoverageRecord {
    #[default]
    All,
    Merchant,
    Categories {
        ids: Vec<CategoryId>,
    },
    Listings {
        ids: Vec<ListingId>,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum AudienceRecord {
    #[default]
    Everyone,
    Users {
        ids: Vec<UserId>,
    },
    Tags {
        any: Vec<Tag>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ValidityRecord {
    Fixed { from: Timestamp, until: Timestamp },
    Relative { days: u32 },
}

impl TemplateRecord {
    pub fn from_spec(spec: &TemplateSpec) -> Self {
        let d = spec.draft();
        TemplateRecord {
            v: VERSION,
            activity_id: d.activity_id,
            title: d.title.clone(),
            description: d.description.clone(),
            value: ValueRecord::from(&d.value),
            threshold: d.threshold,
            deduction: d.deduction,
            scope: ScopeRecord::from(&d.scope),
            conditions: d.conditions.clone(),
            rule_id: d.rule_id,
            rule: spec.rule().map(RuleTermsRecord::from),
            cities: d.cities.clone(),
            audience: AudienceRecord::from(&d.audience),
            total_stock: d.total_stock,
            per_user_limit: d.per_user_limit,
            use_limits: d.use_limits.iter().map(UseLimitRecord::from).collect(),
            stacking: d.stacking,
            stacking_group: d.stacking_group.clone(),
            priority: d.priority,
            claim_window: d.claim_window.map(WindowRecord::from),
            validity: ValidityRecord::from(&d.validity),
            budget: d.budget,
            metadata: d.metadata.clone(),
            refund_policy: d.refund_policy.into(),
            reminder_days_before: d.reminder_days_before,
            reference: d.reference.clone(),
        }
    }

    /// The domain spec, with the claim window stored beside the record (the draft holds none
    /// when it follows its activity's), if the record keeps every stored-template invariant.
    pub fn into_spec(self, claim_window: Window) -> Result<TemplateSpec, StoreError> {
        let draft = TemplateDraft {
            activity_id: self.activity_id,
            title: self.title,
            description: self.description,
            value: self.value.into(),
            threshold: self.threshold,
            deduction: self.deduction,
            scope: self.scope.into(),
            conditions: self.conditions,
            rule_id: self.rule_id,
            cities: self.cities,
            audience: self.audience.into(),
            total_stock: self.total_stock,
            per_user_limit: self.per_user_limit,
            use_limits: self.use_limits.into_iter().map(UseLimit::from).collect(),
            stacking: self.stacking,
            stacking_group: self.stacking_group,
            priority: self.priority,
            claim_window: self.claim_window.map(window).transpose()?,
            validity: self.validity.into(),
            budget: self.budget,
            metadata: self.metadata,
            refund_policy: self.refund_policy.into(),
            reminder_days_before: self.reminder_days_before,
            reference: self.reference,
        };
        draft
            .check_stored()
            .map_err(|e| StoreError::corrupt(format!("template spec: {e}")))?;
        let corrupt = |e: DomainError| StoreError::corrupt(format!("template spec: {e}"));
        let spec = TemplateSpec::from_stored(draft, claim_window).map_err(corrupt)?;
        match (spec.rule_id, self.rule) {
            (None, None) => Ok(spec),
            (Some(_), Some(copy)) => spec.with_rule(copy.into()).map_err(corrupt),
            _ => Err(StoreError::corrupt(
                "template spec: a rule id without the rule's copy, or the reverse",
            )),
        }
    }
}

impl ActivityRecord {
    pub fn from_spec(spec: &ActivitySpec) -> Self {
        let d: &ActivityDraft = spec;
        ActivityRecord {
            v: VERSION,
            title: d.title.clone(),
            description: d.description.clone(),
            cities: d.cities.clone(),
            kind: d.kind,
            value_min: d.value_min,
            value_max: d.value_max,
            enrollment: d.enrollment.into(),
            run: d.run.into(),
            // Also the old field where it says the same, for the version before (an upgrade).
            funded_by: spec.funding().as_funded_by(),
            funding: Some(spec.funding()),
            approval: d.approval,
            reference: d.reference.clone(),
        }
    }

    /// The domain spec, if the record keeps every stored-activity invariant.
    pub fn into_spec(self) -> Result<ActivitySpec, StoreError> {
        let draft = ActivityDraft {
            title: self.title,
            description: self.description,
            cities: self.cities,
            kind: self.kind,
            value_min: self.value_min,
            value_max: self.value_max,
            enrollment: window(self.enrollment)?,
            run: window(self.run)?,
            funding: Some(
                self.funding
                    .unwrap_or_else(|| Funding::of(self.funded_by.unwrap_or_default())),
            ),
            funded_by: None,
            approval: self.approval,
            reference: self.reference,
        };
        draft
            .check_stored()
            .map_err(|e| StoreError::corrupt(format!("activity spec: {e}")))?;
        Ok(ActivitySpec::from_stored(draft))
    }
}

fn window(w: WindowRecord) -> Result<Window, StoreError> {
    Window::new(w.start, w.end).map_err(|e| StoreError::corrupt(format!("window: {e}")))
}

impl From<Window> for WindowRecord {
    fn from(w: Window) -> Self {
        WindowRecord {
            start: w.start,
            end: w.end,
        }
    }
}

impl From<&CouponValue> for ValueRecord {
    fn from(v: &CouponValue) -> Self {
        match v {
            &CouponValue::AmountOff { amount } => ValueRecord::AmountOff { amount },
            &CouponValue::PercentOff { bps, cap } => ValueRecord::PercentOff { bps, cap },
            &CouponValue::FreeDays { days } => ValueRecord::FreeDays { days },
            &CouponValue::DepositWaiver { cap } => ValueRecord::DepositWaiver { cap },
            &CouponValue::SpecialPrice { price } => ValueRecord::SpecialPrice { price },
            &CouponValue::FreeShipping { cap } => ValueRecord::FreeShipping { cap },
            CouponValue::BuyXGetY {
                buy,
                get,
                gift,
                max_applications,
            } => ValueRecord::BuyXGetY {
                buy: *buy,
                get: *get,
                gift: GiftRecord::from(gift),
                max_applications: *max_applications,
            },
        }
    }
}

impl From<ValueRecord> for CouponValue {
    fn from(v: ValueRecord) -> Self {
        match v {
            ValueRecord::AmountOff { amount } => CouponValue::AmountOff { amount },
            ValueRecord::PercentOff { bps, cap } => CouponValue::PercentOff { bps, cap },
            ValueRecord::FreeDays { days } => CouponValue::FreeDays { days },
            ValueRecord::DepositWaiver { cap } => CouponValue::DepositWaiver { cap },
            ValueRecord::SpecialPrice { price } => CouponValue::SpecialPrice { price },
            ValueRecord::FreeShipping { cap } => CouponValue::FreeShipping { cap },
            ValueRecord::BuyXGetY {
                buy,
                get,
                gift,
                max_applications,
            } => CouponValue::BuyXGetY {
                buy,
                get,
                gift: gift.into(),
                max_applications,
            },
        }
    }
}

impl From<&Gift> for GiftRecord {
    fn from(g: &Gift) -> Self {
        match g {
            Gift::Cheapest => GiftRecord::Cheapest,
            Gift::Product { product_id } => GiftRecord::Product {
                product_id: product_id.clone(),
            },
            Gift::Listing { id } => GiftRecord::Listing { id: *id },
            Gift::Category { id } => GiftRecord::Category { id: *id },
        }
    }
}

impl From<GiftRecord> for Gift {
    fn from(g: GiftRecord) -> Self {
        match g {
            GiftRecord::Cheapest => Gift::Cheapest,
            GiftRecord::Product { product_id } => Gift::Product { product_id },
            GiftRecord::Listing { id } => Gift::Listing { id },
            GiftRecord::Category { id } => Gift::Category { id },
        }
    }
}

impl From<&Scope> for ScopeRecord {
    fn from(s: &Scope) -> Self {
        let e = &s.exclude;
        ScopeRecord {
            coverage: match &s.coverage {
                Coverage::All => CoverageRecord::All,
                Coverage::Merchant => CoverageRecord::Merchant,
                Coverage::Categories { ids } => CoverageRecord::Categories { ids: ids.clone() },
                Coverage::Listings { ids } => CoverageRecord::Listings { ids: ids.clone() },
            },
            exclude: ExclusionsRecord {
                product_ids: e.product_ids().to_vec(),
                category_ids: e.category_ids().to_vec(),
                listing_ids: e.listing_ids().to_vec(),
                merchant_ids: e.merchant_ids().to_vec(),
            },
        }
    }
}

impl From<ScopeRecord> for Scope {
    fn from(s: ScopeRecord) -> Self {
        let e = s.exclude;
        Scope {
            coverage: match s.coverage {
                CoverageRecord::All => Coverage::All,
                CoverageRecord::Merchant => Coverage::Merchant,
                CoverageRecord::Categories { ids } => Coverage::Categories { ids },
                CoverageRecord::Listings { ids } => Coverage::Listings { ids },
            },
            exclude: Exclusions::new(e.product_ids, e.category_ids, e.listing_ids, e.merchant_ids),
        }
    }
}

impl From<&Audience> for AudienceRecord {
    fn from(a: &Audience) -> Self {
        match a {
            Audience::Everyone => AudienceRecord::Everyone,
            Audience::Users { ids } => AudienceRecord::Users { ids: ids.clone() },
            Audience::Tags { any } => AudienceRecord::Tags { any: any.clone() },
        }
    }
}

impl From<AudienceRecord> for Audience {
    fn from(a: AudienceRecord) -> Self {
        match a {
            AudienceRecord::Everyone => Audience::Everyone,
            AudienceRecord::Users { ids } => Audience::Users { ids },
            AudienceRecord::Tags { any } => Audience::Tags { any },
        }
    }
}

impl From<&Validity> for ValidityRecord {
    fn from(v: &Validity) -> Self {
        match *v {
            Validity::Fixed { from, until } => ValidityRecord::Fixed { from, until },
            Validity::Relative { days } => ValidityRecord::Relative { days },
        }
    }
}

impl From<ValidityRecord> for Validity {
    fn from(v: ValidityRecord) -> Self {
        match v {
            ValidityRecord::Fixed { from, until } => Validity::Fixed { from, until },
            ValidityRecord::Relative { days } => Validity::Relative { days },
        }
    }
}

mod rules;

pub use rules::RuleRecord;
use rules::RuleTermsRecord;

#[cfg(test)]
mod tests;
