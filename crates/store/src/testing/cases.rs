//! The conformance cases. Each takes a store on a fresh database and panics on a deviation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::Conflict;
use std::sync::Arc;

use coupond_domain::{ActivityStatus, ListingDraft, Money, TemplateStatus, Timestamp};
use time::Duration;

mod checkout;
mod codes;
mod events;
mod scheduling;
mod stock;
pub use checkout::*;
pub use codes::*;
pub use events::*;
pub use scheduling::*;
pub use stock::*;

use super::fixtures::*;
use crate::{
    ActivityQuery, ClaimOutcome, ClaimRequest, CouponQuery, IdempotencyKey, ListingQuery,
    NewApiKey, NewTemplate, Page, Role, Store, StoreError, TemplateQuery,
};

const FREEZE: Duration = Duration::minutes(5);

fn page() -> Page {
    Page {
        after: None,
        limit: 100,
    }
}

fn aq(now: Timestamp) -> ActivityQuery {
    ActivityQuery {
        status: None,
        city: None,
        any_city: None,
        now,
        freeze: FREEZE,
        page: page(),
    }
}

fn tq(now: Timestamp) -> TemplateQuery {
    TemplateQuery {
        merchant: None,
        activity: None,
        status: None,
        now,
        page: page(),
    }
}

pub async fn settings_init_once(s: Arc<dyn Store>) {
    let a = s.setting_or_init("jwt_secret", "first").await.unwrap();
    let b = s.setting_or_init("jwt_secret", "second").await.unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("first", "first"));
    s.put_setting("jwt_secret", "replaced").await.unwrap();
    s.put_setting("fresh", "new").await.unwrap();
    assert_eq!(
        s.setting_or_init("jwt_secret", "third").await.unwrap(),
        "replaced"
    );
    assert_eq!(s.setting_or_init("fresh", "other").await.unwrap(), "new");
    // Concurrent initialisers agree on one winner.
    let mut joins = Vec::new();
    for i in 0..8 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            s.setting_or_init("race", &format!("v{i}")).await
        }));
    }
    let mut seen = std::collections::BTreeSet::new();
    for j in joins {
        seen.insert(j.await.unwrap().unwrap());
    }
    assert_eq!(
        seen.len(),
        1,
        "all initialisers see the same value: {seen:?}"
    );
}

pub async fn api_keys_round_trip(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("Keys Co", &[1]), t0())
        .await
        .unwrap();
    let new = NewApiKey {
        hash: [7; 32],
        prefix: "cpd_abc".into(),
        role: Role::Merchant,
        merchant_id: Some(m.id),
        label: "ops".into(),
    };
    let k = s.insert_api_key(&new, t0()).await.unwrap();
    assert_eq!(
        (k.role, k.merchant_id, k.revoked_at),
        (Role::Merchant, Some(m.id), None)
    );
    assert_eq!(s.api_key_by_hash(&[7; 32]).await.unwrap(), k);
    assert!(matches!(
        s.api_key_by_hash(&[8; 32]).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.insert_api_key(&new, t0()).await,
        Err(StoreError::Conflict(_))
    ));
    let platform = NewApiKey {
        hash: [9; 32],
        role: Role::Platform,
        merchant_id: None,
        ..new
    };
    s.insert_api_key(&platform, t0()).await.unwrap();
    let revoked = s.revoke_api_key(k.id, at(1)).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(at(1)));
    // Revoking again keeps the first instant.
    assert_eq!(
        s.revoke_api_key(k.id, at(2)).await.unwrap().revoked_at,
        Some(at(1))
    );
    assert_eq!(
        s.api_key_by_hash(&[7; 32]).await.unwrap().revoked_at,
        Some(at(1))
    );
    assert!(matches!(
        s.revoke_api_key(9999, at(1)).await,
        Err(StoreError::NotFound)
    ));
    let all = s.list_api_keys().await.unwrap();
    assert_eq!(all.len(), 2);
}

