//! Which text a message kind has in a locale, and what it is filled with.
//!
//! The platform's own texts (stored) win over the shipped ones; a locale without either falls
//! back along its tag (`en-GB` -> `en`), then to the default locale, then to English.

use std::collections::HashMap;
use std::sync::Arc;

use coupond_domain::messaging::text::{shipped, worth};
use coupond_domain::messaging::{Locale, MessageKind, MessageText, Vars};
use coupond_domain::{Template, Timestamp, Zone};
use coupond_store::{ContactRecord, Store, StoreResult};

use super::Readers;

/// The texts, read once per batch of messages.
#[derive(Debug, Clone)]
pub struct Texts {
    own: HashMap<(MessageKind, String), MessageText>,
    default_locale: Locale,
}

impl Texts {
    /// The platform's texts as stored now.
    pub async fn load(store: &Arc<dyn Store>, default_locale: &Locale) -> StoreResult<Texts> {
        let own = store
            .message_texts()
            .await?
            .into_iter()
            .map(|t| ((t.kind, t.locale.as_str().to_owned()), t.text))
            .collect();
        Ok(Texts {
            own,
            default_locale: default_locale.clone(),
        })
    }

    /// `kind`'s text for a reader of `locale` (none: the default), and the locale it is in.
    pub fn pick(&self, kind: MessageKind, locale: Option<&Locale>) -> (MessageText, String) {
        let mut tags: Vec<&str> = locale.map(Locale::fallbacks).unwrap_or_default();
        tags.extend(self.default_locale.fallbacks());
        tags.push("en");
        for tag in tags {
            if let Some(t) = self.own.get(&(kind, tag.to_owned())) {
                return (t.clone(), tag.to_owned());
            }
            if let Some(t) = shipped(kind, tag) {
                return (t, tag.to_owned());
            }
        }
        // English is shipped for every kind.
        (
            shipped(kind, "en").unwrap_or_else(|| unreachable_text(kind)),
            "en".into(),
        )
    }
}

/// A text picked for one reader: in their locale, read in their zone.
#[derive(Clone, Debug)]
pub struct Reading {
    pub text: MessageText,
    /// The locale the text is in.
    pub locale: String,
    pub zone: Zone,
}

impl Texts {
    /// `kind`'s text for the user of `c` (none: a user who set nothing), with `readers`'
    /// zone and locale where the user has none of their own.
    pub fn for_reader(
        &self,
        kind: MessageKind,
        c: Option<&ContactRecord>,
        readers: &Readers,
    ) -> Reading {
        let locale = c
            .and_then(|c| c.contact.locale.as_ref())
            .unwrap_or(&readers.locale);
        let (text, locale) = self.pick(kind, Some(locale));
        Reading {
            text,
            locale,
            zone: c.and_then(|c| c.contact.zone).unwrap_or(readers.zone),
        }
    }
}

fn unreachable_text(kind: MessageKind) -> MessageText {
    MessageText {
        subject: kind.as_str().into(),
        body: kind.as_str().into(),
        sms: kind.as_str().into(),
    }
}

/// The values of a coupon message: its template's title and worth (in `locale`), and the
/// day it is valid until in the reader's `zone`.
pub fn coupon_vars(
    t: Option<&Template>,
    valid_until: Option<Timestamp>,
    locale: &str,
    zone: &Zone,
) -> Vars {
    let mut v = Vars::new();
    if let Some(t) = t {
        v.insert("title", t.spec.title.clone());
        v.insert("value", worth(&t.spec.value, locale));
    }
    if let Some(until) = valid_until {
        // The last instant of validity is exclusive: a coupon valid until midnight is
        // usable through the day before.
        v.insert(
            "valid_until",
            zone.date_text(until.minus(time::Duration::microseconds(1))),
        );
    }
    v
}
