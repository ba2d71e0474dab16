//! A template's campaign messages on its page: the ones sent, with how far each got, and a
//! form to send one to the template's holders. The form posts with htmx and is answered with
//! the message's row (or what is wrong with the form), so the page stays where it is.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Form;
use coupond_api::routes::campaign_messages::CampaignMessageView;
use coupond_app::identify::Origin;
use coupond_app::{messages, AppError};
use coupond_domain::messaging::CampaignDraft;
use coupond_domain::TemplateId;
use serde::Deserialize;

use super::super::{guard, render};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

/// A campaign message as its row shows it.
pub struct Sent {
    pub id: i64,
    pub title: String,
    /// `holders`, or the segment's tags.
    pub audience: String,
    pub state: String,
    pub recipients: u64,
    pub queued: u64,
    pub at: String,
}

impl Sent {
    pub fn of(m: &CampaignMessageView) -> Sent {
        Sent {
            id: m.id,
            title: m.title.clone(),
            audience: match &m.segment {
                Some(s) => {
                    let tags: Vec<&str> = s.any.iter().map(|t| t.as_str()).collect();
                    format!("users tagged {}", tags.join(", "))
                }
                None => "its holders".into(),
            },
            state: m.state.clone(),
            recipients: m.recipients,
            queued: m.queued,
            at: super::super::format::at(m.created_at),
        }
    }
}

/// What the send form posts.
#[derive(Debug, Deserialize)]
pub struct SendForm {
    csrf: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    message: String,
}

#[derive(Template)]
#[template(path = "partials/campaign_sent.html")]
struct SentPartial {
    sent: Option<Sent>,
    error: Option<String>,
}

/// Sends a message to the template's holders (the application's `send_campaign`, as the
/// session's caller); answered (200, for htmx to show it) with what it was sent to, or the
/// API's words for what is wrong (over the day's limit, a title too long).
pub async fn send(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<SendForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let draft = CampaignDraft {
        title: f.title.trim().to_owned(),
        message: f.message.trim().to_owned(),
        segment: None,
    };
    let app = console.app();
    let sent = match TemplateId::new(id) {
        Ok(id) => {
            let work = app.send_campaign(&session.principal, id, draft);
            let who = session.identity.clone();
            app.acting(who, messages::SEND, Origin::default(), work)
                .await
        }
        Err(_) => Err(AppError::NotFound),
    };
    let (status, page) = match sent.map(CampaignMessageView::new) {
        Ok(m) => (
            StatusCode::OK,
            SentPartial {
                sent: Some(Sent::of(&m)),
                error: None,
            },
        ),
        // Answered 200 all the same: htmx swaps in only a successful answer, and the person
        // must read why nothing was sent.
        Err(e) => {
            let p = Problem::from(e);
            let field = p.field.as_deref().unwrap_or("message").replace('_', " ");
            let error = Some(format!("{field}: {}", p.detail));
            (StatusCode::OK, SentPartial { sent: None, error })
        }
    };
    render(status, &page)
}
