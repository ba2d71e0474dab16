//! The shared conformance suite on MariaDB / MySQL, when `COUPOND_TEST_MYSQL_URL` is set:
//! every case in its own fresh database (named `ct_...`). Without it the cases skip, saying so.

use std::io::Write;
use std::sync::Arc;

use coupond_store::Store;
use coupond_store_mysql::MysqlStore;

const ENV: &str = "COUPOND_TEST_MYSQL_URL";

async fn fresh(case: &'static str) -> Option<Arc<dyn Store>> {
    let Ok(url) = std::env::var(ENV) else {
        // Straight to stderr: libtest captures `eprintln!`, and the point is to be seen.
        let _ = writeln!(
            std::io::stderr(),
            "SKIP mysql conformance `{case}`: {ENV} is not set"
        );
        return None;
    };
    // MySQL names are at most 64 characters: keep the random part, shorten the case name.
    let case_part: String = case.chars().take(26).collect();
    let database = format!("ct_{case_part}_{}", uuid::Uuid::new_v4().simple());
    let store = MysqlStore::connect_in_database(&url, Some(&database))
        .await
        .expect("connect to mysql");
    store.migrate().await.expect("migrate");
    let _ = writeln!(
        std::io::stderr(),
        "mysql conformance `{case}` running on MySQL in database {database}"
    );
    Some(Arc::new(store))
}

coupond_store::conformance_suite!(fresh);

/// In CI the MySQL run must not silently skip.
#[test]
fn mysql_is_configured_in_ci() {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        assert!(
            std::env::var(ENV).is_ok(),
            "CI=true but {ENV} is not set: the MySQL conformance suite would skip"
        );
    }
}
