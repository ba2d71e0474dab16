//! Static assets, embedded in the binary: the console's stylesheet, its script (what the pages
//! do beyond htmx: no page carries inline script) and htmx (0BSD, `assets/htmx/LICENSE.txt`).
//! Their paths carry a version (htmx's release; the others' content hash, so an edit can never
//! be hidden by a cached copy), so they are cached for good.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::IntoResponse;

pub const HTMX_PATH: &str = "/console/assets/htmx-2.0.11.min.js";

/// The stylesheet's path: `/console/assets/console-<first 12 hex digits of its SHA-256>.css`.
pub fn css_path() -> &'static str {
    static PATH: LazyLock<String> = LazyLock::new(|| hashed("css", CSS));
    &PATH
}

/// The script's path: `/console/assets/console-<first 12 hex digits of its SHA-256>.js`.
pub fn js_path() -> &'static str {
    static PATH: LazyLock<String> = LazyLock::new(|| hashed("js", JS));
    &PATH
}

/// `/console/assets/console-<first 12 hex digits of the SHA-256 of bytes>.<ext>`.
fn hashed(ext: &str, bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("/console/assets/console-{hex}.{ext}")
}

const HTMX: &[u8] = include_bytes!("../assets/htmx/htmx-2.0.11.min.js");
const CSS: &[u8] = include_bytes!("../assets/console.css");
const JS: &[u8] = include_bytes!("../assets/console.js");

const FOREVER: &str = "public, max-age=31536000, immutable";
const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

pub async fn htmx() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, JAVASCRIPT),
            (header::CACHE_CONTROL, FOREVER),
        ],
        HTMX,
    )
}

pub async fn js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, JAVASCRIPT),
            (header::CACHE_CONTROL, FOREVER),
        ],
        JS,
    )
}

pub async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, FOREVER),
        ],
        CSS,
    )
}
