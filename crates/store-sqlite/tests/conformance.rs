//! The shared conformance suite on SQLite: every case on its own fresh database file.

use std::sync::Arc;

use coupond_store::Store;
use coupond_store_sqlite::SqliteStore;

async fn fresh(case: &'static str) -> Option<Arc<dyn Store>> {
    // The directory lives as long as the process; each case gets its own file in it.
    let dir = tempfile::Builder::new()
        .prefix(case)
        .tempdir()
        .expect("temp dir")
        .keep();
    let url = format!("sqlite://{}/coupond.db", dir.display());
    let store = SqliteStore::connect(&url).await.expect("open sqlite");
    store.migrate().await.expect("migrate");
    Some(Arc::new(store))
}

coupond_store::conformance_suite!(fresh);

#[tokio::test]
async fn creates_the_database_folder_and_migrates_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/nested/deeper/coupond.db", dir.path().display());
    let store = SqliteStore::connect(&url).await.expect("open");
    store.migrate().await.expect("first migrate");
    store.migrate().await.expect("second migrate is a no-op");
    store.ping().await.expect("ping");
    assert!(dir.path().join("nested/deeper/coupond.db").exists());
}
