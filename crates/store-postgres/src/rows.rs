//! Row conversions and the mapping of driver errors into [`StoreError`], in one place.

use coupond_domain::{
    Activity, ActivityId, CategoryId, CityId, Coupon, CouponId, CouponStatus, Listing,
    ListingDraft, ListingId, Merchant, MerchantId, Money, Template, TemplateId, Timestamp, UserId,
    Window,
};
use coupond_store::{codec, ApiKey, Role, StoreError};
use sqlx::postgres::PgRow;
use sqlx::Row;
use time::OffsetDateTime;

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict("unique"),
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            StoreError::Conflict("reference")
        }
        // Class 08 (connection exception), 57P01..03 (admin shutdown, crash, cannot connect
        // now), 53300 (too many connections): the database is not there right now.
        sqlx::Error::Database(d)
            if d.code()
                .is_some_and(|c| c.starts_with("08") || c.starts_with("57P") || c == "53300") =>
        {
            StoreError::Unavailable(d.into())
        }
        e @ (sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
            StoreError::Unavailable(e.into())
        }
        e => StoreError::other(e),
    }
}

fn ts(dt: OffsetDateTime) -> Result<Timestamp, StoreError> {
    Timestamp::from_datetime(dt).ok_or_else(|| StoreError::other("instant out of range"))
}

fn opt_ts(dt: Option<OffsetDateTime>) -> Result<Option<Timestamp>, StoreError> {
    dt.map(ts).transpose()
}

fn get<'r, T>(r: &'r PgRow, col: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    r.try_get(col).map_err(db_err)
}

fn id<T>(v: i64, f: fn(i64) -> Result<T, String>) -> Result<T, StoreError> {
    f(v).map_err(StoreError::other)
}

fn opt_merchant(r: &PgRow) -> Result<Option<MerchantId>, StoreError> {
    get::<Option<i64>>(r, "merchant_id")?
        .map(|v| id(v, MerchantId::new))
        .transpose()
}

pub(crate) fn merchant(r: &PgRow) -> Result<Merchant, StoreError> {
    Ok(Merchant {
        id: id(get(r, "id")?, MerchantId::new)?,
        name: get(r, "name")?,
        short_name: get(r, "short_name")?,
        cities: codec::cities_from_vec(get(r, "cities")?)?,
        created_at: ts(get(r, "created_at")?)?,
    })
}

pub(crate) fn api_key(r: &PgRow) -> Result<ApiKey, StoreError> {
    let role: String = get(r, "role")?;
    Ok(ApiKey {
        id: get(r, "id")?,
        prefix: get(r, "prefix")?,
        role: Role::parse(&role).ok_or_else(|| StoreError::other("unknown role"))?,
        merchant_id: opt_merchant(r)?,
        label: get(r, "label")?,
        created_at: ts(get(r, "created_at")?)?,
        revoked_at: opt_ts(get(r, "revoked_at")?)?,
    })
}

pub(crate) fn listing(r: &PgRow) -> Result<Listing, StoreError> {
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

pub(crate) fn coupon(r: &PgRow) -> Result<Coupon, StoreError> {
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

pub(crate) fn listing_id(r: &PgRow) -> Result<ListingId, StoreError> {
    id(get(r, "listing_id")?, ListingId::new)
}

pub(crate) fn activity(r: &PgRow) -> Result<Activity, StoreError> {
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

pub(crate) fn template(r: &PgRow) -> Result<Template, StoreError> {
    Ok(Template {
        id: id(get(r, "id")?, TemplateId::new)?,
        merchant_id: opt_merchant(r)?,
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
