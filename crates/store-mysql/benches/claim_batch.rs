//! `claim_batch` on one hot template against the bare minimum on the same MySQL server, with
//! 1, 4 and 16 concurrent batchers (see `coupond_store::testing::bench`).
//!
//! `COUPOND_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/mysql \
//!  cargo bench -p coupond-store-mysql --bench claim_batch [-- BATCH SECS]`
//!
//! The bare minimum is one transaction per batch, as `claim_batch` has: a conditional update
//! of a stock row, and one multi-row insert of the batch's rows into a table with a primary
//! key and no other index.

use std::sync::Arc;

use coupond_store::testing::bench::{args, compare};
use coupond_store::Store;
use coupond_store_mysql::MysqlDb;
use sqlx::mysql::MySqlPoolOptions;
use sqlx::{MySql, QueryBuilder};

#[tokio::main]
async fn main() {
    let Ok(url) = std::env::var("COUPOND_TEST_MYSQL_URL") else {
        eprintln!("SKIP: set COUPOND_TEST_MYSQL_URL to run the MySQL claim benchmark");
        return;
    };
    let database = format!("bench_claims_{}", std::process::id());
    let store = MysqlDb::connect_in_database(&url, Some(&database))
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let store: Arc<dyn Store> = Arc::new(store);
    let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
    let pool = MySqlPoolOptions::new()
        .max_connections(16)
        .connect(&format!("{base}/{database}"))
        .await
        .expect("connect bare");
    for ddl in [
        "CREATE TABLE bench_stock (id BIGINT PRIMARY KEY, total BIGINT NOT NULL, claimed BIGINT NOT NULL)",
        "INSERT INTO bench_stock VALUES (1, 1000000000000, 0)",
        "CREATE TABLE bench_rows (id BIGINT AUTO_INCREMENT PRIMARY KEY, template_id BIGINT NOT NULL, \
         user_id VARCHAR(255) NOT NULL, at BIGINT NOT NULL)",
    ] {
        sqlx::query(ddl).execute(&pool).await.expect("bare tables");
    }
    let bare = pool.clone();
    compare("mysql", store.clone(), args(), &[1, 4, 16], move |users| {
        let pool = bare.clone();
        async move { bare_batch(&pool, &users).await }
    })
    .await;
    pool.close().await;
    store.close().await;
    let admin = MySqlPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("connect");
    sqlx::query(&format!("DROP DATABASE {database}"))
        .execute(&admin)
        .await
        .expect("drop the bench database");
}

async fn bare_batch(pool: &sqlx::MySqlPool, users: &[String]) -> u64 {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query(
        "UPDATE bench_stock SET claimed = claimed + ? WHERE id = 1 AND claimed + ? <= total",
    )
    .bind(users.len() as i64)
    .bind(users.len() as i64)
    .execute(&mut *tx)
    .await
    .expect("stock");
    let mut b = QueryBuilder::<MySql>::new("INSERT INTO bench_rows (template_id, user_id, at) ");
    b.push_values(users, |mut row, u| {
        row.push("1")
            .push_bind(u)
            .push("UNIX_TIMESTAMP() * 1000000");
    });
    let n = b
        .build()
        .execute(&mut *tx)
        .await
        .expect("rows")
        .rows_affected();
    tx.commit().await.expect("commit");
    n
}
