//! Row conversions and the mapping of driver errors into [`StoreError`], in one place.

use coupond_domain::{
    Activity, ActivityId, CategoryId, CityId, Listing, ListingDraft, ListingId, Merchant,
    MerchantId, Money, Template, TemplateId, Timestamp,
};
use coupond_store::{codec, ApiKey, Role, StoreError};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict("unique"),
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::Conflict("reference")
        }
        // SQLITE_BUSY / SQLITE_LOCKED after the busy timeout: another process holds the lock.
        sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("5" | "6" | "517")) => {
            StoreError::Unavailable(d.into())
        }
        e @ (sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
            StoreError::Unavailable(e.into())
        }
        e => StoreError::other(e),
    }
}

pub(crate) fn ts(micros: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_micros(micros).ok_or_else(|| StoreError::other("instant out of range"))
}

fn opt_ts(micros: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    micros.map(ts).transpose()
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> Result<T, StoreError> {
    f(v).map_err(StoreError::other)
}

pub(crate) fn merchant(r: &SqliteRow) -> Result<Merchant, StoreError> {
    Ok(Merchant {
        id: id(r.try_get("id").map_err(db_err)?, MerchantId::new)?,
        name: r.try_get("name").map_err(db_err)?,
        short_name: r.try_get("short_name").map_err(db_err)?,
        cities: codec::cities_from_json(r.try_get("cities").map_err(db_err)?)?,
        created_at: ts(r.try_get("created_at").map_err(db_err)?)?,
    })
}

pub(crate) fn api_key(r: &SqliteRow) -> Result<ApiKey, StoreError> {
    let role: String = r.try_get("role").map_err(db_err)?;
    Ok(ApiKey {
        id: r.try_get("id").map_err(db_err)?,
        prefix: r.try_get("prefix").map_err(db_err)?,
        role: Role::parse(&role).ok_or_else(|| StoreError::other("unknown role"))?,
        merchant_id: r
            .try_get::<Option<i64>, _>("merchant_id")
            .map_err(db_err)?
            .map(|v| id(v, MerchantId::new))
            .transpose()?,
        label: r.try_get("label").map_err(db_err)?,
        created_at: ts(r.try_get("created_at").map_err(db_err)?)?,
        revoked_at: opt_ts(r.try_get("revoked_at").map_err(db_err)?)?,
    })
}

pub(crate) fn listing(r: &SqliteRow) -> Result<Listing, StoreError> {
    Ok(Listing {
        id: id(r.try_get("id").map_err(db_err)?, ListingId::new)?,
        merchant_id: id(r.try_get("merchant_id").map_err(db_err)?, MerchantId::new)?,
        draft: ListingDraft {
            external_id: r.try_get("external_id").map_err(db_err)?,
            city_id: id(r.try_get("city_id").map_err(db_err)?, CityId::new)?,
            category_id: id(r.try_get("category_id").map_err(db_err)?, CategoryId::new)?,
            title: r.try_get("title").map_err(db_err)?,
            price: Money::new(r.try_get("price").map_err(db_err)?).map_err(StoreError::other)?,
            deposit: Money::new(r.try_get("deposit").map_err(db_err)?)
                .map_err(StoreError::other)?,
        },
        created_at: ts(r.try_get("created_at").map_err(db_err)?)?,
        updated_at: ts(r.try_get("updated_at").map_err(db_err)?)?,
    })
}

pub(crate) fn activity(r: &SqliteRow) -> Result<Activity, StoreError> {
    Ok(Activity {
        id: id(r.try_get("id").map_err(db_err)?, ActivityId::new)?,
        spec: codec::activity_from_json(r.try_get("spec").map_err(db_err)?)?,
        created_at: ts(r.try_get("created_at").map_err(db_err)?)?,
        updated_at: ts(r.try_get("updated_at").map_err(db_err)?)?,
        aborted_at: opt_ts(r.try_get("aborted_at").map_err(db_err)?)?,
        version: r.try_get("version").map_err(db_err)?,
        enrollment_seq: r.try_get("enrollment_seq").map_err(db_err)?,
    })
}

pub(crate) fn template(r: &SqliteRow) -> Result<Template, StoreError> {
    Ok(Template {
        id: id(r.try_get("id").map_err(db_err)?, TemplateId::new)?,
        merchant_id: r
            .try_get::<Option<i64>, _>("merchant_id")
            .map_err(db_err)?
            .map(|v| id(v, MerchantId::new))
            .transpose()?,
        spec: codec::template_from_json(r.try_get("spec").map_err(db_err)?)?,
        claimed: r.try_get("claimed").map_err(db_err)?,
        created_at: ts(r.try_get("created_at").map_err(db_err)?)?,
        updated_at: ts(r.try_get("updated_at").map_err(db_err)?)?,
        published_at: opt_ts(r.try_get("published_at").map_err(db_err)?)?,
        aborted_at: opt_ts(r.try_get("aborted_at").map_err(db_err)?)?,
        version: r.try_get("version").map_err(db_err)?,
    })
}
