//! The documents name only what exists: every backticked file path (`crates/api/src/lib.rs`,
//! `api/src/shelf_cache.rs`, `.ci/run`) and every backticked module path
//! (`engine::accounts::HashGate`, `coupond_store::Store`) in the README and under `docs/` leads
//! to a file or a module of the workspace, and every module a crate's `lib.rs` map lists
//! (`//! - [`name`]` or `//! - `name``) is one of that crate's modules.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README and the Markdown files under `docs/` (sub-folders too).
fn documents() -> Vec<PathBuf> {
    let mut all = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                all.push(p);
            }
        }
    }
    all
}

/// The spans between backticks in `md`, outside fenced code blocks.
fn spans(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            out.push(inside.to_owned());
        }
    }
    out
}

/// Extensions of the files the documents name.
const FILE_KINDS: [&str; 12] = [
    "rs", "md", "sh", "toml", "sql", "py", "cfg", "service", "html", "yml", "json", "txt",
];

/// Whether `span` names a file of the repository: no spaces, no URL, a known extension and a
/// folder, or one of the repository's top folders.
fn file_path(span: &str) -> Option<&str> {
    // `file.rs::test_name` names a test in a file.
    let s = span.split("::").next().unwrap_or_default();
    let s = s.trim_end_matches([',', '.', ':']);
    let plain = !s.contains([' ', '*', '{', '<', '$', '=', '?']) && !s.contains("://");
    let ext = s.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
    let top = ["crates/", "docs/", "deploy/", ".ci/"]
        .iter()
        .any(|t| s.starts_with(t));
    (plain && !s.starts_with('/') && (top || (s.contains('/') && FILE_KINDS.contains(&ext))))
        .then_some(s)
}

/// Whether `path` exists from the root, under `crates/`, or next to the document.
fn file_exists(path: &str, doc_dir: &Path) -> bool {
    let path = path.split(['#', ':']).next().unwrap_or_default();
    [root(), root().join("crates"), doc_dir.to_path_buf()]
        .iter()
        .any(|base| base.join(path).exists())
}

/// The source folder of the crate a module path starts with (`coupond_engine`, `engine`,
/// `store_sql`, ...).
fn crate_src(name: &str) -> Option<PathBuf> {
    let short = name
        .strip_prefix("coupond_")
        .unwrap_or(name)
        .replace('_', "-");
    let dir = if name == "coupond" {
        root().join("crates/coupond/src")
    } else {
        root().join("crates").join(short).join("src")
    };
    dir.join("lib.rs").exists().then_some(dir)
}

/// The file of module `segments` under `src`, if there is one.
fn module_file(src: &Path, segments: &[&str]) -> Option<PathBuf> {
    let rel: PathBuf = segments.iter().collect();
    let file = src.join(&rel).with_extension("rs");
    let nested = src.join(&rel).join("mod.rs");
    [file, nested].into_iter().find(|p| p.exists())
}

/// Whether the module path `span` (`engine::accounts::HashGate`) leads somewhere: each
/// lower-case segment a module (or an item of the module before it), the first upper-case one
/// an item named in the module before it. `None` when the span is not such a path.
fn module_path_exists(span: &str) -> Option<bool> {
    let s = span.split(['(', '<', '!', ' ']).next().unwrap_or_default();
    let segments: Vec<&str> = s.split("::").collect();
    let ident = |x: &str| !x.is_empty() && x.chars().all(|c| c.is_alphanumeric() || c == '_');
    if segments.len() < 2 || !segments.iter().all(|x| ident(x)) {
        return None;
    }
    let src = crate_src(segments[0])?;
    let mut file = src.join("lib.rs");
    for (i, seg) in segments.iter().enumerate().skip(1) {
        if let Some(f) = module_file(&src, &segments[1..=i]) {
            file = f;
            continue;
        }
        // An item of the module read so far ends the path.
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        return Some(text.contains(seg));
    }
    Some(true)
}

#[test]
fn documents_name_only_files_and_modules_that_exist() {
    let mut wrong = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc
            .strip_prefix(root())
            .unwrap_or(&doc)
            .display()
            .to_string();
        for span in spans(&text) {
            if let Some(path) = file_path(&span) {
                if !file_exists(path, doc.parent().unwrap()) {
                    wrong.push(format!("{name}: `{span}` is no file"));
                }
            } else if module_path_exists(&span) == Some(false) {
                wrong.push(format!("{name}: `{span}` is no module or item"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The module names a `lib.rs` map lists: the first backticked name of each `//! - ` line.
fn mapped_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .take_while(|l| l.starts_with("//!") || l.starts_with("#!") || l.is_empty())
        .filter_map(|l| l.strip_prefix("//! - "))
        .filter_map(|l| {
            let l = l.trim_start_matches('[');
            let name = l.strip_prefix('`')?.split('`').next()?;
            let module = name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c == ':' || c == '/');
            module.then(|| name.to_owned())
        })
        .collect()
}

#[test]
fn every_lib_map_lists_modules_that_exist() {
    let mut wrong = Vec::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = e.unwrap().path().join("src");
        let Ok(lib) = std::fs::read_to_string(src.join("lib.rs")) else {
            continue;
        };
        for module in mapped_modules(&lib) {
            let segments: Vec<&str> = module.split([':', '/']).filter(|s| !s.is_empty()).collect();
            let crate_dir = src.parent().unwrap();
            let found = module_file(&src, &segments).is_some()
                || src.join(segments.join("/")).is_dir()
                || crate_dir.join(segments.join("/")).is_dir()
                || lib.contains(&format!("fn {module}("));
            if !found {
                wrong.push(format!("{}: `{module}`", src.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "lib.rs maps list modules that do not exist:\n{}",
        wrong.join("\n")
    );
}
