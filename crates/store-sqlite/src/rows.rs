//! Row conversions and the mapping of driver errors into [`StoreError`], in one place.

use coupond_domain::{
    Activity, ActivityId, CategoryId, CityId, Coupon, CouponId, CouponStatus, Listing,
    ListingDraft, ListingId, Merchant, MerchantId, Money, Template, TemplateId, Timestamp, UserId,
    Window,
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
        // SQLITE_BUSY / SQLITE_LOCKED (any extended code) after the busy timeout: another
        // process holds the lock.
        sqlx::Error::Database(d)
            if d.code()
                .and_then(|c| c.parse::<i32>().ok())
                .is_some_and(|c| matches!(c & 0xff, 5 | 6)) =>
        {
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

fn get<'r, T>(r: &'r SqliteRow, col: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>,
{
    r.try_get(col).map_err(db_err)
}

fn opt_ts(micros: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    micros.map(ts).transpose()
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> Result<T, StoreError> {
    f(v).map_err(StoreError::other)
}

pub(crate) fn merchant(r: &SqliteRow) -> Result<Merchant, StoreError> {
    Ok(Merchant {
        id: id(get(r, "id")?, MerchantId::new)?,
        name: get(r, "name")?,
        short_name: get(r, "short_name")?,
        cities: codec::cities_from_json(get(r, "cities")?)?,
        created_at: ts(get(r, "created_at")?)?,
    })
}

pub(crate) fn api_key(r: &SqliteRow) -> Result<ApiKey, StoreError> {
    let role: String = get(r, "role")?;
    Ok(ApiKey {
        id: get(r, "id")?,
        prefix: get(r, "prefix")?,
        role: Role::parse(&role).ok_or_else(|| StoreError::other("unknown role"))?,
        merchant_id: get::<Option<i64>>(r, "merchant_id")?
            .map(|v| id(v, MerchantId::new))
            .transpose()?,
        label: get(r, "label")?,
        created_at: ts(get(r, "created_at")?)?,
        revoked_at: opt_ts(get(r, "revoked_at")?)?,
    })
}

pub(crate) fn listing(r: &SqliteRow) -> Result<Listing, StoreError> {
    Ok(Listing {
        id: id(get(r, "id")?, ListingId::new)?,
        merchant_id: id(get(r, "merchant_id")?, MerchantId::new)?,
        draft: ListingDraft {
            external_id: get(r, "external_id")?,
            city_id: id(get(r, "city_id")?, CityId::new)?,
            category_id: id(get(r, "category_id")?, CategoryId::new)?,
            title: get(r, "title")?,
            price: Money::new(get(r, "price")?).map_err(StoreError::other)?,
            deposit: Money::new(get(r, "deposit")?).map_err(StoreError::other)?,
        },
        created_at: ts(get(r, "created_at")?)?,
        updated_at: ts(get(r, "updated_at")?)?,
    })
}

pub(crate) fn coupon(r: &SqliteRow) -> Result<Coupon, StoreError> {
    let status: String = get(r, "status")?;
    Ok(Coupon {
        id: id(get(r, "id")?, CouponId::new)?,
        template_id: id(get(r, "template_id")?, TemplateId::new)?,
        user_id: UserId::parse(&get::<String>(r, "user_id")?).map_err(StoreError::other)?,
        stored_status: CouponStatus::parse(&status)
            .ok_or_else(|| StoreError::other("unknown coupon status"))?,
        claimed_at: ts(get(r, "claimed_at")?)?,
        valid_from: ts(get(r, "valid_from")?)?,
        valid_until: ts(get(r, "valid_until")?)?,
    })
}

pub(crate) fn listing_id(r: &SqliteRow) -> Result<ListingId, StoreError> {
    id(get(r, "listing_id")?, ListingId::new)
}

pub(crate) fn activity(r: &SqliteRow) -> Result<Activity, StoreError> {
    Ok(Activity {
        id: id(get(r, "id")?, ActivityId::new)?,
        spec: codec::activity_from_json(get(r, "spec")?)?,
        created_at: ts(get(r, "created_at")?)?,
        updated_at: ts(get(r, "updated_at")?)?,
        aborted_at: opt_ts(get(r, "aborted_at")?)?,
        version: get(r, "version")?,
        enrollment_seq: get(r, "enrollment_seq")?,
    })
}

pub(crate) fn template(r: &SqliteRow) -> Result<Template, StoreError> {
    Ok(Template {
        id: id(get(r, "id")?, TemplateId::new)?,
        merchant_id: get::<Option<i64>>(r, "merchant_id")?
            .map(|v| id(v, MerchantId::new))
            .transpose()?,
        spec: codec::template_from_json(
            get(r, "spec")?,
            Window::new(ts(get(r, "claim_start")?)?, ts(get(r, "claim_end")?)?)
                .map_err(StoreError::other)?,
        )?,
        claimed: get(r, "claimed")?,
        created_at: ts(get(r, "created_at")?)?,
        updated_at: ts(get(r, "updated_at")?)?,
        published_at: opt_ts(get(r, "published_at")?)?,
        aborted_at: opt_ts(get(r, "aborted_at")?)?,
        version: get(r, "version")?,
    })
}
