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
use coupond_domain::{CouponId, TemplateId};
use coupond_engine::{Clock, SystemClock};
use coupond_store::{NewApiKey, Role, Store};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::cli::{LoadtestArgs, Scenario};
use crate::config::Config;
use crate::db;

mod checkout;
mod claimable;
mod conn;
mod fixtures;
mod issuance;
mod quote;
mod report;

use report::report;

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// What became of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// 201 with this coupon.
    Ok(CouponId),
    /// A 4xx answer: refused, and nothing was written.
    Failed(String),
    /// No answer, or a 5xx: it may or may not have taken effect.
    Unknown,
}

/// What the run measured.
#[derive(Debug, Default)]
struct Tally {
    /// Answers by `status code` (and problem code for errors).
    answers: BTreeMap<String, u64>,
    /// Latencies in microseconds.
    latencies: Vec<u64>,
    /// Coupon ids of the 201 answers.
    issued: Vec<CouponId>,
    /// Every request's outcome, by request number.
    outcomes: Vec<(usize, Outcome)>,
    /// Requests that got no HTTP answer.
    transport_errors: u64,
    /// Attempts sent again (with `--retry-for`) after no answer, a 5xx, a 429 or a 409
    /// `idempotency_in_flight`.
    retries: u64,
    /// What the retried attempts had got, by label (`503 unavailable`, `no answer`, ...).
    retried_after: BTreeMap<String, u64>,
    /// When the last 201 arrived, microseconds after the start.
    last_created_us: u64,
}

