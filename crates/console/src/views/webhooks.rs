//! Webhook endpoints: the caller's (the platform's: every owner's), a page of 50 at a time,
//! each with its recent deliveries; and, for those whose role manages them (the API's admin
//! area), a form to register one (its signing secret shown once, on the page that answers),
//! and per endpoint Test (a `webhook.ping` queued through the sender), Disable and Delete
//! (both asked first). Every read and change is the application's (`coupond_app::webhooks`),
//! called as the session.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::events::kind;
use coupond_app::pages::PageRequest;
use coupond_app::webhooks::{self, DeliveryView, WebhookBody, WebhookView};
use serde::Deserialize;

use super::format::at;
use super::names::MerchantNames;
use super::{guard, problem_page, render, FieldErrors, Shell, Shown};
use crate::session::Session;
use crate::Console;

/// A delivery as a row.
#[derive(Debug, Clone)]
struct DeliveryRow {
    event: String,
    state: String,
    attempts: usize,
    /// The last attempt's outcome: the receiver's status, or the error; empty before one.
    last: String,
    queued: String,
    /// When the last attempt was made; empty before one.
    tried: String,
    /// While pending: when the next attempt is due.
    next: String,
}

impl DeliveryRow {
    fn of(d: &DeliveryView) -> Self {
        let last = d.attempts.last();
        DeliveryRow {
            event: d.event_type.clone(),
            state: d.state.clone(),
            attempts: d.attempts.len(),
            last: last
                .map(|a| match (a.status, &a.error) {
                    (Some(s), _) => format!("HTTP {s}"),
                    (None, Some(e)) => e.clone(),
                    (None, None) => String::new(),
                })
                .unwrap_or_default(),
            queued: at(d.created_at),
            tried: last.map(|a| at(a.at)).unwrap_or_default(),
            next: d.next_attempt_at.map(at).unwrap_or_default(),
        }
    }
}

/// A webhook endpoint with its recent deliveries.
#[derive(Debug, Clone)]
struct Hook {
    id: i64,
    url: String,
    types: String,
    /// The owner, in words: "platform" or the merchant's name with its id.
    owner: String,
    created: String,
    disabled: Option<String>,
    deliveries: Vec<DeliveryRow>,
}

/// The registration form as sent: the URL and the event types ticked (`*` for all).
#[derive(Debug, Default, Clone)]
struct NewHook {
    url: String,
    types: Vec<String>,
}

impl NewHook {
    fn ticks(&self, t: &&str) -> bool {
        self.types.iter().any(|x| x == t)
    }
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    shell: Shell,
    hooks: Vec<Hook>,
    /// The next page's cursor; empty on the last page.
    next: String,
    /// Every event type an endpoint may ask for.
    kinds: &'static [&'static str],
    form: NewHook,
    errors: FieldErrors,
    error: Option<String>,
    /// An endpoint just registered: (id, secret), shown this once.
    created: Option<(i64, String)>,
}

/// Which page of endpoints: `after` is the API's `next_cursor` of the page before.
#[derive(Debug, Default, Deserialize)]
pub struct HooksQuery {
    #[serde(default)]
    after: String,
}

/// What the page shows besides the endpoints.
#[derive(Default)]
struct Extra {
    form: NewHook,
    shown: Shown,
    created: Option<(i64, String)>,
}

pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<HooksQuery>,
) -> Response {
    hooks_page(&console, &session, &q.after, Extra::default()).await
}

/// The caller's endpoints after cursor `after`, each with its latest deliveries.
async fn hooks_page(console: &Console, session: &Session, after: &str, extra: Extra) -> Response {
    let after = super::feeds::plain(after, "-_");
    let app = console.app();
    let listed = app.webhooks(&session.principal, PageRequest::after(&after, 50));
    let list = match session.act(app, webhooks::READ, listed).await {
        Ok(l) => l,
        Err(p) => return problem_page(session, &p),
    };
    let merchants = MerchantNames::load(console, session).await;
    let mut hooks = Vec::new();
    for w in &list.items {
        hooks.push(hook(console, session, w, &merchants).await);
    }
    let page = WebhooksPage {
        shell: Shell::new(session, "Webhooks"),
        hooks,
        next: list.next_cursor.unwrap_or_default(),
        kinds: &kind::ALL,
        form: extra.form,
        errors: extra.shown.errors,
        error: extra.shown.error,
        created: extra.created,
    };
    render(extra.shown.status, &page)
}

