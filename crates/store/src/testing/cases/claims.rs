//! Claims: stock and per-user limits (also under concurrent batches), wallets, and
//! idempotency keys for claims and issuances.

use super::*;

pub(super) async fn claimable(
    s: &Arc<dyn Store>,
    stock: i64,
    limit: u32,
) -> coupond_domain::Template {
    claimable_template(s.as_ref(), stock, limit).await
}

pub(super) fn req(user: &str) -> ClaimRequest {
    ClaimRequest {
        user: coupond_domain::UserId::parse(user).unwrap(),
        actor: coupond_domain::Actor::User(coupond_domain::UserId::parse(user).unwrap()),
        valid_from: at(15),
        valid_until: at(15 + 48),
        idempotency: None,
        code: None,
        issuance: None,
        channel: Default::default(),
        source: None,
    }
}

pub(super) fn keyed(user: &str, key: &str, fingerprint: u8) -> ClaimRequest {
    ClaimRequest {
        idempotency: Some(IdempotencyKey {
            key: key.to_owned(),
            fingerprint: [fingerprint; 32],
        }),
        ..req(user)
    }
}

pub(super) fn tally(outcomes: &[ClaimOutcome]) -> (usize, usize, usize, usize) {
    let mut t = (0, 0, 0, 0);
    for o in outcomes {
        match o {
            ClaimOutcome::Issued(_) => t.0 += 1,
            ClaimOutcome::SoldOut => t.1 += 1,
            ClaimOutcome::LimitReached => t.2 += 1,
            ClaimOutcome::NotClaimable => t.3 += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    t
}

pub async fn claims_stop_at_the_stock(s: Arc<dyn Store>) {
    let t = claimable(&s, 5, 1).await;
    let batch: Vec<ClaimRequest> = (0..8).map(|i| req(&format!("u{i}"))).collect();
    let out = s.claim_batch(t.id, &batch, at(15)).await.unwrap();
    assert_eq!(tally(&out), (5, 3, 0, 0));
    // First come, first served: the first five requests got the coupons.
    assert!(out[..5]
        .iter()
        .all(|o| matches!(o, ClaimOutcome::Issued(_))));
    if let ClaimOutcome::Issued(c) = &out[0] {
        assert_eq!(
            (c.template_id, c.user_id.as_str(), c.claimed_at),
            (t.id, "u0", at(15))
        );
        assert_eq!(
            (c.valid_from, c.valid_until, c.stored_status),
            (at(15), at(63), coupond_domain::CouponStatus::Unused)
        );
    }
    assert_eq!(s.template(t.id).await.unwrap().claimed, 5);
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 5);
    let again = s.claim_batch(t.id, &[req("late")], at(16)).await.unwrap();
    assert_eq!(again, vec![ClaimOutcome::SoldOut]);
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 5);
}

pub async fn claims_respect_the_per_user_limit(s: Arc<dyn Store>) {
    let t = claimable(&s, 100, 2).await;
    let out = s
        .claim_batch(t.id, &[req("a"), req("a"), req("a"), req("b")], at(15))
        .await
        .unwrap();
    assert!(matches!(out[0], ClaimOutcome::Issued(_)) && matches!(out[1], ClaimOutcome::Issued(_)));
    assert_eq!(
        (&out[2], tally(&out)),
        (&ClaimOutcome::LimitReached, (3, 0, 1, 0))
    );
    let out = s
        .claim_batch(t.id, &[req("a"), req("b")], at(16))
        .await
        .unwrap();
    assert_eq!(tally(&out), (1, 0, 1, 0));
    assert_eq!(out[0], ClaimOutcome::LimitReached);
    assert_eq!(s.template(t.id).await.unwrap().claimed, 4);
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 4);
    // The coupon centre reads the same counters: per template, none where never claimed.
    let other = claimable(&s, 10, 1).await;
    let user = |u: &str| coupond_domain::UserId::parse(u).unwrap();
    let both = [t.id, other.id];
    assert_eq!(s.held(&user("a"), &both).await.unwrap(), vec![(t.id, 2)]);
    assert_eq!(s.held(&user("b"), &both).await.unwrap(), vec![(t.id, 2)]);
    assert_eq!(s.held(&user("c"), &both).await.unwrap(), vec![]);
    assert_eq!(s.held(&user("a"), &[]).await.unwrap(), vec![]);
}

