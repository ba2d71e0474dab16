//! Static assets, embedded in the binary: the console's stylesheet and htmx (0BSD,
//! `assets/htmx/LICENSE.txt`). Their paths carry a version (htmx's release; the stylesheet's
//! content hash, so an edit can never be hidden by a cached copy), so they are cached for good.

use axum::http::header;
use axum::response::IntoResponse;

pub const HTMX_PATH: &str = "/console/assets/htmx-2.0.11.min.js";

/// The stylesheet's path: `/console/assets/console-<first 12 hex digits of its SHA-256>.css`.
pub fn css_path() -> &'static str {
    static PATH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(CSS);
        let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
        format!("/console/assets/console-{hex}.css")
    });
    &PATH
}

const HTMX: &[u8] = include_bytes!("../assets/htmx/htmx-2.0.11.min.js");
const CSS: &[u8] = include_bytes!("../assets/console.css");

const FOREVER: &str = "public, max-age=31536000, immutable";

pub async fn htmx() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, FOREVER),
        ],
        HTMX,
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
