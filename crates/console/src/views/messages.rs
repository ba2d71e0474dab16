//! Messages (the platform's admins): the texts of each message kind per locale, editable with
//! a preview (an htmx partial: the text filled with sample values, as the API's preview
//! answers) and a way back to the shipped text; and the delivery log of email and SMS, newest
//! first, filtered by status.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::routes::message_texts::{
    MessageTextView, MessageTexts, OutboundView, PreviewView,
};
use serde::Deserialize;
use serde_json::json;

use super::format::at;
use super::paging::{next_link, one_page};
use super::{guard, problem_page, render, Shell};
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
    let texts = console
        .api()
        .get(&session.caller, "/v1/message-texts")
        .await;
    let texts = match texts.into::<MessageTexts>() {
        Ok(t) => t.items,
        Err(p) => return problem_page(&session, &p),
    };
    let status = match q.status.as_str() {
        "queued" | "sent" | "failed" => q.status.clone(),
        _ => String::new(),
    };
    let path = match status.as_str() {
        "" => "/v1/outbound-messages".to_owned(),
        s => format!("/v1/outbound-messages?status={s}"),
    };
    let log = one_page(&console, &session, &path, &q.after).await;
    let (log, next) = match log.and_then(|s| s.typed::<OutboundView>()) {
        Ok(l) => l,
        Err(p) => return problem_page(&session, &p),
    };
    let base = match status.as_str() {
        "" => "/console/messages".to_owned(),
        s => format!("/console/messages?status={s}"),
    };
    let page = MessagesPage {
        can_edit: session.may_call(&Method::PUT, "/v1/message-texts/{kind}/{locale}"),
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
    fn json(&self) -> serde_json::Value {
        // Browsers send line breaks as CRLF; texts keep LF.
        let lf = |s: &str| s.replace("\r\n", "\n");
        json!({"subject": lf(&self.subject), "body": lf(&self.body), "sms": lf(&self.sms)})
    }
}

/// `kind` and `locale` as path segments of the API, which checks them; anything but letters,
/// digits, `-` and `_` is not passed on (it reads as a kind that does not exist).
fn api_path(kind: &str, locale: &str) -> String {
    let clean = |s: &str| -> String {
        match s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !s.is_empty()
        {
            true => s.to_owned(),
            false => "-".to_owned(),
        }
    };
    format!("/v1/message-texts/{}/{}", clean(kind), clean(locale))
}

/// Saves a text, then back to the page.
pub async fn save(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path((kind, locale)): Path<(String, String)>,
    Form(f): Form<TextForm>,
) -> Response {
    let body = f.json();
    change(
        &console,
        &session,
        &headers,
        &f.csrf,
        Method::PUT,
        &api_path(&kind, &locale),
        &body,
    )
    .await
}

/// Goes back to the shipped text, then back to the page.
pub async fn revert(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path((kind, locale)): Path<(String, String)>,
    Form(f): Form<TextForm>,
) -> Response {
    let path = api_path(&kind, &locale);
    change(
        &console,
        &session,
        &headers,
        &f.csrf,
        Method::DELETE,
        &path,
        &json!({}),
    )
    .await
}

/// A form's change: the CSRF guard, the API call, then back to the page (or the problem).
async fn change(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    csrf: &str,
    method: Method,
    path: &str,
    body: &serde_json::Value,
) -> Response {
    if let Some(refused) = guard(headers, session, csrf) {
        return refused;
    }
    let reply = console
        .api()
        .send_json(&session.caller, method, path, body)
        .await;
    if !reply.ok() {
        return problem_page(session, &reply.problem());
    }
    Redirect::to("/console/messages").into_response()
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
    let path = format!("{}/preview", api_path(&kind, &locale));
    let reply = console
        .api()
        .send_json(&session.caller, Method::POST, &path, &f.json())
        .await;
    let part = match reply.into::<PreviewView>() {
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
