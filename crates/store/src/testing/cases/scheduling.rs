//! The scheduler's storage: leases, announcing transitions once, expiring coupons, reading
//! the outbox by position, reminders and the inbox.

use std::sync::Arc;

use coupond_domain::{CouponStatus, TemplateStatus, Transition, UserId};

use super::{claimable, req};
use crate::events::kind;
use crate::testing::fixtures::at;
use crate::{ClaimOutcome, MessageContent, OutboxPosition, Reminder, Store};

pub async fn leases_have_one_holder(s: Arc<dyn Store>) {
    assert!(s.try_lease("loop", "a", at(0), at(1)).await.unwrap());
    assert!(!s.try_lease("loop", "b", at(0), at(1)).await.unwrap());
    assert!(
        s.try_lease("loop", "a", at(0), at(2)).await.unwrap(),
        "renewed"
    );
    assert!(!s.try_lease("loop", "b", at(1), at(3)).await.unwrap());
    assert!(
        s.try_lease("loop", "b", at(2), at(3)).await.unwrap(),
        "lapsed"
    );
    assert!(!s.try_lease("loop", "a", at(2), at(4)).await.unwrap());
    assert!(s.try_lease("other", "a", at(2), at(4)).await.unwrap());
    // An instance shutting down lets go of its leases: another takes them at once.
    assert_eq!(s.release_leases("b").await.unwrap(), 1);
    assert!(s.try_lease("loop", "a", at(2), at(4)).await.unwrap());
    assert!(
        s.try_lease("other", "a", at(2), at(4)).await.unwrap(),
        "a's kept"
    );
    assert_eq!(s.release_leases("nobody").await.unwrap(), 0);
}

/// A template's transitions are announced once, in order, at their instants; the template
/// stops being due once announced.
pub async fn transitions_are_announced_once(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 1).await; // published at hour 0, claimable [10, 20)
    let due = s.due_templates(at(15), 100).await.unwrap();
    let (found, announced) = due.iter().find(|(d, _)| d.id == t.id).unwrap();
    let published = Some(TemplateStatus::Scheduled);
    assert_eq!(
        *announced, published,
        "publishing announced it, in its transaction"
    );
    let moves = found.transitions_since(published, at(15));
    assert_eq!(
        moves.iter().map(|m| m.to).collect::<Vec<_>>(),
        vec![TemplateStatus::Active]
    );
    assert!(s.announce_template(t.id, published, &moves).await.unwrap());
    assert!(
        !s.announce_template(t.id, published, &moves).await.unwrap(),
        "a second scheduler that read the same finds it taken"
    );
    assert!(s
        .due_templates(at(15), 100)
        .await
        .unwrap()
        .iter()
        .all(|(d, _)| d.id != t.id));
    // Downtime across the window's end and the validity's end: due again, both in order.
    let later = s.due_templates(at(90), 100).await.unwrap();
    let (found, announced) = later.iter().find(|(d, _)| d.id == t.id).unwrap();
    assert_eq!(*announced, Some(TemplateStatus::Active));
    let moves = found.transitions_since(*announced, at(90));
    assert_eq!(
        moves,
        vec![
            Transition {
                to: TemplateStatus::Ended,
                at: at(20)
            },
            Transition {
                to: TemplateStatus::Expired,
                at: at(20 + 48)
            },
        ]
    );
    assert!(s.announce_template(t.id, *announced, &moves).await.unwrap());
    let events: Vec<_> = s
        .inspect()
        .events_after(0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind::TEMPLATE_STATUS_CHANGED && e.body["template_id"] == t.id.get())
        .collect();
    let seq: Vec<(String, String)> = events
        .iter()
        .map(|e| (e.body["to"].as_str().unwrap().to_owned(), e.at.to_string()))
        .collect();
    assert_eq!(
        seq,
        vec![
            ("scheduled".into(), at(0).to_string()),
            ("active".into(), at(10).to_string()),
            ("ended".into(), at(20).to_string()),
            ("expired".into(), at(68).to_string()),
        ]
    );
    assert_eq!(events[1].body["from"], "scheduled");
    let live: Vec<bool> = s
        .inspect()
        .events_after(0, 1000)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == kind::LISTING_COUPONS_CHANGED)
        .map(|e| e.body["live"].as_bool().unwrap())
        .collect();
    assert_eq!(live, vec![true, false], "claimable from hour 10 to hour 20");
    assert_eq!(s.next_due(at(90)).await.unwrap(), None);
}

