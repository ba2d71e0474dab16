//! Orders holding coupons (lock, confirm, cancel, expiry) and idempotency records. The lock's
//! rules are the caller's; here they are simple stand-ins that plan a fixed discount per
//! coupon, so the cases test what the store promises: atomicity, exactly-once endings,
//! reservations, the log and the events.

use std::sync::Arc;

use coupond_domain::checkout::Reason;
use coupond_domain::{Actor, Coupon, CouponId, CouponStatus, Money, OrderId, Template, UserId};

use super::{claimable, req};
use crate::events::kind;
use crate::testing::fixtures::at;
use crate::{
    ClaimOutcome, IdempotencyKey, IdempotencyStart, LockOutcome, LockPlan, LockRefusal,
    LockRequest, OrderState, OrderStep, Store, StoredAnswer,
};

pub(super) fn oid(s: &str) -> OrderId {
    OrderId::parse(s).unwrap()
}

/// Claims `n` coupons of `t` for `user`.
pub(super) async fn coupons(s: &Arc<dyn Store>, t: &Template, user: &str, n: usize) -> Vec<Coupon> {
    let batch: Vec<_> = (0..n).map(|_| req(user)).collect();
    s.claim_batch(t.id, &batch, at(15))
        .await
        .unwrap()
        .into_iter()
        .map(|o| match o {
            ClaimOutcome::Issued(c) => c,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Rules that accept unused coupons of `user` and plan `each` off every one of them.
pub(super) fn accept(
    user: &str,
    ids: Vec<CouponId>,
    each: i64,
) -> impl Fn(&[Coupon], &[Template]) -> Result<LockPlan, LockRefusal> + Send + Sync {
    let user = UserId::parse(user).unwrap();
    move |found: &[Coupon], _: &[Template]| {
        let refused: Vec<_> = ids
            .iter()
            .filter(|id| {
                !found.iter().any(|c| {
                    c.id == **id && c.user_id == user && c.stored_status == CouponStatus::Unused
                })
            })
            .map(|id| (*id, vec![Reason::Locked]))
            .collect();
        if !refused.is_empty() {
            return Err(LockRefusal { coupons: refused });
        }
        Ok(LockPlan {
            discounts: ids
                .iter()
                .map(|id| (*id, Money::new(each).unwrap()))
                .collect(),
            answer: serde_json::json!({"discount": each * ids.len() as i64}),
            deadline: None,
        })
    }
}

pub(super) fn lock_req<'a>(
    order: &'a OrderId,
    user: &'a UserId,
    ids: &'a [CouponId],
    fp: u8,
    hour: i64,
) -> LockRequest<'a> {
    LockRequest {
        order_id: order,
        user,
        coupons: ids,
        fingerprint: [fp; 32],
        deadline: at(hour + 1),
        actor: &Actor::Service,
        now: at(hour),
        subtotal: coupond_domain::Money::new(10_000).unwrap(),
        currency: "CNY",
        zone: coupond_domain::Zone::UTC,
    }
}

/// Lock, replay, conflict, confirm, and every status change in the log and the outbox.
pub async fn orders_lock_then_confirm(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 3).await;
    let held = coupons(&s, &t, "buyer", 2).await;
    let ids: Vec<CouponId> = held.iter().map(|c| c.id).collect();
    let (order, user) = (oid("o-1"), UserId::parse("buyer").unwrap());
    let rules = accept("buyer", ids.clone(), 500);
    let first = s
        .lock_order(&lock_req(&order, &user, &ids, 1, 15), &rules)
        .await
        .unwrap();
    let LockOutcome::Locked(record) = first else {
        panic!("{first:?}")
    };
    assert_eq!(
        (record.state, record.deadline, &record.answer),
        (
            OrderState::Locked,
            at(16),
            &serde_json::json!({"discount": 1000})
        )
    );
    // Locks about to end (what `coupond_locks_expiring_soon` counts): ends before at(16)+.
    assert_eq!(s.locks_due_before(at(16)).await.unwrap(), 0);
    assert_eq!(s.locks_due_before(at(17)).await.unwrap(), 1);
    for c in s.coupons_by_ids(&ids).await.unwrap() {
        assert_eq!(c.stored_status, CouponStatus::Locked);
        assert_eq!(
            (c.order_id.as_ref(), c.locked_until, c.discount),
            (Some(&order), Some(at(16)), Some(Money::new(500).unwrap()))
        );
    }
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 1000);
    // The same request again: the same order; another request under the id: a conflict.
    let again = s
        .lock_order(&lock_req(&order, &user, &ids, 1, 15), &rules)
        .await
        .unwrap();
    assert_eq!(again, LockOutcome::Replayed(record.clone()));
    let other = s
        .lock_order(&lock_req(&order, &user, &ids, 2, 15), &rules)
        .await
        .unwrap();
    assert_eq!(other, LockOutcome::OrderConflict);
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 1000);

    let done = s
        .confirm_order(&order, &Actor::Service, at(15))
        .await
        .unwrap();
    let OrderStep::Done(confirmed) = done else {
        panic!("{done:?}")
    };
    assert_eq!(
        (confirmed.state, confirmed.ended_at),
        (OrderState::Confirmed, Some(at(15)))
    );
    let t2 = s.template(t.id).await.unwrap();
    assert_eq!(
        (t2.used, t2.given.minor(), t2.reserved.minor()),
        (2, 1000, 0)
    );
    for c in s.order_coupons(&order).await.unwrap() {
        assert_eq!(
            (c.stored_status, c.used_at, c.discount),
            (
                CouponStatus::Used,
                Some(at(15)),
                Some(Money::new(500).unwrap())
            )
        );
        let h = s.coupon_history(c.id).await.unwrap();
        let steps: Vec<_> = h.iter().map(|e| (e.from, e.to)).collect();
        assert_eq!(
            steps,
            vec![
                (None, CouponStatus::Unused),
                (Some(CouponStatus::Unused), CouponStatus::Locked),
                (Some(CouponStatus::Locked), CouponStatus::Used)
            ]
        );
        assert!(h[1..]
            .iter()
            .all(|e| e.order_id.as_deref() == Some("o-1") && e.actor == Actor::Service));
    }
    let events = s.inspect().events_after(0, 1000).await.unwrap();
    let count = |k: &str| events.iter().filter(|e| e.kind == k).count();
    assert_eq!(
        (count(kind::COUPON_LOCKED), count(kind::COUPON_USED)),
        (2, 2)
    );
    // Confirming again changes nothing; cancelling a confirmed order is refused.
    let again = s
        .confirm_order(&order, &Actor::Service, at(15))
        .await
        .unwrap();
    assert_eq!(again, OrderStep::Already(confirmed.clone()));
    let cancel = s
        .cancel_order(&order, &Actor::Service, at(15))
        .await
        .unwrap();
    assert_eq!(cancel, OrderStep::WrongState(confirmed));
    assert!(matches!(
        s.confirm_order(&oid("nope"), &Actor::Service, at(15)).await,
        Err(crate::StoreError::NotFound)
    ));
    // A refusal writes nothing.
    let used_again = s
        .lock_order(&lock_req(&oid("o-2"), &user, &ids, 3, 15), &rules)
        .await
        .unwrap();
    assert!(matches!(used_again, LockOutcome::Refused(_)));
    assert!(matches!(
        s.order(&oid("o-2")).await,
        Err(crate::StoreError::NotFound)
    ));
}

