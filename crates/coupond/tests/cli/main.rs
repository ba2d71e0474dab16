//! The binary as a user runs it: `serve --demo` on the default SQLite path, the admin
//! subcommands, and graceful shutdown on SIGTERM.
#![allow(clippy::unwrap_used)]

mod accounts;
mod brokers;
mod browser;
mod crash;
mod doc_paths;
mod docs;
mod failpoints;
mod first_run;
mod mail_crash;
mod mixed;
mod operator;
mod outage;
mod processes;
mod proxy;
mod sign_in_burst;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_coupond");

/// A blocking HTTP/1.1 GET; returns the status code and body.
fn get(base: &str, path: &str, bearer: Option<&str>) -> (u16, String) {
    let (status, _, body) = get_with_head(base, path, bearer);
    (status, body)
}

/// A blocking HTTP/1.1 GET; returns the status code, the head (lower-cased) and the body.
fn get_with_head(base: &str, path: &str, bearer: Option<&str>) -> (u16, String, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let auth = bearer
        .map(|b| format!("Authorization: Bearer {b}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// A fresh schema on the test PostgreSQL (migrated), as a URL whose sessions use it; `None`,
/// with the skip announced, when `COUPOND_TEST_POSTGRES_URL` is not set.
pub(crate) fn postgres_schema(prefix: &str) -> Option<String> {
    let Ok(url) = std::env::var("COUPOND_TEST_POSTGRES_URL") else {
        // Straight to stderr: libtest captures `eprintln!`, and CI looks for this line.
        let _ = std::io::stderr().write_all(
            format!("SKIP postgres {prefix} test: COUPOND_TEST_POSTGRES_URL is not set\n")
                .as_bytes(),
        );
        return None;
    };
    let schema = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let s = coupond_store_postgres::PgDb::connect_in_schema(&url, Some(&schema))
            .await
            .unwrap();
        s.migrate().await.unwrap();
        coupond_store::AdminStore::close(&s).await;
    });
    let _ = std::io::stderr()
        .write_all(format!("{prefix} test running on PostgreSQL in schema {schema}\n").as_bytes());
    let sep = if url.contains('?') { '&' } else { '?' };
    Some(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
}

/// A fresh database on the test MySQL (migrated), as a URL naming it; `None`, with the skip
/// announced, when `COUPOND_TEST_MYSQL_URL` is not set. The database is `ct_<prefix>_<uuid>`
/// (MySQL names are at most 64 characters).
pub(crate) fn mysql_database(prefix: &str) -> Option<String> {
    let Ok(url) = std::env::var("COUPOND_TEST_MYSQL_URL") else {
        // Straight to stderr: libtest captures `eprintln!`, and CI looks for this line.
        let _ = std::io::stderr().write_all(
            format!("SKIP mysql {prefix} test: COUPOND_TEST_MYSQL_URL is not set\n").as_bytes(),
        );
        return None;
    };
    let database = format!("ct_{prefix}_{}", uuid::Uuid::new_v4().simple());
    assert!(database.len() <= 64, "{database}: too long for MySQL");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let s = coupond_store_mysql::MysqlDb::connect_in_database(&url, Some(&database))
            .await
            .unwrap();
        s.migrate().await.unwrap();
        coupond_store::AdminStore::close(&s).await;
    });
    let _ = std::io::stderr()
        .write_all(format!("{prefix} test running on MySQL in database {database}\n").as_bytes());
    Some(with_database(&url, &database))
}

