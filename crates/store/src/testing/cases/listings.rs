//! Listings: updates, search by city and coupon, and the bind limit under concurrency.

use super::*;

async fn listing_in(
    s: &Arc<dyn Store>,
    m: coupond_domain::MerchantId,
    city: i64,
    category: i64,
) -> coupond_domain::Listing {
    let draft = ListingDraft {
        external_id: None,
        city_id: coupond_domain::CityId::new(city).unwrap(),
        category_id: coupond_domain::CategoryId::new(category).unwrap(),
        title: "Room".into(),
        price: Money::new(100_000).unwrap(),
        deposit: Money::new(200_000).unwrap(),
    };
    s.insert_listing(m, &draft, t0()).await.unwrap()
}

/// A published standalone template of `m`, claimable hours [from, to).
async fn live_template(
    s: &Arc<dyn Store>,
    m: &coupond_domain::Merchant,
    from: i64,
    to: i64,
) -> coupond_domain::Template {
    let spec = spec(standalone_template(from, to), m, None, t0());
    let t = s
        .insert_template(
            &NewTemplate {
                merchant_id: Some(m.id),
                spec: &spec,
                activity_version: None,
                review: Default::default(),
            },
            t0(),
        )
        .await
        .unwrap();
    s.publish_template(t.id, t.version, t0()).await.unwrap()
}

pub async fn listings_update_and_search(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let a = listing_in(&s, m.id, 1, 4).await;
    let b = listing_in(&s, m.id, 2, 4).await;
    let c = listing_in(&s, m.id, 1, 5).await;
    let t = live_template(&s, &m, 10, 20).await;
    let later = live_template(&s, &m, 30, 40).await;
    assert!(s.bind(a.id, t.id, 3, t0()).await.unwrap());
    assert!(s.bind(b.id, later.id, 3, t0()).await.unwrap());
    let q = |now| ListingQuery {
        merchant: None,
        external_id: None,
        city: None,
        category: None,
        kind: None,
        activity: None,
        activity_type: None,
        template: None,
        has_coupon: None,
        now,
        page: page(),
    };
    let ids = |v: Vec<coupond_domain::Listing>| v.into_iter().map(|l| l.id).collect::<Vec<_>>();
    assert_eq!(
        ids(s.list_listings(&q(at(15))).await.unwrap()),
        vec![a.id, b.id, c.id]
    );
    let city1 = ListingQuery {
        city: Some(coupond_domain::CityId::new(1).unwrap()),
        ..q(at(15))
    };
    assert_eq!(
        ids(s.list_listings(&city1).await.unwrap()),
        vec![a.id, c.id]
    );
    let cat5 = ListingQuery {
        category: Some(coupond_domain::CategoryId::new(5).unwrap()),
        ..q(at(15))
    };
    assert_eq!(ids(s.list_listings(&cat5).await.unwrap()), vec![c.id]);
    // Coupon filters see only templates claimable at `now`: no lag when a window opens or closes.
    let with = |now| ListingQuery {
        has_coupon: Some(true),
        ..q(now)
    };
    assert_eq!(
        ids(s.list_listings(&with(at(9))).await.unwrap()),
        Vec::<coupond_domain::ListingId>::new()
    );
    assert_eq!(
        ids(s.list_listings(&with(at(10))).await.unwrap()),
        vec![a.id]
    );
    assert_eq!(
        ids(s.list_listings(&with(at(20))).await.unwrap()),
        Vec::<coupond_domain::ListingId>::new()
    );
    assert_eq!(
        ids(s.list_listings(&with(at(35))).await.unwrap()),
        vec![b.id]
    );
    let without = ListingQuery {
        has_coupon: Some(false),
        ..q(at(15))
    };
    assert_eq!(
        ids(s.list_listings(&without).await.unwrap()),
        vec![b.id, c.id]
    );
    let by_template = ListingQuery {
        template: Some(t.id),
        ..q(at(15))
    };
    assert_eq!(
        ids(s.list_listings(&by_template).await.unwrap()),
        vec![a.id]
    );
    let by_kind = ListingQuery {
        kind: Some(coupond_domain::CouponKind::AmountOff),
        ..q(at(15))
    };
    assert_eq!(ids(s.list_listings(&by_kind).await.unwrap()), vec![a.id]);
    let wrong_kind = ListingQuery {
        kind: Some(coupond_domain::CouponKind::FreeDays),
        ..q(at(15))
    };
    assert!(s.list_listings(&wrong_kind).await.unwrap().is_empty());
    let live = s.live_templates(&[a.id, b.id, c.id], at(15)).await.unwrap();
    assert_eq!(
        live.iter().map(|(l, t)| (*l, t.id)).collect::<Vec<_>>(),
        vec![(a.id, t.id)]
    );
    assert!(s.live_templates(&[], at(15)).await.unwrap().is_empty());

    // Update keeps the merchant; a taken external id conflicts.
    let mut d = a.draft.clone();
    d.title = "Renamed".into();
    d.external_id = Some("x-1".into());
    let u = s.update_listing(a.id, &d, at(1)).await.unwrap();
    assert_eq!(
        (u.draft.title.as_str(), u.merchant_id, u.updated_at),
        ("Renamed", m.id, at(1))
    );
    let mut d2 = b.draft.clone();
    d2.external_id = Some("x-1".into());
    assert!(matches!(
        s.update_listing(b.id, &d2, at(1)).await,
        Err(StoreError::Conflict(_))
    ));
    let missing = coupond_domain::ListingId::new(c.id.get() + 100).unwrap();
    assert!(matches!(
        s.update_listing(missing, &d, at(1)).await,
        Err(StoreError::NotFound)
    ));
}

