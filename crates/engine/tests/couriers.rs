//! Two couriers of one channel on one database (two instances), one of them slow: a message is
//! handed to the provider once per attempt recorded, whoever holds the lease (issue 61 point 2:
//! with a 4 s SMTP server, a courier whose 10 s lease lapsed mid-batch had the other instance
//! send its messages again, under the same `Message-ID`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use coupond_domain::messaging::{Channel, MessageKind, QuietHours};
use coupond_domain::{UserId, Zone};
use coupond_engine::messaging::{ChannelRules, Courier, SendError, Transport};
use coupond_engine::ManualClock;
use coupond_store::testing::fixtures::at;
use coupond_store::{NewOutbound, Outbound, OutboundQuery, OutboundStatus, Store};
use coupond_store_sqlite::SqliteDb;
use tokio::sync::{oneshot, Notify};

/// A provider that records every message it is handed; its first call waits until released
/// (a slow SMTP server), having said it started.
#[derive(Debug)]
struct Slow {
    handed: Mutex<Vec<i64>>,
    started: Mutex<Option<oneshot::Sender<()>>>,
    release: Notify,
}

#[async_trait]
impl Transport for Slow {
    async fn send(&self, m: &Outbound) -> Result<String, SendError> {
        self.handed.lock().unwrap().push(m.id);
        let first = self.started.lock().unwrap().take();
        if let Some(started) = first {
            started.send(()).unwrap();
            self.release.notified().await;
        }
        Ok("250 ok".into())
    }
}

fn rules() -> ChannelRules {
    ChannelRules {
        channel: Channel::Email,
        kinds: MessageKind::ALL.to_vec(),
        quiet: QuietHours::NONE,
        per_second: 100,
        max_attempts: 5,
    }
}

fn message(n: u32) -> NewOutbound {
    NewOutbound {
        channel: Channel::Email,
        key: format!("event:{n}"),
        user_id: Some(UserId::parse(&format!("u-{n}")).unwrap()),
        kind: MessageKind::CouponClaimed,
        address: format!("u{n}@example.com"),
        zone: Zone::UTC,
        subject: "Your coupon".into(),
        body: "You claimed it.".into(),
        due_at: at(1),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_goes_to_the_provider_once_whatever_the_couriers() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/couriers.db", dir.path().display());
    let sqlite = SqliteDb::connect(&url).await.unwrap();
    sqlite.migrate().await.unwrap();
    let store: Arc<dyn Store> = Arc::new(sqlite);
    let batch: Vec<NewOutbound> = (1..=3).map(message).collect();
    assert_eq!(store.queue_outbound(&batch, at(1)).await.unwrap(), 3);

    let clock = ManualClock::new(at(1));
    let (started, running) = oneshot::channel();
    let slow = Arc::new(Slow {
        handed: Mutex::default(),
        started: Mutex::new(Some(started)),
        release: Notify::new(),
    });
    let courier = |holder: &str| {
        Courier::new(
            store.clone(),
            Arc::new(clock.clone()),
            rules(),
            slow.clone(),
            holder,
        )
    };
    let (a, b) = (courier("instance-a"), courier("instance-b"));
    // A takes the lease and its batch, and is stuck in its first send.
    let first = tokio::spawn(async move { a.run_once().await });
    running.await.unwrap();
    // A's lease lapses meanwhile; B takes it and sends what is due.
    clock.advance(time::Duration::seconds(11));
    let by_b = b.run_once().await.unwrap();
    slow.release.notify_one();
    let by_a = first.await.unwrap().unwrap();

    let mut handed = slow.handed.lock().unwrap().clone();
    handed.sort_unstable();
    let ids: Vec<i64> = {
        let log = store
            .outbound(&OutboundQuery {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            log.iter()
                .all(|o| o.status == OutboundStatus::Sent && o.attempts == 1),
            "{log:?}"
        );
        let mut ids: Vec<i64> = log.iter().map(|o| o.id).collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(handed, ids, "each message handed over once");
    assert_eq!(
        (by_a.sent + by_b.sent, by_a.sent),
        (3, 1),
        "{by_a:?} {by_b:?}"
    );
}
