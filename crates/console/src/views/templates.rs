//! Templates: the list (the platform's across merchants, a merchant's own), a template's page
//! (summary, publish and abort, claims and uses per hour as a chart, bulk issuance by file
//! upload with live progress).

use askama::Template;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_domain::TemplateStatus;
use serde::Deserialize;
use serde_json::Value;

use super::format::{money, window};
use super::home::items;
use super::{guard, problem_page, render, Shell, TemplateRow};
use crate::api::Problem;
use crate::session::Session;
use crate::Console;

mod chart;

use chart::Chart;

#[derive(Debug, Default, Deserialize)]
pub struct Filter {
    #[serde(default)]
    status: String,
}

#[derive(Template)]
#[template(path = "templates.html")]
struct ListPage {
    shell: Shell,
    platform: bool,
    status: String,
    statuses: Vec<&'static str>,
    rows: Vec<TemplateRow>,
}

pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(f): Query<Filter>,
) -> Response {
    let statuses: Vec<&'static str> = TemplateStatus::ALL.iter().map(|s| s.as_str()).collect();
    let status = statuses
        .iter()
        .find(|s| **s == f.status)
        .copied()
        .unwrap_or("");
    let mut path = "/v1/templates?limit=200".to_owned();
    if !status.is_empty() {
        path.push_str(&format!("&status={status}"));
    }
    match console.api().get(&session.key, &path).await.into::<Value>() {
        Ok(page) => render(
            StatusCode::OK,
            &ListPage {
                shell: Shell::new(&session, "Templates"),
                platform: session.is_platform(),
                status: status.to_owned(),
                statuses,
                rows: items(&page).map(TemplateRow::of).collect(),
            },
        ),
        Err(p) => problem_page(&session, &p),
    }
}

/// A bulk issuance job, as its progress bar shows it.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: i64,
    pub state: String,
    pub handled: u64,
    pub requested: u64,
    pub issued: u64,
    pub skipped: u64,
    pub sold_out: u64,
    pub invalid: u64,
    pub done: bool,
}

impl Job {
    fn of(j: &Value) -> Self {
        let n = |k: &str| j[k].as_u64().unwrap_or(0);
        let state = j["state"].as_str().unwrap_or("").to_owned();
        Job {
            id: j["id"].as_i64().unwrap_or(0),
            done: state == "done" || state == "failed",
            state,
            handled: n("handled"),
            requested: n("requested"),
            issued: n("issued"),
            skipped: n("skipped"),
            sold_out: n("sold_out"),
            invalid: n("invalid"),
        }
    }
}

#[derive(Template)]
#[template(path = "template.html")]
struct TemplatePage {
    shell: Shell,
    t: TemplateRow,
    claim_window: String,
    budget: String,
    reserved: String,
    can_publish: bool,
    can_abort: bool,
    /// A live template's stock can be raised.
    can_top_up: bool,
    chart: Chart,
    hours: u32,
    ranges: Vec<u32>,
    jobs: Vec<Job>,
    /// The first holders of its coupons: (coupon id, user, status).
    holders: Vec<(i64, String, String)>,
    notice: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    #[serde(default)]
    notice: String,
    /// The chart's range in hours (24, 48 or 168).
    #[serde(default)]
    hours: Option<u32>,
}

