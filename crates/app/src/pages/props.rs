//! Properties of cursor and limit parsing: only cursors this layer wrote are read back, each
//! to the id it was written for.
//!
//! These stand in for cargo-fuzz targets (issue 6, item 9): cargo-fuzz needs a nightly
//! toolchain, which CI does not have, so the parsers of outside input are driven by proptest
//! under plain `cargo test` instead.

use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use proptest::prelude::*;

use super::*;

fn settings() -> AppSettings {
    AppSettings::default()
}

/// The storage page `cursor` and `limit` ask for under `s`.
fn page(cursor: Option<&str>, limit: Option<u32>, s: &AppSettings) -> AppResult<Page> {
    let cursor = cursor.map(str::to_owned);
    PageRequest { cursor, limit }.page(s)
}

/// Text that may be sent as `cursor`: anything, base64 of anything, and near misses of
/// issued cursors (signs, leading zeros, spaces, padding, the other alphabets, extra or
/// missing characters).
fn cursor_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[A-Za-z0-9_=+/-]{0,40}",
        any::<Vec<u8>>().prop_map(|b| URL_SAFE_NO_PAD.encode(b)),
        "(id:|ID:|id|:)?[-+ ]?0{0,2}[0-9]{0,21} ?".prop_map(|t| URL_SAFE_NO_PAD.encode(t)),
        (0..=i64::MAX).prop_flat_map(|id| {
            let text = format!("id:{id}");
            prop_oneof![
                Just(URL_SAFE.encode(&text)),
                Just(STANDARD.encode(&text)),
                Just(encode_cursor(id).to_lowercase()),
                "[A-Za-z0-9_=-]{1,3}"
                    .prop_map(move |extra| format!("{}{extra}", encode_cursor(id))),
                Just({
                    let mut c = encode_cursor(id);
                    c.pop();
                    c
                }),
            ]
        }),
        "[0-9]{0,25}".prop_map(|t| URL_SAFE_NO_PAD.encode(format!("id:{t}"))),
        (i64::MIN..0).prop_map(encode_cursor),
    ]
}

fn is_refused_cursor(r: &AppResult<Page>) -> bool {
    matches!(
        r,
        Err(AppError::BadRequest { code: "invalid_query", field: "cursor", message })
            if message == "cursor is not one this API issued"
    )
}

proptest! {
    #[test]
    fn issued_cursors_round_trip(id in prop_oneof![0..=i64::MAX, 0i64..1000, Just(i64::MAX)]) {
        let c = encode_cursor(id);
        prop_assert!(c.len() <= MAX_CURSOR_LEN);
        prop_assert!(c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        prop_assert_eq!(decode_cursor(&c), Some(id));
        let p = page(Some(&c), None, &settings()).unwrap();
        prop_assert_eq!(p.after, Some(id));
    }

    /// Any text is either a cursor this API wrote (and read back as its id) or refused with
    /// the one error; never a panic.
    #[test]
    fn other_text_is_refused(s in cursor_text()) {
        let r = page(Some(&s), Some(10), &settings());
        match &r {
            Ok(p) => {
                let id = p.after.unwrap();
                prop_assert!(id >= 0);
                prop_assert_eq!(encode_cursor(id), s);
            }
            Err(_) => prop_assert!(is_refused_cursor(&r), "{:?}", r),
        }
    }

    #[test]
    fn limits_are_one_to_max_page(limit in prop::option::of(prop_oneof![any::<u32>(), 0u32..=250])) {
        let s = settings();
        match page(None, limit, &s) {
            Ok(p) => {
                let wanted = limit.unwrap_or(s.default_page);
                prop_assert!((1..=s.max_page).contains(&wanted));
                prop_assert_eq!((p.after, p.limit), (None, wanted + 1));
            }
            Err(AppError::BadRequest { code, field, .. }) => {
                prop_assert!(limit.is_some_and(|l| l == 0 || l > s.max_page));
                prop_assert_eq!((code, field), ("invalid_query", "limit"));
            }
            Err(e) => return Err(TestCaseError::fail(format!("unexpected {e:?}"))),
        }
    }

    /// The cursor a page hands out reads back as the last id on it, and is there exactly
    /// when more rows were found than asked for.
    #[test]
    fn next_cursors_point_after_the_last_row(
        ids in prop::collection::vec(0..=i64::MAX, 0..30),
        limit in 1u32..=25,
    ) {
        let asked = page(None, Some(limit), &settings()).unwrap();
        let out = finish(ids.clone(), asked, |id| *id, |id| id);
        let shown = ids.len().min(limit as usize);
        prop_assert_eq!(&out.items[..], &ids[..shown]);
        match out.next_cursor {
            Some(c) => {
                prop_assert!(ids.len() > limit as usize);
                let next = page(Some(&c), Some(limit), &settings()).unwrap();
                prop_assert_eq!(next.after, Some(ids[shown - 1]));
            }
            None => prop_assert!(ids.len() <= limit as usize),
        }
    }
}

#[test]
fn near_misses_are_refused() {
    let s = settings();
    assert_eq!(encode_cursor(i64::MAX).len(), MAX_CURSOR_LEN);
    for text in [
        "id:+5", "id:05", "id:-0", "id:-5", "id: 5", "id:5 ", "id:", "5", "ID:5",
    ] {
        let c = URL_SAFE_NO_PAD.encode(text);
        assert!(is_refused_cursor(&page(Some(&c), None, &s)), "{text}");
    }
    for c in ["", "=", &URL_SAFE.encode("id:5"), &"A".repeat(1 << 20)] {
        assert!(is_refused_cursor(&page(Some(c), None, &s)), "{c:.40}");
    }
}
