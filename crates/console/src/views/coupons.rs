//! A coupon's page (the platform; the merchant owning its template): who holds it, what it is
//! worth, the order locking it and until when, its history (every status change with who made
//! it, the order and the reason), the revoke form while it can still be revoked, and the form
//! that extends the order's lock (the platform's support).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::routes::checkout::HistoryView;
use coupond_domain::CouponAction;

use serde::Deserialize;
use serde_json::json;

use super::activities::utc;
use super::format::{at, worth};
use super::{guard, problem_page, render, Shell};
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
    /// While locked: the order, its deadline in words and as the form's value
    /// (`2026-03-04T12:00`, UTC).
    held_by: Option<(String, String, String)>,
    /// Whether the extend form shows (the API would let this session extend the lock).
    can_extend: bool,
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
        .into::<HistoryView>()
    {
        Ok(h) => h,
        Err(p) => return problem_page(&session, &p),
    };
    let template_id = h.template_id.get();
    let t = match super::templates::read(&console, &session, template_id).await {
        Ok(t) => t,
        Err(p) => return problem_page(&session, &p),
    };
    let changes = h
        .events
        .iter()
        .map(|e| {
            (
                e.from.map_or("—", |f| f.as_str()).to_owned(),
                e.to.as_str().to_owned(),
                e.actor.clone(),
                e.order_id.clone().unwrap_or_default(),
                e.reason.clone().unwrap_or_default(),
                at(e.at),
            )
        })
        .collect();
    let held_by = h.held_by.as_ref().map(|held| {
        let until = held.until.to_string();
        (
            held.order_id.clone(),
            at(held.until),
            until.chars().take(16).collect(),
        )
    });
    let page = CouponPage {
        can_extend: h
            .actions
            .iter()
            .flatten()
            .any(|a| *a == CouponAction::ExtendLock),
        held_by,
        shell: Shell::new(&session, format!("Coupon {id}")),
        id,
        revocable: h
            .actions
            .iter()
            .flatten()
            .any(|a| *a == CouponAction::Revoke),
        status: h.status.as_str().to_owned(),
        user: h.user_id.as_str().to_owned(),
        template_id,
        template: t.terms.title.clone(),
        worth: worth(&t.terms.value),
        changes,
    };
    render(StatusCode::OK, &page)
}

#[derive(Debug, Default, Deserialize)]
pub struct ExtendForm {
    #[serde(default)]
    csrf: String,
    /// The new deadline, `2026-03-04T12:00` (UTC).
    #[serde(default)]
    hold_until: String,
    /// The coupon whose page the form was on, to go back to.
    #[serde(default)]
    coupon: i64,
}

/// Extends order `order`'s lock to the form's deadline, then back to the coupon's page.
pub async fn extend(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(order): Path<String>,
    Form(f): Form<ExtendForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    // The path segment goes back into an API path: only what an order id may hold.
    let order: String = order
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "_.:-".contains(*c))
        .collect();
    let path = format!("/v1/orders/{order}/extend");
    let reply = console
        .api()
        .send_json(
            &session.caller,
            Method::POST,
            &path,
            &json!({"hold_until": utc(&f.hold_until)}),
        )
        .await;
    if !reply.ok() {
        return problem_page(&session, &reply.problem());
    }
    Redirect::to(&format!("/console/coupons/{}", f.coupon)).into_response()
}
