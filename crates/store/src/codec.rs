//! The JSON encoding of a record's nested parts, shared by every backend so that a record
//! reads back identically from either.
//!
//! Each record is stored as queryable columns (ids, windows, counters) plus a `spec` JSON
//! document holding the whole draft. The columns are written from the same spec in the same
//! statement, so they cannot disagree; reads rebuild the domain value from `spec`, through
//! the stored record types of [`records`](crate::records), which tolerate fields a newer
//! version added and check the invariants every record keeps.

use coupond_domain::{ActivitySpec, CitySet, TemplateSpec, Window};

use crate::error::StoreError;
use crate::records::{ActivityRecord, TemplateRecord};

pub fn activity_to_json(spec: &ActivitySpec) -> Result<String, StoreError> {
    serde_json::to_string(&ActivityRecord::from_spec(spec)).map_err(StoreError::other)
}

/// The spec of activity `id` from its stored JSON; [`StoreError::Corrupt`] if it cannot be
/// read or breaks an invariant.
pub fn activity_from_json(id: i64, s: &str) -> Result<ActivitySpec, StoreError> {
    serde_json::from_str::<ActivityRecord>(s)
        .map_err(|e| StoreError::corrupt(format!("activity spec: {e}")))
        .and_then(ActivityRecord::into_spec)
        .map_err(|e| in_record("activity", id, e))
}

pub fn template_to_json(spec: &TemplateSpec) -> Result<String, StoreError> {
    serde_json::to_string(&TemplateRecord::from_spec(spec)).map_err(StoreError::other)
}

/// The spec of template `id` from its JSON and the resolved claim window kept in the
/// `claim_start` and `claim_end` columns (the draft holds no window when it follows its
/// activity's); [`StoreError::Corrupt`] if it cannot be read or breaks an invariant.
pub fn template_from_json(
    id: i64,
    s: &str,
    claim_window: Window,
) -> Result<TemplateSpec, StoreError> {
    serde_json::from_str::<TemplateRecord>(s)
        .map_err(|e| StoreError::corrupt(format!("template spec: {e}")))
        .and_then(|r| r.into_spec(claim_window))
        .map_err(|e| in_record("template", id, e))
}

fn in_record(table: &str, id: i64, e: StoreError) -> StoreError {
    match e {
        StoreError::Corrupt(what) => StoreError::Corrupt(format!("{table} {id}: {what}")),
        other => other,
    }
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
