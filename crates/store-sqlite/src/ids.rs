//! Ids never handed out twice (issue 61 point 11): the tables whose rows can be deleted
//! (templates, listings, webhooks, webhook deliveries) are rebuilt once with AUTOINCREMENT, so
//! SQLite keeps the largest id ever used instead of taking the largest left plus one. The
//! rebuild (`ids_never_reused.sql`) runs after the migration files, outside them: the migrator
//! wraps each file in a transaction, where turning foreign keys off does nothing, and dropping
//! a table others refer to needs them off.

use sqlx::{Connection, SqliteConnection};

use coupond_store::{StoreError, StoreResult};

const REBUILD: &str = include_str!("ids_never_reused.sql");

/// Rebuilds the tables unless done before (a new database is built and rebuilt in one start):
/// foreign keys off, one transaction that commits only if no reference is broken, foreign keys
/// back on.
pub(crate) async fn never_reused(conn: &mut SqliteConnection) -> StoreResult<()> {
    let sql: Option<String> = sqlx::query_scalar(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'templates'",
    )
    .fetch_optional(&mut *conn)
    .await
    .map_err(StoreError::other)?;
    if sql.is_none_or(|s| s.contains("AUTOINCREMENT")) {
        return Ok(());
    }
    sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(&mut *conn)
        .await
        .map_err(StoreError::other)?;
    let rebuilt = rebuild(conn).await;
    let on = sqlx::query("PRAGMA foreign_keys = ON")
        .execute(&mut *conn)
        .await
        .map_err(StoreError::other);
    rebuilt.and(on.map(drop))
}

async fn rebuild(conn: &mut SqliteConnection) -> StoreResult<()> {
    let mut tx = conn.begin().await.map_err(StoreError::other)?;
    sqlx::raw_sql(REBUILD)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::other)?;
    let broken = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::other)?;
    if !broken.is_empty() {
        return Err(StoreError::other(std::io::Error::other(format!(
            "rebuilding the tables for ids never reused would break {} references",
            broken.len()
        ))));
    }
    tx.commit().await.map_err(StoreError::other)
}
