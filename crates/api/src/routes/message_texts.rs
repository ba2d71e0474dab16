//! The platform's message texts per kind and locale (shipped in English and Simplified
//! Chinese, editable, with a preview), and the log of email and SMS sent: the application's
//! `coupond_app::message_texts`, answered as JSON.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use coupond_app::pages::PageRequest;
use coupond_domain::messaging::MessageText;

pub use coupond_app::message_texts::{
    MessageTextView, MessageTexts, OutboundFilter, OutboundView, PreviewView,
};

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// The message texts.
///
/// Every kind's text in every locale coupond ships or the platform wrote: the platform's own
/// where it set one, else the shipped one.
#[utoipa::path(operation_id = "list_message_texts", get, path = "/v1/message-texts", tag = "messages",
    responses((status = 200, description = "The texts", body = MessageTexts), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(State(s): State<AppState>) -> ApiResult<Json<MessageTexts>> {
    Ok(Json(s.message_texts().await?))
}

/// Set a message text.
///
/// The platform's text for a kind in a locale (a new locale too). Every `{{variable}}` must be
/// one of the kind's (422 `unknown_variable` naming the field).
#[utoipa::path(operation_id = "put_message_text", put, path = "/v1/message-texts/{kind}/{locale}", tag = "messages",
    params(("kind" = String, Path, description = "Message kind"), ("locale" = String, Path, description = "Locale, e.g. en or zh-Hans")),
    request_body = MessageText,
    responses((status = 200, description = "The text", body = MessageTextView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn put(
    State(s): State<AppState>,
    ApiPath((kind, locale)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<MessageText>,
) -> ApiResult<Json<MessageTextView>> {
    Ok(Json(s.put_message_text(&kind, &locale, &body).await?))
}

/// Go back to the shipped text.
///
/// Drops the platform's text for a kind in a locale; the shipped one (or the fallback) applies
/// again. 404 when the platform set none.
#[utoipa::path(operation_id = "delete_message_text", delete, path = "/v1/message-texts/{kind}/{locale}", tag = "messages",
    params(("kind" = String, Path, description = "Message kind"), ("locale" = String, Path, description = "Locale")),
    responses((status = 204, description = "Dropped"), CommonErrors),
    security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    ApiPath((kind, locale)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    s.drop_message_text(&kind, &locale).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Preview a message text.
///
/// The text (checked as saving would check it) filled with sample values, without saving it.
#[utoipa::path(operation_id = "preview_message_text", post, path = "/v1/message-texts/{kind}/{locale}/preview", tag = "messages",
    params(("kind" = String, Path, description = "Message kind"), ("locale" = String, Path, description = "Locale")),
    request_body = MessageText,
    responses((status = 200, description = "The text filled in", body = PreviewView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn preview(
    ApiPath((kind, locale)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<MessageText>,
) -> ApiResult<Json<PreviewView>> {
    let p = coupond_app::message_texts::preview(&kind, &locale, &body)?;
    Ok(Json(p))
}

/// The delivery log.
///
/// Email and SMS messages, newest first: queued, sent (with the provider's id) or failed (with
/// its last answer).
#[utoipa::path(operation_id = "list_outbound_messages", get, path = "/v1/outbound-messages", tag = "messages",
    params(OutboundFilter),
    responses((status = 200, description = "A page of messages", body = PageOf<OutboundView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn outbound(
    State(s): State<AppState>,
    ApiQuery(mut f): ApiQuery<OutboundFilter>,
) -> ApiResult<Json<PageOf<OutboundView>>> {
    let page = PageRequest {
        cursor: f.cursor.take(),
        limit: f.limit.take(),
    };
    Ok(Json(s.outbound(f, page).await?))
}
