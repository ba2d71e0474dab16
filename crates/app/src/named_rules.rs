//! Named rules as a caller may see and change them: the platform's are everyone's to read and
//! use, a merchant's only its own. A change is a new version, copied into every template
//! using the rule in the same transaction, and recorded in the audit trail with the terms
//! before and after; a rule in use is not deleted.

use coupond_domain::{DomainError, Rule, RuleDraft, RuleId, RuleTerms, RuleUse};
use coupond_engine::shared::Notice;
use coupond_store::audit::{self, Change};
use coupond_store::lifecycle::Deleted;
use coupond_store::{Conflict, RuleFollower, RuleQuery, StoreError};

use crate::caller::{Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};

/// Who may write rules: whoever writes templates.
pub const WRITE: Access = crate::templates::EDIT;

/// Who may read them: whoever reads templates.
pub const READ: Access = crate::templates::READ;

/// How many times a rule change is tried when it or a template using it changed meanwhile.
const UPDATE_ATTEMPTS: usize = 3;

impl App {
    /// Creates a rule of `p` (a merchant's own, or the platform's).
    pub async fn create_rule(&self, p: &Principal, draft: &RuleDraft) -> AppResult<Rule> {
        let merchant = p.merchant();
        draft.validate(merchant.is_some())?;
        let now = self.now();
        let change = Change::new("rule.create", "rule", now)
            .merchant(merchant)
            .after(draft);
        let write = self.store().insert_rule(merchant, draft, now);
        Ok(audit::change(change, write).await?)
    }

    /// Rule `id`, if `p` may read it: the platform's, or its own merchant's.
    pub async fn visible_rule(&self, p: &Principal, id: RuleId) -> AppResult<Rule> {
        let rule = self.store().rule(id).await?;
        match p.merchant() {
            Some(m) if !rule.usable_by(Some(m)) => Err(AppError::NotFound),
            _ => Ok(rule),
        }
    }

    /// Rule `id` with the templates using it that `p` may see.
    pub async fn rule_use(&self, p: &Principal, id: RuleId) -> AppResult<RuleUse> {
        let rule = self.visible_rule(p, id).await?;
        let templates = self
            .store()
            .rule_templates(id)
            .await?
            .into_iter()
            .filter(|t| p.merchant().is_none_or(|m| t.merchant_id == Some(m)))
            .map(|t| t.id)
            .collect();
        Ok(RuleUse { rule, templates })
    }

    /// A page of the rules `p` may read, oldest first.
    pub async fn rules(&self, p: &Principal, page: PageRequest) -> AppResult<PageOf<Rule>> {
        let page = page.page(self.settings())?;
        let after = page.after.map(RuleId::new).transpose();
        let q = RuleQuery {
            merchant: p.merchant(),
            after: after.map_err(|_| AppError::bad_query("cursor", "not a cursor of this list"))?,
            limit: page.limit,
        };
        let rows = self.store().list_rules(&q).await?;
        Ok(finish(rows, page, |r| r.id.get(), |r| r))
    }

    /// Replaces rule `id`'s terms with `draft`: a new version, which every template using it
    /// follows from now on (each gets a `template.changed` event and a history entry). Two
    /// changes at once: the later one stands (a PUT replaces the whole rule). A merchant's
    /// rule used by a template enrolled in an activity does not change (`rule_in_activity`).
    pub async fn update_rule(
        &self,
        p: &Principal,
        id: RuleId,
        draft: RuleDraft,
    ) -> AppResult<Rule> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let rule = self.own_rule(p, id).await?;
            draft.validate(rule.merchant_id.is_some())?;
            let next = Rule {
                draft: draft.clone(),
                version: rule.version + 1,
                ..rule.clone()
            };
            let copy = RuleTerms::of(&next);
            let templates = self.store().rule_templates(id).await?;
            // An enrollment's terms are the platform's to review (and fixed once the activity
            // is frozen): a merchant's rule change must not move them past that.
            if p.merchant().is_some() && templates.iter().any(|t| t.spec.activity_id.is_some()) {
                return Err(DomainError::state(
                    "rule_in_activity",
                    "templates enrolled in activities use this rule; their terms are reviewed \
                     by the platform, so the rule cannot change",
                )
                .into());
            }
            let followers = templates
                .iter()
                .map(|t| {
                    let spec = t.spec.clone().with_rule(copy.clone())?;
                    Ok(RuleFollower {
                        id: t.id,
                        version: t.version,
                        spec,
                    })
                })
                .collect::<Result<Vec<_>, DomainError>>()?;
            let now = self.now();
            let change = Change::new("rule.update", "rule", now)
                .object(id.get())
                .merchant(rule.merchant_id)
                .before(&rule.draft)
                .after(&draft)
                .only_differences();
            let actor = p.actor();
            let write = self
                .store()
                .update_rule(id, rule.version, &draft, &followers, &actor, now);
            match audit::change(change, write).await {
                Ok(updated) => {
                    for t in &templates {
                        self.tell(Notice::TemplateChanged { template: t.id });
                    }
                    return Ok(updated);
                }
                Err(StoreError::Conflict(Conflict::Version)) if attempt < UPDATE_ATTEMPTS => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Deletes rule `id` unless a template uses it (409 `rule_in_use`).
    pub async fn delete_rule(&self, p: &Principal, id: RuleId) -> AppResult<()> {
        let rule = self.own_rule(p, id).await?;
        let change = Change::new("rule.delete", "rule", self.now())
            .object(id.get())
            .merchant(rule.merchant_id)
            .before(&rule.draft);
        match audit::change(change, self.store().delete_rule(id)).await? {
            Deleted::Done => Ok(()),
            Deleted::InUse => Err(DomainError::state(
                "rule_in_use",
                "templates use this rule; have them stop using it first",
            )
            .into()),
        }
    }

    /// The rule `rule_id` names, for a template's checks (which decide whether its owner may
    /// use it); a missing one is the field's error.
    pub(crate) async fn named_rule(&self, id: Option<RuleId>) -> AppResult<Option<Rule>> {
        let Some(id) = id else { return Ok(None) };
        match self.store().rule(id).await {
            Ok(rule) => Ok(Some(rule)),
            Err(StoreError::NotFound) => Err(AppError::invalid(
                "not_found",
                "rule_id",
                "no such rule of the platform or of the template's merchant",
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Rule `id`, if `p` may change it: a merchant its own, the platform any.
    async fn own_rule(&self, p: &Principal, id: RuleId) -> AppResult<Rule> {
        let rule = self.visible_rule(p, id).await?;
        match p.merchant() {
            Some(m) if rule.merchant_id != Some(m) => Err(AppError::Forbidden),
            _ => Ok(rule),
        }
    }
}
