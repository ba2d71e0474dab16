//! `claim_batch` on one hot template against the bare minimum on the same SQLite file (WAL,
//! synchronous=FULL, one writer), in the same run (see `coupond_store::testing::bench`).
//!
//! `cargo bench -p coupond-store-sqlite --bench claim_batch [-- BATCH SECS]`
//!
//! The bare minimum is one IMMEDIATE transaction: a conditional update of a stock row and one
//! multi-row insert of the batch's rows into a table with no secondary index.

use std::str::FromStr;
use std::sync::Arc;

use coupond_store::testing::bench::{args, compare};
use coupond_store::Store;
use coupond_store_sqlite::SqliteDb;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let dir = tempfile::tempdir().expect("tmp");
    let url = format!("sqlite://{}/bench.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.expect("open");
    store.migrate().await.expect("migrate");
    let store: Arc<dyn Store> = Arc::new(store);
    let opts = SqliteConnectOptions::from_str(&url)
        .expect("url")
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(opts)
        .await
        .expect("bare pool");
    for ddl in [
        "CREATE TABLE bench_stock (id INTEGER PRIMARY KEY, total INTEGER NOT NULL, claimed INTEGER NOT NULL)",
        "INSERT INTO bench_stock VALUES (1, 1000000000000, 0)",
        "CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, template_id INTEGER NOT NULL, \
         user_id TEXT NOT NULL, at INTEGER NOT NULL)",
    ] {
        sqlx::query(ddl).execute(&pool).await.expect("bare tables");
    }
    // One writer: one batcher.
    compare("sqlite", store, args(), &[1], move |users| {
        let pool = pool.clone();
        async move { bare_batch(&pool, &users).await }
    })
    .await;
}

/// One bare batch: the stock update and one multi-row insert (in statements of at most 500
/// rows, under SQLite's bound-parameter limit), committed.
async fn bare_batch(pool: &sqlx::SqlitePool, users: &[String]) -> u64 {
    let mut conn = pool.acquire().await.expect("conn");
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *conn)
        .await
        .expect("begin");
    sqlx::query(
        "UPDATE bench_stock SET claimed = claimed + ?1 WHERE id = 1 AND claimed + ?1 <= total",
    )
    .bind(users.len() as i64)
    .execute(&mut *conn)
    .await
    .expect("stock");
    let mut n = 0;
    for chunk in users.chunks(500) {
        let mut b = sqlx::QueryBuilder::new("INSERT INTO bench_rows (template_id, user_id, at) ");
        b.push_values(chunk, |mut row, u| {
            row.push_bind(1_i64).push_bind(u).push_bind(0_i64);
        });
        n += b
            .build()
            .execute(&mut *conn)
            .await
            .expect("insert")
            .rows_affected();
    }
    sqlx::query("COMMIT")
        .execute(&mut *conn)
        .await
        .expect("commit");
    n
}
