//! Console lists longer than one API page (issue 31 point 12): the pages fetched one API page
//! of 200 rows and never followed `next_cursor`, so the 201st row and later vanished. The
//! templates list gathers every template and sorts them all, shown 100 a page with page
//! links; the merchants list is paged with a "Next page" link; the holders CSV holds every
//! coupon (the API's `format=csv&all=true`, streamed a page at a time, its header once).

mod support;

use std::collections::BTreeSet;

use axum::body::{Body, HttpBody};
use axum::http::{header, Method, Request, StatusCode};
use axum::response::Response;
use coupond_api::AppSettings;
use coupond_domain::Timestamp;
use coupond_store::Role;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use support::{app_with_settings, key, merchant, sign_in_cookie, template_body, v1, App};

/// A draft template of the merchant whose key is `key`, with `stock` coupons.
async fn draft(app: &App, key: &str, title: &str, stock: u32) -> i64 {
    let body = template_body(title, stock, "2026-12-31T00:00:00Z");
    let (status, t) = v1(app, key, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    t["id"].as_i64().unwrap()
}

/// Publishes template `id`, opens its claim window and issues it to `users` users.
async fn issue(app: &App, key: &str, id: i64, users: usize) {
    let publish = format!("/v1/templates/{id}/publish");
    let (status, t) = v1(app, key, Method::POST, &publish, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    app.clock
        .set(Timestamp::parse("2026-11-24T14:00:00Z").unwrap());
    let user_ids: Vec<String> = (0..users).map(|u| format!("u-{u}")).collect();
    let path = format!("/v1/templates/{id}/issuances");
    let (status, job) = v1(app, key, Method::POST, &path, json!({"user_ids": user_ids})).await;
    assert_eq!(status, StatusCode::CREATED, "{job}");
    assert_eq!(job["issued"], users, "{job}");
}

async fn get(app: &App, cookie: &str, path: &str) -> Response {
    let req = Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    app.router.clone().oneshot(req).await.unwrap()
}

/// The page at `path`, which must answer 200, as text.
async fn page(app: &App, cookie: &str, path: &str) -> String {
    let res = get(app, cookie, path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    text(res).await
}

async fn text(res: Response) -> String {
    let body = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// The target of the link `<a href="..." ... id="{id}">` on `html`, unescaped.
fn link(html: &str, id: &str) -> Option<String> {
    let marker = format!("id=\"{id}\"");
    html.split("<a href=\"")
        .skip(1)
        .find(|tag| tag.split('>').next().unwrap_or("").contains(&marker))
        .and_then(|tag| tag.split('"').next())
        .map(|href| href.replace("&#38;", "&").replace("&amp;", "&"))
}

/// The ids `prefix{id}"` links to, in the order of the table's rows (after `<tbody>`).
fn row_ids(html: &str, prefix: &str) -> Vec<i64> {
    let body = html.split("<tbody>").nth(1).unwrap_or("");
    let body = body.split("</tbody>").next().unwrap_or("");
    body.split(&format!("href=\"{prefix}"))
        .skip(1)
        .filter_map(|s| s.split('"').next()?.parse().ok())
        .collect()
}

/// 201 templates, the last (the highest id) nearly sold out: sorted by claimed share it is
/// first, wherever it stands by id; unsorted, 100 rows a page, page links reach it, and every
/// template is on exactly one page.
#[tokio::test]
async fn the_templates_list_sorts_every_template_and_pages_past_200() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    for i in 0..200 {
        draft(&app, &mkey, &format!("Draft {i:03}"), 100).await;
    }
    let last = draft(&app, &mkey, "Nearly gone", 10).await;
    issue(&app, &mkey, last, 9).await;
    let cookie = sign_in_cookie(&app, &mkey).await;

    let sorted = page(&app, &cookie, "/console/templates?sort=claimed&desc=1").await;
    let rows = row_ids(&sorted, "/console/templates/");
    assert_eq!(rows[0], last, "the nearly sold-out template comes first");
    assert_eq!(rows.len(), 100, "a page of 100 rows");
    let second = link(&sorted, "next-page").expect("a link to the second page");
    assert!(
        second.contains("sort=claimed") && second.contains("desc=1") && second.contains("page=2"),
        "{second}"
    );
    assert!(
        !sorted.contains("list-cut"),
        "201 templates are under the bound"
    );

    let mut seen = BTreeSet::new();
    let mut next = Some("/console/templates".to_owned());
    let mut pages = 0;
    while let Some(path) = next {
        let html = page(&app, &cookie, &path).await;
        for id in row_ids(&html, "/console/templates/") {
            assert!(seen.insert(id), "template {id} twice, on {path}");
        }
        next = link(&html, "next-page");
        pages += 1;
        assert!(pages <= 3, "past the third page: {path}");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 201);
    assert!(seen.contains(&last), "the highest id is reached");
}

/// With more than 100 merchants the merchants page shows 100 and a link to the next page,
/// which shows the rest; the other cursor-paged pages still render.
#[tokio::test]
async fn the_merchants_page_offers_a_next_page_past_100() {
    let app = app_with_settings(AppSettings::default()).await;
    let mut ids = Vec::new();
    for _ in 0..101 {
        ids.push(merchant(&app).await.get());
    }
    let (platform, _) = key(&app, Role::Platform, None).await;
    let cookie = sign_in_cookie(&app, &platform).await;
    let first = page(&app, &cookie, "/console/merchants").await;
    let shown = row_ids(&first, "/console/merchants/");
    assert_eq!(shown, ids[..100], "the first 100 merchants");
    let next = link(&first, "next-page").expect("a link to the next page");
    assert!(next.starts_with("/console/merchants?after="), "{next}");
    let second = page(&app, &cookie, &next).await;
    assert_eq!(row_ids(&second, "/console/merchants/"), ids[100..]);
    assert_eq!(link(&second, "next-page"), None, "the last page");

    for path in [
        "/console/activities",
        "/console/users?user=u-1",
        "/console/merchants?after=%22%3E%3Cb%3E",
    ] {
        let res = get(&app, &cookie, path).await;
        assert!(
            res.status() == StatusCode::OK || res.status() == StatusCode::BAD_REQUEST,
            "{path}: {}",
            res.status()
        );
        assert!(!text(res).await.contains("\"><b>"), "{path}");
    }
}

/// The holders CSV of a template with 204 coupons has all 204 (it had the API's first 200),
/// and the API's `all=true` streams every page as one CSV with its header once.
#[tokio::test]
async fn the_holders_csv_has_every_coupon() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let t = draft(&app, &mkey, "Popular", 205).await;
    issue(&app, &mkey, t, 204).await;
    let cookie = sign_in_cookie(&app, &mkey).await;

    let csv = page(
        &app,
        &cookie,
        &format!("/console/templates/{t}/coupons.csv"),
    )
    .await;
    assert_every_coupon(&csv, 204);

    // The API's own answer: streamed in chunks of `limit` rows.
    let req = Request::get(format!(
        "/v1/templates/{t}/coupons?format=csv&all=true&limit=50"
    ))
    .header(header::AUTHORIZATION, format!("Bearer {mkey}"))
    .body(Body::empty())
    .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().get("next-cursor").is_none());
    assert_eq!(res.body().size_hint().exact(), None, "streamed");
    let mut body = res.into_body();
    let (mut chunks, mut bytes) = (0, Vec::new());
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            chunks += 1;
            bytes.extend_from_slice(&data);
        }
    }
    assert!(chunks >= 5, "{chunks} chunks for 204 rows of 50");
    assert_every_coupon(&String::from_utf8(bytes).unwrap(), 204);

    // `all` is for CSV only; a page of JSON stays a page.
    let path = format!("/v1/templates/{t}/coupons?all=true");
    let (status, problem) = v1(&app, &mkey, Method::GET, &path, Value::Null).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert_eq!(problem["code"], "invalid_query");
    assert_eq!(problem["field"], "all");
}

/// `csv` is the holders CSV: its header line once, then `coupons` distinct coupons.
fn assert_every_coupon(csv: &str, coupons: usize) {
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("coupon_id,user_id,"), "{}", lines[0]);
    assert_eq!(lines.len(), coupons + 1, "the header and every coupon");
    let ids: BTreeSet<i64> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), coupons, "each coupon once");
}
