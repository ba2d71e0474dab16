//! kill -9 under load (issue 6, fault 1): the server is killed with SIGKILL at seeded random
//! intervals and restarted on the same database and address while a load generator keeps
//! going, retrying by Idempotency-Key whatever got no definitive answer. Afterwards every
//! outcome is known, each acknowledged effect exists exactly once, refused ones left nothing,
//! and `coupond audit` is clean. Loads, each on SQLite, PostgreSQL and MySQL: a flash sale,
//! checkouts (claim, lock, confirm or cancel) and a 100,000-user bulk issuance.
//!
//! `COUPOND_CRASH_SEED` replays a schedule; the seed in use is printed.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};

use super::{run, start_server, terminate_and_wait, BIN};

/// A port nobody listens on now, so the restarted server can take the same address.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The outcomes in a loadtest history file: (ok, failed, unknown).
fn outcomes(path: &std::path::Path) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut t = (0, 0, 0);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["outcome"].as_str().unwrap() {
            "ok" => t.0 += 1,
            "failed" => t.1 += 1,
            _ => t.2 += 1,
        }
    }
    t
}

/// A request killed with its server leaves its Idempotency-Key running; retries are told 409
/// `idempotency_in_flight` until this has passed, then run again.
const SERVER_ENV: &[(&str, &str)] = &[("COUPOND_IDEMPOTENCY_STALE", "2s")];

/// Runs `coupond loadtest <load>` against a server on `db` and kills the server `kills` times
/// at seeded random intervals, restarting it each time. Returns the load test's stdout once
/// it succeeded; the server is stopped and the audit run.
fn under_repeated_kill_9(db: &str, load: &[&str], kills: usize, test: &str) -> String {
    let seed: u64 = std::env::var("COUPOND_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_121);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let (mut server, base) = start_server(dir.path(), db, &listen, SERVER_ENV);
    let mut load = Command::new(BIN)
        .current_dir(dir.path())
        .args(["--database", db, "loadtest", "--url", &base])
        .args(load)
        .args(["--retry-for", "120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut done = 0;
    while done < kills {
        // The fault schedule: how long this server lives.
        std::thread::sleep(Duration::from_millis(rng.random_range(300..1_200)));
        if load.try_wait().unwrap().is_some() {
            break;
        }
        server.kill().unwrap(); // SIGKILL
        server.wait().unwrap();
        done += 1;
        server = start_server(dir.path(), db, &listen, SERVER_ENV).0;
    }
    let out: Output = load.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        done, kills,
        "the load ended after {done} of {kills} kills (seed {seed}): make it longer\n{stdout}"
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("{test}: {kills} kills, seed {seed}\n{stdout}\n").as_bytes(),
    );
    assert!(terminate_and_wait(server).success());
    assert_audit_clean(dir.path(), db);
    stdout
}

/// The retries a load test reports (`retried N attempts`).
fn retries(stdout: &str) -> u64 {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("retried      "))
        .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A flash sale of 30,000 users for 15,000 coupons, killed three times.
fn flash_sale_under_kill_9(db: &str, test: &str) {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.jsonl");
    let history_arg = history.display().to_string();
    let stdout = under_repeated_kill_9(
        db,
        &[
            "--scenario",
            "custom",
            "--users",
            "30000",
            "--stock",
            "15000",
            "--concurrency",
            "48",
            "--history",
            &history_arg,
        ],
        3,
        test,
    );
    let (ok, failed, unknown) = outcomes(&history);
    // Every claim ended in a definitive answer; the stock went to exactly that many users.
    assert_eq!((ok, failed, unknown), (15_000, 15_000, 0), "{stdout}");
    assert!(
        retries(&stdout) > 0,
        "no claim was in flight at a kill: {stdout}"
    );
    // The load generator's own audit: I1, I2, every acknowledged coupon exists and is its
    // user's, no refused claim left a coupon.
    assert!(
        stdout.contains("refused claims left nothing: OK"),
        "{stdout}"
    );
    assert!(
        stdout.contains("15000/15000 acknowledged coupons exist"),
        "{stdout}"
    );
}

#[test]
fn kill_9_repeatedly_during_a_flash_sale_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/crash.db", dir.path().display());
    flash_sale_under_kill_9(&db, "flash sale on SQLite");
}

#[test]
fn kill_9_repeatedly_during_a_flash_sale_on_postgres() {
    let Some(db) = super::postgres_schema("crash") else {
        return;
    };
    flash_sale_under_kill_9(&db, "flash sale on PostgreSQL");
}

#[test]
fn kill_9_repeatedly_during_a_flash_sale_on_mysql() {
    let Some(db) = super::mysql_database("crash") else {
        return;
    };
    flash_sale_under_kill_9(&db, "flash sale on MySQL");
}

/// Checkouts: claim, lock, then confirm or cancel, with kills across the waves.
fn checkouts_under_kill_9(db: &str, test: &str) {
    let stdout = under_repeated_kill_9(db, &["--scenario", "checkout", "--users", "3000"], 3, test);
    assert!(
        stdout.contains("1500 orders confirmed with their coupon used, 1500 cancelled with it back; 0 wrong; invariant audit: 0 violation(s)"),
        "{stdout}"
    );
    assert!(
        retries(&stdout) > 0,
        "no request was in flight at a kill: {stdout}"
    );
}

#[test]
fn kill_9_repeatedly_during_checkouts_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/checkout.db", dir.path().display());
    checkouts_under_kill_9(&db, "checkouts on SQLite");
}

#[test]
fn kill_9_repeatedly_during_checkouts_on_postgres() {
    let Some(db) = super::postgres_schema("crash") else {
        return;
    };
    checkouts_under_kill_9(&db, "checkouts on PostgreSQL");
}

#[test]
fn kill_9_repeatedly_during_checkouts_on_mysql() {
    let Some(db) = super::mysql_database("crash") else {
        return;
    };
    checkouts_under_kill_9(&db, "checkouts on MySQL");
}

/// `coupond audit` on the database: every invariant check passes.
pub(crate) fn assert_audit_clean(dir: &std::path::Path, db: &str) {
    let out = run(dir, &["--database", db, "audit", "--grace", "1h"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(": 0 violation(s)"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A 100,000-user bulk issuance killed three times: the job finishes, every user issued
/// exactly once.
fn issuance_under_kill_9(db: &str, test: &str) {
    let stdout = under_repeated_kill_9(
        db,
        &["--scenario", "issuance", "--users", "100000"],
        3,
        test,
    );
    assert!(
        stdout.contains("100000 coupons, 100000 users, each once") && stdout.contains(": OK"),
        "{stdout}"
    );
}

#[test]
fn kill_9_repeatedly_during_an_issuance_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/issuance.db", dir.path().display());
    issuance_under_kill_9(&db, "issuance on SQLite");
}

#[test]
fn kill_9_repeatedly_during_an_issuance_on_postgres() {
    let Some(db) = super::postgres_schema("crash") else {
        return;
    };
    issuance_under_kill_9(&db, "issuance on PostgreSQL");
}

#[test]
fn kill_9_repeatedly_during_an_issuance_on_mysql() {
    let Some(db) = super::mysql_database("crash") else {
        return;
    };
    issuance_under_kill_9(&db, "issuance on MySQL");
}
