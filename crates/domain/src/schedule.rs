//! Status transitions over time, for the scheduler that announces them.
//!
//! Statuses are computed from the record and the clock ([`Template::status`],
//! [`Activity::status`]); nothing stores them. What the scheduler stores is the last status it
//! *announced* (emitted an event for). Given that and `now`, these functions list the
//! transitions still to announce, each with the instant it happened, in order: after downtime
//! across several boundaries, every one of them, oldest first.
//!
//! Both status orders are monotonic in time (a template never goes back from `ended` to
//! `active`; `aborted` is final and last), so "still to announce" is "later in the order than
//! the announced status".

use time::Duration;

use crate::activity::{Activity, ActivityStatus};
use crate::template::{Review, Template, TemplateStatus};
use crate::time::Timestamp;

/// A status entered at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition<S> {
    pub to: S,
    pub at: Timestamp,
}

fn rank_template(s: TemplateStatus) -> u8 {
    match s {
        TemplateStatus::Draft | TemplateStatus::PendingApproval | TemplateStatus::Rejected => 0,
        TemplateStatus::Scheduled => 1,
        TemplateStatus::Active => 2,
        TemplateStatus::Ended => 3,
        TemplateStatus::Expired => 4,
        TemplateStatus::Aborted => 5,
    }
}

fn rank_activity(s: ActivityStatus) -> u8 {
    match s {
        ActivityStatus::Scheduled => 0,
        ActivityStatus::Enrolling => 1,
        ActivityStatus::Frozen => 2,
        ActivityStatus::Running => 3,
        ActivityStatus::Ended => 4,
        ActivityStatus::Aborted => 5,
    }
}

/// The statuses a record went through up to `now`, each when it entered it: `status_at` is
/// evaluated at every instant where it may change, and kept where it does.
fn milestones<S: Copy + PartialEq>(
    mut instants: Vec<Timestamp>,
    from: Timestamp,
    now: Timestamp,
    status_at: impl Fn(Timestamp) -> S,
) -> Vec<Transition<S>> {
    instants.retain(|t| *t >= from && *t <= now);
    instants.push(from);
    instants.sort_unstable();
    instants.dedup();
    let mut out: Vec<Transition<S>> = Vec::new();
    for at in instants {
        let to = status_at(at);
        if out.last().is_none_or(|last| last.to != to) {
            out.push(Transition { to, at });
        }
    }
    out
}

impl Template {
    /// The status at `t` as it was then: published and aborted only from the instants they
    /// happened. Equals [`Template::status`] for any `t` after the last of them.
    pub fn status_as_of(&self, t: Timestamp) -> TemplateStatus {
        if self.aborted_at.is_some_and(|a| a <= t) {
            return TemplateStatus::Aborted;
        }
        if !self.review.admits_at(t) {
            return match self.review {
                Review::Rejected { at, .. } if at <= t => TemplateStatus::Rejected,
                _ => TemplateStatus::PendingApproval,
            };
        }
        let published =
            self.spec.activity_id.is_some() || self.published_at.is_some_and(|p| p <= t);
        if !published {
            return TemplateStatus::Draft;
        }
        let w = self.spec.claim_window();
        if t < w.start {
            TemplateStatus::Scheduled
        } else if t < w.end {
            TemplateStatus::Active
        } else if t < self.spec.expires_at() {
            TemplateStatus::Ended
        } else {
            TemplateStatus::Expired
        }
    }

    /// The transitions to announce after `announced` (`None`: nothing announced yet), up to
    /// `now`, oldest first.
    pub fn transitions_since(
        &self,
        announced: Option<TemplateStatus>,
        now: Timestamp,
    ) -> Vec<Transition<TemplateStatus>> {
        let w = self.spec.claim_window();
        let mut instants = vec![w.start, w.end, self.spec.expires_at()];
        instants.extend(self.published_at);
        instants.extend(self.review.decided_at());
        instants.extend(self.aborted_at);
        let floor = announced.map(rank_template);
        milestones(instants, self.created_at, now, |t| self.status_as_of(t))
            .into_iter()
            .filter(|m| floor.is_none_or(|f| rank_template(m.to) > f))
            .collect()
    }
}

