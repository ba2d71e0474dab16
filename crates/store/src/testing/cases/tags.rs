//! User tags and segments: replace, bulk add (duplicates, the per-user maximum under
//! concurrent writers), a segment's users.

use std::sync::Arc;

use coupond_domain::tags::MAX_TAGS_PER_USER;
use coupond_domain::{Tag, UserId};

use crate::{Store, Tagged};

fn tag(s: &str) -> Tag {
    Tag::parse(s).unwrap()
}

fn user(s: &str) -> UserId {
    UserId::parse(s).unwrap()
}

pub async fn user_tags_and_segments(s: Arc<dyn Store>) {
    let (ann, bob, cy) = (user("ann"), user("bob"), user("cy"));
    s.put_user_tags(&ann, &[tag("new"), tag("vip")])
        .await
        .unwrap();
    assert_eq!(
        s.user_tags(&ann).await.unwrap(),
        vec![tag("new"), tag("vip")]
    );
    s.put_user_tags(&ann, &[tag("vip")]).await.unwrap();
    assert_eq!(s.user_tags(&ann).await.unwrap(), vec![tag("vip")]);
    assert_eq!(s.user_tags(&bob).await.unwrap(), vec![]);

    let pairs = vec![
        (bob.clone(), tag("vip")),
        (bob.clone(), tag("vip")),
        (ann.clone(), tag("vip")),
        (cy.clone(), tag("city:1")),
    ];
    let done = s.add_user_tags(&pairs).await.unwrap();
    assert_eq!(
        done,
        Tagged {
            added: 2,
            present: 2,
            over_limit: 0
        }
    );
    let vip = s.segment_users(&[tag("vip")], 100).await.unwrap();
    assert_eq!(vip, vec![ann.clone(), bob.clone()]);
    let either = s.segment_users(&[tag("vip"), tag("city:1")], 100).await;
    assert_eq!(either.unwrap(), vec![ann.clone(), bob.clone(), cy.clone()]);
    assert_eq!(
        s.segment_users(&[tag("vip"), tag("city:1")], 2)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(s.segment_users(&[tag("nobody")], 10).await.unwrap(), vec![]);
    s.put_user_tags(&ann, &[]).await.unwrap();
    assert_eq!(s.segment_users(&[tag("vip")], 10).await.unwrap(), vec![bob]);
}

/// Eight writers add 20 tags each to one user at once: the user ends with exactly the
/// maximum, and every pair is counted once as added or over the limit.
pub async fn tag_limit_holds_under_concurrent_writers(s: Arc<dyn Store>) {
    let u = user("busy");
    let mut joins = Vec::new();
    for w in 0..8 {
        let (s, u) = (s.clone(), u.clone());
        joins.push(tokio::spawn(async move {
            let pairs: Vec<(UserId, Tag)> = (0..20)
                .map(|i| (u.clone(), tag(&format!("w{w}-t{i}"))))
                .collect();
            s.add_user_tags(&pairs).await.unwrap()
        }));
    }
    let (mut added, mut over) = (0, 0);
    for j in joins {
        let t = j.await.unwrap();
        added += t.added;
        over += t.over_limit;
    }
    assert_eq!(
        (added, over),
        (MAX_TAGS_PER_USER as u64, 160 - MAX_TAGS_PER_USER as u64)
    );
    assert_eq!(s.user_tags(&u).await.unwrap().len(), MAX_TAGS_PER_USER);
}
