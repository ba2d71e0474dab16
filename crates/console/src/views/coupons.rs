//! A coupon's page (the platform; the merchant owning its template): who holds it, what it is
//! worth, its history (every status change with who made it, the order and the reason), and
//! the revoke form while it can still be revoked.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::format::{instant, value};
use super::{problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

/// One status change: (from, to, actor, order, reason, at).
type Change = (String, String, String, String, String, String);

#[derive(Template)]
#[template(path = "coupon.html")]
struct CouponPage {
    shell: Shell,
    id: i64,
    status: String,
    user: String,
    template_id: i64,
    template: String,
    worth: String,
    changes: Vec<Change>,
    revocable: bool,
}

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let api = console.api();
    let h = match api
        .get(&session.caller, &format!("/v1/coupons/{id}/history"))
        .await
        .into::<Value>()
    {
        Ok(h) => h,
        Err(p) => return problem_page(&session, &p),
    };
    let template_id = h["template_id"].as_i64().unwrap_or(0);
    let t = api
        .get(&session.caller, &format!("/v1/templates/{template_id}"))
        .await
        .into::<Value>()
        .unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let changes = h["events"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["from"].as_str().unwrap_or("—").to_owned(),
                text(&e["to"]),
                text(&e["actor"]),
                text(&e["order_id"]),
                text(&e["reason"]),
                instant(&e["at"]),
            )
        })
        .collect();
    let status = text(&h["status"]);
    let page = CouponPage {
        shell: Shell::new(&session, format!("Coupon {id}")),
        id,
        revocable: status == "unused" || status == "locked",
        status,
        user: text(&h["user_id"]),
        template_id,
        template: text(&t["title"]),
        worth: value(&t["value"]),
        changes,
    };
    render(StatusCode::OK, &page)
}
