//! Platform activities (seed `t_activity`) and their time-driven status.

use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize};
use time::Duration;
use utoipa::ToSchema;

use crate::coupon::CouponKind;
use crate::error::DomainError;
use crate::funding::Funding;
use crate::ids::{ActivityId, CitySet};
use crate::reference::Reference;
use crate::text::check_text;
use crate::time::{Timestamp, Window};

/// Who pays for the discounts given in an activity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FundedBy {
    Platform,
    #[default]
    Merchant,
}

impl FundedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            FundedBy::Platform => "platform",
            FundedBy::Merchant => "merchant",
        }
    }
}

/// Whether merchants' enrollments in an activity wait for the platform's approval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// A merchant's template is in the activity from its creation.
    #[default]
    None,
    /// A merchant's template waits as `pending_approval` (not claimable) until a platform
    /// operator approves it, or is `rejected` with a reason.
    Required,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::None => "none",
            Approval::Required => "required",
        }
    }
}

/// What the platform sends to create an activity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActivityDraft {
    /// 1 to 200 characters.
    #[schema(example = "Spring rental festival")]
    pub title: String,
    /// Up to 4000 characters.
    #[serde(default)]
    pub description: String,
    /// Cities the activity covers.
    pub cities: CitySet,
    /// The one coupon kind merchants may create in it.
    pub kind: CouponKind,
    /// Lowest value a merchant may offer, in the kind's unit (minor units, basis points, days).
    pub value_min: i64,
    /// Highest value a merchant may offer, in the kind's unit.
    pub value_max: i64,
    /// When merchants may enroll (create templates). Must end no later than `run.start`.
    pub enrollment: Window,
    /// When the activity runs: its templates are claimable within it.
    pub run: Window,
    /// Who pays each discount given in it: `{"platform_bps": 6000}` (the platform 60 %, the
    /// merchant the rest). Without it (and without `funded_by`), each merchant pays its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub funding: Option<Funding>,
    /// Deprecated, kept for older callers: `platform` (`funding` 10000) or `merchant` (0).
    /// Not together with `funding`. Never in an answer.
    #[serde(default, skip_serializing)]
    #[schema(deprecated)]
    pub funded_by: Option<FundedBy>,
    /// `required`: merchants' templates wait for the platform's approval (default `none`).
    #[serde(default)]
    pub approval: Approval,
    /// How the platform's other systems know it (its `external_id` unique among activities).
    #[serde(default, skip_serializing_if = "Reference::is_empty")]
    pub reference: Reference,
}

/// An [`ActivityDraft`] that passed every rule. Built only through `TryFrom`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ActivitySpec(ActivityDraft);

impl Deref for ActivitySpec {
    type Target = ActivityDraft;
    fn deref(&self) -> &ActivityDraft {
        &self.0
    }
}

impl TryFrom<ActivityDraft> for ActivitySpec {
    type Error = DomainError;
    fn try_from(d: ActivityDraft) -> Result<Self, DomainError> {
        check_text("title", &d.title, 1, 200)?;
        check_text("description", &d.description, 0, 4000)?;
        d.reference.validate()?;
        if d.value_min < 0 {
            return Err(DomainError::invalid(
                "value_min",
                "invalid_bounds",
                "value_min must not be negative",
            ));
        }
        if d.value_min > d.value_max {
            return Err(DomainError::invalid(
                "value_max",
                "invalid_bounds",
                "value_max must be at least value_min",
            ));
        }
        if d.kind == CouponKind::PercentOff && d.value_max > 10_000 {
            return Err(DomainError::invalid(
                "value_max",
                "invalid_bounds",
                "percent_off bounds are basis points, at most 10000",
            ));
        }
        let d = ActivityDraft {
            funding: Some(funding_of(d.funding, d.funded_by)?),
            funded_by: None,
            ..d
        };
        if d.enrollment.end > d.run.start {
            return Err(DomainError::invalid(
                "enrollment.end",
                "invalid_window",
                "enrollment must end no later than the run starts",
            ));
        }
        Ok(ActivitySpec(d))
    }
}

