//! Static assets, embedded in the binary: the console's stylesheet and htmx (0BSD,
//! `assets/htmx/LICENSE.txt`). Their paths carry a version, so they are cached for good.

use axum::http::header;
use axum::response::IntoResponse;

pub const HTMX_PATH: &str = "/console/assets/htmx-2.0.11.min.js";
pub const CSS_PATH: &str = "/console/assets/console-2.css";

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
