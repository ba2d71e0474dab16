//! Campaign messages on every backend: the cap per owner per day holds under concurrent
//! senders; holders are paged by cursor (unused, valid coupons only) and a segment by user
//! (active ones only when asked); a page is sent once: its inbox messages and deliveries, the
//! cursor and the counts move together, and a page sent again adds nothing.

use super::*;
use crate::campaign_messages::{CampaignPage, NewCampaignMessage};
use crate::{MessageContent, NewOutbound};
use coupond_domain::messaging::{Campaign, CampaignDraft, Channel, MessageKind};
use coupond_domain::{Actor, Segment, Tag, UserId, Zone};

fn campaign(segment: Option<Segment>) -> Campaign {
    CampaignDraft {
        title: "Spring sale".into(),
        message: "Ends Sunday.".into(),
        segment,
    }
    .validate()
    .unwrap()
}

fn user(u: &str) -> UserId {
    UserId::parse(u).unwrap()
}

pub async fn campaign_messages_cap_page_and_send_once(s: Arc<dyn Store>) {
    let t = claims::claimable(&s, 10, 1).await;
    let batch: Vec<_> = ["u3", "u1", "u2"].iter().map(|u| claims::req(u)).collect();
    s.claim_batch(t.id, &batch, at(15)).await.unwrap();
    let holders = campaign(None);
    let new = NewCampaignMessage {
        template: t.id,
        owner: 7,
        actor: &Actor::Platform,
        campaign: &holders,
    };
    // Six at once against a cap of two since at(10): two are recorded.
    let tries: Vec<_> = (0..6)
        .map(|_| {
            let (s, c, id) = (s.clone(), holders.clone(), t.id);
            tokio::spawn(async move {
                let new = NewCampaignMessage {
                    template: id,
                    owner: 7,
                    actor: &Actor::Platform,
                    campaign: &c,
                };
                s.insert_campaign_message(&new, at(10), 2, at(16)).await
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tries {
        results.push(t.await.unwrap());
    }
    let made: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(made.len(), 2, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(crate::StoreError::Conflict(Conflict::Limit)))));
    // A new day (`since` moves past them) makes room again.
    s.insert_campaign_message(&new, at(17), 2, at(17))
        .await
        .unwrap();
    let first = s.next_campaign_message().await.unwrap().unwrap();
    assert_eq!(
        (first.campaign.title(), first.finished_at, first.recipients),
        ("Spring sale", None, 0)
    );
    let page = crate::Page {
        after: None,
        limit: 10,
    };
    let listed = s
        .template_campaign_messages(t.id, None, page)
        .await
        .unwrap();
    assert_eq!(listed.len(), 3);
    assert!(listed[0].id > listed[2].id, "newest first");
    let of = |sender| s.template_campaign_messages(t.id, Some(sender), page);
    assert_eq!(of(7).await.unwrap().len(), 3);
    assert!(of(0).await.unwrap().is_empty(), "only the sender's own");

    // Holders by user id in pages of two: u1, u2, then u3.
    let page = s.campaign_recipients(&first, at(16), 2).await.unwrap();
    assert_eq!(page.users, [user("u1"), user("u2")]);
    let next = page.next.clone().expect("more");
    let content = MessageContent {
        key: format!("campaign:{}:en", first.id),
        kind: "campaign".into(),
        title: "Spring sale".into(),
        body: "Ends Sunday.".into(),
    };
    let inbox = vec![(
        content.clone(),
        page.users
            .iter()
            .map(|u| (u.clone(), format!("campaign:{}:{u}", first.id)))
            .collect::<Vec<_>>(),
    )];
    let email = NewOutbound {
        channel: Channel::Email,
        key: format!("campaign:{}:u1", first.id),
        user_id: Some(user("u1")),
        kind: MessageKind::Campaign,
        address: "u1@example.com".into(),
        zone: Zone::UTC,
        subject: "Spring sale".into(),
        body: "Ends Sunday.".into(),
        due_at: at(16),
    };
    let step = CampaignPage {
        id: first.id,
        from: None,
        next: Some(&next),
        inbox: &inbox,
        outbound: std::slice::from_ref(&email),
    };
    s.send_campaign_page(&step, at(16)).await.unwrap();
    // The same page again (a crash before the worker saw its answer) adds nothing.
    s.send_campaign_page(&step, at(16)).await.unwrap();
    let m = s.campaign_message(first.id).await.unwrap();
    assert_eq!(
        (m.cursor.as_deref(), m.recipients, m.queued, m.finished_at),
        (Some(next.as_str()), 2, 1, None)
    );
    // A page read from where the message no longer is (a stalled instance whose lease
    // lapsed) is not sent: the cursor never moves back.
    let stale = CampaignPage {
        next: Some("u0"),
        ..step.clone()
    };
    s.send_campaign_page(&stale, at(16)).await.unwrap();
    let rest = s.campaign_recipients(&m, at(16), 2).await.unwrap();
    assert_eq!((rest.users, rest.next), (vec![user("u3")], None));
    let last = CampaignPage {
        id: m.id,
        from: m.cursor.as_deref(),
        next: None,
        inbox: &[(content, vec![(user("u3"), format!("campaign:{}:u3", m.id))])],
        outbound: &[],
    };
    s.send_campaign_page(&last, at(16)).await.unwrap();
    let m = s.campaign_message(first.id).await.unwrap();
    assert_eq!((m.recipients, m.finished_at), (3, Some(at(16))));
    let u1 = s.user_messages(&user("u1"), None, 10).await.unwrap();
    assert_eq!(
        u1.iter().map(|m| m.title.as_str()).collect::<Vec<_>>(),
        ["Spring sale"]
    );
    // The next one sending is the second.
    assert_ne!(
        s.next_campaign_message().await.unwrap().unwrap().id,
        first.id
    );
    // Past the coupons' validity nobody holds one.
    let late = s
        .campaign_recipients(&first, at(15 + 48), 10)
        .await
        .unwrap();
    assert!(late.users.is_empty());

    segments_page_by_user_and_keep_the_active(&s, &t).await;
}

/// The platform records `c` about `t` at hour 16 (room for ten that day).
async fn platform_sends(
    s: &Arc<dyn Store>,
    t: &coupond_domain::Template,
    c: &Campaign,
) -> crate::CampaignMessage {
    let new = NewCampaignMessage {
        template: t.id,
        owner: 0,
        actor: &Actor::Platform,
        campaign: c,
    };
    s.insert_campaign_message(&new, at(16), 10, at(16))
        .await
        .unwrap()
}

async fn segments_page_by_user_and_keep_the_active(
    s: &Arc<dyn Store>,
    t: &coupond_domain::Template,
) {
    let vip = Tag::parse("vip").unwrap();
    for u in ["s-c", "s-a", "s-b"] {
        s.put_user_tags(&user(u), std::slice::from_ref(&vip))
            .await
            .unwrap();
    }
    let everyone = campaign(Some(Segment {
        any: vec![vip.clone()],
        active_within_days: None,
    }));
    let m = platform_sends(s, t, &everyone).await;
    assert_eq!(
        m.campaign.segment().unwrap().any,
        std::slice::from_ref(&vip)
    );
    let page = s.campaign_recipients(&m, at(16), 2).await.unwrap();
    assert_eq!(page.users, [user("s-a"), user("s-b")]);
    let mut on = m.clone();
    on.cursor = page.next;
    let rest = s.campaign_recipients(&on, at(16), 2).await.unwrap();
    assert_eq!((rest.users, rest.next), (vec![user("s-c")], None));

    // Active within 30 days of the message: only s-b was seen since.
    s.record_seen(&[
        (user("s-b"), at(16).minus(Duration::days(3))),
        (user("s-c"), at(16).minus(Duration::days(40))),
    ])
    .await
    .unwrap();
    let active = campaign(Some(Segment {
        any: vec![vip],
        active_within_days: Some(30),
    }));
    let m = platform_sends(s, t, &active).await;
    let page = s.campaign_recipients(&m, at(16), 10).await.unwrap();
    assert_eq!((page.users, page.next), (vec![user("s-b")], None));
}
