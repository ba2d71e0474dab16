//! Names where the application gives ids: cities ("Lisbon (1)"), merchants ("Harbour Homes (1)") and
//! activities, read once per page. A name is a help, not a rule: when one cannot be read the
//! page still shows the id ("city 7", "merchant 3").

use std::collections::BTreeMap;

use coupond_app::merchants::{self, MerchantFilter};
use coupond_domain::{CityId, CitySet};

use super::paging::gather_all;
use crate::session::Session;
use crate::Console;

/// The names of the platform's cities, read once per page.
#[derive(Clone, Debug, Default)]
pub struct CityNames(BTreeMap<i64, String>);

impl CityNames {
    /// Every named city (a page without them still shows ids: names are a help, not a rule).
    pub async fn load(console: &Console, session: &Session) -> CityNames {
        let app = console.app();
        let read = |page| async move {
            let cities = app.cities(page);
            session.act(app, merchants::CITIES, cities).await
        };
        let cities = gather_all(console, read).await.unwrap_or_default();
        CityNames(
            cities
                .items
                .into_iter()
                .map(|c| (c.id.get(), c.name))
                .collect(),
        )
    }

    /// One city: "Lisbon (1)", or "city 7" when it has no name.
    pub fn one(&self, id: i64) -> String {
        match self.0.get(&id) {
            Some(name) => format!("{name} ({id})"),
            None => format!("city {id}"),
        }
    }

    /// Several cities, in order, separated by commas.
    pub fn list(&self, ids: impl IntoIterator<Item = CityId>) -> String {
        let named: Vec<String> = ids.into_iter().map(|c| self.one(c.get())).collect();
        named.join(", ")
    }

    /// What a form's cities field says it takes: the ids, and the named cities to pick from.
    pub fn hint(&self) -> String {
        if self.0.is_empty() {
            return "City ids, separated by commas".to_owned();
        }
        let known: Vec<String> = self.0.iter().map(|(id, n)| format!("{id} {n}")).collect();
        format!("City ids, separated by commas: {}", known.join(", "))
    }
}

/// The cities a form's cities field names (ids separated by commas, as [`CityNames::hint`]
/// says), or why not.
pub fn typed_cities(s: &str) -> Result<CitySet, String> {
    let ids: Option<Vec<CityId>> = s
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| c.parse::<i64>().ok().and_then(|c| CityId::new(c).ok()))
        .collect();
    CitySet::new(ids.ok_or("city ids, separated by commas")?)
}

/// The names of the merchants the caller may see: every merchant for the platform, its own
/// for a merchant.
#[derive(Clone, Debug, Default)]
pub struct MerchantNames(BTreeMap<i64, String>);

impl MerchantNames {
    pub async fn load(console: &Console, session: &Session) -> MerchantNames {
        let app = console.app();
        let merchants = match session.principal.merchant() {
            Some(own) => {
                let one = app.merchant(&session.principal, own);
                session
                    .act(app, merchants::READ, one)
                    .await
                    .map(|m| vec![m])
            }
            None => {
                let read = |page| async move {
                    let all = app.merchants(MerchantFilter::default(), page);
                    session.act(app, merchants::LIST, all).await
                };
                gather_all(console, read).await.map(|g| g.items)
            }
        };
        let all = merchants.unwrap_or_default();
        MerchantNames(all.into_iter().map(|m| (m.id.get(), m.name)).collect())
    }

    /// How many merchants are named.
    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// Each named merchant: id and name, by id.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &str)> {
        self.0.iter().map(|(id, name)| (*id, name.as_str()))
    }

    /// "Harbour Homes (1)", or "merchant 1" when its name cannot be read.
    pub fn one(&self, id: i64) -> String {
        match self.0.get(&id) {
            Some(name) => format!("{name} ({id})"),
            None => format!("merchant {id}"),
        }
    }
}

/// An activity's title with its id ("Spring festival (2)"), or "activity 2" when it cannot
/// be read.
pub async fn activity_title(console: &Console, session: &Session, id: i64) -> String {
    super::activities::read(console, session, id)
        .await
        .map_or_else(
            |_| format!("activity {id}"),
            |a| format!("{} ({id})", a.terms.title),
        )
}
