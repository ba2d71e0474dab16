//! The stock under concurrent batches of mixed sizes: on PostgreSQL it is split into shards,
//! and a batch that fits no shard runs in exact mode; every backend must end the same way.

use std::sync::Arc;

use super::{claimable, req, tally};
use crate::events::kind;
use crate::testing::fixtures::at;
use crate::{ClaimOutcome, ClaimRequest, Store};

/// 40 concurrent batches of 1 to 3 users (79 claims) for 37 coupons: exactly 37 issued, so no
/// stock is left stranded in a shard while claims are answered `sold_out`; `template.sold_out`
/// written once, with the stock; the audit clean; a later claim sold out.
pub async fn stock_runs_out_everywhere_before_sold_out(s: Arc<dyn Store>) {
    let t = claimable(&s, 37, 1).await;
    let mut joins = vec![];
    for b in 0..40 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            let batch: Vec<ClaimRequest> = (0..=b % 3).map(|i| req(&format!("s{b}-{i}"))).collect();
            s.claim_batch(t.id, &batch, at(15)).await.unwrap()
        }));
    }
    let mut all = vec![];
    for j in joins {
        all.extend(j.await.unwrap());
    }
    assert_eq!(all.len(), 79);
    assert_eq!(tally(&all), (37, 42, 0, 0));
    assert_eq!(s.template(t.id).await.unwrap().claimed, 37);
    let audit = s.inspect().audit_template(t.id).await.unwrap();
    assert_eq!((audit.coupons, audit.claimed), (37, 37));
    assert!(audit.violations().is_empty(), "{audit:?}");
    let sold_out: Vec<_> = s
        .inspect()
        .events_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind::TEMPLATE_SOLD_OUT)
        .collect();
    assert_eq!(sold_out.len(), 1, "{sold_out:?}");
    assert_eq!(sold_out[0].body["total_stock"], 37);
    assert_eq!(sold_out[0].body["template_id"], t.id.get());
    let late = s.claim_batch(t.id, &[req("late")], at(16)).await.unwrap();
    assert_eq!(late, vec![ClaimOutcome::SoldOut]);
    assert!(s
        .audit(at(16), time::Duration::ZERO)
        .await
        .unwrap()
        .is_empty());
}

/// Chunks of one issuance job run at once (the worker's loop and a request finishing the same
/// job): each user of the job is issued exactly once, even with a per-user limit that would
/// allow a second coupon, and the job ends done with every user counted once.
pub async fn chunks_of_one_job_at_once_issue_each_user_once(s: Arc<dyn Store>) {
    let t = claimable(&s, 1_000, 5).await;
    let users: Vec<coupond_domain::UserId> = (0..60)
        .map(|i| coupond_domain::UserId::parse(&format!("bulk-{i}")).unwrap())
        .collect();
    let new = crate::NewIssuance {
        template: t.id,
        actor: &coupond_domain::Actor::Platform,
        users: &users,
        duplicates: 0,
        invalid: 0,
        invalid_lines: &[],
        key: None,
    };
    let (job, _) = s.insert_issuance(&new, at(1)).await.unwrap();
    let users = Arc::new(users);
    let mut joins = vec![];
    for _ in 0..4 {
        let (s, users) = (s.clone(), users.clone());
        joins.push(tokio::spawn(async move {
            for _ in 0..10 {
                s.issue_chunk(job.id, &users, 7, at(15)).await.unwrap();
            }
        }));
    }
    for j in joins {
        j.await.unwrap();
    }
    // Whatever is left (a backend may have answered `None` to a chunk another one held).
    for _ in 0..20 {
        if s.issuance(job.id).await.unwrap().state == crate::IssuanceState::Done {
            break;
        }
        s.issue_chunk(job.id, &users, 7, at(15)).await.unwrap();
    }
    let done = s.issuance(job.id).await.unwrap();
    assert_eq!(done.state, crate::IssuanceState::Done, "{done:?}");
    assert_eq!((done.next_user, done.issued, done.skipped), (60, 60, 0));
    let audit = s.inspect().audit_template(t.id).await.unwrap();
    assert_eq!((audit.coupons, audit.claimed), (60, 60));
    assert!(audit.violations().is_empty(), "{audit:?}");
}
