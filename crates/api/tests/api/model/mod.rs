//! Model-based tests: random sequences of operations run against the real router and against a
//! small in-test model ([`state::Model`]); every answer must be the one the model predicts.
//!
//! The op space, kept small so that sequences collide often (sold out, limits, locks taken):
//! - `Create`: a standalone template of merchant 1, published at once: stock 1-4, per-user
//!   limit 1-2, a claim window opening -45 min to +1 h from now and lasting 1-4 h, coupons
//!   worth 10.00 off valid until 0-3 h after the window ends. Every sequence starts with one.
//! - `Claim`: the order service claims for `u-0`..`u-2`, sometimes with an Idempotency-Key out
//!   of three, so retries (`Retry` sends the last claim with a key again), replays after
//!   restarts and key reuse all happen.
//! - `Issue`: a JSON bulk issuance (answered when done) to some of the three users.
//! - `Lock`: an order `o-0`..`o-4` of 100.00 locks one coupon for its owner or for another
//!   user; sometimes the recorded body is sent again, to test the replay.
//! - `Confirm`, `Cancel` an order (mostly one that exists, sometimes `o-5`/`o-6`, never locked).
//! - `Advance` the manual clock 1 min to 4 h, sometimes stepping the lock sweeper and the
//!   scheduler after it (they are the background work a server runs on its own).
//! - `Restart`: a fresh `AppState` and router over the same database: the claim engine's
//!   batchers and sold-out memory are gone, and nothing acknowledged may be.
//!
//! After every op the answer is compared with the model (status, problem `code`, the fields
//! that matter) and the store's invariant audit must be clean; at the end every user's wallet,
//! every template's counters and every order are compared in full. The check runs on SQLite,
//! and with fewer cases (each on a fresh database) on PostgreSQL and MySQL when their URLs are
//! set. Other tests run fixed seeded sequences on SQLite and on each server backend and require
//! identical transcripts (coupon ids compared by their order of issue: a server's sequence may
//! skip some, see `Run::rank`).
//!
//! Left out on purpose: amounts beyond the one discount (every template takes 10.00 off a
//! 100.00 order; `checkout.rs` covers the arithmetic), orders of several coupons, activities,
//! codes and aborts. Failures shrink to the shortest sequence that still disagrees.

mod run;
mod state;

use coupond_api::AppSettings;
use coupond_domain::Timestamp;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::support::*;
use run::Run;
use state::USERS;

/// Order ids `o-0` .. `o-4` are locked; `o-5`, `o-6` never are (confirm and cancel get 404).
pub(crate) const ORDERS: u8 = 5;
/// Idempotency keys `k-0` .. `k-2`.
const KEYS: u8 = 3;

#[derive(Clone, Debug)]
enum Op {
    Create {
        start: i64,
        hours: i64,
        valid_after: i64,
        stock: i64,
        limit: i64,
    },
    /// Template and coupon numbers are indices taken modulo what exists, so shrinking (which
    /// drops ops) keeps every op meaningful.
    Claim {
        t: usize,
        user: usize,
        key: Option<u8>,
    },
    Issue {
        t: usize,
        users: Vec<usize>,
    },
    Lock {
        order: u8,
        coupon: usize,
        payer: Option<usize>,
        again: bool,
    },
    /// The last claim sent with this key, sent again (a client retrying after a timeout).
    Retry(u8),
    /// Confirm or cancel: mostly an order that exists (an index), sometimes one that does not.
    Confirm(u8),
    Cancel(u8),
    Advance {
        minutes: i64,
        sweep: bool,
    },
    Restart,
}

fn create() -> impl Strategy<Value = Op> {
    (-3i64..=4, 1i64..=4, 0i64..=3, 1i64..=4, 1i64..=2).prop_map(
        |(quarter, hours, valid_after, stock, limit)| Op::Create {
            start: quarter * 15,
            hours,
            valid_after,
            stock,
            limit,
        },
    )
}