impl Activity {
    /// The status at `t` as it was then (aborted only from the instant it happened).
    pub fn status_as_of(&self, t: Timestamp, freeze: Duration) -> ActivityStatus {
        if self.aborted_at.is_some_and(|a| a <= t) {
            return ActivityStatus::Aborted;
        }
        if t < self.spec.enrollment.start {
            ActivityStatus::Scheduled
        } else if t < self.frozen_at(freeze) {
            ActivityStatus::Enrolling
        } else if t < self.spec.run.start {
            ActivityStatus::Frozen
        } else if t < self.spec.run.end {
            ActivityStatus::Running
        } else {
            ActivityStatus::Ended
        }
    }

    /// The transitions to announce after `announced` (`None`: nothing announced yet), up to
    /// `now`, oldest first.
    pub fn transitions_since(
        &self,
        announced: Option<ActivityStatus>,
        now: Timestamp,
        freeze: Duration,
    ) -> Vec<Transition<ActivityStatus>> {
        let mut instants = vec![
            self.spec.enrollment.start,
            self.frozen_at(freeze),
            self.spec.run.start,
            self.spec.run.end,
        ];
        instants.extend(self.aborted_at);
        let floor = announced.map(rank_activity);
        milestones(instants, self.created_at, now, |t| {
            self.status_as_of(t, freeze)
        })
        .into_iter()
        .filter(|m| floor.is_none_or(|f| rank_activity(m.to) > f))
        .collect()
    }

    /// The next instant after `now` at which its status changes, if any.
    pub fn next_transition(&self, now: Timestamp, freeze: Duration) -> Option<Timestamp> {
        if self.aborted_at.is_some() {
            return None;
        }
        [
            self.spec.enrollment.start,
            self.frozen_at(freeze),
            self.spec.run.start,
            self.spec.run.end,
        ]
        .into_iter()
        .filter(|t| *t > now)
        .min()
    }
}

