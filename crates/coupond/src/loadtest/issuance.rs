//! `coupond loadtest --scenario issuance`: one bulk issuance of N users uploaded over HTTP,
//! followed to its end, then audited: every user issued exactly one coupon.
//!
//! The template's per-user limit is 5, so "exactly once" is the job's doing (its progress is
//! committed with each chunk), not the limit's. The poll outlives a server restart: killing
//! and restarting the server mid-job is how the crash test uses it.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use coupond_engine::{Clock, SystemClock};
use coupond_store::Role;
use http_body_util::{BodyExt, Full};

use super::{api_key, setup, HttpClient};
use crate::cli::LoadtestArgs;
use crate::config::Config;
use crate::db;

/// How long the poll keeps trying while the server does not answer (a restart).
const PATIENCE: Duration = Duration::from_secs(120);

pub async fn run(config: &Config, client: &HttpClient, args: &LoadtestArgs) -> anyhow::Result<()> {
    let users = args.users.unwrap_or(100_000);
    let base = args.url.trim_end_matches('/').to_owned();
    let store = db::open_configured(config).await?;
    let stock = args.stock.unwrap_or(users as i64);
    let (template, _) = setup(store.as_ref(), stock, 5).await?;
    let key = format!("Bearer {}", api_key(store.as_ref(), Role::Platform).await?);
    let run_id = format!("{}p{}", SystemClock.now().unix_micros(), std::process::id());
    let mut upload = String::with_capacity(users * 24);
    for i in 0..users {
        upload.push_str(&format!("is{run_id}-{i}\n"));
    }
    eprintln!("issuance: template {template}, stock {stock}, {users} users -> {base}");
    let started = Instant::now();
    // With --retry-for, the upload carries an Idempotency-Key and is sent again while it gets
    // no definitive answer (a restart; see `definitive`), so a retry cannot start a second job.
    let upload = Bytes::from(upload);
    let key_header = format!("is{run_id}-upload");
    let (status, body) = loop {
        let mut req = hyper::Request::post(format!("{base}/v1/templates/{template}/issuances"))
            .header("authorization", &key)
            .header("content-type", "text/csv");
        if args.retry_for.is_some() {
            req = req.header("idempotency-key", &key_header);
        }
        let req = req.body(Full::new(upload.clone()))?;
        let answer = match client.request(req).await {
            Ok(res) => {
                let status = res.status();
                match res.into_body().collect().await {
                    Ok(b) => Some((status, b.to_bytes())),
                    Err(_) => None,
                }
            }
            Err(_) => None,
        };
        let retry = args
            .retry_for
            .is_some_and(|limit| started.elapsed() < limit)
            && answer.as_ref().is_none_or(|(s, b)| {
                let code = serde_json::from_slice::<serde_json::Value>(b)
                    .ok()
                    .and_then(|v| v["code"].as_str().map(str::to_owned));
                !super::definitive(s.as_u16(), code.as_deref())
            });
        match answer {
            Some(a) if !retry => break a,
            None if !retry => anyhow::bail!("uploading the users: no answer"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    anyhow::ensure!(
        status == 202,
        "upload answered {status}: {}",
        String::from_utf8_lossy(&body)
    );
    let job: serde_json::Value = serde_json::from_slice(&body)?;
    let id = job["id"].as_i64().context("the job's id")?;
    let uploaded = started.elapsed();

    let mut last_answer = Instant::now();
    let job = loop {
        let req = hyper::Request::get(format!("{base}/v1/issuances/{id}"))
            .header("authorization", &key)
            .body(Full::new(Bytes::new()))?;
        // A server killed mid-answer, restarting or refusing leaves no answer: poll again.
        let answer: anyhow::Result<serde_json::Value> = match client.request(req).await {
            Ok(res) if res.status().is_success() => match res.into_body().collect().await {
                Ok(b) => serde_json::from_slice(&b.to_bytes()).map_err(anyhow::Error::from),
                Err(e) => Err(e.into()),
            },
            Ok(res) => Err(anyhow::anyhow!("answered {}", res.status())),
            Err(e) => Err(e.into()),
        };
        match answer {
            Ok(job) => {
                last_answer = Instant::now();
                eprintln!(
                    "  issued {}/{} ({})",
                    job["issued"],
                    job["requested"],
                    job["state"].as_str().unwrap_or("?")
                );
                if matches!(job["state"].as_str(), Some("done" | "failed")) {
                    break job;
                }
            }
            Err(e) => {
                anyhow::ensure!(
                    last_answer.elapsed() < PATIENCE,
                    "the server has not answered for {PATIENCE:?}: {e}"
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let wall = started.elapsed();
    let n = |k: &str| job[k].as_u64().unwrap_or(0);
    println!("issuance {id} on template {template}: {}", job["state"]);
    println!(
        "users        {users} uploaded in {:.2} s; job {} in {:.2} s end to end",
        uploaded.as_secs_f64(),
        job["state"],
        wall.as_secs_f64()
    );
    // Absent when the job took no measurable time.
    let rate = match job["rate_per_second"].as_f64() {
        Some(r) => format!("{r} /s"),
        None => "an instant".to_owned(),
    };
    println!(
        "issued       {} coupons in {rate} (job start to finish); skipped {}, sold out {}, not eligible {}",
        n("issued"),
        n("skipped"),
        n("sold_out"),
        n("not_eligible")
    );

    let audit = store.inspect().audit_template(template).await?;
    let owners = store.inspect().coupon_owners(template).await?;
    store.close().await;
    let mut violations = audit.violations();
    let distinct: HashSet<&str> = owners.iter().map(|(_, u)| u.as_str()).collect();
    if distinct.len() != owners.len() {
        violations.push(format!(
            "{} coupons for {} users: someone was issued twice",
            owners.len(),
            distinct.len()
        ));
    }
    if owners.len() as u64 != n("issued") {
        violations.push(format!(
            "the job says {} issued, {} coupons exist",
            n("issued"),
            owners.len()
        ));
    }
    let expected = (users as u64).min(stock.max(0) as u64);
    if job["state"] != "done" || n("issued") != expected {
        violations.push(format!(
            "expected {expected} issued and the job done: {job}"
        ));
    }
    println!(
        "audit        {} coupons, {} users, each once; claimed {} <= stock {}: {}",
        owners.len(),
        distinct.len(),
        audit.claimed,
        audit.total_stock,
        if violations.is_empty() {
            "OK"
        } else {
            "FAILED"
        }
    );
    for v in &violations {
        println!("  violation: {v}");
    }
    anyhow::ensure!(
        violations.is_empty(),
        "the audit found {} violation(s)",
        violations.len()
    );
    Ok(())
}
