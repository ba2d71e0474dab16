//! The console's lists, polished (issue 33 point 10): sortable headers look and read as
//! links with the current sort shown; filters offer names rather than id boxes; events come
//! newest first with their data as `key: value` lines; a finished upload's progress shows the
//! template's final counts and the invalid lines without a reload; a merchant gets no
//! Reconciliation form its role cannot use.

mod support;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_engine::issuance::IssuanceWorker;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, key, merchant, page_get, published, sign_in_cookie, template_body,
    v1, App,
};

async fn get(app: &App, cookie: &str, path: &str) -> String {
    let a = answer(app, page_get(path, cookie)).await;
    assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.body);
    a.body
}

#[tokio::test]
async fn sortable_headers_look_like_links_and_show_the_sort() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    published(
        &app,
        &mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = get(&app, &cookie, "/console/templates?sort=title").await;
    let head = &page[page.find("<thead>").unwrap()..page.find("</thead>").unwrap()];
    assert_eq!(head.matches("<a class=\"sort\"").count(), 7, "{head}");
    assert_eq!(head.matches("aria-sort=\"ascending\"").count(), 1, "{head}");
    assert_eq!(
        head.matches('↕').count(),
        6,
        "every other column says it sorts"
    );
    assert!(
        head.contains("Template <span class=\"arrow\" aria-hidden=\"true\">▲"),
        "{head}"
    );
    let page = get(&app, &cookie, "/console/templates?sort=title&desc=1").await;
    assert!(page.contains("aria-sort=\"descending\""), "{page}");
    // The stylesheet gives them the links' colour (it made every header plain text).
    let css_path = page
        .split("rel=\"stylesheet\" href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap();
    let css = get(&app, &cookie, css_path).await;
    assert!(css.contains("th a.sort { color: var(--accent); }"), "{css}");
}

#[tokio::test]
async fn filters_offer_names_not_id_boxes() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (pkey, _) = key(&app, Role::Platform, None).await;
    let cookie = sign_in_cookie(&app, &pkey).await;
    let option = format!("<option value=\"{m}\" >Harbour Homes (#{m})</option>");
    let page = get(&app, &cookie, "/console/templates").await;
    assert!(
        page.contains("<select name=\"merchant_id\" id=\"merchant-filter\">"),
        "{page}"
    );
    assert!(page.contains(&option), "{page}");
    let page = get(
        &app,
        &cookie,
        &format!("/console/templates?merchant_id={m}"),
    )
    .await;
    assert!(page.contains("No templates of Harbour Homes"), "{page}");
    let page = get(&app, &cookie, "/console/people").await;
    assert!(page.contains("id=\"person-merchant\""), "{page}");
    assert!(page.contains(&option), "{page}");
    let page = get(&app, &cookie, "/console/events").await;
    assert!(
        page.contains("<select name=\"type\" id=\"event-type\">"),
        "{page}"
    );
    assert!(page.contains("<option value=\"coupon.claimed\" >coupon.claimed</option>"));
}

#[tokio::test]
async fn events_are_newest_first_with_readable_data() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (service, _) = key(&app, Role::Service, None).await;
    let t = published(
        &app,
        &mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    app.clock.advance(time::Duration::hours(2));
    for user in ["u-early", "u-late"] {
        let claim = format!("/v1/templates/{t}/claims");
        let (status, c) = v1(
            &app,
            &service,
            Method::POST,
            &claim,
            json!({"user_id": user}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{c}");
    }
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = get(&app, &cookie, "/console/events?type=coupon.claimed").await;
    let (late, early) = (page.find("u-late").unwrap(), page.find("u-early").unwrap());
    assert!(late < early, "newest first: {page}");
    assert!(page.contains("<dt>user_id</dt><dd>u-late</dd>"), "{page}");
    assert!(
        !page.contains("{&quot;") && !page.contains("{\""),
        "no raw JSON: {page}"
    );
}

#[tokio::test]
async fn a_finished_upload_shows_the_final_counts_and_its_invalid_lines() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let t = published(
        &app,
        &mkey,
        template_body("Spring", 50, "2026-12-31T00:00:00Z"),
    )
    .await;
    app.clock.advance(time::Duration::hours(2));
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = get(&app, &cookie, &format!("/console/templates/{t}")).await;
    assert!(
        page.contains("<div class=\"stat\" id=\"claimed\"><b>0 / 50</b>"),
        "{page}"
    );

    let path = format!("/v1/templates/{t}/issuances");
    let body = json!({"user_ids": ["u-1", "u-2", "not a user!"]});
    let (status, job) = v1(&app, &mkey, Method::POST, &path, body).await;
    assert!(status.is_success(), "{job}");
    let job = job["id"].as_i64().unwrap();
    // A job this small may be done as it is created; otherwise the worker finishes it.
    let worker = IssuanceWorker::new(
        app.store.clone(),
        Arc::new(app.clock.clone()),
        std::time::Duration::ZERO,
    );
    while worker.run_once().await.unwrap().is_some() {}

    let poll = get(&app, &cookie, &format!("/console/issuances/{job}")).await;
    assert!(!poll.contains("hx-trigger"), "polling stops: {poll}");
    assert!(
        poll.contains("<div class=\"stat\" id=\"claimed\" hx-swap-oob=\"true\"><b>2 / 50</b>"),
        "{poll}"
    );
    assert!(poll.contains("1 invalid line<"), "{poll}");
    assert!(poll.contains("1 line was not a user id"), "{poll}");
    assert!(poll.contains("Line 3: <code>not a user!</code>"), "{poll}");
}

#[tokio::test]
async fn a_merchant_gets_no_reconciliation_form() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let a = answer(&app, page_get("/console/reconciliation", &cookie)).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "{}", a.body);
    assert!(
        !a.body.contains("action=\"/console/reconciliation\""),
        "{}",
        a.body
    );
    assert!(a.body.contains("Not allowed"), "{}", a.body);
}
