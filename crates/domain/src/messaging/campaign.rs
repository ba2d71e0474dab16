//! An operator's campaign message about a template: a title and a message sent to the
//! template's holders or to a segment, through each user's inbox and the outside channels
//! they can be reached on and did not turn campaigns off for.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::tags::Segment;
use crate::text::check_text;

/// The longest title (it is the email's subject).
pub const MAX_TITLE: usize = 120;
/// The longest message: it is an SMS's whole text too, so it stays within one long SMS.
pub const MAX_MESSAGE: usize = 500;

/// Who a campaign message goes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// Every user holding an unused coupon of the template, valid when the message goes.
    Holders,
    /// Every user of the segment (with `active_within_days`, only those seen lately).
    Segment(Segment),
}

/// A campaign message as asked: `{"title": ..., "message": ..., "segment": {...}}`; without
/// `segment`, it goes to the template's holders.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignDraft {
    /// 1 to 120 characters: the email's subject, the inbox message's title.
    pub title: String,
    /// 1 to 500 characters: the email's and the inbox message's text, and the SMS.
    pub message: String,
    /// Absent: the template's holders. A segment: its users (a merchant's only through the
    /// tags the platform shares).
    #[serde(default)]
    pub segment: Option<Segment>,
}

/// A checked campaign message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Campaign {
    title: String,
    message: String,
    audience: Audience,
}

impl CampaignDraft {
    /// The message, checked: visible text of the allowed lengths (`title`, `message`), a
    /// valid segment (`segment.any`, `segment.active_within_days`).
    pub fn validate(self) -> Result<Campaign, DomainError> {
        check_text("title", &self.title, 1, MAX_TITLE)?;
        check_text("message", &self.message, 1, MAX_MESSAGE)?;
        let audience = match self.segment {
            Some(s) => Audience::Segment(s.validate()?),
            None => Audience::Holders,
        };
        Ok(Campaign {
            title: self.title,
            message: self.message,
            audience,
        })
    }
}

impl Campaign {
    /// A stored message read back as it is: it was checked when asked, and a message
    /// being sent goes on being sent should the rules tighten later.
    pub fn stored(title: String, message: String, segment: Option<Segment>) -> Campaign {
        Campaign {
            title,
            message,
            audience: segment.map_or(Audience::Holders, Audience::Segment),
        }
    }

    /// The message sent to `segment` instead (a merchant's segment, narrowed to the tags it
    /// may use).
    pub fn with_segment(self, segment: Segment) -> Campaign {
        Campaign {
            audience: Audience::Segment(segment),
            ..self
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn audience(&self) -> &Audience {
        &self.audience
    }

    /// The segment, for a segment's message.
    pub fn segment(&self) -> Option<&Segment> {
        match &self.audience {
            Audience::Segment(s) => Some(s),
            Audience::Holders => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tag;

    fn draft(title: &str, message: &str, segment: Option<Segment>) -> CampaignDraft {
        CampaignDraft {
            title: title.into(),
            message: message.into(),
            segment,
        }
    }

    #[test]
    fn titles_and_messages_are_visible_text_of_bounded_length() {
        let c = draft("Spring sale", "Your coupon ends Sunday.", None)
            .validate()
            .unwrap();
        assert_eq!(c.audience(), &Audience::Holders);
        for (d, field) in [
            (draft("", "m", None), "title"),
            (draft(&"t".repeat(MAX_TITLE + 1), "m", None), "title"),
            (draft("t", "", None), "message"),
            (draft("t", &"m".repeat(MAX_MESSAGE + 1), None), "message"),
            (draft("t", "bell\u{7}", None), "message"),
        ] {
            let e = d.validate().unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field));
        }
    }

    #[test]
    fn a_segment_is_checked_as_segment_issuance_checks_it() {
        let seg = |days| Segment {
            any: vec![Tag::parse("vip").unwrap()],
            active_within_days: days,
        };
        let c = draft("t", "m", Some(seg(Some(30)))).validate().unwrap();
        assert_eq!(c.segment().unwrap().active_within_days, Some(30));
        let e = draft("t", "m", Some(seg(Some(0)))).validate().unwrap_err();
        assert_eq!(e.field.as_deref(), Some("segment.active_within_days"));
    }
}
