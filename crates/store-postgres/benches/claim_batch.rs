//! `claim_batch` on one hot template against the bare minimum on the same PostgreSQL, with 1,
//! 4 and 16 concurrent batchers (see `coupond_store::testing::bench`).
//!
//! `COUPOND_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/coupond_test \
//!  cargo bench -p coupond-store-postgres --bench claim_batch [-- BATCH SECS]`
//!
//! The bare minimum is one statement in autocommit (one round trip, as `claim_batch`'s plain
//! path): a conditional update of a stock row, and an insert of the batch's rows into a table
//! with a primary key and no other index.

use std::sync::Arc;

use coupond_store::testing::bench::{claim_rate, median, rate, report, ClaimLoad};
use coupond_store::testing::fixtures::{at, claimable_template};
use coupond_store::Store;
use coupond_store_postgres::PgStore;
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
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let batch: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let secs: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let schema = format!("bench_claims_{}", std::process::id());
    let store = PgStore::connect_in_schema(&url, Some(&schema))
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    let store: Arc<dyn Store> = Arc::new(store);
    let template = claimable_template(store.as_ref(), 1_000_000_000, 1).await;
    let now = at(11);
    let valid = template.spec.validity.for_claim(now);
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
    for batchers in [1, 4, 16] {
        let (mut claims, mut bare) = (vec![], vec![]);
        for run in 0..3 {
            let tag = format!("b{batchers}r{run}");
            claims.push(
                claim_rate(
                    store.clone(),
                    ClaimLoad {
                        template: template.id,
                        now,
                        valid,
                        batch,
                        batchers,
                        secs,
                    },
                    &tag,
                )
                .await,
            );
            let pool = pool.clone();
            bare.push(
                rate(batchers, secs, move |lane, round| {
                    let pool = pool.clone();
                    let users: Vec<String> = (0..batch)
                        .map(|i| format!("{tag}-{lane}-{round}-{i}"))
                        .collect();
                    async move {
                        sqlx::query(BARE)
                            .bind(batch as i64)
                            .bind(&users)
                            .execute(&pool)
                            .await
                            .expect("bare batch")
                            .rows_affected()
                    }
                })
                .await,
            );
        }
        report("postgres", batch, batchers, median(claims), median(bare));
    }
    pool.close().await;
    store.close().await;
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("connect");
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&admin)
        .await
        .expect("drop the bench schema");
}
