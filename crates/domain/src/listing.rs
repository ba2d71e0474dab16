//! Listings (seed `houseId`): a house, room or product a merchant offers.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::{CategoryId, CityId, ListingId, MerchantId};
use crate::merchant::Merchant;
use crate::money::Money;
use crate::text::check_text;
use crate::time::Timestamp;

/// What a merchant sends to create a listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListingDraft {
    /// The merchant's own id for it (1 to 100 characters), unique per merchant, so a catalogue
    /// can be synced idempotently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    pub city_id: CityId,
    pub category_id: CategoryId,
    /// 1 to 200 characters.
    pub title: String,
    /// Monthly rent or unit price, minor units.
    pub price: Money,
    /// Deposit, minor units.
    #[serde(default)]
    pub deposit: Money,
}

impl ListingDraft {
    /// Checks the listing for `merchant`: its text, and a city the merchant serves (the same
    /// rule as templates: users searching a city never see listings of merchants not there).
    pub fn validate(&self, merchant: &Merchant) -> Result<(), DomainError> {
        check_text("title", &self.title, 1, 200)?;
        if let Some(e) = &self.external_id {
            check_text("external_id", e, 1, 100)?;
        }
        if !merchant.cities.contains(self.city_id) {
            return Err(DomainError::invalid(
                "city_id",
                "city_not_served",
                "the listing's city must be one the merchant operates in",
            ));
        }
        Ok(())
    }
}

/// A stored listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Listing {
    pub id: ListingId,
    pub merchant_id: MerchantId,
    #[serde(flatten)]
    pub draft: ListingDraft,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Listing {
    /// Whether a template owned by `template_owner` (`None`: issued by the platform) may be
    /// bound to this listing, or unbound from it, by `caller` (`None`: the platform): a
    /// merchant its own templates to its own listings; the platform its own templates to any
    /// listing, so platform-funded coupons show where users browse.
    pub fn may_bind(&self, template_owner: Option<MerchantId>, caller: Option<MerchantId>) -> bool {
        match caller {
            Some(m) => self.merchant_id == m && template_owner == Some(m),
            None => template_owner.is_none(),
        }
    }
}

/// A partial update of a listing; fields left out keep their value. `external_id: null`
/// removes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListingPatch {
    #[serde(default, deserialize_with = "crate::activity::double_option")]
    #[schema(value_type = Option<String>)]
    pub external_id: Option<Option<String>>,
    #[schema(value_type = Option<i64>)]
    pub city_id: Option<CityId>,
    #[schema(value_type = Option<i64>)]
    pub category_id: Option<CategoryId>,
    pub title: Option<String>,
    #[schema(value_type = Option<i64>)]
    pub price: Option<Money>,
    #[schema(value_type = Option<i64>)]
    pub deposit: Option<Money>,
}

impl ListingPatch {
    /// The patched draft, validated as a whole for `merchant`.
    pub fn apply(
        self,
        base: &ListingDraft,
        merchant: &Merchant,
    ) -> Result<ListingDraft, DomainError> {
        let b = base.clone();
        let d = ListingDraft {
            external_id: self.external_id.unwrap_or(b.external_id),
            city_id: self.city_id.unwrap_or(b.city_id),
            category_id: self.category_id.unwrap_or(b.category_id),
            title: self.title.unwrap_or(b.title),
            price: self.price.unwrap_or(b.price),
            deposit: self.deposit.unwrap_or(b.deposit),
        };
        d.validate(merchant)?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merchant(cities: &[i64]) -> Merchant {
        Merchant {
            id: MerchantId::new(1).unwrap(),
            name: "M".into(),
            short_name: "M".into(),
            cities: serde_json::from_value(serde_json::json!(cities)).unwrap(),
            created_at: Timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
        }
    }

    #[test]
    fn listings_are_in_cities_their_merchant_serves() {
        let base: ListingDraft =
            serde_json::from_str(r#"{"city_id":1,"category_id":2,"title":"Flat","price":100}"#)
                .unwrap();
        assert!(base.validate(&merchant(&[1, 2])).is_ok());
        let e = base.validate(&merchant(&[2])).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("city_not_served", Some("city_id"))
        );
        let far: ListingPatch = serde_json::from_str(r#"{"city_id":9223372036854775807}"#).unwrap();
        let e = far.apply(&base, &merchant(&[1, 2])).unwrap_err();
        assert_eq!(e.code, "city_not_served");
    }

    #[test]
    fn patch_clears_external_id_and_revalidates() {
        let m = merchant(&[1]);
        let base: ListingDraft = serde_json::from_str(
            r#"{"external_id":"h-1","city_id":1,"category_id":2,"title":"Flat","price":100}"#,
        )
        .unwrap();
        assert_eq!(base.deposit, Money::ZERO);
        let p: ListingPatch = serde_json::from_str(r#"{"external_id":null,"price":250}"#).unwrap();
        let d = p.apply(&base, &m).unwrap();
        assert_eq!((d.external_id, d.price.minor()), (None, 250));
        let p: ListingPatch = serde_json::from_str(r#"{"title":""}"#).unwrap();
        assert_eq!(
            p.apply(&base, &m).unwrap_err().field.as_deref(),
            Some("title")
        );
        assert!(serde_json::from_str::<ListingPatch>(r#"{"merchant_id":3}"#).is_err());
    }
}
