//! Campaign messages: the platform or a merchant sends a title and message about a template
//! to its holders or to a segment, through each user's inbox and the outside channels they
//! chose; sent in the background, at most `messages.campaigns_per_owner_per_day` per owner
//! per local day.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use coupond_app::records::CampaignMessage;
use coupond_domain::messaging::CampaignDraft;
use coupond_domain::{Segment, TemplateId, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::{self, PageOf};
use crate::routes::{BodyErrors, CommonErrors, ConflictError};
use crate::state::AppState;

/// A campaign message and how far its sending got.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CampaignMessageView {
    pub id: i64,
    pub template_id: TemplateId,
    pub title: String,
    pub message: String,
    /// `holders` or `segment`.
    pub audience: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<Segment>,
    /// `sending` or `sent`.
    pub state: String,
    /// Users whose inbox got it so far.
    pub recipients: u64,
    /// Emails and SMS queued so far (see `GET /v1/outbound-messages`).
    pub queued: u64,
    /// Who sent it (`platform`, `merchant:7`, ...).
    pub sent_by: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
}

impl CampaignMessageView {
    /// The view of a recorded message (what the API answers, and the console shows).
    pub fn new(m: CampaignMessage) -> Self {
        let segment = m.campaign.segment().cloned();
        CampaignMessageView {
            id: m.id,
            template_id: m.template_id,
            title: m.campaign.title().to_owned(),
            message: m.campaign.message().to_owned(),
            audience: if segment.is_some() {
                "segment"
            } else {
                "holders"
            }
            .into(),
            segment,
            state: if m.finished_at.is_some() {
                "sent"
            } else {
                "sending"
            }
            .into(),
            recipients: m.recipients,
            queued: m.queued,
            sent_by: m.actor.to_text(),
            created_at: m.created_at,
            finished_at: m.finished_at,
        }
    }
}

/// Send a campaign message.
///
/// Sends a title and message about a template to its holders (users holding an unused coupon
/// of it) or, with `segment`, to every user holding any of its tags (with
/// `active_within_days`, only those seen lately; a merchant may name only the tags the
/// platform shares, 422 `tag_not_shared`; the template must be claimable now, 409
/// `not_claimable`). Each recipient gets it in the inbox,
/// and by email and SMS where the channel carries `campaign` messages, the user can be reached
/// on it and did not turn campaigns off; the `campaign` message text (per locale) shapes it.
/// Answered 202 at once; sent in the background. A sender (a merchant, or the
/// platform) may send `messages.campaigns_per_owner_per_day` a local day (409
/// `campaign_limit` past it).
#[utoipa::path(operation_id = "send_campaign_message", post, path = "/v1/templates/{id}/messages", tag = "messages",
    params(("id" = i64, Path, description = "Template id")),
    request_body = CampaignDraft,
    responses((status = 202, description = "Accepted; being sent", body = CampaignMessageView),
        CommonErrors, BodyErrors, ConflictError),
    security(("bearer" = [])))]
pub async fn send(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiJson(body): ApiJson<CampaignDraft>,
) -> ApiResult<Response> {
    let m = s.send_campaign(&p, id, body).await?;
    Ok((StatusCode::ACCEPTED, Json(CampaignMessageView::new(m))).into_response())
}

/// Which page of a template's messages.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MessagesQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List a template's campaign messages.
///
/// A template's campaign messages, newest first, with how far each got: for the platform
/// every one; for the merchant owning the template, those it sent.
#[utoipa::path(operation_id = "list_campaign_messages", get, path = "/v1/templates/{id}/messages", tag = "messages",
    params(("id" = i64, Path, description = "Template id"), MessagesQuery),
    responses((status = 200, description = "A page of messages", body = PageOf<CampaignMessageView>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<TemplateId>,
    ApiQuery(q): ApiQuery<MessagesQuery>,
) -> ApiResult<Json<PageOf<CampaignMessageView>>> {
    let page = pagination::page(q.cursor.as_deref(), q.limit, s.settings())?;
    let rows = s.sent_messages(&p, id, page).await?;
    Ok(Json(pagination::finish(
        rows,
        page,
        |m| m.id,
        CampaignMessageView::new,
    )))
}
