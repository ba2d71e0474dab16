//! The lifecycle after creation: revokes, refunds (under both policies), the template
//! history, deletions. Each case ends with a clean audit (I1-I3 hold through it).

use std::sync::Arc;

use coupond_domain::{Actor, CouponId, CouponStatus, ListingDraft, RefundPolicy, UserId};

use super::checkout::{accept, coupons, lock_req, oid};
use super::claims::claimable;
use crate::events::kind;
use crate::testing::fixtures::{
    at, claimable_template_with, merchant, spec, standalone_template, t0,
};
use crate::{
    Deleted, NewTemplate, OrderState, OrderStep, RefundRequest, RefundStep, RevokeStep, Store,
    StoreError,
};

const GRACE: time::Duration = time::Duration::minutes(1);

fn count(events: &[crate::Event], k: &str) -> usize {
    events.iter().filter(|e| e.kind == k).count()
}

/// Unused and locked coupons are revoked for good: logged with the reason, announced; a
/// locked one's reservation goes back and its order cannot confirm; used ones are refused.
pub async fn revokes_end_a_coupon_for_good(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 5).await;
    let held = coupons(&s, &t, "holder", 3).await;
    let ids: Vec<CouponId> = held.iter().map(|c| c.id).collect();
    let user = UserId::parse("holder").unwrap();
    let step = s
        .revoke_coupon(ids[0], "issued by mistake", &Actor::Platform, at(15))
        .await
        .unwrap();
    let RevokeStep::Done(c) = step else {
        panic!("{step:?}")
    };
    assert_eq!(c.stored_status, CouponStatus::Revoked);
    let stored = s.coupon(ids[0]).await.unwrap();
    assert_eq!(stored.stored_status, CouponStatus::Revoked);
    let log = s.coupon_history(ids[0]).await.unwrap();
    let last = log.last().unwrap();
    assert_eq!(
        (last.from, last.to, last.reason.as_deref(), &last.actor),
        (
            Some(CouponStatus::Unused),
            CouponStatus::Revoked,
            Some("issued by mistake"),
            &Actor::Platform
        )
    );
    let again = s.revoke_coupon(ids[0], "x", &Actor::Platform, at(15)).await;
    assert!(matches!(again, Ok(RevokeStep::Already(_))), "{again:?}");

    let order = oid("o-revoked");
    let rules = accept("holder", ids[1..2].to_vec(), 300);
    s.lock_order(&lock_req(&order, &user, &ids[1..2], 1, 15), &rules)
        .await
        .unwrap();
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 300);
    let step = s.revoke_coupon(ids[1], "chargeback", &Actor::Platform, at(15));
    assert!(matches!(step.await, Ok(RevokeStep::Done(_))));
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 0);
    assert_eq!(s.audit(at(15), GRACE).await.unwrap(), vec![]);
    let confirm = s.confirm_order(&order, &Actor::Service, at(15)).await;
    assert_eq!(confirm.unwrap(), OrderStep::Revoked(vec![ids[1]]));
    assert_eq!(s.order(&order).await.unwrap().state, OrderState::Locked);
    let cancel = s.cancel_order(&order, &Actor::Service, at(15)).await;
    assert!(matches!(cancel, Ok(OrderStep::Done(_))), "{cancel:?}");
    let c1 = s.coupon(ids[1]).await.unwrap();
    assert_eq!(c1.stored_status, CouponStatus::Revoked);

    let used = oid("o-used");
    let rules = accept("holder", ids[2..3].to_vec(), 100);
    s.lock_order(&lock_req(&used, &user, &ids[2..3], 1, 15), &rules)
        .await
        .unwrap();
    s.confirm_order(&used, &Actor::Service, at(15))
        .await
        .unwrap();
    let step = s
        .revoke_coupon(ids[2], "late", &Actor::Platform, at(15))
        .await;
    assert!(matches!(step, Ok(RevokeStep::WrongState(_))), "{step:?}");
    let missing = CouponId::new(999_999).unwrap();
    let step = s
        .revoke_coupon(missing, "x", &Actor::Platform, at(15))
        .await;
    assert!(matches!(step, Err(StoreError::NotFound)), "{step:?}");

    let events = s.inspect().events_after(0, 1000).await.unwrap();
    assert_eq!(count(&events, kind::COUPON_REVOKED), 2);
    assert_eq!(s.audit(at(15), GRACE).await.unwrap(), vec![]);
    assert_eq!(s.audit(at(100), GRACE).await.unwrap(), vec![]);
}

