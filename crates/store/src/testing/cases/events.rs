//! The operation log and the outbox, written with the claims that cause them.

use std::sync::Arc;

use coupond_domain::{Actor, CouponStatus};

use super::{claimable, req, tally};
use crate::events::kind;
use crate::testing::fixtures::at;
use crate::{ClaimOutcome, ClaimRequest, Store};

/// Every issued coupon has one log row (created as unused, by whom) and one `coupon.claimed`
/// event; refused claims leave neither; selling out emits `template.sold_out` once.
pub async fn claims_write_the_log_and_the_outbox(s: Arc<dyn Store>) {
    let t = claimable(&s, 3, 1).await;
    let before = s.inspect().events_after(0, 1000).await.unwrap();
    assert!(
        before
            .iter()
            .all(|e| e.kind == kind::TEMPLATE_STATUS_CHANGED),
        "creating and publishing a template emits its status, no claim events: {before:?}"
    );
    let service = ClaimRequest {
        actor: Actor::Service,
        ..req("via-service")
    };
    let out = s
        .claim_batch(
            t.id,
            &[req("a"), req("a"), service, req("b"), req("c")],
            at(15),
        )
        .await
        .unwrap();
    assert_eq!(tally(&out), (3, 1, 1, 0));
    let issued: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            ClaimOutcome::Issued(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    for c in &issued {
        let h = s.coupon_history(c.id).await.unwrap();
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!((h[0].from, h[0].to), (None, CouponStatus::Unused));
        assert_eq!(
            (h[0].coupon_id, h[0].at, h[0].order_id.as_deref()),
            (c.id, at(15), None)
        );
        let want = if c.user_id.as_str() == "via-service" {
            Actor::Service
        } else {
            Actor::User(c.user_id.clone())
        };
        assert_eq!(h[0].actor, want);
        assert_eq!(s.coupon(c.id).await.unwrap(), *c);
    }
    let events = s.inspect().events_after(0, 1000).await.unwrap();
    let claimed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == kind::COUPON_CLAIMED)
        .collect();
    assert_eq!(claimed.len(), 3);
    let mut ids: Vec<i64> = claimed
        .iter()
        .map(|e| e.body["coupon_id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    let mut want: Vec<i64> = issued.iter().map(|c| c.id.get()).collect();
    want.sort_unstable();
    assert_eq!(ids, want);
    assert!(claimed
        .iter()
        .all(|e| e.body["template_id"] == t.id.get() && e.at == at(15)));
    let sold: Vec<_> = events
        .iter()
        .filter(|e| e.kind == kind::TEMPLATE_SOLD_OUT)
        .collect();
    assert_eq!(sold.len(), 1);
    assert_eq!(sold[0].body["total_stock"], 3);
    assert!(
        events.windows(2).all(|w| w[0].id < w[1].id),
        "events come in id order"
    );
    // Paging through the outbox.
    let first = s.inspect().events_after(0, 2).await.unwrap();
    assert_eq!(first.len(), 2);
    let rest = s.inspect().events_after(first[1].id, 100).await.unwrap();
    assert_eq!(rest.len(), events.len() - 2);

    // Sold out now: nothing more is written.
    let again = s.claim_batch(t.id, &[req("d")], at(16)).await.unwrap();
    assert_eq!(again, vec![ClaimOutcome::SoldOut]);
    assert_eq!(
        s.inspect().events_after(0, 1000).await.unwrap().len(),
        events.len()
    );
    assert!(matches!(
        s.coupon(coupond_domain::CouponId::new(999_999).unwrap())
            .await,
        Err(crate::StoreError::NotFound)
    ));
}

/// Concurrent batches racing for the last coupons: the log and the outbox hold exactly one row
/// per issued coupon and one sold-out event, whatever was trimmed.
pub async fn trimmed_batches_leave_no_events(s: Arc<dyn Store>) {
    let t = claimable(&s, 25, 1).await;
    let mut joins = vec![];
    for b in 0..10 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            let batch: Vec<ClaimRequest> = (0..8).map(|i| req(&format!("t{b}-{i}"))).collect();
            s.claim_batch(t.id, &batch, at(15)).await.unwrap()
        }));
    }
    let mut all = vec![];
    for j in joins {
        all.extend(j.await.unwrap());
    }
    assert_eq!(tally(&all), (25, 55, 0, 0));
    let events = s.inspect().events_after(0, 1000).await.unwrap();
    let count = |k: &str| events.iter().filter(|e| e.kind == k).count();
    assert_eq!(
        (count(kind::COUPON_CLAIMED), count(kind::TEMPLATE_SOLD_OUT)),
        (25, 1)
    );
    for o in &all {
        if let ClaimOutcome::Issued(c) = o {
            assert_eq!(s.coupon_history(c.id).await.unwrap().len(), 1);
        }
    }
    let audit = s.inspect().audit_template(t.id).await.unwrap();
    assert!(audit.violations().is_empty(), "{audit:?}");
}
