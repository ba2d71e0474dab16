//! The platform's approval queue: merchants' enrollments waiting for a decision, oldest
//! first, each linking to its template's page, where Approve and Reject are offered exactly
//! when the API's `actions` name them.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use coupond_app::pages::PageRequest;
use coupond_app::template_reads::TemplateFilter;
use coupond_app::templates;
use coupond_domain::TemplateStatus;

use super::format::{at, worth};
use super::names::{activity_title, MerchantNames};
use super::{problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

/// One enrollment waiting.
struct Waiting {
    id: i64,
    title: String,
    merchant: i64,
    merchant_name: String,
    activity: i64,
    activity_title: String,
    value: String,
    stock: i64,
    created: String,
}

#[derive(Template)]
#[template(path = "approvals.html")]
struct ApprovalsPage {
    shell: Shell,
    waiting: Vec<Waiting>,
}

/// The first 100 enrollments waiting (the API's list is by id, so oldest first).
pub async fn page(State(console): State<Console>, session: Session) -> Response {
    let app = console.app();
    let waiting = TemplateFilter {
        status: Some(TemplateStatus::PendingApproval),
        ..TemplateFilter::default()
    };
    let listed = app.templates(&session.principal, waiting, PageRequest::first(100));
    let list = match session.act(app, templates::READ, listed).await {
        Ok(l) => l,
        Err(p) => return problem_page(&session, &p),
    };
    let merchants = MerchantNames::load(&console, &session).await;
    // Each activity's title, read once however many of its enrollments wait.
    let mut titles: BTreeMap<i64, String> = BTreeMap::new();
    for a in list.items.iter().filter_map(|t| t.terms.activity_id) {
        if let std::collections::btree_map::Entry::Vacant(slot) = titles.entry(a.get()) {
            slot.insert(activity_title(&console, &session, a.get()).await);
        }
    }
    let waiting = list
        .items
        .iter()
        .map(|t| {
            let merchant = t.merchant_id.map_or(0, |m| m.get());
            let activity = t.terms.activity_id.map_or(0, |a| a.get());
            Waiting {
                id: t.id.get(),
                title: t.terms.title.clone(),
                merchant,
                merchant_name: merchants.one(merchant),
                activity,
                activity_title: titles.get(&activity).cloned().unwrap_or_default(),
                value: worth(&t.terms.value),
                stock: t.terms.total_stock,
                created: at(t.created_at),
            }
        })
        .collect();
    let page = ApprovalsPage {
        shell: Shell::new(&session, "Approvals"),
        waiting,
    };
    render(StatusCode::OK, &page)
}
