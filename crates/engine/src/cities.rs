//! Naming the platform's cities, each change recorded in the audit trail (`city:<id>`, the
//! name before and after). Handlers parse and authorize; this checks and writes.

use coupond_domain::{City, CityDraft, CityId, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::Store;

use crate::campaigns::CampaignError;

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

/// City `id` as named now, if it has a name: the first named city after `id - 1`.
async fn find(store: &dyn Store, id: CityId) -> Result<Option<City>, CampaignError> {
    let before = CityId::new(id.get() - 1).ok();
    let page = store.cities(before, 1).await?;
    Ok(page.into_iter().find(|c| c.id == id))
}
