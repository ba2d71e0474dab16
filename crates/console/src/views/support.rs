//! The platform's support and money pages: a user's coupons (the merchant sees only its
//! templates' coupons, as the API decides) and tags with a revoke button per coupon, and the
//! reconciliation of a period with its CSV download.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use serde_json::{json, Value};

use super::activities::utc;
use super::format::{instant, money};
use super::paging::{next_link, one_page};
use super::{attachment, guard, problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

/// A coupon as a row.
#[derive(Debug, Clone)]
struct CouponRow {
    id: i64,
    template: String,
    status: String,
    usable: bool,
    why: String,
    valid_until: String,
    /// Whether revoking makes sense (an unused or locked coupon).
    revocable: bool,
}

impl CouponRow {
    fn of(c: &Value) -> Self {
        let status = c["status"].as_str().unwrap_or("").to_owned();
        let why: Vec<String> = items_of(&c["unusable_reasons"])
            .map(|r| {
                r.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| r["code"].as_str().unwrap_or("").to_owned())
            })
            .collect();
        CouponRow {
            id: c["id"].as_i64().unwrap_or(0),
            template: c["template"]["title"].as_str().unwrap_or("").to_owned(),
            usable: c["usable"].as_bool().unwrap_or(false),
            why: why.join(", "),
            valid_until: instant(&c["valid_until"]),
            revocable: status == "unused" || status == "locked",
            status,
        }
    }
}

fn items_of(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

#[derive(Debug, Default, Deserialize)]
pub struct Lookup {
    #[serde(default)]
    user: String,
    /// Which page of the user's coupons: the API's `next_cursor` of the page before.
    #[serde(default)]
    after: String,
}

#[derive(Template)]
#[template(path = "users.html")]
struct UsersPage {
    shell: Shell,
    user: String,
    /// A page of the user's coupons, and the link to the next.
    coupons: Vec<CouponRow>,
    next: Option<String>,
    tags: Vec<String>,
    error: Option<String>,
}

pub async fn users(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<Lookup>,
) -> Response {
    let user = q.user.trim().to_owned();
    let mut page = UsersPage {
        shell: Shell::new(&session, "Users"),
        user: user.clone(),
        coupons: Vec::new(),
        next: None,
        tags: Vec::new(),
        error: None,
    };
    let valid = !user.is_empty()
        && user.len() <= 64
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:@-".contains(c));
    if !user.is_empty() && !valid {
        page.error = Some("A user id is 1 to 64 letters, digits and _.:@-".into());
    } else if valid {
        let api = console.api();
        let path = format!("/v1/users/{user}/coupons");
        match one_page(&console, &session, &path, &q.after).await {
            Ok(c) => {
                page.coupons = c.items.iter().map(CouponRow::of).collect();
                page.next = next_link(&format!("/console/users?user={user}"), &c.next);
            }
            Err(p) => page.error = Some(p.detail),
        }
        // Tags are the platform's; a merchant is not shown them (the API says 403).
        if let Ok(t) = api
            .get(&session.caller, &format!("/v1/users/{user}/tags"))
            .await
            .into::<Value>()
        {
            page.tags = items_of(&t["tags"])
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect();
        }
    }
    render(StatusCode::OK, &page)
}

#[derive(Debug, Default, Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    user: String,
}

pub async fn revoke(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<RevokeForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let reason = if f.reason.trim().is_empty() {
        "revoked in the console"
    } else {
        f.reason.trim()
    };
    let path = format!("/v1/coupons/{id}/revoke");
    let reply = console
        .api()
        .send_json(
            &session.caller,
            Method::POST,
            &path,
            &json!({"reason": reason}),
        )
        .await;
    if !reply.ok() {
        return problem_page(&session, &reply.problem());
    }
    let user: String = f
        .user
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "_.:@-".contains(*c))
        .collect();
    if user.is_empty() {
        return Redirect::to(&format!("/console/coupons/{id}")).into_response();
    }
    Redirect::to(&format!("/console/users?user={user}")).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct Period {
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    format: String,
}

/// A reconciliation row.
#[derive(Debug, Clone)]
struct Row {
    template: String,
    merchant: String,
    funded_by: String,
    used: i64,
    discount: String,
    refunded: i64,
    net: String,
}

#[derive(Template)]
#[template(path = "reconciliation.html")]
struct ReconciliationPage {
    shell: Shell,
    from: String,
    to: String,
    rows: Vec<Row>,
    /// (funder, used, discount, refunded, net)
    totals: Vec<(String, i64, String, i64, String)>,
    error: Option<String>,
}

pub async fn reconciliation(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<Period>,
) -> Response {
    let mut page = ReconciliationPage {
        shell: Shell::new(&session, "Reconciliation"),
        from: q.from.clone(),
        to: q.to.clone(),
        rows: Vec::new(),
        totals: Vec::new(),
        error: None,
    };
    if q.from.is_empty() || q.to.is_empty() {
        return render(StatusCode::OK, &page);
    }
    let (from, to) = (utc(&q.from), utc(&q.to));
    let ok = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || b"-:TZ.".contains(&b))
    };
    if !ok(&from) || !ok(&to) {
        page.error = Some("choose both ends of the period".into());
        return render(StatusCode::UNPROCESSABLE_ENTITY, &page);
    }
    let csv = q.format == "csv";
    let path = format!(
        "/v1/reports/reconciliation?from={from}&to={to}{}",
        if csv { "&format=csv" } else { "" }
    );
    let reply = if csv {
        match console.api().stream(&session.caller, &path).await {
            Ok(res) => {
                let name = format!("reconciliation-{}.csv", &from[..10.min(from.len())]);
                return attachment(res, &name);
            }
            Err(reply) => reply,
        }
    } else {
        console.api().get(&session.caller, &path).await
    };
    match reply.into::<Value>() {
        Ok(r) => {
            page.rows = items_of(&r["rows"])
                .map(|x| Row {
                    template: x["title"].as_str().unwrap_or("").to_owned(),
                    merchant: x["merchant_id"]
                        .as_i64()
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "platform".into()),
                    funded_by: x["funded_by"].as_str().unwrap_or("").to_owned(),
                    used: x["coupons_used"].as_i64().unwrap_or(0),
                    discount: money(x["discount"].as_i64().unwrap_or(0)),
                    refunded: x["coupons_refunded"].as_i64().unwrap_or(0),
                    net: money(x["net_discount"].as_i64().unwrap_or(0)),
                })
                .collect();
            page.totals = ["platform", "merchants", "total"]
                .iter()
                .map(|k| {
                    let t = &r[*k];
                    (
                        (*k).to_owned(),
                        t["coupons_used"].as_i64().unwrap_or(0),
                        money(t["discount"].as_i64().unwrap_or(0)),
                        t["coupons_refunded"].as_i64().unwrap_or(0),
                        money(t["net_discount"].as_i64().unwrap_or(0)),
                    )
                })
                .collect();
            render(StatusCode::OK, &page)
        }
        Err(p) => {
            page.error = Some(p.detail);
            render(
                StatusCode::from_u16(p.status).unwrap_or(StatusCode::BAD_REQUEST),
                &page,
            )
        }
    }
}
