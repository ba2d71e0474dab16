//! Opening the store named by the database URL: the one place the backend is chosen.

use std::sync::Arc;

use anyhow::Context;
use coupond_store::Store;
use coupond_store_mysql::MysqlDb;
use coupond_store_postgres::PgDb;
use coupond_store_sqlite::SqliteDb;

use crate::config::{redact_url, Config};

/// What opening a database may do to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// Create it if missing and apply pending migrations (`serve`, `migrate`).
    Migrate,
    /// Use it only if its schema is this build's: nothing is created or migrated
    /// (`serve --no-migrate`, and the commands that only use a database: `keys`, `token`,
    /// `audit`).
    Existing,
}

/// Opens the configured database (`database_url`, `database_pool_size`) and applies pending
/// migrations.
pub async fn open_configured(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    open_as(config, Open::Migrate).await
}

/// Opens the configured database as `how` says.
pub async fn open_as(config: &Config, how: Open) -> anyhow::Result<Arc<dyn Store>> {
    open(&config.database.url, config.database.pool_size, how).await
}

/// As [`open_as`], with the schema as it was found (before any migration), for saying what
/// opening it did ([`migrated`]).
pub async fn open_with_schema(
    config: &Config,
    how: Open,
) -> anyhow::Result<(Arc<dyn Store>, coupond_store::Schema)> {
    opened(&config.database.url, config.database.pool_size, how).await
}

/// What opening a database with `found` as its schema did, in words: created it, applied
/// which migrations, or nothing.
pub fn migrated(found: coupond_store::Schema, how: Open) -> String {
    let known = found.known;
    match found.applied {
        None if how == Open::Migrate => {
            format!("a new database: created its schema (migrations 1 to {known})")
        }
        Some(a) if a < known && how == Open::Migrate => {
            format!("applied migrations {} to {known}", a + 1)
        }
        Some(a) => format!("up to date (schema {a}); nothing to apply"),
        None => "no schema".to_owned(),
    }
}

/// Opens the database at `url`. The scheme picks the backend: `sqlite:`,
/// `postgres:`/`postgresql:` or `mysql:`/`mariadb:`; anything else is an error naming them.
/// `pool`: the PostgreSQL or MySQL pool size, or SQLite's reader connections; `None` for the
/// backend's default. A database a newer coupond migrated is refused, naming both versions
/// (migrations are forward-only: this build cannot know what they did).
pub async fn open(url: &str, pool: Option<u32>, how: Open) -> anyhow::Result<Arc<dyn Store>> {
    Ok(opened(url, pool, how).await?.0)
}

async fn opened(
    url: &str,
    pool: Option<u32>,
    how: Open,
) -> anyhow::Result<(Arc<dyn Store>, coupond_store::Schema)> {
    let scheme = url.split(':').next().unwrap_or_default();
    let shown = redact_url(url);
    let (store, schema): (Arc<dyn Store>, _) = match scheme {
        "sqlite" => {
            if how == Open::Existing && !SqliteDb::exists(url)? {
                anyhow::bail!(
                    "no coupond database at {shown}: `coupond migrate` (or `coupond serve`) \
                     creates it"
                );
            }
            let readers = pool.unwrap_or(coupond_store_sqlite::DEFAULT_READERS);
            let s = SqliteDb::connect_with_readers(url, readers)
                .await
                .with_context(|| format!("opening SQLite database {shown}"))?;
            let schema = s.schema().await?;
            if how == Open::Migrate && !schema.is_newer() {
                s.migrate().await.context("applying SQLite migrations")?;
            }
            (Arc::new(s), schema)
        }
        "postgres" | "postgresql" => {
            let max = pool.unwrap_or(coupond_store_postgres::DEFAULT_MAX_CONNECTIONS);
            let s = match PgDb::connect_with_pool(url, max).await {
                // A missing database is created where coupond may create its schema; only
                // then, so a server whose `postgres` database is closed to us still works.
                Err(e) if how == Open::Migrate && says(&e, "does not exist") => {
                    PgDb::create_database_if_missing(url)
                        .await
                        .with_context(|| format!("creating the PostgreSQL database {shown}"))?;
                    PgDb::connect_with_pool(url, max).await
                }
                r => r,
            }
            .with_context(|| format!("connecting to PostgreSQL {shown}"))?;
            let schema = s.schema().await?;
            if how == Open::Migrate && !schema.is_newer() {
                s.migrate()
                    .await
                    .context("applying PostgreSQL migrations")?;
            }
            (Arc::new(s), schema)
        }
        "mysql" | "mariadb" => {
            let max = pool.unwrap_or(coupond_store_mysql::DEFAULT_MAX_CONNECTIONS);
            // sqlx reads `mysql://` only; MariaDB users write `mariadb://` as often.
            let url = url.replacen("mariadb://", "mysql://", 1);
            let s = MysqlDb::connect_with_pool(&url, max)
                .await
                .with_context(|| format!("connecting to MySQL {shown}"))?;
            let schema = s.schema().await?;
            if how == Open::Migrate && !schema.is_newer() {
                s.migrate().await.context("applying MySQL migrations")?;
            }
            (Arc::new(s), schema)
        }
        other => anyhow::bail!(
            "unsupported database URL scheme {other:?}: use sqlite://path/to/file.db, \
             postgres://user@host/database or mysql://user@host/database"
        ),
    };
    if let Err(e) = check_schema(schema, how, &shown) {
        store.close().await;
        return Err(e);
    }
    Ok((store, schema))
}