/// Cancel gives coupons and reservations back; the deadline does the same through the
/// sweeper, turning coupons whose validity ended meanwhile into expired ones.
pub async fn orders_cancel_and_expire(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 5).await;
    let held = coupons(&s, &t, "buyer", 2).await;
    let user = UserId::parse("buyer").unwrap();
    let one = [held[0].id];
    let (a, b) = (oid("cancel-me"), oid("let-expire"));
    s.lock_order(
        &lock_req(&a, &user, &one, 1, 15),
        &accept("buyer", one.to_vec(), 300),
    )
    .await
    .unwrap();
    let step = s.cancel_order(&a, &Actor::Service, at(15)).await.unwrap();
    let OrderStep::Done(cancelled) = step else {
        panic!("{step:?}")
    };
    assert_eq!(cancelled.state, OrderState::Cancelled);
    let c = s.coupon(held[0].id).await.unwrap();
    assert_eq!(
        (c.stored_status, c.order_id, c.discount),
        (CouponStatus::Unused, None, None)
    );
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 0);
    assert_eq!(
        s.cancel_order(&a, &Actor::Service, at(15)).await.unwrap(),
        OrderStep::Already(cancelled.clone())
    );
    assert_eq!(
        s.confirm_order(&a, &Actor::Service, at(15)).await.unwrap(),
        OrderStep::WrongState(cancelled)
    );

    // The second coupon is valid until hour 63; a lock taken at hour 62 lasts to hour 63.
    let two = [held[1].id];
    s.lock_order(
        &lock_req(&b, &user, &two, 1, 62),
        &accept("buyer", two.to_vec(), 300),
    )
    .await
    .unwrap();
    assert!(s.expire_locks(at(62), 10).await.unwrap().is_empty());
    assert_eq!(s.expire_locks(at(63), 10).await.unwrap(), vec![b.clone()]);
    assert!(s.expire_locks(at(64), 10).await.unwrap().is_empty(), "once");
    let c = s.coupon(held[1].id).await.unwrap();
    assert_eq!(
        c.stored_status,
        CouponStatus::Expired,
        "its validity ended at the deadline"
    );
    let h = s.coupon_history(c.id).await.unwrap();
    assert_eq!(
        (h[2].to, &h[2].actor, h[2].order_id.as_deref()),
        (CouponStatus::Expired, &Actor::System, Some("let-expire"))
    );
    let ended = s.order(&b).await.unwrap();
    assert_eq!(
        (ended.state, ended.ended_at),
        (OrderState::Expired, Some(at(63)))
    );
    assert_eq!(
        s.confirm_order(&b, &Actor::Service, at(63)).await.unwrap(),
        OrderStep::WrongState(ended)
    );
    let released = s
        .inspect()
        .events_after(0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind::COUPON_RELEASED)
        .count();
    assert_eq!(released, 2);
}

