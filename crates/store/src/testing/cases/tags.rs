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

/// A template whose audience is a set of tags: the claim batch reads the claimants' tags in
/// its transaction, on every claim path (plain batches, keyed ones, bulk issuance).
pub async fn tag_audiences_are_checked_in_the_claim(s: Arc<dyn Store>) {
    let vip = tag("vip");
    let t = crate::testing::fixtures::claimable_template_with(s.as_ref(), 10, 1, |d| {
        d.audience = coupond_domain::Audience::Tags {
            any: vec![vip.clone(), tag("gold")],
        }
    })
    .await;
    assert_eq!(t.spec.audience.tags(), &[tag("gold"), vip.clone()]);
    s.put_user_tags(&user("in-1"), std::slice::from_ref(&vip))
        .await
        .unwrap();
    s.put_user_tags(&user("in-2"), &[tag("gold"), tag("new")])
        .await
        .unwrap();
    s.put_user_tags(&user("out-1"), &[tag("new")])
        .await
        .unwrap();
    let at = crate::testing::fixtures::at(15);
    // A plain batch (each user once, no keys).
    let batch: Vec<_> = ["in-1", "out-1", "nobody"]
        .iter()
        .map(|u| super::req(u))
        .collect();
    let out = s.claim_batch(t.id, &batch, at).await.unwrap();
    assert!(matches!(out[0], crate::ClaimOutcome::Issued(_)), "{out:?}");
    assert_eq!(
        &out[1..],
        &[
            crate::ClaimOutcome::NotEligible,
            crate::ClaimOutcome::NotEligible
        ]
    );
    // A keyed batch: the refused key is not kept, so a retry after tagging succeeds.
    let keyed = vec![
        super::claims::keyed("in-2", "k-in", 1),
        super::claims::keyed("out-1", "k-out", 2),
    ];
    let out = s.claim_batch(t.id, &keyed, at).await.unwrap();
    assert!(matches!(out[0], crate::ClaimOutcome::Issued(_)), "{out:?}");
    assert_eq!(out[1], crate::ClaimOutcome::NotEligible);
    s.put_user_tags(&user("out-1"), &[vip]).await.unwrap();
    let again = s.claim_batch(t.id, &keyed[1..], at).await.unwrap();
    assert!(
        matches!(again[0], crate::ClaimOutcome::Issued(_)),
        "{again:?}"
    );
    let holders = s.inspect().count_coupons(t.id).await.unwrap();
    assert_eq!(holders, 3);
    assert_eq!(
        s.audit(at, time::Duration::minutes(1)).await.unwrap(),
        vec![]
    );
}

