//! Templates: round trips, status filters, version checks, publish and abort, concurrent
//! updates, and activity edits that move their templates.

use super::*;

pub(super) async fn spec_standalone(
    s: &Arc<dyn Store>,
    m: &coupond_domain::Merchant,
) -> coupond_domain::TemplateId {
    let spec = spec(standalone_template(10, 20), m, None, t0());
    s.insert_template(
        &NewTemplate {
            merchant_id: Some(m.id),
            spec: &spec,
            activity_version: None,
            review: Default::default(),
        },
        t0(),
    )
    .await
    .unwrap()
    .id
}

pub async fn templates_round_trip(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let spec = spec(standalone_template(10, 20), &m, None, t0());
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
    assert_eq!(
        (&t.spec, t.merchant_id, t.claimed, t.version),
        (&spec, Some(m.id), 0, 1)
    );
    assert_eq!(
        (t.published_at, t.aborted_at, t.created_at),
        (None, None, t0())
    );
    assert_eq!(s.template(t.id).await.unwrap(), t);

    // Platform-issued templates have no owner.
    let p = s
        .insert_template(
            &NewTemplate {
                merchant_id: None,
                spec: &spec,
                activity_version: None,
                review: Default::default(),
            },
            t0(),
        )
        .await
        .unwrap();
    assert_eq!(s.template(p.id).await.unwrap().merchant_id, None);

    let mut d = spec.draft().clone();
    d.total_stock = 5;
    d.title = "Changed".into();
    let changed = crate::testing::fixtures::spec(d, &m, None, t0());
    let u = s
        .update_template(t.id, t.version, None, &changed, None, at(1))
        .await
        .unwrap();
    assert_eq!((u.spec.total_stock, u.version, u.updated_at), (5, 2, at(1)));
    assert_eq!(s.template(t.id).await.unwrap(), u);
    assert!(matches!(
        s.update_template(t.id, t.version, None, &spec, None, at(2))
            .await,
        Err(StoreError::Conflict(Conflict::Version))
    ));

    let q = TemplateQuery {
        city: None,
        narrow: Default::default(),
        merchant: Some(m.id),
        ..tq(t0())
    };
    assert_eq!(s.list_templates(&q).await.unwrap().len(), 1);
    assert_eq!(s.list_templates(&tq(t0())).await.unwrap().len(), 2);
    let missing = coupond_domain::TemplateId::new(p.id.get() + 10).unwrap();
    assert!(matches!(
        s.template(missing).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn template_status_filter_matches_domain(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let a = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    let mut all = vec![];
    for (from, to, publish) in [
        (10, 20, true),
        (10, 20, false),
        (30, 40, true),
        (5, 6, true),
    ] {
        let spec = spec(standalone_template(from, to), &m, None, t0());
        let mut t = s
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
        if publish {
            t = s.publish_template(t.id, t.version, t0()).await.unwrap();
        }
        all.push(t);
    }
    let mut d = standalone_template(0, 1);
    d.activity_id = Some(a.id);
    d.claim_window = Some(window(50, 60));
    d.validity = coupond_domain::Validity::Fixed {
        from: at(50),
        until: at(70),
    };
    let spec_a = spec(d, &m, Some(&a), at(1));
    all.push(
        s.insert_template(
            &NewTemplate {
                merchant_id: Some(m.id),
                spec: &spec_a,
                activity_version: Some(a.version),
                review: Default::default(),
            },
            at(1),
        )
        .await
        .unwrap(),
    );
    let t = all[2].clone();
    all[2] = s.abort_template(t.id, t.version, at(1)).await.unwrap();
    // Enrollments waiting for approval, approved at hour 2, rejected at hour 2.
    let decisions = [
        None,
        Some(coupond_domain::Review::Approved { at: at(2) }),
        Some(coupond_domain::Review::Rejected {
            at: at(2),
            reason: "no".into(),
        }),
    ];
    for decision in decisions {
        let new = NewTemplate {
            merchant_id: Some(m.id),
            spec: &spec_a,
            activity_version: Some(a.version),
            review: coupond_domain::Review::Pending,
        };
        let mut t = s.insert_template(&new, at(1)).await.unwrap();
        assert_eq!(t.review, coupond_domain::Review::Pending);
        if let Some(r) = decision {
            t = s
                .review_template(t.id, t.version, &r, &coupond_domain::Actor::Platform, at(2))
                .await
                .unwrap();
            assert_eq!(t.review, r);
            let again =
                s.review_template(t.id, t.version, &r, &coupond_domain::Actor::Platform, at(2));
            assert!(
                again.await.is_err(),
                "only a pending template is decided on"
            );
        }
        all.push(t);
    }

    let us = Duration::microseconds(1);
    let mut instants = vec![];
    for h in [5, 6, 10, 20, 30, 50, 54, 60, 68, 70] {
        instants.extend([at(h).minus(us), at(h), at(h).plus(us)]);
    }
    for now in instants {
        for status in TemplateStatus::ALL {
            let q = TemplateQuery {
                city: None,
                narrow: Default::default(),
                status: Some(status),
                ..tq(now)
            };
            let got: Vec<_> = s
                .list_templates(&q)
                .await
                .unwrap()
                .into_iter()
                .map(|t| t.id)
                .collect();
            let want: Vec<_> = all
                .iter()
                .filter(|t| t.status(now) == status)
                .map(|t| t.id)
                .collect();
            assert_eq!(got, want, "status {status:?} at {now}");
        }
    }
    let q = TemplateQuery {
        city: None,
        narrow: Default::default(),
        activity: Some(a.id),
        ..tq(t0())
    };
    assert_eq!(s.list_templates(&q).await.unwrap().len(), 4);
    assert_eq!(s.activity_templates(a.id).await.unwrap().len(), 4);
}

pub async fn template_insert_checks_activity_version(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let a = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    let mut d = standalone_template(0, 1);
    d.activity_id = Some(a.id);
    d.claim_window = None;
    let spec = spec(d, &m, Some(&a), at(1));
    let b = s
        .update_activity(a.id, a.version, a.enrollment_seq, &a.spec, &[], at(1))
        .await
        .unwrap();
    let stale = NewTemplate {
        merchant_id: Some(m.id),
        spec: &spec,
        activity_version: Some(a.version),
        review: Default::default(),
    };
    assert!(matches!(
        s.insert_template(&stale, at(1)).await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    assert!(
        s.activity_templates(a.id).await.unwrap().is_empty(),
        "nothing written"
    );
    let fresh = NewTemplate {
        activity_version: Some(b.version),
        review: Default::default(),
        ..stale
    };
    let t = s.insert_template(&fresh, at(1)).await.unwrap();
    // The template write bumped the enrollment sequence: an activity edit prepared before it
    // (which could not have re-validated this template) now loses.
    assert!(matches!(
        s.update_activity(b.id, b.version, b.enrollment_seq, &b.spec, &[], at(2))
            .await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    let b = s.activity(b.id).await.unwrap();
    assert_eq!(b.enrollment_seq, 1);
    // Updating the template also checks the activity's version.
    assert!(matches!(
        s.update_template(t.id, t.version, Some(a.version), &spec, None, at(2))
            .await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    s.update_template(t.id, t.version, Some(b.version), &spec, None, at(2))
        .await
        .unwrap();
}

pub async fn template_publish_and_abort(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let id = spec_standalone(&s, &m).await;
    let t = s.template(id).await.unwrap();
    let p = s.publish_template(id, t.version, at(1)).await.unwrap();
    assert_eq!((p.published_at, p.version), (Some(at(1)), t.version + 1));
    assert!(matches!(
        s.publish_template(id, t.version, at(2)).await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    let a = s.abort_template(id, p.version, at(11)).await.unwrap();
    assert_eq!(a.aborted_at, Some(at(11)));
    assert_eq!(
        s.template(id).await.unwrap().status(at(12)),
        TemplateStatus::Aborted
    );
}

/// Many writers race to update one record from the same version: exactly one wins.
pub async fn concurrent_updates_one_wins(s: Arc<dyn Store>) {
    let a = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    let mut joins = vec![];
    for i in 0..16 {
        let (s, a) = (s.clone(), a.clone());
        joins.push(tokio::spawn(async move {
            let spec = coupond_domain::ActivityPatch {
                title: Some(format!("T{i}")),
                ..Default::default()
            }
            .apply(&a.spec)
            .unwrap();
            s.update_activity(a.id, a.version, a.enrollment_seq, &spec, &[], at(1))
                .await
        }));
    }
    let mut ok = 0;
    for j in joins {
        match j.await.unwrap() {
            Ok(_) => ok += 1,
            Err(StoreError::Conflict(Conflict::Version)) => {}
            Err(e) => panic!("unexpected error: {e:?}"),
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(s.activity(a.id).await.unwrap().version, 2);
}

/// Templates whose claim window follows the activity move with its run window, in the same
/// transaction as the activity edit; templates with their own window stay.
pub async fn activity_edit_moves_following_templates(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let a = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    let mut d = standalone_template(0, 1);
    d.activity_id = Some(a.id);
    d.claim_window = None;
    let follows = spec(d.clone(), &m, Some(&a), at(1));
    assert!(follows.follows_activity());
    let follows = s
        .insert_template(
            &NewTemplate {
                merchant_id: Some(m.id),
                spec: &follows,
                activity_version: Some(a.version),
                review: Default::default(),
            },
            at(1),
        )
        .await
        .unwrap();
    d.claim_window = Some(window(50, 60));
    let own = spec(d, &m, Some(&a), at(1));
    let own = s
        .insert_template(
            &NewTemplate {
                merchant_id: Some(m.id),
                spec: &own,
                activity_version: Some(a.version),
                review: Default::default(),
            },
            at(1),
        )
        .await
        .unwrap();
    let a = s.activity(a.id).await.unwrap();
    let mut draft = a.spec.clone().into_draft();
    draft.run = window(48, 120);
    let edited = coupond_domain::Activity {
        spec: draft.try_into().unwrap(),
        ..a.clone()
    };
    let rebased = follows.spec.rebase(&edited).unwrap();
    assert_eq!(rebased.claim_window(), window(48, 120));
    s.update_activity(
        a.id,
        a.version,
        a.enrollment_seq,
        &edited.spec,
        &[(follows.id, rebased.clone())],
        at(2),
    )
    .await
    .unwrap();
    let moved = s.template(follows.id).await.unwrap();
    assert_eq!(moved.spec, rebased);
    assert_eq!(
        (moved.version, moved.updated_at),
        (follows.version + 1, at(2))
    );
    assert_eq!(
        moved.status(at(100)),
        TemplateStatus::Active,
        "claimable in the extended run"
    );
    assert_eq!(s.template(own.id).await.unwrap(), own);
    // Listing by status sees the moved window too.
    let q = TemplateQuery {
        city: None,
        narrow: Default::default(),
        status: Some(TemplateStatus::Active),
        ..tq(at(100))
    };
    let active: Vec<_> = s
        .list_templates(&q)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(active, vec![follows.id]);
}