pub async fn run(config: &Config, args: LoadtestArgs) -> anyhow::Result<()> {
    let (users, stock, concurrency) = match args.scenario {
        Scenario::FlashSale => (200_000, 100_000, 512),
        Scenario::Ceiling => (200_000, 0, 512),
        Scenario::Custom => (10_000, 5_000, 64),
        Scenario::Issuance => (100_000, 100_000, 1),
        Scenario::Checkout => (2_000, 2_000, 32),
        Scenario::Quote => (5_000, 0, 16),
        Scenario::Claimable => (5_000, 0, 16),
    };
    let users = args.users.unwrap_or(users);
    let stock = args.stock.unwrap_or(stock);
    let concurrency = args.concurrency.unwrap_or(concurrency).max(1);
    let base = args.url.trim_end_matches('/').to_owned();
    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(concurrency)
        .build_http();

    if args.scenario == Scenario::Issuance {
        return issuance::run(config, &client, &args).await;
    }
    if args.scenario == Scenario::Checkout {
        return checkout::run(config, &args).await;
    }
    if args.scenario == Scenario::Quote {
        return quote::run(config, &client, &args).await;
    }
    if args.scenario == Scenario::Claimable {
        return claimable::run(config, &client, &args).await;
    }

    if args.scenario == Scenario::Ceiling {
        let health = format!("{base}/healthz");
        let tally = drive(concurrency, users, None, move |_| {
            RequestSpec::get(health.clone())
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

    let store = db::open_configured(config).await?;
    let (template, service_key) = match args.template {
        None => setup(store.as_ref(), stock, args.per_user_limit).await?,
        Some(id) => {
            let id = TemplateId::new(id).map_err(anyhow::Error::msg)?;
            store
                .template(id)
                .await
                .context("the --template to claim")?;
            (id, service_key(store.as_ref()).await?)
        }
    };
    // Distinct per run (and per process, for runs started together against one template).
    let run_id = format!("{}p{}", SystemClock.now().unix_micros(), std::process::id());
    eprintln!(
        "flash sale: template {template}, stock {stock}, {users} users, {concurrency} connections -> {base}"
    );
    let auth = format!("Bearer {service_key}");
    let path = format!("{base}/v1/templates/{template}/claims");
    let repeat = args.repeat_users;
    let mine_prefix = format!("lt{run_id}-");
    let user_of = {
        let prefix = mine_prefix.clone();
        move |i: usize| {
            if repeat {
                format!("{prefix}{}", i % 10)
            } else {
                format!("{prefix}{i}")
            }
        }
    };
    let request_user = user_of.clone();
    let retry_for = args.retry_for;
    let key_prefix = format!("{mine_prefix}k");
    let tally = drive(concurrency, users, retry_for, move |i| {
        let user = request_user(i);
        RequestSpec {
            method: hyper::Method::POST,
            uri: path.clone(),
            auth: Some(auth.clone()),
            body: Some(format!("{{\"user_id\":\"{user}\"}}")),
            key: retry_for.map(|_| format!("{key_prefix}{i}")),
        }
    })
    .await;
    report(&format!("claims on template {template}"), users, &tally);

    if let Some(path) = &args.history {
        write_history(path, &tally, &user_of)
            .with_context(|| format!("writing the history to {}", path.display()))?;
    }

    // Audit: the database against itself and against what was answered.
    let audit = store.inspect().audit_template(template).await?;
    let owners = store.inspect().coupon_owners(template).await?;
    store.close().await;
    let mut violations = audit.violations();
    // Other runs may claim the same template (`--template`): count this run's users only.
    let owners: Vec<_> = owners
        .into_iter()
        .filter(|(_, u)| u.as_str().starts_with(&mine_prefix))
        .collect();
    let holder: std::collections::HashMap<CouponId, &str> =
        owners.iter().map(|(c, u)| (*c, u.as_str())).collect();
    let (mut ok, mut unknown, mut lost) = (0i64, 0i64, 0i64);
    let mut failed_users: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (i, outcome) in &tally.outcomes {
        match outcome {
            Outcome::Ok(c) => {
                ok += 1;
                if holder.get(c) != Some(&user_of(*i).as_str()) {
                    lost += 1;
                }
            }
            Outcome::Failed(_) => {
                failed_users.insert(user_of(*i));
            }
            Outcome::Unknown => unknown += 1,
        }
    }
    if lost > 0 {
        violations.push(format!(
            "{lost} of the {ok} acknowledged coupons do not exist (or belong to someone else)"
        ));
    }
    let coupons = owners.len() as i64;
    if coupons < ok || coupons > ok + unknown {
        violations.push(format!(
            "{coupons} coupons exist for {ok} acknowledged claims and {unknown} without an answer"
        ));
    }
    // With distinct users, a refused claim's user must hold nothing.
    if !args.repeat_users {
        let leftovers = owners
            .iter()
            .filter(|(_, u)| failed_users.contains(u.as_str()))
            .count();
        if leftovers > 0 {
            violations.push(format!(
                "{leftovers} coupons belong to users whose claim was refused"
            ));
        }
    }
    println!(
        "audit        claimed {} = coupons {} <= stock {}; max per user {} <= {}; {}/{ok} acknowledged coupons exist; {unknown} without an answer; refused claims left nothing: {}",
        audit.claimed,
        audit.coupons,
        audit.total_stock,
        audit.max_per_user,
        audit.per_user_limit,
        ok - lost,
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

/// One JSON object per request: `{"n", "user", "outcome": "ok"|"failed"|"unknown", "coupon"
/// or "code"}`, in request order.
fn write_history(
    path: &std::path::Path,
    tally: &Tally,
    user_of: &dyn Fn(usize) -> String,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut rows = tally.outcomes.clone();
    rows.sort_by_key(|(i, _)| *i);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for (i, o) in rows {
        let line = match o {
            Outcome::Ok(c) => {
                serde_json::json!({"n": i, "user": user_of(i), "outcome": "ok", "coupon": c})
            }
            Outcome::Failed(code) => {
                serde_json::json!({"n": i, "user": user_of(i), "outcome": "failed", "code": code})
            }
            Outcome::Unknown => {
                serde_json::json!({"n": i, "user": user_of(i), "outcome": "unknown"})
            }
        };
        writeln!(out, "{line}")?;
    }
    out.flush()
}

/// A merchant, a service key and a published template claimable from now for a day.
async fn setup(
    store: &dyn Store,
    stock: i64,
    per_user_limit: u32,
) -> anyhow::Result<(TemplateId, String)> {
    let now = SystemClock.now();
    let merchant = fixtures::merchant(store, "Load test", now).await?;
    let mut draft = fixtures::draft(&merchant, "Load test flash sale".into(), now)?;
    draft.total_stock = stock.max(1);
    draft.per_user_limit = per_user_limit.max(1);
    let t = fixtures::publish(store, &merchant, draft, now).await?;
    Ok((t.id, service_key(store).await?))
}

/// A fresh service key for the run.
async fn service_key(store: &dyn Store) -> anyhow::Result<String> {
    api_key(store, Role::Service).await
}

/// A fresh key of `role` (not a merchant) for the run.
async fn api_key(store: &dyn Store, role: Role) -> anyhow::Result<String> {
    let now = SystemClock.now();
    let key = generate_api_key();
    store
        .insert_api_key(
            &NewApiKey {
                hash: key.hash,
                prefix: key.prefix.clone(),
                role,
                merchant_id: None,
                label: "loadtest".into(),
                operator_id: None,
            },
            now,
        )
        .await
        .context("creating the load test's key")?;
    Ok(key.secret)
}

/// One request to send: method, URI, Authorization, JSON body, Idempotency-Key.
struct RequestSpec {
    method: hyper::Method,
    uri: String,
    auth: Option<String>,
    body: Option<String>,
    key: Option<String>,
}

impl RequestSpec {
    fn get(uri: String) -> Self {
        RequestSpec {
            method: hyper::Method::GET,
            uri,
            auth: None,
            body: None,
            key: None,
        }
    }
}

/// Whether an answer settles a request: not a 5xx or a 429 (nothing was decided), nor a 409
/// `idempotency_in_flight` (the first attempt may have died with a killed server; its record
/// is taken over after the server's `idempotency_stale`).
pub(crate) fn definitive(status: u16, code: Option<&str>) -> bool {
    status < 500 && status != 429 && code != Some("idempotency_in_flight")
}

/// Sends `total` requests from `concurrency` workers; `make(i)` builds request `i`. With
/// `retry_for`, a request left without a [`definitive`] answer (or with none at all) is sent
/// again, with the same Idempotency-Key, until one comes or the time is up.
async fn drive<F>(concurrency: usize, total: usize, retry_for: Option<Duration>, make: F) -> Tally
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
        let (make, next, done, tally) = (make.clone(), next.clone(), done.clone(), tally.clone());
        workers.push(tokio::spawn(async move {
            let mut local = Tally::default();
            let mut conn = conn::Conn::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let spec = make(i);
                let first = Instant::now();
                let mut sent = first;
                let mut answer = conn.attempt(&spec).await;
                if let Some(limit) = retry_for {
                    let definitive = |a: &Option<(u16, serde_json::Value)>| {
                        a.as_ref().is_some_and(|(s, json)| {
                            definitive(*s, json.get("code").and_then(|c| c.as_str()))
                        })
                    };
                    while !definitive(&answer) && first.elapsed() < limit {
                        let label = match &answer {
                            Some((status, json)) => match json.get("code").and_then(|c| c.as_str())
                            {
                                Some(code) => format!("{status} {code}"),
                                None => format!("{status}"),
                            },
                            None => "no answer".to_owned(),
                        };
                        *local.retried_after.entry(label).or_insert(0) += 1;
                        // Back off (the server's Retry-After is in whole seconds; a
                        // restarting server or a reconnecting pool needs far less).
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        local.retries += 1;
                        sent = Instant::now();
                        answer = conn.attempt(&spec).await;
                    }
                }
                match answer {
                    Some((status, json)) => {
                        local.latencies.push(sent.elapsed().as_micros() as u64);
                        let label = match json.get("code").and_then(|c| c.as_str()) {
                            Some(code) => format!("{status} {code}"),
                            None if status == 201 => "201 created".to_owned(),
                            None => format!("{status}"),
                        };
                        let outcome = if status == 201 {
                            local.last_created_us = local
                                .last_created_us
                                .max(start.elapsed().as_micros() as u64);
                            match json
                                .get("id")
                                .and_then(|v| v.as_i64())
                                .and_then(|v| CouponId::new(v).ok())
                            {
                                Some(id) => {
                                    local.issued.push(id);
                                    Outcome::Ok(id)
                                }
                                None => Outcome::Unknown,
                            }
                        } else if (400..500).contains(&status) {
                            Outcome::Failed(label.clone())
                        } else {
                            Outcome::Unknown
                        };
                        local.outcomes.push((i, outcome));
                        *local.answers.entry(label).or_insert(0) += 1;
                    }
                    None => {
                        local.transport_errors += 1;
                        local.outcomes.push((i, Outcome::Unknown));
                    }
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
            all.outcomes.extend(local.outcomes);
            all.transport_errors += local.transport_errors;
            all.retries += local.retries;
            for (k, v) in local.retried_after {
                *all.retried_after.entry(k).or_insert(0) += v;
            }
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
