//! What the MySQL-only tests share: a database of their own on the server of
//! `COUPOND_TEST_MYSQL_URL`.
// Each test file compiles this module on its own and reads only the fields it needs.
#![allow(dead_code)]

use std::io::Write;

use coupond_store_mysql::{MysqlDb, MysqlStore};

const ENV: &str = "COUPOND_TEST_MYSQL_URL";

/// A new database named `ct_{prefix}_…`, migrated.
pub struct Fresh {
    /// A store on it.
    pub store: MysqlStore,
    /// Its name.
    pub database: String,
    /// The server's URL, as the environment gives it.
    pub server: String,
    /// Its own URL.
    pub url: String,
}

/// A fresh database for the test `case`, or `None` (and a SKIP line) without
/// `COUPOND_TEST_MYSQL_URL`.
pub async fn fresh(prefix: &str, case: &str) -> Option<Fresh> {
    let Ok(server) = std::env::var(ENV) else {
        let _ = writeln!(std::io::stderr(), "SKIP mysql `{case}`: {ENV} is not set");
        return None;
    };
    let database = format!("ct_{prefix}_{}", uuid::Uuid::new_v4().simple());
    let store = MysqlDb::connect_in_database(&server, Some(&database))
        .await
        .expect("connect to mysql");
    store.migrate().await.expect("migrate");
    let base = server.rsplit_once('/').map_or(server.as_str(), |(b, _)| b);
    let url = format!("{base}/{database}");
    Some(Fresh {
        store,
        database,
        server,
        url,
    })
}
