//! The JSON encoding of a record's nested parts, shared by every backend so that a record
//! reads back identically from either.
//!
//! Each record is stored as queryable columns (ids, windows, counters) plus a `spec` JSON
//! document holding the whole draft. The columns are written from the same spec in the same
//! statement, so they cannot disagree; reads rebuild the domain value from `spec`.

use coupond_domain::{ActivityDraft, ActivitySpec, CitySet, TemplateDraft, TemplateSpec, Window};

use crate::error::StoreError;

pub fn activity_to_json(spec: &ActivitySpec) -> Result<String, StoreError> {
    serde_json::to_string(spec).map_err(StoreError::other)
}

pub fn activity_from_json(s: &str) -> Result<ActivitySpec, StoreError> {
    let draft: ActivityDraft = serde_json::from_str(s).map_err(StoreError::other)?;
    Ok(ActivitySpec::from_stored(draft))
}

pub fn template_to_json(spec: &TemplateSpec) -> Result<String, StoreError> {
    serde_json::to_string(spec).map_err(StoreError::other)
}

/// The spec from its JSON and the resolved claim window kept in the `claim_start` and
/// `claim_end` columns (the draft holds no window when it follows its activity's).
pub fn template_from_json(s: &str, claim_window: Window) -> Result<TemplateSpec, StoreError> {
    let draft: TemplateDraft = serde_json::from_str(s).map_err(StoreError::other)?;
    Ok(TemplateSpec::from_stored(draft, claim_window))
}

pub fn cities_to_json(c: &CitySet) -> String {
    let ids: Vec<i64> = c.iter().map(|c| c.get()).collect();
    serde_json::Value::from(ids).to_string()
}

pub fn cities_from_json(s: &str) -> Result<CitySet, StoreError> {
    serde_json::from_str(s).map_err(StoreError::other)
}

pub fn cities_to_vec(c: &CitySet) -> Vec<i64> {
    c.iter().map(|c| c.get()).collect()
}

pub fn cities_from_vec(v: Vec<i64>) -> Result<CitySet, StoreError> {
    let ids = v
        .into_iter()
        .map(coupond_domain::CityId::new)
        .collect::<Result<Vec<_>, _>>()
        .map_err(StoreError::other)?;
    CitySet::new(ids).map_err(StoreError::other)
}
