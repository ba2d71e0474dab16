//! A merchant's template form: enrolling in an activity (the kind fixed to the activity's,
//! its bounds, cities and windows checked by the API) or a standalone template. Values are
//! entered in major units or %, and errors are shown at the field the API names.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::{ActivityView, TemplateView};
use serde::Deserialize;
use serde_json::{json, Value};

use super::activities::{hundredths, utc, Choice};
use super::{guard, problem_page, render, ActivityRow, FieldErrors, Shell, Shown};
use crate::session::Session;
use crate::Console;

/// Kinds the form offers (buy-X-get-Y needs the API's richer terms).
const KINDS: [(&str, &str); 6] = [
    ("amount_off", "Amount off"),
    ("percent_off", "Percent off"),
    ("free_days", "Free days"),
    ("deposit_waiver", "Deposit waiver"),
    ("special_price", "Special price"),
    ("free_shipping", "Free shipping"),
];

#[derive(Debug, Default, Deserialize)]
pub struct TemplateForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    activity_id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    value: String,
    #[serde(default)]
    threshold: String,
    #[serde(default)]
    cities: String,
    #[serde(default)]
    total_stock: String,
    #[serde(default)]
    per_user_limit: String,
    #[serde(default)]
    validity_days: String,
    /// Standalone templates only (UTC).
    #[serde(default)]
    claim_start: String,
    #[serde(default)]
    claim_end: String,
}

#[derive(Template)]
#[template(path = "template_new.html")]
struct NewPage {
    shell: Shell,
    activity: Option<ActivityRow>,
    kinds: Vec<Choice>,
    form: TemplateForm,
    errors: FieldErrors,
    error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Ask {
    #[serde(default)]
    activity_id: Option<i64>,
}

pub async fn new(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<Ask>,
) -> Response {
    let mut form = TemplateForm {
        kind: "amount_off".into(),
        per_user_limit: "1".into(),
        validity_days: "30".into(),
        ..TemplateForm::default()
    };
    if let Some(a) = q.activity_id {
        form.activity_id = a.to_string();
    }
    page(&console, &session, form, Shown::ok()).await
}

async fn page(
    console: &Console,
    session: &Session,
    mut form: TemplateForm,
    shown: Shown,
) -> Response {
    let activity = match form.activity_id.trim().parse::<i64>() {
        Ok(id) => match console
            .api()
            .get(&session.caller, &format!("/v1/activities/{id}"))
            .await
            .into::<ActivityView>()
        {
            Ok(a) => Some(a),
            Err(p) => return problem_page(session, &p),
        },
        Err(_) => None,
    };
    if let Some(a) = &activity {
        // Enrolling: the activity decides the kind.
        form.kind = a.terms.kind.as_str().to_owned();
    }
    let kinds = KINDS
        .iter()
        .filter(|(k, _)| activity.is_none() || form.kind == *k)
        .map(|(value, label)| Choice {
            value,
            label,
            selected: form.kind == *value,
        })
        .collect();
    let page = NewPage {
        shell: Shell::new(session, "New template"),
        activity: activity.as_ref().map(ActivityRow::of),
        kinds,
        form,
        errors: shown.errors,
        error: shown.error,
    };
    render(shown.status, &page)
}

pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<TemplateForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let body = match draft(&form) {
        Ok(b) => b,
        Err((field, why)) => {
            return page(&console, &session, form, Shown::field(field, why)).await;
        }
    };
    let reply = console
        .api()
        .send_json(&session.caller, Method::POST, "/v1/templates", &body)
        .await;
    match reply.into::<TemplateView>() {
        Ok(t) => Redirect::to(&format!("/console/templates/{}", t.id)).into_response(),
        Err(p) => page(&console, &session, form, Shown::of(&p)).await,
    }
}

type Bad = (&'static str, String);

fn whole(field: &'static str, s: &str) -> Result<i64, Bad> {
    s.trim()
        .parse()
        .map_err(|_| (field, "enter a whole number".to_owned()))
}

/// The API's draft from the form; a field that cannot be read is named with why.
fn draft(f: &TemplateForm) -> Result<Value, Bad> {
    let value = match f.kind.as_str() {
        "amount_off" => json!({"kind": "amount_off", "amount": hundredths("value", &f.value)?}),
        "percent_off" => json!({"kind": "percent_off", "bps": hundredths("value", &f.value)?}),
        "free_days" => json!({"kind": "free_days", "days": whole("value", &f.value)?}),
        "special_price" => {
            json!({"kind": "special_price", "price": hundredths("value", &f.value)?})
        }
        other => json!({"kind": other}),
    };
    let cities: Result<Vec<i64>, _> = f
        .cities
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::parse::<i64>)
        .collect();
    let mut body = json!({
        "title": f.title,
        "value": value,
        "cities": cities.map_err(|_| ("cities", "city ids, separated by commas".to_owned()))?,
        "total_stock": whole("total_stock", &f.total_stock)?,
        "per_user_limit": whole("per_user_limit", &f.per_user_limit)?,
        "validity": {"type": "relative", "days": whole("validity", &f.validity_days)?},
    });
    if !f.threshold.trim().is_empty() {
        body["threshold"] = json!(hundredths("threshold", &f.threshold)?);
    }
    if let Ok(a) = f.activity_id.trim().parse::<i64>() {
        body["activity_id"] = json!(a);
    } else {
        body["claim_window"] = json!({"start": utc(&f.claim_start), "end": utc(&f.claim_end)});
    }
    Ok(body)
}
