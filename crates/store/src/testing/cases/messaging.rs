//! Messages outside the app on every backend: a user's contact points and choices are set
//! apart and kept apart; the platform's texts are set, replaced and dropped; a delivery is
//! queued once per channel and key, comes due in order, and each step (deferred, retried,
//! sent, failed) is recorded once and only while it is queued; the log lists newest first.

use std::collections::BTreeMap;

use super::*;
use crate::messaging::{OutboundQuery, OutboundStatus, OutboundStep};
use crate::NewOutbound;
use coupond_domain::messaging::{
    Channel, Contact, ContactDraft, Locale, MessageKind, MessageText, Preferences,
};
use coupond_domain::{UserId, Zone};

fn outbound(key: &str, user: &str, channel: Channel, due: Timestamp) -> NewOutbound {
    NewOutbound {
        channel,
        key: key.into(),
        user_id: Some(UserId::parse(user).unwrap()),
        kind: MessageKind::CouponClaimed,
        address: "ann@example.com".into(),
        zone: Zone::parse("Asia/Shanghai").unwrap(),
        subject: "Your coupon: 满100减20".into(),
        body: "You claimed it.".into(),
        due_at: due,
    }
}

pub async fn contacts_texts_and_the_delivery_log(s: Arc<dyn Store>) {
    let ann = UserId::parse("ann").unwrap();
    assert_eq!(s.contact(&ann).await.unwrap(), None);
    let contact = Contact::try_from(ContactDraft {
        email: Some("Ann@Example.com".into()),
        phone: Some("+8613800138000".into()),
        locale: Some("zh-CN".into()),
        time_zone: Some("Asia/Shanghai".into()),
    })
    .unwrap();
    let r = s.put_contact(&ann, &contact, at(1)).await.unwrap();
    assert_eq!(
        (r.contact.clone(), r.preferences.clone()),
        (contact.clone(), Preferences::default())
    );
    // Choices are set without touching the contact points, and the other way round.
    let mut prefs = Preferences::default();
    prefs.unsubscribe(Channel::Email);
    let r = s.put_preferences(&ann, &prefs, at(2)).await.unwrap();
    assert_eq!(
        (&r.contact, &r.preferences, r.updated_at),
        (&contact, &prefs, at(2))
    );
    let r = s
        .put_contact(&ann, &Contact::default(), at(3))
        .await
        .unwrap();
    assert_eq!(
        (r.contact, r.preferences),
        (Contact::default(), prefs.clone())
    );
    // A user known only by choices.
    let bob = UserId::parse("bob").unwrap();
    s.put_preferences(&bob, &Preferences::new(BTreeMap::new()).unwrap(), at(3))
        .await
        .unwrap();
    let mut both: Vec<_> = s
        .contacts(&[ann.clone(), bob.clone(), UserId::parse("cy").unwrap()])
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.user_id)
        .collect();
    both.sort();
    assert_eq!(both, [ann.clone(), bob.clone()]);

    // Texts.
    let zh = Locale::parse("zh-Hans").unwrap();
    let text = MessageText {
        subject: "领取成功：{{title}}".into(),
        body: "好".into(),
        sms: "好".into(),
    };
    s.put_message_text(MessageKind::CouponClaimed, &zh, &text, at(1))
        .await
        .unwrap();
    let changed = MessageText {
        body: "很好".into(),
        ..text.clone()
    };
    s.put_message_text(MessageKind::CouponClaimed, &zh, &changed, at(2))
        .await
        .unwrap();
    let all = s.message_texts().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].kind, &all[0].locale, &all[0].text, all[0].updated_at),
        (MessageKind::CouponClaimed, &zh, &changed, at(2))
    );
    assert!(s
        .drop_message_text(MessageKind::CouponClaimed, &zh)
        .await
        .unwrap());
    assert!(!s
        .drop_message_text(MessageKind::CouponClaimed, &zh)
        .await
        .unwrap());

    // Deliveries: one per channel and key, however often queued.
    let first = [
        outbound("event:1", "ann", Channel::Email, at(1)),
        outbound("event:1", "ann", Channel::Sms, at(1)),
        outbound("event:2", "bob", Channel::Email, at(2)),
    ];
    assert_eq!(s.queue_outbound(&first, at(1)).await.unwrap(), 3);
    assert_eq!(s.queue_outbound(&first[..2], at(1)).await.unwrap(), 0);
    let due = s.due_outbound(Channel::Email, at(1), 10).await.unwrap();
    assert_eq!(due.len(), 1);
    let d = &due[0];
    assert_eq!(
        (
            d.key.as_str(),
            d.status,
            d.attempts,
            d.zone.name(),
            d.subject.as_str()
        ),
        (
            "event:1",
            OutboundStatus::Queued,
            0,
            "Asia/Shanghai",
            "Your coupon: 满100减20"
        )
    );
    // Deferred: later, no try counted; retried: a try counted; then sent, once.
    s.record_outbound(d.id, &OutboundStep::Defer { next_at: at(3) }, at(1))
        .await
        .unwrap();
    assert_eq!(
        s.due_outbound(Channel::Email, at(2), 10)
            .await
            .unwrap()
            .iter()
            .map(|o| o.key.as_str())
            .collect::<Vec<_>>(),
        ["event:2"]
    );
    s.record_outbound(
        d.id,
        &OutboundStep::Retry {
            next_at: at(4),
            answer: "421 busy".into(),
        },
        at(3),
    )
    .await
    .unwrap();
    let again = s.due_outbound(Channel::Email, at(4), 10).await.unwrap();
    let d1 = again.iter().find(|o| o.id == d.id).unwrap();
    assert_eq!((d1.attempts, d1.answer.as_deref()), (1, Some("421 busy")));
    // An attempt is claimed once: two couriers that read it due, one takes it, and nobody
    // finds it due again until the claim runs out (issue 61 point 2).
    let (one, two) = (
        s.claim_outbound(d.id, at(4), at(6)),
        s.claim_outbound(d.id, at(4), at(6)),
    );
    let (one, two) = (one.await.unwrap(), two.await.unwrap());
    assert!(one ^ two, "claimed once: {one} {two}");
    assert!(s
        .due_outbound(Channel::Email, at(5), 10)
        .await
        .unwrap()
        .iter()
        .all(|o| o.id != d.id));
    assert!(!s.claim_outbound(d.id, at(5), at(7)).await.unwrap());
    s.record_outbound(
        d.id,
        &OutboundStep::Sent {
            answer: "250 ok".into(),
        },
        at(4),
    )
    .await
    .unwrap();
    s.record_outbound(
        d.id,
        &OutboundStep::Failed {
            answer: "late".into(),
        },
        at(5),
    )
    .await
    .unwrap();
    let bob_mail = again.iter().find(|o| o.key == "event:2").unwrap();
    s.record_outbound(
        bob_mail.id,
        &OutboundStep::Failed {
            answer: "550 no such user".into(),
        },
        at(5),
    )
    .await
    .unwrap();
    assert!(s
        .due_outbound(Channel::Email, at(9), 10)
        .await
        .unwrap()
        .is_empty());
    let log = s
        .outbound(&OutboundQuery {
            user_id: Some(ann.clone()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        log.iter()
            .map(|o| (o.channel, o.status))
            .collect::<Vec<_>>(),
        [
            (Channel::Sms, OutboundStatus::Queued),
            (Channel::Email, OutboundStatus::Sent)
        ]
    );
    let sent = &log[1];
    assert_eq!(
        (sent.attempts, sent.sent_at, sent.answer.as_deref()),
        (2, Some(at(4)), Some("250 ok"))
    );
    let failed = s
        .outbound(&OutboundQuery {
            status: Some(OutboundStatus::Failed),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        failed.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(),
        ["event:2"]
    );
    let page = s
        .outbound(&OutboundQuery {
            channel: Some(Channel::Email),
            before: Some(log[0].id),
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
}
