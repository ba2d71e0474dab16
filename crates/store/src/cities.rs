//! The platform's names for its cities.

use async_trait::async_trait;
use coupond_domain::{City, CityId, Timestamp};

use crate::StoreResult;

/// Cities by name; each method one transaction.
#[async_trait]
pub trait CityStore: Send + Sync {
    /// Names city `id` `name` at `now` (a new name replaces the old one).
    async fn put_city(&self, id: CityId, name: &str, now: Timestamp) -> StoreResult<City>;
    /// Up to `limit` named cities after `after`, by id.
    async fn cities(&self, after: Option<CityId>, limit: u32) -> StoreResult<Vec<City>>;
}
