//! Merchant lists and edits.

use std::sync::Arc;

use coupond_domain::{CityId, MerchantDraft, MerchantId};

use crate::testing::fixtures::*;
use crate::{Conflict, MerchantQuery, Page, Store, StoreError};

fn query(city: Option<i64>, name: Option<&str>, after: Option<i64>, limit: u32) -> MerchantQuery {
    MerchantQuery {
        city: city.map(|c| CityId::new(c).unwrap()),
        name: name.map(str::to_owned),
        page: Page { after, limit },
    }
}

async fn names(s: &dyn Store, q: MerchantQuery) -> Vec<String> {
    let found = s.list_merchants(&q).await.unwrap();
    found.into_iter().map(|m| m.name).collect()
}

pub async fn merchants_list_by_city_and_name(s: Arc<dyn Store>) {
    for (name, cities) in [
        ("Sunny Homes", &[1, 2][..]),
        ("Lakeside 100%_Rentals", &[2]),
        ("sunset flats", &[3]),
    ] {
        s.insert_merchant(&merchant(name, cities), t0())
            .await
            .unwrap();
    }
    let s = &*s;
    assert_eq!(names(s, query(None, None, None, 10)).await.len(), 3);
    assert_eq!(
        names(s, query(Some(2), None, None, 10)).await,
        ["Sunny Homes", "Lakeside 100%_Rentals"]
    );
    assert_eq!(
        names(s, query(Some(9), None, None, 10)).await,
        Vec::<String>::new()
    );
    // Case is ignored; the wildcards of LIKE are plain characters.
    assert_eq!(
        names(s, query(None, Some("SUN"), None, 10)).await,
        ["Sunny Homes", "sunset flats"]
    );
    assert_eq!(
        names(s, query(None, Some("0%_r"), None, 10)).await,
        ["Lakeside 100%_Rentals"]
    );
    assert_eq!(
        names(s, query(None, Some("%"), None, 10)).await,
        ["Lakeside 100%_Rentals"]
    );
    assert_eq!(
        names(s, query(Some(3), Some("sun"), None, 10)).await,
        ["sunset flats"]
    );
    // Pages follow ids.
    let first = s.list_merchants(&query(None, None, None, 2)).await.unwrap();
    assert_eq!(first.len(), 2);
    let after = Some(first[1].id.get());
    assert_eq!(
        names(s, query(None, None, after, 2)).await,
        ["sunset flats"]
    );
}

pub async fn merchant_edits_never_lose_a_concurrent_one(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("Sunny Homes", &[1]), t0())
        .await
        .unwrap();
    let renamed = MerchantDraft {
        name: "Sunny Homes Ltd.".into(),
        ..m.draft()
    };
    let updated = s.update_merchant(m.id, &m.draft(), &renamed).await.unwrap();
    assert_eq!(
        (updated.id, updated.draft(), updated.created_at),
        (m.id, renamed.clone(), m.created_at)
    );
    assert_eq!(s.merchant(m.id).await.unwrap(), updated);
    // An edit based on what was read before the rename is refused, not applied over it.
    let moved = MerchantDraft {
        cities: cities(&[1, 4]),
        ..m.draft()
    };
    assert!(matches!(
        s.update_merchant(m.id, &m.draft(), &moved).await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    assert_eq!(s.merchant(m.id).await.unwrap(), updated);
    let moved = MerchantDraft {
        cities: cities(&[1, 4]),
        ..renamed.clone()
    };
    let done = s.update_merchant(m.id, &renamed, &moved).await.unwrap();
    assert_eq!(done.cities, cities(&[1, 4]));
    let missing = MerchantId::new(m.id.get() + 100).unwrap();
    assert!(matches!(
        s.update_merchant(missing, &renamed, &moved).await,
        Err(StoreError::NotFound)
    ));
}

/// Cities are named, renamed (the later name standing, its instant kept) and listed by id,
/// a page at a time; a name is any text, stored as sent.
pub async fn cities_are_named_and_listed(s: Arc<dyn Store>) {
    let city = |n| CityId::new(n).unwrap();
    assert_eq!(s.cities(None, 10).await.unwrap(), vec![]);
    let lisbon = s.put_city(city(2), "Lisbon", at(1)).await.unwrap();
    assert_eq!((lisbon.id, lisbon.name.as_str()), (city(2), "Lisbon"));
    assert_eq!(lisbon.updated_at, at(1));
    s.put_city(city(1), "Porto", at(2)).await.unwrap();
    s.put_city(city(10), "São Miguel", at(3)).await.unwrap();
    let renamed = s.put_city(city(2), "Lisboa", at(4)).await.unwrap();
    assert_eq!(
        (renamed.name.as_str(), renamed.updated_at),
        ("Lisboa", at(4))
    );
    let first = s.cities(None, 2).await.unwrap();
    let names: Vec<&str> = first.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Porto", "Lisboa"]);
    let rest = s.cities(Some(first[1].id), 2).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(
        (rest[0].id, rest[0].name.as_str()),
        (city(10), "São Miguel")
    );
}
