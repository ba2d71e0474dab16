//! The platform's decision on a template enrolled in an activity, by email to the merchant's
//! operators (enabled accounts, owners and staff alike): approved, or rejected with the
//! reason. A service message: sent whatever anyone chose, in the default locale (operators
//! keep no locale), each keyed by its event and operator, so a redelivered batch sends
//! nothing twice.

use std::sync::Arc;

use coupond_domain::messaging::{Channel, MessageKind, Vars};
use coupond_domain::{ActivityId, MerchantId, TemplateId, Timestamp};
use coupond_store::events::kind;
use coupond_store::{Event, NewOutbound, Store, StoreResult};

use super::{MessagingRules, Texts};

/// The most operators of one merchant told of a decision.
const MAX_OPERATORS: u32 = 200;

/// One decision to tell.
struct Decision {
    event_id: i64,
    kind: MessageKind,
    merchant: MerchantId,
    template: TemplateId,
    activity: ActivityId,
    reason: Option<String>,
}

fn decision(e: &Event) -> Option<Decision> {
    let kind = match e.kind.as_str() {
        kind::TEMPLATE_APPROVED => MessageKind::EnrollmentApproved,
        kind::TEMPLATE_REJECTED => MessageKind::EnrollmentRejected,
        _ => return None,
    };
    let b = &e.body;
    Some(Decision {
        event_id: e.id,
        kind,
        merchant: MerchantId::new(b.get("merchant_id")?.as_i64()?).ok()?,
        template: TemplateId::new(b.get("template_id")?.as_i64()?).ok()?,
        // A standalone template's review is no enrollment.
        activity: ActivityId::new(b.get("activity_id")?.as_i64()?).ok()?,
        reason: b.get("reason").and_then(|v| v.as_str()).map(str::to_owned),
    })
}

/// The emails of the enrollment decisions among `events`, where email is configured and
/// carries their kind.
pub(super) async fn decisions(
    store: &Arc<dyn Store>,
    rules: &MessagingRules,
    events: &[Event],
    now: Timestamp,
) -> StoreResult<Vec<NewOutbound>> {
    let Some(email) = rules.channel(Channel::Email) else {
        return Ok(Vec::new());
    };
    let found: Vec<Decision> = events
        .iter()
        .filter_map(decision)
        .filter(|d| email.kinds.contains(&d.kind))
        .collect();
    let mut out = Vec::new();
    if found.is_empty() {
        return Ok(out);
    }
    let texts = Texts::load(store, &rules.readers.locale).await?;
    for d in found {
        let operators = store
            .list_operators(Some(d.merchant), None, MAX_OPERATORS)
            .await?;
        let template = store.templates_by_ids(&[d.template]).await?;
        let activity = store.activity(d.activity).await.ok();
        let (text, _) = texts.pick(d.kind, None);
        let mut vars = Vars::new();
        if let Some(t) = template.first() {
            vars.insert("title", t.spec.title.clone());
        }
        if let Some(a) = activity {
            vars.insert("activity", a.spec.title.clone());
        }
        if let Some(r) = d.reason {
            vars.insert("reason", r);
        }
        let filled = text.render(&vars);
        for op in operators.iter().filter(|o| o.disabled_at.is_none()) {
            out.push(NewOutbound {
                channel: Channel::Email,
                key: format!("event:{}:operator:{}", d.event_id, op.id),
                user_id: None,
                kind: d.kind,
                address: op.email.as_str().to_owned(),
                zone: rules.readers.zone,
                subject: filled.subject.clone(),
                body: filled.body.clone(),
                due_at: now,
            });
        }
    }
    Ok(out)
}
