//! `coupond loadtest --scenario checkout`: N users each claim a coupon, lock it on an order,
//! then confirm (even users) or cancel (odd users), in three waves over HTTP as the order
//! service would. Every request carries an Idempotency-Key; with `--retry-for` a request
//! without a definitive answer is sent again, which is how the crash test drives it across
//! server restarts. Then the database is checked user by user: the order is in the state its
//! last step asked for, the coupon used exactly when the order was confirmed, and the full
//! invariant audit is clean.

use std::collections::HashMap;

use anyhow::Context;
use coupond_domain::{CouponId, CouponStatus, OrderId};
use coupond_engine::{Clock, SystemClock};
use coupond_store::checkout::OrderState;

use super::{drive, report, setup, Outcome, RequestSpec, Tally};
use crate::cli::LoadtestArgs;
use crate::config::Config;
use crate::db;

pub async fn run(config: &Config, args: &LoadtestArgs) -> anyhow::Result<()> {
    let users = args.users.unwrap_or(2_000);
    let concurrency = args.concurrency.unwrap_or(32).max(1);
    let base = args.url.trim_end_matches('/').to_owned();
    let store = db::open_configured(config).await?;
    let (template, service_key) = setup(store.as_ref(), users as i64, 1).await?;
    let merchant = store
        .template(template)
        .await?
        .merchant_id
        .context("the load test's template has a merchant")?;
    let run_id = format!("{}p{}", SystemClock.now().unix_micros(), std::process::id());
    let auth = format!("Bearer {service_key}");
    let retry_for = args.retry_for;
    eprintln!("checkout: template {template}, {users} users, {concurrency} connections -> {base}");
    let user = {
        let run_id = run_id.clone();
        move |i: usize| format!("co{run_id}-{i}")
    };
    let order = {
        let run_id = run_id.clone();
        move |i: usize| format!("co{run_id}-o{i}")
    };
    let post = {
        let auth = auth.clone();
        let run_id = run_id.clone();
        move |uri: String, body: Option<String>, step: &str, i: usize| RequestSpec {
            method: hyper::Method::POST,
            uri,
            auth: Some(auth.clone()),
            body,
            key: Some(format!("co{run_id}-{step}{i}")),
        }
    };

    // Wave 1: claims.
    let claims = {
        let (user, post, base) = (user.clone(), post.clone(), base.clone());
        drive(concurrency, users, retry_for, move |i| {
            let body = format!("{{\"user_id\":\"{}\"}}", user(i));
            post(
                format!("{base}/v1/templates/{template}/claims"),
                Some(body),
                "c",
                i,
            )
        })
        .await
    };
    report("checkout wave 1: claims", users, &claims);
    let coupon: HashMap<usize, CouponId> = claims
        .outcomes
        .iter()
        .filter_map(|(i, o)| match o {
            Outcome::Ok(c) => Some((*i, *c)),
            _ => None,
        })
        .collect();
    anyhow::ensure!(
        coupon.len() == users,
        "{} of {users} claims got their coupon",
        coupon.len()
    );

    // Wave 2: locks, one order per user holding that user's coupon.
    let locks = {
        let (user, order, post, base, coupon) = (
            user.clone(),
            order.clone(),
            post.clone(),
            base.clone(),
            coupon.clone(),
        );
        drive(concurrency, users, retry_for, move |i| {
            let body = format!(
                "{{\"order\":{{\"user_id\":\"{}\",\"city_id\":1,\"lines\":[{{\"product_id\":\"p-{i}\",\
                 \"merchant_id\":{merchant},\"category_id\":1,\"unit_price\":5000,\"quantity\":1,\
                 \"kind\":\"item\"}}]}},\"coupon_ids\":[{}]}}",
                user(i),
                coupon[&i]
            );
            post(
                format!("{base}/v1/orders/{}/lock", order(i)),
                Some(body),
                "l",
                i,
            )
        })
        .await
    };
    report("checkout wave 2: locks", users, &locks);
    ensure_all(&locks, 200, "lock")?;

    // Wave 3: even users' orders are confirmed, odd users' cancelled; with --abandon every
    // third is left to its deadline.
    let plan = |i: usize| match i {
        _ if args.abandon && i % 3 == 2 => OrderState::Expired,
        _ if i.is_multiple_of(2) => OrderState::Confirmed,
        _ => OrderState::Cancelled,
    };
    let ending: Vec<usize> = (0..users)
        .filter(|&i| plan(i) != OrderState::Expired)
        .collect();
    let abandoned: Vec<usize> = (0..users)
        .filter(|&i| plan(i) == OrderState::Expired)
        .collect();
    let ends = {
        let (order, post, base) = (order.clone(), post.clone(), base.clone());
        let ending = ending.clone();
        drive(concurrency, ending.len(), retry_for, move |j| {
            let i = ending[j];
            let step = if i.is_multiple_of(2) {
                "confirm"
            } else {
                "cancel"
            };
            post(
                format!("{base}/v1/orders/{}/{step}", order(i)),
                None,
                step,
                i,
            )
        })
        .await
    };
    report("checkout wave 3: confirms and cancels", ending.len(), &ends);
    ensure_all(&ends, 200, "confirm or cancel")?;
    if !abandoned.is_empty() {
        // The sweeper ends the abandoned locks at their deadline (lock_ttl after the lock).
        let give_up =
            std::time::Instant::now() + retry_for.unwrap_or(std::time::Duration::from_secs(60));
        let mut open = abandoned.clone();
        while !open.is_empty() {
            anyhow::ensure!(
                std::time::Instant::now() < give_up,
                "{} abandoned locks were never ended by the sweeper",
                open.len()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let mut still = vec![];
            for i in open {
                let id = OrderId::parse(&order(i)).map_err(anyhow::Error::msg)?;
                if store.order(&id).await?.state == OrderState::Locked {
                    still.push(i);
                }
            }
            open = still;
        }
        println!(
            "sweeper      {} abandoned locks ended at their deadline",
            abandoned.len()
        );
    }

    // The database, user by user, then the whole audit.
    let mut wrong = vec![];
    let now = SystemClock.now();
    for i in 0..users {
        let id = OrderId::parse(&order(i)).map_err(anyhow::Error::msg)?;
        let record = store.order(&id).await?;
        let held = store.coupon(coupon[&i]).await?;
        let want_order = plan(i);
        let want_coupon = if want_order == OrderState::Confirmed {
            CouponStatus::Used
        } else {
            CouponStatus::Unused
        };
        if record.state != want_order || held.status(now) != want_coupon {
            wrong.push(format!(
                "user {i}: order {:?} (want {want_order:?}), coupon {:?} (want {want_coupon:?})",
                record.state,
                held.status(now)
            ));
        }
    }
    let violations = store
        .audit(SystemClock.now(), time::Duration::minutes(1))
        .await?;
    store.close().await;
    let count = |s: OrderState| (0..users).filter(|&i| plan(i) == s).count();
    let expired = if abandoned.is_empty() {
        String::new()
    } else {
        format!(", {} expired with it back", count(OrderState::Expired))
    };
    println!(
        "audit        {} orders confirmed with their coupon used, {} cancelled with it back{expired}; \
         {} wrong; invariant audit: {} violation(s)",
        count(OrderState::Confirmed),
        count(OrderState::Cancelled),
        wrong.len(),
        violations.len()
    );
    for w in wrong.iter().take(20) {
        println!("  wrong: {w}");
    }
    for v in &violations {
        println!("  violation: {} {}: {}", v.check, v.subject, v.detail);
    }
    anyhow::ensure!(
        wrong.is_empty() && violations.is_empty(),
        "the checkout audit failed"
    );
    Ok(())
}

/// Every request of a wave answered `status` (after retries).
fn ensure_all(tally: &Tally, status: u16, what: &str) -> anyhow::Result<()> {
    let good = tally
        .answers
        .iter()
        .filter(|(k, _)| k.as_str() == status.to_string())
        .map(|(_, v)| *v)
        .sum::<u64>();
    anyhow::ensure!(
        good as usize == tally.outcomes.len(),
        "not every {what} answered {status}: {:?}",
        tally.answers
    );
    Ok(())
}
