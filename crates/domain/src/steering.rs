//! Steering a live campaign without voiding what users hold: a [`Pause`] of a template or of
//! an activity (claims, code redemptions and bulk issuance wait; claimed coupons stay usable),
//! its resume, and a template's stop (claiming ends now for good; coupons keep their own
//! validity). Abort keeps meaning void.
//!
//! A pause is not a status: a template's status follows time (scheduled, active, ended), and a
//! pause is laid over it. A paused template whose claim window ends simply ends.

use serde::{Deserialize, Serialize};
use time::Duration;
use utoipa::ToSchema;

use crate::{
    Activity, ActivityStatus, DomainError, Note, Template, TemplateSpec, TemplateStatus, Timestamp,
    Window,
};

/// Who paused a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PauseScope {
    /// The template itself was paused; its own resume lifts it.
    Template,
    /// Its activity was paused; the activity's resume lifts it.
    Activity,
}

impl PauseScope {
    pub fn as_str(self) -> &'static str {
        match self {
            PauseScope::Template => "template",
            PauseScope::Activity => "activity",
        }
    }

    /// The stored form back; `None` for anything else.
    pub fn parse(s: &str) -> Option<PauseScope> {
        match s {
            "template" => Some(PauseScope::Template),
            "activity" => Some(PauseScope::Activity),
            _ => None,
        }
    }
}

/// A pause in force: since when, why (if a reason was given) and by whom's scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    pub at: Timestamp,
    pub reason: Option<Note>,
    pub scope: PauseScope,
}

impl Template {
    /// Whether claims of it wait now.
    pub fn is_paused(&self) -> bool {
        self.pause.is_some()
    }

    /// It may be paused while claiming is ahead or open and it is not paused already
    /// (`already_paused`, `not_pausable`).
    pub fn check_pausable(&self, now: Timestamp) -> Result<(), DomainError> {
        if self.pause.is_some() {
            return Err(DomainError::state(
                "already_paused",
                "the template is already paused",
            ));
        }
        match self.status(now) {
            TemplateStatus::Scheduled | TemplateStatus::Active => Ok(()),
            st => Err(DomainError::state(
                "not_pausable",
                format!(
                    "only a scheduled or active template is paused; this one is {}",
                    st.as_str()
                ),
            )),
        }
    }

    /// It may be resumed when it was paused itself (`not_paused`; `activity_paused` when the
    /// pause is its activity's: resume the activity).
    pub fn check_resumable(&self) -> Result<(), DomainError> {
        match &self.pause {
            None => Err(DomainError::state(
                "not_paused",
                "the template is not paused",
            )),
            Some(p) if p.scope == PauseScope::Activity => Err(DomainError::state(
                "activity_paused",
                "its activity is paused: resume the activity",
            )),
            Some(_) => Ok(()),
        }
    }

    /// Its claiming may be stopped for good while it is active, paused or not (`not_active`).
    /// A template whose claiming has not started is aborted instead: nobody holds its coupons.
    pub fn check_stoppable(&self, now: Timestamp) -> Result<(), DomainError> {
        match self.status(now) {
            TemplateStatus::Active => Ok(()),
            st => Err(DomainError::state(
                "not_active",
                format!(
                    "only an active template is stopped (this one is {}); abort one that has \
                     not started",
                    st.as_str()
                ),
            )),
        }
    }
}

impl Template {
    /// Its terms once claiming stops at `now` ([`Template::check_stoppable`] first): the claim
    /// window ends now. Coupons claimed keep their own validity; a relative validity's last
    /// day moves with the claim end, as it always follows it.
    pub fn stopped_spec(&self, now: Timestamp) -> Result<TemplateSpec, DomainError> {
        self.check_stoppable(now)?;
        let start = self.spec.claim_window().start;
        let window = Window::new(start, now).map_err(|_| {
            DomainError::state(
                "not_active",
                "claiming started this very instant; abort the template instead",
            )
        })?;
        let mut draft = self.spec.draft().clone();
        if draft.claim_window.is_some() {
            draft.claim_window = Some(window);
        }
        let spec = TemplateSpec::from_stored(draft, window)?;
        match self.spec.rule() {
            Some(rule) => spec.with_rule(rule.clone()),
            None => Ok(spec),
        }
    }
}

impl Activity {
    /// Whether its templates' claims wait now.
    pub fn is_paused(&self) -> bool {
        self.pause.is_some()
    }

    /// It may be paused until it ends, when it is not paused already (`already_paused`,
    /// `not_pausable`).
    pub fn check_pausable(&self, now: Timestamp, freeze: Duration) -> Result<(), DomainError> {
        if self.pause.is_some() {
            return Err(DomainError::state(
                "already_paused",
                "the activity is already paused",
            ));
        }
        match self.status(now, freeze) {
            st @ (ActivityStatus::Ended | ActivityStatus::Aborted) => Err(DomainError::state(
                "not_pausable",
                format!("the activity is {}", st.as_str()),
            )),
            _ => Ok(()),
        }
    }

    /// It may be resumed when paused (`not_paused`).
    pub fn check_resumable(&self) -> Result<(), DomainError> {
        if self.pause.is_none() {
            return Err(DomainError::state(
                "not_paused",
                "the activity is not paused",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::tests::fixture;

    fn pause(scope: PauseScope) -> Option<Pause> {
        Some(Pause {
            at: Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
            reason: None,
            scope,
        })
    }

    #[test]
    fn only_a_live_unpaused_template_pauses_and_only_its_own_pause_resumes() {
        let (t, before, during, after) = fixture();
        assert!(t.check_pausable(before).is_ok());
        assert!(t.check_pausable(during).is_ok());
        assert_eq!(t.check_pausable(after).unwrap_err().code, "not_pausable");
        assert_eq!(t.check_resumable().unwrap_err().code, "not_paused");
        let own = Template {
            pause: pause(PauseScope::Template),
            ..t.clone()
        };
        assert_eq!(
            own.check_pausable(during).unwrap_err().code,
            "already_paused"
        );
        assert!(own.check_resumable().is_ok());
        let by_activity = Template {
            pause: pause(PauseScope::Activity),
            ..t.clone()
        };
        assert_eq!(
            by_activity.check_resumable().unwrap_err().code,
            "activity_paused"
        );
    }

    #[test]
    fn only_an_active_template_stops() {
        let (t, before, during, after) = fixture();
        assert_eq!(t.check_stoppable(before).unwrap_err().code, "not_active");
        assert!(t.check_stoppable(during).is_ok());
        assert_eq!(t.check_stoppable(after).unwrap_err().code, "not_active");
        let stopped = t.stopped_spec(during).unwrap();
        assert_eq!(stopped.claim_window().end, during);
        assert_eq!(stopped.draft().claim_window.unwrap().end, during);
        let after_stop = Template {
            spec: stopped,
            ..t.clone()
        };
        assert_eq!(after_stop.status(during), TemplateStatus::Ended);
    }
}