/// The split a draft asks for: `funding`, else the deprecated `funded_by`, else the merchant's.
fn funding_of(
    funding: Option<Funding>,
    funded_by: Option<FundedBy>,
) -> Result<Funding, DomainError> {
    match (funding, funded_by) {
        (Some(_), Some(_)) => Err(DomainError::invalid(
            "funded_by",
            "conflict",
            "send funding or the deprecated funded_by, not both",
        )),
        (Some(f), None) => Ok(f),
        (None, Some(b)) => Ok(Funding::of(b)),
        (None, None) => Ok(Funding::MERCHANT),
    }
}

impl ActivitySpec {
    /// Who pays the discounts given in the activity.
    pub fn funding(&self) -> Funding {
        self.0.funding.unwrap_or_default()
    }

    /// Rebuilds a spec from a stored record, which was validated when it was written. Storage
    /// backends use this; rules that tighten later do not make old records unreadable.
    pub fn from_stored(d: ActivityDraft) -> Self {
        ActivitySpec(d)
    }

    pub fn into_draft(self) -> ActivityDraft {
        self.0
    }
}

/// A partial update of an activity: fields left out keep their value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActivityPatch {
    pub title: Option<String>,
    pub description: Option<String>,
    pub cities: Option<CitySet>,
    pub kind: Option<CouponKind>,
    pub value_min: Option<i64>,
    pub value_max: Option<i64>,
    pub enrollment: Option<Window>,
    pub run: Option<Window>,
    pub funding: Option<Funding>,
    /// Deprecated: `funding` 10000 (`platform`) or 0 (`merchant`); not with `funding`.
    #[schema(deprecated)]
    pub funded_by: Option<FundedBy>,
    pub approval: Option<Approval>,
    /// Replaces the whole reference (`{}` clears it).
    pub reference: Option<Reference>,
}

impl ActivityPatch {
    /// The patched spec, validated as a whole.
    pub fn apply(self, base: &ActivitySpec) -> Result<ActivitySpec, DomainError> {
        let b = base.0.clone();
        ActivitySpec::try_from(ActivityDraft {
            title: self.title.unwrap_or(b.title),
            description: self.description.unwrap_or(b.description),
            cities: self.cities.unwrap_or(b.cities),
            kind: self.kind.unwrap_or(b.kind),
            value_min: self.value_min.unwrap_or(b.value_min),
            value_max: self.value_max.unwrap_or(b.value_max),
            enrollment: self.enrollment.unwrap_or(b.enrollment),
            run: self.run.unwrap_or(b.run),
            funding: match (self.funding, self.funded_by) {
                (None, None) => b.funding,
                (f, _) => f,
            },
            funded_by: self.funded_by,
            approval: self.approval.unwrap_or(b.approval),
            reference: self.reference.unwrap_or(b.reference),
        })
    }
}

/// Where an activity is in its life. A pure function of the record and the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityStatus {
    /// Before enrollment opens.
    Scheduled,
    /// Merchants may create and edit templates in it; the platform may edit it.
    Enrolling,
    /// From the end of enrollment (or `freeze` before the run, whichever is first) until the
    /// run starts: nobody edits anything.
    Frozen,
    /// Its templates are claimable.
    Running,
    Ended,
    /// Stopped by the platform; final.
    Aborted,
}