pub async fn claims_outside_the_window_or_aborted_leave_nothing(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 1).await;
    for now in [at(9), at(20)] {
        let out = s
            .claim_batch(t.id, &[req("a"), req("b")], now)
            .await
            .unwrap();
        assert_eq!(tally(&out), (0, 0, 0, 2));
    }
    let t = s.abort_template(t.id, t.version, at(11)).await.unwrap();
    assert_eq!(
        tally(&s.claim_batch(t.id, &[req("a")], at(15)).await.unwrap()),
        (0, 0, 0, 1)
    );
    assert_eq!(
        (t.claimed, s.inspect().count_coupons(t.id).await.unwrap()),
        (0, 0)
    );
    let missing = coupond_domain::TemplateId::new(t.id.get() + 100).unwrap();
    assert!(matches!(
        s.claim_batch(missing, &[req("a")], at(15)).await,
        Err(StoreError::NotFound)
    ));
}

/// Twenty concurrent batches of ten distinct users race for 50 coupons: exactly 50 issued.
pub async fn concurrent_batches_never_over_issue(s: Arc<dyn Store>) {
    let t = claimable(&s, 50, 1).await;
    let mut joins = vec![];
    for b in 0..20 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            let batch: Vec<ClaimRequest> = (0..10).map(|i| req(&format!("u{b}-{i}"))).collect();
            s.claim_batch(t.id, &batch, at(15)).await.unwrap()
        }));
    }
    let mut all = vec![];
    for j in joins {
        all.extend(j.await.unwrap());
    }
    assert_eq!(tally(&all), (50, 150, 0, 0));
    assert_eq!(s.template(t.id).await.unwrap().claimed, 50);
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 50);
    let audit = s.inspect().audit_template(t.id).await.unwrap();
    assert_eq!((audit.coupons, audit.max_per_user), (50, 1));
    assert!(audit.violations().is_empty(), "{audit:?}");
    let issued: Vec<_> = all
        .iter()
        .filter_map(|o| {
            if let ClaimOutcome::Issued(c) = o {
                Some(c.id)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        s.inspect()
            .count_coupons_among(t.id, &issued)
            .await
            .unwrap(),
        50
    );
    let bogus = [coupond_domain::CouponId::new(i64::MAX / 2).unwrap()];
    assert_eq!(
        s.inspect().count_coupons_among(t.id, &bogus).await.unwrap(),
        0
    );
}

/// One user firing 30 claims at once at a limit of 3: exactly 3.
pub async fn concurrent_claims_of_one_user_hold_the_limit(s: Arc<dyn Store>) {
    let t = claimable(&s, 100, 3).await;
    let mut joins = vec![];
    for _ in 0..30 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            s.claim_batch(t.id, &[req("greedy")], at(15)).await.unwrap()
        }));
    }
    let mut all = vec![];
    for j in joins {
        all.extend(j.await.unwrap());
    }
    assert_eq!(tally(&all), (3, 0, 27, 0));
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 3);
}

pub async fn wallets_list_soonest_expiring_first(s: Arc<dyn Store>) {
    let t = claimable(&s, 100, 10).await;
    let mut ids = vec![];
    for (i, until) in [(0, 40), (1, 30), (2, 50)] {
        let r = ClaimRequest {
            valid_until: at(until),
            ..req("w")
        };
        let out = s.claim_batch(t.id, &[r], at(15 + i)).await.unwrap();
        let ClaimOutcome::Issued(c) = &out[0] else {
            panic!("{out:?}")
        };
        ids.push((until, c.id));
    }
    s.claim_batch(t.id, &[req("someone-else")], at(15))
        .await
        .unwrap();
    ids.sort();
    let q = |status, after, limit| CouponQuery {
        merchant: None,
        user: coupond_domain::UserId::parse("w").unwrap(),
        status,
        now: at(35),
        after,
        limit,
    };
    let all: Vec<_> = s
        .user_coupons(&q(None, None, 10))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(all, ids.iter().map(|(_, id)| *id).collect::<Vec<_>>());
    let unused = s
        .user_coupons(&q(Some(coupond_domain::CouponStatus::Unused), None, 10))
        .await
        .unwrap();
    assert_eq!(
        unused.len(),
        2,
        "the one valid until hour 30 has expired at hour 35"
    );
    let expired = s
        .user_coupons(&q(Some(coupond_domain::CouponStatus::Expired), None, 10))
        .await
        .unwrap();
    assert_eq!(
        expired.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![ids[0].1]
    );
    let first = s.user_coupons(&q(None, None, 1)).await.unwrap();
    let after = (first[0].valid_until, first[0].id.get());
    let rest: Vec<_> = s
        .user_coupons(&q(None, Some(after), 10))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(rest, vec![ids[1].1, ids[2].1]);
    // A merchant's support view: only its own templates' coupons.
    let owner = t.merchant_id.expect("the fixture template has a merchant");
    let other = coupond_domain::MerchantId::new(owner.get() + 1000).unwrap();
    for (merchant, want) in [(owner, 3), (other, 0)] {
        let q = CouponQuery {
            merchant: Some(merchant),
            ..q(None, None, 10)
        };
        assert_eq!(s.user_coupons(&q).await.unwrap().len(), want, "{merchant}");
    }
}

