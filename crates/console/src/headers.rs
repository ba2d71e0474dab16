//! The headers every console answer carries, set in one layer over the console's routes (the
//! API's own layer adds `X-Content-Type-Options: nosniff` to every answer, the console's
//! included).
//!
//! The policy allows scripts only from the console's own assets: no page carries an inline
//! `<script>` or event handler attribute (`assets/console.js` does what they did), and no
//! `eval`, so text that slipped past escaping could not run. Styles also allow inline `style=`
//! attributes: the pages size bars and place timeline marks with them, from numbers the
//! console computes. No page may be framed by another site.

use axum::http::header::{
    CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::response::Response;

/// The console's `Content-Security-Policy`.
pub const CSP: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// Adds the console's headers to `res`.
pub async fn secure(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    res
}
