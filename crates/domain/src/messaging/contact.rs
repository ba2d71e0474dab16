//! Where a user can be reached and what they chose to receive.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Channel, MessageKind, Purpose};
use crate::error::{DomainError, Findings};
use crate::operator::Email;
use crate::zone::Zone;

/// A phone number in E.164 form: `+`, a country code, at most 15 digits in all.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Phone(String);

impl Phone {
    /// `s` as E.164 (spaces, dashes and parentheses are dropped); field `phone` on error.
    pub fn parse(s: &str) -> Result<Phone, DomainError> {
        let kept: String = s
            .trim()
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '.'))
            .collect();
        let digits = kept.strip_prefix('+').unwrap_or("");
        let ok = (8..=15).contains(&digits.len())
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        if !ok || s.len() > 32 {
            return Err(DomainError::invalid(
                "phone",
                "invalid_phone",
                "must be an E.164 number: + and 8 to 15 digits, such as +8613800138000",
            ));
        }
        Ok(Phone(kept))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A phone number is personal data: logs see its country code and last two digits.
        let n = &self.0;
        write!(
            f,
            "Phone({}…{})",
            &n[..3.min(n.len())],
            &n[n.len().saturating_sub(2)..]
        )
    }
}

/// A language tag the texts are chosen by (`en`, `zh-Hans`, `en-GB`): letters, digits and
/// hyphens, at most 35 bytes (BCP 47's longest common form). Chinese tags of the mainland and
/// Singapore (`zh`, `zh-CN`, `zh-SG`) read as `zh-Hans`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Locale(String);

impl Locale {
    /// The locale every shipped text exists in.
    pub fn english() -> Locale {
        Locale("en".into())
    }

    /// `s` as a locale; field `locale` on error.
    pub fn parse(s: &str) -> Result<Locale, DomainError> {
        let s = s.trim();
        let well_formed = !s.is_empty()
            && s.len() <= 35
            && s.split('-').all(|part| {
                (1..=8).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_alphanumeric())
            })
            && s.as_bytes()[0].is_ascii_alphabetic();
        if !well_formed {
            return Err(DomainError::invalid(
                "locale",
                "invalid_locale",
                "must be a language tag such as en or zh-Hans",
            ));
        }
        let canonical = match s.to_ascii_lowercase().as_str() {
            "zh" | "zh-cn" | "zh-sg" | "zh-hans" | "zh-hans-cn" => "zh-Hans".to_owned(),
            "zh-tw" | "zh-hk" | "zh-hant" => "zh-Hant".to_owned(),
            _ => canonical_case(s),
        };
        Ok(Locale(canonical))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tags to look a text up by, most specific first: `zh-Hans-CN`, `zh-Hans`, `zh`.
    pub fn fallbacks(&self) -> Vec<&str> {
        let mut out = vec![self.0.as_str()];
        let mut rest = self.0.as_str();
        while let Some((head, _)) = rest.rsplit_once('-') {
            out.push(head);
            rest = head;
        }
        out
    }
}

/// `en-gb` -> `en-GB`, `zh-hant` -> `zh-Hant`: language lower, script title, region upper.
fn canonical_case(s: &str) -> String {
    s.split('-')
        .enumerate()
        .map(|(i, p)| match (i, p.len()) {
            (0, _) => p.to_ascii_lowercase(),
            (_, 4) => {
                let (a, b) = p.split_at(1);
                a.to_ascii_uppercase() + &b.to_ascii_lowercase()
            }
            (_, 2) => p.to_ascii_uppercase(),
            _ => p.to_ascii_lowercase(),
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// What the service sends to set where a user can be reached (`PUT /v1/users/{id}/contact`).
/// A field left out or null is cleared.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactDraft {
    /// An email address.
    pub email: Option<String>,
    /// A phone number in E.164 form (`+8613800138000`).
    pub phone: Option<String>,
    /// The language the user reads (`en`, `zh-Hans`); texts fall back to the platform's.
    pub locale: Option<String>,
    /// The user's IANA time zone; the platform's when unknown.
    pub time_zone: Option<String>,
}

/// Where a user can be reached: checked addresses, locale and zone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contact {
    pub email: Option<Email>,
    pub phone: Option<Phone>,
    pub locale: Option<Locale>,
    pub zone: Option<Zone>,
}

impl TryFrom<ContactDraft> for Contact {
    type Error = DomainError;

    /// Every field is checked; all the bad ones are reported at once.
    fn try_from(d: ContactDraft) -> Result<Self, DomainError> {
        let mut f = Findings::default();
        let email = d.email.as_deref().and_then(|s| f.check(Email::parse(s)));
        let phone = d.phone.as_deref().and_then(|s| f.check(Phone::parse(s)));
        let locale = d.locale.as_deref().and_then(|s| f.check(Locale::parse(s)));
        let zone = d.time_zone.as_deref().and_then(|s| f.check(Zone::parse(s)));
        f.done()?;
        Ok(Contact {
            email,
            phone,
            locale,
            zone,
        })
    }
}

impl Contact {
    /// The address of `channel`, as text (none for the inbox).
    pub fn address(&self, channel: Channel) -> Option<&str> {
        match channel {
            Channel::Email => self.email.as_ref().map(Email::as_str),
            Channel::Sms => self.phone.as_ref().map(Phone::as_str),
            Channel::Inbox => None,
        }
    }
}

/// A user's choices: per outside channel, the marketing kinds they turned on or off (a kind
/// not named is on). Service messages are not a choice: they are always sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Preferences {
    /// `{"email": {"coupon_expiring": false}, "sms": {"campaign": false}}`.
    #[serde(flatten)]
    choices: BTreeMap<Channel, BTreeMap<MessageKind, bool>>,
}