/// Uses `n` coupons of a fresh template (its draft changed by `f`) in one confirmed order,
/// 100 off each.
async fn used_order(
    s: &Arc<dyn Store>,
    order: &str,
    n: usize,
    policy: RefundPolicy,
) -> (coupond_domain::Template, Vec<CouponId>) {
    let t = claimable_template_with(s.as_ref(), 10, 5, |d| d.refund_policy = policy).await;
    let held = coupons(s, &t, "buyer", n).await;
    let ids: Vec<CouponId> = held.iter().map(|c| c.id).collect();
    let (order, user) = (oid(order), UserId::parse("buyer").unwrap());
    let rules = accept("buyer", ids.clone(), 100);
    s.lock_order(&lock_req(&order, &user, &ids, 1, 15), &rules)
        .await
        .unwrap();
    let step = s.confirm_order(&order, &Actor::Service, at(15)).await;
    assert!(matches!(step, Ok(OrderStep::Done(_))), "{step:?}");
    (t, ids)
}

fn refund<'a>(
    order: &'a coupond_domain::OrderId,
    coupons: Option<&'a [CouponId]>,
    hour: i64,
) -> RefundRequest<'a> {
    RefundRequest {
        order_id: order,
        coupons,
        reason: Some("returned"),
        actor: &Actor::Service,
        now: at(hour),
    }
}

/// A partial refund, its repeat, the rest, and a coupon the order never used; the budget
/// used and the report follow; the coupons go back to their user.
pub async fn refunds_return_coupons(s: Arc<dyn Store>) {
    let (t, ids) = used_order(&s, "o-refund", 3, RefundPolicy::Return).await;
    let order = oid("o-refund");
    let step = s.refund_order(&refund(&order, Some(&ids[..1]), 16)).await;
    let Ok(RefundStep::Done { refunds, .. }) = step else {
        panic!("{step:?}")
    };
    assert_eq!(refunds.len(), 1);
    let (r, new) = &refunds[0];
    assert!(*new);
    assert_eq!(
        (r.coupon_id, r.discount.minor(), r.to, r.used_at, r.at),
        (ids[0], 100, CouponStatus::Unused, at(15), at(16))
    );
    let t2 = s.template(t.id).await.unwrap();
    assert_eq!((t2.used, t2.given.minor()), (2, 200));
    let c = s.coupon(ids[0]).await.unwrap();
    assert_eq!(
        (c.stored_status, c.order_id, c.used_at, c.discount),
        (CouponStatus::Unused, None, None, None)
    );
    let last = s.coupon_history(ids[0]).await.unwrap().pop().unwrap();
    assert_eq!(
        (
            last.from,
            last.to,
            last.order_id.as_deref(),
            last.reason.as_deref()
        ),
        (
            Some(CouponStatus::Used),
            CouponStatus::Unused,
            Some("o-refund"),
            Some("returned")
        )
    );
    // Again: the same refund, not a second one.
    let again = s.refund_order(&refund(&order, Some(&ids[..1]), 17)).await;
    let Ok(RefundStep::Done { refunds, .. }) = again else {
        panic!("{again:?}")
    };
    assert_eq!((refunds.len(), refunds[0].1), (1, false));
    // A coupon the order never used: refused, nothing changed.
    let stranger = CouponId::new(999_999).unwrap();
    let step = s
        .refund_order(&refund(&order, Some(&[ids[1], stranger]), 17))
        .await;
    assert_eq!(step.unwrap(), RefundStep::NotInOrder(vec![stranger]));
    assert_eq!(s.template(t.id).await.unwrap().used, 2);
    // Everything: the two left, the first answered as it was. Past its validity (hour 63),
    // a coupon goes back expired.
    let all = s.refund_order(&refund(&order, None, 70)).await;
    let Ok(RefundStep::Done { refunds, .. }) = all else {
        panic!("{all:?}")
    };
    let summary: Vec<_> = refunds
        .iter()
        .map(|(r, new)| (r.coupon_id, r.to, *new))
        .collect();
    assert_eq!(
        summary,
        vec![
            (ids[0], CouponStatus::Unused, false),
            (ids[1], CouponStatus::Expired, true),
            (ids[2], CouponStatus::Expired, true),
        ]
    );
    let t3 = s.template(t.id).await.unwrap();
    assert_eq!((t3.used, t3.given.minor()), (0, 0));
    // The report: three uses at hour 15, one refund at 16 and two at 70.
    let usage = s.usage_between(at(15), at(16)).await.unwrap();
    assert_eq!(
        (usage[0].used, usage[0].discount, usage[0].refunded),
        (3, 300, 0)
    );
    let usage = s.usage_between(at(16), at(71)).await.unwrap();
    assert_eq!(
        (usage[0].used, usage[0].refunded, usage[0].refunded_discount),
        (0, 3, 300)
    );
    let events = s.inspect().events_after(0, 1000).await.unwrap();
    assert_eq!(count(&events, kind::COUPON_REFUNDED), 3);
    assert_eq!(s.audit(at(70), GRACE).await.unwrap(), vec![]);
    // A returned coupon is used again in another order, and refunded again there.
    let again = oid("o-again");
    let user = UserId::parse("buyer").unwrap();
    let rules = accept("buyer", ids[..1].to_vec(), 50);
    s.lock_order(&lock_req(&again, &user, &ids[..1], 1, 20), &rules)
        .await
        .unwrap();
    s.confirm_order(&again, &Actor::Service, at(20))
        .await
        .unwrap();
    let step = s.refund_order(&refund(&again, None, 21)).await;
    assert!(matches!(step, Ok(RefundStep::Done { .. })), "{step:?}");
    assert_eq!(s.audit(at(70), GRACE).await.unwrap(), vec![]);
}

