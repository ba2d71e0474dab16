//! [`Reference`]: how the platform's other systems know a template or an activity: the system
//! that created it (`source`, the source designs' `appId`), a free label for its type (`type`,
//! their `cubeType`) and its id there (`external_id`, their `foreignId`; unique per owner, so
//! a sync can find the object again with `?external_id=`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{DomainError, Findings};
use crate::text::check_text;

/// An object's names in other systems; every part optional, each 1 to
/// [`Reference::MAX_CHARS`] visible characters when given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// The system that created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "crm")]
    pub source: Option<String>,
    /// A free label for its type in that system.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schema(example = "spring-campaign")]
    pub label: Option<String>,
    /// Its id in that system: unique per owner (a merchant, or the platform).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "CRM-2026-0042")]
    pub external_id: Option<String>,
}

impl Reference {
    pub const MAX_CHARS: usize = 128;

    /// Nothing given.
    pub fn is_empty(&self) -> bool {
        self.source.is_none() && self.label.is_none() && self.external_id.is_none()
    }

    /// Checks each part given (`invalid_length`, or the text rules), naming every broken one.
    pub fn validate(&self) -> Result<(), DomainError> {
        let mut found = Findings::default();
        let parts = [
            ("reference.source", &self.source),
            ("reference.type", &self.label),
            ("reference.external_id", &self.external_id),
        ];
        for (field, part) in parts {
            if let Some(text) = part {
                found.check(check_text(field, text, 1, Self::MAX_CHARS));
            }
        }
        found.done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_optional_and_checked_when_given() {
        assert!(Reference::default().validate().is_ok());
        let r: Reference =
            serde_json::from_str(r#"{"source": "crm", "type": "cube", "external_id": "A-1"}"#)
                .unwrap();
        assert_eq!(r.label.as_deref(), Some("cube"));
        assert!(r.validate().is_ok());
        let long = Reference {
            external_id: Some("x".repeat(129)),
            ..r.clone()
        };
        let e = long.validate().unwrap_err();
        assert_eq!(e.field.as_deref(), Some("reference.external_id"));
        let blank = Reference {
            source: Some("  ".into()),
            ..r
        };
        assert_eq!(
            blank.validate().unwrap_err().field.as_deref(),
            Some("reference.source")
        );
        assert!(serde_json::from_str::<Reference>(r#"{"kind": "x"}"#).is_err());
    }
}
