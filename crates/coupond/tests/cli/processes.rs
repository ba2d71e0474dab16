//! Two coupond processes on one PostgreSQL (one MySQL) racing for one template: exactly its
//! stock is issued, nothing acknowledged is lost, nobody exceeds the per-user limit.

use std::process::Command;

use super::{start_server, terminate_and_wait, BIN};

fn template_of(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("flash sale: template "))
        .and_then(|rest| rest.split(',').next())
        .unwrap()
        .to_owned()
}

#[test]
fn two_processes_on_one_postgres_issue_exactly_the_stock() {
    let Some(db) = super::postgres_schema("procs") else {
        return;
    };
    two_processes_issue_exactly_the_stock(&db);
}

#[test]
fn two_processes_on_one_mysql_issue_exactly_the_stock() {
    let Some(db) = super::mysql_database("procs") else {
        return;
    };
    two_processes_issue_exactly_the_stock(&db);
}

/// Two servers on the server database `db`, each rushed by its own load test for the one
/// template; then the template's audit and `coupond audit`.
fn two_processes_issue_exactly_the_stock(db: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (one, base_one) = start_server(dir.path(), db, "127.0.0.1:0", &[]);
    let (two, base_two) = start_server(dir.path(), db, "127.0.0.1:0", &[]);

    let loadtest = |base: &str, extra: &[&str]| {
        Command::new(BIN)
            .current_dir(dir.path())
            .args([
                "--database",
                db,
                "loadtest",
                "--url",
                base,
                "--scenario",
                "custom",
            ])
            .args(extra)
            .spawn_output()
    };
    // One claim creates the template (stock 1,500); then both servers are rushed at once.
    let setup = loadtest(&base_one, &["--users", "1", "--stock", "1500"])
        .join()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stdout)
    );
    let template = template_of(&String::from_utf8_lossy(&setup.stderr));
    let args = [
        "--template",
        &template,
        "--users",
        "2000",
        "--concurrency",
        "32",
    ];
    let a = loadtest(&base_one, &args);
    let b = loadtest(&base_two, &args);
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let created = |out: &std::process::Output| -> usize {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("refused claims left nothing: OK"),
            "{stdout}"
        );
        stdout
            .lines()
            .find_map(|l| l.split("201 created: ").nth(1))
            .and_then(|n| n.split(' ').next())
            .map_or(0, |n| n.parse().unwrap())
    };
    assert_eq!(
        created(&a) + created(&b),
        1_499,
        "the stock left after the first claim"
    );
    rt.block_on(async {
        let s = super::open_server_store(db).await;
        let id = coupond_domain::TemplateId::new(template.parse().unwrap()).unwrap();
        let audit = s.inspect().audit_template(id).await.unwrap();
        assert_eq!(
            (audit.claimed, audit.coupons, audit.max_per_user),
            (1_500, 1_500, 1)
        );
        assert!(audit.violations().is_empty(), "{audit:?}");
        s.close().await;
    });
    assert!(terminate_and_wait(one).success());
    assert!(terminate_and_wait(two).success());
    super::crash::assert_audit_clean(dir.path(), db);
}

/// A child process whose output is collected on a thread, so several run at once.
trait SpawnOutput {
    fn spawn_output(&mut self) -> std::thread::JoinHandle<std::process::Output>;
}

impl SpawnOutput for Command {
    fn spawn_output(&mut self) -> std::thread::JoinHandle<std::process::Output> {
        let child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::spawn(move || child.wait_with_output().unwrap())
    }
}
