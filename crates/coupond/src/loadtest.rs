//! `coupond loadtest`: drives a running coupond over HTTP with many concurrent keep-alive
//! connections, reports throughput, latency and answers by code, then audits the database.
//!
//! Setup goes straight to the database named by the configuration (the one the server uses):
//! a merchant, a service key and a published template claimable now. The claims go over HTTP
//! as that service key, each naming its user, so the test measures the claim path (auth,
//! engine, commit) and not token minting.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use coupond_api::auth::generate_api_key;
use coupond_domain::{
    Audience, CityId, CitySet, CouponId, CouponValue, DeductionMode, MerchantDraft, Money, Scope,
    Stacking, TemplateContext, TemplateDraft, TemplateId, TemplateSpec, Validity, Window,
};
use coupond_engine::{Clock, SystemClock};
use coupond_store::{NewApiKey, NewTemplate, Role, Store};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::cli::{LoadtestArgs, Scenario};
use crate::config::Config;
use crate::db;

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// What the run measured.
#[derive(Debug, Default)]
struct Tally {
    /// Answers by `status code` (and problem code for errors).
    answers: BTreeMap<String, u64>,
    /// Latencies in microseconds.
    latencies: Vec<u64>,
    /// Coupon ids of the 201 answers.
    issued: Vec<CouponId>,
    /// Requests that got no HTTP answer.
    transport_errors: u64,
    /// When the last 201 arrived, microseconds after the start.
    last_created_us: u64,
}

pub async fn run(config: &Config, args: LoadtestArgs) -> anyhow::Result<()> {
    let (users, stock, concurrency) = match args.scenario {
        Scenario::FlashSale => (200_000, 100_000, 512),
        Scenario::Ceiling => (200_000, 0, 512),
        Scenario::Custom => (10_000, 5_000, 64),
    };
    let users = args.users.unwrap_or(users);
    let stock = args.stock.unwrap_or(stock);
    let concurrency = args.concurrency.unwrap_or(concurrency).max(1);
    let base = args.url.trim_end_matches('/').to_owned();
    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(concurrency)
        .build_http();

    if args.scenario == Scenario::Ceiling {
        let health = format!("{base}/healthz");
        let tally = drive(&client, concurrency, users, move |_| {
            (hyper::Method::GET, health.clone(), None, None)
        })
        .await;
        report("ceiling: GET /healthz (no work)", users, &tally);
        anyhow::ensure!(
            tally.transport_errors == 0,
            "{} requests got no answer",
            tally.transport_errors
        );
        return Ok(());
    }

    let store = db::open(&config.database_url).await?;
    let (template, service_key) = setup(store.as_ref(), stock, args.per_user_limit).await?;
    let run_id = SystemClock.now().unix_micros();
    eprintln!(
        "flash sale: template {template}, stock {stock}, {users} users, {concurrency} connections -> {base}"
    );
    let auth = format!("Bearer {service_key}");
    let path = format!("{base}/v1/templates/{template}/claims");
    let repeat = args.repeat_users;
    let tally = drive(&client, concurrency, users, move |i| {
        let user = if repeat {
            format!("lt{run_id}-{}", i % 10)
        } else {
            format!("lt{run_id}-{i}")
        };
        let body = format!("{{\"user_id\":\"{user}\"}}");
        (
            hyper::Method::POST,
            path.clone(),
            Some(auth.clone()),
            Some(body),
        )
    })
    .await;
    report(&format!("claims on template {template}"), users, &tally);

    // Audit: the database against itself and against what was acknowledged.
    let audit = store.audit_template(template).await?;
    let mut violations = audit.violations();
    let acknowledged = tally.issued.len() as i64;
    if audit.coupons != acknowledged {
        violations.push(format!(
            "{acknowledged} claims were acknowledged but {} coupons exist",
            audit.coupons
        ));
    }
    let found = store.count_coupons_among(template, &tally.issued).await?;
    if found != acknowledged {
        violations.push(format!(
            "only {found} of the {acknowledged} acknowledged coupons exist"
        ));
    }
    store.close().await;
    println!(
        "audit        claimed {} = coupons {} <= stock {}; max per user {} <= {}; {found}/{acknowledged} acknowledged coupons exist: {}",
        audit.claimed,
        audit.coupons,
        audit.total_stock,
        audit.max_per_user,
        audit.per_user_limit,
        if violations.is_empty() { "OK" } else { "FAILED" }
    );
    for v in &violations {
        println!("  violation: {v}");
    }
    anyhow::ensure!(
        violations.is_empty(),
        "the audit found {} violation(s)",
        violations.len()
    );
    anyhow::ensure!(
        tally.transport_errors == 0,
        "{} requests got no answer",
        tally.transport_errors
    );
    Ok(())
}

