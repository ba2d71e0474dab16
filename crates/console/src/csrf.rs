//! Cross-site request forgery: the session cookie is SameSite=Strict, every form carries its
//! session's own random token (kept with the session on the server), and a POST is refused
//! unless its token matches and, when the browser says where it came from (`Origin`,
//! `Sec-Fetch-Site`), it came from this origin.

use axum::http::{header, HeaderMap};

/// The form field the token travels in.
pub const FIELD: &str = "csrf";

/// Whether a POST may proceed: `sent` is the session's token (compared in constant time) and
/// the request is not from another site.
pub fn allowed(headers: &HeaderMap, expected: &str, sent: &str) -> bool {
    same_origin(headers)
        && !expected.is_empty()
        && constant_eq(expected.as_bytes(), sent.as_bytes())
}

/// Whether the browser's own signals say the request came from this origin (absent signals
/// pass: the token still has to match). `Sec-Fetch-Site: same-origin` decides where a browser
/// sends it: a page served with `Referrer-Policy: no-referrer` (the set-password and
/// invitation pages, whose address holds a token) makes Chromium send `Origin: null`.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    match site {
        Some("cross-site" | "same-site") => return false,
        Some("same-origin") => return true,
        _ => {}
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match (origin.to_str().ok(), host) {
        (Some(o), Some(h)) => o
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(h)),
        _ => false,
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_this_origin_with_the_token_passes() {
        let same = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://localhost:8080"),
        ]);
        assert!(allowed(&same, "tok", "tok"));
        assert!(!allowed(&same, "tok", "tom"), "wrong token");
        assert!(!allowed(&same, "tok", ""), "no token");
        let other = headers(&[("host", "localhost:8080"), ("origin", "http://evil.test")]);
        assert!(!allowed(&other, "tok", "tok"), "another origin");
        let null = headers(&[("host", "localhost:8080"), ("origin", "null")]);
        assert!(!allowed(&null, "tok", "tok"), "an opaque origin");
        // A no-referrer page's form: Chromium sends `Origin: null` and says same-origin.
        let no_referrer = headers(&[
            ("host", "localhost:8080"),
            ("origin", "null"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(
            same_origin(&no_referrer),
            "a same-origin fetch of a no-referrer page"
        );
        let forged = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://evil.test"),
            ("sec-fetch-site", "cross-site"),
        ]);
        assert!(!same_origin(&forged));
        let cross = headers(&[("host", "localhost:8080"), ("sec-fetch-site", "cross-site")]);
        assert!(!allowed(&cross, "tok", "tok"), "cross-site fetch");
        assert!(
            allowed(&headers(&[("host", "h")]), "tok", "tok"),
            "no signals: the token decides"
        );
    }
}
