//! The store-level claim benchmark, written once for every backend (each backend's
//! `benches/claim_batch.rs` supplies its bare-minimum transaction).
//!
//! `claim_batch` on one hot template is timed against the least a durable claim batch can
//! cost on the same database in the same run: one conditional update of a stock row and one
//! multi-row insert of as many rows into a table with no secondary index. Both run with
//! `batchers` concurrent loops, each committing batches of `batch` new users, for `secs`
//! seconds, three times alternately; the medians and their ratio are printed.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coupond_domain::{Actor, TemplateId, Timestamp, UserId};

use crate::testing::fixtures::{at, claimable_template};
use crate::{ClaimOutcome, ClaimRequest, Store};

/// A benchmark's `[BATCH SECS]` arguments: 1,000 claims per batch and 3 s per measurement
/// unless given.
pub fn args() -> (usize, f64) {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let batch = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let secs = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    (batch, secs)
}

/// The whole comparison on `store`: for each count of `batchers`, `claim_batch` on a fresh
/// hot template and `bare` alternately, three times each, and a [`report`] line of the
/// medians. `bare(users)` commits one bare batch of rows for `users` and returns how many rows
/// it wrote.
pub async fn compare<F, Fut>(
    backend: &str,
    store: Arc<dyn Store>,
    (batch, secs): (usize, f64),
    batchers: &[usize],
    bare: F,
) where
    F: Fn(Vec<String>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = u64> + Send + 'static,
{
    let template = claimable_template(store.as_ref(), 1_000_000_000, 1).await;
    let now = at(11);
    let valid = template.spec.validity.for_claim(now);
    for &n in batchers {
        let (mut claims, mut rows) = (vec![], vec![]);
        for run in 0..3 {
            let tag = format!("b{n}r{run}");
            let load = ClaimLoad {
                template: template.id,
                now,
                valid,
                batch,
                batchers: n,
                secs,
            };
            claims.push(claim_rate(store.clone(), load, &tag).await);
            let bare = bare.clone();
            rows.push(
                rate(n, secs, move |lane, round| {
                    bare(
                        (0..batch)
                            .map(|i| format!("{tag}-{lane}-{round}-{i}"))
                            .collect(),
                    )
                })
                .await,
            );
        }
        report(backend, batch, n, median(claims), median(rows));
    }
}

/// What one `claim_batch` measurement runs: `batchers` loops, each committing `batch` claims
/// of new users at a time on `template` at `now`, for `secs`.
#[derive(Clone, Copy, Debug)]
pub struct ClaimLoad {
    pub template: TemplateId,
    pub now: Timestamp,
    /// The coupons' validity.
    pub valid: (Timestamp, Timestamp),
    pub batch: usize,
    pub batchers: usize,
    pub secs: f64,
}

/// Claims per second of `claim_batch` under `load`; `run` keeps user ids distinct per run.
pub async fn claim_rate(store: Arc<dyn Store>, load: ClaimLoad, run: &str) -> f64 {
    let ClaimLoad {
        template,
        now,
        valid,
        batch,
        batchers,
        secs,
    } = load;
    let run = run.to_owned();
    rate(batchers, secs, move |lane, round| {
        let store = store.clone();
        let claims: Vec<ClaimRequest> = (0..batch)
            .map(|i| {
                let user = UserId::parse(&format!("{run}-{lane}-{round}-{i}")).expect("user id");
                ClaimRequest {
                    actor: Actor::User(user.clone()),
                    user,
                    valid_from: valid.0,
                    valid_until: valid.1,
                    idempotency: None,
                    code: None,
                    issuance: None,
                    channel: Default::default(),
                    source: None,
                }
            })
            .collect();
        async move {
            let out = store
                .claim_batch(template, &claims, now)
                .await
                .expect("claim batch");
            out.iter()
                .filter(|o| matches!(o, ClaimOutcome::Issued(_)))
                .count() as u64
        }
    })
    .await
}

/// Rows per second of `bare`, called the same way: `bare(lane, round)` commits one batch and
/// returns how many rows it wrote.
pub async fn rate<F, Fut>(batchers: usize, secs: f64, bare: F) -> f64
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = u64> + Send + 'static,
{
    let bare = Arc::new(bare);
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(secs);
    let mut lanes = Vec::new();
    for lane in 0..batchers {
        let (bare, done) = (bare.clone(), done.clone());
        lanes.push(tokio::spawn(async move {
            let mut round = 0;
            while Instant::now() < until {
                done.fetch_add(bare(lane, round).await, Ordering::Relaxed);
                round += 1;
            }
        }));
    }
    for l in lanes {
        l.await.expect("bench lane");
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

/// The median of three.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Prints one result line.
pub fn report(backend: &str, batch: usize, batchers: usize, claims: f64, bare: f64) {
    println!(
        "{backend:<10} batch {batch:>5}  batchers {batchers:>2}  claim_batch {claims:>10.0} claims/s  \
         bare {bare:>10.0} rows/s  ratio {:>5.1}%",
        100.0 * claims / bare
    );
}