impl ActivityStatus {
    pub const ALL: [ActivityStatus; 6] = [
        ActivityStatus::Scheduled,
        ActivityStatus::Enrolling,
        ActivityStatus::Frozen,
        ActivityStatus::Running,
        ActivityStatus::Ended,
        ActivityStatus::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActivityStatus::Scheduled => "scheduled",
            ActivityStatus::Enrolling => "enrolling",
            ActivityStatus::Frozen => "frozen",
            ActivityStatus::Running => "running",
            ActivityStatus::Ended => "ended",
            ActivityStatus::Aborted => "aborted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether the platform may still change the activity.
    pub fn is_editable(self) -> bool {
        matches!(self, ActivityStatus::Scheduled | ActivityStatus::Enrolling)
    }
}

/// A stored activity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    pub id: ActivityId,
    pub spec: ActivitySpec,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub aborted_at: Option<Timestamp>,
    /// Set while the platform has it paused: its templates' claims wait.
    pub pause: Option<crate::steering::Pause>,
    /// Bumped on every change to the activity itself; template writes in the activity check
    /// it, so a template is never written against terms that changed meanwhile.
    pub version: i64,
    /// Bumped by every template created or changed in the activity; an activity update checks
    /// it, so an edit never slips past a template it did not re-validate.
    pub enrollment_seq: i64,
}

impl Activity {
    /// The instant edits stop: the end of enrollment or `freeze` before the run, whichever is
    /// first.
    pub fn frozen_at(&self, freeze: Duration) -> Timestamp {
        self.spec
            .enrollment
            .end
            .min(self.spec.run.start.minus(freeze))
    }

    /// The status at `now`. Storage backends translate the same boundaries into SQL for list
    /// filters; the conformance suite checks that both agree.
    pub fn status(&self, now: Timestamp, freeze: Duration) -> ActivityStatus {
        if self.aborted_at.is_some() {
            ActivityStatus::Aborted
        } else if now < self.spec.enrollment.start {
            ActivityStatus::Scheduled
        } else if now < self.frozen_at(freeze) {
            ActivityStatus::Enrolling
        } else if now < self.spec.run.start {
            ActivityStatus::Frozen
        } else if now < self.spec.run.end {
            ActivityStatus::Running
        } else {
            ActivityStatus::Ended
        }
    }
}

