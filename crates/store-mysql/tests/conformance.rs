//! The shared conformance suite on MariaDB / MySQL, when `COUPOND_TEST_MYSQL_URL` is set:
//! every case in its own fresh database (named `ct_...`). Without it the cases skip, saying so.

use std::io::Write;
use std::sync::Arc;

use coupond_store::Store;
use coupond_store_mysql::MysqlDb;

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
    let store = MysqlDb::connect_in_database(&url, Some(&database))
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

/// The audit reads the stock shards (migration 0005): a shard that counts a coupon that does
/// not exist, or shards that hold more than the template's stock, are reported as `stock`. And
/// with the claim path's foreign keys dropped (migration 0021), a reminder or a log row that
/// points at nothing is reported as `orphans` (the insert fails while the keys are there).
#[tokio::test]
async fn the_audit_catches_stock_shard_tampering_and_orphans() {
    use coupond_store::testing::fixtures::{assert_audit_finds, two_claims_audited_clean};

    let Ok(url) = std::env::var(ENV) else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIP mysql shard audit: {ENV} is not set"
        );
        return;
    };
    for (check, tamper) in [
        (
            "stock",
            "UPDATE template_stock SET claimed = claimed + 1 WHERE claimed < total LIMIT 1",
        ),
        (
            "stock",
            "UPDATE template_stock SET total = total + 1 LIMIT 1",
        ),
        (
            "orphans",
            "INSERT INTO reminders (user_id, template_id, day, span_start, span_end, due_at)
             VALUES ('ghost', 999999, 1, 86400000000, 172800000000, 0)",
        ),
        (
            "orphans",
            "INSERT INTO coupon_events (coupon_id, to_status, actor, at)
             VALUES (999999, 'unused', 'system', 0)",
        ),
    ] {
        let database = format!("ct_shard_audit_{}", uuid::Uuid::new_v4().simple());
        let store = MysqlDb::connect_in_database(&url, Some(&database))
            .await
            .expect("connect to mysql");
        store.migrate().await.expect("migrate");
        let store: Arc<dyn Store> = Arc::new(store);
        two_claims_audited_clean(&*store, 40).await;
        let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
        let raw = sqlx::MySqlPool::connect(&format!("{base}/{database}"))
            .await
            .unwrap();
        sqlx::query(tamper).execute(&raw).await.unwrap();
        raw.close().await;
        assert_audit_finds(&*store, check, tamper).await;
        store.close().await;
    }
}
