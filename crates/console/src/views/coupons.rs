//! A coupon's page (the platform; the merchant owning its template): who holds it, what it is
//! worth, its history (every status change with who made it, the order and the reason), and
//! the revoke form while it can still be revoked.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::routes::checkout::HistoryView;
use coupond_api::views::TemplateView;
use coupond_domain::CouponAction;

use super::format::{at, worth};
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
        .into::<HistoryView>()
    {
        Ok(h) => h,
        Err(p) => return problem_page(&session, &p),
    };
    let template_id = h.template_id.get();
    let t = match api
        .get(&session.caller, &format!("/v1/templates/{template_id}"))
        .await
        .into::<TemplateView>()
    {
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
    let page = CouponPage {
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
