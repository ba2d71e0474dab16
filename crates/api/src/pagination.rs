//! Cursor pagination: lists are ordered by id; the cursor is an opaque token for the last id
//! of the previous page.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_store::Page;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult};
use coupond_app::AppSettings;

/// A page of results (the console reads it back).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PageOf<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

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

pub fn encode_cursor(last_id: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("id:{last_id}"))
}

/// The longest cursor [`encode_cursor`] writes (`id:` and 19 digits, in base64).
const MAX_CURSOR_LEN: usize = 30;

/// The id of a cursor [`encode_cursor`] wrote, and `None` for any other text: longer ones are
/// refused before decoding, and ids written another way (`+5`, `05`, `-0`) after.
fn decode_cursor(cursor: &str) -> Option<i64> {
    if cursor.len() > MAX_CURSOR_LEN {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor.as_bytes()).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let id: i64 = text.strip_prefix("id:")?.parse().ok()?;
    (id >= 0 && encode_cursor(id) == cursor).then_some(id)
}

/// The storage page for a request's `cursor` and `limit`; asks for one extra row so that the
/// response knows whether a next page exists.
pub fn page(cursor: Option<&str>, limit: Option<u32>, s: &AppSettings) -> ApiResult<Page> {
    let limit = limit.unwrap_or(s.default_page);
    if limit == 0 || limit > s.max_page {
        return Err(ApiError::bad_request(
            "invalid_query",
            Some("limit"),
            format!("limit must be from 1 to {}", s.max_page),
        ));
    }
    let after = match cursor {
        None => None,
        Some(c) => Some(decode_cursor(c).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_query",
                Some("cursor"),
                "cursor is not one this API issued",
            )
        })?),
    };
    Ok(Page {
        after,
        limit: limit + 1,
    })
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
    serde_json::to_writer(&mut body, value).map_err(|e| ApiError::Internal(e.into()))?;
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

/// Trims the extra row fetched by [`page`] and sets the next cursor.
pub fn finish<R, T>(
    mut rows: Vec<R>,
    page: Page,
    id: impl Fn(&R) -> i64,
    view: impl Fn(R) -> T,
) -> PageOf<T> {
    let wanted = (page.limit - 1) as usize;
    let more = rows.len() > wanted;
    rows.truncate(wanted);
    let next_cursor = if more {
        rows.last().map(|r| encode_cursor(id(r)))
    } else {
        None
    };
    PageOf {
        items: rows.into_iter().map(view).collect(),
        next_cursor,
    }
}

/// [`finish`] over `rows` the store answered whole, ordered by `id`: the page is cut from them
/// here (the rows after the cursor, one extra to tell whether more follow).
pub fn slice<R, T>(
    rows: Vec<R>,
    page: Page,
    id: impl Fn(&R) -> i64,
    view: impl Fn(R) -> T,
) -> PageOf<T> {
    let rows: Vec<R> = rows
        .into_iter()
        .filter(|r| page.after.is_none_or(|after| id(r) > after))
        .take(page.limit as usize)
        .collect();
    finish(rows, page, id, view)
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let s = AppSettings::default();
        let p = page(Some(&encode_cursor(41)), Some(10), &s).unwrap();
        assert_eq!((p.after, p.limit), (Some(41), 11));
        assert!(page(Some("not-a-cursor"), None, &s).is_err());
        assert!(page(None, Some(0), &s).is_err());
        assert!(page(None, Some(s.max_page + 1), &s).is_err());
    }

    #[test]
    fn a_whole_list_is_sliced_into_the_same_pages() {
        let s = AppSettings::default();
        let rows = || vec![2_i64, 3, 5, 7, 11];
        let first = slice(rows(), page(None, Some(2), &s).unwrap(), |r| *r, |r| r);
        assert_eq!(first.items, [2, 3]);
        let cursor = first.next_cursor.unwrap();
        let second = slice(
            rows(),
            page(Some(&cursor), Some(2), &s).unwrap(),
            |r| *r,
            |r| r,
        );
        assert_eq!(second.items, [5, 7]);
        let cursor = second.next_cursor.unwrap();
        let last = slice(
            rows(),
            page(Some(&cursor), Some(2), &s).unwrap(),
            |r| *r,
            |r| r,
        );
        assert_eq!((last.items, last.next_cursor), (vec![11], None));
    }
}
