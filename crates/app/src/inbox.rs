//! A user's inbox: messages about coupons claimed, issued and about to expire, unread first,
//! newest first within each; reading one keeps the first time it was read.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{Area, Timestamp, UserId};
use coupond_store::Message;
use serde::Serialize;
use utoipa::ToSchema;

use crate::caller::{roles, Access};
use crate::context::App;
use crate::error::AppResult;
use crate::pages::{PageOf, PageRequest};

/// Who may read their inbox: the user.
pub const READ: Access = Access {
    roles: roles::USER,
    area: Area::Read,
};

/// Who may mark their messages read: the user.
pub const MARK: Access = Access {
    roles: roles::USER,
    area: Area::Campaigns,
};

/// A message as its user sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageView {
    pub id: i64,
    /// `coupon_claimed`, `coupon_issued` or `reminder`.
    pub kind: String,
    pub title: String,
    pub body: String,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<Timestamp>,
}

impl From<Message> for MessageView {
    fn from(m: Message) -> Self {
        MessageView {
            id: m.id,
            kind: m.kind,
            title: m.title,
            body: m.body,
            created_at: m.created_at,
            read_at: m.read_at,
        }
    }
}

impl App {
    /// A page of `user`'s messages (their own cursor: read or not, then id).
    pub async fn inbox(&self, user: &UserId, page: PageRequest) -> AppResult<PageOf<MessageView>> {
        let limit = page.rows(self.settings())?;
        let after = page.own_cursor(decode)?;
        let mut rows = self.store().user_messages(user, after, limit + 1).await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = more.then(|| rows.last().map(encode)).flatten();
        Ok(PageOf {
            items: rows.into_iter().map(MessageView::from).collect(),
            next_cursor,
        })
    }

    /// Marks `user`'s message `id` read.
    pub async fn mark_read(&self, user: &UserId, id: i64) -> AppResult<MessageView> {
        Ok(self.store().mark_read(user, id, self.now()).await?.into())
    }
}

fn encode(m: &Message) -> String {
    URL_SAFE_NO_PAD.encode(format!("m:{}:{}", u8::from(m.read_at.is_some()), m.id))
}

fn decode(s: &str) -> Option<(bool, i64)> {
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(s).ok()?).ok()?;
    let mut parts = text.strip_prefix("m:")?.split(':');
    let read = match parts.next()? {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    Some((read, parts.next()?.parse().ok()?))
}