/// Unused coupons expire by the clock (with their log row and event, at their validity's
/// end); a locked one does not.
pub async fn coupons_expire_once(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 5).await;
    let out = s
        .claim_batch(t.id, &[req("x"), req("x")], at(15))
        .await
        .unwrap();
    let ids: Vec<_> = out
        .iter()
        .map(|o| match o {
            ClaimOutcome::Issued(c) => c.id,
            other => panic!("{other:?}"),
        })
        .collect();
    // Lock the second so it is not unused any more.
    let order = coupond_domain::OrderId::parse("hold").unwrap();
    let user = UserId::parse("x").unwrap();
    let held = [ids[1]];
    let rules = |_: &[coupond_domain::Coupon], _: &[coupond_domain::Template]| {
        Ok(crate::LockPlan {
            discounts: vec![(ids[1], coupond_domain::Money::ZERO)],
            answer: serde_json::json!({}),
            deadline: None,
        })
    };
    s.lock_order(
        &crate::LockRequest {
            order_id: &order,
            user: &user,
            coupons: &held,
            fingerprint: [0; 32],
            deadline: at(100),
            actor: &coupond_domain::Actor::Service,
            now: at(15),
            subtotal: coupond_domain::Money::ZERO,
            currency: "CNY",
            zone: coupond_domain::Zone::UTC,
        },
        &rules,
    )
    .await
    .unwrap();
    assert_eq!(
        s.next_due(at(15)).await.unwrap(),
        Some(at(63)),
        "the first coupon's validity end (the template is not announced yet: it is due now)"
    );
    assert_eq!(s.expire_coupons(at(62), 10).await.unwrap(), 0);
    assert_eq!(s.expire_coupons(at(63), 10).await.unwrap(), 1);
    assert_eq!(s.expire_coupons(at(64), 10).await.unwrap(), 0, "once");
    assert_eq!(
        s.coupon(ids[0]).await.unwrap().stored_status,
        CouponStatus::Expired
    );
    assert_eq!(
        s.coupon(ids[1]).await.unwrap().stored_status,
        CouponStatus::Locked
    );
    let h = s.coupon_history(ids[0]).await.unwrap();
    assert_eq!(
        (h[1].from, h[1].to, h[1].at),
        (Some(CouponStatus::Unused), CouponStatus::Expired, at(63))
    );
    let expired: Vec<_> = s
        .inspect()
        .events_after(0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind::COUPON_EXPIRED)
        .collect();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].body["coupon_id"], ids[0].get());
}