/// A retried claim with the same key gets the same coupon, never a second one, even once the
/// stock is gone or the window has closed; the same key for another request is refused; a
/// refused claim leaves its key free.
pub async fn claim_keys_replay_the_same_coupon(s: Arc<dyn Store>) {
    let t = claimable(&s, 2, 5).await;
    let first = s
        .claim_batch(t.id, &[keyed("a", "k1", 1)], at(15))
        .await
        .unwrap();
    let ClaimOutcome::Issued(c) = &first[0] else {
        panic!("{first:?}")
    };
    let again = s
        .claim_batch(t.id, &[keyed("a", "k1", 1)], at(16))
        .await
        .unwrap();
    assert_eq!(again, vec![ClaimOutcome::Replayed(c.clone())]);
    let other = s
        .claim_batch(t.id, &[keyed("a", "k1", 2)], at(16))
        .await
        .unwrap();
    assert_eq!(other, vec![ClaimOutcome::KeyReused]);
    // Exhaust the stock; the retry still gets its coupon; a new key gets sold_out and stays free.
    s.claim_batch(t.id, &[req("b")], at(15)).await.unwrap();
    assert_eq!(
        s.claim_batch(t.id, &[keyed("a", "k1", 1)], at(16))
            .await
            .unwrap(),
        again
    );
    assert_eq!(
        s.claim_batch(t.id, &[keyed("c", "k2", 3)], at(16))
            .await
            .unwrap(),
        vec![ClaimOutcome::SoldOut]
    );
    assert_eq!(
        s.claim_batch(t.id, &[keyed("a", "k1", 1)], at(25))
            .await
            .unwrap(),
        again,
        "after the window"
    );
    assert_eq!(
        s.claim_batch(t.id, &[keyed("c", "k2", 3)], at(25))
            .await
            .unwrap(),
        vec![ClaimOutcome::NotClaimable]
    );
    assert_eq!(
        (
            s.inspect().count_coupons(t.id).await.unwrap(),
            s.template(t.id).await.unwrap().claimed
        ),
        (2, 2)
    );

    // Concurrent retries of one key: exactly one coupon.
    let t = claimable(&s, 100, 100).await;
    let mut joins = vec![];
    for _ in 0..20 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            s.claim_batch(t.id, &[keyed("z", "same", 9)], at(15))
                .await
                .unwrap()
        }));
    }
    let mut coupons = std::collections::BTreeSet::new();
    for j in joins {
        match j.await.unwrap().pop().unwrap() {
            ClaimOutcome::Issued(c) | ClaimOutcome::Replayed(c) => {
                coupons.insert(c.id);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(coupons.len(), 1);
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 1);
}

/// An issuance inserted again under the same key (an upload retried after its first attempt
/// died with the process) is the same job; another key or no key makes a new one.
pub async fn issuance_keys_start_one_job(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 1).await;
    let users = vec![coupond_domain::UserId::parse("a").unwrap()];
    let actor = coupond_domain::Actor::Platform;
    let new = |key: Option<&'static str>| crate::NewIssuance {
        template: t.id,
        actor: &actor,
        users: &users,
        duplicates: 0,
        invalid: 0,
        invalid_lines: &[],
        key: key.map(|key| crate::IssuanceKey {
            key,
            fingerprint: [7; 32],
        }),
    };
    let (first, created) = s.insert_issuance(&new(Some("k1")), at(1)).await.unwrap();
    assert!(created);
    assert_eq!(first.key_fingerprint, Some([7; 32]));
    let (again, created) = s.insert_issuance(&new(Some("k1")), at(2)).await.unwrap();
    assert!(!created, "the key's job, not a new one");
    assert_eq!(again, first);
    let (other, _) = s.insert_issuance(&new(Some("k2")), at(2)).await.unwrap();
    let (bare, _) = s.insert_issuance(&new(None), at(2)).await.unwrap();
    let (bare2, _) = s.insert_issuance(&new(None), at(2)).await.unwrap();
    assert_eq!(bare.key_fingerprint, None);
    let ids = [first.id, other.id, bare.id, bare2.id];
    assert_eq!(
        ids.iter().collect::<std::collections::HashSet<_>>().len(),
        4,
        "{ids:?}"
    );
    assert_eq!(s.open_issuances().await.unwrap().len(), 4);
    // The template's jobs, by id, paged.
    let page = |after, limit| crate::Page { after, limit };
    let listed = s.template_issuances(t.id, page(None, 10)).await.unwrap();
    let mut sorted = ids;
    sorted.sort_unstable();
    assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), sorted);
    let rest = s
        .template_issuances(t.id, page(Some(sorted[1]), 10))
        .await
        .unwrap();
    assert_eq!(rest.iter().map(|j| j.id).collect::<Vec<_>>(), &sorted[2..]);
}
