//! `claim_batch` on one hot template against the bare minimum on the same PostgreSQL, with 1,
//! 4 and 16 concurrent batchers (see `coupond_store::testing::bench`).
//!
//! `COUPOND_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/coupond_test \
//!  cargo bench -p coupond-store-postgres --bench claim_batch [-- BATCH SECS]`
//!
//! The bare minimum is one statement in autocommit (one round trip, as `claim_batch`'s plain
//! path): a conditional update of a stock row, and an insert of the batch's rows into a table
//! with a primary key and no other index.

mod common;

use std::sync::Arc;

use coupond_store::testing::bench::{args, compare};
use coupond_store::Store;
use coupond_store_postgres::PgDb;
use sqlx::postgres::PgPoolOptions;

const BARE: &str = "WITH s AS (
     UPDATE bench_stock SET claimed = claimed + $1 WHERE id = 1 AND claimed + $1 <= total
     RETURNING 1)
 INSERT INTO bench_rows (template_id, user_id, at)
 SELECT 1, u, now() FROM unnest($2::text[]) AS u WHERE EXISTS (SELECT 1 FROM s)";

#[tokio::main]
async fn main() {
    let Ok(url) = std::env::var("COUPOND_TEST_POSTGRES_URL") else {
        eprintln!("SKIP: set COUPOND_TEST_POSTGRES_URL to run the PostgreSQL claim benchmark");
        return;
    };
    let schema = format!("bench_claims_{}", std::process::id());
    let store = PgDb::connect_in_schema(&url, Some(&schema))
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let store: Arc<dyn Store> = Arc::new(store);
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .after_connect({
            let schema = schema.clone();
            move |conn, _| {
                let schema = schema.clone();
                Box::pin(async move {
                    sqlx::query(&format!("SET search_path TO {schema}"))
                        .execute(conn)
                        .await
                        .map(|_| ())
                })
            }
        })
        .connect(&url)
        .await
        .expect("connect bare");
    for ddl in [
        "CREATE TABLE bench_stock (id BIGINT PRIMARY KEY, total BIGINT NOT NULL, claimed BIGINT NOT NULL)",
        "INSERT INTO bench_stock VALUES (1, 1000000000000, 0)",
        "CREATE TABLE bench_rows (id BIGSERIAL PRIMARY KEY, template_id BIGINT NOT NULL, \
         user_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL)",
    ] {
        sqlx::query(ddl).execute(&pool).await.expect("bare tables");
    }
    let bare = pool.clone();
    compare(
        "postgres",
        store.clone(),
        args(),
        &[1, 4, 16],
        move |users| {
            let pool = bare.clone();
            async move {
                sqlx::query(BARE)
                    .bind(users.len() as i64)
                    .bind(&users)
                    .execute(&pool)
                    .await
                    .expect("bare batch")
                    .rows_affected()
            }
        },
    )
    .await;
    pool.close().await;
    store.close().await;
    common::drop_schema(&url, &schema).await;
}
