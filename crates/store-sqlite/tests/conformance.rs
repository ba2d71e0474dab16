//! The shared conformance suite on SQLite: every case on its own fresh database file.

use std::sync::Arc;

use coupond_store::prelude::*;
use coupond_store::Store;
use coupond_store_sqlite::SqliteDb;

async fn fresh(case: &'static str) -> Option<Arc<dyn Store>> {
    // The directory lives as long as the process; each case gets its own file in it.
    let dir = tempfile::Builder::new()
        .prefix(case)
        .tempdir()
        .expect("temp dir")
        .keep();
    let url = format!("sqlite://{}/coupond.db", dir.display());
    let store = SqliteDb::connect(&url).await.expect("open sqlite");
    store.migrate().await.expect("migrate");
    Some(Arc::new(store))
}

coupond_store::conformance_suite!(fresh);

#[tokio::test]
async fn creates_the_database_folder_and_migrates_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/nested/deeper/coupond.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.expect("open");
    store.migrate().await.expect("first migrate");
    store.migrate().await.expect("second migrate is a no-op");
    store.ping().await.expect("ping");
    assert!(dir.path().join("nested/deeper/coupond.db").exists());
}

/// The audit catches each kind of damage a bug (or a hand in the database) could do.
#[tokio::test]
async fn the_audit_catches_tampering() {
    use coupond_store::testing::fixtures::{assert_audit_finds, two_claims_audited_clean};

    let tampering = [
        ("UPDATE templates SET claimed = claimed + 1", "stock"),
        (
            "UPDATE coupons SET user_id = 'a' WHERE user_id = 'b'",
            "per_user_limit",
        ),
        ("UPDATE holdings SET n = n + 1", "holdings"),
        ("UPDATE coupons SET status = 'used'", "uses"),
        (
            "UPDATE coupons SET status = 'locked', order_id = 'nope'",
            "locks",
        ),
        ("UPDATE coupons SET status = 'expired'", "log"),
        ("UPDATE templates SET given = 5", "template_amounts"),
    ];
    for (sql, check) in tampering {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/coupond.db", dir.path().display());
        let store = SqliteDb::connect(&url).await.expect("open");
        store.migrate().await.expect("migrate");
        two_claims_audited_clean(&store, 10).await;
        let raw = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query(sql).execute(&raw).await.unwrap();
        raw.close().await;
        assert_audit_finds(&store, check, sql).await;
        store.close().await;
    }
}
