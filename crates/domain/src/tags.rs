//! User tags: labels coupond holds for users (`vip`, `new`, `city:1`), so a template can be
//! claimed by a segment and bulk issuance can target one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;

/// Most tags one user holds.
pub const MAX_TAGS_PER_USER: usize = 100;
/// Most tags a template's audience or a segment names.
pub const MAX_SEGMENT_TAGS: usize = 20;

/// A tag: 1 to 64 characters of lowercase ASCII letters, digits and `_ . : -`. Validated when
/// built, so a `Tag` can be stored, compared and put in a CSV line as it is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String, example = "vip")]
pub struct Tag(String);

impl Tag {
    pub const MAX_CHARS: usize = 64;

    pub fn parse(s: &str) -> Result<Tag, String> {
        let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.:-".contains(c);
        if s.is_empty() || s.len() > Self::MAX_CHARS || !s.chars().all(ok) {
            return Err(format!(
                "a tag is 1 to {} characters of lowercase letters, digits and _.:-",
                Self::MAX_CHARS
            ));
        }
        Ok(Tag(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Tag::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `tags` as a set (sorted, each once), checked to hold `min..=max` tags; field `field`.
pub fn tag_set(field: &str, tags: &[Tag], min: usize, max: usize) -> Result<Vec<Tag>, DomainError> {
    let set: BTreeSet<Tag> = tags.iter().cloned().collect();
    if set.len() < min || set.len() > max {
        return Err(DomainError::invalid(
            field,
            "invalid_length",
            format!("{min} to {max} distinct tags"),
        ));
    }
    Ok(set.into_iter().collect())
}

/// Which users a segment takes: those holding any of these tags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// 1 to 20 tags.
    pub any: Vec<Tag>,
}

impl Segment {
    /// The segment with its tags as a set, checked (`segment.any`).
    pub fn validate(self) -> Result<Segment, DomainError> {
        Ok(Segment {
            any: tag_set("segment.any", &self.any, 1, MAX_SEGMENT_TAGS)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_lowercase_words() {
        for good in ["vip", "city:1", "new-2026", "a.b_c"] {
            assert_eq!(Tag::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "VIP", "two words", "a,b", "ü", &"x".repeat(65)] {
            assert!(Tag::parse(bad).is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<Tag>("\"Nope\"").is_err());
    }

    #[test]
    fn sets_are_sorted_distinct_and_bounded() {
        let t = |s: &str| Tag::parse(s).unwrap();
        let set = tag_set("tags", &[t("b"), t("a"), t("b")], 0, 10).unwrap();
        assert_eq!(set, vec![t("a"), t("b")]);
        assert!(tag_set("tags", &[], 1, 10).is_err());
        let many: Vec<Tag> = (0..21).map(|i| t(&format!("t{i}"))).collect();
        let e = Segment { any: many }.validate().unwrap_err();
        assert_eq!(e.field.as_deref(), Some("segment.any"));
    }
}