/// A merchant, a service key and a published template claimable from now for a day.
async fn setup(
    store: &dyn Store,
    stock: i64,
    per_user_limit: u32,
) -> anyhow::Result<(TemplateId, String)> {
    let now = SystemClock.now();
    let cities = CitySet::new(vec![CityId::new(1).map_err(anyhow::Error::msg)?])
        .map_err(anyhow::Error::msg)?;
    let merchant = store
        .insert_merchant(
            &MerchantDraft {
                name: "Load test".into(),
                short_name: "Load".into(),
                cities: cities.clone(),
            },
            now,
        )
        .await?;
    let window = Window::new(
        now.minus(time::Duration::minutes(1)),
        now.plus(time::Duration::days(1)),
    )
    .map_err(anyhow::Error::msg)?;
    let draft = TemplateDraft {
        activity_id: None,
        title: "Load test flash sale".into(),
        description: String::new(),
        value: CouponValue::AmountOff {
            amount: Money::new(1000).map_err(anyhow::Error::msg)?,
        },
        threshold: Money::ZERO,
        deduction: DeductionMode::Upfront,
        scope: Scope::All,
        cities,
        audience: Audience::Everyone,
        total_stock: stock.max(1),
        per_user_limit: per_user_limit.max(1),
        stacking: Stacking::Exclusive,
        claim_window: Some(window),
        validity: Validity::Relative { days: 7 },
        budget: None,
        metadata: Default::default(),
    };
    let spec = TemplateSpec::validate(
        draft,
        TemplateContext {
            owner: Some(&merchant),
            activity: None,
            now,
            freeze: time::Duration::minutes(5),
        },
    )
    .map_err(|e| anyhow::anyhow!("load test template: {e}"))?;
    let t = store
        .insert_template(
            &NewTemplate {
                merchant_id: Some(merchant.id),
                spec: &spec,
                activity_version: None,
            },
            now,
        )
        .await?;
    store.publish_template(t.id, t.version, now).await?;
    let key = generate_api_key();
    store
        .insert_api_key(
            &NewApiKey {
                hash: key.hash,
                prefix: key.prefix.clone(),
                role: Role::Service,
                merchant_id: None,
                label: "loadtest".into(),
            },
            now,
        )
        .await
        .context("creating the load test's service key")?;
    Ok((t.id, key.secret))
}

type RequestSpec = (hyper::Method, String, Option<String>, Option<String>);

/// Sends `total` requests from `concurrency` workers; `make(i)` builds request `i`.
async fn drive<F>(client: &HttpClient, concurrency: usize, total: usize, make: F) -> Tally
where
    F: Fn(usize) -> RequestSpec + Send + Sync + 'static,
{
    let make = Arc::new(make);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let start = Instant::now();
    let progress = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                let n = done.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64();
                eprintln!(
                    "  {n}/{total} ({:.0}%) {:.0}/s",
                    n as f64 * 100.0 / total as f64,
                    n as f64 / secs
                );
            }
        })
    };
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (client, make, next, done, tally) = (
            client.clone(),
            make.clone(),
            next.clone(),
            done.clone(),
            tally.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut local = Tally::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let (method, uri, auth, body) = make(i);
                let mut req = hyper::Request::builder().method(method).uri(uri);
                if let Some(a) = auth {
                    req = req.header("authorization", a);
                }
                let body = match body {
                    Some(b) => {
                        req = req.header("content-type", "application/json");
                        Full::new(Bytes::from(b))
                    }
                    None => Full::new(Bytes::new()),
                };
                let Ok(req) = req.body(body) else {
                    local.transport_errors += 1;
                    continue;
                };
                let sent = Instant::now();
                match client.request(req).await {
                    Ok(res) => {
                        let status = res.status().as_u16();
                        let bytes = res
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        local.latencies.push(sent.elapsed().as_micros() as u64);
                        let json: serde_json::Value =
                            serde_json::from_slice(&bytes).unwrap_or_default();
                        let label = match json.get("code").and_then(|c| c.as_str()) {
                            Some(code) => format!("{status} {code}"),
                            None if status == 201 => "201 created".to_owned(),
                            None => format!("{status}"),
                        };
                        if status == 201 {
                            local.last_created_us = local
                                .last_created_us
                                .max(start.elapsed().as_micros() as u64);
                            if let Some(id) = json
                                .get("id")
                                .and_then(|v| v.as_i64())
                                .and_then(|v| CouponId::new(v).ok())
                            {
                                local.issued.push(id);
                            }
                        }
                        *local.answers.entry(label).or_insert(0) += 1;
                    }
                    Err(_) => local.transport_errors += 1,
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
            let mut all = tally
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (k, v) in local.answers {
                *all.answers.entry(k).or_insert(0) += v;
            }
            all.latencies.extend(local.latencies);
            all.issued.extend(local.issued);
            all.transport_errors += local.transport_errors;
            all.last_created_us = all.last_created_us.max(local.last_created_us);
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    progress.abort();
    let elapsed = start.elapsed();
    let mut tally = std::mem::take(
        &mut *tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    tally
        .answers
        .insert("_elapsed_us".into(), elapsed.as_micros() as u64);
    tally
}

fn report(title: &str, total: usize, tally: &Tally) {
    let elapsed = tally.answers.get("_elapsed_us").copied().unwrap_or(1) as f64 / 1e6;
    let mut lat = tally.latencies.clone();
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i] as f64 / 1000.0
    };
    println!("{title}");
    println!(
        "requests     {total} in {elapsed:.2} s = {:.0}/s",
        total as f64 / elapsed
    );
    println!(
        "latency      p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        lat.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    let answers: Vec<String> = tally
        .answers
        .iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    println!("answers      {}", answers.join(" | "));
    if !tally.issued.is_empty() {
        let secs = tally.last_created_us.max(1) as f64 / 1e6;
        println!(
            "issued       {} coupons in {secs:.2} s = {:.0} claims/s",
            tally.issued.len(),
            tally.issued.len() as f64 / secs
        );
    }
    if tally.transport_errors > 0 {
        println!("no answer    {}", tally.transport_errors);
    }
}
