//! Messages (the platform's admins): the texts of each message kind per locale, editable with
//! a preview (an htmx partial: the text filled with sample values, as the API's preview
//! answers) and a way back to the shipped text; and the delivery log of email and SMS, newest
//! first, filtered by status.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::message_texts::{
    self, MessageTextView, OutboundFilter, OutboundView, PreviewView,
};
use coupond_domain::messaging::MessageText;
use serde::Deserialize;

use super::format::at;
use super::paging::{next_link, request, rows};
use super::{guard, problem_page, render, Shell};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

/// A delivery as a row.
#[derive(Debug, Clone)]
struct OutboundRow {
    id: i64,
    channel: String,
    kind: String,
    to: String,
    subject: String,
    status: String,
    attempts: i32,
    when: String,
    answer: String,
}

impl OutboundRow {
    fn of(o: &OutboundView) -> Self {
        OutboundRow {
            id: o.id,
            channel: o.channel.clone(),
            kind: o.kind.clone(),
            to: match &o.user_id {
                Some(u) => format!("{} ({})", o.address, u.as_str()),
                None => o.address.clone(),
            },
            subject: o.subject.clone(),
            status: o.status.clone(),
            attempts: o.attempts,
            when: at(o.sent_at.unwrap_or(o.next_at)),
            answer: o.answer.clone().unwrap_or_default(),
        }
    }
}

#[derive(Template)]
#[template(path = "messages.html")]
struct MessagesPage {
    shell: Shell,
    texts: Vec<MessageTextView>,
    log: Vec<OutboundRow>,
    next: Option<String>,
    /// The status the log is filtered by (empty: all).
    status: String,
    can_edit: bool,
}

#[derive(Debug, Default, Deserialize)]
pub struct LogQuery {
    #[serde(default)]
    status: String,
    #[serde(default)]
    after: String,
}

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<LogQuery>,
) -> Response {
    let app = console.app();
    let texts = match session
        .act(app, message_texts::READ, app.message_texts())
        .await
    {
        Ok(t) => t.items,
        Err(p) => return problem_page(&session, &p),
    };
    let status = match q.status.as_str() {
        "queued" | "sent" | "failed" => q.status.clone(),
        _ => String::new(),
    };
    let filter = OutboundFilter {
        status: (!status.is_empty()).then(|| status.clone()),
        ..OutboundFilter::default()
    };
    let log = app.outbound(filter, request(&console, &q.after));
    let (log, next) = match session.act(app, message_texts::READ, log).await {
        Ok(l) => rows(l),
        Err(p) => return problem_page(&session, &p),
    };
    let base = match status.as_str() {
        "" => "/console/messages".to_owned(),
        s => format!("/console/messages?status={s}"),
    };
    let page = MessagesPage {
        can_edit: session.may_do(message_texts::EDIT),
        shell: Shell::new(&session, "Messages"),
        texts,
        log: log.iter().map(OutboundRow::of).collect(),
        next: next_link(&base, &next),
        status,
    };
    render(StatusCode::OK, &page)
}

#[derive(Debug, Default, Deserialize)]
pub struct TextForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    subject: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    sms: String,
}

impl TextForm {
    /// The text as typed: browsers send line breaks as CRLF, texts keep LF.
    fn text(&self) -> MessageText {
        let lf = |s: &str| s.replace("\r\n", "\n");
        MessageText {
            subject: lf(&self.subject),
            body: lf(&self.body),
            sms: lf(&self.sms),
        }
    }
}

/// Saves a text, then back to the page.
pub async fn save(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path((kind, locale)): Path<(String, String)>,
    Form(f): Form<TextForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let app = console.app();
    let saved = async {
        app.put_message_text(&kind, &locale, &f.text())
            .await
            .map(drop)
    };
    back(&session, session.act(app, message_texts::EDIT, saved).await)
}

/// Goes back to the shipped text, then back to the page.
pub async fn revert(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path((kind, locale)): Path<(String, String)>,
    Form(f): Form<TextForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let app = console.app();
    let dropped = app.drop_message_text(&kind, &locale);
    back(
        &session,
        session.act(app, message_texts::EDIT, dropped).await,
    )
}

/// Back to the page after a change, or the refusal as a page.
fn back(session: &Session, done: Result<(), Problem>) -> Response {
    match done {
        Ok(()) => Redirect::to("/console/messages").into_response(),
        Err(p) => problem_page(session, &p),
    }
}

#[derive(Template)]
#[template(path = "partials/message_preview.html")]
struct PreviewPartial {
    preview: Option<PreviewView>,
    problem: String,
}

/// The htmx partial: the text as the form has it, filled with sample values (or what is
/// wrong with it).
pub async fn preview(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path((kind, locale)): Path<(String, String)>,
    Form(f): Form<TextForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let app = console.app();
    let text = f.text();
    let filled = async { message_texts::preview(&kind, &locale, &text) };
    let part = match session.act(app, message_texts::EDIT, filled).await {
        Ok(p) => PreviewPartial {
            preview: Some(p),
            problem: String::new(),
        },
        Err(p) => PreviewPartial {
            preview: None,
            problem: p.detail.clone(),
        },
    };
    render(StatusCode::OK, &part)
}
