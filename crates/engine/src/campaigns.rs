//! The workflows of merchants, activities and templates that every front door (the API, the
//! console) calls after it has parsed and authorized a request: load, apply the domain's rules
//! (`coupond_domain::lifecycle`, the patches' validation), write in one store transaction,
//! which records the change in the audit trail ([`coupond_store::audit`]) with the fields
//! before and after.

use coupond_domain::{
    Activity, ActivityId, ActivityPatch, ActivitySpec, Actor, Approval, Decision, DomainError,
    Merchant, MerchantDraft, MerchantId, MerchantPatch, Review, Rule, Template, TemplateContext,
    TemplateDraft, TemplatePatch, TemplateSpec, TemplateStatus, Timestamp, Validity,
};
use coupond_store::audit::{self, Change};
use coupond_store::{Conflict, NewTemplate, Store, StoreError, TemplateEdit};
use time::Duration;

/// Why a workflow refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// A domain rule refused it (an invalid patch, a state that does not allow it).
    #[error(transparent)]
    Rule(#[from] DomainError),
    /// Storage refused (a version conflict, a missing record) or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Edits a merchant's name, short name or cities. Written only if the merchant is still what
/// was read, so a concurrent edit is a version conflict, never silently undone.
pub async fn edit_merchant(
    store: &dyn Store,
    id: MerchantId,
    patch: MerchantPatch,
    now: Timestamp,
) -> Result<Merchant, CampaignError> {
    let m = store.merchant(id).await?;
    let draft = patch.apply(&m)?;
    let old = m.draft();
    let change = Change::new("merchant.update", "merchant", now)
        .object(id.get())
        .merchant(Some(id))
        .before(&old)
        .after(&draft)
        .only_differences();
    let write = store.update_merchant(id, &old, &draft);
    Ok(audit::change(change, write).await?)
}

/// Creates a merchant.
pub async fn create_merchant(
    store: &dyn Store,
    draft: &MerchantDraft,
    now: Timestamp,
) -> Result<Merchant, CampaignError> {
    let change = Change::new("merchant.create", "merchant", now).after(draft);
    Ok(audit::change(change, store.insert_merchant(draft, now)).await?)
}

/// Creates an activity.
pub async fn create_activity(
    store: &dyn Store,
    spec: &ActivitySpec,
    now: Timestamp,
) -> Result<Activity, CampaignError> {
    let change = Change::new("activity.create", "activity", now).after(spec);
    audit::change(change, store.insert_activity(spec, now))
        .await
        .map_err(reference_taken)
}

/// Edits an activity while it is scheduled or enrolling. Its live templates must still fit
/// the new terms (`templates_conflict` otherwise); those whose claim window follows the run
/// window move with it, in the same transaction.
pub async fn edit_activity(
    store: &dyn Store,
    id: ActivityId,
    patch: ActivityPatch,
    now: Timestamp,
    freeze: Duration,
) -> Result<Activity, CampaignError> {
    let a = store.activity(id).await?;
    a.check_editable(now, freeze)?;
    let spec = patch.apply(&a.spec)?;
    let patched = Activity {
        spec: spec.clone(),
        ..a.clone()
    };
    let following = patched.rebase_enrolled(&store.activity_templates(id).await?)?;
    let change = Change::new("activity.update", "activity", now)
        .object(id.get())
        .before(&a.spec)
        .after(&spec)
        .only_differences();
    let write = store.update_activity(id, a.version, a.enrollment_seq, &spec, &following, now);
    audit::change(change, write).await.map_err(reference_taken)
}

/// Aborts an activity and every template in it, until it ends. Final.
pub async fn abort_activity(
    store: &dyn Store,
    id: ActivityId,
    now: Timestamp,
    freeze: Duration,
) -> Result<Activity, CampaignError> {
    let a = store.activity(id).await?;
    a.check_abortable(now, freeze)?;
    let change = Change::new("activity.abort", "activity", now)
        .object(id.get())
        .before(&serde_json::json!({"status": a.status(now, freeze)}))
        .after(&serde_json::json!({"status": "aborted"}));
    Ok(audit::change(change, store.abort_activity(id, a.version, now)).await?)
}

/// How often creating a template retries when its enrolling activity changed between read
/// and write.
const CREATE_ATTEMPTS: usize = 3;

/// Creates a template of `owner` (`None`: the platform's), validated at `now` against
/// `activity` as the caller read it (having checked it may see it). When the activity changes
/// before the write (its version moved on), it is read again and the draft validated against
/// the new terms, up to [`CREATE_ATTEMPTS`] times; so is the rule it names (`rule_id`), which
/// the caller loaded too.
pub async fn create_template(
    store: &dyn Store,
    owner: Option<&Merchant>,
    draft: &TemplateDraft,
    (mut activity, mut rule): (Option<Activity>, Option<Rule>),
    now: Timestamp,
    freeze: Duration,
) -> Result<Template, CampaignError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let ctx = TemplateContext {
            owner,
            activity: activity.as_ref(),
            now,
            freeze,
            rule: rule.as_ref(),
        };
        let spec = TemplateSpec::validate(draft.clone(), ctx)?;
        let new = NewTemplate {
            merchant_id: owner.map(|m| m.id),
            spec: &spec,
            activity_version: activity.as_ref().map(|a| a.version),
            review: enrollment_review(owner, activity.as_ref()),
        };
        let change = Change::new("template.create", "template", now)
            .merchant(new.merchant_id)
            .after(&spec.draft());
        match audit::change(change, store.insert_template(&new, now)).await {
            Ok(t) => return Ok(t),
            Err(StoreError::Conflict(Conflict::Version)) if attempt < CREATE_ATTEMPTS => {
                if let Some(a) = &activity {
                    activity = Some(store.activity(a.id).await?);
                }
                if let Some(r) = &rule {
                    rule = Some(store.rule(r.id).await?);
                }
            }
            Err(e) => return Err(reference_taken(e)),
        }
    }
}

