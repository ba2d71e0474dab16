//! Live changes: what may still change once claiming has started. Users hold coupons on the
//! template's terms, so only what gives them more is allowed (a later end of claiming, a later
//! end of a fixed validity), and the stock, which may go up, or down to what is claimed.

use crate::coupon::Validity;
use crate::error::DomainError;
use crate::template::{TemplateDraft, TemplatePatch, TemplateSpec};

impl TemplatePatch {
    /// The patched draft of a standalone template claimable now (validate it again with
    /// [`TemplateSpec::validate`]). Allowed: `total_stock` (raised, or lowered to what is
    /// claimed, which the store checks), `claim_window` with the same start and a later or
    /// equal end, a fixed `validity` with the same start and a later or equal end. Any other
    /// field is refused unless it repeats the current value (`fixed_once_claimable`, naming
    /// it); moving an end earlier is refused too (`not_extended`).
    pub fn apply_live(self, base: &TemplateSpec) -> Result<TemplateDraft, DomainError> {
        let b = base.draft();
        self.check_fixed(b)?;
        // The stock may go down too, to what is claimed and never below: only the store
        // knows that under the claims' lock (`below_claimed`).
        if let Some(w) = self.claim_window {
            let now = base.claim_window();
            if w.start != now.start {
                return Err(fixed("claim_window.start"));
            }
            if w.end < now.end {
                return Err(not_extended("claim_window.end"));
            }
        }
        if let Some(v) = &self.validity {
            match (v, &b.validity) {
                (
                    Validity::Fixed { from, until },
                    Validity::Fixed {
                        from: f0,
                        until: u0,
                    },
                ) => {
                    if from != f0 {
                        return Err(fixed("validity.from"));
                    }
                    if until < u0 {
                        return Err(not_extended("validity.until"));
                    }
                }
                (v, v0) if v == v0 => {}
                _ => return Err(fixed("validity")),
            }
        }
        Ok(self.apply(base))
    }

    /// Every field that may not change live is absent or repeats the current value.
    fn check_fixed(&self, b: &TemplateDraft) -> Result<(), DomainError> {
        let same = [
            ("title", self.title.as_ref().is_none_or(|v| *v == b.title)),
            (
                "description",
                self.description
                    .as_ref()
                    .is_none_or(|v| *v == b.description),
            ),
            ("value", self.value.as_ref().is_none_or(|v| *v == b.value)),
            ("threshold", self.threshold.is_none_or(|v| v == b.threshold)),
            ("deduction", self.deduction.is_none_or(|v| v == b.deduction)),
            ("scope", self.scope.as_ref().is_none_or(|v| *v == b.scope)),
            (
                "conditions",
                self.conditions.as_ref().is_none_or(|v| *v == b.conditions),
            ),
            ("rule_id", self.rule_id.is_none_or(|v| v == b.rule_id)),
            (
                "use_limits",
                self.use_limits.as_ref().is_none_or(|v| *v == b.use_limits),
            ),
            (
                "cities",
                self.cities.as_ref().is_none_or(|v| *v == b.cities),
            ),
            (
                "audience",
                self.audience.as_ref().is_none_or(|v| *v == b.audience),
            ),
            (
                "per_user_limit",
                self.per_user_limit.is_none_or(|v| v == b.per_user_limit),
            ),
            ("stacking", self.stacking.is_none_or(|v| v == b.stacking)),
            (
                "stacking_group",
                self.stacking_group
                    .as_ref()
                    .is_none_or(|v| *v == b.stacking_group),
            ),
            ("priority", self.priority.is_none_or(|v| v == b.priority)),
            ("budget", self.budget.is_none_or(|v| v == b.budget)),
            (
                "metadata",
                self.metadata.as_ref().is_none_or(|v| *v == b.metadata),
            ),
            (
                "refund_policy",
                self.refund_policy.is_none_or(|v| v == b.refund_policy),
            ),
        ];
        match same.into_iter().find(|(_, ok)| !ok) {
            Some((field, _)) => Err(fixed(field)),
            None => Ok(()),
        }
    }
}

fn fixed(field: &str) -> DomainError {
    DomainError::invalid(
        field,
        "fixed_once_claimable",
        "once claiming has started only total_stock, claim_window.end and a fixed \
         validity.until can change",
    )
}

fn not_extended(field: &str) -> DomainError {
    DomainError::invalid(
        field,
        "not_extended",
        "once claiming has started an end can only move later",
    )
}
