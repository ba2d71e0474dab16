//! Merchants (seed `companyId`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::{CitySet, MerchantId};
use crate::text::check_text;
use crate::time::Timestamp;

/// What the platform sends to create a merchant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MerchantDraft {
    /// 1 to 200 characters.
    #[schema(example = "Sunny Homes Ltd.")]
    pub name: String,
    /// 1 to 50 characters, shown to users.
    #[schema(example = "Sunny")]
    pub short_name: String,
    /// Cities the merchant operates in.
    pub cities: CitySet,
}

impl MerchantDraft {
    pub fn validate(&self) -> Result<(), DomainError> {
        check_text("name", &self.name, 1, 200)?;
        check_text("short_name", &self.short_name, 1, 50)
    }
}

/// A stored merchant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Merchant {
    pub id: MerchantId,
    pub name: String,
    pub short_name: String,
    pub cities: CitySet,
    pub created_at: Timestamp,
}
