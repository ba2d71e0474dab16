//! The conformance cases. Each takes a store on a fresh database and panics on a deviation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::Conflict;
use std::sync::Arc;

use coupond_domain::{ActivityStatus, ListingDraft, Money, TemplateStatus, Timestamp};
use time::Duration;

mod audit;
mod audit_runs;
mod campaign_messages;
mod checkout;
mod claims;
mod codes;
mod deadlines;
mod events;
mod invitations;
mod lifecycle;
mod listings;
mod merchants;
mod messaging;
mod operators;
mod records;
mod reports;
mod scheduling;
mod seen;
mod sessions;
mod steering;
mod stock;
mod tags;
mod templates;
mod webhooks;
pub use audit::*;
pub use audit_runs::*;
pub use campaign_messages::*;
pub use checkout::*;
pub use claims::*;
use claims::{claimable, req, tally};
pub use codes::*;
pub use deadlines::*;
pub use events::*;
pub use invitations::*;
pub use lifecycle::*;
pub use listings::*;
pub use merchants::*;
pub use messaging::*;
pub use operators::*;
pub use records::*;
pub use reports::*;
pub use scheduling::*;
pub use seen::*;
pub use sessions::*;
pub use steering::*;
pub use stock::*;
pub use tags::*;
use templates::spec_standalone;
pub use templates::*;
pub use webhooks::*;

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
        narrow: Default::default(),
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
        city: None,
        narrow: Default::default(),
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
        operator_id: None,
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

    // A key a person made works while their account is enabled (issue 61 point 7).
    let owner = coupond_domain::OperatorDraft::new(
        coupond_domain::Email::parse("owner@keys.example").unwrap(),
        "Owner".into(),
        coupond_domain::OperatorRole::Owner,
        Some(m.id),
    )
    .unwrap();
    let owner = s.insert_operator(&owner, None, t0()).await.unwrap();
    let theirs = NewApiKey {
        hash: [11; 32],
        operator_id: Some(owner.id),
        ..platform
    };
    let made = s.insert_api_key(&theirs, t0()).await.unwrap();
    assert_eq!(made.operator_id, Some(owner.id));
    assert_eq!(s.api_key_by_hash(&[11; 32]).await.unwrap(), made);
    s.set_operator_disabled(owner.id, true, at(2))
        .await
        .unwrap();
    assert!(matches!(
        s.api_key_by_hash(&[11; 32]).await,
        Err(StoreError::NotFound)
    ));
    s.set_operator_disabled(owner.id, false, at(3))
        .await
        .unwrap();
    assert_eq!(s.api_key_by_hash(&[11; 32]).await.unwrap(), made);
    // Given to nobody, it works whoever is disabled.
    s.set_operator_disabled(owner.id, true, at(4))
        .await
        .unwrap();
    let nobodys = s.set_api_key_operator(made.id, None).await.unwrap();
    assert_eq!(nobodys.operator_id, None);
    assert_eq!(s.api_key_by_hash(&[11; 32]).await.unwrap(), nobodys);
    assert!(matches!(
        s.set_api_key_operator(9999, None).await,
        Err(StoreError::NotFound)
    ));
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
    // Found again by external id: one per merchant.
    let by_ext = |merchant, ext: &str| ListingQuery {
        merchant,
        external_id: Some(ext.to_owned()),
        city: None,
        category: None,
        kind: None,
        activity: None,
        activity_type: None,
        template: None,
        has_coupon: None,
        now: t0(),
        page: page(),
    };
    let found = s
        .list_listings(&by_ext(Some(m.id), "house-1"))
        .await
        .unwrap();
    assert_eq!(found, vec![l]);
    assert_eq!(
        s.list_listings(&by_ext(None, "house-1"))
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(s
        .list_listings(&by_ext(None, "house-2"))
        .await
        .unwrap()
        .is_empty());
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
                narrow: Default::default(),
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
            let counted = s.count_activities(&q).await.unwrap();
            assert_eq!(counted, want.len() as i64, "count {status:?} at {now}");
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
        narrow: Default::default(),
        city: city(3),
        ..aq(t0())
    };
    assert_eq!(ids(s.list_activities(&q).await.unwrap()), vec![only3.id]);
    let q = ActivityQuery {
        narrow: Default::default(),
        city: city(2),
        ..aq(t0())
    };
    assert_eq!(ids(s.list_activities(&q).await.unwrap()), vec![both.id]);
    let q = ActivityQuery {
        narrow: Default::default(),
        any_city: Some(cities(&[2, 3])),
        ..aq(t0())
    };
    assert_eq!(
        ids(s.list_activities(&q).await.unwrap()),
        vec![only3.id, both.id]
    );
    let q = ActivityQuery {
        narrow: Default::default(),
        any_city: Some(cities(&[9])),
        ..aq(t0())
    };
    assert!(s.list_activities(&q).await.unwrap().is_empty());
    let q = ActivityQuery {
        narrow: Default::default(),
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
            narrow: Default::default(),
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
                review: Default::default(),
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