impl Template {
    /// The next instant after `now` at which its status changes, if any (publishing and
    /// aborting are not foreseeable).
    pub fn next_transition(&self, now: Timestamp) -> Option<Timestamp> {
        if self.aborted_at.is_some() {
            return None;
        }
        let w = self.spec.claim_window();
        [w.start, w.end, self.spec.expires_at()]
            .into_iter()
            .filter(|t| *t > now)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::{ActivityDraft, ActivitySpec};
    use crate::coupon::{
        Audience, CouponKind, CouponValue, Coverage, DeductionMode, Stacking, Validity,
    };
    use crate::ids::{ActivityId, CityId, CitySet, TemplateId};
    use crate::money::Money;
    use crate::template::{TemplateDraft, TemplateSpec};
    use crate::time::Window;

    fn t(h: i64) -> Timestamp {
        Timestamp::parse("2026-03-01T00:00:00Z")
            .unwrap()
            .plus(Duration::hours(h))
    }

    fn template(published: Option<i64>, aborted: Option<i64>) -> Template {
        let draft = TemplateDraft {
            conditions: None,
            use_limits: Vec::new(),
            stacking_group: None,
            rule_id: None,
            priority: Default::default(),
            activity_id: None,
            title: "T".into(),
            description: String::new(),
            value: CouponValue::AmountOff {
                amount: Money::new(100).unwrap(),
            },
            threshold: Money::ZERO,
            deduction: DeductionMode::Upfront,
            scope: Coverage::All.into(),
            cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
            audience: Audience::Everyone,
            total_stock: 10,
            per_user_limit: 1,
            stacking: Stacking::Exclusive,
            claim_window: Some(Window::new(t(10), t(20)).unwrap()),
            validity: Validity::Relative { days: 1 },
            budget: None,
            metadata: Default::default(),
            refund_policy: Default::default(),
            reminder_days_before: None,
            reference: Default::default(),
        };
        Template {
            id: TemplateId::new(1).unwrap(),
            merchant_id: None,
            spec: TemplateSpec::from_stored(draft, Window::new(t(10), t(20)).unwrap()).unwrap(),
            claimed: 0,
            used: 0,
            given: Money::ZERO,
            reserved: Money::ZERO,
            created_at: t(0),
            updated_at: t(0),
            published_at: published.map(t),
            aborted_at: aborted.map(t),
            review: Default::default(),
            pause: None,
            version: 1,
        }
    }

    fn statuses(v: &[Transition<TemplateStatus>]) -> Vec<(TemplateStatus, Timestamp)> {
        v.iter().map(|m| (m.to, m.at)).collect()
    }

    #[test]
    fn a_templates_whole_life_in_order() {
        use TemplateStatus::*;
        let tpl = template(Some(5), None);
        // Expires 24 h after the window closes.
        let all = tpl.transitions_since(None, t(100));
        assert_eq!(
            statuses(&all),
            vec![
                (Draft, t(0)),
                (Scheduled, t(5)),
                (Active, t(10)),
                (Ended, t(20)),
                (Expired, t(44))
            ]
        );
        // Catching up from `scheduled` at hour 25: two boundaries passed, both, in order.
        assert_eq!(
            statuses(&tpl.transitions_since(Some(Scheduled), t(25))),
            vec![(Active, t(10)), (Ended, t(20))]
        );
        assert!(tpl.transitions_since(Some(Ended), t(25)).is_empty());
        assert_eq!(tpl.next_transition(t(25)), Some(t(44)));
        // Published after the window opened: straight to active at the publish instant.
        let late = template(Some(12), None);
        assert_eq!(
            statuses(&late.transitions_since(Some(Draft), t(13))),
            vec![(Active, t(12))]
        );
        // Aborted while active: the abort is the last transition, at its instant.
        let stopped = template(Some(5), Some(15));
        assert_eq!(
            statuses(&stopped.transitions_since(Some(Active), t(30))),
            vec![(Aborted, t(15))]
        );
        assert_eq!(stopped.next_transition(t(11)), None);
        // Whatever the clock says now, status_as_of agrees with status after the last event.
        for h in [5, 9, 10, 19, 20, 43, 44, 50] {
            assert_eq!(tpl.status_as_of(t(h)), tpl.status(t(h)), "hour {h}");
        }
    }

    #[test]
    fn an_activitys_whole_life_in_order() {
        use ActivityStatus::*;
        let a = Activity {
            id: ActivityId::new(1).unwrap(),
            spec: ActivitySpec::try_from(ActivityDraft {
                title: "A".into(),
                description: String::new(),
                cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
                kind: CouponKind::AmountOff,
                value_min: 1,
                value_max: 100,
                enrollment: Window::new(t(2), t(10)).unwrap(),
                run: Window::new(t(12), t(30)).unwrap(),
                funding: Some(crate::Funding::PLATFORM),
                funded_by: None,
                approval: crate::activity::Approval::None,
                reference: Default::default(),
            })
            .unwrap(),
            created_at: t(0),
            updated_at: t(0),
            aborted_at: None,
            pause: None,
            version: 1,
            enrollment_seq: 0,
        };
        let freeze = Duration::minutes(5);
        let all = a.transitions_since(None, t(40), freeze);
        let got: Vec<_> = all.iter().map(|m| (m.to, m.at)).collect();
        assert_eq!(
            got,
            vec![
                (Scheduled, t(0)),
                (Enrolling, t(2)),
                (Frozen, t(10)),
                (Running, t(12)),
                (Ended, t(30))
            ]
        );
        let got: Vec<_> = a
            .transitions_since(Some(Enrolling), t(13), freeze)
            .iter()
            .map(|m| m.to)
            .collect();
        assert_eq!(got, vec![Frozen, Running]);
        assert_eq!(a.next_transition(t(13), freeze), Some(t(30)));
    }
}
