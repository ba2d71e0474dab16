//! The claim engine against a real SQLite store: many concurrent claimers, audited after.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use coupond_domain::{ClaimRejection, Template, UserId};
use coupond_engine::{ClaimAsk, ClaimEngine, ClaimError, ClaimMode, ManualClock};
use coupond_store::testing::fixtures::{at, claimable_template};
use coupond_store::Store;
use coupond_store_sqlite::SqliteDb;

struct Setup {
    store: Arc<dyn Store>,
    clock: ManualClock,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/engine.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let clock = ManualClock::new(at(15));
    Setup {
        store: Arc::new(store),
        clock,
        _dir: dir,
    }
}

/// A published template claimable hours [10, 20) with `stock` and `limit`.
async fn template(store: &Arc<dyn Store>, stock: i64, limit: u32) -> Template {
    claimable_template(store.as_ref(), stock, limit).await
}

/// Fires `users` claims at once; returns (issued, sold out, limit reached).
async fn storm(engine: &ClaimEngine, t: &Template, users: Vec<String>) -> (usize, usize, usize) {
    let mut joins = vec![];
    for u in users {
        let (engine, t) = (engine.clone(), t.clone());
        joins.push(tokio::spawn(async move {
            engine
                .claim(&t, ClaimAsk::by_user(UserId::parse(&u).unwrap()))
                .await
        }));
    }
    let mut tally = (0, 0, 0);
    for j in joins {
        match j.await.unwrap() {
            Ok(c) => {
                assert!(!c.replayed);
                tally.0 += 1
            }
            Err(ClaimError::Rejected(ClaimRejection::SoldOut)) => tally.1 += 1,
            Err(ClaimError::Rejected(ClaimRejection::LimitReached)) => tally.2 += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    tally
}

async fn exact_under_a_rush(mode: ClaimMode) {
    let s = setup().await;
    let engine = ClaimEngine::new(s.store.clone(), Arc::new(s.clock.clone()), mode);
    let t = template(&s.store, 50, 1).await;
    let users = (0..200).map(|i| format!("u{i}")).collect();
    assert_eq!(storm(&engine, &t, users).await, (50, 150, 0));
    assert_eq!(s.store.template(t.id).await.unwrap().claimed, 50);
    assert_eq!(s.store.inspect().count_coupons(t.id).await.unwrap(), 50);

    // Per-user limits of 1 and 3 against 50 simultaneous claims by one user.
    for limit in [1, 3] {
        let t = template(&s.store, 100, limit).await;
        let users = vec!["greedy".to_owned(); 50];
        assert_eq!(
            storm(&engine, &t, users).await,
            (limit as usize, 0, 50 - limit as usize)
        );
        assert_eq!(
            s.store.inspect().count_coupons(t.id).await.unwrap(),
            i64::from(limit)
        );
    }
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_claims_are_exact_under_a_rush() {
    exact_under_a_rush(ClaimMode::Batched { max_batch: 64 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_claims_are_exact_under_a_rush() {
    exact_under_a_rush(ClaimMode::Single).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_are_checked_before_and_inside_the_commit() {
    let s = setup().await;
    let engine = ClaimEngine::new(
        s.store.clone(),
        Arc::new(s.clock.clone()),
        ClaimMode::default(),
    );
    let t = template(&s.store, 1, 1).await;
    let c = engine
        .claim(&t, ClaimAsk::by_user(UserId::parse("a").unwrap()))
        .await
        .unwrap()
        .coupon;
    assert_eq!(
        (c.template_id, c.claimed_at, c.valid_from),
        (t.id, at(15), at(15))
    );
    assert_eq!(
        c.valid_until,
        at(15 + 48),
        "two days from the claim (the fixture's validity)"
    );
    let sold = engine
        .claim(&t, ClaimAsk::by_user(UserId::parse("b").unwrap()))
        .await;
    assert_eq!(sold, Err(ClaimError::Rejected(ClaimRejection::SoldOut)));
    // Sold out is remembered: answered without touching the database again.
    assert_eq!(
        engine
            .claim(&t, ClaimAsk::by_user(UserId::parse("c").unwrap()))
            .await,
        sold
    );

    s.clock.set(at(9));
    let early = engine
        .claim(
            &template(&s.store, 5, 1).await,
            ClaimAsk::by_user(UserId::parse("a").unwrap()),
        )
        .await;
    assert!(matches!(
        early,
        Err(ClaimError::Rejected(ClaimRejection::NotClaimable(_)))
    ));
    s.clock.set(at(15));

    // The caller's copy says active, but the template was aborted meanwhile: the commit refuses.
    let t = template(&s.store, 5, 1).await;
    s.store
        .abort_template(t.id, t.version, at(14))
        .await
        .unwrap();
    let late = engine
        .claim(&t, ClaimAsk::by_user(UserId::parse("a").unwrap()))
        .await;
    assert!(
        matches!(
            late,
            Err(ClaimError::Rejected(ClaimRejection::NotClaimable(_)))
        ),
        "{late:?}"
    );
    assert_eq!(s.store.inspect().count_coupons(t.id).await.unwrap(), 0);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_every_queued_claim_then_refuses() {
    let s = setup().await;
    let engine = ClaimEngine::new(
        s.store.clone(),
        Arc::new(s.clock.clone()),
        ClaimMode::default(),
    );
    let t = template(&s.store, 1000, 1).await;
    let mut joins = vec![];
    for i in 0..100 {
        let (engine, t) = (engine.clone(), t.clone());
        joins.push(tokio::spawn(async move {
            engine
                .claim(
                    &t,
                    ClaimAsk::by_user(UserId::parse(&format!("u{i}")).unwrap()),
                )
                .await
        }));
    }
    // Let the claims reach the engine; some may arrive after shutdown starts and be refused.
    tokio::task::yield_now().await;
    engine.shutdown().await;
    let mut issued = 0;
    for j in joins {
        match j.await.unwrap() {
            Ok(_) => issued += 1,
            Err(ClaimError::ShuttingDown) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    // Every acknowledged claim exists; nothing else does.
    assert_eq!(s.store.inspect().count_coupons(t.id).await.unwrap(), issued);
    assert_eq!(s.store.template(t.id).await.unwrap().claimed, issued);
    assert_eq!(
        engine
            .claim(&t, ClaimAsk::by_user(UserId::parse("late").unwrap()))
            .await,
        Err(ClaimError::ShuttingDown)
    );
}

/// Retries with one idempotency key, fired together (so several land in one batch): one
/// coupon, every answer carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_with_one_key_get_one_coupon() {
    let s = setup().await;
    let engine = ClaimEngine::new(
        s.store.clone(),
        Arc::new(s.clock.clone()),
        ClaimMode::default(),
    );
    let t = template(&s.store, 100, 10).await;
    let key = coupond_store::IdempotencyKey {
        key: "user:u|claims|k1".into(),
        fingerprint: [7; 32],
    };
    let mut joins = vec![];
    for _ in 0..30 {
        let (engine, t, key) = (engine.clone(), t.clone(), key.clone());
        joins.push(tokio::spawn(async move {
            engine
                .claim(
                    &t,
                    ClaimAsk::by_user(UserId::parse("u").unwrap()).with_key(key),
                )
                .await
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    let mut fresh = 0;
    for j in joins {
        let c = j.await.unwrap().unwrap();
        ids.insert(c.coupon.id);
        fresh += usize::from(!c.replayed);
    }
    assert_eq!((ids.len(), fresh), (1, 1));
    assert_eq!(s.store.inspect().count_coupons(t.id).await.unwrap(), 1);
    let other = coupond_store::IdempotencyKey {
        fingerprint: [8; 32],
        ..key
    };
    assert_eq!(
        engine
            .claim(
                &t,
                ClaimAsk::by_user(UserId::parse("u").unwrap()).with_key(other)
            )
            .await,
        Err(ClaimError::KeyReused)
    );
    engine.shutdown().await;
}

/// A batch of codes interrupted after one step (the process gone) is finished by the next
/// process from what was committed: exactly `count` distinct codes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_batches_resume_after_a_restart() {
    use coupond_domain::{CodeBatchDraft, CodeBatchSpec};
    use coupond_engine::codes::CHUNK;
    use coupond_engine::CodeGenerator;

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/codes.db", dir.path().display());
    let open = || async {
        let s = SqliteDb::connect(&url).await.unwrap();
        s.migrate().await.unwrap();
        Arc::new(s) as Arc<dyn Store>
    };
    let clock: Arc<dyn coupond_engine::Clock> = Arc::new(ManualClock::new(at(15)));
    let store = open().await;
    let t = template(&store, 10, 1).await;
    let spec = CodeBatchSpec::try_from(CodeBatchDraft {
        count: 2 * CHUNK + 7,
        prefix: "R".into(),
        length: 8,
    })
    .unwrap();
    let batch = store.insert_code_batch(t.id, &spec, at(15)).await.unwrap();
    let first = CodeGenerator::new(store.clone(), clock.clone(), std::time::Duration::ZERO);
    let Some(b) = first.run_once().await.unwrap() else {
        panic!("a batch was waiting")
    };
    assert_eq!(b.generated, CHUNK);
    drop(first);
    store.close().await;

    let store = open().await;
    let second = CodeGenerator::new(store.clone(), clock, std::time::Duration::ZERO);
    let mut steps = 0;
    while second.run_once().await.unwrap().is_some() {
        steps += 1;
    }
    assert_eq!(steps, 2);
    let b = store.code_batch(batch.id).await.unwrap();
    assert_eq!((b.generated, b.finished_at.is_some()), (spec.count(), true));
    let codes = store.batch_codes(batch.id, None, 100_000).await.unwrap();
    let distinct: std::collections::HashSet<_> = codes.iter().map(|c| c.code.clone()).collect();
    assert_eq!(
        (codes.len(), distinct.len()),
        (spec.count() as usize, spec.count() as usize)
    );
}
