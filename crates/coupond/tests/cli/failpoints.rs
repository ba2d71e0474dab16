//! The failpoint matrix (issue 6, fault 2): every named point of
//! `coupond_store::failpoints::POINTS`, set to crash the server (`return(abort)`, as kill -9
//! would) or to fail the operation (`return`), once, while `coupond loadtest` drives the work
//! that reaches it with Idempotency-Keys and retries. A crashed server is restarted on the
//! same port without the fault. Afterwards the load test's own checks (every claim answered
//! and its coupon present exactly once, every order in the state its last step asked for,
//! every issuance user issued once) and `coupond audit` must pass, and the fault must have
//! been seen: a crash, or a retried 5xx.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::crash::{assert_audit_clean, free_port};
use super::{start_server, terminate_and_wait, BIN};

/// What the fault does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// The process aborts at the point.
    Crash,
    /// The operation fails there (a 5xx or a failed background step).
    Error,
}

/// What drives the work through a point.
#[derive(Clone, Copy, Debug)]
enum Load {
    /// 300 users claim 200 coupons, 16 at a time.
    Claims,
    /// 120 users claim, lock, then confirm or cancel.
    Checkouts,
    /// One bulk issuance to 2,500 users (three chunks).
    Issuance,
    /// 90 checkouts, every third order left locked for the sweeper (lock_ttl 10 s).
    Abandoned,
}

impl Load {
    fn args(self) -> Vec<&'static str> {
        match self {
            Load::Claims => vec![
                "--scenario",
                "custom",
                "--users",
                "300",
                "--stock",
                "200",
                "--concurrency",
                "16",
            ],
            Load::Checkouts => vec!["--scenario", "checkout", "--users", "120"],
            Load::Issuance => vec!["--scenario", "issuance", "--users", "2500"],
            Load::Abandoned => vec!["--scenario", "checkout", "--users", "90", "--abandon"],
        }
    }

    /// What the load test prints when every check passed.
    fn verdict(self) -> &'static str {
        match self {
            Load::Claims => "200/200 acknowledged coupons exist",
            Load::Checkouts => "60 orders confirmed with their coupon used, 60 cancelled with it back; 0 wrong; invariant audit: 0 violation(s)",
            Load::Issuance => "2500 coupons, 2500 users, each once",
            Load::Abandoned => "30 expired with it back; 0 wrong; invariant audit: 0 violation(s)",
        }
    }
}

