//! Messages outside the app (issue 35): email over SMTP and SMS through a provider.
//!
//! - [`notifier`]: [`Notifier`], the outbox consumer that turns coupon events into one
//!   rendered message per channel the user can be reached on and did not opt out of, queued
//!   in the delivery log once per event and channel.
//! - [`campaigns`]: [`CampaignSender`], the worker that sends operators' campaign messages
//!   page by page: to each recipient's inbox, and by email and SMS where they can be reached.
//! - [`courier`]: [`Courier`], one worker per channel (a lease makes it one per deployment)
//!   that sends the due messages through a [`Transport`], paced to the provider's rate, with
//!   retries and backoff, and holds a message back through the recipient's quiet hours.
//! - [`email`]: [`SmtpTransport`] (lettre): multipart text and HTML, `List-Unsubscribe`.
//! - `enrollment`: the platform's decision on an enrolled template, emailed by the
//!   [`Notifier`] to the merchant's operators.
//! - [`inbox`]: [`InboxNotifier`], the outbox consumer that puts a message in the inbox of
//!   each user issued a coupon, in their locale's text.
//! - [`sms`]: [`TwilioTransport`] (the Messages API) and [`HttpSmsTransport`] (any provider
//!   taking a form or JSON POST: Aliyun, Tencent Cloud, ...).
//! - [`texts`]: [`Texts`], which text a kind has in a locale (the platform's own, else the
//!   shipped one, falling back to the default locale), and the values it is filled with.
//! - [`unsubscribe`]: [`Unsubscribe`], the signed link that turns a channel's marketing off
//!   without signing in.

pub mod campaigns;
pub mod courier;
pub mod email;
mod enrollment;
pub mod inbox;
pub mod notifier;
pub mod sms;
pub mod texts;
pub mod unsubscribe;

use coupond_domain::messaging::{Channel, Locale, MessageKind, MessageText, QuietHours};
use std::collections::HashMap;

use coupond_domain::{Template, TemplateId, Timestamp, UserId, Zone};
use coupond_store::{ContactRecord, NewOutbound, Store, StoreResult};

pub use campaigns::CampaignSender;
pub use courier::{Courier, SendError, Transport};
pub use email::SmtpTransport;
pub use inbox::InboxNotifier;
pub use notifier::Notifier;
pub use sms::{HttpSmsTransport, TwilioTransport};
pub use texts::Texts;
pub use unsubscribe::Unsubscribe;

/// How one outside channel behaves.
#[derive(Clone, Debug)]
pub struct ChannelRules {
    pub channel: Channel,
    /// The kinds it carries.
    pub kinds: Vec<MessageKind>,
    /// Local hours it stays silent, in the recipient's zone.
    pub quiet: QuietHours,
    /// Messages per second at most (the provider's limit).
    pub per_second: u32,
    /// Tries before a message is given up.
    pub max_attempts: u32,
}

/// The contact records of `users` (any order, repeats allowed), by user.
pub(crate) async fn contacts_by_user(
    store: &dyn Store,
    users: impl IntoIterator<Item = UserId>,
) -> StoreResult<HashMap<UserId, ContactRecord>> {
    let mut users: Vec<UserId> = users.into_iter().collect();
    users.sort();
    users.dedup();
    Ok(store
        .contacts(&users)
        .await?
        .into_iter()
        .map(|c| (c.user_id.clone(), c))
        .collect())
}

/// The templates of `ids` (any order, repeats allowed) that exist, by id.
pub(crate) async fn templates_by_id(
    store: &dyn Store,
    ids: impl IntoIterator<Item = TemplateId>,
) -> StoreResult<HashMap<TemplateId, Template>> {
    let mut ids: Vec<TemplateId> = ids.into_iter().collect();
    ids.sort();
    ids.dedup();
    Ok(store
        .templates_by_ids(&ids)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect())
}

/// How users without settings of their own read messages: in the platform's zone and the
/// default locale. The inbox's texts follow it as the outside channels' do.
#[derive(Clone, Debug)]
pub struct Readers {
    pub zone: Zone,
    pub locale: Locale,
}

impl Default for Readers {
    /// UTC and English.
    fn default() -> Self {
        Readers {
            zone: Zone::UTC,
            locale: Locale::english(),
        }
    }
}

/// What every part of messaging agrees on.
#[derive(Clone, Debug)]
pub struct MessagingRules {
    /// The zone and locale of users without their own (the platform's zone; the locale a
    /// locale without a text falls back to).
    pub readers: Readers,
    /// The channels configured (none: nothing is sent outside the app).
    pub channels: Vec<ChannelRules>,
}

impl MessagingRules {
    /// The deliveries of a message of `kind`, filled as `filled`, to the user of `c`: one per
    /// configured channel that carries the kind, where the user has an address and, for
    /// marketing, did not turn the kind off. Keyed `key` (one delivery per channel and key).
    pub fn deliveries(
        &self,
        c: &ContactRecord,
        kind: MessageKind,
        key: &str,
        filled: &MessageText,
        now: Timestamp,
    ) -> Vec<NewOutbound> {
        let zone = c.contact.zone.unwrap_or(self.readers.zone);
        self.channels
            .iter()
            .filter(|r| r.kinds.contains(&kind) && c.preferences.allows(r.channel, kind))
            .filter_map(|r| {
                let address = c.contact.address(r.channel)?;
                Some(NewOutbound {
                    channel: r.channel,
                    key: key.to_owned(),
                    user_id: Some(c.user_id.clone()),
                    kind,
                    address: address.to_owned(),
                    zone,
                    subject: filled.subject.clone(),
                    body: match r.channel {
                        Channel::Sms => filled.sms.clone(),
                        _ => filled.body.clone(),
                    },
                    due_at: now,
                })
            })
            .collect()
    }

    /// The rules of `channel`, if it is configured.
    pub fn channel(&self, channel: Channel) -> Option<&ChannelRules> {
        self.channels.iter().find(|c| c.channel == channel)
    }
}
