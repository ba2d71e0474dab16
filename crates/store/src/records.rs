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

use coupond_domain::{
    ActivityDraft, ActivityId, ActivitySpec, Audience, BasisPoints, CategoryId, CitySet,
    CouponKind, CouponValue, DeductionMode, FundedBy, ListingId, Money, Scope, Stacking,
    TemplateDraft, TemplateSpec, Timestamp, UserId, Validity, Window,
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
    cities: CitySet,
    #[serde(default)]
    audience: AudienceRecord,
    total_stock: i64,
    #[serde(default = "one")]
    per_user_limit: u32,
    #[serde(default)]
    stacking: Stacking,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claim_window: Option<WindowRecord>,
    validity: ValidityRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget: Option<Money>,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
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
    #[serde(default)]
    funded_by: FundedBy,
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
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ScopeRecord {
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
            cities: d.cities.clone(),
            audience: AudienceRecord::from(&d.audience),
            total_stock: d.total_stock,
            per_user_limit: d.per_user_limit,
            stacking: d.stacking,
            claim_window: d.claim_window.map(WindowRecord::from),
            validity: ValidityRecord::from(&d.validity),
            budget: d.budget,
            metadata: d.metadata.clone(),
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
            cities: self.cities,
            audience: self.audience.into(),
            total_stock: self.total_stock,
            per_user_limit: self.per_user_limit,
            stacking: self.stacking,
            claim_window: self.claim_window.map(window).transpose()?,
            validity: self.validity.into(),
            budget: self.budget,
            metadata: self.metadata,
        };
        draft
            .check_stored()
            .map_err(|e| StoreError::corrupt(format!("template spec: {e}")))?;
        Ok(TemplateSpec::from_stored(draft, claim_window))
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
            funded_by: d.funded_by,
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
            funded_by: self.funded_by,
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
        match *v {
            CouponValue::AmountOff { amount } => ValueRecord::AmountOff { amount },
            CouponValue::PercentOff { bps, cap } => ValueRecord::PercentOff { bps, cap },
            CouponValue::FreeDays { days } => ValueRecord::FreeDays { days },
            CouponValue::DepositWaiver { cap } => ValueRecord::DepositWaiver { cap },
            CouponValue::SpecialPrice { price } => ValueRecord::SpecialPrice { price },
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
        }
    }
}

impl From<&Scope> for ScopeRecord {
    fn from(s: &Scope) -> Self {
        match s {
            Scope::All => ScopeRecord::All,
            Scope::Merchant => ScopeRecord::Merchant,
            Scope::Categories { ids } => ScopeRecord::Categories { ids: ids.clone() },
            Scope::Listings { ids } => ScopeRecord::Listings { ids: ids.clone() },
        }
    }
}

impl From<ScopeRecord> for Scope {
    fn from(s: ScopeRecord) -> Self {
        match s {
            ScopeRecord::All => Scope::All,
            ScopeRecord::Merchant => Scope::Merchant,
            ScopeRecord::Categories { ids } => Scope::Categories { ids },
            ScopeRecord::Listings { ids } => Scope::Listings { ids },
        }
    }
}

impl From<&Audience> for AudienceRecord {
    fn from(a: &Audience) -> Self {
        match a {
            Audience::Everyone => AudienceRecord::Everyone,
            Audience::Users { ids } => AudienceRecord::Users { ids: ids.clone() },
        }
    }
}

impl From<AudienceRecord> for Audience {
    fn from(a: AudienceRecord) -> Self {
        match a {
            AudienceRecord::Everyone => Audience::Everyone,
            AudienceRecord::Users { ids } => Audience::Users { ids },
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