/// Consumers read the outbox from their position; nothing is skipped or repeated.
pub async fn outbox_positions(s: Arc<dyn Store>) {
    assert_eq!(
        s.sink_position("obs").await.unwrap(),
        OutboxPosition::default()
    );
    assert_eq!(
        s.inspect().outbox_head().await.unwrap(),
        OutboxPosition::default()
    );
    let t = claimable(&s, 100, 100).await;
    for i in 0..7 {
        s.claim_batch(t.id, &[req(&format!("o{i}"))], at(15))
            .await
            .unwrap();
    }
    let all: Vec<i64> = s
        .inspect()
        .events_after(0, 1000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    // Newest first, a page at a time below the last id seen.
    let newest = s.outbox_latest(None, 4).await.unwrap();
    let ids: Vec<i64> = newest.iter().map(|e| e.id).collect();
    let expected: Vec<i64> = all.iter().rev().take(4).copied().collect();
    assert_eq!(ids, expected);
    let older = s.outbox_latest(ids.last().copied(), 1000).await.unwrap();
    let expected: Vec<i64> = all.iter().rev().skip(4).copied().collect();
    assert_eq!(older.iter().map(|e| e.id).collect::<Vec<_>>(), expected);
    let mut seen = vec![];
    let mut at_pos = s.sink_position("obs").await.unwrap();
    // On PostgreSQL an event becomes readable once every older transaction in the cluster has
    // ended (other tests run beside this one): an empty read means "not yet", so read until
    // everything written has been seen, a bounded number of times.
    for _ in 0..1000 {
        if seen.len() >= all.len() {
            break;
        }
        let batch = s.outbox_read(at_pos, 3).await.unwrap();
        let Some(last) = batch.last() else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        at_pos = OutboxPosition {
            txid: last.txid,
            event_id: last.id,
        };
        // Two consumers acknowledged in one transaction: each keeps its own position.
        let behind = OutboxPosition {
            event_id: at_pos.event_id - 1,
            ..at_pos
        };
        s.sink_ack(&[("obs", at_pos), ("slow", behind)])
            .await
            .unwrap();
        seen.extend(batch.iter().map(|e| e.id));
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, all, "every event once");
    assert_eq!(s.sink_position("obs").await.unwrap(), at_pos);
    let behind = OutboxPosition {
        event_id: at_pos.event_id - 1,
        ..at_pos
    };
    assert_eq!(s.sink_position("slow").await.unwrap(), behind);
    assert_eq!(s.inspect().outbox_head().await.unwrap(), at_pos);
    assert!(s.outbox_read(at_pos, 10).await.unwrap().is_empty());
}

/// Reminders: one per user, template and day; cancelled only when no coupon is left to
/// remind of; sent once, only to a user still holding one.
pub async fn reminders_and_inbox(s: Arc<dyn Store>) {
    let t = claimable(&s, 100, 5).await;
    let out = s
        .claim_batch(t.id, &[req("r"), req("r")], at(15))
        .await
        .unwrap();
    let ClaimOutcome::Issued(c) = &out[0] else {
        panic!()
    };
    let user = UserId::parse("r").unwrap();
    let day = c.valid_until.unix_micros().div_euclid(86_400_000_000);
    let day_at = |d: i64| coupond_domain::Timestamp::from_unix_micros(d * 86_400_000_000).unwrap();
    let plan = Reminder {
        user_id: user.clone(),
        template_id: t.id,
        day,
        expiring: coupond_domain::Window::new(day_at(day), day_at(day + 1)).unwrap(),
        due_at: at(40),
    };
    // A duplicate within one batch, then the same event delivered again: the first plan stays.
    let again = |due| Reminder {
        due_at: at(due),
        ..plan.clone()
    };
    for (batch, case) in [
        (vec![plan.clone(), again(41)], "the first of a batch stays"),
        (
            vec![again(30)],
            "an already planned reminder is not replanned",
        ),
    ] {
        s.plan_reminders(&batch).await.unwrap();
        assert_eq!(
            s.due_reminders(at(50), 10).await.unwrap(),
            vec![plan.clone()],
            "{case}"
        );
        assert!(
            s.due_reminders(at(39), 10).await.unwrap().is_empty(),
            "{case}"
        );
    }
    s.cancel_reminder(&user, t.id, day).await.unwrap();
    assert_eq!(
        s.due_reminders(at(50), 10).await.unwrap().len(),
        1,
        "coupons still held"
    );
    let content = MessageContent {
        key: format!("reminder:{}:{day}", t.id),
        kind: "reminder".into(),
        title: "Expiring".into(),
        body: "Soon".into(),
    };
    assert!(s.send_reminder(&plan, &content, at(40)).await.unwrap());
    assert!(
        !s.send_reminder(&plan, &content, at(40)).await.unwrap(),
        "sent once"
    );
    assert!(s.due_reminders(at(50), 10).await.unwrap().is_empty());
    // A reminder of coupons no longer held is dropped without a message.
    let later = coupond_domain::Window::new(day_at(day + 5), day_at(day + 6)).unwrap();
    s.plan_reminders(&[Reminder {
        day: day + 5,
        expiring: later,
        ..plan.clone()
    }])
    .await
    .unwrap();
    assert!(!s
        .send_reminder(
            &Reminder {
                day: day + 5,
                expiring: later,
                ..plan.clone()
            },
            &content,
            at(40)
        )
        .await
        .unwrap());
    // A flash sale's batch: more rows than one statement of the shared planner takes, each
    // planned once, in due order.
    let many: Vec<Reminder> = (0..1_100_i64)
        .map(|i| Reminder {
            user_id: UserId::parse(&format!("many-{i}")).unwrap(),
            due_at: at(60 + i % 3),
            ..plan.clone()
        })
        .collect();
    s.plan_reminders(&many).await.unwrap();
    s.plan_reminders(&many[..10]).await.unwrap();
    let due = s.due_reminders(at(70), 2_000).await.unwrap();
    assert_eq!(due.len(), 1_100, "every one planned, once");
    assert!(due.windows(2).all(|w| w[0].due_at <= w[1].due_at));

    // The inbox: one text, a row per user, keyed by source; unread first, newest first.
    let hello = MessageContent {
        key: "issued:job-1".into(),
        kind: "coupon_issued".into(),
        title: "A coupon".into(),
        body: "For you".into(),
    };
    let who = |u: &str, src: &str| (UserId::parse(u).unwrap(), src.to_owned());
    let n = s
        .deliver_messages(
            &hello,
            &[
                who("r", "event:1"),
                who("q", "event:2"),
                who("r", "event:1"),
            ],
            at(41),
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        s.deliver_messages(&hello, &[who("r", "event:1")], at(42))
            .await
            .unwrap(),
        0
    );
    let inbox = s.user_messages(&user, None, 10).await.unwrap();
    assert_eq!(
        inbox
            .iter()
            .map(|m| (m.kind.as_str(), m.read_at))
            .collect::<Vec<_>>(),
        vec![("coupon_issued", None), ("reminder", None)]
    );
    let read = s.mark_read(&user, inbox[1].id, at(45)).await.unwrap();
    assert_eq!(read.read_at, Some(at(45)));
    assert_eq!(
        s.mark_read(&user, inbox[1].id, at(46))
            .await
            .unwrap()
            .read_at,
        Some(at(45))
    );
    let again = s.user_messages(&user, None, 10).await.unwrap();
    assert_eq!(
        again.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![inbox[0].id, inbox[1].id]
    );
    let first = s.user_messages(&user, None, 1).await.unwrap();
    let rest = s
        .user_messages(&user, Some((first[0].read_at.is_some(), first[0].id)), 10)
        .await
        .unwrap();
    assert_eq!(
        rest.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![inbox[1].id]
    );
    let other = UserId::parse("q").unwrap();
    assert!(matches!(
        s.mark_read(&other, inbox[1].id, at(45)).await,
        Err(crate::StoreError::NotFound)
    ));
}
