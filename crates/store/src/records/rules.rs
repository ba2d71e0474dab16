//! Named rules as stored: the `spec` of `rules`, and the copy of one a template carries in
//! its own record.

use coupond_domain::{Condition, RuleDraft, RuleId, RuleTerms};
use serde::{Deserialize, Serialize};

use super::ScopeRecord;

/// The `spec` column of `rules`.
#[derive(Debug, Serialize, Deserialize)]
pub struct RuleRecord {
    name: String,
    /// Read strictly, as a template's: a rule is never applied without a test it was given.
    conditions: Condition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<ScopeRecord>,
}

impl RuleRecord {
    pub fn of(d: &RuleDraft) -> Self {
        RuleRecord {
            name: d.name.clone(),
            conditions: d.conditions.clone(),
            scope: d.scope.as_ref().map(ScopeRecord::from),
        }
    }

    pub fn into_draft(self) -> RuleDraft {
        RuleDraft {
            name: self.name,
            conditions: self.conditions,
            scope: self.scope.map(Into::into),
        }
    }
}

/// The rule version a template copied, in the template's record.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RuleTermsRecord {
    id: RuleId,
    version: i64,
    conditions: Condition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<ScopeRecord>,
}

impl From<&RuleTerms> for RuleTermsRecord {
    fn from(r: &RuleTerms) -> Self {
        RuleTermsRecord {
            id: r.id,
            version: r.version,
            conditions: r.conditions.clone(),
            scope: r.scope.as_ref().map(ScopeRecord::from),
        }
    }
}

impl From<RuleTermsRecord> for RuleTerms {
    fn from(r: RuleTermsRecord) -> Self {
        RuleTerms {
            id: r.id,
            version: r.version,
            conditions: r.conditions,
            scope: r.scope.map(Into::into),
        }
    }
}
