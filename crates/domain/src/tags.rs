//! User tags: labels coupond holds for users (`vip`, `new`, `city:1`), so a template can be
//! claimed by a segment and bulk issuance can target one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::time::Timestamp;

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

/// The most days `active_within_days` may reach back (ten years).
pub const MAX_ACTIVE_WITHIN_DAYS: u32 = 3650;

/// Which users a segment takes: those holding any of these tags, and (with
/// `active_within_days`) seen within that many days.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// 1 to 20 tags.
    pub any: Vec<Tag>,
    /// Only users seen (`POST /v1/users/{id}/seen`, or any request of theirs) within this
    /// many days, 1 to 3650; absent: every holder of the tags, seen or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_within_days: Option<u32>,
}

impl Segment {
    /// The segment with its tags as a set, checked (`segment.any`,
    /// `segment.active_within_days`).
    pub fn validate(self) -> Result<Segment, DomainError> {
        if let Some(days) = self.active_within_days {
            if !(1..=MAX_ACTIVE_WITHIN_DAYS).contains(&days) {
                return Err(DomainError::invalid(
                    "segment.active_within_days",
                    "invalid_value",
                    format!("1 to {MAX_ACTIVE_WITHIN_DAYS} days"),
                ));
            }
        }
        Ok(Segment {
            any: tag_set("segment.any", &self.any, 1, MAX_SEGMENT_TAGS)?,
            active_within_days: self.active_within_days,
        })
    }

    /// The earliest instant a user must have been seen at to be in the segment at `now`;
    /// `None`: no such condition.
    pub fn seen_since(&self, now: Timestamp) -> Option<Timestamp> {
        self.active_within_days
            .map(|d| now.minus(time::Duration::days(i64::from(d))))
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
        let e = Segment {
            any: many,
            active_within_days: None,
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("segment.any"));
    }

    #[test]
    fn active_within_days_is_bounded_and_reaches_back_from_now() {
        let seg = |days| Segment {
            any: vec![Tag::parse("vip").unwrap()],
            active_within_days: Some(days),
        };
        for bad in [0, 3651] {
            let e = seg(bad).validate().unwrap_err();
            assert_eq!(e.field.as_deref(), Some("segment.active_within_days"));
        }
        let now = Timestamp::parse("2027-01-10T00:00:00Z").unwrap();
        let s = seg(30).validate().unwrap();
        assert_eq!(
            s.seen_since(now),
            Some(Timestamp::parse("2026-12-11T00:00:00Z").unwrap())
        );
        let all: Segment = serde_json::from_str(r#"{"any": ["vip"]}"#).unwrap();
        assert_eq!(all.seen_since(now), None);
    }
}
