//! [`Note`]: why a person did something (a revoke's or a refund's reason), as it is logged
//! and shown to other people.

use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::text::check_text;

/// A reason a person gave: 1 to [`Note::MAX_CHARS`] characters that draw something, with no
/// control or bidirectional characters (the rules of [`text`](crate::text)). Validated when
/// built, so a `Note` is always fit to log and show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Note(String);

impl Note {
    pub const MAX_CHARS: usize = 500;

    /// Checks `text` as field `field`.
    pub fn parse(field: &str, text: &str) -> Result<Note, DomainError> {
        check_text(field, text, 1, Self::MAX_CHARS)?;
        Ok(Note(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Note {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Note::parse("reason", &s).map_err(|e| serde::de::Error::custom(e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_visible_bounded_text() {
        assert_eq!(Note::parse("reason", "fraud").unwrap().as_str(), "fraud");
        for bad in ["", "   ", "\u{202E}x", "a\u{0007}b"] {
            assert!(Note::parse("reason", bad).is_err(), "{bad:?}");
        }
        let long = "x".repeat(Note::MAX_CHARS + 1);
        let e = Note::parse("reason", &long).unwrap_err();
        assert_eq!(
            (e.field.as_deref(), e.code),
            (Some("reason"), "invalid_length")
        );
    }
}