/// `url` with its path (the database) replaced by `/database`; scheme, user, host, port and
/// query kept.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority = base.find("://").map_or(0, |i| i + 3);
    let path = base[authority..]
        .find('/')
        .map_or(base.len(), |i| authority + i);
    let mut out = format!("{}/{database}", &base[..path]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// The store of a database URL, to read what the servers left (SQLite: while one serves).
pub(crate) async fn open_server_store(db: &str) -> Box<dyn coupond_store::Store> {
    if db.starts_with("sqlite:") {
        Box::new(coupond_store_sqlite::SqliteDb::connect(db).await.unwrap())
    } else if db.starts_with("mysql:") {
        Box::new(coupond_store_mysql::MysqlDb::connect(db).await.unwrap())
    } else {
        Box::new(coupond_store_postgres::PgDb::connect(db).await.unwrap())
    }
}

#[test]
fn mysql_urls_name_the_fresh_database() {
    assert_eq!(
        with_database("mysql://root@127.0.0.1:3306/mysql", "ct_x_1"),
        "mysql://root@127.0.0.1:3306/ct_x_1"
    );
    assert_eq!(
        with_database("mysql://u:p@db:3306", "ct_x_1"),
        "mysql://u:p@db:3306/ct_x_1"
    );
    assert_eq!(
        with_database("mysql://u@db/mysql?ssl-mode=disabled", "ct_x_1"),
        "mysql://u@db/ct_x_1?ssl-mode=disabled"
    );
}

/// Every server log line written in `dir` (see [`start_server`]).
pub(crate) fn server_logs(dir: &std::path::Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("serve-") && name.ends_with(".log") {
            all.push_str(&std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    all
}

pub(crate) fn run(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .env_remove("COUPOND_DATABASE_URL")
        .output()
        .unwrap()
}

/// Starts `serve` with `args` in `dir` and reads stdout up to the line starting with `until`.
fn serve(dir: &std::path::Path, args: &[&str], until: &str) -> (Child, Vec<String>) {
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .arg("serve")
        .args(args)
        .env_remove("COUPOND_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = vec![];
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "serve exited early: {lines:?}"
        );
        let done = line.starts_with(until);
        lines.push(line.trim().to_owned());
        if done {
            break;
        }
    }
    (child, lines)
}

fn export(lines: &[String], name: &str) -> String {
    let prefix = format!("export {name}=");
    lines
        .iter()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap()
        .to_owned()
}

pub(crate) fn terminate_and_wait(mut child: Child) -> std::process::ExitStatus {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `serve` on `db` listening on `listen` with extra environment `env`; returns the
/// child and its base URL once it listens. Its stderr is drained in the background.
pub(crate) fn start_server(
    dir: &std::path::Path,
    db: &str,
    listen: &str,
    env: &[(&str, &str)],
) -> (Child, String) {
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .args([
            "--database",
            db,
            "serve",
            "--log-level",
            "warn",
            "--listen",
            listen,
        ])
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let base = loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "serve exited early"
        );
        if let Some(rest) = line.strip_prefix("coupond listening on ") {
            break rest.split(' ').next().unwrap().to_owned();
        }
    };
    // The rest of its log (warnings and errors) goes to serve-<pid>.log in `dir`, for tests
    // that check what the server complained about.
    let mut log = std::fs::File::create(dir.join(format!("serve-{}.log", child.id()))).unwrap();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
        }
    });
    (child, base)
}

#[test]
fn serve_demo_on_the_default_database_and_stop_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (child, lines) = serve(
        dir.path(),
        &["--demo", "--listen", "127.0.0.1:0"],
        "export USER_TOKEN=",
    );
    let base = export(&lines, "COUPOND");
    assert!(
        dir.path().join("data/coupond.db").exists(),
        "default database created with its folder"
    );

    assert_eq!(get(&base, "/readyz", None).0, 200);
    let (status, body) = get(
        &base,
        "/v1/activities",
        Some(&export(&lines, "PLATFORM_KEY")),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\":\"enrolling\""), "{body}");
    let (status, body) = get(
        &base,
        "/v1/activities",
        Some(&export(&lines, "MERCHANT3_KEY")),
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) = get(&base, "/v1/activities", Some(&export(&lines, "USER_TOKEN")));
    assert_eq!(
        status, 403,
        "a valid user token, but users may not list activities"
    );
    let admin = account_line(&lines, "admin@demo.coupond.example");
    assert_eq!(
        admin.split_whitespace().nth(2).map(str::len),
        Some(20),
        "{admin}"
    );
    for role in ["marketing", "support", "finance", "owner", "staff"] {
        account_line(&lines, &format!("{role}@demo.coupond.example"));
    }
    let merchant = export(&lines, "MERCHANT1_ID");
    let (status, _) = get(
        &base,
        &format!("/v1/merchants/{merchant}"),
        Some(&export(&lines, "MERCHANT1_KEY")),
    );
    assert_eq!(status, 200);

    let status = terminate_and_wait(child);
    assert!(status.success(), "graceful shutdown exits 0: {status:?}");
    // Its loops' leases went with it: another instance takes the scheduler's at once,
    // not when the lease would have lapsed.
    let db = format!("sqlite://{}/data/coupond.db", dir.path().display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = open_server_store(&db).await;
        let now = coupond_engine::clock::Clock::now(&coupond_engine::clock::SystemClock);
        let until = now.plus(time::Duration::seconds(10));
        for lease in ["scheduler", "dispatcher", "campaign-messages"] {
            assert!(
                store.try_lease(lease, "next", now, until).await.unwrap(),
                "{lease} was let go"
            );
        }
        store.close().await;
    });

    // A second demo start reuses the data and prints fresh working keys.
    let (child, lines) = serve(
        dir.path(),
        &["--demo", "--listen", "127.0.0.1:0"],
        "export USER_TOKEN=",
    );
    let base = export(&lines, "COUPOND");
    let (status, body) = get(
        &base,
        "/v1/activities",
        Some(&export(&lines, "PLATFORM_KEY")),
    );
    assert_eq!(status, 200);
    assert_eq!(
        body.matches("\"id\":").count(),
        1,
        "demo data loaded once: {body}"
    );
    let again = account_line(&lines, "admin@demo.coupond.example");
    assert_ne!(again, admin, "each start prints a fresh password");
    assert!(terminate_and_wait(child).success());
}

/// The demo's comment line naming the account `email` (`#   email password   (operator N)`).
fn account_line(lines: &[String], email: &str) -> String {
    lines
        .iter()
        .find(|l| l.starts_with(&format!("#   {email} ")))
        .unwrap_or_else(|| panic!("no demo account {email}: {lines:?}"))
        .clone()
}

