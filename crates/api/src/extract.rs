//! Extractors that turn every malformed request into a problem naming the field, instead of
//! axum's plain-text rejections.

use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use serde_path_to_error::Segment;

use crate::error::{ApiError, FieldError};
use coupond_app::AppError;

/// A JSON body. Wrong content type: 415. Too large: 413. Bad syntax: 400 `invalid_json`.
/// Wrong shape: 422 with the JSON path of the field and `missing_field`, `unknown_field` or
/// `invalid_field`.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = body_bytes(req, state).await?;
        json_object(&bytes).map(ApiJson)
    }
}

/// Whether `Content-Type` names JSON (`application/json` or `application/*+json`).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|m| {
            let m = m.trim().to_ascii_lowercase();
            m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// `bytes` as a JSON object of type `T`. Every body this API takes is an object; serde would
/// also accept a positional array for a struct, which no client means to send.
fn json_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => parse_json(bytes),
        Some(_) => Err(ApiError::invalid(
            "invalid_field",
            "body",
            "the body must be a JSON object",
        )),
        None => Err(ApiError::bad_request(
            "invalid_json",
            None,
            "the body is empty",
        )),
    }
}

/// The whole body, within the route's limit (413 past it).
async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state)
        .await
        .map_err(|e: BytesRejection| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::bad_request("invalid_body", None, e.body_text())
            }
        })
}

/// Deserializes `bytes` as a whole JSON document of type `T`, classifying failures.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Parsed first without tracking the path: nearly every body is well formed, and the
    // tracking wraps every field and element (a quote's 50-line order spent 7 % of the
    // server's CPU parsing). Only a body that fails is parsed again, with the path, to name
    // the field (the same rules decide, so it fails again).
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let at: Vec<Segment> = e.path().iter().cloned().collect();
        let inner = e.into_inner();
        match classify(&path, &inner, bytes) {
            ApiError::App(AppError::Invalid {
                code,
                field: Some(field),
                message,
            }) => every_invalid_field::<T>(FieldError::new(code, field, message), at, bytes),
            other => other,
        }
    })?;
    de.end()
        .map_err(|e| ApiError::bad_request("invalid_json", None, e.to_string()))?;
    Ok(value)
}

fn classify(path: &str, e: &serde_json::Error, bytes: &[u8]) -> ApiError {
    use serde_json::error::Category;
    let message = e.to_string();
    // serde_json reports some values of the wrong type as syntax errors (a number or an array
    // where an enum's name belongs: "expected value"); when the document itself parses, the
    // field is at fault, not the JSON. Nesting past serde_json's recursion limit is the
    // document's fault, whatever a lenient second parse says.
    let misreported = e.classify() == Category::Syntax
        && !matches!(path, "" | ".")
        && !message.starts_with("recursion limit exceeded")
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
    match e.classify() {
        Category::Syntax if misreported => data_error(path, message),
        Category::Syntax | Category::Eof | Category::Io => {
            ApiError::bad_request("invalid_json", None, message)
        }
        Category::Data => data_error(path, message),
    }
}

/// How many invalid fields one answer names at most: finding each parses the body again.
const MAX_FIELD_ERRORS: usize = 20;

/// Every field of a well-formed body that breaks its shape, not only the first serde meets: the
/// field found is taken out of the document and the rest parsed again, until it parses, a field
/// is missing (serde meets those last, so nothing follows), the same field comes back (a rule
/// that spans fields), or [`MAX_FIELD_ERRORS`] are named. One field is [`AppError::Invalid`],
/// more are [`AppError::InvalidFields`].
fn every_invalid_field<T: DeserializeOwned>(
    first: FieldError,
    mut at: Vec<Segment>,
    bytes: &[u8],
) -> ApiError {
    let mut found = vec![first];
    if let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(bytes) {
        while found.len() < MAX_FIELD_ERRORS
            && found.last().is_some_and(|f| f.code != "missing_field")
            && take_out(&mut doc, &at)
        {
            let Err(e) = serde_path_to_error::deserialize::<_, T>(&doc) else {
                break;
            };
            let path = e.path().to_string();
            at = e.path().iter().cloned().collect();
            let ApiError::App(AppError::Invalid {
                code,
                field: Some(field),
                message,
            }) = data_error(&path, e.into_inner().to_string())
            else {
                break;
            };
            if found.iter().any(|f| f.field == field) {
                break;
            }
            found.push(FieldError::new(code, field, message));
        }
    }
    if found.len() == 1 {
        let f = found.remove(0);
        ApiError::invalid(f.code, &f.field, f.message)
    } else {
        ApiError::App(AppError::InvalidFields(found))
    }
}

