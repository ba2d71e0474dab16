//! Messages that reach people outside the app: which channels carry them, which kinds there
//! are, where a user can be reached and what they chose, the texts and when a message may go.
//!
//! - [`Channel`]: the in-app inbox, email, SMS.
//! - [`MessageKind`]: what a message is about, and whether it is marketing (honours opt-outs)
//!   or a service message (always sent where the user can be reached, and says so).
//! - [`contact`]: [`Phone`] (E.164), [`Locale`], a user's [`Contact`] and [`Preferences`].
//! - [`text`]: [`MessageText`] (subject, body, SMS text) with `{{variables}}`, checked when
//!   saved and filled by [`text::render`]; the shipped English and Simplified Chinese texts.
//! - [`quiet`]: [`QuietHours`], the local hours a channel stays silent.
//! - [`campaign`]: [`Campaign`], an operator's message about a template to its holders or a
//!   segment.

pub mod campaign;
pub mod contact;
pub mod quiet;
pub mod text;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use campaign::{Campaign, CampaignDraft};
pub use contact::{Contact, ContactDraft, Locale, Phone, Preferences};
pub use quiet::QuietHours;
pub use text::{MessageText, Vars};

/// A way of reaching a user.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Inbox,
    Email,
    Sms,
}

impl Channel {
    /// The channels that leave coupond (each an outbox consumer with its own delivery log).
    pub const OUTSIDE: [Channel; 2] = [Channel::Email, Channel::Sms];

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Inbox => "inbox",
            Channel::Email => "email",
            Channel::Sms => "sms",
        }
    }

    pub fn parse(s: &str) -> Option<Channel> {
        [Channel::Inbox, Channel::Email, Channel::Sms]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// Whether a message is marketing (sent only while the user has not opted out) or a service
/// message about the user's own coupons (sent regardless, and marked as such).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    Marketing,
    Service,
}

/// What a message is about. Each has a text per locale ([`text`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A coupon was issued to the user (a bulk issuance, a segment).
    CouponIssued,
    /// The user claimed a coupon.
    CouponClaimed,
    /// A coupon the user holds expires soon (the reminder).
    CouponExpiring,
    /// A coupon the user held was revoked.
    CouponRevoked,
    /// A merchant's template was approved into an activity (to the merchant's operators).
    EnrollmentApproved,
    /// A merchant's template was refused by an activity (to the merchant's operators).
    EnrollmentRejected,
    /// An operator's message about a template (a campaign message).
    Campaign,
    /// A merchant invited the address to its team: the one-time link that makes the account.
    OperatorInvited,
}

impl MessageKind {
    pub const ALL: [MessageKind; 8] = [
        MessageKind::CouponIssued,
        MessageKind::CouponClaimed,
        MessageKind::CouponExpiring,
        MessageKind::CouponRevoked,
        MessageKind::EnrollmentApproved,
        MessageKind::EnrollmentRejected,
        MessageKind::Campaign,
        MessageKind::OperatorInvited,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::CouponIssued => "coupon_issued",
            MessageKind::CouponClaimed => "coupon_claimed",
            MessageKind::CouponExpiring => "coupon_expiring",
            MessageKind::CouponRevoked => "coupon_revoked",
            MessageKind::EnrollmentApproved => "enrollment_approved",
            MessageKind::EnrollmentRejected => "enrollment_rejected",
            MessageKind::Campaign => "campaign",
            MessageKind::OperatorInvited => "operator_invited",
        }
    }

    pub fn parse(s: &str) -> Option<MessageKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Marketing or service. A revoke and an enrollment's decision are about what the person
    /// holds or asked for and go regardless; everything else, a claim's confirmation included,
    /// is news the person may turn off.
    pub fn purpose(self) -> Purpose {
        match self {
            MessageKind::CouponIssued
            | MessageKind::CouponClaimed
            | MessageKind::CouponExpiring
            | MessageKind::Campaign => Purpose::Marketing,
            MessageKind::CouponRevoked
            | MessageKind::EnrollmentApproved
            | MessageKind::EnrollmentRejected
            | MessageKind::OperatorInvited => Purpose::Service,
        }
    }

    /// The variables its text may use (besides the ones every text has, [`text::COMMON`]).
    pub fn variables(self) -> &'static [&'static str] {
        match self {
            MessageKind::CouponIssued | MessageKind::CouponClaimed => {
                &["title", "value", "valid_until"]
            }
            MessageKind::CouponExpiring => &["title", "value", "valid_until", "days_left"],
            MessageKind::CouponRevoked => &["title", "value", "reason"],
            MessageKind::EnrollmentApproved | MessageKind::EnrollmentRejected => {
                &["title", "activity", "reason"]
            }
            // The operator's title and message; the template's title (`coupon`) and worth.
            MessageKind::Campaign => &["title", "message", "coupon", "value"],
            // The inviting merchant's name, the role, the link and when it stops working.
            MessageKind::OperatorInvited => &["merchant", "role", "link", "valid_until"],
        }
    }
}
