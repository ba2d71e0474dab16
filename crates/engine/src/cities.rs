//! Naming the platform's cities, each change recorded in the audit trail (`city:<id>`, the
//! name before and after). Handlers parse and authorize; this checks and writes.

use coupond_domain::{City, CityDraft, CityId, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::Store;

use crate::campaigns::CampaignError;

/// How many named cities one read of the whole list takes at most (the console's pickers and
/// names read them all; a platform has tens or hundreds).
pub const MAX_CITIES_READ: u32 = 2_000;

/// Names city `id` (or renames it); the same name again changes and records nothing.
pub async fn name(
    store: &dyn Store,
    id: CityId,
    draft: &CityDraft,
    now: Timestamp,
) -> Result<City, CampaignError> {
    draft.validate()?;
    let before = find(store, id).await?;
    if let Some(c) = before.as_ref().filter(|c| c.name == draft.name) {
        return Ok(c.clone());
    }
    let change = Change::new("city.name", "city", now)
        .object(id.get())
        .before(&before.map(|c| serde_json::json!({ "name": c.name })))
        .after(&serde_json::json!({ "name": draft.name }));
    Ok(audit::change(change, store.put_city(id, &draft.name, now)).await?)
}

/// Every named city, by id (at most [`MAX_CITIES_READ`]).
pub async fn all(store: &dyn Store) -> Result<Vec<City>, CampaignError> {
    let mut out: Vec<City> = Vec::new();
    loop {
        let page = store.cities(out.last().map(|c| c.id), 500).await?;
        let done = page.len() < 500;
        out.extend(page);
        if done || out.len() >= MAX_CITIES_READ as usize {
            return Ok(out);
        }
    }
}

async fn find(store: &dyn Store, id: CityId) -> Result<Option<City>, CampaignError> {
    let before = CityId::new(id.get() - 1).ok();
    let page = store.cities(before, 1).await?;
    Ok(page.into_iter().find(|c| c.id == id))
}
