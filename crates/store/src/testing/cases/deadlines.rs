//! Moving a lock's deadline later (`extend_order`): the order and its coupons move together
//! and the sweeper keeps to the new deadline; the same deadline again, an earlier one, or an
//! order no longer locked change nothing and record nothing in the audit trail; a lock past its
//! deadline is found ended.

use std::sync::Arc;

use coupond_domain::{Actor, CouponStatus, UserId};

use super::checkout::{accept, coupons, lock_req, oid};
use super::claimable;
use crate::audit::{self, AuditQuery, Change};
use crate::testing::fixtures::at;
use crate::{ExtendStep, LockOutcome, OrderState, OrderStep, Store, StoreError};

/// Extends `order` to hour `to` at hour `now`, as `audit::change` around it (as the engine
/// does).
async fn extend(s: &Arc<dyn Store>, order: &str, to: i64, now: i64) -> ExtendStep {
    let change = Change::new("order.extend", "order", at(now)).object_key(order);
    audit::change(change, s.extend_order(&oid(order), at(to), at(now)))
        .await
        .unwrap()
}

/// How many audit entries name `order`.
async fn entries(s: &Arc<dyn Store>, order: &str) -> usize {
    let q = AuditQuery {
        object: Some(format!("order:{order}")),
        limit: 50,
        ..AuditQuery::default()
    };
    s.audit_entries(&q).await.unwrap().len()
}

pub async fn lock_deadlines_move_later_only(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 3).await;
    let held = coupons(&s, &t, "buyer", 2).await;
    let user = UserId::parse("buyer").unwrap();
    let (one, two) = ([held[0].id], [held[1].id]);
    let lease = oid("lease-1");
    let locked = s
        .lock_order(
            &lock_req(&lease, &user, &one, 1, 15),
            &accept("buyer", one.to_vec(), 400),
        )
        .await
        .unwrap();
    assert!(matches!(locked, LockOutcome::Locked(_)), "{locked:?}");

    // Later: the order and its coupon move; nothing else changes.
    let ExtendStep::Done(moved) = extend(&s, "lease-1", 40, 15).await else {
        panic!("not moved")
    };
    assert_eq!((moved.state, moved.deadline), (OrderState::Locked, at(40)));
    assert_eq!(s.order(&lease).await.unwrap(), moved);
    let c = s.coupon(held[0].id).await.unwrap();
    assert_eq!(
        (
            c.stored_status,
            c.locked_until,
            c.discount.map(|d| d.minor())
        ),
        (CouponStatus::Locked, Some(at(40)), Some(400))
    );
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 400);
    assert_eq!(entries(&s, "lease-1").await, 1, "the move is recorded");

    // The same deadline again, or an earlier one: nothing changes, nothing is recorded.
    assert_eq!(
        extend(&s, "lease-1", 40, 16).await,
        ExtendStep::Already(moved.clone())
    );
    assert_eq!(
        extend(&s, "lease-1", 30, 16).await,
        ExtendStep::Earlier(moved.clone())
    );
    assert_eq!(entries(&s, "lease-1").await, 1);

    // The sweeper keeps to the new deadline: not at the old one, at the new one.
    assert!(s.expire_locks(at(17), 10).await.unwrap().is_empty());
    assert!(s.expire_locks(at(39), 10).await.unwrap().is_empty());
    let step = s.confirm_order(&lease, &Actor::Service, at(39)).await;
    let Ok(OrderStep::Done(confirmed)) = step else {
        panic!("{step:?}")
    };
    // Ended: refused, nothing recorded.
    assert_eq!(
        extend(&s, "lease-1", 50, 39).await,
        ExtendStep::Ended(confirmed)
    );
    assert_eq!(entries(&s, "lease-1").await, 1);

    // A lock past its deadline is found ended (expired, its coupon back), not moved.
    let late = oid("late-1");
    s.lock_order(
        &lock_req(&late, &user, &two, 2, 15),
        &accept("buyer", two.to_vec(), 300),
    )
    .await
    .unwrap();
    let ExtendStep::Ended(ended) = extend(&s, "late-1", 30, 16).await else {
        panic!("not ended")
    };
    assert_eq!(
        (ended.state, ended.ended_at),
        (OrderState::Expired, Some(at(16)))
    );
    let c = s.coupon(held[1].id).await.unwrap();
    assert_eq!(
        (c.stored_status, c.order_id, c.locked_until),
        (CouponStatus::Unused, None, None)
    );
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 0);
    assert_eq!(entries(&s, "late-1").await, 0, "an expiry is no extension");
    assert!(matches!(
        s.extend_order(&oid("nobody"), at(30), at(16)).await,
        Err(StoreError::NotFound)
    ));
}

/// A lock ends where its rules cut the deadline (its coupons' validity), coupons and order
/// alike; and a lock that outlived a coupon's validity (taken before that rule) is refused at
/// confirm with the expired coupons named and nothing changed (issue 61 point 3).
pub async fn locks_end_with_their_coupons_validity(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 3).await;
    let held = coupons(&s, &t, "buyer", 2).await;
    let valid_until = held[0].valid_until;
    let user = UserId::parse("buyer").unwrap();
    let (one, two) = ([held[0].id], [held[1].id]);

    // The rules cut the deadline asked for (hour 100) at hour 30.
    let cut = oid("cut-1");
    let mut req = lock_req(&cut, &user, &one, 1, 15);
    req.deadline = at(100);
    let rules = |found: &[coupond_domain::Coupon], t: &[coupond_domain::Template]| {
        let plan = accept("buyer", one.to_vec(), 400)(found, t)?;
        Ok(crate::LockPlan {
            deadline: Some(at(30)),
            ..plan
        })
    };
    let LockOutcome::Locked(order) = s.lock_order(&req, &rules).await.unwrap() else {
        panic!("not locked")
    };
    assert_eq!(order.deadline, at(30));
    assert_eq!(s.order(&cut).await.unwrap().deadline, at(30));
    assert_eq!(
        s.coupon(held[0].id).await.unwrap().locked_until,
        Some(at(30))
    );
    assert_eq!(s.expire_locks(at(30), 10).await.unwrap(), vec![cut.clone()]);

    // Held past the validity (the rules asked for no cut): a confirm after it uses nothing.
    let past = oid("past-1");
    let mut req = lock_req(&past, &user, &two, 2, 15);
    req.deadline = valid_until.plus(time::Duration::hours(10));
    s.lock_order(&req, &accept("buyer", two.to_vec(), 300))
        .await
        .unwrap();
    let after = valid_until.plus(time::Duration::hours(1));
    let step = s
        .confirm_order(&past, &Actor::Service, after)
        .await
        .unwrap();
    assert_eq!(step, OrderStep::Expired(vec![held[1].id]));
    let c = s.coupon(held[1].id).await.unwrap();
    assert_eq!(
        (c.stored_status, c.used_at),
        (CouponStatus::Locked, None),
        "nothing used"
    );
    let t = s.template(t.id).await.unwrap();
    assert_eq!((t.used, t.given.minor(), t.reserved.minor()), (0, 0, 300));
    assert_eq!(s.order(&past).await.unwrap().state, OrderState::Locked);
}
