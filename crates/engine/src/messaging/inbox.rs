//! The inbox's outbox consumer: a message for each coupon issued to a user (bulk issuance,
//! a segment), in the `coupon_issued` text of the user's locale (the platform's own text,
//! else the shipped one), its day read in the user's zone.
//!
//! A claim gets no inbox message: its own answer tells the user (or the service claiming at
//! its request) that the coupon is in the wallet, so a message would only repeat it, and
//! cost a row per claim in a flash sale. A message's text is stored once per template,
//! locale and day; each message is keyed by its event, so a redelivered batch adds nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use coupond_domain::messaging::{MessageKind, MessageText};
use coupond_domain::{TemplateId, UserId};
use coupond_store::events::kind;
use coupond_store::{Event, MessageContent, Store, StoreResult};

use super::texts::{coupon_vars, Texts};
use super::{contacts_by_user, templates_by_id, Readers};
use crate::clock::Clock;
use crate::dispatch::{coupon_facts, sinks, Observer};

/// Puts a message in the inbox of each user issued a coupon.
#[derive(Debug)]
pub struct InboxNotifier {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    readers: Readers,
}

/// One text: the template, the locale and the expiry day it is filled for.
type TextKey = (TemplateId, String, String);

impl InboxNotifier {
    /// Texts in English and days in UTC for users without their own, until
    /// [`InboxNotifier::readers`] says otherwise.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        InboxNotifier {
            store,
            clock,
            readers: Readers::default(),
        }
    }

    /// The zone and locale of users without their own.
    pub fn readers(self, readers: Readers) -> Self {
        InboxNotifier { readers, ..self }
    }
}

#[async_trait]
impl Observer for InboxNotifier {
    fn name(&self) -> &str {
        sinks::INBOX
    }

    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        let issued: Vec<(i64, _)> = events
            .iter()
            .filter(|e| e.kind == kind::COUPON_ISSUED)
            .filter_map(|e| Some((e.id, coupon_facts(e)?)))
            .collect();
        if issued.is_empty() {
            return Ok(());
        }
        let store = self.store.as_ref();
        let contacts = contacts_by_user(store, issued.iter().map(|(_, f)| f.user.clone())).await?;
        let templates = templates_by_id(store, issued.iter().map(|(_, f)| f.template)).await?;
        let texts = Texts::load(&self.store, &self.readers.locale).await?;
        let mut groups: BTreeMap<TextKey, (MessageText, Vec<(UserId, String)>)> = BTreeMap::new();
        for (event, f) in issued {
            let r = texts.for_reader(
                MessageKind::CouponIssued,
                contacts.get(&f.user),
                &self.readers,
            );
            let vars = coupon_vars(
                templates.get(&f.template),
                Some(f.valid_until),
                &r.locale,
                &r.zone,
            );
            let day = vars.get("valid_until").cloned().unwrap_or_default();
            groups
                .entry((f.template, r.locale, day))
                .or_insert_with(|| (r.text.render(&vars), Vec::new()))
                .1
                .push((f.user, format!("event:{event}")));
        }
        let now = self.clock.now();
        for ((template, locale, day), (filled, recipients)) in groups {
            let content = MessageContent {
                key: format!("issued:{template}:{locale}:{day}"),
                kind: "coupon_issued".into(),
                title: filled.subject,
                body: filled.body,
            };
            self.store
                .deliver_messages(&content, &recipients, now)
                .await?;
        }
        Ok(())
    }
}
