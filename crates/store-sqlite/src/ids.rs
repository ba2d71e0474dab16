//! Ids never handed out twice (issue 61 point 11): the tables whose rows can be deleted
//! ([`TABLES`]) are rebuilt once with AUTOINCREMENT, so SQLite keeps the largest id ever used
//! (in `sqlite_sequence`) instead of taking the largest left plus one, which gave a deleted
//! draft's id to the next template and mixed two objects in the audit trail.
//!
//! SQLite cannot add AUTOINCREMENT to a table: it is rebuilt as its documentation says,
//! foreign keys off around one transaction that commits only if `foreign_key_check` finds no
//! broken reference. That cannot run in a migration file (the migrator wraps each in a
//! transaction, where turning foreign keys off does nothing), so
//! [`SqliteDb::migrate`](crate::SqliteDb::migrate) runs it after them. Each table's new
//! definition is its own as stored, with `AUTOINCREMENT` added to its key, and its indexes are
//! made again as stored: whatever later migrations add to these tables is kept.

use sqlx::{Connection, Row, SqliteConnection};

use coupond_store::{StoreError, StoreResult};

/// The tables whose rows are deleted (drafts, listings, webhooks and their deliveries).
const TABLES: [&str; 4] = ["templates", "listings", "webhooks", "webhook_deliveries"];

/// The key as each table declares it.
const KEY: &str = "INTEGER PRIMARY KEY,";

fn failed(why: String) -> StoreError {
    StoreError::other(std::io::Error::other(why))
}

/// Rebuilds each table not rebuilt yet: foreign keys off, one transaction that commits only
/// if no reference is broken, foreign keys back on.
pub(crate) async fn never_reused(conn: &mut SqliteConnection) -> StoreResult<()> {
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
    for table in TABLES {
        let ddl: Option<String> =
            sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?")
                .bind(table)
                .fetch_optional(&mut *tx)
                .await
                .map_err(StoreError::other)?;
        let Some(ddl) = ddl.filter(|d| !d.contains("AUTOINCREMENT")) else {
            continue;
        };
        for statement in statements(table, &ddl, &indexes(&mut tx, table).await?)? {
            sqlx::query(&statement)
                .execute(&mut *tx)
                .await
                .map_err(StoreError::other)?;
        }
    }
    let broken = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::other)?;
    if !broken.is_empty() {
        return Err(failed(format!(
            "rebuilding tables for ids never reused would break {} references",
            broken.len()
        )));
    }
    tx.commit().await.map_err(StoreError::other)
}

/// The stored statements of `table`'s indexes (not those SQLite made for its constraints).
async fn indexes(conn: &mut SqliteConnection, table: &str) -> StoreResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await
    .map_err(StoreError::other)?;
    rows.iter()
        .map(|r| r.try_get::<String, _>(0).map_err(StoreError::other))
        .collect()
}

/// The statements rebuilding `table` (defined by `ddl`) with AUTOINCREMENT, then `indexes`.
fn statements(table: &str, ddl: &str, indexes: &[String]) -> StoreResult<Vec<String>> {
    let at = ddl
        .find(KEY)
        .ok_or_else(|| failed(format!("{table}: no `{KEY}` key to make AUTOINCREMENT")))?;
    let body = ddl
        .find('(')
        .ok_or_else(|| failed(format!("{table}: not a CREATE TABLE")))?;
    let new = format!(
        "CREATE TABLE {table}_rebuilt {}{} AUTOINCREMENT,{}",
        &ddl[body..at],
        KEY.trim_end_matches(','),
        &ddl[at + KEY.len()..]
    );
    let mut out = vec![
        new,
        format!("INSERT INTO {table}_rebuilt SELECT * FROM {table}"),
        format!("DROP TABLE {table}"),
        format!("ALTER TABLE {table}_rebuilt RENAME TO {table}"),
    ];
    out.extend(indexes.iter().cloned());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::statements;

    #[test]
    fn the_key_gets_autoincrement_and_the_rest_stays() {
        let ddl = "CREATE TABLE listings (\n    id          INTEGER PRIMARY KEY,\n    \
                   title TEXT NOT NULL, bound INTEGER NOT NULL DEFAULT 0\n) STRICT";
        let index = "CREATE INDEX listings_by_title ON listings (title)".to_owned();
        let s = statements("listings", ddl, std::slice::from_ref(&index)).unwrap();
        assert_eq!(
            s[0],
            "CREATE TABLE listings_rebuilt (\n    id          INTEGER PRIMARY KEY AUTOINCREMENT,\n    \
             title TEXT NOT NULL, bound INTEGER NOT NULL DEFAULT 0\n) STRICT"
        );
        assert_eq!(s[1], "INSERT INTO listings_rebuilt SELECT * FROM listings");
        assert_eq!(s[4], index);
        assert!(statements("x", "CREATE TABLE x (id TEXT)", &[]).is_err());
    }
}
