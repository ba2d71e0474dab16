//! The CLI as an operator meets it: commands that only use a database create none and apply
//! no migrations; a database migrated by a newer coupond is refused, naming both versions;
//! `serve --no-migrate` starts only on a schema that is this build's; `coupond config` prints
//! the settings in effect with secrets redacted.

use std::path::Path;

use crate::run;

/// Its stderr, asserting it failed.
fn refused(out: std::process::Output) -> String {
    assert!(!out.status.success(), "expected a refusal");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn commands_that_use_a_database_create_none() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("absent/coupond.db");
    let db = format!("sqlite://{}", file.display());
    for args in [
        vec!["keys", "list"],
        vec!["operators", "list"],
        vec!["operators", "disable", "a@example.com"],
        vec!["keys", "revoke", "1"],
        vec!["token", "--user", "u-1"],
        vec!["audit"],
        vec!["serve", "--no-migrate", "--listen", "127.0.0.1:0"],
    ] {
        let mut all = vec!["--database", db.as_str()];
        all.extend(args.iter().copied());
        let why = refused(run(dir.path(), &all));
        assert!(why.contains("no coupond database"), "{args:?}: {why}");
        assert!(
            !file.exists() && !file.parent().unwrap().exists(),
            "{args:?}"
        );
    }
    // Migrating creates it; then they work.
    ok(run(dir.path(), &["--database", &db, "migrate"]));
    ok(run(dir.path(), &["--database", &db, "keys", "list"]));
    ok(run(dir.path(), &["--database", &db, "audit"]));
}

/// Marks the SQLite database at `file` as migrated by a newer coupond.
fn newer_schema(file: &Path) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let url = format!("sqlite://{}", file.display());
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES (99990101000000, 'from the future', TRUE, X'00', 0)",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    });
}

#[test]
fn a_database_from_a_newer_coupond_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("coupond.db");
    let db = format!("sqlite://{}", file.display());
    ok(run(dir.path(), &["--database", &db, "migrate"]));
    newer_schema(&file);
    for args in [
        vec!["migrate"],
        vec!["keys", "list"],
        vec!["serve", "--listen", "127.0.0.1:0"],
    ] {
        let mut all = vec!["--database", db.as_str()];
        all.extend(args.iter().copied());
        let why = refused(run(dir.path(), &all));
        assert!(
            why.contains("schema version 99990101000000")
                && why.contains("newer than this coupond's"),
            "{args:?}: {why}"
        );
    }
}

#[test]
fn config_prints_the_settings_in_effect_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(crate::BIN)
        .current_dir(dir.path())
        .args(["--database", "postgres://ops:hunter2@db/c", "config"])
        .env("COUPOND_LISTEN", "127.0.0.1:9")
        .env("COUPOND_JWT_SECRET", "a-very-secret-secret-string")
        .env("COUPOND_CACHE_TTL", "3s")
        .output()
        .unwrap();
    let text = ok(out);
    for shown in [
        "listen = \"127.0.0.1:9\"",
        "cache_ttl = \"3s\"",
        "jwt_secret = \"(redacted)\"",
    ] {
        assert!(text.contains(shown), "{shown} in {text}");
    }
    assert!(
        !text.contains("a-very-secret") && !text.contains("hunter2"),
        "{text}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "config reads no database"
    );
    let defaults = ok(run(dir.path(), &["config", "--defaults"]));
    assert!(
        defaults.starts_with("# coupond configuration"),
        "{defaults}"
    );
}

#[test]
fn output_cut_short_is_no_error_and_server_flags_belong_to_serve() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    // `coupond openapi | head -c 10`: the reader goes away after ten bytes.
    let mut child = Command::new(crate::BIN)
        .arg("openapi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("panicked"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let why = refused(run(
        dir.path(),
        &["keys", "list", "--listen", "127.0.0.1:1"],
    ));
    assert!(why.contains("--listen"), "{why}");
    let help = ok(run(dir.path(), &["--help"]));
    for cmd in [
        "serve", "migrate", "keys", "token", "config", "openapi", "loadtest", "audit",
    ] {
        assert!(help.contains(cmd), "{cmd} in {help}");
    }
    assert!(!help.contains("--listen"), "{help}");
}

#[test]
fn a_taken_address_fails_before_anything_is_created() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let why = refused(run(dir.path(), &["serve", "--listen", &addr]));
    assert!(why.contains("binding"), "{why}");
    assert!(!dir.path().join("data").exists(), "nothing created");
    // A host name is resolved.
    let port = addr.rsplit(':').next().unwrap();
    let why = refused(run(
        dir.path(),
        &["serve", "--listen", &format!("localhost:{port}")],
    ));
    assert!(why.contains("binding localhost"), "{why}");
    // With JSON logs, the failure is a JSON line too, like every other line.
    let args = ["serve", "--log-format", "json", "--listen", &addr];
    let why = refused(run(dir.path(), &args));
    let lines: Vec<serde_json::Value> = why
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["level"] == "ERROR" && l["fields"]["error"].to_string().contains("binding")),
        "{why}"
    );
}

