//! The sections for messages outside the app: `[messages]` (locale, links), `[email]` (SMTP)
//! and `[sms]` (a provider's HTTP API). Nothing is sent unless a channel is configured:
//! `email.smtp_url`, or `sms.provider`.

use std::collections::BTreeMap;
use std::fmt;

use coupond_domain::messaging::{Locale, MessageKind, QuietHours};
use secrecy::SecretString;
use serde::Deserialize;

use super::redact_url;

/// What every channel shares.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Messages {
    /// The locale of users without one, and where a locale without a text falls back to.
    pub default_locale: String,
    /// The API's public root, which unsubscribe links point to.
    pub public_url: String,
    /// The local time (the user's zone, else the platform's) reminders go at, on the first of
    /// the lead's days; `off`: exactly the lead before the expiry.
    pub reminder_at: String,
    /// Campaign messages an owner (a merchant, or the platform) may send per local day.
    pub campaigns_per_owner_per_day: u32,
}

impl Messages {
    /// `reminder_at` as (hour, minute); `None` when off.
    pub fn reminder_at(&self) -> Result<Option<(u32, u32)>, String> {
        match self.reminder_at.trim() {
            "off" => Ok(None),
            at => coupond_engine::self_audit::TimeOfDay::parse(at).map(|t| Some(t.hour_minute())),
        }
    }
}

/// Email over SMTP.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Email {
    /// `smtp://user:pass@relay:587?tls=starttls` (or `tls=none` for a local relay;
    /// `smtps://` for TLS from the start); unset: no email.
    #[serde(default)]
    pub smtp_url: Option<SecretString>,
    /// The sender: `Coupons <coupons@example.com>`.
    pub from: String,
    /// The message kinds email carries (a list, or one comma-separated string).
    #[serde(deserialize_with = "super::sections::list_or_csv")]
    pub kinds: Vec<MessageKind>,
    /// Local hours (the recipient's zone) no email is sent: `21:00-08:00`; empty: none.
    pub quiet_hours: String,
    /// Emails per second at most (the relay's limit).
    pub per_second: u32,
    /// Tries before an email is given up.
    pub max_attempts: u32,
}

impl fmt::Debug for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use secrecy::ExposeSecret;
        f.debug_struct("Email")
            .field(
                "smtp_url",
                &self
                    .smtp_url
                    .as_ref()
                    .map(|u| redact_url(u.expose_secret())),
            )
            .field("from", &self.from)
            .field("kinds", &self.kinds)
            .field("quiet_hours", &self.quiet_hours)
            .field("per_second", &self.per_second)
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

/// Which SMS API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmsProvider {
    /// Twilio's Messages API.
    Twilio,
    /// Any provider taking one form or JSON POST per message (`sms.http_*`).
    Http,
}

/// How the generic adapter encodes its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmsFormat {
    Form,
    Json,
}

/// SMS through a provider.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sms {
    /// `twilio` or `http`; unset: no SMS.
    #[serde(default)]
    pub provider: Option<SmsProvider>,
    /// Twilio's API root (`https://api.twilio.com`), or the generic adapter's full URL.
    pub base_url: String,
    /// Twilio's account SID.
    #[serde(default)]
    pub account_sid: Option<String>,
    /// Twilio's auth token.
    #[serde(default)]
    pub auth_token: Option<SecretString>,
    /// The sender number or name (a number such as `+15005550006` is read as text).
    #[serde(default, deserialize_with = "text_or_number")]
    pub from: Option<String>,
    /// The message kinds SMS carries (a list, or one comma-separated string).
    #[serde(deserialize_with = "super::sections::list_or_csv")]
    pub kinds: Vec<MessageKind>,
    pub quiet_hours: String,
    pub per_second: u32,
    pub max_attempts: u32,
    /// The generic adapter: `form` or `json`.
    pub http_format: SmsFormat,
    /// The generic adapter's fields, values with `{{to}}`, `{{from}}`, `{{text}}`, `{{id}}`.
    #[serde(default)]
    pub http_fields: BTreeMap<String, String>,
    /// Headers the generic adapter sends (an API key); secret.
    #[serde(default)]
    pub http_headers: BTreeMap<String, SecretString>,
}

