//! Operators' campaign messages ([`CampaignMessageStore`]): a title and message about a
//! template, sent to its holders or a segment by a background worker that pages through the
//! recipients with a cursor kept in the message's row, so a restart goes on where it stopped.
//! How many an owner may send is capped per local day, decided in the database.

use async_trait::async_trait;
use coupond_domain::messaging::Campaign;
use coupond_domain::{Actor, TemplateId, Timestamp, UserId};

use crate::{MessageContent, NewOutbound, Page, StoreResult};

/// A campaign message to record.
#[derive(Clone, Debug)]
pub struct NewCampaignMessage<'a> {
    pub template: TemplateId,
    /// [`owner_key`](crate::owner_key) of the merchant that sends it (0: the platform).
    pub owner: i64,
    pub actor: &'a Actor,
    pub campaign: &'a Campaign,
}

/// A campaign message and how far its sending got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CampaignMessage {
    pub id: i64,
    pub template_id: TemplateId,
    pub owner: i64,
    pub actor: Actor,
    pub campaign: Campaign,
    /// Where the next page of recipients starts (`None`: at the start); meaningful while
    /// sending.
    pub cursor: Option<String>,
    /// Users reached so far (each once).
    pub recipients: u64,
    /// Email and SMS messages queued so far (the inbox is every recipient's).
    pub queued: u64,
    pub created_at: Timestamp,
    /// When the last recipient was reached; `None` while sending.
    pub finished_at: Option<Timestamp>,
}

/// A page of recipients: the users, and the cursor after the last of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recipients {
    pub users: Vec<UserId>,
    /// `None` when the page is the last.
    pub next: Option<String>,
}

/// One page of a campaign message, rendered.
#[derive(Clone, Debug)]
pub struct CampaignPage<'a> {
    pub id: i64,
    /// The cursor the page was read from: a page whose message moved on meanwhile (another
    /// instance took over while this one stalled) is not sent.
    pub from: Option<&'a str>,
    /// Where the next page starts; `None`: this page is the last.
    pub next: Option<&'a str>,
    /// The inbox messages: one content per locale, with its recipients and their keys.
    pub inbox: &'a [(MessageContent, Vec<(UserId, String)>)],
    /// The email and SMS deliveries.
    pub outbound: &'a [NewOutbound],
}

#[async_trait]
pub trait CampaignMessageStore: Send + Sync {
    /// Records a message to send if its owner recorded fewer than `max` since `since` (the
    /// start of the local day); otherwise `Conflict(Conflict::Limit)`. Two at once of one
    /// owner take turns, so both cannot count below the cap.
    async fn insert_campaign_message(
        &self,
        new: &NewCampaignMessage<'_>,
        since: Timestamp,
        max: u32,
        now: Timestamp,
    ) -> StoreResult<CampaignMessage>;
    async fn campaign_message(&self, id: i64) -> StoreResult<CampaignMessage>;
    /// A template's messages, newest first, below `page.after` when given; with `sender`,
    /// only those it sent ([`owner_key`](crate::owner_key)).
    async fn template_campaign_messages(
        &self,
        template: TemplateId,
        sender: Option<i64>,
        page: Page,
    ) -> StoreResult<Vec<CampaignMessage>>;
    /// The oldest message still sending.
    async fn next_campaign_message(&self) -> StoreResult<Option<CampaignMessage>>;
    /// Up to `limit` recipients of `m` after its cursor, by user id, each once: holders of an
    /// unused coupon valid at `now`, or the segment's users. The cursor is the last user id.
    async fn campaign_recipients(
        &self,
        m: &CampaignMessage,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Recipients>;
    /// Sends a page of message `page.id` in one transaction: its inbox messages and its email
    /// and SMS deliveries (each skipped where the user has it already), its cursor moved to
    /// `page.next` (`None`: finished at `now`), and the messages added counted. Nothing if
    /// the message is finished already or its cursor is no longer `page.from`.
    async fn send_campaign_page(&self, page: &CampaignPage<'_>, now: Timestamp) -> StoreResult<()>;
}