/// A template or an activity write that takes a unique key already taken can only have met
/// its reference's `external_id`, which is unique per owner (`external_id_taken`).
fn reference_taken(e: StoreError) -> CampaignError {
    match e {
        StoreError::Conflict(Conflict::Unique) => CampaignError::Rule(DomainError::state(
            "external_id_taken",
            "reference.external_id is already the reference of another of the owner's",
        )),
        // The rule `rule_id` names was deleted while the template was written.
        StoreError::Conflict(Conflict::Reference) => CampaignError::Rule(DomainError::invalid(
            "rule_id",
            "not_found",
            "no such rule of the platform or of the template's merchant",
        )),
        e => e.into(),
    }
}

/// A merchant's enrollment in an activity that requires approval waits for it; anything
/// else needs none.
fn enrollment_review(owner: Option<&Merchant>, activity: Option<&Activity>) -> Review {
    match activity {
        Some(a) if owner.is_some() && a.spec.approval == Approval::Required => Review::Pending,
        _ => Review::NotNeeded,
    }
}

/// Edits a template's terms. Until claiming can start (draft, scheduled; in an activity, while
/// it enrolls) any term may change; a standalone template claimable now may only get more
/// stock, a later claim end and a later fixed validity end ([`TemplatePatch::apply_live`]),
/// and the coupons already issued with that validity keep up with it. Every change is
/// recorded in the template's history with `actor`. `ctx` holds the owner and activity the
/// caller loaded (and `activity_version` the version it read).
pub async fn edit_template(
    store: &dyn Store,
    t: &Template,
    patch: TemplatePatch,
    ctx: TemplateContext<'_>,
    actor: &Actor,
) -> Result<Template, CampaignError> {
    let now = ctx.now;
    let live = t.status(now) == TemplateStatus::Active && t.spec.activity_id.is_none();
    let draft = if live {
        patch.apply_live(&t.spec)?
    } else {
        t.check_editable(now)?;
        patch.apply(&t.spec)
    };
    let activity_version = ctx.activity.map(|a| a.version);
    let spec = TemplateSpec::validate(draft, ctx)?;
    let changes = changed_fields(&t.spec, &spec);
    if changes.as_object().is_none_or(serde_json::Map::is_empty) {
        return Ok(t.clone());
    }
    let coupons_until = match (&t.spec.validity, &spec.validity) {
        (Validity::Fixed { until: old, .. }, Validity::Fixed { until: new, .. })
            if live && old != new =>
        {
            Some((*old, *new))
        }
        _ => None,
    };
    let edit = TemplateEdit {
        actor,
        changes: &changes,
        coupons_until,
        review: t.review.after_edit(),
    };
    let change = template_change("template.update", t, now)
        .before(&t.spec.draft())
        .after(&spec.draft())
        .only_differences();
    let write = store.update_template(t.id, t.version, activity_version, &spec, Some(edit), now);
    audit::change(change, write).await.map_err(reference_taken)
}