fn op() -> impl Strategy<Value = Op> {
    let user = 0..USERS;
    prop_oneof![
        2 => create(),
        7 => (0usize..4, user.clone(), prop::option::weighted(0.4, 0..KEYS))
            .prop_map(|(t, user, key)| Op::Claim { t, user, key }),
        2 => (0..KEYS).prop_map(Op::Retry),
        2 => (0usize..4, prop::sample::subsequence((0..USERS).collect::<Vec<_>>(), 1..=USERS))
            .prop_map(|(t, users)| Op::Issue { t, users }),
        5 => (0..ORDERS, 0usize..16, prop::option::weighted(0.1, user), any::<bool>())
            .prop_map(|(order, coupon, payer, again)| Op::Lock { order, coupon, payer, again }),
        3 => (0..ORDERS + 2).prop_map(Op::Confirm),
        2 => (0..ORDERS + 2).prop_map(Op::Cancel),
        3 => (prop::sample::select(vec![1i64, 5, 14, 15, 16, 30, 60, 120, 240]), any::<bool>())
            .prop_map(|(minutes, sweep)| Op::Advance { minutes, sweep }),
        1 => Just(Op::Restart),
    ]
}

/// A sequence: a template first (so that claims have something to hit), then up to `max` ops.
fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    (create(), prop::collection::vec(op(), 0..max)).prop_map(|(first, mut rest)| {
        rest.insert(0, first);
        rest
    })
}

fn at_min(minutes: i64) -> Timestamp {
    t0().plus(time::Duration::minutes(minutes))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn app(backend: Backend) -> Option<TestApp> {
    // The sold-out memory is trusted for `cache_ttl`; the model follows it in minutes.
    let settings = AppSettings {
        cache_ttl: std::time::Duration::from_secs(60 * state::MEMO_MINUTES as u64),
        ..AppSettings::default()
    };
    TestApp::with_settings(backend, settings).await
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES still wins, as it does for proptest's own default.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
        // The regressions file would land beside this module; a failure prints its input.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_api_behaves_like_the_model_on_sqlite(ops in ops(40)) {
        runtime().block_on(async {
            Run::new(app(Backend::Sqlite).await.unwrap()).run(&ops).await;
        });
    }
}

/// The model check on a server backend, `cases` sequences each on a fresh database (schema):
/// fewer than on SQLite, since each case's migration costs more than its ops (about 0.5 s on
/// PostgreSQL, 2 s of InnoDB DDL on MySQL). `PROPTEST_CASES` (the soak's 1,000) counts a tenth
/// here. Skipped, after saying so, when the backend's URL is not set. A failure shrinks for at
/// most a minute.
fn the_api_behaves_like_the_model_on(backend: Backend, cases: u32) {
    if backend.url().is_none() {
        return;
    }
    let config = Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse::<u32>().ok())
            .map_or(cases, |c| (c / 10).max(1)),
        failure_persistence: None,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let result = TestRunner::new(config).run(&ops(40), |ops| {
        runtime().block_on(async {
            Run::new(app(backend).await.unwrap()).run(&ops).await;
        });
        Ok(())
    });
    if let Err(e) = result {
        panic!("{backend:?}: {e}");
    }
}

#[test]
fn the_api_behaves_like_the_model_on_postgres() {
    the_api_behaves_like_the_model_on(Backend::Postgres, 12);
}

#[test]
fn the_api_behaves_like_the_model_on_mysql() {
    the_api_behaves_like_the_model_on(Backend::Mysql, 8);
}

/// Fixed sequences (seeded, the same on every run) on SQLite and on `server`: the transcripts
/// of answers must be identical, ids and timestamps included, since both start empty on the
/// same manual clock.
fn sqlite_and_server_answer_alike(server: Backend) {
    runtime().block_on(async {
        for seed in 1..=6u8 {
            let Some(other) = app(server).await else {
                return;
            };
            let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
            let mut runner = TestRunner::new_with_rng(Config::default(), rng);
            let ops = ops(30).new_tree(&mut runner).unwrap().current();
            let sqlite = Run::new(app(Backend::Sqlite).await.unwrap())
                .run(&ops)
                .await;
            let other = Run::new(other).run(&ops).await;
            for (a, b) in sqlite.iter().zip(&other) {
                assert_eq!(
                    a, b,
                    "seed {seed}: the first answer that differs (SQLite, {server:?})"
                );
            }
            assert_eq!(sqlite.len(), other.len(), "seed {seed}");
        }
    });
}

#[test]
fn sqlite_and_postgres_answer_alike() {
    sqlite_and_server_answer_alike(Backend::Postgres);
}

#[test]
fn sqlite_and_mysql_answer_alike() {
    sqlite_and_server_answer_alike(Backend::Mysql);
}
