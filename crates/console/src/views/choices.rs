//! Small lists a filter or form offers as a select of names instead of an id typed by hand:
//! the merchants (the platform's), read in one API page. Past that page the form keeps a
//! labelled id box: a select of thousands helps nobody.

use coupond_api::pagination::PageOf;
use coupond_domain::Merchant;

use crate::session::Session;
use crate::Console;

/// An option of a select: (value, label).
pub type Choice = (String, String);

/// Every merchant as (id, "Name (#id)"), by name, if they fit in one API page; `None` past
/// it, or when the caller may not list merchants.
pub async fn merchants(console: &Console, session: &Session) -> Option<Vec<Choice>> {
    if !session.is_platform() {
        return None;
    }
    let size = console.app().settings().max_page;
    let page = console
        .api()
        .get(&session.caller, &format!("/v1/merchants?limit={size}"))
        .await
        .into::<PageOf<Merchant>>()
        .ok()?;
    if page.next_cursor.is_some() {
        return None;
    }
    let mut all: Vec<Choice> = page
        .items
        .iter()
        .map(|m| (m.id.to_string(), format!("{} (#{})", m.name, m.id)))
        .collect();
    all.sort_by_key(|c| c.1.to_lowercase());
    Some(all)
}

/// The label of `id` among `choices`, or the id itself.
pub fn label_of(choices: Option<&[Choice]>, id: &str) -> String {
    choices
        .and_then(|c| c.iter().find(|(v, _)| v == id))
        .map_or_else(|| id.to_owned(), |(_, l)| l.clone())
}
