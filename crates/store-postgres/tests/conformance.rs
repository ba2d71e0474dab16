//! The shared conformance suite on PostgreSQL, when `COUPOND_TEST_POSTGRES_URL` is set: every
//! case on its own fresh schema. Without it the cases skip, saying so.

use std::io::Write;
use std::sync::Arc;

use coupond_store::Store;
use coupond_store_postgres::PgDb;

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
    let store = PgDb::connect_in_schema(&url, Some(&schema))
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

/// The audit reads the stock shards (migration 0015): a shard that counts a coupon that does
/// not exist, or shards that hold more than the template's stock, are reported as `stock`. And
/// with the claim path's foreign keys dropped (the same migration), a reminder or a log row
/// that points at nothing is reported as `orphans`.
#[tokio::test]
async fn the_audit_catches_stock_shard_tampering_and_orphans() {
    use coupond_store::testing::fixtures::{assert_audit_finds, two_claims_audited_clean};

    let Ok(url) = std::env::var(ENV) else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIP postgres shard audit: {ENV} is not set"
        );
        return;
    };
    for (check, tamper) in [
        (
            "stock",
            "UPDATE {s}.template_stock SET claimed = claimed + 1
             WHERE shard = (SELECT MIN(shard) FROM {s}.template_stock WHERE claimed < total)",
        ),
        (
            "stock",
            "UPDATE {s}.template_stock SET total = total + 1 WHERE shard = 0",
        ),
        (
            "orphans",
            "INSERT INTO {s}.reminders (user_id, template_id, day, span_start, span_end, due_at)
             VALUES ('ghost', 999999, 1, now(), now() + interval '1 day', now())",
        ),
        (
            "orphans",
            "INSERT INTO {s}.coupon_events (coupon_id, to_status, actor, at)
             VALUES (999999, 'unused', 'system', now())",
        ),
    ] {
        let schema = format!("t_shard_audit_{}", uuid::Uuid::new_v4().simple());
        let store = PgDb::connect_in_schema(&url, Some(&schema))
            .await
            .expect("connect to postgres");
        store.migrate().await.expect("migrate");
        let store: Arc<dyn Store> = Arc::new(store);
        two_claims_audited_clean(&*store, 40).await;
        let raw = sqlx::PgPool::connect(&url).await.unwrap();
        let tamper = tamper.replace("{s}", &schema);
        sqlx::query(&tamper).execute(&raw).await.unwrap();
        raw.close().await;
        assert_audit_finds(&*store, check, &tamper).await;
        store.close().await;
    }
}
