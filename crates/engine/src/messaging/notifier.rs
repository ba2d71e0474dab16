//! The outbox consumer that queues email and SMS messages for coupon events.
//!
//! For each event about a user's coupon (claimed, issued, revoked, expiring soon), and each
//! configured channel that carries its kind, the user gets one message if the channel has
//! their address and, for marketing, they did not turn the kind off. The message is rendered
//! now, in the user's locale and zone, and queued under the event's id: a batch handed out
//! again queues nothing twice. The couriers send it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use coupond_domain::messaging::{MessageKind, Vars};
use coupond_domain::{Template, TemplateId, Timestamp, UserId};
use coupond_store::events::kind;
use coupond_store::{ContactRecord, Event, NewOutbound, Store, StoreResult};

use super::enrollment;
use super::texts::{coupon_vars, Texts};
use super::{contacts_by_user, templates_by_id, MessagingRules};
use crate::clock::Clock;
use crate::dispatch::Observer;

/// The outbox consumer's name (its position is stored under it).
pub const SINK: &str = "messages";

/// Queues the messages of coupon events.
#[derive(Debug)]
pub struct Notifier {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    rules: MessagingRules,
}

/// One coupon event that may become messages.
struct News {
    event_id: i64,
    kind: MessageKind,
    user: UserId,
    template: TemplateId,
    valid_until: Option<Timestamp>,
    reason: Option<String>,
}

fn news(e: &Event) -> Option<News> {
    let kind = match e.kind.as_str() {
        kind::COUPON_CLAIMED => MessageKind::CouponClaimed,
        kind::COUPON_ISSUED => MessageKind::CouponIssued,
        kind::COUPON_REVOKED => MessageKind::CouponRevoked,
        kind::COUPON_EXPIRING => MessageKind::CouponExpiring,
        _ => return None,
    };
    let b = &e.body;
    Some(News {
        event_id: e.id,
        kind,
        user: UserId::parse(b.get("user_id")?.as_str()?).ok()?,
        template: TemplateId::new(b.get("template_id")?.as_i64()?).ok()?,
        valid_until: b
            .get("valid_until")
            .and_then(|v| v.as_str())
            .and_then(|s| Timestamp::parse(s).ok()),
        reason: b.get("reason").and_then(|v| v.as_str()).map(str::to_owned),
    })
}

impl Notifier {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, rules: MessagingRules) -> Self {
        Notifier {
            store,
            clock,
            rules,
        }
    }

    /// The messages of `items` for the users among `contacts`.
    fn render(
        &self,
        items: &[News],
        contacts: &HashMap<UserId, ContactRecord>,
        templates: &HashMap<TemplateId, Template>,
        texts: &Texts,
        now: Timestamp,
    ) -> Vec<NewOutbound> {
        let mut out = Vec::new();
        for n in items {
            let Some(c) = contacts.get(&n.user) else {
                continue;
            };
            let r = texts.for_reader(n.kind, Some(c), &self.rules.readers);
            let mut vars: Vars = coupon_vars(
                templates.get(&n.template),
                n.valid_until,
                &r.locale,
                &r.zone,
            );
            if let Some(reason) = &n.reason {
                vars.insert("reason", reason.clone());
            }
            let filled = r.text.render(&vars);
            let key = format!("event:{}", n.event_id);
            out.extend(self.rules.deliveries(c, n.kind, &key, &filled, now));
        }
        out
    }
}

impl Notifier {
    /// The messages of the coupon events among `events`.
    async fn coupon_messages(
        &self,
        events: &[Event],
        now: Timestamp,
    ) -> StoreResult<Vec<NewOutbound>> {
        let carried: HashSet<MessageKind> = self
            .rules
            .channels
            .iter()
            .flat_map(|c| c.kinds.iter().copied())
            .collect();
        let items: Vec<News> = events
            .iter()
            .filter_map(news)
            .filter(|n| carried.contains(&n.kind))
            .collect();
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let store = self.store.as_ref();
        let contacts = contacts_by_user(store, items.iter().map(|n| n.user.clone())).await?;
        if contacts.is_empty() {
            return Ok(Vec::new());
        }
        let reached = items.iter().filter(|n| contacts.contains_key(&n.user));
        let templates = templates_by_id(store, reached.map(|n| n.template)).await?;
        let texts = Texts::load(&self.store, &self.rules.readers.locale).await?;
        Ok(self.render(&items, &contacts, &templates, &texts, now))
    }
}

#[async_trait]
impl Observer for Notifier {
    fn name(&self) -> &str {
        SINK
    }

    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        let now = self.clock.now();
        let mut queued = self.coupon_messages(events, now).await?;
        queued.extend(enrollment::decisions(&self.store, &self.rules, events, now).await?);
        if !queued.is_empty() {
            self.store.queue_outbound(&queued, now).await?;
        }
        Ok(())
    }
}