pub async fn merchants_round_trip(s: Arc<dyn Store>) {
    let draft = merchant("Sunny Homes", &[2, 1]);
    let m = s.insert_merchant(&draft, t0()).await.unwrap();
    assert_eq!(
        (m.name.as_str(), m.cities.clone(), m.created_at),
        ("Sunny Homes", cities(&[1, 2]), t0())
    );
    assert_eq!(s.merchant(m.id).await.unwrap(), m);
    let other = s
        .insert_merchant(&merchant("Other", &[3]), t0())
        .await
        .unwrap();
    assert_ne!(other.id, m.id);
    let missing = coupond_domain::MerchantId::new(other.id.get() + 100).unwrap();
    assert!(matches!(
        s.merchant(missing).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn listings_round_trip(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("Lister", &[1]), t0())
        .await
        .unwrap();
    let n = s
        .insert_merchant(&merchant("Other", &[1]), t0())
        .await
        .unwrap();
    let draft = ListingDraft {
        external_id: Some("house-1".into()),
        city_id: coupond_domain::CityId::new(1).unwrap(),
        category_id: coupond_domain::CategoryId::new(2).unwrap(),
        title: "Two rooms by the lake".into(),
        price: Money::new(350_000).unwrap(),
        deposit: Money::new(700_000).unwrap(),
    };
    let l = s.insert_listing(m.id, &draft, t0()).await.unwrap();
    assert_eq!((l.merchant_id, &l.draft), (m.id, &draft));
    assert_eq!(s.listing(l.id).await.unwrap(), l);
    // The external id is unique per merchant, not across merchants.
    assert!(matches!(
        s.insert_listing(m.id, &draft, t0()).await,
        Err(StoreError::Conflict(_))
    ));
    s.insert_listing(n.id, &draft, t0()).await.unwrap();
    let no_ext = ListingDraft {
        external_id: None,
        ..draft
    };
    s.insert_listing(m.id, &no_ext, t0()).await.unwrap();
    s.insert_listing(m.id, &no_ext, t0()).await.unwrap();
    let ghost = coupond_domain::MerchantId::new(n.id.get() + 100).unwrap();
    assert!(s.insert_listing(ghost, &no_ext, t0()).await.is_err());
}

pub async fn activities_round_trip(s: Arc<dyn Store>) {
    let spec = activity(0, 24, 48, 96);
    let a = s.insert_activity(&spec, t0()).await.unwrap();
    assert_eq!(
        (&a.spec, a.version, a.aborted_at, a.created_at),
        (&spec, 1, None, t0())
    );
    assert_eq!(s.activity(a.id).await.unwrap(), a);

    let patched = coupond_domain::ActivityPatch {
        title: Some("Renamed".into()),
        ..Default::default()
    }
    .apply(&a.spec)
    .unwrap();
    let b = s
        .update_activity(a.id, a.version, a.enrollment_seq, &patched, &[], at(1))
        .await
        .unwrap();
    assert_eq!(
        (b.spec.title.as_str(), b.version, b.updated_at),
        ("Renamed", 2, at(1))
    );
    // A stale version loses.
    assert!(matches!(
        s.update_activity(a.id, a.version, a.enrollment_seq, &spec, &[], at(2))
            .await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    assert_eq!(s.activity(a.id).await.unwrap(), b);
    let missing = coupond_domain::ActivityId::new(a.id.get() + 10).unwrap();
    assert!(matches!(
        s.activity(missing).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.update_activity(missing, 1, 0, &spec, &[], at(2)).await,
        Err(StoreError::NotFound)
    ));
}

/// For several instants around every boundary, filtering by each status in SQL returns exactly
/// the activities whose domain status is that status.
pub async fn activity_status_filter_matches_domain(s: Arc<dyn Store>) {
    let mut all = vec![
        s.insert_activity(&activity(0, 24, 48, 96), t0())
            .await
            .unwrap(),
        // Enrollment running up to the start: cut short by the freeze.
        s.insert_activity(&activity(10, 30, 30, 40), t0())
            .await
            .unwrap(),
        s.insert_activity(&activity(5, 6, 100, 200), t0())
            .await
            .unwrap(),
    ];
    // Enrollment opening inside the freeze period: scheduled goes straight to frozen.
    let mut late = activity(0, 24, 48, 96).into_draft();
    late.enrollment =
        coupond_domain::Window::new(at(60).minus(Duration::minutes(2)), at(60)).unwrap();
    late.run = window(60, 70);
    all.push(
        s.insert_activity(&late.try_into().unwrap(), t0())
            .await
            .unwrap(),
    );
    let aborted = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    all.push(
        s.abort_activity(aborted.id, aborted.version, at(1))
            .await
            .unwrap(),
    );
    let us = Duration::microseconds(1);
    let mut instants = vec![];
    for h in [0, 5, 6, 10, 24, 30, 40, 48, 96, 100, 200] {
        instants.extend([at(h).minus(us), at(h), at(h).plus(us)]);
    }
    instants.extend([at(30).minus(FREEZE), at(30).minus(FREEZE).minus(us)]);
    for m in [5, 2] {
        let t = at(60).minus(Duration::minutes(m));
        instants.extend([t.minus(us), t, t.plus(us)]);
    }
    instants.extend([at(60), at(70)]);
    for now in instants {
        for status in ActivityStatus::ALL {
            let q = ActivityQuery {
                status: Some(status),
                ..aq(now)
            };
            let got: Vec<_> = s
                .list_activities(&q)
                .await
                .unwrap()
                .into_iter()
                .map(|a| a.id)
                .collect();
            let want: Vec<_> = all
                .iter()
                .filter(|a| a.status(now, FREEZE) == status)
                .map(|a| a.id)
                .collect();
            assert_eq!(got, want, "status {status:?} at {now}");
        }
    }
}

pub async fn activity_city_filters(s: Arc<dyn Store>) {
    let mut spec = activity(0, 24, 48, 96).into_draft();
    spec.cities = cities(&[3]);
    let only3 = s
        .insert_activity(&spec.try_into().unwrap(), t0())
        .await
        .unwrap();
    let both = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();
    let ids = |v: Vec<coupond_domain::Activity>| v.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let city = |c| Some(coupond_domain::CityId::new(c).unwrap());
    let q = ActivityQuery {
        city: city(3),
        ..aq(t0())
    };
    assert_eq!(ids(s.list_activities(&q).await.unwrap()), vec![only3.id]);
    let q = ActivityQuery {
        city: city(2),
        ..aq(t0())
    };
    assert_eq!(ids(s.list_activities(&q).await.unwrap()), vec![both.id]);
    let q = ActivityQuery {
        any_city: Some(cities(&[2, 3])),
        ..aq(t0())
    };
    assert_eq!(
        ids(s.list_activities(&q).await.unwrap()),
        vec![only3.id, both.id]
    );
    let q = ActivityQuery {
        any_city: Some(cities(&[9])),
        ..aq(t0())
    };
    assert!(s.list_activities(&q).await.unwrap().is_empty());
    let q = ActivityQuery {
        any_city: Some(cities(&[1, 9])),
        city: city(3),
        ..aq(t0())
    };
    assert!(s.list_activities(&q).await.unwrap().is_empty());
}

pub async fn activity_pagination(s: Arc<dyn Store>) {
    let mut ids = vec![];
    for _ in 0..7 {
        ids.push(
            s.insert_activity(&activity(0, 24, 48, 96), t0())
                .await
                .unwrap()
                .id,
        );
    }
    let mut seen = vec![];
    let mut after = None;
    loop {
        let q = ActivityQuery {
            page: Page { after, limit: 3 },
            ..aq(t0())
        };
        let batch = s.list_activities(&q).await.unwrap();
        assert!(batch.len() <= 3);
        if batch.is_empty() {
            break;
        }
        after = batch.last().map(|a| a.id.get());
        seen.extend(batch.into_iter().map(|a| a.id));
    }
    assert_eq!(seen, ids);
}

pub async fn abort_activity_aborts_its_templates(s: Arc<dyn Store>) {
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
    d.validity = coupond_domain::Validity::Relative { days: 3 };
    let spec = spec(d, &m, Some(&a), at(1));
    let t = s
        .insert_template(
            &NewTemplate {
                merchant_id: Some(m.id),
                spec: &spec,
                activity_version: Some(a.version),
            },
            at(1),
        )
        .await
        .unwrap();
    let standalone = spec_standalone(&s, &m).await;
    assert!(matches!(
        s.abort_activity(a.id, a.version + 5, at(2)).await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    let aborted = s.abort_activity(a.id, a.version, at(2)).await.unwrap();
    assert_eq!(
        (aborted.aborted_at, aborted.version),
        (Some(at(2)), a.version + 1)
    );
    let t = s.template(t.id).await.unwrap();
    assert_eq!(t.status(at(50)), TemplateStatus::Aborted);
    assert_eq!(t.aborted_at, Some(at(2)));
    // Other templates are untouched.
    assert_eq!(s.template(standalone).await.unwrap().aborted_at, None);
}

async fn spec_standalone(
    s: &Arc<dyn Store>,
    m: &coupond_domain::Merchant,
) -> coupond_domain::TemplateId {
    let spec = spec(standalone_template(10, 20), m, None, t0());
    s.insert_template(
        &NewTemplate {
            merchant_id: Some(m.id),
            spec: &spec,
            activity_version: None,
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
            },
            t0(),
        )
        .await
        .unwrap();
    assert_eq!(s.template(p.id).await.unwrap().merchant_id, None);

    let mut d = spec.draft().clone();
    d.total_stock = 5;
    d.title = "Changed".into();
    let changed = super::fixtures::spec(d, &m, None, t0());
    let u = s
        .update_template(t.id, t.version, None, &changed, at(1))
        .await
        .unwrap();
    assert_eq!((u.spec.total_stock, u.version, u.updated_at), (5, 2, at(1)));
    assert_eq!(s.template(t.id).await.unwrap(), u);
    assert!(matches!(
        s.update_template(t.id, t.version, None, &spec, at(2)).await,
        Err(StoreError::Conflict(Conflict::Version))
    ));

    let q = TemplateQuery {
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
            },
            at(1),
        )
        .await
        .unwrap(),
    );
    let t = all[2].clone();
    all[2] = s.abort_template(t.id, t.version, at(1)).await.unwrap();

    let us = Duration::microseconds(1);
    let mut instants = vec![];
    for h in [5, 6, 10, 20, 30, 50, 54, 60, 68, 70] {
        instants.extend([at(h).minus(us), at(h), at(h).plus(us)]);
    }
    for now in instants {
        for status in TemplateStatus::ALL {
            let q = TemplateQuery {
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
        activity: Some(a.id),
        ..tq(t0())
    };
    assert_eq!(s.list_templates(&q).await.unwrap().len(), 1);
    assert_eq!(s.activity_templates(a.id).await.unwrap().len(), 1);
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
        s.update_template(t.id, t.version, Some(a.version), &spec, at(2))
            .await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    s.update_template(t.id, t.version, Some(b.version), &spec, at(2))
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
        city: None,
        category: None,
        kind: None,
        activity: None,
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

async fn claimable(s: &Arc<dyn Store>, stock: i64, limit: u32) -> coupond_domain::Template {
    claimable_template(s.as_ref(), stock, limit).await
}

fn req(user: &str) -> ClaimRequest {
    ClaimRequest {
        user: coupond_domain::UserId::parse(user).unwrap(),
        actor: coupond_domain::Actor::User(coupond_domain::UserId::parse(user).unwrap()),
        valid_from: at(15),
        valid_until: at(15 + 48),
        idempotency: None,
        code: None,
        issuance: None,
    }
}

fn keyed(user: &str, key: &str, fingerprint: u8) -> ClaimRequest {
    ClaimRequest {
        idempotency: Some(IdempotencyKey {
            key: key.to_owned(),
            fingerprint: [fingerprint; 32],
        }),
        ..req(user)
    }
}

fn tally(outcomes: &[ClaimOutcome]) -> (usize, usize, usize, usize) {
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
    assert_eq!(s.count_coupons(t.id).await.unwrap(), 5);
    let again = s.claim_batch(t.id, &[req("late")], at(16)).await.unwrap();
    assert_eq!(again, vec![ClaimOutcome::SoldOut]);
    assert_eq!(s.count_coupons(t.id).await.unwrap(), 5);
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
    assert_eq!(s.count_coupons(t.id).await.unwrap(), 4);
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
    assert_eq!((t.claimed, s.count_coupons(t.id).await.unwrap()), (0, 0));
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
    assert_eq!(s.count_coupons(t.id).await.unwrap(), 50);
    let audit = s.audit_template(t.id).await.unwrap();
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
    assert_eq!(s.count_coupons_among(t.id, &issued).await.unwrap(), 50);
    let bogus = [coupond_domain::CouponId::new(i64::MAX / 2).unwrap()];
    assert_eq!(s.count_coupons_among(t.id, &bogus).await.unwrap(), 0);
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
    assert_eq!(s.count_coupons(t.id).await.unwrap(), 3);
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
            s.count_coupons(t.id).await.unwrap(),
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
    assert_eq!(s.count_coupons(t.id).await.unwrap(), 1);
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
}
