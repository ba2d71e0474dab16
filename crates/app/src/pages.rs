//! Cursor pages: every list is ordered by id and read a page at a time. A caller asks for
//! one with a [`PageRequest`] (the cursor of the page before, and how many rows); the
//! answer is a [`PageOf`] its rows with the cursor of the next page. A cursor is an opaque
//! token for the last id of the page before; one this layer did not write is refused.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{CouponKind, Reference};
use coupond_store::{Narrow, Page};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{AppError, AppResult};
use crate::settings::AppSettings;

/// A page of results.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PageOf<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Which page of a list a caller asks for.
#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    /// `next_cursor` of the page before; none for the first page.
    pub cursor: Option<String>,
    /// Rows, 1 to `max_page` (`default_page` when none).
    pub limit: Option<u32>,
}

impl PageRequest {
    /// The first `limit` rows.
    pub fn first(limit: u32) -> Self {
        PageRequest {
            cursor: None,
            limit: Some(limit),
        }
    }

    /// `limit` rows after `cursor` (none when it is empty).
    pub fn after(cursor: &str, limit: u32) -> Self {
        PageRequest {
            cursor: (!cursor.is_empty()).then(|| cursor.to_owned()),
            limit: Some(limit),
        }
    }

    /// The storage page it asks for under `s`, with one extra row, so that the answer knows
    /// whether a next page exists; a limit out of range or a cursor this layer did not write
    /// is refused naming `limit` or `cursor`.
    pub fn page(&self, s: &AppSettings) -> AppResult<Page> {
        let limit = self.rows(s)?;
        let after = self.own_cursor(decode_cursor)?;
        Ok(Page {
            after,
            limit: limit + 1,
        })
    }

    /// The rows it asks for: 1 to `max_page` (`default_page` when none), else refused naming
    /// `limit`.
    pub fn rows(&self, s: &AppSettings) -> AppResult<u32> {
        let limit = self.limit.unwrap_or(s.default_page);
        if limit == 0 || limit > s.max_page {
            let why = format!("limit must be from 1 to {}", s.max_page);
            return Err(AppError::bad_query("limit", why));
        }
        Ok(limit)
    }

    /// Its cursor as `decode` reads it (a list ordered otherwise than by id writes its own);
    /// one `decode` cannot read is refused naming `cursor`.
    pub fn own_cursor<T>(&self, decode: impl FnOnce(&str) -> Option<T>) -> AppResult<Option<T>> {
        match &self.cursor {
            None => Ok(None),
            Some(c) => decode(c)
                .map(Some)
                .ok_or_else(|| AppError::bad_query("cursor", "cursor is not one this API issued")),
        }
    }
}

/// A text to filter a list by, as given: 1 to `max` characters, else refused naming `field`.
pub fn text_filter(
    field: &'static str,
    v: Option<String>,
    max: usize,
) -> AppResult<Option<String>> {
    if v.as_ref()
        .is_some_and(|v| v.is_empty() || v.chars().count() > max)
    {
        let why = format!("{field} must be 1 to {max} characters");
        return Err(AppError::bad_query(field, why));
    }
    Ok(v)
}

/// What lists of templates and of activities are narrowed by besides their own filters.
#[derive(Clone, Debug, Default)]
pub struct Narrowing {
    /// Only those offering coupons of this kind.
    pub kind: Option<CouponKind>,
    /// Only paused ones (`true`) or only those not paused (`false`).
    pub paused: Option<bool>,
    /// Only the one with this `reference.external_id`.
    pub external_id: Option<String>,
    /// Only those from this system (`reference.source`).
    pub source: Option<String>,
    /// Only those of this type there (`reference.type`).
    pub source_type: Option<String>,
}

impl Narrowing {
    /// As the store takes it, its reference parts checked (1 to [`Reference::MAX_CHARS`]
    /// characters, else refused naming `source` or `type`).
    pub fn checked(self) -> AppResult<Narrow> {
        let max = Reference::MAX_CHARS;
        Ok(Narrow {
            kind: self.kind,
            paused: self.paused,
            external_id: self.external_id,
            source: text_filter("source", self.source, max)?,
            source_type: text_filter("type", self.source_type, max)?,
        })
    }
}

/// The cursor of a page that ended with id `last_id`.
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

/// Trims the extra row a [`PageRequest::page`] asked for and sets the next cursor.
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

    fn page(cursor: Option<&str>, limit: Option<u32>) -> AppResult<Page> {
        let cursor = cursor.map(str::to_owned);
        PageRequest { cursor, limit }.page(&AppSettings::default())
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let p = page(Some(&encode_cursor(41)), Some(10)).unwrap();
        assert_eq!((p.after, p.limit), (Some(41), 11));
        assert!(page(Some("not-a-cursor"), None).is_err());
        assert!(page(None, Some(0)).is_err());
        let max = AppSettings::default().max_page;
        assert!(page(None, Some(max + 1)).is_err());
        assert_eq!(PageRequest::after("", 5).cursor, None);
    }

    #[test]
    fn a_whole_list_is_sliced_into_the_same_pages() {
        let rows = || vec![2_i64, 3, 5, 7, 11];
        let first = slice(rows(), page(None, Some(2)).unwrap(), |r| *r, |r| r);
        assert_eq!(first.items, [2, 3]);
        let cursor = first.next_cursor.unwrap();
        let second = slice(rows(), page(Some(&cursor), Some(2)).unwrap(), |r| *r, |r| r);
        assert_eq!(second.items, [5, 7]);
        let cursor = second.next_cursor.unwrap();
        let last = slice(rows(), page(Some(&cursor), Some(2)).unwrap(), |r| *r, |r| r);
        assert_eq!((last.items, last.next_cursor), (vec![11], None));
    }
}
