//! What the PostgreSQL benchmarks share: their schema, dropped when they are done.

use sqlx::postgres::PgPoolOptions;

/// Drops `schema` (and everything in it) on the database at `url`.
pub async fn drop_schema(url: &str, schema: &str) {
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("connect");
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&admin)
        .await
        .expect("drop the bench schema");
    admin.close().await;
}
