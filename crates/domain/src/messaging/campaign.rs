//! An operator's campaign message about a template: a title and a message sent to the
//! template's holders or to a segment, through each user's inbox and the outside channels
//! they can be reached on and did not turn campaigns off for.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::tags::Segment;
use crate::text::check_text;

/// The longest title (it is the email's subject).
pub const MAX_TITLE: usize = 120;
/// The longest message: it is an SMS's whole text too, so it stays within one long SMS.
pub const MAX_MESSAGE: usize = 500;

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

/// A checked campaign message: to its segment's users, or (with none) to the template's
/// holders of an unused coupon valid when the message goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Campaign {
    title: String,
    message: String,
    segment: Option<Segment>,
}

impl CampaignDraft {
    /// The message, checked: visible text of the allowed lengths (`title`, `message`), a
    /// valid segment (`segment.any`, `segment.active_within_days`).
    pub fn validate(self) -> Result<Campaign, DomainError> {
        check_text("title", &self.title, 1, MAX_TITLE)?;
        check_text("message", &self.message, 1, MAX_MESSAGE)?;
        Ok(Campaign {
            title: self.title,
            message: self.message,
            segment: self.segment.map(Segment::validate).transpose()?,
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
            segment,
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The segment, for a segment's message; `None` for the holders'.
    pub fn segment(&self) -> Option<&Segment> {
        self.segment.as_ref()
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
        assert_eq!(c.segment(), None, "the holders'");
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
