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
