//! Steering live campaigns: pause and resume a template or an activity (claims, codes and
//! bulk issuance wait; claimed coupons stay usable), stop a template's claiming for good
//! (coupons keep their validity). The rules are the domain's (`steering`); each change is
//! written with its events and recorded in the audit trail.

use coupond_domain::{Activity, Actor, Note, Pause, PauseScope, Template, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::{Store, TemplateEdit};
use serde_json::json;
use time::Duration;

use crate::campaigns::template_change;
use crate::CampaignError;

fn pause_json(p: Option<&Pause>) -> serde_json::Value {
    match p {
        Some(p) => json!({"paused": true, "reason": p.reason.as_ref().map(Note::as_str)}),
        None => json!({"paused": false}),
    }
}

/// Pauses a template (as the caller read it), with an optional reason.
pub async fn pause_template(
    store: &dyn Store,
    t: &Template,
    reason: Option<Note>,
    actor: &Actor,
    now: Timestamp,
) -> Result<Template, CampaignError> {
    t.check_pausable(now)?;
    let pause = Pause {
        at: now,
        reason,
        scope: PauseScope::Template,
    };
    let change = template_change("template.pause", t, now)
        .before(&pause_json(None))
        .after(&pause_json(Some(&pause)));
    let write = store.set_template_pause(t.id, t.version, Some(&pause), actor, now);
    Ok(audit::change(change, write).await?)
}

/// Resumes a template paused itself (one paused with its activity resumes with it).
pub async fn resume_template(
    store: &dyn Store,
    t: &Template,
    actor: &Actor,
    now: Timestamp,
) -> Result<Template, CampaignError> {
    t.check_resumable()?;
    let change = template_change("template.resume", t, now)
        .before(&pause_json(t.pause.as_ref()))
        .after(&pause_json(None));
    let write = store.set_template_pause(t.id, t.version, None, actor, now);
    Ok(audit::change(change, write).await?)
}

/// Ends an active template's claiming now, for good; coupons claimed stay valid until their
/// own end (abort is what voids).
pub async fn stop_template(
    store: &dyn Store,
    t: &Template,
    actor: &Actor,
    now: Timestamp,
) -> Result<Template, CampaignError> {
    let spec = t.stopped_spec(now)?;
    let (from, to) = (t.spec.claim_window().end, spec.claim_window().end);
    let changes = json!({"claim_window.end": {"from": from, "to": to}});
    let edit = TemplateEdit {
        actor,
        changes: &changes,
        coupons_until: None,
        review: t.review.clone(),
    };
    let change = template_change("template.stop", t, now)
        .before(&json!({"status": t.status(now).as_str(), "claim_end": from}))
        .after(&json!({"status": "ended", "claim_end": to}));
    let write = store.stop_template(t.id, t.version, &spec, edit, now);
    Ok(audit::change(change, write).await?)
}

fn activity_change(action: &'static str, a: &Activity, now: Timestamp) -> Change {
    Change::new(action, "activity", now).object(a.id.get())
}

/// Pauses an activity (as the caller read it) and every template in it not paused itself.
pub async fn pause_activity(
    store: &dyn Store,
    a: &Activity,
    reason: Option<Note>,
    actor: &Actor,
    now: Timestamp,
    freeze: Duration,
) -> Result<Activity, CampaignError> {
    a.check_pausable(now, freeze)?;
    let pause = Pause {
        at: now,
        reason,
        scope: PauseScope::Template,
    };
    let change = activity_change("activity.pause", a, now)
        .before(&pause_json(None))
        .after(&pause_json(Some(&pause)));
    let write = store.set_activity_pause(a.id, a.version, Some(&pause), actor, now);
    Ok(audit::change(change, write).await?)
}

/// Resumes a paused activity and the templates its pause paused.
pub async fn resume_activity(
    store: &dyn Store,
    a: &Activity,
    actor: &Actor,
    now: Timestamp,
) -> Result<Activity, CampaignError> {
    a.check_resumable()?;
    let change = activity_change("activity.resume", a, now)
        .before(&pause_json(a.pause.as_ref()))
        .after(&pause_json(None));
    let write = store.set_activity_pause(a.id, a.version, None, actor, now);
    Ok(audit::change(change, write).await?)
}
