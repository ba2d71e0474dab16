//! Small lists a filter or form offers as a select of names instead of an id typed by hand:
//! the merchants (the platform's), from the names the page already read, when they are no
//! more than one API page. Past that the form keeps a labelled id box: a select of thousands
//! helps nobody.

use super::names::MerchantNames;
use crate::session::Session;
use crate::Console;

/// An option of a select: (value, label).
pub type Choice = (String, String);

/// Every merchant of `names` as (id, "Name (#id)"), by name, if they fit in one API page;
/// `None` past it, or when the caller may not list merchants.
pub fn merchants(
    console: &Console,
    session: &Session,
    names: &MerchantNames,
) -> Option<Vec<Choice>> {
    let size = console.app().settings().max_page as usize;
    if !session.is_platform() || names.count() > size {
        return None;
    }
    let mut all: Vec<Choice> = names
        .iter()
        .map(|(id, name)| (id.to_string(), format!("{name} (#{id})")))
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