/// Under `void` refunds revoke the coupons; orders that are not confirmed are refused;
/// unknown orders are not found.
pub async fn refunds_void_coupons_and_refuse_open_orders(s: Arc<dyn Store>) {
    let (t, ids) = used_order(&s, "o-void", 2, RefundPolicy::Void).await;
    let order = oid("o-void");
    let step = s.refund_order(&refund(&order, None, 16)).await;
    let Ok(RefundStep::Done { refunds, .. }) = step else {
        panic!("{step:?}")
    };
    assert!(refunds
        .iter()
        .all(|(r, new)| r.to == CouponStatus::Revoked && *new));
    for id in &ids {
        assert_eq!(
            s.coupon(*id).await.unwrap().stored_status,
            CouponStatus::Revoked
        );
    }
    let t2 = s.template(t.id).await.unwrap();
    assert_eq!((t2.used, t2.given.minor()), (0, 0));
    let held = coupons(&s, &t, "other", 1).await;
    let open = oid("o-open");
    let user = UserId::parse("other").unwrap();
    let rules = accept("other", vec![held[0].id], 100);
    s.lock_order(&lock_req(&open, &user, &[held[0].id], 1, 15), &rules)
        .await
        .unwrap();
    let step = s.refund_order(&refund(&open, None, 15)).await;
    assert!(matches!(step, Ok(RefundStep::WrongState(_))), "{step:?}");
    let step = s.refund_order(&refund(&oid("nobody"), None, 15)).await;
    assert!(matches!(step, Err(StoreError::NotFound)), "{step:?}");
    assert_eq!(s.audit(at(15), GRACE).await.unwrap(), vec![]);
}

