//! Paging through the application's lists, which answer a page at a time (`limit` up to the
//! `max_page` setting, and `next_cursor` for the rest). A console page either shows one page
//! of [`PER_PAGE`] rows with a "Next page" link carrying the cursor ([`request`], [`rows`],
//! [`next_link`]), or, where it needs the whole set (to sort it, or to offer it in a select),
//! gathers every page up to [`MAX_ROWS`] rows and says when that bound cut it
//! ([`gather_all`]), then shows it [`PER_PAGE`] rows at a time with numbered links
//! ([`Pager`]).

use std::future::Future;

use coupond_api::pagination::PageOf;
use coupond_app::pages::PageRequest;
use serde::Deserialize;

use crate::problem::Problem;
use crate::Console;

/// Rows a console list shows at a time.
pub const PER_PAGE: usize = 100;

/// The most rows a console page gathers from one API list (25 of the API's pages of 200):
/// past it the page says it shows only the first ones, and the operator narrows the list
/// with its filters.
pub const MAX_ROWS: usize = 5_000;

/// Which page of a cursor-paged list: `after` is the API's `next_cursor` of the page before
/// (empty for the first).
#[derive(Debug, Default, Deserialize)]
pub struct After {
    #[serde(default)]
    pub after: String,
}

/// [`MAX_ROWS`] in words (`5,000`), for a page that says it was cut.
pub fn max_rows_words() -> String {
    let n = super::format::money(MAX_ROWS as i64 * 100);
    n.trim_end_matches(".00").to_owned()
}

/// The rows of a list gathered by [`gather_all`].
#[derive(Debug)]
pub struct Gathered<T> {
    /// At most [`MAX_ROWS`], in the list's order.
    pub items: Vec<T>,
    /// Whether rows past [`MAX_ROWS`] were left out.
    pub cut: bool,
}

impl<T> Default for Gathered<T> {
    fn default() -> Self {
        Gathered {
            items: Vec::new(),
            cut: false,
        }
    }
}

/// `path` (an API list, with or without a query) with `more` added to its query.
fn with_query(path: &str, more: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{more}")
}

/// A cursor as the API writes them (base64url): any other character is dropped, so a cursor
/// from a link goes into an API path or a console link unescaped.
pub fn cursor(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_".contains(*c))
        .take(200)
        .collect()
}

/// Rows a page of [`PER_PAGE`] asks for (fewer if the API's `max_page` is lower).
fn per_page(console: &Console) -> u32 {
    let max = console.app().settings().max_page as usize;
    PER_PAGE.min(max).max(1) as u32
}

/// The page of an application list that a console page shows after `after` (a cursor from
/// a link; empty for the first page): [`PER_PAGE`] rows.
pub fn request(console: &Console, after: &str) -> PageRequest {
    PageRequest::after(&cursor(after), per_page(console))
}

/// An application list's page as a console page shows it: its rows and the cursor of the
/// next page (empty on the last).
pub fn rows<T>(page: PageOf<T>) -> (Vec<T>, String) {
    let next = page.next_cursor.as_deref().map(cursor).unwrap_or_default();
    (page.items, next)
}

/// Every row of an application list that `read` answers a page at a time (`max_page` rows
/// each, following `next_cursor`), up to [`MAX_ROWS`].
pub async fn gather_all<T, F, Fut>(console: &Console, mut read: F) -> Result<Gathered<T>, Problem>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = Result<PageOf<T>, Problem>>,
{
    let size = console.app().settings().max_page.max(1);
    let mut all = Gathered::default();
    let mut next = String::new();
    loop {
        let (items, after) = rows(read(PageRequest::after(&next, size)).await?);
        all.items.extend(items);
        next = after;
        if all.items.len() >= MAX_ROWS || next.is_empty() {
            break;
        }
    }
    all.cut = all.items.len() > MAX_ROWS || (all.items.len() == MAX_ROWS && !next.is_empty());
    all.items.truncate(MAX_ROWS);
    Ok(all)
}

/// The link to the page after this one: `base` (a console path with or without a query)
/// with `after` set to the API's cursor; `None` on the last page.
pub fn next_link(base: &str, next: &str) -> Option<String> {
    let next = cursor(next);
    (!next.is_empty()).then(|| with_query(base, &format!("after={next}")))
}

/// A numbered page of gathered rows and the links to the others.
#[derive(Debug, Clone, Default)]
pub struct Pager {
    /// The page shown, from 1.
    pub page: usize,
    pub pages: usize,
    /// Every page's number and link.
    pub links: Vec<(usize, String)>,
    pub previous: Option<String>,
    pub next: Option<String>,
}

impl Pager {
    /// Page `page` (from 1; out of range is the nearest page) of `total` rows, each page
    /// linked as `base` (a console path with a query) with `page=N` added.
    pub fn new(base: &str, total: usize, page: usize) -> Self {
        let pages = total.div_ceil(PER_PAGE).max(1);
        let page = page.clamp(1, pages);
        let href = |n: usize| with_query(base, &format!("page={n}"));
        Pager {
            page,
            pages,
            links: (1..=pages).map(|n| (n, href(n))).collect(),
            previous: (page > 1).then(|| href(page - 1)),
            next: (page < pages).then(|| href(page + 1)),
        }
    }

    /// This page's rows of `rows`.
    pub fn slice<T>(&self, rows: Vec<T>) -> Vec<T> {
        rows.into_iter()
            .skip((self.page - 1) * PER_PAGE)
            .take(PER_PAGE)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_number_from_one_and_keep_the_query() {
        let p = Pager::new("/console/templates?status=active", 201, 3);
        assert_eq!((p.page, p.pages), (3, 3));
        assert_eq!(p.next, None);
        assert_eq!(
            p.previous.as_deref(),
            Some("/console/templates?status=active&page=2")
        );
        assert_eq!(p.slice((0..201).collect()), vec![200]);
        let first = Pager::new("/console/templates", 0, 9);
        assert_eq!((first.page, first.pages, first.links.len()), (1, 1, 1));
        assert_eq!(Pager::new("/x", 100, 1).next, None);
        assert_eq!(max_rows_words(), "5,000");
    }

    #[test]
    fn a_cursor_keeps_only_its_own_characters() {
        assert_eq!(cursor("aWQ6MjAw-_\"><script>"), "aWQ6MjAw-_script");
        assert_eq!(
            next_link("/console/users?user=u-1", "aWQ6MjAw"),
            Some("/console/users?user=u-1&after=aWQ6MjAw".to_owned())
        );
        assert_eq!(next_link("/console/merchants", ""), None);
        let (items, next) = rows(PageOf {
            items: vec![1, 2],
            next_cursor: Some("abc\"<".to_owned()),
        });
        assert_eq!((items.len(), next.as_str()), (2, "abc"));
        let last: PageOf<i32> = PageOf {
            items: vec![],
            next_cursor: None,
        };
        assert!(rows(last).1.is_empty());
    }
}
