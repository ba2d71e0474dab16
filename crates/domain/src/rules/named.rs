//! Named rules: a condition tree, and optionally a scope, that many templates share. A
//! template naming one (`rule_id`) carries a copy of the version it was last written with
//! ([`RuleTerms`]); a rule's new version is copied into every template using it in the
//! same transaction, so checkout reads one record per template as before.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::coupon::Scope;
use crate::error::{DomainError, Findings};
use crate::ids::{MerchantId, RuleId, TemplateId};
use crate::rules::{Condition, Conditions};
use crate::text::check_text;
use crate::time::Timestamp;

/// The longest rule name, in characters.
pub const MAX_RULE_NAME: usize = 120;

/// What a rule says: its name, its conditions and, optionally, a scope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleDraft {
    /// 1 to 120 characters, for people.
    #[schema(example = "100 off 1,000, weekends only")]
    pub name: String,
    /// A tree as a template's `conditions` takes it (at most 32 tests, 4 levels).
    pub conditions: Condition,
    /// Replaces the scope of every template using the rule; absent: each keeps its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

impl RuleDraft {
    /// Every broken field at once; `merchant`: whether a merchant owns it (a `merchant`
    /// scope is only a merchant's).
    pub fn validate(&self, merchant: bool) -> Result<(), DomainError> {
        let mut found = Findings::default();
        found.check(check_text("name", &self.name, 1, MAX_RULE_NAME));
        found.check(Conditions::compile(&self.conditions).map_err(|e| e.within("conditions")));
        if let Some(scope) = &self.scope {
            found.check(scope.validate(merchant));
        }
        found.done()
    }
}

/// A stored rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Rule {
    pub id: RuleId,
    /// The owner; absent: the platform's, usable by every template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    #[serde(flatten)]
    pub draft: RuleDraft,
    /// 1 when created, one more with each change.
    pub version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Rule {
    /// Whether a template of `owner` (`None`: the platform's) may use it: the platform's
    /// rules are everyone's, a merchant's only its own.
    pub fn usable_by(&self, owner: Option<MerchantId>) -> bool {
        self.merchant_id.is_none() || self.merchant_id == owner
    }
}

/// A rule as a template carries it: the version copied, its conditions and scope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleTerms {
    pub id: RuleId,
    pub version: i64,
    pub conditions: Condition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

impl RuleTerms {
    pub fn of(rule: &Rule) -> Self {
        RuleTerms {
            id: rule.id,
            version: rule.version,
            conditions: rule.draft.conditions.clone(),
            scope: rule.draft.scope.clone(),
        }
    }
}

/// A rule with the templates that use it, as `GET /v1/rules/{id}` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RuleUse {
    #[serde(flatten)]
    pub rule: Rule,
    /// Every template using it, by id.
    pub templates: Vec<TemplateId>,
}