/// Deserializes a field that may be absent (`None`), `null` (`Some(None)`) or a value.
pub(crate) fn double_option<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CityId;
    use proptest::prelude::*;

    fn t(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn draft() -> ActivityDraft {
        ActivityDraft {
            title: "Spring".into(),
            description: String::new(),
            cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
            kind: CouponKind::AmountOff,
            value_min: 100,
            value_max: 5000,
            enrollment: Window::new(t("2026-03-01T00:00:00Z"), t("2026-03-10T00:00:00Z")).unwrap(),
            run: Window::new(t("2026-03-15T00:00:00Z"), t("2026-03-31T00:00:00Z")).unwrap(),
            funding: None,
            funded_by: Some(FundedBy::Merchant),
            approval: Approval::None,
            reference: Default::default(),
        }
    }

    fn activity(d: ActivityDraft) -> Activity {
        Activity {
            id: ActivityId::new(1).unwrap(),
            spec: ActivitySpec::try_from(d).unwrap(),
            created_at: t("2026-01-01T00:00:00Z"),
            updated_at: t("2026-01-01T00:00:00Z"),
            aborted_at: None,
            pause: None,
            version: 1,
            enrollment_seq: 0,
        }
    }

    const FREEZE: Duration = Duration::minutes(5);

    #[test]
    fn status_at_every_boundary() {
        let a = activity(draft());
        let us = Duration::microseconds(1);
        let cases = [
            ("2026-02-28T23:59:59.999999Z", ActivityStatus::Scheduled),
            ("2026-03-01T00:00:00Z", ActivityStatus::Enrolling),
            ("2026-03-09T23:59:59.999999Z", ActivityStatus::Enrolling),
            ("2026-03-10T00:00:00Z", ActivityStatus::Frozen),
            ("2026-03-14T23:59:59.999999Z", ActivityStatus::Frozen),
            ("2026-03-15T00:00:00Z", ActivityStatus::Running),
            ("2026-03-30T23:59:59.999999Z", ActivityStatus::Running),
            ("2026-03-31T00:00:00Z", ActivityStatus::Ended),
        ];
        for (at, want) in cases {
            assert_eq!(a.status(t(at), FREEZE), want, "at {at}");
        }
        // Enrollment running right up to the start: the freeze period cuts it short.
        let mut d = draft();
        d.enrollment = Window::new(d.enrollment.start, d.run.start).unwrap();
        let a = activity(d);
        let freeze_at = t("2026-03-15T00:00:00Z").minus(FREEZE);
        assert_eq!(
            a.status(freeze_at.minus(us), FREEZE),
            ActivityStatus::Enrolling
        );
        assert_eq!(a.status(freeze_at, FREEZE), ActivityStatus::Frozen);
        let mut aborted = a.clone();
        aborted.aborted_at = Some(t("2026-03-02T00:00:00Z"));
        assert_eq!(
            aborted.status(t("2026-02-01T00:00:00Z"), FREEZE),
            ActivityStatus::Aborted
        );
    }

    #[test]
    fn rejects_bad_drafts() {
        let mut d = draft();
        d.value_min = 6000;
        assert_eq!(
            ActivitySpec::try_from(d).unwrap_err().code,
            "invalid_bounds"
        );
        let mut d = draft();
        d.enrollment = Window::new(d.enrollment.start, t("2026-03-16T00:00:00Z")).unwrap();
        assert_eq!(
            ActivitySpec::try_from(d).unwrap_err().field.as_deref(),
            Some("enrollment.end")
        );
        let mut d = draft();
        d.title = "   ".into();
        assert_eq!(
            ActivitySpec::try_from(d).unwrap_err().code,
            "invalid_length"
        );
        let mut d = draft();
        d.kind = CouponKind::PercentOff;
        d.value_max = 20_000;
        assert!(ActivitySpec::try_from(d).is_err());
    }

    #[test]
    fn patch_revalidates_the_whole() {
        let a = activity(draft());
        let p = ActivityPatch {
            value_max: Some(50),
            ..Default::default()
        };
        assert!(p.apply(&a.spec).is_err());
        let p = ActivityPatch {
            title: Some("Autumn".into()),
            ..Default::default()
        };
        assert_eq!(p.apply(&a.spec).unwrap().title, "Autumn");
    }

    proptest! {
        /// Status never goes backwards as time moves forward, and is constant within each
        /// phase's boundaries.
        #[test]
        fn status_is_monotonic(
            e0 in 0i64..1_000_000, e_len in 1i64..1_000_000, gap in 0i64..1_000_000,
            r_len in 1i64..1_000_000, freeze_s in 0i64..100_000,
            a in 0i64..5_000_000, b in 0i64..5_000_000,
        ) {
            let base = 1_800_000_000_000_000i64;
            let ts = |s: i64| Timestamp::from_unix_micros(base + s * 1_000_000).unwrap();
            let mut d = draft();
            d.enrollment = Window::new(ts(e0), ts(e0 + e_len)).unwrap();
            d.run = Window::new(ts(e0 + e_len + gap), ts(e0 + e_len + gap + r_len)).unwrap();
            let act = activity(d);
            let freeze = Duration::seconds(freeze_s);
            let (lo, hi) = (a.min(b), a.max(b));
            let rank = |s: ActivityStatus| ActivityStatus::ALL.iter().position(|x| *x == s).unwrap();
            prop_assert!(rank(act.status(ts(lo), freeze)) <= rank(act.status(ts(hi), freeze)));
            // Running exactly on the run window, whatever the freeze.
            prop_assert_eq!(act.status(ts(lo), freeze) == ActivityStatus::Running,
                act.spec.run.contains(ts(lo)));
            // Enrolling only inside enrollment and before the freeze.
            if act.status(ts(lo), freeze) == ActivityStatus::Enrolling {
                prop_assert!(act.spec.enrollment.contains(ts(lo)));
                prop_assert!(ts(lo) < act.spec.run.start.minus(freeze));
            }
        }
    }
}
