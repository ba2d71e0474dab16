//! What the first commands say: `migrate` tells a new database from one it migrated and from
//! one with nothing to apply; `migrate` creates a missing PostgreSQL database, as the README
//! says; a `COUPOND_*` variable that names no setting (a misspelling) is warned about rather
//! than ignored in silence.

use std::process::Command;

use crate::{run, BIN};

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn migrate_says_what_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--database", "sqlite://first.db", "migrate"];
    let (said, err) = text(&run(dir.path(), &args));
    assert!(
        said.contains("a new database: created its schema"),
        "{said}{err}"
    );
    let (said, err) = text(&run(dir.path(), &args));
    assert!(
        said.contains("up to date") && said.contains("nothing to apply"),
        "{said}{err}"
    );
}

#[test]
fn a_misspelled_variable_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .env("COUPOND_DATABASE", "sqlite://typo.db")
        .env("COUPOND_LOG_LEVEL", "warn")
        .arg("config")
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("COUPOND_DATABASE is not a coupond setting"),
        "{err}"
    );
    assert!(
        !err.contains("COUPOND_LOG_LEVEL"),
        "a real setting is not warned about: {err}"
    );
}

#[test]
fn migrate_creates_a_missing_postgres_database() {
    let Ok(url) = std::env::var("COUPOND_TEST_POSTGRES_URL") else {
        println!("SKIP postgres: COUPOND_TEST_POSTGRES_URL is not set");
        return;
    };
    println!("first-run test running on PostgreSQL");
    let server = url.rsplit_once('/').map(|(s, _)| s.to_owned()).unwrap();
    let name = format!("coupond_new_{:x}", rand::random::<u32>());
    let target = format!("{server}/{name}");
    let dir = tempfile::tempdir().unwrap();
    let (said, err) = text(&run(dir.path(), &["--database", &target, "migrate"]));
    assert!(
        said.contains("a new database: created its schema"),
        "{said}{err}"
    );
    // Each cause is said once (the driver's words were repeated after the store's).
    let elsewhere = format!("{server}/{name}_not_there");
    let (_, err) = text(&run(
        dir.path(),
        &["--database", &elsewhere, "keys", "list"],
    ));
    assert_eq!(err.matches("does not exist").count(), 1, "{err}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&format!("{server}/postgres"))
            .await
            .unwrap();
        sqlx::query(&format!("DROP DATABASE \"{name}\" WITH (FORCE)"))
            .execute(&mut c)
            .await
            .unwrap();
    });
}

/// A fresh server's first scrape has every family an operator alerts on or graphs (issue 61
/// point 14): the counters at zero, the audit's "never ran" values, the budget gauge, each
/// worker's restarts; none waits for its first event to appear.
#[test]
fn the_first_scrape_has_every_metric() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/metrics.db", dir.path().display());
    let (server, base) = crate::start_server(dir.path(), &db, "127.0.0.1:0", &[]);
    let (status, body) = crate::get(&base, "/metrics", None);
    assert_eq!(status, 200);
    let has = |series: &str| body.lines().any(|l| l.starts_with(series));
    for family in [
        "coupond_claims_total{outcome=\"issued\"} 0",
        "coupond_claims_total{outcome=\"sold_out\"} 0",
        "coupond_claims_sold_out_from_memory_total 0",
        "coupond_claim_batch_size",
        "coupond_claim_commit_seconds",
        "coupond_webhook_deliveries_total{result=\"failed\"} 0",
        "coupond_webhook_queue_age_seconds",
        "coupond_scheduler_lag_seconds",
        "coupond_codes_generated_total 0",
        "coupond_rate_limited_total{limit=\"claim_per_user\"} 0",
        "coupond_nats_published_total 0",
        "coupond_audit_violations 0",
        "coupond_audit_last_run_timestamp_seconds 0",
        "coupond_budget_used_ratio_max 0",
        "coupond_locks_expiring_soon 0",
        "coupond_messages_total{channel=\"email\",outcome=\"sent\"} 0",
        "coupond_worker_restarts_total{worker=\"dispatcher\"} 0",
        "coupond_seen_dropped_total 0",
        "coupond_database_up 1",
    ] {
        assert!(has(family), "{family} is not on the first scrape:\n{body}");
    }
    assert!(crate::terminate_and_wait(server).success());
}