/// Confirms racing the sweeper at the deadline: every lock ends exactly once, either used or
/// given back, and the template's counts agree with the coupons.
pub async fn confirms_race_the_sweeper(s: Arc<dyn Store>) {
    let t = claimable(&s, 100, 100).await;
    let held = coupons(&s, &t, "racer", 40).await;
    let user = UserId::parse("racer").unwrap();
    for (i, c) in held.iter().enumerate() {
        let id = [c.id];
        let order = oid(&format!("race-{i}"));
        s.lock_order(
            &lock_req(&order, &user, &id, 1, 15),
            &accept("racer", id.to_vec(), 100),
        )
        .await
        .unwrap();
    }
    let mut joins = vec![];
    for i in 0..held.len() {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            // A confirm that arrives just before the deadline.
            s.confirm_order(
                &oid(&format!("race-{i}")),
                &Actor::Service,
                at(16).minus(time::Duration::microseconds(1)),
            )
            .await
            .unwrap()
        }));
    }
    let sweeper = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut n = 0;
            for _ in 0..5 {
                n += s.expire_locks(at(16), 7).await.unwrap().len();
            }
            n
        })
    };
    let mut confirmed = 0;
    for j in joins {
        match j.await.unwrap() {
            OrderStep::Done(_) => confirmed += 1,
            OrderStep::WrongState(o) => assert_eq!(o.state, OrderState::Expired),
            other => panic!("{other:?}"),
        }
    }
    let swept = sweeper.await.unwrap() + s.expire_locks(at(16), 100).await.unwrap().len();
    assert_eq!(
        confirmed + swept,
        held.len(),
        "each lock ended exactly once"
    );
    let t = s.template(t.id).await.unwrap();
    assert_eq!(
        (t.used, t.given.minor(), t.reserved.minor()),
        (confirmed as i64, 100 * confirmed as i64, 0)
    );
    let all = s
        .coupons_by_ids(&held.iter().map(|c| c.id).collect::<Vec<_>>())
        .await
        .unwrap();
    let used = all
        .iter()
        .filter(|c| c.stored_status == CouponStatus::Used)
        .count();
    let back = all
        .iter()
        .filter(|c| c.stored_status == CouponStatus::Unused)
        .count();
    assert_eq!((used, back), (confirmed, swept));
}

