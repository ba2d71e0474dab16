//! A user's inbox: messages about coupons claimed, issued and about to expire.

use axum::extract::State;
use axum::{Extension, Json};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_store::Message;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::CommonErrors;
use crate::state::AppState;

/// A message as its user sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageView {
    pub id: i64,
    /// `coupon_claimed`, `coupon_issued` or `reminder`.
    pub kind: String,
    pub title: String,
    pub body: String,
    pub created_at: coupond_domain::Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<coupond_domain::Timestamp>,
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

/// Inbox paging.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InboxQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
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

/// Your messages.
///
/// The signed-in user's messages (coupons claimed, issued, about to expire): unread first, newest
/// first within each.
#[utoipa::path(operation_id = "my_messages", get, path = "/v1/me/messages", tag = "inbox", params(InboxQuery),
    responses((status = 200, description = "A page of messages", body = PageOf<MessageView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<InboxQuery>,
) -> ApiResult<Json<PageOf<MessageView>>> {
    let user = p.me()?;
    let limit = q.limit.unwrap_or(s.settings().default_page);
    if limit == 0 || limit > s.settings().max_page {
        return Err(ApiError::bad_request(
            "invalid_query",
            Some("limit"),
            format!("limit must be from 1 to {}", s.settings().max_page),
        ));
    }
    let after = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(decode(c).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_query",
                Some("cursor"),
                "cursor is not one this API issued",
            )
        })?),
    };
    let mut page = s.store().user_messages(user, after, limit + 1).await?;
    let more = page.len() > limit as usize;
    page.truncate(limit as usize);
    let next_cursor = if more { page.last().map(encode) } else { None };
    Ok(Json(PageOf {
        items: page.into_iter().map(MessageView::from).collect(),
        next_cursor,
    }))
}

/// Mark a message read.
///
/// Marks one of your messages read; reading it again keeps the first time.
#[utoipa::path(operation_id = "read_message", post, path = "/v1/me/messages/{id}/read", tag = "inbox",
    params(("id" = i64, Path, description = "Message id")),
    responses((status = 200, description = "The message", body = MessageView), CommonErrors),
    security(("bearer" = [])))]
pub async fn read(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<MessageView>> {
    let user = p.me()?;
    Ok(Json(s.store().mark_read(user, id, s.now()).await?.into()))
}