impl fmt::Debug for Sms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sms")
            .field("provider", &self.provider)
            .field("base_url", &redact_url(&self.base_url))
            .field("account_sid", &self.account_sid)
            .field("from", &self.from)
            .field("kinds", &self.kinds)
            .field("quiet_hours", &self.quiet_hours)
            .field("per_second", &self.per_second)
            .field("http_format", &self.http_format)
            .field("http_fields", &self.http_fields)
            .field(
                "http_headers",
                &self.http_headers.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// A sender that is text even when the environment's value looks like a number:
/// `COUPOND_SMS_FROM=+15005550006` reads as the integer 15005550006, which is an E.164 number
/// again with its `+` (8 digits or more); a short code (`12345`) stays as it is.
fn text_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Signed(i64),
        Unsigned(u64),
    }
    Ok(match Option::<Either>::deserialize(d)? {
        None => None,
        Some(Either::Text(t)) => Some(t),
        Some(Either::Signed(n)) => Some(sender(n.unsigned_abs())),
        Some(Either::Unsigned(n)) => Some(sender(n)),
    })
}

fn sender(n: u64) -> String {
    match n.to_string() {
        digits if digits.len() >= 8 => format!("+{digits}"),
        short => short,
    }
}

/// Checks what serde cannot: one message per rule broken.
pub fn check(m: &Messages, e: &Email, s: &Sms) -> Result<(), String> {
    Locale::parse(&m.default_locale)
        .map_err(|_| "messages.default_locale (messages_default_locale) must be a language tag such as en or zh-Hans".to_owned())?;
    m.reminder_at()
        .map_err(|why| format!("messages.reminder_at (messages_reminder_at): {why}"))?;
    if !(1..=1_000).contains(&m.campaigns_per_owner_per_day) {
        return Err("messages.campaigns_per_owner_per_day (messages_campaigns_per_owner_per_day) must be 1 to 1000".into());
    }
    if !(m.public_url.starts_with("http://") || m.public_url.starts_with("https://")) {
        return Err("messages.public_url (messages_public_url) must be an http(s) URL".into());
    }
    for (name, q) in [("email", &e.quiet_hours), ("sms", &s.quiet_hours)] {
        QuietHours::parse(q).map_err(|_| format!("{name}.quiet_hours ({name}_quiet_hours) must be HH:MM-HH:MM, such as 21:00-08:00, or empty"))?;
    }
    for (name, per, tries) in [
        ("email", e.per_second, e.max_attempts),
        ("sms", s.per_second, s.max_attempts),
    ] {
        if !(1..=10_000).contains(&per) {
            return Err(format!(
                "{name}.per_second ({name}_per_second) must be from 1 to 10000"
            ));
        }
        if !(1..=100).contains(&tries) {
            return Err(format!(
                "{name}.max_attempts ({name}_max_attempts) must be from 1 to 100"
            ));
        }
    }
    coupond_engine::messaging::email::check_sender(&e.from).map_err(|_| {
        "email.from (email_from) must be an address, such as Coupons <coupons@example.com>"
            .to_owned()
    })?;
    match s.provider {
        Some(SmsProvider::Twilio)
            if s.account_sid.is_none() || s.auth_token.is_none() || s.from.is_none() =>
        {
            Err("sms.provider twilio needs sms.account_sid, sms.auth_token and sms.from".into())
        }
        Some(SmsProvider::Http) if s.http_fields.is_empty() => Err(
            "sms.provider http needs sms.http_fields (the POST's fields, with {{to}} and {{text}})"
                .into(),
        ),
        _ => Ok(()),
    }
}
