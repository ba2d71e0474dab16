//! Merchants (seed `companyId`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{DomainError, Findings};
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
        let mut found = Findings::default();
        found.check(check_text("name", &self.name, 1, 200));
        found.check(check_text("short_name", &self.short_name, 1, 50));
        found.done()
    }
}

/// A stored merchant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Merchant {
    pub id: MerchantId,
    pub name: String,
    pub short_name: String,
    pub cities: CitySet,
    pub created_at: Timestamp,
}

impl Merchant {
    /// The merchant's terms as a draft, the base a patch applies to.
    pub fn draft(&self) -> MerchantDraft {
        MerchantDraft {
            name: self.name.clone(),
            short_name: self.short_name.clone(),
            cities: self.cities.clone(),
        }
    }
}

/// A partial update of a merchant: fields left out keep their value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MerchantPatch {
    /// 1 to 200 characters.
    pub name: Option<String>,
    /// 1 to 50 characters, shown to users.
    pub short_name: Option<String>,
    /// Cities the merchant operates in (replaces the set). Its listings, templates and
    /// enrollments stay as they are; the new set decides what it may enroll in next.
    pub cities: Option<CitySet>,
}

impl MerchantPatch {
    /// The patched draft, validated as a whole.
    pub fn apply(self, base: &Merchant) -> Result<MerchantDraft, DomainError> {
        let draft = MerchantDraft {
            name: self.name.unwrap_or_else(|| base.name.clone()),
            short_name: self.short_name.unwrap_or_else(|| base.short_name.clone()),
            cities: self.cities.unwrap_or_else(|| base.cities.clone()),
        };
        draft.validate()?;
        Ok(draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merchant() -> Merchant {
        Merchant {
            id: MerchantId::new(1).unwrap(),
            name: "Sunny Homes Ltd.".into(),
            short_name: "Sunny".into(),
            cities: serde_json::from_str("[1, 2]").unwrap(),
            created_at: Timestamp::from_unix_micros(0).unwrap(),
        }
    }

    #[test]
    fn a_patch_keeps_what_it_leaves_out() {
        let patch = MerchantPatch {
            short_name: Some("Sun".into()),
            ..MerchantPatch::default()
        };
        let d = patch.apply(&merchant()).unwrap();
        assert_eq!(d.short_name, "Sun");
        assert_eq!(d.name, "Sunny Homes Ltd.");
        assert_eq!(d.cities, merchant().cities);
    }

    #[test]
    fn a_patched_draft_is_validated_whole() {
        let patch = MerchantPatch {
            name: Some(String::new()),
            ..MerchantPatch::default()
        };
        let e = patch.apply(&merchant()).unwrap_err();
        assert!(e.to_string().contains("name"), "{e}");
    }
}
