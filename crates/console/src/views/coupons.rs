//! A coupon's page (the platform; the merchant owning its template): who holds it, what it is
//! worth, the order locking it and until when, its history (every status change with who made
//! it, the order and the reason), the revoke form while it can still be revoked, and the form
//! that extends the order's lock (the platform's support).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::{coupons, orders, AppError};
use coupond_domain::{CouponAction, CouponId, OrderId, Timestamp};
use serde::Deserialize;

use super::activities::utc;
use super::format::{at, worth};
use super::{guard, problem_page, render, Shell};
use crate::problem::Problem;
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
    let app = console.app();
    let Ok(coupon) = CouponId::new(id) else {
        return problem_page(&session, &Problem::from(AppError::NotFound));
    };
    let history = app.coupon_history(&session.principal, coupon);
    let h = match session.act(app, coupons::HISTORY, history).await {
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
    let Ok(order) = OrderId::parse(&order) else {
        return problem_page(&session, &Problem::from(AppError::NotFound));
    };
    let until = match Timestamp::parse(&utc(&f.hold_until)) {
        Ok(t) => t,
        Err(why) => {
            let refused = AppError::invalid("invalid_value", "hold_until", why);
            return problem_page(&session, &Problem::from(refused));
        }
    };
    let app = console.app();
    let extended = app.extend_order(&order, until);
    if let Err(p) = session.act(app, orders::EXTEND, extended).await {
        return problem_page(&session, &p);
    }
    Redirect::to(&format!("/console/coupons/{}", f.coupon)).into_response()
}
