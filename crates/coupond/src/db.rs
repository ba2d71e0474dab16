//! Opening the store named by the database URL: the one place the backend is chosen.

use std::sync::Arc;

use anyhow::Context;
use coupond_store::Store;
use coupond_store_mysql::MysqlStore;
use coupond_store_postgres::PgStore;
use coupond_store_sqlite::SqliteStore;

use crate::config::{redact_url, Config};

/// Opens the configured database (`database_url`, `database_pool_size`) and applies pending
/// migrations.
pub async fn open_configured(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    open_with_pool(&config.database.url, config.database.pool_size).await
}

/// Opens the database at `url` and applies pending migrations. The scheme picks the backend:
/// `sqlite:`, `postgres:`/`postgresql:` or `mysql:`/`mariadb:`; anything else is an error
/// naming them. `pool`: the PostgreSQL or MySQL pool size, or SQLite's reader connections;
/// `None` for the backend's default.
pub async fn open_with_pool(url: &str, pool: Option<u32>) -> anyhow::Result<Arc<dyn Store>> {
    let scheme = url.split(':').next().unwrap_or_default();
    let shown = redact_url(url);
    let store: Arc<dyn Store> = match scheme {
        "sqlite" => {
            let readers = pool.unwrap_or(coupond_store_sqlite::DEFAULT_READERS);
            let s = SqliteStore::connect_with_readers(url, readers)
                .await
                .with_context(|| format!("opening SQLite database {shown}"))?;
            s.migrate().await.context("applying SQLite migrations")?;
            Arc::new(s)
        }
        "postgres" | "postgresql" => {
            let max = pool.unwrap_or(coupond_store_postgres::DEFAULT_MAX_CONNECTIONS);
            let s = PgStore::connect_with_pool(url, max)
                .await
                .with_context(|| format!("connecting to PostgreSQL {shown}"))?;
            s.migrate()
                .await
                .context("applying PostgreSQL migrations")?;
            Arc::new(s)
        }
        "mysql" | "mariadb" => {
            let max = pool.unwrap_or(coupond_store_mysql::DEFAULT_MAX_CONNECTIONS);
            // sqlx reads `mysql://` only; MariaDB users write `mariadb://` as often.
            let url = url.replacen("mariadb://", "mysql://", 1);
            let s = MysqlStore::connect_with_pool(&url, max)
                .await
                .with_context(|| format!("connecting to MySQL {shown}"))?;
            s.migrate().await.context("applying MySQL migrations")?;
            Arc::new(s)
        }
        other => anyhow::bail!(
            "unsupported database URL scheme {other:?}: use sqlite://path/to/file.db, \
             postgres://user@host/database or mysql://user@host/database"
        ),
    };
    Ok(store)
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
        let Err(err) = open_with_pool("oracle://root@localhost/db", None).await else {
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
        let store = open_with_pool(&url, Some(2)).await.expect("open");
        assert_eq!(store.pool_stats().max, 3, "two readers and the writer");
        let a = jwt_secret(store.as_ref(), None).await.expect("secret");
        let b = jwt_secret(store.as_ref(), None).await.expect("secret");
        assert_eq!(a, b);
        assert!(a.len() >= 32);
    }
}
