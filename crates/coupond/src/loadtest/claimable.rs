//! `coupond loadtest --scenario claimable`: the coupon centre of a city with 1,000 live
//! templates. Setup writes, straight to the database, a merchant serving a city of its own
//! (so other runs' templates do not count) and 1,000 published templates claimable now there,
//! a third of them for a tag audience; then `--users` (default 5,000) requests of
//! `GET /v1/users/{id}/claimable?city_id=` (a page of 50, as the service key, for 100 users in
//! turn, a quarter of them holding the tag) over `--concurrency` connections (default 16; 1
//! measures one request at a time). Every answer must be a 200, and the first a full page.
//! With `--flips-per-second N`, one of the templates is paused and resumed N times a second
//! meanwhile (the coupon centre then reads that template again each time, not the shelf).

use anyhow::Context;
use coupond_domain::{Audience, CityId, CitySet, MerchantDraft, Tag, UserId};
use coupond_engine::{Clock, SystemClock};
use coupond_store::{Role, Store};

use super::{drive, fixtures, report, service_key, HttpClient, RequestSpec};
use crate::cli::LoadtestArgs;
use crate::config::Config;
use crate::db;

/// Templates on offer in the run's city.
const TEMPLATES: usize = 1_000;
/// Users the requests ask for, in turn.
const USERS: usize = 100;
/// The tag of a third of the templates' audience, held by a quarter of the users.
const TAG: &str = "centre-load";

pub async fn run(config: &Config, client: &HttpClient, args: &LoadtestArgs) -> anyhow::Result<()> {
    let requests = args.users.unwrap_or(5_000);
    let concurrency = args.concurrency.unwrap_or(16).max(1);
    let base = args.url.trim_end_matches('/').to_owned();
    let store = db::open_configured(config).await?;
    let now = SystemClock.now();
    let run_id = format!("{}p{}", now.unix_micros(), std::process::id());
    let (city, flipped) = shelf(store.as_ref(), &run_id).await?;
    let auth = format!("Bearer {}", service_key(store.as_ref()).await?);
    let platform = format!(
        "Bearer {}",
        super::api_key(store.as_ref(), Role::Platform).await?
    );
    store.close().await;
    let user = move |i: usize| format!("c{run_id}-{}", i % USERS);
    let uri = move |i: usize| format!("{base}/v1/users/{}/claimable?city_id={city}", user(i));
    eprintln!(
        "claimable: {TEMPLATES} templates on offer in city {city}, pages of 50, {requests} \
         requests, {concurrency} connections -> {}",
        args.url
    );
    let items = first_page(client, &uri(0), &auth).await?;
    anyhow::ensure!(
        items == 50,
        "the first page holds {items} templates, not 50"
    );
    let template = format!("{}/v1/templates/{flipped}", args.url.trim_end_matches('/'));
    let flips = args
        .flips_per_second
        .map(|n| tokio::spawn(flip(client.clone(), template, platform, n)));
    let tally = drive(concurrency, requests, None, move |i| RequestSpec {
        method: hyper::Method::GET,
        uri: uri(i),
        auth: Some(auth.clone()),
        body: None,
        key: None,
    })
    .await;
    if let Some(flips) = flips {
        flips.abort();
        if let Err(e) = flips.await {
            anyhow::ensure!(e.is_cancelled(), "the flipping task failed: {e}");
        }
    }
    report(
        "claimable: GET /v1/users/{id}/claimable?city_id=",
        requests,
        &tally,
    );
    let ok = tally.answers.get("200").copied().unwrap_or(0) as usize;
    anyhow::ensure!(ok == requests, "{ok} of {requests} answered 200");
    Ok(())
}

/// Pauses and resumes `template` (its URL) `per_second` times a second in all, until aborted,
/// printing every second how its answers went. The wait between two is pacing, not a wait
/// for anything to happen.
async fn flip(client: HttpClient, template: String, auth: String, per_second: u32) {
    let every = std::time::Duration::from_secs(1) / per_second.max(1);
    let mut tick = tokio::time::interval(every);
    let mut answers: std::collections::BTreeMap<u16, u64> = Default::default();
    let mut shown = std::time::Instant::now();
    for n in 0u64.. {
        tick.tick().await;
        let action = if n % 2 == 0 { "pause" } else { "resume" };
        let req = hyper::Request::post(format!("{template}/{action}"))
            .header("authorization", &auth)
            .body(http_body_util::Full::new(bytes::Bytes::new()));
        let Ok(req) = req else { continue };
        let status = match client.request(req).await {
            Ok(res) => res.status().as_u16(),
            Err(_) => 0,
        };
        *answers.entry(status).or_default() += 1;
        if shown.elapsed() >= std::time::Duration::from_secs(1) {
            eprintln!("flips so far, by answer: {answers:?}");
            shown = std::time::Instant::now();
        }
    }
}

/// How many templates the first page of `uri` holds (it must answer 200).
async fn first_page(client: &HttpClient, uri: &str, auth: &str) -> anyhow::Result<usize> {
    let req = hyper::Request::get(uri)
        .header("authorization", auth)
        .body(http_body_util::Full::new(bytes::Bytes::new()))?;
    let res = client.request(req).await?;
    let status = res.status();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await?
        .to_bytes();
    anyhow::ensure!(
        status == 200,
        "the centre answered {status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    let page: serde_json::Value = serde_json::from_slice(&bytes)?;
    Ok(page["items"].as_array().map_or(0, Vec::len))
}

/// A merchant serving a city of the run's own with [`TEMPLATES`] published templates claimable
/// now, every third for holders of [`TAG`]; a quarter of the run's users hold it. The city,
/// and the first template.
async fn shelf(store: &dyn Store, run_id: &str) -> anyhow::Result<(i64, i64)> {
    let now = SystemClock.now();
    // Far above any real city id, and another for every run.
    let city = 1_000_000_000 + now.unix_micros() % 1_000_000_000;
    let cities = CitySet::new(vec![CityId::new(city).map_err(anyhow::Error::msg)?])
        .map_err(anyhow::Error::msg)?;
    let draft = MerchantDraft {
        name: format!("Centre load test {run_id}"),
        short_name: "Centre".into(),
        cities,
    };
    let merchant = store.insert_merchant(&draft, now).await?;
    let tag = Tag::parse(TAG).map_err(anyhow::Error::msg)?;
    let mut first = None;
    for i in 0..TEMPLATES {
        let mut d = fixtures::draft(&merchant, format!("Centre load test {i}"), now)?;
        d.total_stock = 1_000;
        d.description = "On any stay in the city, for new and returning tenants alike.".into();
        if i % 3 == 2 {
            d.audience = Audience::Tags {
                any: vec![tag.clone()],
            };
        }
        let t = fixtures::publish(store, &merchant, d, now)
            .await
            .context("publishing the centre's templates")?;
        first.get_or_insert(t.id.get());
    }
    for u in (0..USERS).step_by(4) {
        let user = UserId::parse(&format!("c{run_id}-{u}")).map_err(anyhow::Error::msg)?;
        store
            .put_user_tags(&user, std::slice::from_ref(&tag))
            .await?;
    }
    Ok((city, first.unwrap_or_default()))
}