/// `{"field": {"from": .., "to": ..}}` for each term that differs between `old` and `new`.
fn changed_fields(old: &TemplateSpec, new: &TemplateSpec) -> serde_json::Value {
    let as_map = |s: &TemplateSpec| match serde_json::to_value(s.draft()) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (before, after) = (as_map(old), as_map(new));
    let mut changes = serde_json::Map::new();
    let null = serde_json::Value::Null;
    for key in before.keys().chain(after.keys()) {
        let (from, to) = (
            before.get(key).unwrap_or(&null),
            after.get(key).unwrap_or(&null),
        );
        if from != to && !changes.contains_key(key) {
            changes.insert(key.clone(), serde_json::json!({"from": from, "to": to}));
        }
    }
    serde_json::Value::Object(changes)
}

/// Publishes a standalone draft (read by the caller, who checked it may see it).
pub async fn publish_template(
    store: &dyn Store,
    t: &Template,
    now: Timestamp,
) -> Result<Template, CampaignError> {
    t.check_publishable(now)?;
    let published = Template {
        published_at: Some(now),
        ..t.clone()
    };
    let change = status_change("template.publish", t, &published, now);
    Ok(audit::change(change, store.publish_template(t.id, t.version, now)).await?)
}

/// The audit trail's change of template `t` by `action`, before its fields are added.
pub(crate) fn template_change(action: &'static str, t: &Template, now: Timestamp) -> Change {
    Change::new(action, "template", now)
        .object(t.id.get())
        .merchant(t.merchant_id)
}

/// A change of template `t`'s status to `after`'s, at `now`.
fn status_change(action: &'static str, t: &Template, after: &Template, now: Timestamp) -> Change {
    template_change(action, t, now)
        .before(&serde_json::json!({"status": t.status(now).as_str()}))
        .after(&serde_json::json!({"status": after.status(now).as_str()}))
}

/// Approves or rejects (with a reason) a merchant's enrollment waiting for approval, as the
/// caller read it; recorded in the audit trail with the decision.
pub async fn review_template(
    store: &dyn Store,
    t: &Template,
    decision: Decision,
    actor: &Actor,
    now: Timestamp,
) -> Result<Template, CampaignError> {
    let review = t.check_review(decision, now)?;
    let action = match review {
        Review::Approved { .. } => "template.approve",
        _ => "template.reject",
    };
    let change = template_change(action, t, now)
        .before(&serde_json::json!({"status": t.status(now).as_str()}))
        .after(&serde_json::json!({"review": review.as_str(), "reason": review.reason()}));
    let stored = store.review_template(t.id, t.version, &review, actor, now);
    Ok(audit::change(change, stored).await?)
}

/// Aborts a template. `by_merchant`: the request comes from its merchant, who may not stop
/// an enrollment while its activity is frozen.
pub async fn abort_template(
    store: &dyn Store,
    t: &Template,
    by_merchant: bool,
    now: Timestamp,
    freeze: Duration,
) -> Result<Template, CampaignError> {
    let merchant_activity = match (t.spec.activity_id, by_merchant) {
        (Some(activity), true) => Some(store.activity(activity).await?.status(now, freeze)),
        _ => None,
    };
    t.check_abortable(now, merchant_activity)?;
    let aborted = Template {
        aborted_at: Some(now),
        ..t.clone()
    };
    let change = status_change("template.abort", t, &aborted, now);
    Ok(audit::change(change, store.abort_template(t.id, t.version, now)).await?)
}
