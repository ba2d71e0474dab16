//! A user's inbox: messages about coupons claimed, issued and about to expire.

use axum::extract::State;
use axum::{Extension, Json};
use coupond_app::pages::PageRequest;
use serde::Deserialize;
use utoipa::IntoParams;

pub use coupond_app::inbox::MessageView;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::CommonErrors;
use crate::state::AppState;

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
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.inbox(p.me()?, page).await?))
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
    Ok(Json(s.mark_read(p.me()?, id).await?))
}