/// `coupond backup` copies the SQLite database while `serve` uses it; the copy opens, holds
/// the data and passes the audit.
#[test]
fn sqlite_is_backed_up_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let (child, lines) = crate::serve(
        dir.path(),
        &["--demo", "--listen", "127.0.0.1:0"],
        "export USER_TOKEN=",
    );
    let db = format!("sqlite://{}/data/coupond.db", dir.path().display());
    let copy = dir.path().join("copy.db");
    let said = ok(run(
        dir.path(),
        &["--database", &db, "backup", "--to", copy.to_str().unwrap()],
    ));
    assert!(said.contains("backed up"), "{said}");
    // The server went on serving meanwhile.
    let base = crate::export(&lines, "COUPOND");
    assert_eq!(crate::get(&base, "/readyz", None).0, 200);
    assert!(crate::terminate_and_wait(child).success());
    let copied = format!("sqlite://{}", copy.display());
    let keys = ok(run(dir.path(), &["--database", &copied, "keys", "list"]));
    assert!(keys.contains("platform"), "{keys}");
    ok(run(dir.path(), &["--database", &copied, "audit"]));
    // Not over an existing file, and not for the server databases.
    let again = refused(run(
        dir.path(),
        &["--database", &db, "backup", "--to", copy.to_str().unwrap()],
    ));
    assert!(again.contains("exists"), "{again}");
    let pg = refused(run(
        dir.path(),
        &[
            "--database",
            "postgres://x@127.0.0.1/y",
            "backup",
            "--to",
            "z",
        ],
    ));
    assert!(pg.contains("pg_dump"), "{pg}");
}

/// The systemd unit in `deploy/` passes `systemd-analyze verify` (with this build's binary in
/// place of /usr/local/bin/coupond). Without systemd-analyze it prints SKIP.
#[test]
fn the_systemd_unit_verifies() {
    let Some(analyze) = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        println!("SKIP systemd unit: systemd-analyze is not installed");
        return;
    };
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/coupond.service"),
    )
    .unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/coupond "), "{unit}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coupond.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/coupond", crate::BIN)).unwrap();
    let out = std::process::Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.trim().is_empty(), "{said}");
}

/// The unit reads its settings either way the operator's guide documents: `COUPOND_*`
/// variables alone in /etc/coupond/env, or that file naming a config file with
/// `COUPOND_CONFIG`. Each is checked by running the unit's own command line (`config` in place
/// of `serve`) with the environment file as systemd reads it.
#[test]
fn the_systemd_unit_takes_either_way_of_configuring() {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/coupond.service"),
    )
    .unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart=/usr/local/bin/coupond "))
        .unwrap();
    let before_serve: Vec<&str> = exec
        .split_whitespace()
        .take_while(|a| *a != "serve")
        .collect();
    assert!(unit.contains("EnvironmentFile=-/etc/coupond/env"), "{unit}");
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("coupond.toml");
    std::fs::write(&toml, "[database]\nurl = \"sqlite://from-the-file.db\"\n").unwrap();
    let ways = [
        (
            "COUPOND_DATABASE_URL=sqlite://from-the-env.db\n".to_owned(),
            "from-the-env.db",
        ),
        (
            format!("COUPOND_CONFIG={}\n", toml.display()),
            "from-the-file.db",
        ),
    ];
    for (env_file, database) in ways {
        let mut cmd = std::process::Command::new(crate::BIN);
        cmd.current_dir(dir.path())
            .env_clear()
            .args(&before_serve)
            .arg("config");
        for line in env_file.lines() {
            let (k, v) = line.split_once('=').unwrap();
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains(database),
            "{env_file}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A PostgreSQL that refuses connections (nothing listens) is reported as such by the first
/// attempt, not after the pool's retries until its acquire timeout; so is a missing database.
#[test]
fn a_refused_postgres_connection_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let port = super::crash::free_port();
    let url = format!("postgres://postgres@127.0.0.1:{port}/coupond");
    let started = std::time::Instant::now();
    let stderr = refused(run(dir.path(), &["--database", &url, "keys", "list"]));
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    // Before, the pool retried the refused connection until its acquire timeout (10 s).
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let serve = [
        "--database",
        &url,
        "serve",
        "--no-migrate",
        "--listen",
        "127.0.0.1:0",
    ];
    let stderr = refused(run(dir.path(), &serve));
    assert!(stderr.contains("Connection refused"), "{stderr}");
}
