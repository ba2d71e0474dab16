//! `serve --demo`: a small, realistic data set and ready-to-use credentials.

use anyhow::Context;
use coupond_api::auth::{generate_api_key, JwtKeys};
use coupond_domain::{
    ActivityDraft, ActivitySpec, ActivityStatus, CategoryId, CityId, CitySet, CouponKind,
    ListingDraft, MerchantDraft, MerchantId, Money, Timestamp, UserId, Window,
};
use coupond_store::{ActivityQuery, NewApiKey, Page, Role, Store};
use time::Duration;

mod accounts;
mod history;

/// Credentials printed for the demo, as shell `export` lines.
#[derive(Debug)]
pub struct DemoCredentials {
    pub lines: Vec<String>,
}

const DEMO_MARKER: &str = "demo_merchants";

/// Loads the demo data once per database (later runs reuse it) and mints fresh keys, a user
/// token and fresh passwords for one operator account per role.
pub async fn load(
    store: &std::sync::Arc<dyn Store>,
    jwt: &JwtKeys,
    operators: &coupond_engine::accounts::Accounts,
    now: Timestamp,
    freeze: Duration,
) -> anyhow::Result<DemoCredentials> {
    // The marker holds the demo merchants' ids once the data is loaded.
    let existing = store.setting_or_init(DEMO_MARKER, "").await?;
    let merchants: Vec<MerchantId> = if existing.is_empty() {
        let ids = seed(store, now, freeze)
            .await
            .context("loading demo data")?;
        store
            .put_setting(DEMO_MARKER, &serde_json::to_string(&ids)?)
            .await?;
        ids
    } else {
        // A reused database: keep the merchants, but make sure an activity is enrolling now
        // (the first one's enrollment ends a week after it was loaded).
        let enrolling = store
            .list_activities(&ActivityQuery {
                narrow: Default::default(),
                status: Some(ActivityStatus::Enrolling),
                city: None,
                any_city: None,
                now,
                freeze,
                page: Page {
                    after: None,
                    limit: 1000,
                },
            })
            .await?;
        if !enrolling.iter().any(|a| a.spec.title == DEMO_ACTIVITY) {
            store.insert_activity(&demo_activity(now)?, now).await?;
        }
        serde_json::from_str(&existing).context("reading demo merchant ids")?
    };
    // Earlier demo keys stop working: each start prints the only valid set.
    for old in store.list_api_keys().await? {
        if old.label.starts_with("demo ") && old.revoked_at.is_none() {
            store.revoke_api_key(old.id, now).await?;
        }
    }
    let mut lines = Vec::new();
    let key = |name: &str, role: Role, merchant: Option<MerchantId>| {
        let k = generate_api_key();
        let new = NewApiKey {
            hash: k.hash,
            prefix: k.prefix.clone(),
            role,
            merchant_id: merchant,
            label: format!("demo {name}"),
            operator_id: None,
        };
        (name.to_owned(), k.secret, new)
    };
    let mut keys = vec![
        key("PLATFORM_KEY", Role::Platform, None),
        key("SERVICE_KEY", Role::Service, None),
    ];
    for (i, m) in merchants.iter().enumerate() {
        keys.push(key(
            &format!("MERCHANT{}_KEY", i + 1),
            Role::Merchant,
            Some(*m),
        ));
    }
    for (name, secret, new) in keys {
        store.insert_api_key(&new, now).await?;
        lines.push(format!("export {name}={secret}"));
    }
    for (i, m) in merchants.iter().enumerate() {
        lines.push(format!("export MERCHANT{}_ID={m}", i + 1));
    }
    let user = UserId::parse("u-1001").map_err(anyhow::Error::msg)?;
    let token = jwt
        .mint(&user, now, Duration::hours(24))
        .map_err(|e| anyhow::anyhow!("minting the demo token: {e:?}"))?;
    if let Some(first) = merchants.first() {
        lines.extend(accounts::refresh(operators, *first).await?);
    }
    // Last: readers of this output wait for this line.
    lines.push(format!("export USER_TOKEN={token}"));
    Ok(DemoCredentials { lines })
}

fn cities(ids: &[i64]) -> anyhow::Result<CitySet> {
    let ids = ids
        .iter()
        .map(|c| CityId::new(*c))
        .collect::<Result<Vec<_>, _>>();
    CitySet::new(ids.map_err(anyhow::Error::msg)?).map_err(anyhow::Error::msg)
}

async fn seed(
    store: &std::sync::Arc<dyn Store>,
    now: Timestamp,
    freeze: Duration,
) -> anyhow::Result<Vec<MerchantId>> {
    // City 1: Hangzhou, city 2: Shanghai; named, so pages say so.
    for (id, name) in [(1, "Hangzhou"), (2, "Shanghai")] {
        store
            .put_city(CityId::new(id).map_err(anyhow::Error::msg)?, name, now)
            .await?;
    }
    let merchants = [
        ("Westlake Apartments Co.", "Westlake", vec![1]),
        ("Qiantang Rooms Ltd.", "Qiantang", vec![1, 2]),
        ("Bund Living", "Bund", vec![2]),
    ];
    let mut ids = Vec::new();
    for (name, short, city_ids) in merchants {
        let m = store
            .insert_merchant(
                &MerchantDraft {
                    name: name.into(),
                    short_name: short.into(),
                    cities: cities(&city_ids)?,
                },
                now,
            )
            .await?;
        for (n, city) in city_ids.iter().enumerate() {
            for (k, (title, price)) in [
                ("One-bedroom near the lake", 450_000),
                ("Shared room, metro line 1", 180_000),
            ]
            .into_iter()
            .enumerate()
            {
                let listing = ListingDraft {
                    external_id: Some(format!("{short}-{city}-{n}-{k}")),
                    city_id: CityId::new(*city).map_err(anyhow::Error::msg)?,
                    category_id: CategoryId::new(1 + k as i64).map_err(anyhow::Error::msg)?,
                    title: title.into(),
                    price: Money::new(price).map_err(anyhow::Error::msg)?,
                    deposit: Money::new(price * 2).map_err(anyhow::Error::msg)?,
                };
                store.insert_listing(m.id, &listing, now).await?;
            }
        }
        if ids.is_empty() {
            history::seed(store, &m, now, freeze)
                .await
                .context("demo history")?;
        }
        ids.push(m.id);
    }
    let activity = demo_activity(now)?;
    store.insert_activity(&activity, now).await?;
    Ok(ids)
}

const DEMO_ACTIVITY: &str = "Spring rental festival";

/// An activity enrolling from an hour ago for a week, then running for a month.
fn demo_activity(now: Timestamp) -> anyhow::Result<ActivitySpec> {
    let window = |from: Duration, to: Duration| {
        Window::new(now.plus(from), now.plus(to)).map_err(anyhow::Error::msg)
    };
    ActivitySpec::try_from(ActivityDraft {
        title: DEMO_ACTIVITY.into(),
        description:
            "Merchants in Hangzhou and Shanghai offer amount-off coupons on first month's rent."
                .into(),
        cities: cities(&[1, 2])?,
        kind: CouponKind::AmountOff,
        value_min: 5_000,
        value_max: 50_000,
        enrollment: window(Duration::hours(-1), Duration::days(7))?,
        run: window(Duration::days(7), Duration::days(37))?,
        funding: Some(coupond_domain::Funding::PLATFORM),
        funded_by: None,
        approval: Default::default(),
        reference: Default::default(),
    })
    .map_err(|e| anyhow::anyhow!("demo activity: {e}"))
}
