//! `coupond operators`: the first admin of a new installation is added from the command line
//! with a password on standard input; the rules hold (a unique email whatever its case, the
//! password policy, a merchant for merchant roles and none for platform roles); a leaver is
//! disabled and enabled again; the list never shows a password.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::BIN;

/// `coupond --database DB args...` with `stdin` written to its standard input.
fn operators(db: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(["--database", db, "operators"])
        .args(args)
        .env_remove("COUPOND_DATABASE_URL")
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

const PASSWORD: &str = "correct horse battery staple\n";

#[test]
fn the_first_admin_is_added_and_a_leaver_disabled_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/c.db", dir.path().display());
    let admin = [
        "add",
        "--email",
        " Ada@Example.COM ",
        "--name",
        "Ada Lovelace",
        "--role",
        "admin",
        "--password-stdin",
    ];
    let added = ok(operators(&db, &admin, PASSWORD));
    assert!(added.contains("added: ada@example.com (admin)"), "{added}");

    let again = [
        "add",
        "--email",
        "ada@example.com",
        "--name",
        "Ada",
        "--role",
        "support",
        "--password-stdin",
    ];
    assert!(refused(operators(&db, &again, PASSWORD)).contains("exists"));
    let weak = [
        "add",
        "--email",
        "bob@example.com",
        "--name",
        "Bob",
        "--role",
        "marketing",
        "--password-stdin",
    ];
    let why = refused(operators(&db, &weak, "password1234\n"));
    assert!(why.contains("password"), "{why}");
    let why = refused(operators(&db, &weak, "short\n"));
    assert!(why.contains("password"), "{why}");
    let no_merchant = [
        "add",
        "--email",
        "carol@example.com",
        "--name",
        "Carol",
        "--role",
        "owner",
        "--password-stdin",
    ];
    assert!(refused(operators(&db, &no_merchant, PASSWORD)).contains("merchant"));
    let no_stdin = [
        "add",
        "--email",
        "dan@example.com",
        "--name",
        "Dan",
        "--role",
        "finance",
    ];
    assert!(refused(operators(&db, &no_stdin, "")).contains("--password-stdin"));

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

    let off = ok(operators(&db, &["disable", "ADA@example.com"], ""));
    assert!(off.contains("disabled at"), "{off}");
    assert!(ok(operators(&db, &["list"], "")).contains("disabled_at="));
    let on = ok(operators(&db, &["enable", "ada@example.com"], ""));
    assert!(on.contains("enabled"), "{on}");
    assert!(ok(operators(&db, &["list"], "")).contains("\tenabled\t"));
    assert!(
        refused(operators(&db, &["disable", "nobody@example.com"], "")).contains("no operator")
    );
}