/// An endpoint of the API's list, with its latest 10 deliveries (none shown when they cannot
/// be read: the endpoint still is).
async fn hook(
    console: &Console,
    session: &Session,
    w: &WebhookView,
    merchants: &MerchantNames,
) -> Hook {
    let (id, app) = (w.id, console.app());
    let latest = app.webhook_deliveries(&session.principal, id, PageRequest::first(10));
    let deliveries = session.act(app, webhooks::READ, latest).await;
    let deliveries = deliveries.map(|p| p.items).unwrap_or_default();
    Hook {
        id,
        url: w.url.clone(),
        types: match w.event_types.as_slice() {
            [all] if all == "*" => "all events".to_owned(),
            types => types.join(", "),
        },
        owner: w
            .merchant_id
            .map_or("platform".to_owned(), |m| merchants.one(m.get())),
        created: at(w.created_at),
        disabled: w.disabled_at.map(at),
        deliveries: deliveries.iter().map(DeliveryRow::of).collect(),
    }
}

/// Registers an endpoint from the form (`url`, one `event_types` per box ticked) and answers
/// the page with its secret, this once; or the form again with the API's refusal.
pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| -> Vec<String> {
        pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let csrf = field("csrf").concat();
    if let Some(refused) = guard(&headers, &session, &csrf) {
        return refused;
    }
    let form = NewHook {
        url: field("url").concat().trim().to_owned(),
        types: field("event_types"),
    };
    // "All events" stands for every type.
    let types = if form.types.iter().any(|t| t == "*") {
        vec!["*".to_owned()]
    } else {
        form.types.clone()
    };
    let body = WebhookBody {
        url: form.url.clone(),
        event_types: types,
    };
    let app = console.app();
    let registered = app.register_webhook(&session.principal, &body);
    let extra = match session.act(app, webhooks::MANAGE, registered).await {
        Ok(w) => Extra {
            created: Some((w.id, w.secret.unwrap_or_default())),
            shown: Shown {
                status: StatusCode::CREATED,
                ..Shown::ok()
            },
            ..Extra::default()
        },
        Err(p) => Extra {
            form,
            shown: Shown::of(&p),
            created: None,
        },
    };
    hooks_page(&console, &session, "", extra).await
}

#[derive(Debug, Default, Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    csrf: String,
}

/// What a button does to an endpoint.
#[derive(Clone, Copy, Debug)]
enum Action {
    Ping,
    Disable,
    Delete,
}

/// One of an endpoint's actions; back to the endpoints, or the refusal as a page.
async fn act(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    form: &ActionForm,
    (action, id): (Action, i64),
) -> Response {
    if let Some(refused) = guard(headers, session, &form.csrf) {
        return refused;
    }
    let (app, p) = (console.app(), &session.principal);
    let done = async {
        match action {
            Action::Ping => app.ping_webhook(p, id).await.map(drop),
            Action::Disable => app.disable_webhook(p, id).await.map(drop),
            Action::Delete => app.delete_webhook(p, id).await,
        }
    };
    if let Err(problem) = session.act(app, webhooks::MANAGE, done).await {
        return problem_page(session, &problem);
    }
    Redirect::to("/console/webhooks").into_response()
}

/// Queues a test ping to the endpoint: it shows among its deliveries, pending until sent.
pub async fn ping(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> Response {
    act(&console, &session, &headers, &form, (Action::Ping, id)).await
}

/// Disables the endpoint: nothing more is sent to it; its deliveries stay listed.
pub async fn disable(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> Response {
    act(&console, &session, &headers, &form, (Action::Disable, id)).await
}

/// Deletes the endpoint with its deliveries.
pub async fn delete(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> Response {
    act(&console, &session, &headers, &form, (Action::Delete, id)).await
}
