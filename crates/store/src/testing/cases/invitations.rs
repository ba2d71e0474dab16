//! Merchants' invitations (issue 61 point 8): stored with their email in one transaction,
//! capped per merchant, live until accepted or expired, accepted into an operator once (of
//! racing accepts one wins), and an address that has an account by then leaves the invitation
//! as it was.

use super::*;
use crate::messaging::{NewOutbound, OutboundQuery, OutboundStatus, OutboundStep};
use coupond_domain::messaging::{Channel, MessageKind};
use coupond_domain::{Email, MerchantId, OperatorDraft, OperatorRole, Zone};

fn staff(addr: &str, m: MerchantId) -> OperatorDraft {
    let email = Email::parse(addr).unwrap();
    OperatorDraft::new(
        email,
        format!("Name of {addr}"),
        OperatorRole::Staff,
        Some(m),
    )
    .unwrap()
}

fn mail(to: &str, key: u8) -> NewOutbound {
    NewOutbound {
        channel: Channel::Email,
        key: format!("invitation:{key}"),
        user_id: None,
        kind: MessageKind::OperatorInvited,
        address: to.into(),
        zone: Zone::UTC,
        subject: "Join us".into(),
        body: "The link".into(),
        due_at: t0(),
    }
}

pub async fn invitations_are_accepted_once_into_an_operator(s: Arc<dyn Store>) {
    let m = s.insert_merchant(&merchant("Inviter", &[1]), t0()).await;
    let m = m.unwrap().id;
    let (ann, taken, old) = ([1; 32], [2; 32], [3; 32]);
    let a = s
        .insert_invitation(
            &staff("ann@m.co", m),
            &ann,
            at(72),
            &mail("ann@m.co", 1),
            3,
            t0(),
        )
        .await
        .unwrap();
    assert_eq!(
        (a.email.as_str(), a.role, a.merchant_id, a.accepted_at),
        ("ann@m.co", OperatorRole::Staff, m, None)
    );
    assert_eq!(a.status(t0()), "pending");
    // The email was queued with it.
    let q = OutboundQuery {
        limit: 10,
        ..OutboundQuery::default()
    };
    let queued = s.outbound(&q).await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!(
        (queued[0].address.as_str(), queued[0].kind),
        ("ann@m.co", MessageKind::OperatorInvited)
    );
    // Once sent, its link is kept nowhere: the body is emptied.
    let step = OutboundStep::Sent {
        answer: "250 ok".into(),
    };
    s.record_outbound(queued[0].id, &step, t0()).await.unwrap();
    let sent = s.outbound(&q).await.unwrap();
    assert_eq!(
        (sent[0].body.as_str(), sent[0].status),
        ("", OutboundStatus::Sent)
    );

    // An address with an account already gets an invitation all the same.
    let draft = OperatorDraft::new(
        Email::parse("boss@platform.co").unwrap(),
        "Boss".into(),
        OperatorRole::Admin,
        None,
    )
    .unwrap();
    s.insert_operator(&draft, Some("$h"), t0()).await.unwrap();
    let b = staff("boss@platform.co", m);
    s.insert_invitation(&b, &taken, at(72), &mail("boss@platform.co", 2), 3, t0())
        .await
        .unwrap();
    s.insert_invitation(
        &staff("old@m.co", m),
        &old,
        at(1),
        &mail("old@m.co", 3),
        3,
        t0(),
    )
    .await
    .unwrap();
    // Three pending: the fourth is refused, and leaves no email.
    let d = staff("dan@m.co", m);
    assert!(matches!(
        s.insert_invitation(&d, &[4; 32], at(72), &mail("dan@m.co", 4), 3, t0())
            .await,
        Err(StoreError::Conflict(Conflict::Limit))
    ));
    assert_eq!(s.outbound(&q).await.unwrap().len(), 3);
    // Once one expired, there is room again.
    s.insert_invitation(&d, &[4; 32], at(72), &mail("dan@m.co", 4), 3, at(2))
        .await
        .unwrap();
    let nobody = MerchantId::new(m.get() + 100).unwrap();
    assert!(matches!(
        s.insert_invitation(
            &staff("x@m.co", nobody),
            &[5; 32],
            at(72),
            &mail("x@m.co", 5),
            3,
            t0()
        )
        .await,
        Err(StoreError::Conflict(Conflict::Reference))
    ));

    assert_eq!(
        s.live_invitation(&old, at(2)).await.unwrap(),
        None,
        "expired"
    );
    assert_eq!(s.accept_invitation(&old, "$h", at(2)).await.unwrap(), None);
    assert_eq!(
        s.live_invitation(&ann, t0()).await.unwrap().unwrap().id,
        a.id
    );

    // The taken address: refused, nothing made, still live.
    assert!(matches!(
        s.accept_invitation(&taken, "$h", at(1)).await,
        Err(StoreError::Conflict(Conflict::Unique))
    ));
    assert!(s.live_invitation(&taken, at(1)).await.unwrap().is_some());

    // Of accepts racing for one token, one makes the account.
    let mut joins = Vec::new();
    for _ in 0..6 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            s.accept_invitation(&ann, "$argon2id$ann", at(1)).await
        }));
    }
    let mut made = Vec::new();
    for j in joins {
        match j.await.unwrap() {
            Ok(op) => made.extend(op),
            // A loser may also meet the winner's row as a taken address.
            Err(StoreError::Conflict(Conflict::Unique)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(made.len(), 1, "one accept wins");
    let op = &made[0];
    assert_eq!(
        (op.email.as_str(), op.role, op.merchant_id, op.has_password),
        ("ann@m.co", OperatorRole::Staff, Some(m), true)
    );
    assert_eq!(s.live_invitation(&ann, at(1)).await.unwrap(), None, "used");

    let listed = s.list_invitations(Some(m), None, 10).await.unwrap();
    let states: Vec<_> = listed
        .iter()
        .map(|i| (i.email.as_str(), i.status(at(2))))
        .collect();
    assert_eq!(
        states,
        [
            ("ann@m.co", "accepted"),
            ("boss@platform.co", "pending"),
            ("old@m.co", "expired"),
            ("dan@m.co", "pending")
        ]
    );
    assert_eq!(listed[0].accepted_at, Some(at(1)));
    assert!(s
        .list_invitations(Some(nobody), None, 10)
        .await
        .unwrap()
        .is_empty());
    let page = s
        .list_invitations(None, Some(listed[1].id), 1)
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, listed[2].id);
}
