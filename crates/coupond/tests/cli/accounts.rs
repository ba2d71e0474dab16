//! `coupond operators`: the first admin of a new installation is added from the command line
//! with a password on standard input; the rules hold (a unique email whatever its case, the
//! password policy, a merchant for merchant roles and none for platform roles); a leaver is
//! disabled and enabled again; an account added without a password, or one whose password
//! was forgotten, gets a one-time set-password link; the list never shows a password.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::BIN;

/// `coupond --database DB args...` with `stdin` written to its standard input.
fn operators(db: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(["--database", db, "operators"])
        .args(args)
        .env_remove("COUPOND_DATABASE_URL")
        // The audit trail names command-line changes by the system user who ran them.
        .env("USER", "deploy-bot")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ok(out: Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    String::from_utf8(out.stdout).unwrap()
}

fn refused(out: Output) -> String {
    assert!(!out.status.success(), "expected a refusal");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a successful command said on stderr (its messages) and stdout (what scripts read).
fn said(out: Output) -> (String, String) {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (err, String::from_utf8(out.stdout).unwrap())
}

/// The token of a set-password link printed on stdout under `base`.
fn link_token(stdout: &str, base: &str) -> String {
    let token = stdout
        .trim()
        .strip_prefix(&format!("{base}/console/password/"))
        .unwrap_or_else(|| panic!("not a link under {base}: {stdout}"));
    assert!(
        token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    token.to_owned()
}

/// `operators add` of `email` as `role`, then `extra` arguments.
fn add_args<'a>(email: &'a str, role: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "add",
        "--email",
        email,
        "--name",
        "Ada Lovelace",
        "--role",
        role,
    ];
    args.extend_from_slice(extra);
    args
}

const PASSWORD: &str = "correct horse battery staple\n";

#[test]
fn the_first_admin_is_added_and_a_leaver_disabled_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/c.db", dir.path().display());
    let stdin = ["--password-stdin"];
    let admin = add_args(" Ada@Example.COM ", "admin", &stdin);
    let (added, out) = said(operators(&db, &admin, PASSWORD));
    assert!(added.contains("added: ada@example.com (admin)"), "{added}");
    assert!(
        out.is_empty(),
        "no link for an account with a password: {out}"
    );

    let again = add_args("ada@example.com", "support", &stdin);
    assert!(refused(operators(&db, &again, PASSWORD)).contains("exists"));
    let weak = add_args("bob@example.com", "marketing", &stdin);
    let why = refused(operators(&db, &weak, "password1234\n"));
    assert!(why.contains("password"), "{why}");
    let why = refused(operators(&db, &weak, "short\n"));
    assert!(why.contains("password"), "{why}");
    let no_merchant = add_args("carol@example.com", "owner", &stdin);
    assert!(refused(operators(&db, &no_merchant, PASSWORD)).contains("merchant"));

    let list = ok(operators(&db, &["list"], ""));
    assert_eq!(list.lines().count(), 1, "only the admin was added: {list}");
    assert!(
        list.contains("ada@example.com\tadmin\tenabled\tAda Lovelace"),
        "{list}"
    );
    assert!(
        !list.contains("argon2") && !list.contains("horse"),
        "{list}"
    );

    // Without a password: a link that sets it, under the console's address.
    let base = "https://coupons.example.com";
    let dan = add_args(
        "dan@example.com",
        "finance",
        &["--base-url", "https://coupons.example.com/"],
    );
    let (added, out) = said(operators(&db, &dan, ""));
    assert!(added.contains("dan@example.com (finance)"), "{added}");
    let first = link_token(&out, base);
    let list = ok(operators(&db, &["list"], ""));
    assert!(
        list.contains("dan@example.com\tfinance\tenabled, no password yet"),
        "{list}"
    );
    let reset = ["reset-password", "dan@example.com", "--base-url", base];
    let second = link_token(&ok(operators(&db, &reset, "")), base);
    assert_ne!(first, second, "each link has its own token");
    let unknown = ["reset-password", "nobody@example.com"];
    assert!(refused(operators(&db, &unknown, "")).contains("no operator"));

    let off = ok(operators(&db, &["disable", "ADA@example.com"], ""));
    assert!(off.contains("disabled at"), "{off}");
    assert!(ok(operators(&db, &["list"], "")).contains("disabled_at="));
    let on = ok(operators(&db, &["enable", "ada@example.com"], ""));
    assert!(on.contains("enabled"), "{on}");
    let list = ok(operators(&db, &["list"], ""));
    assert!(list.contains("ada@example.com\tadmin\tenabled\t"), "{list}");
    let nobody = ["disable", "nobody@example.com"];
    assert!(refused(operators(&db, &nobody, "")).contains("no operator"));

    // Each change is in the audit trail as the command line's, by the system user, with the
    // fields before and after; refused commands left nothing.
    let trail = audit_trail(&db);
    let actions: Vec<&str> = trail.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(
        actions,
        [
            "operator.create",
            "operator.create",
            "operator.reset_link",
            "operator.reset_link",
            "operator.disable",
            "operator.enable"
        ],
        "{trail:?}"
    );
    assert!(trail.iter().all(|e| e.0 == "cli:deploy-bot"), "{trail:?}");
    let disable = &trail[4];
    assert_eq!(disable.2, r#"{"disabled":false}"#, "{trail:?}");
    assert_eq!(disable.3, r#"{"disabled":true}"#, "{trail:?}");
    assert!(
        trail.iter().all(|e| !e.3.contains("argon2")),
        "no password hash is recorded: {trail:?}"
    );
}

/// The audit trail of the SQLite database `db`, oldest first: actor, action, before, after.
fn audit_trail(db: &str) -> Vec<(String, String, String, String)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(db).await.unwrap();
        let rows: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT actor, action, before_json, after_json FROM audit_log ORDER BY id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        pool.close().await;
        rows.into_iter()
            .map(|(a, b, c, d)| (a, b, c.unwrap_or_default(), d.unwrap_or_default()))
            .collect()
    })
}