/// Removes the member at `at` from `doc`; false when there is none to remove (an array item,
/// an enum's variant, or a path that does not lead anywhere).
fn take_out(doc: &mut serde_json::Value, at: &[Segment]) -> bool {
    let Some((Segment::Map { key }, parents)) = at.split_last() else {
        return false;
    };
    let mut node = doc;
    for segment in parents {
        let next = match segment {
            Segment::Map { key } => node.get_mut(key.as_str()),
            Segment::Seq { index } => node.get_mut(*index),
            Segment::Enum { .. } | Segment::Unknown => None,
        };
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    node.as_object_mut()
        .is_some_and(|o| o.remove(key.as_str()).is_some())
}

/// A well-formed body whose field at `path` breaks the shape: `missing_field`,
/// `unknown_field` or `invalid_field`, naming it.
fn data_error(path: &str, message: String) -> ApiError {
    let parent = if path == "." { "" } else { path };
    let join = |name: &str| {
        if parent.is_empty() {
            name.to_owned()
        } else {
            format!("{parent}.{name}")
        }
    };
    let (code, field) = if let Some(name) = between(&message, "missing field `", "`") {
        ("missing_field", join(name))
    } else if let Some(name) = between(&message, "unknown field `", "`") {
        // serde_path_to_error already ends the path with the unknown key.
        let field = if parent.ends_with(name) {
            parent.to_owned()
        } else {
            join(name)
        };
        ("unknown_field", field)
    } else {
        (
            "invalid_field",
            if parent.is_empty() {
                "body".to_owned()
            } else {
                parent.to_owned()
            },
        )
    };
    // serde's message ends with " at line 1 column 7": the field names the place in words,
    // so the parser's position only gets in a person's way (a form in the console, say).
    ApiError::invalid(code, &field, in_words(&without_position(message)))
}

/// A parser's message in a person's words: Rust's type names and the parsers' own prefixes
/// say nothing to a client developer ("expected i64" is "expected a whole number").
pub fn in_words(message: &str) -> String {
    let mut m = message
        .trim_start_matches("Failed to deserialize query string: ")
        .trim_start_matches("Invalid URL: ")
        .to_owned();
    for int in ["i64", "u64", "i32", "u32", "u16", "u8"] {
        m = m
            .replace(&format!("expected {int}"), "expected a whole number")
            .replace(&format!("to a `{int}`"), "to a whole number");
    }
    if let Some(value) = between(&m, "Cannot parse `", "` to a whole number") {
        m = format!("`{value}` is not a whole number");
    }
    m.replace("invalid digit found in string", "not a whole number")
        .replace("invalid type: ", "")
}

/// `message` without serde_json's trailing ` at line L column C`.
fn without_position(message: String) -> String {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(" column ") => message[..i].to_owned(),
        _ => message,
    }
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let len = s[from..].find(end)?;
    Some(&s[from..from + len])
}

/// A JSON body that may also be absent: an empty body (or one of only whitespace) is `None`,
/// whatever `Content-Type` says (clients and proxies add one to empty POSTs); anything else
/// is read exactly like [`ApiJson`].
#[derive(Debug)]
pub struct OptionalJson<T>(pub Option<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        // Decided before the body is read, so the request's head need not be kept (cloned)
        // to judge a body that turns out not to be empty.
        let is_json = is_json(req.headers());
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(None));
        }
        if !is_json {
            return Err(ApiError::UnsupportedMediaType);
        }
        json_object(&bytes).map(|v| OptionalJson(Some(v)))
    }
}

/// A query string. Malformed: 400 `invalid_query`.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| ApiQuery(v))
            .map_err(|e: QueryRejection| {
                let text = e.body_text();
                let field = between(&text, "unknown field `", "`")
                    .or_else(|| between(&text, "missing field `", "`"))
                    .or_else(|| failing_parameter(&text))
                    .map(str::to_owned);
                ApiError::BadRequest {
                    code: "invalid_query",
                    field,
                    message: in_words(&text),
                }
            })
    }
}

/// The parameter a query string failed on, from axum's message ("Failed to deserialize query
/// string: limit: invalid digit found in string" names `limit`).
fn failing_parameter(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("Failed to deserialize query string: ")?;
    let (name, _) = rest.split_once(": ")?;
    let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then_some(name)
}

/// Path parameters. Malformed (an id that is not a positive integer): 400 `invalid_path`.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e: PathRejection| {
                ApiError::bad_request("invalid_path", Some("id"), in_words(&e.body_text()))
            })
    }
}

/// The client's IP address, when the server was started with connection info (`serve` is;
/// in-process tests are not): the peer's, or, when the peer is one of `trusted_proxies`, the
/// one its forwarding headers name ([`TrustedProxies::client`](crate::forwarded::TrustedProxies::client)).
#[derive(Clone, Copy, Debug)]
pub struct ClientIp(pub Option<std::net::IpAddr>);

impl FromRequestParts<crate::state::AppState> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &crate::state::AppState,
    ) -> Result<Self, ApiError> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        Ok(ClientIp(peer.map(|ip| {
            state.settings().trusted_proxies.client(ip, &parts.headers)
        })))
    }
}

#[cfg(test)]
mod words {
    use super::in_words;

    #[test]
    fn parser_messages_read_in_words() {
        assert_eq!(
            in_words("Invalid URL: Cannot parse `abc` to a `i64`"),
            "`abc` is not a whole number"
        );
        assert_eq!(
            in_words("Failed to deserialize query string: limit: invalid digit found in string"),
            "limit: not a whole number"
        );
        assert_eq!(
            in_words("invalid type: string \"x\", expected i64"),
            "string \"x\", expected a whole number"
        );
    }
}
