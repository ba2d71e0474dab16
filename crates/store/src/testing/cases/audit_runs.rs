//! The self-audit's runs on every backend: a scheduled slot is queued once; runs start oldest
//! first, one at a time, and a run left running by a dead instance is started again once
//! stale; a run finishes once, with its findings kept as they were found and, when it found
//! any, one `audit.failed` event; runs list newest first, paged; the last run is the one that
//! finished its checks last.

use super::*;
use crate::audit_runs::{AuditTrigger, Finding, RunEnd};
use crate::events::kind;

fn finding(check: &str, subject: &str) -> Finding {
    Finding {
        check: check.into(),
        subject: subject.into(),
        detail: "counter 2, coupons 1".into(),
    }
}

async fn failed_events(s: &Arc<dyn Store>) -> Vec<serde_json::Value> {
    s.inspect()
        .events_after(0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind::AUDIT_FAILED)
        .map(|e| e.body)
        .collect()
}

pub async fn audit_runs_queue_once_and_keep_their_findings(s: Arc<dyn Store>) {
    assert_eq!(s.last_audit_run().await.unwrap(), None);
    // A day's slot is queued once, whoever asks.
    let scheduled = s
        .queue_audit_run(AuditTrigger::Scheduled, Some(at(4)), at(4))
        .await
        .unwrap()
        .expect("the slot is new");
    assert_eq!(
        (scheduled.trigger, scheduled.slot, scheduled.started_at),
        (AuditTrigger::Scheduled, Some(at(4)), None)
    );
    assert_eq!(
        s.queue_audit_run(AuditTrigger::Scheduled, Some(at(4)), at(4))
            .await
            .unwrap(),
        None
    );
    let manual = s
        .queue_audit_run(AuditTrigger::Manual, None, at(5))
        .await
        .unwrap()
        .unwrap();

    // Oldest first; a started run is not started again until it is stale.
    let first = s.start_audit_run(at(0), at(6)).await.unwrap().unwrap();
    assert_eq!((first.id, first.started_at), (scheduled.id, Some(at(6))));
    let second = s.start_audit_run(at(0), at(6)).await.unwrap().unwrap();
    assert_eq!(second.id, manual.id);
    assert_eq!(s.start_audit_run(at(0), at(6)).await.unwrap(), None);
    let again = s.start_audit_run(at(7), at(8)).await.unwrap().unwrap();
    assert_eq!(
        (again.id, again.started_at),
        (scheduled.id, Some(at(8))),
        "its instance died: started again"
    );

    // Finished once: a clean run writes no event; findings are kept and announced once.
    let clean = s
        .finish_audit_run(scheduled.id, RunEnd::Checked(&[]), at(9))
        .await
        .unwrap();
    assert_eq!(
        (clean.finished_at, clean.violations, clean.findings.len()),
        (Some(at(9)), Some(0), 0)
    );
    let found = [
        finding("holdings", "template 3 user u-1"),
        finding("log", "coupon 7"),
    ];
    let broken = s
        .finish_audit_run(manual.id, RunEnd::Checked(&found), at(10))
        .await
        .unwrap();
    assert_eq!(
        (broken.violations, &broken.findings[..]),
        (Some(2), &found[..])
    );
    let late = s
        .finish_audit_run(manual.id, RunEnd::Checked(&[]), at(11))
        .await
        .unwrap();
    assert_eq!(late, broken, "finished already: answered as it is");
    let events = failed_events(&s).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (
            &events[0]["run_id"],
            &events[0]["violations"],
            &events[0]["checks"]
        ),
        (
            &serde_json::json!(manual.id),
            &serde_json::json!(2),
            &serde_json::json!(["holdings", "log"])
        )
    );

    // A run the database stopped keeps why.
    let third = s
        .queue_audit_run(AuditTrigger::Manual, None, at(12))
        .await
        .unwrap()
        .unwrap();
    s.start_audit_run(at(0), at(12)).await.unwrap().unwrap();
    let failed = s
        .finish_audit_run(third.id, RunEnd::Failed("the database went away"), at(13))
        .await
        .unwrap();
    assert_eq!(
        (failed.violations, failed.error.as_deref()),
        (None, Some("the database went away"))
    );
    assert_eq!(failed_events(&s).await.len(), 1);

    // Newest first, paged by id; the last run is the last to finish its checks.
    let all = s.audit_runs(None, 10).await.unwrap();
    let ids: Vec<i64> = all.iter().map(|r| r.id).collect();
    assert_eq!(ids, [third.id, manual.id, scheduled.id]);
    let next = s.audit_runs(Some(manual.id), 10).await.unwrap();
    assert_eq!(
        next.iter().map(|r| r.id).collect::<Vec<_>>(),
        [scheduled.id]
    );
    assert_eq!(s.last_audit_run().await.unwrap(), Some(broken));
}
