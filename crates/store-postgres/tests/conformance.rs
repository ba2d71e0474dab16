//! The shared conformance suite on PostgreSQL, when `COUPOND_TEST_POSTGRES_URL` is set: every
//! case on its own fresh schema. Without it the cases skip, saying so.

use std::io::Write;
use std::sync::Arc;

use coupond_store::Store;
use coupond_store_postgres::PgStore;

const ENV: &str = "COUPOND_TEST_POSTGRES_URL";

async fn fresh(case: &'static str) -> Option<Arc<dyn Store>> {
    let Ok(url) = std::env::var(ENV) else {
        // Straight to stderr: libtest captures `eprintln!`, and the point is to be seen.
        let _ = writeln!(
            std::io::stderr(),
            "SKIP postgres conformance `{case}`: {ENV} is not set"
        );
        return None;
    };
    // PostgreSQL names are at most 63 bytes: keep the random part, shorten the case name.
    let case_part: String = case.chars().take(28).collect();
    let schema = format!("t_{case_part}_{}", uuid::Uuid::new_v4().simple());
    let store = PgStore::connect_in_schema(&url, Some(&schema))
        .await
        .expect("connect to postgres");
    store.migrate().await.expect("migrate");
    let _ = writeln!(
        std::io::stderr(),
        "postgres conformance `{case}` running on PostgreSQL in schema {schema}"
    );
    Some(Arc::new(store))
}

coupond_store::conformance_suite!(fresh);

/// In CI the PostgreSQL run must not silently skip.
#[test]
fn postgres_is_configured_in_ci() {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        assert!(
            std::env::var(ENV).is_ok(),
            "CI=true but {ENV} is not set: the PostgreSQL conformance suite would skip"
        );
    }
}