/// The chart's ranges a person picks from.
const RANGES: [u32; 3] = [24, 48, 168];

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
    Query(n): Query<Notice>,
) -> Response {
    let api = console.api();
    let hours = n.hours.filter(|h| RANGES.contains(h)).unwrap_or(48);
    let t = match api
        .get(&session.key, &format!("/v1/templates/{id}"))
        .await
        .into::<Value>()
    {
        Ok(t) => t,
        Err(p) => return problem_page(&session, &p),
    };
    let stats = api
        .get(
            &session.key,
            &format!("/v1/templates/{id}/stats?hours={hours}"),
        )
        .await
        .into::<Value>()
        .unwrap_or(Value::Null);
    let jobs = api
        .get(
            &session.key,
            &format!("/v1/issuances?template_id={id}&limit=200"),
        )
        .await
        .into::<Value>()
        .unwrap_or(Value::Null);
    let holders = api
        .get(
            &session.key,
            &format!("/v1/templates/{id}/coupons?limit=20"),
        )
        .await
        .into::<Value>()
        .unwrap_or(Value::Null);
    let row = TemplateRow::of(&t);
    let page = TemplatePage {
        holders: items(&holders)
            .map(|c| {
                (
                    c["id"].as_i64().unwrap_or(0),
                    c["user_id"].as_str().unwrap_or("").to_owned(),
                    c["status"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect(),
        shell: Shell::new(&session, row.title.clone()),
        can_publish: row.status == "draft" && t["activity_id"].is_null(),
        can_abort: !matches!(row.status.as_str(), "aborted" | "expired" | "ended"),
        can_top_up: matches!(row.status.as_str(), "scheduled" | "active"),
        claim_window: if t["claim_window"].is_object() {
            window(&t["claim_window"])
        } else {
            "the activity's run".into()
        },
        budget: t["budget"]
            .as_i64()
            .map(money)
            .unwrap_or_else(|| "no cap".into()),
        reserved: money(t["reserved"].as_i64().unwrap_or(0)),
        chart: Chart::of(&stats["per_hour"]),
        hours,
        ranges: RANGES.to_vec(),
        jobs: items(&jobs)
            .map(Job::of)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .take(5)
            .collect(),
        notice: Some(n.notice).filter(|s| !s.is_empty() && s.len() < 200),
        t: row,
    };
    render(StatusCode::OK, &page)
}

#[derive(Debug, Default, Deserialize)]
pub struct Action {
    #[serde(default)]
    csrf: String,
}

pub async fn publish(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(&console, &session, &headers, id, &f.csrf, "publish").await
}

pub async fn abort(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<Action>,
) -> Response {
    act(&console, &session, &headers, id, &f.csrf, "abort").await
}

async fn act(
    console: &Console,
    session: &Session,
    headers: &HeaderMap,
    id: i64,
    csrf: &str,
    action: &str,
) -> Response {
    if let Some(refused) = guard(headers, session, csrf) {
        return refused;
    }
    let path = format!("/v1/templates/{id}/{action}");
    let reply = console
        .api()
        .call(&session.key, Method::POST, &path, None)
        .await;
    if !reply.ok() {
        return problem_page(session, &reply.problem());
    }
    let done = if action == "publish" {
        "published"
    } else {
        "aborted"
    };
    Redirect::to(&format!("/console/templates/{id}?notice={done}")).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct TopUp {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    total_stock: String,
}

/// Raises the stock of a live template (`PATCH` with `total_stock`); the API refuses a lower
/// one (`not_raised`), shown on the template's page.
pub async fn top_up(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<TopUp>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let Ok(stock) = f.total_stock.trim().parse::<i64>() else {
        return Redirect::to(&format!(
            "/console/templates/{id}?notice=not+changed:+enter+a+whole+number"
        ))
        .into_response();
    };
    let path = format!("/v1/templates/{id}");
    let body = serde_json::json!({"total_stock": stock});
    let reply = console
        .api()
        .send_json(&session.key, Method::PATCH, &path, &body)
        .await;
    if !reply.ok() {
        return problem_page(&session, &reply.problem());
    }
    Redirect::to(&format!("/console/templates/{id}?notice=topped+up")).into_response()
}

/// The holders of a template's coupons as CSV (the API's page of up to 200, as a download).
pub async fn holders_csv(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let path = format!("/v1/templates/{id}/coupons?limit=200&format=csv");
    let reply = console.api().get(&session.key, &path).await;
    if !reply.ok() {
        return problem_page(&session, &reply.problem());
    }
    let name = format!("attachment; filename=\"template-{id}-coupons.csv\"");
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/csv; charset=utf-8".to_owned(),
            ),
            (axum::http::header::CONTENT_DISPOSITION, name),
        ],
        reply.bytes,
    )
        .into_response()
}

/// A file of user ids (the `csrf` part first, then `file`): sent to the API as the upload
/// it is; answered with the progress partial, which polls until the job is done.
pub async fn upload(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    mut form: Multipart,
) -> Response {
    // Held until the API has the file: the file is in memory until then.
    let Some(_permit) = console.upload_permit() else {
        let p = Problem {
            status: 429,
            code: "too_many_uploads".into(),
            field: Some("file".into()),
            detail: "other uploads are being read right now; try again in a moment".into(),
        };
        return progress_error(&p);
    };
    let (mut csrf, mut file) = (String::new(), None);
    while let Ok(Some(field)) = form.next_field().await {
        match field.name() {
            Some("csrf") => csrf = field.text().await.unwrap_or_default(),
            Some("file") => file = field.bytes().await.ok(),
            _ => {}
        }
    }
    if let Some(refused) = guard(&headers, &session, &csrf) {
        return refused;
    }
    let Some(file) = file.filter(|f| !f.is_empty()) else {
        let p = Problem {
            status: 422,
            code: "no_file".into(),
            field: Some("file".into()),
            detail: "choose a file of user ids".into(),
        };
        return progress_error(&p);
    };
    let path = format!("/v1/templates/{id}/issuances");
    let reply = console
        .api()
        .call(
            &session.key,
            Method::POST,
            &path,
            Some(("text/csv", file.to_vec())),
        )
        .await;
    match reply.into::<Value>() {
        Ok(j) => render(StatusCode::OK, &Progress { job: Job::of(&j) }),
        Err(p) => progress_error(&p),
    }
}

#[derive(Template)]
#[template(path = "partials/progress.html")]
struct Progress {
    job: Job,
}

#[derive(Template)]
#[template(path = "partials/upload_error.html")]
struct UploadError {
    detail: String,
}

fn progress_error(p: &Problem) -> Response {
    // 200 so htmx swaps it in where the progress would be.
    render(
        StatusCode::OK,
        &UploadError {
            detail: p.detail.clone(),
        },
    )
}

/// The progress partial of job `id`, polled by htmx until the job is done.
pub async fn progress(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    match console
        .api()
        .get(&session.key, &format!("/v1/issuances/{id}"))
        .await
        .into::<Value>()
    {
        Ok(j) => render(StatusCode::OK, &Progress { job: Job::of(&j) }),
        Err(p) if p.status == 404 => problem_page(&session, &p),
        Err(p) => progress_error(&p),
    }
}
