//! Planning reminders on PostgreSQL: the shared statement (`coupond_store_sql::inbox`, a
//! multi-row `VALUES` list in a transaction) against PostgreSQL's own (six `unnest`ed arrays
//! in autocommit), interleaved on one database, as the reminder planner sends them after a
//! flash sale: a batch of new reminders, then the same batch again (all already planned).
//!
//! `COUPOND_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/coupond_test \
//!  cargo bench -p coupond-store-postgres --bench plan_reminders [-- BATCH ROUNDS]`
//!
//! Prints the median wall time per reminder of each, over ROUNDS rounds (default 500
//! reminders a batch, 40 rounds), one connection at a time. Each round's batch is one smaller
//! than the last, as the planner's batches vary with the dispatcher's: the shared statement's
//! text changes with the batch size, so each size is a statement PostgreSQL has not prepared.

mod common;

use std::future::Future;
use std::time::Instant;

use coupond_domain::{TemplateId, Timestamp, UserId, Window};
use coupond_store::{AdminStore, InboxStore, Reminder, StoreResult};
use coupond_store_postgres::PgDb;

const DAY: i64 = 86_400_000_000;

fn batch(tag: &str, n: usize) -> Vec<Reminder> {
    let at = |d: i64| Timestamp::from_unix_micros(d * DAY).expect("instant");
    (0..n)
        .map(|i| Reminder {
            user_id: UserId::parse(&format!("{tag}-{i}")).expect("user id"),
            template_id: TemplateId::new(1 + (i % 7) as i64).expect("template id"),
            day: 20_500,
            expiring: Window::new(at(20_500), at(20_501)).expect("window"),
            due_at: at(20_499),
        })
        .collect()
}

/// Microseconds per reminder that planning `n` took.
async fn timed<F: Future<Output = StoreResult<()>>>(f: F, n: usize) -> f64 {
    let t = Instant::now();
    f.await.expect("plan reminders");
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let Ok(url) = std::env::var("COUPOND_TEST_POSTGRES_URL") else {
        eprintln!("SKIP: set COUPOND_TEST_POSTGRES_URL to run the reminder planning benchmark");
        return;
    };
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(40);
    assert!(
        rounds < n,
        "a batch a round smaller than the last: ROUNDS < BATCH"
    );
    let schema = format!("bench_reminders_{}", std::process::id());
    let store = PgDb::connect_in_schema(&url, Some(&schema))
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    // [shared new, shared again, own new, own again]
    let mut took: [Vec<f64>; 4] = Default::default();
    for round in 0..rounds {
        let size = n - round;
        let shared = batch(&format!("s{round}"), size);
        let own = batch(&format!("o{round}"), size);
        let plan_shared = || coupond_store_sql::inbox::plan_reminders(&*store, &shared);
        let plan_own = || store.plan_reminders(&own);
        // Alternate which goes first, so neither always meets the other's leftovers.
        if round % 2 == 0 {
            took[0].push(timed(plan_shared(), size).await);
            took[1].push(timed(plan_shared(), size).await);
            took[2].push(timed(plan_own(), size).await);
            took[3].push(timed(plan_own(), size).await);
        } else {
            took[2].push(timed(plan_own(), size).await);
            took[3].push(timed(plan_own(), size).await);
            took[0].push(timed(plan_shared(), size).await);
            took[1].push(timed(plan_shared(), size).await);
        }
    }
    let [sn, sa, on, oa] = took.map(median);
    println!(
        "plan_reminders on PostgreSQL, batches of {n} down to {}, median of {rounds} rounds, \
         µs a reminder:",
        n + 1 - rounds
    );
    println!("  shared VALUES list: new {sn:.2}, already planned {sa:.2}");
    println!("  unnest of arrays:   new {on:.2}, already planned {oa:.2}");
    store.close().await;
    common::drop_schema(&url, &schema).await;
}
