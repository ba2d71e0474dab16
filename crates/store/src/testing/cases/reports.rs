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

/// Orders paid without a coupon: recorded once per order id (the same request answers the
/// same order, another conflicts, and so does a lock of the id), and counted by the hour they
/// were recorded, the platform's or one merchant's.
pub async fn orders_without_a_coupon_are_recorded_once(s: Arc<dyn Store>) {
    use super::checkout::{accept, lock_req, oid};
    use crate::{Baseline, FiguresQuery, LockOutcome, PlainOrder, RecordOutcome};
    use coupond_domain::{MerchantId, UserId};

    let user = UserId::parse("buyer").unwrap();
    let (m1, m2) = (MerchantId::new(1).unwrap(), MerchantId::new(2).unwrap());
    let answer = serde_json::json!({"discount": 0});
    let ids = [oid("p-1"), oid("p-2"), oid("p-3")];
    let plain = |i: usize, merchant, subtotal: i64, hour: i64| PlainOrder {
        order_id: &ids[i],
        user: &user,
        merchant,
        subtotal: Money::new(subtotal).unwrap(),
        currency: "CNY",
        fingerprint: [i as u8; 32],
        answer: &answer,
        now: at(hour),
    };
    for (i, merchant, subtotal, hour) in [
        (0, Some(m1), 400, 10),
        (1, None, 300, 10),
        (2, Some(m2), 90, 12),
    ] {
        match s
            .record_plain(&plain(i, merchant, subtotal, hour))
            .await
            .unwrap()
        {
            RecordOutcome::Recorded(o) => {
                assert_eq!(
                    (o.state, o.ended_at),
                    (crate::OrderState::Confirmed, Some(at(hour)))
                );
            }
            other => panic!("{other:?}"),
        }
    }
    let again = s.record_plain(&plain(0, Some(m1), 400, 11)).await.unwrap();
    assert!(matches!(again, RecordOutcome::Recorded(o) if o.created_at == at(10)));
    let mut other = plain(0, Some(m1), 500, 11);
    other.fingerprint = [9; 32];
    assert_eq!(
        s.record_plain(&other).await.unwrap(),
        RecordOutcome::OrderConflict
    );
    let t = claimable(&s, 10, 5).await;
    let c = super::checkout::coupons(&s, &t, "buyer", 1).await;
    let coupon = [c[0].id];
    let rules = accept("buyer", coupon.to_vec(), 100);
    let lock = s
        .lock_order(&lock_req(&ids[1], &user, &coupon, 7, 11), &rules)
        .await
        .unwrap();
    assert_eq!(lock, LockOutcome::OrderConflict);

    let count = |baseline, from: i64, to: i64| {
        let s = s.clone();
        async move {
            let q = FiguresQuery {
                templates: &[],
                baseline,
                from: at(from),
                to: at(to),
                now: at(20),
            };
            let f = s.figures(&q).await.unwrap();
            let mut hours = f.without;
            hours.sort_by_key(|h| h.hour);
            hours
                .iter()
                .map(|h| (h.orders, h.order_value))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(count(Baseline::Platform, 0, 20).await, [(2, 700), (1, 90)]);
    assert_eq!(count(Baseline::Merchant(m1), 0, 20).await, [(1, 400)]);
    assert_eq!(count(Baseline::Merchant(m2), 11, 13).await, [(1, 90)]);
    assert!(count(Baseline::Platform, 11, 12).await.is_empty());
}