/// A bulk upload as a job: chunks resume where the last committed one ended (a fresh reader
/// of the job's pairs, as after a restart), count each pair once, finish once; an
/// Idempotency-Key makes one job.
pub async fn tag_uploads_resume_and_key_once(s: Arc<dyn Store>) {
    use crate::testing::fixtures::at;
    use crate::{IssuanceKey, IssuanceState, NewTagUpload};
    s.put_user_tags(&user("held"), &[tag("vip")]).await.unwrap();
    let pairs = vec![
        (user("a"), tag("vip")),
        (user("held"), tag("vip")),
        (user("b"), tag("vip")),
        (user("a"), tag("vip")),
        (user("c"), tag("gold")),
    ];
    let actor = coupond_domain::Actor::Service;
    let new = |key: Option<&'static str>| NewTagUpload {
        actor: &actor,
        pairs: &pairs,
        lines: 6,
        invalid: 1,
        invalid_lines: &[],
        key: key.map(|key| IssuanceKey {
            key,
            fingerprint: [3; 32],
        }),
    };
    let (job, created) = s.insert_tag_upload(&new(Some("k")), at(1)).await.unwrap();
    assert!(created);
    assert_eq!(
        (job.state, job.requested, job.next_pair),
        (IssuanceState::Pending, 5, 0)
    );
    let (again, created) = s.insert_tag_upload(&new(Some("k")), at(2)).await.unwrap();
    assert_eq!(
        (again.id, created, again.key_fingerprint),
        (job.id, false, Some([3; 32]))
    );
    let open: Vec<i64> = s
        .open_tag_uploads()
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(open, vec![job.id]);

    let stored = s.tag_upload_pairs(job.id).await.unwrap();
    assert_eq!(stored, pairs);
    let one = s
        .tag_chunk(job.id, &stored, 2, at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (one.state, one.next_pair, one.done.added, one.done.present),
        (IssuanceState::Running, 2, 1, 1)
    );
    // As after a restart: the pairs read again, the job resumed at its next pair.
    let stored = s.tag_upload_pairs(job.id).await.unwrap();
    let two = s
        .tag_chunk(job.id, &stored, 10, at(4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(two.state, IssuanceState::Done);
    assert_eq!(
        (two.next_pair, two.done, two.started_at, two.finished_at),
        (
            5,
            Tagged {
                added: 3,
                present: 2,
                over_limit: 0
            },
            Some(at(3)),
            Some(at(4))
        )
    );
    assert!(
        s.tag_chunk(job.id, &stored, 10, at(5))
            .await
            .unwrap()
            .is_none(),
        "done once"
    );
    assert!(s.open_tag_uploads().await.unwrap().is_empty());
    assert_eq!(s.tag_upload(job.id).await.unwrap(), two);
    assert_eq!(
        s.segment_users(&[tag("vip")], 10).await.unwrap(),
        vec![user("a"), user("b"), user("held")]
    );
    let (other, created) = s.insert_tag_upload(&new(None), at(6)).await.unwrap();
    assert!(created && other.id != job.id);
    let page = crate::Page {
        after: None,
        limit: 10,
    };
    let all: Vec<i64> = s
        .tag_uploads(page)
        .await
        .unwrap()
        .iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(all, vec![job.id, other.id]);
    let page = crate::Page {
        after: Some(job.id),
        limit: 10,
    };
    assert_eq!(s.tag_uploads(page).await.unwrap().len(), 1);
}

/// Tags the platform shares with merchants: sharing is idempotent (the first instant kept),
/// unsharing says whether the tag was shared, the list pages by tag, and a lookup answers
/// only the shared ones of the tags asked; holding a tag has nothing to do with sharing it.
pub async fn tags_are_shared_explicitly(s: Arc<dyn Store>) {
    use crate::testing::fixtures::at;
    s.put_user_tags(&user("ann"), &[tag("churn-risk"), tag("vip")])
        .await
        .unwrap();
    let asked = [tag("churn-risk"), tag("vip"), tag("nobody")];
    assert_eq!(s.shared_of(&asked).await.unwrap(), vec![]);
    assert_eq!(s.shared_tags(None, 10).await.unwrap(), vec![]);
    let vip = s.share_tag(&tag("vip"), at(1)).await.unwrap();
    assert_eq!((vip.tag.as_str(), vip.shared_at), ("vip", at(1)));
    assert_eq!(s.share_tag(&tag("vip"), at(2)).await.unwrap(), vip);
    for t in ["nobody", "city:1", "city-1", "a_b"] {
        s.share_tag(&tag(t), at(3)).await.unwrap();
    }
    assert_eq!(
        s.shared_of(&asked).await.unwrap(),
        vec![tag("nobody"), tag("vip")]
    );
    assert_eq!(s.shared_of(&[]).await.unwrap(), vec![]);
    let names = |page: Vec<crate::SharedTag>| -> Vec<String> {
        page.into_iter()
            .map(|t| t.tag.as_str().to_owned())
            .collect()
    };
    let first = s.shared_tags(None, 3).await.unwrap();
    assert_eq!(names(first.clone()), ["a_b", "city-1", "city:1"]);
    let rest = s.shared_tags(Some(&first[2].tag), 3).await.unwrap();
    assert_eq!(names(rest), ["nobody", "vip"]);
    assert!(s.unshare_tag(&tag("vip")).await.unwrap());
    assert!(!s.unshare_tag(&tag("vip")).await.unwrap());
    assert!(!s.unshare_tag(&tag("churn-risk")).await.unwrap());
    assert_eq!(s.shared_of(&asked).await.unwrap(), vec![tag("nobody")]);
    // Shared again later: a new instant.
    let again = s.share_tag(&tag("vip"), at(5)).await.unwrap();
    assert_eq!(again.shared_at, at(5));
    assert_eq!(s.user_tags(&user("ann")).await.unwrap().len(), 2);
}
