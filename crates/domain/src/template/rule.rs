//! A template's named rule: the copy it carries, the conditions it adds, the scope it sets.

use crate::coupon::Scope;
use crate::error::DomainError;
use crate::rules::{Condition, Conditions, RuleTerms};
use crate::template::{TemplateContext, TemplateDraft, TemplateSpec};

/// The copy of the rule `draft.rule_id` names, from `ctx.rule`: it must be that rule, and one
/// the template's owner may use.
pub(super) fn rule_terms(
    draft: &TemplateDraft,
    ctx: TemplateContext<'_>,
) -> Result<Option<RuleTerms>, DomainError> {
    let Some(id) = draft.rule_id else {
        return Ok(None);
    };
    let owner = ctx.owner.map(|m| m.id);
    match ctx.rule {
        Some(rule) if rule.id == id && rule.usable_by(owner) => Ok(Some(RuleTerms::of(rule))),
        _ => Err(DomainError::invalid(
            "rule_id",
            "not_found",
            "no such rule of the platform or of the template's merchant",
        )),
    }
}

/// The template's own conditions and its rule's, both to hold, ready to test. Read without a
/// request's size limits: each part was checked on its own when written.
pub(super) fn combined(
    own: Option<&Condition>,
    rule: Option<&RuleTerms>,
) -> Result<Option<Conditions>, DomainError> {
    let tree = match (own, rule) {
        (None, None) => return Ok(None),
        (Some(c), None) => c.clone(),
        (None, Some(r)) => r.conditions.clone(),
        (Some(c), Some(r)) => Condition::All(vec![c.clone(), r.conditions.clone()]),
    };
    Conditions::compile_stored(&tree)
        .map(Some)
        .map_err(|e| e.within("conditions"))
}

impl TemplateSpec {
    /// The same terms with `rule` as the copy of its rule (a stored copy, or the rule's new
    /// version): it must be the rule `rule_id` names.
    pub fn with_rule(mut self, rule: RuleTerms) -> Result<Self, DomainError> {
        if self.draft.rule_id != Some(rule.id) {
            return Err(DomainError::invalid(
                "rule_id",
                "not_found",
                format!("the template does not use rule {}", rule.id),
            ));
        }
        self.conditions = combined(self.draft.conditions.as_ref(), Some(&rule))?;
        self.rule = Some(rule);
        Ok(self)
    }

    /// The copy of its rule, if it uses one.
    pub fn rule(&self) -> Option<&RuleTerms> {
        self.rule.as_ref()
    }

    /// The scope its coupons apply to: its rule's when the rule has one, else its own.
    pub fn scope(&self) -> &Scope {
        self.rule
            .as_ref()
            .and_then(|r| r.scope.as_ref())
            .unwrap_or(&self.draft.scope)
    }
}