/// Whether `e` or any error under it says `what`.
fn says(e: &(dyn std::error::Error + 'static), what: &str) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if e.to_string().contains(what) {
            return true;
        }
        at = e.source();
    }
    false
}

/// Refuses a schema this build cannot use: newer than it, or (when it may not migrate) not
/// there or behind it.
fn check_schema(schema: coupond_store::Schema, how: Open, shown: &str) -> anyhow::Result<()> {
    let known = schema.known;
    match schema.applied {
        Some(applied) if schema.is_newer() => anyhow::bail!(
            "the database {shown} has schema version {applied}, newer than this coupond's \
             {known}: run the coupond that migrated it, or a newer one (migrations only go \
             forward)"
        ),
        None if how == Open::Existing => anyhow::bail!(
            "{shown} holds no coupond schema: `coupond migrate` (or `coupond serve`) creates it"
        ),
        Some(applied) if how == Open::Existing && schema.is_behind() => anyhow::bail!(
            "the database {shown} has schema version {applied}; this coupond needs {known}: \
             run `coupond migrate` first"
        ),
        _ => Ok(()),
    }
}

/// `coupond backup`: a consistent copy of the SQLite database at `to`, taken while it may be
/// in use; the other backends have their own tools.
pub async fn backup(config: &Config, to: &std::path::Path) -> anyhow::Result<()> {
    let url = &config.database.url;
    anyhow::ensure!(
        url.starts_with("sqlite:"),
        "coupond backup copies SQLite databases; back up PostgreSQL with pg_dump and MySQL \
         with mysqldump (docs/OPERATIONS.md)"
    );
    anyhow::ensure!(!to.exists(), "{} exists already", to.display());
    anyhow::ensure!(
        SqliteDb::exists(url)?,
        "no coupond database at {}",
        redact_url(url)
    );
    let store = SqliteDb::connect_with_readers(url, 1)
        .await
        .with_context(|| format!("opening {}", redact_url(url)))?;
    let done = store.backup_to(to).await;
    coupond_store::AdminStore::close(&store).await;
    done.with_context(|| format!("writing {}", to.display()))?;
    println!("backed up {} to {}", redact_url(url), to.display());
    Ok(())
}

/// The user-token secret: the configured one, or the one kept in the database (generated on
/// first use), so `serve` and `token` against one database agree without configuration.
pub async fn jwt_secret(
    store: &dyn Store,
    configured: Option<&secrecy::SecretString>,
) -> anyhow::Result<Vec<u8>> {
    use base64::Engine;
    use secrecy::ExposeSecret;
    if let Some(s) = configured {
        anyhow::ensure!(
            s.expose_secret().len() >= 16,
            "jwt_secret must be at least 16 characters"
        );
        return Ok(s.expose_secret().as_bytes().to_vec());
    }
    let fresh: [u8; 32] = rand::random();
    let fresh = base64::engine::general_purpose::STANDARD.encode(fresh);
    let kept = store
        .setting_or_init("jwt_secret", &fresh)
        .await
        .context("reading the stored jwt secret")?;
    Ok(kept.into_bytes())
}

/// The console's secret: the configured one (at least 32 characters), or one kept in the
/// database (generated on first use), so instances on one database share sessions.
pub async fn console_secret(
    store: &dyn Store,
    configured: Option<&secrecy::SecretString>,
) -> anyhow::Result<Vec<u8>> {
    use base64::Engine;
    use secrecy::ExposeSecret;
    if let Some(s) = configured {
        anyhow::ensure!(
            s.expose_secret().len() >= 32,
            "console_secret must be at least 32 characters"
        );
        return Ok(s.expose_secret().as_bytes().to_vec());
    }
    let fresh: [u8; 48] = rand::random();
    let fresh = base64::engine::general_purpose::STANDARD.encode(fresh);
    let kept = store
        .setting_or_init("console_secret", &fresh)
        .await
        .context("reading the stored console secret")?;
    Ok(kept.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unknown_schemes_name_the_accepted_ones() {
        let Err(err) = open("oracle://root@localhost/db", None, Open::Migrate).await else {
            panic!("oracle:// must be refused");
        };
        let msg = err.to_string();
        assert!(
            msg.contains("sqlite://") && msg.contains("postgres://") && msg.contains("mysql://"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn stored_secret_is_stable() {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}/x.db", dir.path().display());
        let store = open(&url, Some(2), Open::Migrate).await.expect("open");
        assert_eq!(store.pool_stats().max, 3, "two readers and the writer");
        let a = jwt_secret(store.as_ref(), None).await.expect("secret");
        let b = jwt_secret(store.as_ref(), None).await.expect("secret");
        assert_eq!(a, b);
        assert!(a.len() >= 32);
    }
}
