//! `coupond loadtest --scenario quote`: the order service's quote on a checkout view. One user
//! holds 200 unused coupons of 100 templates (two each: amounts and percentages off, half of
//! the percentages capped, every scope but listings, two thirds stackable, thresholds of 0,
//! 50.00, 200.00 and 600.00); each request quotes a
//! 50-line order (five categories, the merchant's and another's lines) for them, as the
//! service key. `--users` is the number of quotes (default 5,000), `--concurrency` the
//! connections (default 16; 1 measures one quote at a time). With `--conditions` every
//! template also has a 5-test condition tree on the order (some hold, some do not) and every
//! third (those of a category) excludes two of its products. Every answer must be a 200.

use anyhow::Context;
use coupond_domain::{
    Actor, BasisPoints, CategoryId, Condition, CouponValue, Coverage, Exclusions, Money, Stacking,
    UserId,
};
use coupond_engine::{Clock, SystemClock};
use coupond_store::{ClaimOutcome, ClaimRequest, Store};
use serde_json::json;

use super::{drive, fixtures, report, service_key, HttpClient, RequestSpec};
use crate::cli::LoadtestArgs;
use crate::config::Config;
use crate::db;

const TEMPLATES: i64 = 100;
const LINES: i64 = 50;

pub async fn run(config: &Config, client: &HttpClient, args: &LoadtestArgs) -> anyhow::Result<()> {
    let quotes = args.users.unwrap_or(5_000);
    let concurrency = args.concurrency.unwrap_or(16).max(1);
    let base = args.url.trim_end_matches('/').to_owned();
    let store = db::open_configured(config).await?;
    let run_id = format!("{}p{}", SystemClock.now().unix_micros(), std::process::id());
    let user = UserId::parse(&format!("q{run_id}")).map_err(anyhow::Error::msg)?;
    let merchant = wallet(store.as_ref(), &user, args.conditions).await?;
    let body = json!({ "order": order(&user, merchant) }).to_string();
    let auth = format!("Bearer {}", service_key(store.as_ref()).await?);
    eprintln!(
        "quote: {} coupons of {TEMPLATES} templates, {LINES}-line order, {quotes} quotes, \
         {concurrency} connections -> {base}",
        2 * TEMPLATES
    );
    let uri = format!("{base}/v1/quotes");
    let size = answer_size(client, &uri, &auth, &body).await?;
    eprintln!("quote: one answer is {size} bytes");
    let tally = drive(concurrency, quotes, None, move |_| RequestSpec {
        method: hyper::Method::POST,
        uri: uri.clone(),
        auth: Some(auth.clone()),
        body: Some(body.clone()),
        key: None,
    })
    .await;
    report("quote: POST /v1/quotes", quotes, &tally);
    let ok = tally.answers.get("200").copied().unwrap_or(0) as usize;
    anyhow::ensure!(ok == quotes, "{} of {quotes} quotes answered 200", ok);
    Ok(())
}

/// The size of one quote's answer, which must be a 200.
async fn answer_size(
    client: &HttpClient,
    uri: &str,
    auth: &str,
    body: &str,
) -> anyhow::Result<usize> {
    let req = hyper::Request::post(uri)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_owned(),
        )))?;
    let res = client.request(req).await?;
    let status = res.status();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await?
        .to_bytes();
    anyhow::ensure!(
        status == 200,
        "a quote answered {status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    Ok(bytes.len())
}

/// A 5-test tree for template `i`: an in-scope subtotal (thresholds up to 600.00), units, the
/// weekday (every day but one), the channel or the city, and not a city; about half hold on
/// the load test's order.
fn conditions(i: i64) -> anyhow::Result<Condition> {
    let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    let some_days: Vec<&str> = days
        .iter()
        .enumerate()
        .filter(|(d, _)| *d as i64 != i % 7)
        .map(|(_, d)| *d)
        .collect();
    let spend = [0, 5_000, 20_000, 60_000][(i % 4) as usize];
    let tree = json!({"all": [
        {"fact": "order.subtotal", "op": "gte", "value": spend},
        {"fact": "order.quantity", "op": "gte", "value": 1 + i % 20},
        {"any": [
            {"fact": "order.weekday", "op": "in", "value": some_days},
            {"fact": "order.channel", "op": "eq", "value": "app"}
        ]},
        {"not": {"fact": "order.city_id", "op": "eq", "value": 2 + i % 3}}
    ]});
    Ok(serde_json::from_value(tree)?)
}

