//! Cursor pagination as the API takes it (`cursor` and `limit` query parameters) and answers
//! it: the pages themselves are the application layer's ([`coupond_app::pages`]).

use coupond_app::records::Page;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, ApiResult};
use coupond_app::pages::PageRequest;
use coupond_app::AppSettings;

pub use coupond_app::pages::{finish, PageOf};

/// The query of a list with nothing to filter by: only its page.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

impl PageQuery {
    /// The page it asks for, as the application layer takes it.
    pub fn request(self) -> PageRequest {
        PageRequest {
            cursor: self.cursor,
            limit: self.limit,
        }
    }
}

/// The storage page for a request's `cursor` and `limit` ([`PageRequest::page`]).
pub fn page(cursor: Option<&str>, limit: Option<u32>, s: &AppSettings) -> ApiResult<Page> {
    let cursor = cursor.map(str::to_owned);
    Ok(PageRequest { cursor, limit }.page(s)?)
}

/// A CSV text as the answer (`text/csv; charset=utf-8`), for the reports' `format=csv`.
pub fn csv_answer(text: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let csv = [(axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8")];
    (csv, text).into_response()
}

/// `value` as a JSON answer, written into a buffer of `capacity` bytes reserved up front.
/// For large answers (a quote over a 200-coupon wallet is 45 KB): axum's `Json` grows its
/// buffer from 128 bytes, and the copies of each growth were 13 % of a quote's CPU.
pub fn json_answer<T: serde::Serialize>(
    value: &T,
    capacity: usize,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let mut body = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut body, value).map_err(ApiError::internal)?;
    let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
    Ok((json, body).into_response())
}

/// Whether a list or report's `format` query parameter asks for CSV (`json`, the default, or
/// `csv`; anything else is 400 `invalid_query` naming `format`).
pub fn wants_csv(format: Option<&str>) -> ApiResult<bool> {
    match format {
        None | Some("json") => Ok(false),
        Some("csv") => Ok(true),
        Some(_) => Err(ApiError::bad_request(
            "invalid_query",
            Some("format"),
            "format is json or csv",
        )),
    }
}
