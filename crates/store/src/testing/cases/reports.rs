//! What reports count: coupons created and used since an instant, and how templates stand
//! now (claimable, low on stock, needing attention), per merchant or in all.

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

/// Claims `n` coupons of `t` for distinct users at 15:00.
async fn claim_n(s: &Arc<dyn Store>, t: &coupond_domain::Template, n: usize) {
    let reqs: Vec<_> = (0..n).map(|i| req(&format!("n{i}"))).collect();
    s.claim_batch(t.id, &reqs, at(15)).await.unwrap();
}

/// The home page's cards and attention list, counted by the database: claimable templates,
/// those under 5 % of their stock (the domain's `low_on_stock`), coupons claimed, per
/// merchant or in all; nothing claimable once the window closed.
pub async fn standing_counts_what_is_claimable_and_low(s: Arc<dyn Store>) {
    let plenty = claimable(&s, 100, 1).await;
    let gone = claimable(&s, 20, 1).await;
    let nearly = claimable(&s, 40, 1).await;
    claim_n(&s, &plenty, 3).await;
    claim_n(&s, &gone, 20).await;
    claim_n(&s, &nearly, 39).await;
    let all = s.standing(None, at(15)).await.unwrap();
    let expected = crate::Standing {
        claimable: 3,
        low_stock: 2,
        sold_out: 1,
        claimed: 62,
        used: 0,
    };
    assert_eq!(all, expected);
    for t in [&plenty, &gone, &nearly] {
        let read = s.template(t.id).await.unwrap();
        assert_eq!(read.low_on_stock(), t.id != plenty.id, "{read:?}");
    }
    let of_gone = s.standing(gone.merchant_id, at(15)).await.unwrap();
    assert_eq!(
        (of_gone.claimable, of_gone.low_stock, of_gone.claimed),
        (1, 1, 20)
    );
    let closed = s.standing(None, at(25)).await.unwrap();
    assert_eq!(
        (closed.claimable, closed.low_stock, closed.claimed),
        (0, 0, 62)
    );

    let ids = |v: Vec<coupond_domain::Template>| v.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let low = s.needing_attention(None, at(15), at(15), 10).await.unwrap();
    assert_eq!(ids(low), [gone.id, nearly.id]);
    let expiring = s
        .needing_attention(None, at(15), at(10_000), 10)
        .await
        .unwrap();
    assert_eq!(ids(expiring), [plenty.id, gone.id, nearly.id]);
    let first = s.needing_attention(None, at(15), at(15), 1).await.unwrap();
    assert_eq!(ids(first), [gone.id]);
    let of_plenty = s
        .needing_attention(plenty.merchant_id, at(15), at(15), 10)
        .await
        .unwrap();
    assert!(of_plenty.is_empty(), "{of_plenty:?}");
    assert!(s
        .needing_attention(None, at(25), at(10_000), 10)
        .await
        .unwrap()
        .is_empty());
}
