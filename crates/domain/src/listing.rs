//! Listings (seed `houseId`): a house, room or product a merchant offers.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::{CategoryId, CityId, ListingId, MerchantId};
use crate::merchant::check_text;
use crate::money::Money;
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
    pub fn validate(&self) -> Result<(), DomainError> {
        check_text("title", &self.title, 1, 200)?;
        if let Some(e) = &self.external_id {
            check_text("external_id", e, 1, 100)?;
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
