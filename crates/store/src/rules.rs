//! Named rules: condition trees (and scopes) that templates share. A template using one keeps
//! a copy of the version it was written with; a new version rewrites every copy in its own
//! transaction.

use async_trait::async_trait;
use coupond_domain::{Actor, MerchantId, Rule, RuleDraft, RuleId, Template, TemplateId};
use coupond_domain::{TemplateSpec, Timestamp};

use crate::lifecycle::Deleted;
use crate::StoreResult;

/// Which rules a list shows.
#[derive(Clone, Debug, Default)]
pub struct RuleQuery {
    /// `Some`: this merchant's and the platform's; `None`: every rule.
    pub merchant: Option<MerchantId>,
    /// After this id (the cursor of the previous page).
    pub after: Option<RuleId>,
    pub limit: u32,
}

/// A template rewritten with a rule's new version: it must still be at `version`.
#[derive(Clone, Debug)]
pub struct RuleFollower {
    pub id: TemplateId,
    pub version: i64,
    /// Its terms with the new copy of the rule.
    pub spec: TemplateSpec,
}

/// Rules; each method one transaction.
#[async_trait]
pub trait RuleStore: Send + Sync {
    /// Inserts a rule of `merchant` (`None`: the platform's), at version 1.
    async fn insert_rule(
        &self,
        merchant: Option<MerchantId>,
        draft: &RuleDraft,
        now: Timestamp,
    ) -> StoreResult<Rule>;
    async fn rule(&self, id: RuleId) -> StoreResult<Rule>;
    /// Rules `q` picks, ascending by id.
    async fn list_rules(&self, q: &RuleQuery) -> StoreResult<Vec<Rule>>;
    /// Every template using rule `id`, by id.
    async fn rule_templates(&self, id: RuleId) -> StoreResult<Vec<Template>>;
    /// Replaces the rule's terms if it is still at `version`, and writes `followers` (every
    /// template using it, each still at its version, else `Conflict::Version`), each with its
    /// `template.changed` event and history entry by `actor`, in one transaction.
    async fn update_rule(
        &self,
        id: RuleId,
        version: i64,
        draft: &RuleDraft,
        followers: &[RuleFollower],
        actor: &Actor,
        now: Timestamp,
    ) -> StoreResult<Rule>;
    /// Deletes the rule unless a template uses it (`InUse`).
    async fn delete_rule(&self, id: RuleId) -> StoreResult<Deleted>;
}