/// Twenty binds of different templates to one listing, all at once: exactly `max` succeed.
pub async fn bind_limit_holds_under_concurrency(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let l = listing_in(&s, m.id, 1, 4).await;
    let mut templates = vec![];
    for _ in 0..20 {
        templates.push(live_template(&s, &m, 10, 20).await.id);
    }
    let mut joins = vec![];
    for t in templates.clone() {
        let s = s.clone();
        joins.push(tokio::spawn(async move { s.bind(l.id, t, 3, t0()).await }));
    }
    let (mut ok, mut limited) = (0, 0);
    for j in joins {
        match j.await.unwrap() {
            Ok(true) => ok += 1,
            Err(StoreError::Conflict(Conflict::Limit)) => limited += 1,
            other => panic!("unexpected: {other:?}"),
        }
    }
    assert_eq!((ok, limited), (3, 17));
    let bound = s.listing_bindings(l.id).await.unwrap();
    assert_eq!(bound.len(), 3);
    // Binding again is a no-op; unbinding frees a slot; unbinding twice is a no-op.
    assert!(!s.bind(l.id, bound[0], 3, t0()).await.unwrap());
    assert!(s.unbind(l.id, bound[0]).await.unwrap());
    assert!(!s.unbind(l.id, bound[0]).await.unwrap());
    let spare = templates
        .iter()
        .find(|t| !bound.contains(t))
        .copied()
        .unwrap();
    assert!(s.bind(l.id, spare, 3, t0()).await.unwrap());
    assert!(matches!(
        s.bind(l.id, bound[0], 3, t0()).await,
        Err(StoreError::Conflict(Conflict::Limit))
    ));
    let ghost = coupond_domain::ListingId::new(l.id.get() + 100).unwrap();
    assert!(matches!(
        s.bind(ghost, spare, 3, t0()).await,
        Err(StoreError::NotFound)
    ));
}

/// Aborting a template (or its activity) removes its bindings and frees the slots.
pub async fn abort_releases_bindings(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let l = listing_in(&s, m.id, 1, 4).await;
    let t1 = live_template(&s, &m, 10, 20).await;
    let a = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    let mut d = standalone_template(0, 1);
    d.activity_id = Some(a.id);
    d.claim_window = None;
    let in_activity = spec(d, &m, Some(&a), at(1));
    let t2 = s
        .insert_template(
            &NewTemplate {
                merchant_id: Some(m.id),
                spec: &in_activity,
                activity_version: Some(a.version),
                review: Default::default(),
            },
            at(1),
        )
        .await
        .unwrap();
    s.bind(l.id, t1.id, 2, t0()).await.unwrap();
    s.bind(l.id, t2.id, 2, t0()).await.unwrap();
    let t3 = live_template(&s, &m, 10, 20).await;
    assert!(matches!(
        s.bind(l.id, t3.id, 2, t0()).await,
        Err(StoreError::Conflict(Conflict::Limit))
    ));
    s.abort_template(t1.id, t1.version, at(2)).await.unwrap();
    assert_eq!(s.listing_bindings(l.id).await.unwrap(), vec![t2.id]);
    assert!(s.bind(l.id, t3.id, 2, t0()).await.unwrap());
    let a = s.activity(a.id).await.unwrap();
    s.abort_activity(a.id, a.version, at(3)).await.unwrap();
    assert_eq!(s.listing_bindings(l.id).await.unwrap(), vec![t3.id]);
    let t4 = live_template(&s, &m, 10, 20).await;
    assert!(
        s.bind(l.id, t4.id, 2, t0()).await.unwrap(),
        "the activity's slot is free again"
    );
}

/// A listing's limit counts templates that still give coupons: once three bound templates'
/// claim windows are over, a fourth binds, and the dead ones are unbound with it.
pub async fn ended_templates_free_their_binding_slots(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let l = listing_in(&s, m.id, 1, 4).await;
    let mut ended = vec![];
    for _ in 0..3 {
        let t = live_template(&s, &m, 10, 20).await.id;
        assert!(s.bind(l.id, t, 3, at(11)).await.unwrap());
        ended.push(t);
    }
    let later = live_template(&s, &m, 10, 40).await.id;
    assert!(matches!(
        s.bind(l.id, later, 3, at(19)).await,
        Err(StoreError::Conflict(Conflict::Limit))
    ));
    assert!(
        s.bind(l.id, later, 3, at(20)).await.unwrap(),
        "ended at hour 20"
    );
    assert_eq!(s.listing_bindings(l.id).await.unwrap(), vec![later]);
    // The count followed: two more slots.
    for _ in 0..2 {
        let t = live_template(&s, &m, 10, 40).await.id;
        assert!(s.bind(l.id, t, 3, at(21)).await.unwrap());
    }
    let one_more = live_template(&s, &m, 10, 40).await.id;
    assert!(matches!(
        s.bind(l.id, one_more, 3, at(21)).await,
        Err(StoreError::Conflict(Conflict::Limit))
    ));
}
