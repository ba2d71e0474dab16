//! What reports count: coupons created and used since an instant, per merchant or in all.

use std::sync::Arc;

use super::*;

/// Claims before and after the instant; only those after count, and one merchant's count
/// leaves the other's out.
pub async fn since_counts_coupons_of_the_period_and_the_merchant(s: Arc<dyn Store>) {
    let a = claimable(&s, 100, 5).await;
    let b = claimable(&s, 100, 5).await;
    s.claim_batch(a.id, &[req("early")], at(11)).await.unwrap();
    s.claim_batch(a.id, &[req("u1"), req("u2")], at(15))
        .await
        .unwrap();
    s.claim_batch(b.id, &[req("u3")], at(16)).await.unwrap();
    let all = s.since(None, at(12)).await.unwrap();
    assert_eq!((all.claimed, all.used), (3, 0), "{all:?}");
    let of_a = s.since(a.merchant_id, at(12)).await.unwrap();
    assert_eq!(of_a.claimed, 2, "{of_a:?}");
    let of_b = s.since(b.merchant_id, at(12)).await.unwrap();
    assert_eq!(of_b.claimed, 1, "{of_b:?}");
    let later = s.since(None, at(17)).await.unwrap();
    assert_eq!(later, crate::Since::default());
    assert_eq!(s.since(None, at(0)).await.unwrap().claimed, 4);
}
