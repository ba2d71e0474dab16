//! Coupon ids on MySQL: each store (each coupond instance) draws blocks of ids from the shared
//! `id_blocks` counter and hands them out in memory. Two instances claiming at once on one
//! database must never hand out the same id, and a batch must not draw from the counter.
//! Needs `COUPOND_TEST_MYSQL_URL`; skips without it.

use std::collections::HashSet;
use std::sync::Arc;

use coupond_domain::TemplateId;
use coupond_store::testing::fixtures::{at, claimable_template, plain_claim};
use coupond_store::{ClaimOutcome, Store};
use coupond_store_mysql::MysqlDb;
use sqlx::{Connection, MySqlConnection};

mod common;

/// Ids a store draws at once (`ids::BLOCK`).
const BLOCK: i64 = 4_096;

/// Two stores on one fresh database, and that database's URL.
async fn two_instances(case: &str) -> Option<(Arc<dyn Store>, Arc<dyn Store>, String)> {
    let f = common::fresh("ids", case).await?;
    let b = MysqlDb::connect_in_database(&f.server, Some(&f.database))
        .await
        .expect("connect to mysql");
    Some((Arc::new(f.store), Arc::new(b), f.url))
}

/// `batches` batches of `size` claims of `template` on `store`, by users named after `who`;
/// the ids of the coupons issued.
async fn claim_batches(
    store: Arc<dyn Store>,
    template: TemplateId,
    who: String,
    batches: usize,
    size: usize,
) -> Vec<i64> {
    let mut ids = Vec::new();
    for b in 0..batches {
        let claims: Vec<_> = (0..size)
            .map(|i| plain_claim(&format!("{who}-{b}-{i}")))
            .collect();
        let out = store
            .claim_batch(template, &claims, at(15))
            .await
            .expect("claim batch");
        for o in out {
            match o {
                ClaimOutcome::Issued(c) => ids.push(c.id.get()),
                other => panic!("{who}: a claim within the stock got {other:?}"),
            }
        }
    }
    ids
}

async fn scalar(url: &str, q: &str) -> i64 {
    let mut conn = MySqlConnection::connect(url).await.expect("connect");
    let (n,): (i64,) = sqlx::query_as(q).fetch_one(&mut conn).await.expect(q);
    n
}

/// Two instances, four tasks each, claiming the same template at once: every coupon issued
/// has an id of its own, and the rows are exactly those coupons.
#[tokio::test]
async fn two_instances_claiming_at_once_never_share_an_id() {
    let Some((a, b, url)) = two_instances("two instances").await else {
        return;
    };
    let t = claimable_template(&*a, 100_000, 1).await;
    let mut tasks = Vec::new();
    for (name, store) in [("a", &a), ("b", &b)] {
        for k in 0..4 {
            let who = format!("{name}{k}");
            tasks.push(tokio::spawn(claim_batches(store.clone(), t.id, who, 8, 50)));
        }
    }
    let mut seen = HashSet::new();
    for task in tasks {
        for id in task.await.expect("join") {
            assert!(seen.insert(id), "coupon id {id} handed out twice");
        }
    }
    assert_eq!(seen.len(), 2 * 4 * 8 * 50);
    let rows = scalar(&url, "SELECT COUNT(*) FROM coupons").await;
    assert_eq!(rows, seen.len() as i64);
    a.close().await;
    b.close().await;
}

/// Batches take their ids from the instance's block: thirty claims in three batches draw one
/// block from the counter, not a statement each.
#[tokio::test]
async fn batches_take_their_ids_from_one_block() {
    let Some((a, b, url)) = two_instances("one block").await else {
        return;
    };
    let t = claimable_template(&*a, 1_000, 1).await;
    let ids = claim_batches(a.clone(), t.id, "u".into(), 3, 10).await;
    assert_eq!(ids, (1..=30).collect::<Vec<i64>>());
    let next = "SELECT next FROM id_blocks WHERE name = 'coupons'";
    assert_eq!(scalar(&url, next).await, BLOCK);
    // The other instance draws a block of its own, after the first one's.
    let theirs = claim_batches(b.clone(), t.id, "v".into(), 1, 10).await;
    assert_eq!(theirs[0], BLOCK + 1);
    assert_eq!(scalar(&url, next).await, 2 * BLOCK);
    a.close().await;
    b.close().await;
}
