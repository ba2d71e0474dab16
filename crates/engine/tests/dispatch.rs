//! The outbox dispatcher against a real SQLite store: a failing observer delays only itself;
//! the leases its loops hold are written once per third of their time.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coupond_domain::UserId;
use coupond_engine::dispatch::{Dispatcher, Observer};
use coupond_engine::{ClaimAsk, ClaimEngine, ClaimMode, Lease, ManualClock};
use coupond_store::testing::fixtures::{at, claimable_template};
use coupond_store::{Event, OutboxStore, Store, StoreError, StoreResult};
use coupond_store_sqlite::SqliteDb;

/// Records the ids of the events it is handed.
#[derive(Default)]
struct Recorder(Mutex<Vec<i64>>);

#[async_trait]
impl Observer for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        self.0.lock().unwrap().extend(events.iter().map(|e| e.id));
        Ok(())
    }
}

/// A consumer whose downstream is down: every batch fails.
struct Broken;

#[async_trait]
impl Observer for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn handle(&self, _: &[Event]) -> StoreResult<()> {
        Err(StoreError::other("downstream unreachable"))
    }
}

/// 2,500 claims (more than two of the dispatcher's 1,000-event batches) while one observer
/// fails every time: the other still gets every event exactly once, in order, although the
/// failing one holds the shared read window at the start of the outbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_observer_delays_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/dispatch.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let clock = ManualClock::new(at(15));
    let t = claimable_template(store.as_ref(), 10_000, 1).await;
    let engine = ClaimEngine::new(
        store.clone(),
        Arc::new(clock.clone()),
        ClaimMode::Batched { max_batch: 512 },
    );
    let mut joins = vec![];
    for i in 0..2_500 {
        let (engine, t) = (engine.clone(), t.clone());
        joins.push(tokio::spawn(async move {
            let user = UserId::parse(&format!("u{i}")).unwrap();
            engine.claim(&t, ClaimAsk::by_user(user)).await.unwrap();
        }));
    }
    for j in joins {
        j.await.unwrap();
    }
    let written: Vec<i64> = store
        .inspect()
        .events_after(0, 1_000_000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    assert!(written.len() >= 2_500, "{} events", written.len());

    // The broken observer comes first, so a pass that stopped at its error would starve the
    // recorder.
    let recorder = Arc::new(Recorder::default());
    let observers: Vec<Arc<dyn Observer>> = vec![Arc::new(Broken), recorder.clone()];
    let dispatcher = Dispatcher::new(store.clone(), Arc::new(clock), observers, "test");
    let mut passes = 0;
    loop {
        passes += 1;
        assert!(passes < 100, "the recorder never caught up");
        match dispatcher.run_once().await {
            Ok(n) => assert!(n > 0, "a pass with events left handed nothing"),
            // Nothing handed and an error: the recorder is level, only the broken one is behind.
            Err(e) => {
                assert!(format!("{e:?}").contains("downstream unreachable"), "{e:?}");
                break;
            }
        }
    }
    assert_eq!(
        *recorder.0.lock().unwrap(),
        written,
        "every event once, in order"
    );
}

/// A lease is written again only once a third of its time has passed since this holder last
/// wrote it: a pass before that holds it without a write (so it lapses at the first write's
/// end), a pass after renews it.
#[tokio::test]
async fn a_lease_is_renewed_after_a_third_of_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/lease.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let secs = |n: i64| at(0).plus(time::Duration::seconds(n));
    let ttl = time::Duration::seconds(30);

    let early = Lease::new("early", "a", ttl);
    assert!(early.hold(&store, secs(0)).await.unwrap());
    assert!(early.hold(&store, secs(5)).await.unwrap(), "still ours");
    // Written at 0 only: it lapsed at 30, so another instance takes it at 31...
    assert!(store
        .try_lease("early", "b", secs(31), secs(61))
        .await
        .unwrap());
    // ...and this holder finds it taken.
    assert!(!early.hold(&store, secs(32)).await.unwrap());

    let late = Lease::new("late", "a", ttl);
    assert!(late.hold(&store, secs(0)).await.unwrap());
    assert!(late.hold(&store, secs(11)).await.unwrap());
    // Renewed at 11, until 41: nobody else gets it at 31.
    assert!(!store
        .try_lease("late", "b", secs(31), secs(61))
        .await
        .unwrap());
}
