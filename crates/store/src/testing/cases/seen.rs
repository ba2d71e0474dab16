//! Users' last-seen instants: recorded in batches keeping the later instant, read back, and
//! the active users of a list and of a segment.

use std::sync::Arc;

use coupond_domain::{Tag, Timestamp, UserId};
use time::Duration;

use crate::Store;

fn user(s: &str) -> UserId {
    UserId::parse(s).unwrap()
}

pub async fn last_seen_only_moves_later_and_filters_active_users(s: Arc<dyn Store>) {
    let t = Timestamp::parse("2027-01-10T12:00:00Z").unwrap();
    let (ann, bob, cy) = (user("ann"), user("bob"), user("cy"));
    assert_eq!(s.last_seen(&ann).await.unwrap(), None);
    s.record_seen(&[]).await.unwrap();
    // Bob twice in one batch: the later instant stands.
    s.record_seen(&[
        (ann.clone(), t),
        (bob.clone(), t.minus(Duration::days(40))),
        (bob.clone(), t.minus(Duration::days(20))),
    ])
    .await
    .unwrap();
    assert_eq!(s.last_seen(&ann).await.unwrap(), Some(t));
    let bob_at = t.minus(Duration::days(20));
    assert_eq!(s.last_seen(&bob).await.unwrap(), Some(bob_at));
    // An earlier instant (a batch from a slower instance) never moves it back; a later does.
    s.record_seen(&[(ann.clone(), t.minus(Duration::hours(1)))])
        .await
        .unwrap();
    assert_eq!(s.last_seen(&ann).await.unwrap(), Some(t));
    let later = t.plus(Duration::minutes(7));
    s.record_seen(&[(ann.clone(), later)]).await.unwrap();
    assert_eq!(s.last_seen(&ann).await.unwrap(), Some(later));

    // Of a list: seen since 30 days before t (ann, bob), not cy (never seen).
    let since = t.minus(Duration::days(30));
    let list = [cy.clone(), bob.clone(), ann.clone(), bob.clone()];
    assert_eq!(
        s.seen_among(&list, since).await.unwrap(),
        vec![ann.clone(), bob.clone()]
    );
    assert_eq!(
        s.seen_among(&list, t.minus(Duration::days(10)))
            .await
            .unwrap(),
        vec![ann.clone()]
    );
    // The boundary is inclusive.
    assert_eq!(
        s.seen_among(std::slice::from_ref(&bob), bob_at)
            .await
            .unwrap(),
        vec![bob.clone()]
    );
    // More users than one statement's chunk.
    let many: Vec<(UserId, Timestamp)> = (0..1_200)
        .map(|i| (user(&format!("m-{i:04}")), t))
        .collect();
    s.record_seen(&many).await.unwrap();
    let ids: Vec<UserId> = many.iter().map(|(u, _)| u.clone()).collect();
    assert_eq!(s.seen_among(&ids, since).await.unwrap().len(), 1_200);

    // Of a segment: vip holders seen since.
    let vip = Tag::parse("vip").unwrap();
    for u in [&ann, &bob, &cy] {
        s.put_user_tags(u, std::slice::from_ref(&vip))
            .await
            .unwrap();
    }
    let active = s
        .active_segment_users(std::slice::from_ref(&vip), since, 100)
        .await
        .unwrap();
    assert_eq!(active, vec![ann.clone(), bob.clone()]);
    let recent = s
        .active_segment_users(std::slice::from_ref(&vip), t.minus(Duration::days(10)), 100)
        .await
        .unwrap();
    assert_eq!(recent, vec![ann.clone()]);
    let one = s
        .active_segment_users(std::slice::from_ref(&vip), since, 1)
        .await
        .unwrap();
    assert_eq!(one, vec![ann]);
    assert!(s
        .active_segment_users(&[], since, 10)
        .await
        .unwrap()
        .is_empty());
}
