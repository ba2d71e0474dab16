//! Steering: a pause racing claim batches (nothing commits after it), a resume, and a live
//! stock lowered to what is claimed, never below.

use super::*;
use coupond_domain::{Actor, Pause, PauseScope};

fn pause_at(hour: i64) -> Pause {
    Pause {
        at: at(hour),
        reason: None,
        scope: PauseScope::Template,
    }
}

/// Claim batches of distinct users race a pause: every batch either committed whole before
/// the pause or was refused whole after it, and after the pause no claim is issued until the
/// resume. `claimed` equals the coupons either way.
pub async fn a_pause_holds_claims_until_resumed(s: Arc<dyn Store>) {
    let t = claimable(&s, 10_000, 1).await;
    let racers: Vec<_> = (0..8)
        .map(|b| {
            let s = s.clone();
            tokio::spawn(async move {
                let mut issued = 0;
                for round in 0..10 {
                    let batch: Vec<ClaimRequest> =
                        (0..5).map(|i| req(&format!("u{b}-{round}-{i}"))).collect();
                    let out = s.claim_batch(t.id, &batch, at(15)).await.unwrap();
                    let (n, ..) = tally(&out);
                    assert!(n == 0 || n == 5, "a batch is whole or refused: {out:?}");
                    issued += n;
                }
                issued
            })
        })
        .collect();
    let platform = Actor::Platform;
    let paused = s
        .set_template_pause(t.id, t.version, Some(&pause_at(15)), &platform, at(15))
        .await
        .unwrap();
    assert!(paused.is_paused());
    let after = s.claim_batch(t.id, &[req("late")], at(15)).await.unwrap();
    assert_eq!(after, vec![ClaimOutcome::NotClaimable]);
    let mut issued = 0;
    for r in racers {
        issued += r.await.unwrap();
    }
    let counted = s.template(t.id).await.unwrap().claimed as usize;
    assert_eq!(counted, issued);
    assert_eq!(
        s.inspect().count_coupons(t.id).await.unwrap() as usize,
        issued
    );
    let again = s.claim_batch(t.id, &[req("later")], at(16)).await.unwrap();
    assert_eq!(again, vec![ClaimOutcome::NotClaimable], "still paused");

    let resumed = s
        .set_template_pause(t.id, paused.version, None, &platform, at(16))
        .await
        .unwrap();
    assert!(!resumed.is_paused());
    let out = s.claim_batch(t.id, &[req("back")], at(16)).await.unwrap();
    assert!(matches!(out[0], ClaimOutcome::Issued(_)), "{out:?}");
    // A stale version is refused.
    let stale = s
        .set_template_pause(t.id, paused.version, Some(&pause_at(16)), &platform, at(16))
        .await;
    assert!(matches!(
        stale,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    assert!(s.audit(at(17), Duration::ZERO).await.unwrap().is_empty());
}

/// A live stock goes down to what is claimed, never below.
pub async fn a_live_stock_lowers_to_what_is_claimed(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 1).await;
    let batch: Vec<ClaimRequest> = (0..3).map(|i| req(&format!("u{i}"))).collect();
    s.claim_batch(t.id, &batch, at(15)).await.unwrap();
    let lower = |stock: i64| {
        let mut d = t.spec.draft().clone();
        d.total_stock = stock;
        coupond_domain::TemplateSpec::from_stored(d, t.spec.claim_window()).unwrap()
    };
    let below = s
        .update_template(t.id, t.version, None, &lower(2), None, at(15))
        .await;
    assert!(
        matches!(below, Err(StoreError::Conflict(Conflict::BelowClaimed(3)))),
        "{below:?}"
    );
    let t = s.template(t.id).await.unwrap();
    assert_eq!(t.spec.total_stock, 10, "nothing written");
    let down = s
        .update_template(t.id, t.version, None, &lower(3), None, at(15))
        .await
        .unwrap();
    assert_eq!((down.spec.total_stock, down.claimed), (3, 3));
    let out = s.claim_batch(t.id, &[req("late")], at(15)).await.unwrap();
    assert_eq!(out, vec![ClaimOutcome::SoldOut]);
    assert!(s.audit(at(16), Duration::ZERO).await.unwrap().is_empty());
}