/// Every third template's exclusions (those of a category): two of the order's products in
/// that category (line k is `sku-k`, category 1 + k % 5).
fn exclusions(i: i64) -> Exclusions {
    let products = vec![format!("sku-{}", i % 5), format!("sku-{}", i % 5 + 5)];
    Exclusions::new(products, vec![], vec![], vec![])
}

/// A merchant with 100 published templates (with conditions and exclusions when asked), and
/// two coupons of each for `user`.
async fn wallet(store: &dyn Store, user: &UserId, rules: bool) -> anyhow::Result<i64> {
    let now = SystemClock.now();
    let merchant = fixtures::merchant(store, "Quote load test", now).await?;
    for i in 0..TEMPLATES {
        let mut draft = fixtures::draft(&merchant, format!("Quote load test {i}"), now)?;
        draft.value = match i % 2 {
            0 => CouponValue::AmountOff {
                amount: Money::new(500 + 50 * i).map_err(anyhow::Error::msg)?,
            },
            _ => CouponValue::PercentOff {
                bps: BasisPoints::new(500 + 10 * i).map_err(anyhow::Error::msg)?,
                cap: if i % 4 == 1 {
                    Some(Money::new(3_000 + 100 * i).map_err(anyhow::Error::msg)?)
                } else {
                    None
                },
            },
        };
        let threshold = [0, 5_000, 20_000, 60_000][(i % 4) as usize];
        draft.threshold = Money::new(threshold).map_err(anyhow::Error::msg)?;
        draft.scope = match i % 3 {
            0 => Coverage::All,
            1 => Coverage::Merchant,
            _ => Coverage::Categories {
                ids: vec![CategoryId::new(1 + i % 5).map_err(anyhow::Error::msg)?],
            },
        }
        .into();
        if rules {
            draft.conditions = Some(conditions(i)?);
            if i % 3 == 2 {
                draft.scope.exclude = exclusions(i);
            }
        }
        draft.total_stock = 10;
        draft.per_user_limit = 2;
        if i % 3 != 0 {
            draft.stacking = Stacking::Stackable;
        }
        let t = fixtures::publish(store, &merchant, draft, now).await?;
        let (valid_from, valid_until) = t.spec.validity.for_claim(now);
        let claim = ClaimRequest {
            user: user.clone(),
            actor: Actor::Service,
            valid_from,
            valid_until,
            idempotency: None,
            code: None,
            issuance: None,
            channel: Default::default(),
            source: None,
        };
        let out = store
            .claim_batch(t.id, &[claim.clone(), claim], now)
            .await
            .context("claiming the wallet's coupons")?;
        anyhow::ensure!(
            out.iter().all(|o| matches!(o, ClaimOutcome::Issued(_))),
            "the wallet's claims were refused: {out:?}"
        );
    }
    Ok(merchant.id.get())
}

/// 50 item lines over five categories, every other one the wallet merchant's.
fn order(user: &UserId, merchant: i64) -> serde_json::Value {
    let lines: Vec<serde_json::Value> = (0..LINES)
        .map(|i| {
            json!({
                "product_id": format!("sku-{i}"),
                "merchant_id": if i % 2 == 0 { merchant } else { merchant + 1_000_000 },
                "category_id": 1 + i % 5,
                "unit_price": 1_000 + 137 * i,
                "quantity": 1 + i % 3,
                "kind": "item",
            })
        })
        .collect();
    json!({ "user_id": user.as_str(), "city_id": 1, "channel": "web", "lines": lines })
}
