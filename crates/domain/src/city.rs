//! Cities by name: the platform keeps the list, so pages and answers can say "Lisbon (1)"
//! where ids alone said "city 1". Ids stay what every rule compares; a city without a name is
//! still a city (shown by its id).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::CityId;
use crate::text::check_text;
use crate::time::Timestamp;

/// What the platform sends to name a city.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CityDraft {
    /// 1 to 80 characters.
    #[schema(example = "Lisbon")]
    pub name: String,
}

impl CityDraft {
    pub fn validate(&self) -> Result<(), DomainError> {
        check_text("name", &self.name, 1, 80)
    }
}

/// A named city.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct City {
    pub id: CityId,
    pub name: String,
    /// When its name was last set.
    pub updated_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_to_eighty_characters() {
        let named = |n: &str| CityDraft { name: n.into() }.validate();
        assert!(named("Lisbon").is_ok());
        assert!(named("").is_err());
        assert!(named(&"x".repeat(81)).is_err());
        assert!(named(&"x".repeat(80)).is_ok());
    }
}
