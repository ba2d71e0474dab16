//! The two-round-trip claim batch when a stock shard changes between its two scripts: another
//! transaction takes from every shard and holds them while the batch reads (as committed) and
//! then waits on its update, and commits once the batch waits. The batch must then leave its
//! claim to the one-statement-at-a-time batch, which sees what is left: no coupon beyond the
//! stock, and the template's `sold_out` event written by whoever took its last coupon.
//! Needs `COUPOND_TEST_MYSQL_URL`; skips without it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use coupond_domain::TemplateId;
use coupond_store::testing::fixtures::{at, claimable_template, plain_claim};
use coupond_store::{ClaimOutcome, Store};
use sqlx::{Connection, MySqlConnection};

mod common;

struct Case {
    store: Arc<dyn Store>,
    url: String,
    database: String,
}

async fn fresh(case: &str) -> Option<Case> {
    let f = common::fresh("pipe", case).await?;
    Some(Case {
        store: Arc::new(f.store),
        url: f.url,
        database: f.database,
    })
}

/// Runs a one-claim batch while `take` (an update of the template's shards) is held
/// uncommitted by another transaction, which commits once the batch waits on a shard's lock.
async fn claim_while_shards_change(c: &Case, template: TemplateId, take: &str) -> ClaimOutcome {
    let mut other = MySqlConnection::connect(&c.url).await.expect("connect");
    sqlx::raw_sql("BEGIN")
        .execute(&mut other)
        .await
        .expect("begin");
    sqlx::query(take)
        .bind(template.get())
        .execute(&mut other)
        .await
        .expect("take from the shards");
    let store = c.store.clone();
    let batch = tokio::spawn(async move {
        store
            .claim_batch(template, &[plain_claim("u1")], at(15))
            .await
    });
    wait_for_the_batch_to_wait(&c.url, &c.database).await;
    sqlx::raw_sql("COMMIT")
        .execute(&mut other)
        .await
        .expect("commit");
    let mut out = batch.await.expect("join").expect("claim batch");
    out.pop().expect("one outcome")
}

/// Returns once a session of `database` runs an update of the stock shards (the batch's; the
/// other transaction, which holds every shard, sits idle), which can then only be waiting for
/// the other's locks. Polls the server's process list, which is live (InnoDB's own lock views
/// are snapshots refreshed at most every 100 ms).
async fn wait_for_the_batch_to_wait(url: &str, database: &str) {
    let mut watch = MySqlConnection::connect(url).await.expect("connect");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (waiting,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM information_schema.processlist
             WHERE db = ? AND command = 'Query' AND info LIKE 'UPDATE template_stock%'",
        )
        .bind(database)
        .fetch_one(&mut watch)
        .await
        .expect("processlist");
        if waiting > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the batch never waited on the shards"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn count(url: &str, q: &str) -> i64 {
    let mut conn = MySqlConnection::connect(url).await.expect("connect");
    let (n,): (i64,) = sqlx::query_as(q).fetch_one(&mut conn).await.expect(q);
    n
}

/// Stock 16 (16 shards of 1), every coupon taken by the other transaction while the batch
/// reads: the batch's update would take a shard past its stock, and must not.
#[tokio::test]
async fn a_shard_emptied_under_the_batch_gives_no_coupon() {
    let Some(c) = fresh("emptied").await else {
        return;
    };
    let t = claimable_template(&*c.store, 16, 1).await;
    let out = claim_while_shards_change(
        &c,
        t.id,
        "UPDATE template_stock SET claimed = total WHERE template_id = ?",
    )
    .await;
    assert_eq!(out, ClaimOutcome::SoldOut);
    assert_eq!(count(&c.url, "SELECT COUNT(*) FROM coupons").await, 0);
    c.store.close().await;
}

/// Stock 17 (shard 0 holds 2, the 15 others 1): the batch reads shard 0 as the one to take
/// from without emptying it, while the other transaction takes one coupon from it and the
/// last of every other shard. The batch's coupon is then the template's last, and its
/// `template.sold_out` event must be written, once.
#[tokio::test]
async fn a_take_that_empties_a_shard_unforeseen_still_reports_the_sell_out() {
    let Some(c) = fresh("unforeseen").await else {
        return;
    };
    let t = claimable_template(&*c.store, 17, 1).await;
    let out = claim_while_shards_change(
        &c,
        t.id,
        "UPDATE template_stock SET claimed = IF(shard = 0, 1, total) WHERE template_id = ?",
    )
    .await;
    assert!(matches!(out, ClaimOutcome::Issued(_)), "{out:?}");
    let sold_out = "SELECT COUNT(*) FROM outbox WHERE kind = 'template.sold_out'";
    assert_eq!(count(&c.url, sold_out).await, 1);
    c.store.close().await;
}