/// Runs `load` against a server on `db` whose failpoint `point` fires once with `fault`;
/// restarts the server when it dies. Fails unless the fault was seen and every check passed.
fn one(db: &str, point: &str, fault: Fault, load: Load) {
    let what = format!("{point} {fault:?} under {load:?}");
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let action = match fault {
        Fault::Crash => format!("{point}=1*return(abort)"),
        Fault::Error => format!("{point}=1*return"),
    };
    // Short locks only where the sweeper must end some: elsewhere a confirm delayed by a
    // restart must still find its lock. Even there the deadline must fall after the last
    // confirm and cancel: with 3 s, a sweeper crash and restart under CI load let one
    // cancel's retry arrive after its lock's deadline (expired, not cancelled).
    let lock_ttl = if matches!(load, Load::Abandoned) {
        "10s"
    } else {
        "15m"
    };
    let env = [
        ("COUPOND_IDEMPOTENCY_STALE", "1s"),
        ("COUPOND_LOCK_TTL", lock_ttl),
    ];
    let with_fault: Vec<(&str, &str)> = env
        .iter()
        .copied()
        .chain([("COUPOND_FAILPOINTS", action.as_str())])
        .collect();
    let (mut server, base) = start_server(dir.path(), db, &listen, &with_fault);
    let mut run = Command::new(BIN)
        .current_dir(dir.path())
        .args(["--database", db, "loadtest", "--url", &base])
        .args(load.args())
        .args(["--retry-for", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let crashes = restart_after_aborts(&what, &mut run, &mut server, || {
        start_server(dir.path(), db, &listen, &env).0
    });
    let out = run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}:\n{stdout}\n{stderr}");
    assert!(stdout.contains(load.verdict()), "{what}:\n{stdout}");
    match fault {
        // Exactly the one crash the point was set for, and it happened.
        Fault::Crash => assert_eq!(crashes, 1, "{what}: crashes\n{stdout}"),
        Fault::Error => {
            assert_eq!(crashes, 0, "{what}");
            // Background work (issuance, sweeper) retries by itself; callers retry a 5xx.
            if matches!(load, Load::Claims | Load::Checkouts) {
                let saw_5xx = stdout
                    .lines()
                    .filter_map(|l| l.strip_prefix("retried after"))
                    .flat_map(|l| l.split('|'))
                    .any(|label| label.trim().starts_with('5'));
                assert!(saw_5xx, "{what}: the fault was never seen\n{stdout}");
            }
        }
    }
    assert!(terminate_and_wait(server).success(), "{what}");
    let logs = super::server_logs(dir.path());
    // A background step that failed says so in the log, then tries again.
    let complaint = match load {
        Load::Issuance => Some("issuance pass failed; retrying"),
        // The scheduler runs the sweeper.
        Load::Abandoned => Some("scheduler pass failed; retrying"),
        Load::Claims | Load::Checkouts => None,
    };
    if let (Fault::Error, Some(complaint)) = (fault, complaint) {
        let seen = logs
            .lines()
            .any(|l| l.contains(complaint) && l.contains(&format!("failpoint {point}")));
        assert!(seen, "{what}: the fault was never seen\n{logs}");
    }
    assert_audit_clean(dir.path(), db);
    eprintln!("{what}: ok ({crashes} crash)");
}

/// Watches `load` and `server` until the load ends: a server that died at its failpoint
/// (SIGABRT, not anything else) is replaced by `restart()`, which starts it without the fault.
/// Returns how many times it aborted.
pub(crate) fn restart_after_aborts(
    what: &str,
    load: &mut Child,
    server: &mut Child,
    mut restart: impl FnMut() -> Child,
) -> usize {
    let mut crashes = 0;
    let give_up = Instant::now() + Duration::from_secs(120);
    while load.try_wait().unwrap().is_none() {
        assert!(Instant::now() < give_up, "{what}: the load test hung");
        if let Some(status) = server.try_wait().unwrap() {
            // Aborted at the failpoint, not dead of something else.
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&status),
                Some(6),
                "{what}: the server exited ({status}), not by SIGABRT"
            );
            crashes += 1;
            *server = restart();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    crashes
}

/// The whole matrix on one backend.
fn matrix(db: impl Fn(&str) -> String) {
    let cases = [
        ("claim.mid_batch", Load::Claims),
        ("claim.stock_taken", Load::Claims),
        ("claim.before_commit", Load::Claims),
        ("claim.after_commit", Load::Claims),
        ("confirm.before_commit", Load::Checkouts),
        ("confirm.after_commit", Load::Checkouts),
        ("issuance.mid_chunk", Load::Issuance),
        ("issuance.after_chunk", Load::Issuance),
        ("sweeper.before_commit", Load::Abandoned),
        ("sweeper.after_commit", Load::Abandoned),
    ];
    let mut n = 0;
    for (point, load) in cases {
        assert!(
            coupond_store::failpoints::POINTS.contains(&point),
            "{point}"
        );
        for fault in [Fault::Crash, Fault::Error] {
            n += 1;
            one(&db(&format!("{n}")), point, fault, load);
        }
    }
    assert_eq!(n, 2 * coupond_store::failpoints::POINTS.len());
}

#[test]
fn every_failpoint_crashing_or_failing_leaves_exactly_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    matrix(|n| format!("sqlite://{}/fp{n}.db", dir.path().display()));
}

#[test]
fn every_failpoint_crashing_or_failing_leaves_exactly_once_on_postgres() {
    if super::postgres_schema("fp_probe").is_none() {
        return;
    }
    matrix(|_| super::postgres_schema("fp").unwrap());
}

#[test]
fn every_failpoint_crashing_or_failing_leaves_exactly_once_on_mysql() {
    // The first case's database doubles as the probe: each one costs a migration.
    let Some(first) = super::mysql_database("fp") else {
        return;
    };
    let first = std::cell::Cell::new(Some(first));
    matrix(|_| {
        first
            .take()
            .unwrap_or_else(|| super::mysql_database("fp").unwrap())
    });
}
