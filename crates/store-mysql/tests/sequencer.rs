//! The outbox's sequencer around events still being written: an event whose transaction is
//! open is neither numbered nor waited for, whether it sits between committed events or just
//! past a run of them that is numbered as a range, and once committed it is numbered after every event read before it, so a
//! consumer reading by position sees each event once and never one behind its position.
//! Needs `COUPOND_TEST_MYSQL_URL`; skips without it.

use std::sync::Arc;
use std::time::Duration;

use coupond_store::testing::fixtures::{at, claimable_template, plain_claim};
use coupond_store::{Event, OutboxPosition, Store};
use sqlx::{Connection, MySqlConnection};

mod common;

/// How long a read may take before the test calls it stuck behind the open transaction
/// (InnoDB would wait 50 s, its lock wait timeout).
const STUCK: Duration = Duration::from_secs(20);

async fn fresh(case: &str) -> Option<(Arc<dyn Store>, String)> {
    let f = common::fresh("seq", case).await?;
    Some((Arc::new(f.store), f.url))
}

/// An event written by a transaction left open on a connection of its own.
async fn open_event(url: &str) -> (MySqlConnection, i64) {
    let mut conn = MySqlConnection::connect(url).await.expect("connect");
    sqlx::raw_sql("BEGIN")
        .execute(&mut conn)
        .await
        .expect("begin");
    let done = sqlx::query("INSERT INTO outbox (kind, at, body) VALUES ('test.open', 0, '{}')")
        .execute(&mut conn)
        .await
        .expect("insert an event");
    (conn, done.last_insert_id() as i64)
}

async fn claim(s: &Arc<dyn Store>, template: coupond_domain::TemplateId, users: &[&str]) {
    let claims: Vec<_> = users.iter().map(|u| plain_claim(u)).collect();
    s.claim_batch(template, &claims, at(15))
        .await
        .expect("claim");
}

/// Everything readable after `from`, which must not wait on the open transaction.
async fn read(s: &Arc<dyn Store>, from: OutboxPosition) -> Vec<Event> {
    tokio::time::timeout(STUCK, s.outbox_read(from, 1000))
        .await
        .expect("the read waited on the open transaction")
        .expect("outbox read")
}

fn end(events: &[Event], from: OutboxPosition) -> OutboxPosition {
    events.last().map_or(from, |e| OutboxPosition {
        txid: e.txid,
        event_id: e.id,
    })
}

#[tokio::test]
async fn events_being_written_are_numbered_once_committed_after_those_read() {
    let Some((s, url)) = fresh("sequencer").await else {
        return;
    };
    let t = claimable_template(&*s, 100, 1).await;
    claim(&s, t.id, &["u1", "u2", "u3"]).await;
    // One open between committed events, one past the last of them, behind a run of committed
    // events long enough to be numbered as a range.
    let (mut middle, middle_id) = open_event(&url).await;
    let run: Vec<String> = (4..=15).map(|i| format!("u{i}")).collect();
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    claim(&s, t.id, &run).await;
    let (mut last, last_id) = open_event(&url).await;

    let first = read(&s, OutboxPosition::default()).await;
    let ids: Vec<i64> = first.iter().map(|e| e.id).collect();
    assert!(
        !ids.contains(&middle_id) && !ids.contains(&last_id),
        "{ids:?}"
    );
    let claimed = first.iter().filter(|e| e.kind == "coupon.claimed").count();
    assert_eq!(claimed, 15, "every committed claim's event: {ids:?}");
    let pos = end(&first, OutboxPosition::default());
    assert!(
        read(&s, pos).await.is_empty(),
        "nothing new while both are open"
    );

    sqlx::raw_sql("COMMIT")
        .execute(&mut last)
        .await
        .expect("commit");
    sqlx::raw_sql("COMMIT")
        .execute(&mut middle)
        .await
        .expect("commit");
    let second = read(&s, pos).await;
    let mut late: Vec<i64> = second.iter().map(|e| e.id).collect();
    late.sort_unstable();
    let mut expected = vec![middle_id, last_id];
    expected.sort_unstable();
    assert_eq!(late, expected, "both, once, after the position read");
    assert!(
        second.iter().all(|e| e.txid > pos.txid),
        "numbered after {pos:?}: {second:?}"
    );
    assert!(read(&s, end(&second, pos)).await.is_empty());
    s.close().await;
}