/// With `--log-format json`, stderr is JSON lines only, the start included, without colour
/// codes; a request's line names its principal, the API key's id and its client address.
#[test]
fn json_logs_are_json_lines_naming_who_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines) = serve(
        dir.path(),
        &["--demo", "--listen", "127.0.0.1:0", "--log-format", "json"],
        "export USER_TOKEN=",
    );
    let base = export(&lines, "COUPOND");
    let (status, _) = get(
        &base,
        "/v1/activities",
        Some(&export(&lines, "MERCHANT1_KEY")),
    );
    assert_eq!(status, 200);
    let mut stderr = child.stderr.take().unwrap();
    assert!(terminate_and_wait(child).success());
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
    assert!(!text.contains('\x1b'), "colour codes in {text}");
    let logs: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(
        logs.iter().any(|l| l["fields"]["message"] == "listening"),
        "{text}"
    );
    let merchant = format!("merchant:{}", export(&lines, "MERCHANT1_ID"));
    let request = logs
        .iter()
        .find(|l| l["fields"]["message"] == "request" && l["span"]["route"] == "/v1/activities")
        .unwrap_or_else(|| panic!("no request line in {text}"));
    assert_eq!(request["span"]["principal"], merchant.as_str(), "{request}");
    assert_eq!(request["span"]["client"], "127.0.0.1", "{request}");
    // The key that asked, by id (never the key itself).
    assert!(
        request["span"]["key"].as_i64().is_some_and(|k| k > 0),
        "{request}"
    );
}

#[test]
fn admin_commands_share_the_database_with_serve() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/admin.db", dir.path().display());
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(ok(run(dir.path(), &["--database", &db, "migrate"]))
        .contains("a new database: created its schema"));
    let key = ok(run(
        dir.path(),
        &[
            "--database",
            &db,
            "keys",
            "create",
            "--role",
            "platform",
            "--label",
            "ops",
        ],
    ));
    let key = key.trim().to_owned();
    assert!(key.starts_with("cpd_"));
    let listed = ok(run(dir.path(), &["--database", &db, "keys", "list"]));
    assert!(
        listed.contains("platform") && listed.contains("ops") && !listed.contains(&key),
        "{listed}"
    );
    let token = ok(run(
        dir.path(),
        &["--database", &db, "token", "--user", "u-7", "--ttl", "2h"],
    ));
    assert_eq!(token.trim().split('.').count(), 3, "a JWT: {token}");

    let bad = run(
        dir.path(),
        &["--database", &db, "keys", "create", "--role", "merchant"],
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--merchant"));
    // `mysql://` is a backend now; an unknown scheme is refused, naming the accepted ones.
    let bad = run(dir.path(), &["--database", "oracle://x/y", "migrate"]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("sqlite://") && stderr.contains("mysql://"),
        "{stderr}"
    );
    let config = ok(run(dir.path(), &["config"]));
    assert!(config.contains("listen = \"127.0.0.1:8080\""));
    let spec = ok(run(dir.path(), &["openapi"]));
    assert!(spec.contains("/v1/templates/{id}/publish"));

    // The server on the same database accepts the CLI's key and token (same stored secret).
    let (child, base) = {
        let mut child = Command::new(BIN)
            .current_dir(dir.path())
            .args(["--database", &db, "serve", "--listen", "127.0.0.1:0"])
            // Without the key cache a revocation by another process shows at once.
            .env("COUPOND_CACHE_TTL", "0s")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        let addr;
        loop {
            let mut line = String::new();
            assert!(
                reader.read_line(&mut line).unwrap() > 0,
                "serve exited early"
            );
            if let Some(rest) = line.strip_prefix("coupond listening on ") {
                addr = rest.split(' ').next().unwrap().to_owned();
                break;
            }
        }
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        (child, addr)
    };
    assert_eq!(get(&base, "/v1/activities", Some(&key)).0, 200);
    assert_eq!(
        get(&base, "/v1/activities", Some(token.trim())).0,
        403,
        "token verified, role refused"
    );
    let id = listed.split('\t').next().unwrap().trim().to_owned();
    ok(run(dir.path(), &["--database", &db, "keys", "revoke", &id]));
    assert_eq!(
        get(&base, "/v1/activities", Some(&key)).0,
        401,
        "revoked at once (no key cache)"
    );
    assert!(terminate_and_wait(child).success());
}

#[test]
fn loadtest_drives_a_server_and_audits_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/lt.db", dir.path().display());
    let (child, base) = start_server(dir.path(), &db, "127.0.0.1:0", &[]);
    let out = run(
        dir.path(),
        &[
            "--database",
            &db,
            "loadtest",
            "--url",
            &base,
            "--scenario",
            "custom",
            "--users",
            "600",
            "--stock",
            "250",
            "--concurrency",
            "24",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("201 created: 250"), "{stdout}");
    assert!(stdout.contains("409 sold_out: 350"), "{stdout}");
    assert!(
        stdout.contains("claimed 250 = coupons 250 <= stock 250") && stdout.contains(": OK"),
        "{stdout}"
    );
    assert!(terminate_and_wait(child).success());
}
