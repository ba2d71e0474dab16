//! The project's documents stand on their own: the README and everything under `docs/` name
//! no path outside the repository (`../shared`, where the spec and the benchmark scripts were
//! first kept), and every relative link in them leads to a file or folder that exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README and the Markdown files under `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut all = vec![root().join("README.md")];
    let docs = root().join("docs");
    for e in std::fs::read_dir(&docs).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            all.push(p);
        }
    }
    all
}

/// The targets of `[text](target)` links in `md`.
fn links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_owned());
        }
    }
    out
}

#[test]
fn documents_stand_on_their_own() {
    let mut wrong = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.file_name().unwrap().to_string_lossy().into_owned();
        if text.contains("../shared") {
            wrong.push(format!("{name} names ../shared"));
        }
        let dir = doc.parent().unwrap();
        for link in links(&text) {
            let target = link.split('#').next().unwrap_or_default();
            let external = target.contains("://") || target.starts_with("mailto:");
            if target.is_empty() || external || target.starts_with('$') {
                continue;
            }
            if !dir.join(target).exists() {
                wrong.push(format!("{name} links to {link}, which does not exist"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `coupond --help` names every command, its one-line description says what the binary does,
/// and `keys revoke` says when a revoked key stops working as the README does.
#[test]
fn the_help_names_every_command() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_coupond"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let first = help.lines().next().unwrap_or_default().to_owned();
    for command in [
        "serve",
        "migrate",
        "keys",
        "operators",
        "token",
        "config",
        "openapi",
        "backup",
        "loadtest",
        "audit",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from:\n{help}"
        );
    }
    for word in ["back up", "load-test", "audit", "operators"] {
        assert!(first.contains(word), "{first}");
    }
    let revoke = std::process::Command::new(env!("CARGO_BIN_EXE_coupond"))
        .args(["keys", "revoke", "--help"])
        .output()
        .unwrap();
    let revoke = String::from_utf8_lossy(&revoke.stdout).into_owned();
    assert!(revoke.contains("auth.cache_ttl"), "{revoke}");
}