/// 64 orders locking one coupon at once: exactly one holds it.
pub async fn one_coupon_one_lock(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 1).await;
    let c = coupons(&s, &t, "popular", 1).await.remove(0);
    let mut joins = vec![];
    for i in 0..64 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            let order = oid(&format!("grab-{i}"));
            let user = UserId::parse("popular").unwrap();
            let ids = [c.id];
            s.lock_order(
                &lock_req(&order, &user, &ids, 1, 15),
                &accept("popular", ids.to_vec(), 100),
            )
            .await
            .unwrap()
        }));
    }
    let mut locked = 0;
    for j in joins {
        match j.await.unwrap() {
            LockOutcome::Locked(_) => locked += 1,
            LockOutcome::Refused(r) => assert_eq!(r.coupons, vec![(c.id, vec![Reason::Locked])]),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(locked, 1);
    assert_eq!(s.template(t.id).await.unwrap().reserved.minor(), 100);
}

/// The amount verification refuses a confirm that would give more than the budget, whatever
/// the lock planned, and changes nothing.
pub async fn confirm_verifies_amounts(s: Arc<dyn Store>) {
    // The fixture's budget is 1,500.00.
    let t = claimable(&s, 10, 1).await;
    let c = coupons(&s, &t, "big", 1).await.remove(0);
    let (order, user, ids) = (oid("too-much"), UserId::parse("big").unwrap(), [c.id]);
    s.lock_order(
        &lock_req(&order, &user, &ids, 1, 15),
        &accept("big", ids.to_vec(), 150_001),
    )
    .await
    .unwrap();
    let step = s
        .confirm_order(&order, &Actor::Service, at(15))
        .await
        .unwrap();
    assert!(
        matches!(&step, OrderStep::AmountViolation(why) if why.contains("budget")),
        "{step:?}"
    );
    assert_eq!(s.order(&order).await.unwrap().state, OrderState::Locked);
    assert_eq!(
        s.coupon(c.id).await.unwrap().stored_status,
        CouponStatus::Locked
    );
    let t = s.template(t.id).await.unwrap();
    assert_eq!((t.used, t.given.minor()), (0, 0));
}

/// Idempotency records: new, running, replayed, mismatched, stale, expired, abandoned.
pub async fn idempotency_records(s: Arc<dyn Store>) {
    let key = |fp: u8| IdempotencyKey {
        key: "service\nPOST /v1/merchants\nk".into(),
        fingerprint: [fp; 32],
    };
    let start = |fp: u8, now: i64| {
        let s = s.clone();
        async move {
            s.idempotency_start(&key(fp), at(now), at(now - 1), at(now + 24))
                .await
                .unwrap()
        }
    };
    assert_eq!(start(1, 10).await, IdempotencyStart::New);
    assert_eq!(start(1, 10).await, IdempotencyStart::InFlight);
    assert_eq!(start(2, 10).await, IdempotencyStart::Mismatch);
    let answer = StoredAnswer {
        status: 201,
        content_type: "application/json".into(),
        body: b"{\"id\":7}".to_vec(),
    };
    s.idempotency_finish(&key(1).key, &answer).await.unwrap();
    assert_eq!(start(1, 11).await, IdempotencyStart::Replay(answer.clone()));
    assert_eq!(start(2, 11).await, IdempotencyStart::Mismatch);
    // Expired (hour 10 + 24): the key is free again.
    assert_eq!(start(2, 40).await, IdempotencyStart::New);
    // A running request whose process died (started before `stale_before`) is taken over.
    assert_eq!(start(2, 42).await, IdempotencyStart::New);
    s.idempotency_abandon(&key(2).key).await.unwrap();
    assert_eq!(start(3, 42).await, IdempotencyStart::New);
    assert_eq!(s.idempotency_purge(at(42 + 24)).await.unwrap(), 1);
    assert_eq!(start(4, 42).await, IdempotencyStart::New);
}

/// After claims, codes, locks, confirms, cancels and expiries, the audit finds nothing; a lock
/// left past its deadline is found until the sweeper ends it.
pub async fn audit_finds_nothing_after_every_flow(s: Arc<dyn Store>) {
    let t = claimable(&s, 20, 5).await;
    let held = coupons(&s, &t, "auditee", 4).await;
    let user = UserId::parse("auditee").unwrap();
    let ids: Vec<CouponId> = held.iter().map(|c| c.id).collect();
    let (a, b, c) = (oid("audit-a"), oid("audit-b"), oid("audit-c"));
    s.lock_order(
        &lock_req(&a, &user, &ids[..1], 1, 15),
        &accept("auditee", ids[..1].to_vec(), 100),
    )
    .await
    .unwrap();
    s.confirm_order(&a, &Actor::Service, at(15)).await.unwrap();
    s.lock_order(
        &lock_req(&b, &user, &ids[1..2], 1, 15),
        &accept("auditee", ids[1..2].to_vec(), 100),
    )
    .await
    .unwrap();
    s.cancel_order(&b, &Actor::Service, at(15)).await.unwrap();
    s.lock_order(
        &lock_req(&c, &user, &ids[2..3], 1, 15),
        &accept("auditee", ids[2..3].to_vec(), 100),
    )
    .await
    .unwrap();
    let grace = time::Duration::minutes(1);
    assert_eq!(s.audit(at(15), grace).await.unwrap(), vec![]);
    let late = s.audit(at(17), grace).await.unwrap();
    assert_eq!(late.len(), 1, "{late:?}");
    assert_eq!(
        (late[0].check, late[0].subject.as_str()),
        ("overdue_locks", "order audit-c")
    );
    s.expire_locks(at(17), 10).await.unwrap();
    s.expire_coupons(at(100), 100).await.unwrap();
    assert_eq!(s.audit(at(100), grace).await.unwrap(), vec![]);
}
