//! The worker that sends operators' campaign messages.
//!
//! One instance sends at a time (the `campaign-messages` lease). Each pass takes the oldest
//! message still sending and one page of its recipients after its cursor, renders the
//! `campaign` text in each recipient's locale (the operator's title and message, the
//! template's title and worth), and in one transaction puts it in their inboxes, queues it
//! by email and SMS where they can be reached and did not turn campaigns off, and moves the
//! cursor. A crash between pages repeats at most one page, and each delivery is keyed
//! `campaign:<id>:<user>`, so nobody gets a message twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coupond_domain::messaging::text::worth;
use coupond_domain::messaging::{Campaign, MessageKind, MessageText, Vars};
use coupond_domain::{Actor, MerchantId, Template, Timestamp, UserId, Zone};
use coupond_store::audit::{self, Change};
use coupond_store::{
    owner_key, CampaignMessage, CampaignPage, MessageContent, NewCampaignMessage, NewOutbound,
    Store, StoreResult,
};
use tokio::sync::Notify;

use super::{contacts_by_user, templates_by_id, MessagingRules, Texts};
use crate::campaigns::CampaignError;
use crate::clock::Clock;
use crate::worker::{Lease, Pass, Worker};

/// Recipients per page (one transaction each).
pub const PAGE: u32 = 500;
/// The wait when nothing is sending (a new message wakes the worker at once in its process).
const IDLE: Duration = Duration::from_secs(5);
const LEASE: time::Duration = time::Duration::seconds(30);

/// Records a campaign message about `t` from `actor`, to be sent by the [`CampaignSender`]:
/// a message to a segment invites users to claim, so the template must be claimable now
/// (active, not paused); one to its holders may go while they hold it. At most `max_per_day` per sender (`merchant`,
/// or the platform when `None`) per local day of `zone` (`Conflict(Conflict::Limit)` past
/// it): the platform's messages about a merchant's template do not use up the merchant's.
#[allow(clippy::too_many_arguments)]
pub async fn record(
    store: &dyn Store,
    t: &Template,
    merchant: Option<MerchantId>,
    actor: &Actor,
    campaign: &Campaign,
    max_per_day: u32,
    zone: Zone,
    now: Timestamp,
) -> Result<CampaignMessage, CampaignError> {
    if campaign.segment().is_some() {
        t.check_inviting(now)?;
    }
    let since = zone.day_start(zone.day_of(now)).unwrap_or(now);
    let new = NewCampaignMessage {
        template: t.id,
        owner: owner_key(merchant),
        actor,
        campaign,
    };
    // In the audit trail: a message to many users, in its sender's name.
    let change = Change::new("campaign_message.send", "campaign_message", now)
        .merchant(t.merchant_id)
        .after(&serde_json::json!({
            "template_id": t.id,
            "title": campaign.title(),
            "message": campaign.message(),
            "segment": campaign.segment(),
        }));
    let write = store.insert_campaign_message(&new, since, max_per_day, now);
    Ok(audit::change(change, write).await?)
}

/// Sends campaign messages page by page.
#[derive(Debug, Clone)]
pub struct CampaignSender {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    rules: MessagingRules,
    lease: Lease,
    /// Rung by the API when a message is recorded, so it starts at once.
    wake: Arc<Notify>,
}

impl CampaignSender {
    /// `rules` says which outside channels carry campaigns (none: the inbox only); `holder`
    /// names this instance in the lease.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        rules: MessagingRules,
        holder: &str,
        wake: Arc<Notify>,
    ) -> Self {
        CampaignSender {
            store,
            clock,
            rules,
            lease: Lease::new("campaign-messages", holder, LEASE),
            wake,
        }
    }

    /// Sends one page of `m`; whether it was the last.
    pub async fn send_page(&self, m: &CampaignMessage, now: Timestamp) -> StoreResult<bool> {
        let page = self.store.campaign_recipients(m, now, PAGE).await?;
        let store = self.store.as_ref();
        let contacts = contacts_by_user(store, page.users.iter().cloned()).await?;
        let template = templates_by_id(store, [m.template_id])
            .await?
            .remove(&m.template_id);
        let texts = Texts::load(&self.store, &self.rules.readers.locale).await?;
        // By locale: the filled text and its recipients.
        let mut inbox: BTreeMap<String, (MessageText, Vec<(UserId, String)>)> = BTreeMap::new();
        let mut outbound: Vec<NewOutbound> = Vec::new();
        for user in &page.users {
            let c = contacts.get(user);
            let r = texts.for_reader(MessageKind::Campaign, c, &self.rules.readers);
            let key = format!("campaign:{}:{user}", m.id);
            let entry = inbox.entry(r.locale).or_insert_with_key(|locale| {
                let mut vars = Vars::new();
                vars.insert("title", m.campaign.title().to_owned());
                vars.insert("message", m.campaign.message().to_owned());
                if let Some(t) = &template {
                    vars.insert("coupon", t.spec.title.clone());
                    vars.insert("value", worth(&t.spec.value, locale));
                }
                (r.text.render(&vars), Vec::new())
            });
            if let Some(c) = c {
                outbound.extend(self.rules.deliveries(
                    c,
                    MessageKind::Campaign,
                    &key,
                    &entry.0,
                    now,
                ));
            }
            entry.1.push((user.clone(), key));
        }
        let inbox: Vec<(MessageContent, Vec<(UserId, String)>)> = inbox
            .into_iter()
            .map(|(tag, (filled, recipients))| {
                let content = MessageContent {
                    key: format!("campaign:{}:{tag}", m.id),
                    kind: MessageKind::Campaign.as_str().to_owned(),
                    title: filled.subject,
                    body: filled.body,
                };
                (content, recipients)
            })
            .collect();
        let step = CampaignPage {
            id: m.id,
            from: m.cursor.as_deref(),
            next: page.next.as_deref(),
            inbox: &inbox,
            outbound: &outbound,
        };
        self.store.send_campaign_page(&step, now).await?;
        Ok(page.next.is_none())
    }
}

#[async_trait]
impl Worker for CampaignSender {
    fn name(&self) -> &'static str {
        "campaign-messages"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        let now = self.clock.now();
        if !self.lease.hold(self.store.as_ref(), now).await? {
            return Ok(Pass::Idle(IDLE));
        }
        match self.store.next_campaign_message().await? {
            Some(m) => {
                self.send_page(&m, now).await?;
                Ok(Pass::Busy)
            }
            None => Ok(Pass::Idle(IDLE)),
        }
    }

    fn retry_after(&self) -> Duration {
        IDLE
    }

    fn waker(&self) -> Option<&Notify> {
        Some(&self.wake)
    }
}