/// Drafts are deleted with their bindings; published templates are kept; listings are
/// deleted with their bindings; template changes are kept in order.
pub async fn deletes_and_history(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("Del", &[1]), t0())
        .await
        .unwrap();
    let sp = spec(standalone_template(10, 20), &m, None, t0());
    let new = NewTemplate {
        merchant_id: Some(m.id),
        spec: &sp,
        activity_version: None,
        review: Default::default(),
    };
    let draft = s.insert_template(&new, t0()).await.unwrap();
    let listing = ListingDraft {
        external_id: None,
        city_id: coupond_domain::CityId::new(1).unwrap(),
        category_id: coupond_domain::CategoryId::new(4).unwrap(),
        title: "Flat".into(),
        price: coupond_domain::Money::new(1000).unwrap(),
        deposit: coupond_domain::Money::new(0).unwrap(),
    };
    let l = s.insert_listing(m.id, &listing, t0()).await.unwrap();
    assert!(s.bind(l.id, draft.id, 10, t0()).await.unwrap());
    assert_eq!(s.delete_template(draft.id).await.unwrap(), Deleted::Done);
    assert!(matches!(
        s.template(draft.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(s.listing_bindings(l.id).await.unwrap(), vec![]);
    assert!(matches!(
        s.delete_template(draft.id).await,
        Err(StoreError::NotFound)
    ));
    // The newest id, deleted, is never handed out again (issue 61 point 11): a system that
    // kept it, and the audit trail, would mix two objects.
    let next = s.insert_template(&new, t0()).await.unwrap();
    assert!(next.id > draft.id, "{} after {}", next.id, draft.id);
    assert_eq!(s.delete_template(next.id).await.unwrap(), Deleted::Done);

    let live = claimable(&s, 10, 1).await;
    assert!(live.id > next.id, "{} after {}", live.id, next.id);
    // The deleted draft's binding no longer counts against the listing's limit.
    assert!(s.bind(l.id, live.id, 1, t0()).await.unwrap());
    assert_eq!(s.delete_template(live.id).await.unwrap(), Deleted::InUse);
    let changes = serde_json::json!({"total_stock": {"from": 10, "to": 20}});
    let mut d = live.spec.draft().clone();
    d.total_stock = 20;
    let owner = s.merchant(live.merchant_id.unwrap()).await.unwrap();
    let raised = spec(d, &owner, None, t0());
    let change = crate::TemplateEdit {
        actor: &Actor::Platform,
        changes: &changes,
        coupons_until: None,
        review: Default::default(),
    };
    s.update_template(live.id, live.version, None, &raised, Some(change), at(12))
        .await
        .unwrap();
    let history = s.template_history(live.id).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (&history[0].actor, history[0].at, &history[0].changes),
        (&Actor::Platform, at(12), &changes)
    );
    let events = s.inspect().events_after(0, 1000).await.unwrap();
    assert_eq!(count(&events, kind::TEMPLATE_CHANGED), 1);

    let owner_id = live.merchant_id.unwrap();
    let l2 = s.insert_listing(owner_id, &listing, t0()).await.unwrap();
    assert!(s.bind(l2.id, live.id, 10, t0()).await.unwrap());
    s.delete_listing(l2.id).await.unwrap();
    assert!(matches!(s.listing(l2.id).await, Err(StoreError::NotFound)));
    let l3 = s.insert_listing(owner_id, &listing, t0()).await.unwrap();
    assert!(l3.id > l2.id, "listing {} after {}", l3.id, l2.id);
    assert!(matches!(
        s.delete_listing(l2.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(s.audit(at(15), GRACE).await.unwrap(), vec![]);
}

/// 16 refunds of one order at once give each coupon back once; a revoke racing a confirm of
/// the order holding the coupon: exactly one of them wins, and the other says so.
pub async fn refunds_and_revokes_race_once(s: Arc<dyn Store>) {
    let (t, ids) = used_order(&s, "o-race", 3, RefundPolicy::Return).await;
    let order = oid("o-race");
    let mut joins = Vec::new();
    for _ in 0..16 {
        let (s, order) = (s.clone(), order.clone());
        joins.push(tokio::spawn(async move {
            s.refund_order(&refund(&order, None, 16)).await
        }));
    }
    let mut new = 0;
    for j in joins {
        match j.await.unwrap() {
            Ok(RefundStep::Done { refunds, .. }) => {
                assert_eq!(refunds.len(), 3);
                new += refunds.iter().filter(|(_, n)| *n).count();
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(new, 3, "each coupon refunded once");
    let t2 = s.template(t.id).await.unwrap();
    assert_eq!((t2.used, t2.given.minor()), (0, 0));
    assert_eq!(s.audit(at(16), GRACE).await.unwrap(), vec![]);

    let user = UserId::parse("buyer").unwrap();
    for (i, id) in ids.iter().enumerate() {
        let order = oid(&format!("o-duel-{i}"));
        let rules = accept("buyer", vec![*id], 100);
        s.lock_order(&lock_req(&order, &user, &[*id], 1, 16), &rules)
            .await
            .unwrap();
        let (a, b) = (s.clone(), s.clone());
        let (o, id) = (order.clone(), *id);
        let confirm =
            tokio::spawn(async move { a.confirm_order(&o, &Actor::Service, at(16)).await });
        let revoke =
            tokio::spawn(
                async move { b.revoke_coupon(id, "duel", &Actor::Platform, at(16)).await },
            );
        let (c, r) = (
            confirm.await.unwrap().unwrap(),
            revoke.await.unwrap().unwrap(),
        );
        let status = s.coupon(id).await.unwrap().stored_status;
        match (&c, &r) {
            (OrderStep::Done(_), RevokeStep::WrongState(_)) => {
                assert_eq!(status, CouponStatus::Used)
            }
            (OrderStep::Revoked(v), RevokeStep::Done(_)) => {
                assert_eq!((v.as_slice(), status), (&[id][..], CouponStatus::Revoked));
                s.cancel_order(&order, &Actor::Service, at(16))
                    .await
                    .unwrap();
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(s.audit(at(16), GRACE).await.unwrap(), vec![]);
}
