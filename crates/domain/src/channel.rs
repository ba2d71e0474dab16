//! How a coupon reached its holder ([`Channel`]) and the caller's own label for it
//! ([`Source`]), kept with the coupon for the campaign figures.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::ListingId;

/// How a coupon reached its holder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// Claimed by the user from the template itself.
    #[default]
    Direct,
    /// Claimed by the user from a listing's page (`listing_id` in the claim).
    Listing(ListingId),
    /// Redeemed from a promotion code: a batch's single-use code, or the shared code (`None`).
    Code(Option<i64>),
    /// Issued by a bulk issuance job (an upload or a segment).
    Issuance(i64),
    /// Claimed for the user by the order service (a service key).
    Service,
}

impl Channel {
    /// As stored and reported: `direct`, `listing:12`, `code:shared`, `code:7`,
    /// `issuance:3`, `service`.
    pub fn to_text(self) -> String {
        match self {
            Channel::Direct => "direct".into(),
            Channel::Listing(l) => format!("listing:{}", l.get()),
            Channel::Code(None) => "code:shared".into(),
            Channel::Code(Some(b)) => format!("code:{b}"),
            Channel::Issuance(j) => format!("issuance:{j}"),
            Channel::Service => "service".into(),
        }
    }

    /// The kind alone (`listing` for `listing:12`), for totals per kind.
    pub fn kind_of(text: &str) -> &str {
        text.split(':').next().unwrap_or(text)
    }
}

/// A caller's label for where a claim came from (`app-home`, `sms-campaign-12`): 1 to 64
/// characters of ASCII letters, digits, `-`, `_`, `.` and `:`, so it is safe in a CSV cell,
/// a metric label and a URL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "app-home")]
pub struct Source(String);

impl Source {
    pub const MAX_LEN: usize = 64;

    pub fn parse(s: &str) -> Result<Self, DomainError> {
        let ok = (1..=Self::MAX_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        if ok {
            Ok(Source(s.to_owned()))
        } else {
            Err(DomainError::invalid(
                "source",
                "invalid_value",
                "1 to 64 characters: letters, digits, '-', '_', '.', ':'",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Source {
    type Error = DomainError;
    fn try_from(s: String) -> Result<Self, DomainError> {
        Source::parse(&s)
    }
}

impl From<Source> for String {
    fn from(s: Source) -> String {
        s.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_read_as_stored() {
        let l = ListingId::new(12).unwrap();
        assert_eq!(Channel::Listing(l).to_text(), "listing:12");
        assert_eq!(Channel::Code(None).to_text(), "code:shared");
        assert_eq!(Channel::kind_of("issuance:3"), "issuance");
        assert_eq!(Channel::kind_of("direct"), "direct");
    }

    #[test]
    fn sources_are_short_safe_labels() {
        assert!(Source::parse("sms-campaign-12").is_ok());
        assert!(Source::parse("app.home:v2_b").is_ok());
        for bad in ["", "a b", "=cmd()", "é", &"x".repeat(65)] {
            let e = Source::parse(bad).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("source"), "{bad}");
        }
    }
}
