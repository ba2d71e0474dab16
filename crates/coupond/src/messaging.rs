//! Builds what `serve` runs for messages outside the app (issue 35) from the configuration:
//! the notifier (an outbox consumer under its own `messages` lease, so a slow provider never
//! holds up the other consumers) and one courier per configured channel, and the rules the
//! campaign sender follows. No notifier or courier is built when no channel is configured:
//! campaign messages then reach the inbox only.

use std::sync::Arc;

use anyhow::Context;
use coupond_domain::messaging::{Channel, Locale, QuietHours};
use coupond_engine::clock::Clock;
use coupond_engine::messaging::sms::BodyFormat;
use coupond_engine::messaging::{
    ChannelRules, Courier, HttpSmsTransport, MessagingRules, Notifier, SmtpTransport, Transport,
    TwilioTransport, Unsubscribe,
};
use coupond_store::Store;

use crate::config::{Config, SmsFormat, SmsProvider};

/// The notifier and the couriers to run, and what every part of messaging agrees on.
pub struct Messaging {
    pub rules: MessagingRules,
    /// `None` when no channel is configured.
    pub notifier: Option<Arc<dyn coupond_engine::Observer>>,
    pub couriers: Vec<Courier>,
}

impl std::fmt::Debug for Messaging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Messaging")
            .field("couriers", &self.couriers)
            .finish_non_exhaustive()
    }
}

/// The channels `config` sets up, with their transports (none, if it sets up none).
/// `secret` signs the unsubscribe links.
pub fn build(
    config: &Config,
    store: &Arc<dyn Store>,
    clock: &Arc<dyn Clock>,
    secret: &[u8],
    holder: &str,
) -> anyhow::Result<Messaging> {
    let unsubscribe = Unsubscribe::new(secret, &config.messages.public_url);
    let mut channels: Vec<(ChannelRules, Arc<dyn Transport>)> = Vec::new();
    let e = &config.email;
    if let Some(url) = &e.smtp_url {
        let t = SmtpTransport::new(url, &e.from, unsubscribe.clone())
            .map_err(anyhow::Error::msg)
            .context("email.smtp_url (email_smtp_url)")?;
        channels.push((
            rules(
                Channel::Email,
                e.kinds.clone(),
                &e.quiet_hours,
                e.per_second,
                e.max_attempts,
            )?,
            Arc::new(t),
        ));
    }
    let s = &config.sms;
    if let Some(provider) = s.provider {
        let from = s.from.clone().unwrap_or_default();
        let t: Arc<dyn Transport> = match provider {
            SmsProvider::Twilio => Arc::new(
                TwilioTransport::new(
                    &s.base_url,
                    s.account_sid.as_deref().unwrap_or_default(),
                    s.auth_token.clone().unwrap_or_else(|| String::new().into()),
                    &from,
                )
                .map_err(anyhow::Error::msg)?,
            ),
            SmsProvider::Http => Arc::new(
                HttpSmsTransport::new(
                    &s.base_url,
                    s.http_headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    match s.http_format {
                        SmsFormat::Form => BodyFormat::Form,
                        SmsFormat::Json => BodyFormat::Json,
                    },
                    s.http_fields.clone(),
                    &from,
                )
                .map_err(anyhow::Error::msg)?,
            ),
        };
        channels.push((
            rules(
                Channel::Sms,
                s.kinds.clone(),
                &s.quiet_hours,
                s.per_second,
                s.max_attempts,
            )?,
            t,
        ));
    }
    let shared = MessagingRules {
        readers: readers(config),
        channels: channels.iter().map(|(r, _)| r.clone()).collect(),
    };
    let couriers = channels
        .into_iter()
        .map(|(r, t)| Courier::new(store.clone(), clock.clone(), r, t, holder))
        .collect();
    let notifier: Option<Arc<dyn coupond_engine::Observer>> = (!shared.channels.is_empty())
        .then(|| Arc::new(Notifier::new(store.clone(), clock.clone(), shared.clone())) as _);
    Ok(Messaging {
        rules: shared,
        notifier,
        couriers,
    })
}

fn rules(
    channel: Channel,
    kinds: Vec<coupond_domain::messaging::MessageKind>,
    quiet: &str,
    per_second: u32,
    max_attempts: u32,
) -> anyhow::Result<ChannelRules> {
    Ok(ChannelRules {
        channel,
        kinds,
        quiet: QuietHours::parse(quiet)?,
        per_second,
        max_attempts,
    })
}

/// How users without their own zone and locale read the inbox: the platform's zone and
/// `messages.default_locale` (checked when the configuration loaded).
pub fn readers(config: &Config) -> coupond_engine::messaging::Readers {
    coupond_engine::messaging::Readers {
        zone: config.platform.time_zone,
        locale: Locale::parse(&config.messages.default_locale)
            .unwrap_or_else(|_| Locale::english()),
    }
}
