//! Mixed load (issue 6, faults 4 and 5): a flash sale, checkouts (claim, lock, confirm or
//! cancel) and a bulk issuance at once, while each server's scheduler, outbox dispatcher and
//! sweeper run too.
//! - One server on SQLite: every writer shares one database file, and no caller may see a
//!   "database is locked" (or any 5xx).
//! - Three servers on one PostgreSQL (one MySQL): the invariants hold, each load's own audit
//!   passes, and the scheduler's announcements are written once, not once per server.

use std::process::{Child, Command, Output, Stdio};

use super::{server_logs, start_server, terminate_and_wait, BIN};

/// Runs the three loads at once, the flash sale against `bases[0]`, the checkouts against
/// `bases[1 % n]` and the issuance against `bases[2 % n]`; each must succeed. Returns their
/// stdouts.
pub(crate) fn three_loads(dir: &std::path::Path, db: &str, bases: &[String]) -> [String; 3] {
    let base = |i: usize| bases[i % bases.len()].as_str();
    let spawn = |base: &str, args: &[&str]| {
        Command::new(BIN)
            .current_dir(dir)
            .args(["--database", db, "loadtest", "--url", base])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let loads = [
        spawn(
            base(0),
            &[
                "--scenario",
                "custom",
                "--users",
                "6000",
                "--stock",
                "4000",
                "--concurrency",
                "32",
            ],
        ),
        spawn(base(1), &["--scenario", "checkout", "--users", "1000"]),
        spawn(base(2), &["--scenario", "issuance", "--users", "30000"]),
    ];
    // Every load is waited for before any is judged, so a failure leaves none running.
    let outs: [Output; 3] = loads.map(|load| load.wait_with_output().unwrap());
    outs.map(|out| {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}\nthe servers' first warnings and errors:\n{}",
            String::from_utf8_lossy(&out.stderr),
            server_logs(dir)
                .lines()
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        );
        stdout
    })
}

/// What each load must have seen: only the answers of a healthy server, and a clean audit.
pub(crate) fn assert_loads_clean([sale, checkout, issuance]: &[String; 3]) {
    let answers = sale
        .lines()
        .find_map(|l| l.strip_prefix("answers      "))
        .unwrap();
    assert_eq!(
        answers, "201 created: 4000 | 409 sold_out: 2000",
        "the flash sale: {sale}"
    );
    assert!(sale.contains("refused claims left nothing: OK"), "{sale}");
    // The checkout scenario fails unless every claim is 201 and every lock, confirm and
    // cancel is 200; here it also says so.
    assert!(
        checkout.contains(
            "500 orders confirmed with their coupon used, 500 cancelled with it back; 0 wrong; \
             invariant audit: 0 violation(s)"
        ),
        "{checkout}"
    );
    assert!(
        issuance.contains("30000 coupons, 30000 users, each once") && issuance.contains(": OK"),
        "{issuance}"
    );
}

#[test]
fn sqlite_writers_never_answer_database_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/mixed.db", dir.path().display());
    let (server, base) = start_server(dir.path(), &db, "127.0.0.1:0", &[]);
    let outs = three_loads(dir.path(), &db, &[base]);
    assert_loads_clean(&outs);
    assert!(terminate_and_wait(server).success());
    let logs = server_logs(dir.path());
    assert!(
        !logs.to_lowercase().contains("database is locked") && !logs.contains("ERROR"),
        "{logs}"
    );
    super::crash::assert_audit_clean(dir.path(), &db);
}

/// Servers still running when a check fails are killed, not left behind.
pub(crate) struct Servers(pub(crate) Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for server in &mut self.0 {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// Three servers on the server database `db` under the three loads at once; each load clean
/// and no server logged an error. Returns the servers' folder.
fn three_processes_under_mixed_load(db: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (servers, bases): (Vec<_>, Vec<String>) = (0..3)
        .map(|_| start_server(dir.path(), db, "127.0.0.1:0", &[]))
        .unzip();
    let mut servers = Servers(servers);
    let outs = three_loads(dir.path(), db, &bases);
    assert_loads_clean(&outs);
    for server in servers.0.drain(..) {
        assert!(terminate_and_wait(server).success());
    }
    let logs = server_logs(dir.path());
    assert!(!logs.contains("ERROR"), "{logs}");
    dir
}

#[test]
fn three_processes_on_one_postgres_under_mixed_load() {
    let Some(db) = super::postgres_schema("mixed") else {
        return;
    };
    let dir = three_processes_under_mixed_load(&db);

    // Each load's template went live once: three schedulers, one announcement each.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let pool = sqlx::PgPool::connect(&db).await.unwrap();
        let announced: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM outbox WHERE kind = 'template.status_changed'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert!(announced >= 3, "the templates' going live was announced");
        let repeated: Vec<(String, i64)> = sqlx::query_as(
            "SELECT body::text, count(*) FROM outbox \
             WHERE kind IN ('template.status_changed', 'activity.status_changed') \
             GROUP BY body HAVING count(*) > 1",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert!(
            repeated.is_empty(),
            "announced more than once: {repeated:?}"
        );
        // Each server let go of its leases as it stopped (SIGTERM), so none is left for a
        // successor to wait out.
        let holders: Vec<String> = sqlx::query_scalar("SELECT holder FROM leases")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert!(holders.is_empty(), "leases left behind: {holders:?}");
        pool.close().await;
    });
    super::crash::assert_audit_clean(dir.path(), &db);
}

#[test]
fn three_processes_on_one_mysql_under_mixed_load() {
    let Some(db) = super::mysql_database("mixed") else {
        return;
    };
    let dir = three_processes_under_mixed_load(&db);

    // Each load's template went live once: three schedulers, one announcement each. Read
    // through the store (the scheduler lease is one row by its primary key).
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let s = super::open_server_store(&db).await;
        let events = s.inspect().events_after(0, 1_000_000).await.unwrap();
        let announced = events
            .iter()
            .filter(|e| e.kind == "template.status_changed")
            .count();
        assert!(announced >= 3, "the templates' going live was announced");
        let mut seen = std::collections::HashMap::new();
        for e in events
            .iter()
            .filter(|e| e.kind == "template.status_changed" || e.kind == "activity.status_changed")
        {
            *seen.entry(e.body.to_string()).or_insert(0) += 1;
        }
        let repeated: Vec<_> = seen.into_iter().filter(|(_, n)| *n > 1).collect();
        assert!(
            repeated.is_empty(),
            "announced more than once: {repeated:?}"
        );
        s.close().await;
    });
    super::crash::assert_audit_clean(dir.path(), &db);
}