impl Preferences {
    /// Checked choices: only email and SMS, only marketing kinds; field `<channel>.<kind>`.
    pub fn new(
        choices: BTreeMap<Channel, BTreeMap<MessageKind, bool>>,
    ) -> Result<Self, DomainError> {
        let mut f = Findings::default();
        for (channel, kinds) in &choices {
            if !Channel::OUTSIDE.contains(channel) {
                f.check::<()>(Err(DomainError::invalid(
                    channel.as_str(),
                    "not_a_choice",
                    "only email and sms messages can be chosen; the inbox keeps everything",
                )));
            }
            for kind in kinds.keys() {
                if kind.purpose() == Purpose::Service {
                    f.check::<()>(Err(DomainError::invalid(
                        &format!("{}.{}", channel.as_str(), kind.as_str()),
                        "service_message",
                        "a service message about the user's own coupons is always sent",
                    )));
                }
            }
        }
        f.done()?;
        Ok(Preferences { choices })
    }

    /// Whether `kind` may go to the user over `channel`.
    pub fn allows(&self, channel: Channel, kind: MessageKind) -> bool {
        kind.purpose() == Purpose::Service
            || self
                .choices
                .get(&channel)
                .and_then(|k| k.get(&kind))
                .copied()
                .unwrap_or(true)
    }

    /// Turns every marketing kind off on `channel` (an unsubscribe link).
    pub fn unsubscribe(&mut self, channel: Channel) {
        let kinds = self.choices.entry(channel).or_default();
        for k in MessageKind::ALL {
            if k.purpose() == Purpose::Marketing {
                kinds.insert(k, false);
            }
        }
    }

    /// The choices as stored and shown.
    pub fn choices(&self) -> &BTreeMap<Channel, BTreeMap<MessageKind, bool>> {
        &self.choices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_are_e164() {
        assert_eq!(
            Phone::parse("+86 138-0013-8000").unwrap().as_str(),
            "+8613800138000"
        );
        for bad in [
            "13800138000",
            "+0123456789",
            "+12",
            "+1234567890123456",
            "+86abc",
        ] {
            assert_eq!(
                Phone::parse(bad).unwrap_err().code,
                "invalid_phone",
                "{bad}"
            );
        }
        assert_eq!(
            format!("{:?}", Phone::parse("+8613800138000").unwrap()),
            "Phone(+86…00)"
        );
    }

    #[test]
    fn locales_fall_back_to_their_language() {
        let l = Locale::parse("zh-cn").unwrap();
        assert_eq!(l.as_str(), "zh-Hans");
        assert_eq!(Locale::parse("en-gb").unwrap().fallbacks(), ["en-GB", "en"]);
        assert_eq!(Locale::parse("<b>").unwrap_err().code, "invalid_locale");
    }

    #[test]
    fn a_contact_reports_every_bad_field() {
        let e = Contact::try_from(ContactDraft {
            email: Some("nope".into()),
            phone: Some("123".into()),
            locale: None,
            time_zone: Some("Mars/Base".into()),
        })
        .unwrap_err();
        let mut fields: Vec<_> = std::iter::once(&e)
            .chain(&e.also)
            .map(|e| e.field.clone().unwrap())
            .collect();
        fields.sort();
        assert_eq!(fields, ["email", "phone", "time_zone"]);
    }

    #[test]
    fn service_messages_are_not_a_choice_and_unsubscribing_stops_marketing() {
        let mut choices = BTreeMap::new();
        choices.insert(
            Channel::Email,
            BTreeMap::from([(MessageKind::CouponRevoked, false)]),
        );
        let e = Preferences::new(choices).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("service_message", Some("email.coupon_revoked"))
        );
        let mut p = Preferences::default();
        assert!(p.allows(Channel::Email, MessageKind::Campaign));
        p.unsubscribe(Channel::Email);
        assert!(!p.allows(Channel::Email, MessageKind::Campaign));
        assert!(!p.allows(Channel::Email, MessageKind::CouponExpiring));
        assert!(p.allows(Channel::Email, MessageKind::CouponRevoked));
        assert!(p.allows(Channel::Sms, MessageKind::Campaign));
    }
}
