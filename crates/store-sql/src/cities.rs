//! [`CityStore`](coupond_store::CityStore) on every backend: the
//! platform's names for its cities.

use coupond_domain::{City, CityId, Timestamp};
use coupond_store::{StoreError, StoreResult};

use crate::backend::{Backend, SqlStore};
use crate::{sql, Db, Row, Work};
use coupond_store::CityStore;

/// Names city `id`: inserted if new, then its name set, in one transaction (two platform
/// operators naming one new city at once both succeed, the later name standing).
pub async fn put_city(db: &dyn Db, id: CityId, name: &str, now: Timestamp) -> StoreResult<City> {
    let mut tx = db.begin(Work::Request).await?;
    let q = sql(format!(
        "INSERT INTO cities (id, name, updated_at) VALUES ($1, $2, $3){}",
        db.dialect().on_conflict_nothing("id")
    ))
    .bind(id.get())
    .bind(name)
    .bind(now);
    tx.execute(q).await?;
    let q = sql("UPDATE cities SET name = $1, updated_at = $2 WHERE id = $3")
        .bind(name)
        .bind(now)
        .bind(id.get());
    tx.execute(q).await?;
    let q = sql("SELECT id, name, updated_at FROM cities WHERE id = $1").bind(id.get());
    let row = tx.fetch_one(q).await?;
    tx.commit().await?;
    city(&row)
}

pub async fn cities(db: &dyn Db, after: Option<CityId>, limit: u32) -> StoreResult<Vec<City>> {
    let q = sql("SELECT id, name, updated_at FROM cities WHERE id > $1 ORDER BY id LIMIT $2")
        .bind(after.map_or(0, CityId::get))
        .bind(i64::from(limit));
    db.read_all(q).await?.iter().map(city).collect()
}

fn city(r: &Row) -> StoreResult<City> {
    Ok(City {
        id: CityId::new(r.i64("id")?).map_err(StoreError::corrupt)?,
        name: r.str("name")?.to_owned(),
        updated_at: r.time("updated_at")?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> CityStore for SqlStore<B> {
    async fn put_city(&self, id: CityId, name: &str, now: Timestamp) -> StoreResult<City> {
        put_city(&self.db, id, name, now).await
    }
    async fn cities(&self, after: Option<CityId>, limit: u32) -> StoreResult<Vec<City>> {
        cities(&self.db, after, limit).await
    }
}
